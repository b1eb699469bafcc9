package capture

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/kproxy-dev/kproxy/capture/pcapsynth"
	"github.com/kproxy-dev/kproxy/decode"
	"github.com/kproxy-dev/kproxy/pipeline"
	"github.com/kproxy-dev/kproxy/timeline"
)

// seedJournal is the journal of the seed scenario (README): consumer A
// alone on three partitions, then consumer B joining.
const seedJournal = "../testdata/journals/seed-rebalance"

// readJournal returns the exchanges of the journal at path, each its own.
func readJournal(t testing.TB, path string) []*decode.Exchange {
	t.Helper()
	xs, err := pcapsynth.ReadJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	return xs
}

// writeCapture writes the capture of xs, set up by setup (nil: defaults).
func writeCapture(t testing.TB, xs []*decode.Exchange, f pcapsynth.Format, o pcapsynth.ExchangeOptions, setup func(*pcapsynth.Writer)) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := pcapsynth.NewWriter(&buf, f)
	if err != nil {
		t.Fatal(err)
	}
	if setup != nil {
		setup(w)
	}
	if err := pcapsynth.WriteExchanges(w, xs, o); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// openCapture returns a Source reading capture.
func openCapture(t testing.TB, cfg Config, capture []byte) *Source {
	t.Helper()
	s, err := NewSource(cfg, []string{"test capture"}, []io.Reader{bytes.NewReader(capture)})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// drain returns every exchange src hands out, and the losses it reports.
func drain(t testing.TB, src pipeline.Source) ([]*decode.Exchange, uint64) {
	t.Helper()
	var xs []*decode.Exchange
	var lost uint64
	for {
		x, n, err := src.Next()
		lost += n
		if errors.Is(err, io.EOF) {
			return xs, lost
		}
		if err != nil {
			t.Fatal(err)
		}
		xs = append(xs, x)
	}
}

// story is the text timeline and the JSON report the pipeline tells of
// the exchanges xs, as replay tells them.
func story(t testing.TB, xs []*decode.Exchange) string {
	t.Helper()
	var text strings.Builder
	eng := timeline.New(timeline.Config{OnEntry: func(e timeline.Entry) {
		if err := timeline.WriteEntryText(&text, e); err != nil {
			t.Fatal(err)
		}
	}})
	pl := pipeline.New(pipeline.Config{Events: []pipeline.EventConsumer{eng}})
	if err := pl.Run(context.Background(), pipeline.Slice(xs)); err != nil {
		t.Fatal(err)
	}
	eng.Close(time.Time{})
	var report bytes.Buffer
	if err := timeline.WriteJSON(&report, eng.Report()); err != nil {
		t.Fatal(err)
	}
	return text.String() + "\n" + report.String()
}

// exchangeKey names an exchange across a journal and a capture.
func exchangeKey(x *decode.Exchange) string {
	return fmt.Sprintf("%s corr %d api %d at %s", x.ClientAddr, x.CorrelationID, x.APIKey, x.RequestAt.Format(time.RFC3339Nano))
}

// checkTrue fails unless every exchange of got is one of want, whole:
// same frames, same times. An exchange handed out without a response must
// have had none.
func checkTrue(t testing.TB, got, want []*decode.Exchange) {
	t.Helper()
	byKey := map[string]*decode.Exchange{}
	for _, x := range want {
		byKey[exchangeKey(x)] = x
	}
	for _, x := range got {
		w := byKey[exchangeKey(x)]
		switch {
		case w == nil:
			t.Errorf("invented exchange: %s", exchangeKey(x))
		case !bytes.Equal(x.Request, w.Request) || !bytes.Equal(x.Response, w.Response) ||
			!x.ResponseAt.Equal(w.ResponseAt) || x.ClientID != w.ClientID || x.APIVersion != w.APIVersion:
			t.Errorf("exchange %s differs from the journal's: request %d bytes (want %d), response %d bytes (want %d), responded %s (want %s)",
				exchangeKey(x), len(x.Request), len(w.Request), len(x.Response), len(w.Response), x.ResponseAt, w.ResponseAt)
		}
	}
}
