package journal

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kproxy-dev/kproxy/decode"
)

var update = flag.Bool("update", false, "rewrite the fuzz seed corpus under testdata/")

// FuzzReader feeds arbitrary bytes to the segment reader. It must never
// panic, must end, and every record it returns must re-encode to exactly
// the payload it was read from.
func FuzzReader(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := newScanner("fuzz", bytes.NewReader(data), int64(len(data)))
		if err != nil {
			var ve *VersionError
			if !errors.Is(err, ErrEmptyFile) && !errors.Is(err, ErrNotJournal) && !errors.Is(err, ErrTruncatedHeader) &&
				!errors.Is(err, ErrBadHeader) && !errors.As(err, &ve) {
				t.Fatalf("header error %v is none of the documented kinds", err)
			}
			return
		}
		var n int
		for {
			rec, err := s.next(nil)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("next: %v", err)
			}
			n++
			if n*(frameLen+1) > len(data) {
				t.Fatalf("%d records from %d bytes", n, len(data))
			}
			var again []byte
			switch {
			case rec.x != nil:
				again = appendExchange(nil, rec.x)
			case rec.susp != nil:
				again = appendSuspension(nil, *rec.susp)
			default:
				again = appendGap(nil, rec.gapAt, rec.dropped)
			}
			if !bytes.Equal(again, rec.payload) {
				t.Fatalf("record %d re-encodes to %x; read from %x", n, again, rec.payload)
			}
		}
		if s.tornAt >= 0 && (s.tornAt < int64(s.hdr.Len) || s.tornAt >= int64(len(data))) {
			t.Fatalf("torn tail at %d outside the records (%d..%d)", s.tornAt, s.hdr.Len, len(data))
		}
	})
}

// fuzzSeeds are the committed seed inputs of FuzzReader, by file name.
func fuzzSeeds() map[string][]byte {
	h := segmentHeader{Created: testBase, JournalID: [16]byte{0xde, 0xad, 0xbe, 0xef}, Seq: 1, KproxyVersion: "v0.1.0"}
	hdr := appendHeader(nil, &h)
	frame := func(p []byte) []byte { return appendFrame(nil, func(b []byte) []byte { return append(b, p...) }) }
	ex := func(x *decode.Exchange) []byte { return frame(appendExchange(nil, x)) }
	seg := func(parts ...[]byte) []byte { return bytes.Join(append([][]byte{hdr}, parts...), nil) }

	r1, r2, r3 := ex(testExchange(1)), ex(testExchange(2)), ex(testExchange(3))
	noResp := ex(&decode.Exchange{ConnID: 3, ClientAddr: "[::1]:9", BrokerID: -1, APIKey: 12, APIVersion: 4, RequestAt: testBase, Request: []byte{0, 12}})
	gap := frame(appendGap(nil, testBase.Add(time.Second), 42))
	suspended := frame(appendSuspension(nil, suspension{At: testBase.Add(time.Second), Since: testBase, Lost: 42, Err: "write: no space left on device"}))
	unknown := frame([]byte{0x7f, 1, 2, 3})
	flipped := append([]byte{}, r2...)
	flipped[len(flipped)/2] ^= 0xff
	newer := append([]byte{}, hdr...)
	newer[9] = FormatVersion + 1

	return map[string][]byte{
		"valid":            seg(r1, r2, gap, r3, noResp),
		"suspended":        seg(r1, gap, suspended, r2),
		"unknown-type":     seg(r1, unknown, r2),
		"flipped-middle":   seg(r1, flipped, r3),
		"torn-tail":        seg(r1, r2, r3[:len(r3)-5]),
		"zero-tail":        seg(r1, make([]byte, 64)),
		"header-only":      hdr,
		"header-truncated": hdr[:20],
		"newer-version":    append(newer, r1...),
		"not-a-journal":    []byte("PK\x03\x04 a zip file"),
		"empty":            {},
	}
}

// TestFuzzReaderCorpus keeps testdata/fuzz/FuzzReader in step with
// fuzzSeeds; -update rewrites it.
func TestFuzzReaderCorpus(t *testing.T) {
	dir := filepath.Join("testdata", "fuzz", "FuzzReader")
	for name, data := range fuzzSeeds() {
		want := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", data)
		path := filepath.Join(dir, name)
		if *update {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run go test ./journal -run TestFuzzReaderCorpus -update)", err)
		}
		if string(got) != want {
			t.Fatalf("%s is stale (run go test ./journal -run TestFuzzReaderCorpus -update)", path)
		}
	}
}
