package journal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kproxy-dev/kproxy/decode"
)

// testBase is the time of the first test exchange.
var testBase = time.Date(2026, 3, 15, 14, 2, 11, 204_000_000, time.UTC)

// testExchange returns the i-th deterministic test exchange: a JoinGroup
// (key 11) whose request bytes encode i, 1 ms after the previous one.
func testExchange(i int) *decode.Exchange {
	req := make([]byte, 24+i%97)
	binary.BigEndian.PutUint16(req[0:], 11)
	binary.BigEndian.PutUint16(req[2:], 9)
	binary.BigEndian.PutUint32(req[4:], uint32(i))
	for j := 8; j < len(req); j++ {
		req[j] = byte(i*31 + j)
	}
	resp := make([]byte, 8+i%53)
	binary.BigEndian.PutUint32(resp, uint32(i))
	at := testBase.Add(time.Duration(i) * time.Millisecond)
	return &decode.Exchange{
		ConnID:        uint64(i%7 + 1),
		ClientAddr:    fmt.Sprintf("127.0.0.1:%d", 40000+i%7),
		BrokerID:      int32(i%3) - 1,
		APIKey:        11,
		APIVersion:    9,
		CorrelationID: int32(i),
		ClientID:      fmt.Sprintf("consumer-%d", i%7),
		RequestAt:     at,
		ResponseAt:    at.Add(3 * time.Millisecond),
		Request:       req,
		Response:      resp,
	}
}

// diffExchange describes how got differs from want, or returns "".
func diffExchange(got, want *decode.Exchange) string {
	switch {
	case got.ConnID != want.ConnID:
		return fmt.Sprintf("ConnID got %d; want %d", got.ConnID, want.ConnID)
	case got.ClientAddr != want.ClientAddr:
		return fmt.Sprintf("ClientAddr got %q; want %q", got.ClientAddr, want.ClientAddr)
	case got.BrokerID != want.BrokerID:
		return fmt.Sprintf("BrokerID got %d; want %d", got.BrokerID, want.BrokerID)
	case got.APIKey != want.APIKey || got.APIVersion != want.APIVersion:
		return fmt.Sprintf("api got %d v%d; want %d v%d", got.APIKey, got.APIVersion, want.APIKey, want.APIVersion)
	case got.CorrelationID != want.CorrelationID:
		return fmt.Sprintf("CorrelationID got %d; want %d", got.CorrelationID, want.CorrelationID)
	case got.ClientID != want.ClientID:
		return fmt.Sprintf("ClientID got %q; want %q", got.ClientID, want.ClientID)
	case got.ClientCert != want.ClientCert:
		return fmt.Sprintf("ClientCert got %q; want %q", got.ClientCert, want.ClientCert)
	case !got.RequestAt.Equal(want.RequestAt) || got.RequestAt.IsZero() != want.RequestAt.IsZero():
		return fmt.Sprintf("RequestAt got %v; want %v", got.RequestAt, want.RequestAt)
	case !got.ResponseAt.Equal(want.ResponseAt) || got.ResponseAt.IsZero() != want.ResponseAt.IsZero():
		return fmt.Sprintf("ResponseAt got %v; want %v", got.ResponseAt, want.ResponseAt)
	case (got.Request == nil) != (want.Request == nil) || string(got.Request) != string(want.Request):
		return fmt.Sprintf("Request got %x (nil %v); want %x (nil %v)", got.Request, got.Request == nil, want.Request, want.Request == nil)
	case (got.Response == nil) != (want.Response == nil) || string(got.Response) != string(want.Response):
		return fmt.Sprintf("Response got %x (nil %v); want %x (nil %v)", got.Response, got.Response == nil, want.Response, want.Response == nil)
	}
	return ""
}

// appendPaced appends xs without letting the queue overflow, so a test can
// expect every exchange to be written.
func appendPaced(w *Writer, xs []*decode.Exchange) {
	for _, x := range xs {
		for len(w.queue) >= cap(w.queue)/2 {
			time.Sleep(100 * time.Microsecond)
		}
		w.Append(x)
	}
}

// writeJournal writes xs to a new journal in dir and closes it.
func writeJournal(t *testing.T, dir string, opts Options, xs []*decode.Exchange) Stats {
	t.Helper()
	w, err := Open(dir, opts, nil)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	appendPaced(w, xs)
	if err := w.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	st := w.Stats()
	if st.Dropped != 0 {
		t.Fatalf("writer dropped %d exchanges; want 0", st.Dropped)
	}
	return st
}

// readAll reads every exchange from paths.
func readAll(t *testing.T, paths ...string) ([]*decode.Exchange, ReadStats) {
	t.Helper()
	r, err := OpenReader(paths...)
	if err != nil {
		t.Fatalf("OpenReader: %v", err)
	}
	defer r.Close()
	var xs []*decode.Exchange
	for {
		x, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		xs = append(xs, x)
	}
	return xs, r.Stats()
}

// exchanges returns test exchanges from..to-1.
func exchanges(from, to int) []*decode.Exchange {
	var xs []*decode.Exchange
	for i := from; i < to; i++ {
		xs = append(xs, testExchange(i))
	}
	return xs
}

// checkSame fails unless got equals want record for record.
func checkSame(t *testing.T, got, want []*decode.Exchange) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("read %d exchanges; want %d", len(got), len(want))
	}
	for i := range want {
		if d := diffExchange(got[i], want[i]); d != "" {
			t.Fatalf("exchange %d: %s", i, d)
		}
	}
}

// segmentsIn lists the segment files of dir.
func segmentsIn(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "*"+SegmentExt))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// recordOffsets returns the offset of each valid record in the segment.
func recordOffsets(t *testing.T, path string) []int64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	info, _ := f.Stat()
	s, err := newScanner(path, f, info.Size())
	if err != nil {
		t.Fatal(err)
	}
	var offs []int64
	for {
		at := s.off
		if _, err := s.next(nil); err != nil {
			break
		}
		offs = append(offs, at)
	}
	return offs
}
