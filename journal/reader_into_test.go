package journal

import (
	"errors"
	"io"
	"testing"

	"github.com/kproxy-dev/kproxy/decode"
)

// TestNextIntoReadsWhatNextReads merges two journals whose exchanges vary
// in size and include nil and empty frames, and reads them once with Next
// (keeping every exchange) and once with NextInto into one reused
// exchange: both give the exchanges written, and those kept from Next are
// not overwritten by later reads.
func TestNextIntoReadsWhatNextReads(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	all := exchanges(0, 400)
	for i, x := range all {
		switch i % 5 {
		case 1:
			x.Response = nil
		case 2:
			x.Response = []byte{}
		case 3:
			x.Request = make([]byte, 3000+i) // larger than any earlier one
		}
	}
	var even, odd []*decode.Exchange
	for i, x := range all {
		if i%2 == 0 {
			even = append(even, x)
		} else {
			odd = append(odd, x)
		}
	}
	writeJournal(t, a, Options{SegmentBytes: 20000}, even)
	writeJournal(t, b, Options{SegmentBytes: 30000}, odd)

	kept, _ := readAll(t, a, b)
	checkSame(t, kept, all)

	r, err := OpenReader(a, b)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var x decode.Exchange
	for i := 0; ; i++ {
		err := r.NextInto(&x)
		if errors.Is(err, io.EOF) {
			if i != len(all) {
				t.Fatalf("NextInto read %d exchanges; want %d", i, len(all))
			}
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if i >= len(all) {
			t.Fatalf("NextInto read more than the %d exchanges written", len(all))
		}
		if d := diffExchange(&x, all[i]); d != "" {
			t.Fatalf("exchange %d from NextInto: %s", i, d)
		}
	}
	if st := r.Stats(); st.Records != uint64(len(all)) {
		t.Fatalf("Stats().Records = %d; want %d", st.Records, len(all))
	}
}

// TestNextIntoOneJournal reads one journal (whose exchanges NextInto
// parses straight into the caller's) with NextInto, Next and Stats mixed,
// the caller overwriting its exchange after each NextInto: every exchange
// comes back as written, in order.
func TestNextIntoOneJournal(t *testing.T) {
	dir := t.TempDir()
	all := exchanges(0, 300)
	for i, x := range all {
		if i%4 == 1 {
			x.Response = nil
		}
	}
	writeJournal(t, dir, Options{SegmentBytes: 20000}, all)
	r, err := OpenReader(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var x decode.Exchange
	for i := 0; ; i++ {
		var got *decode.Exchange
		if i%3 == 2 {
			got, err = r.Next()
		} else {
			err = r.NextInto(&x)
			got = &decode.Exchange{}
			*got = x
			got.Request, got.Response = frameInto(nil, x.Request), frameInto(nil, x.Response)
			x = decode.Exchange{ConnID: 99, Request: []byte{1}} // the caller's to change
		}
		if errors.Is(err, io.EOF) {
			if i != len(all) {
				t.Fatalf("read %d exchanges; want %d", i, len(all))
			}
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if i >= len(all) {
			t.Fatalf("read more than the %d exchanges written", len(all))
		}
		if d := diffExchange(got, all[i]); d != "" {
			t.Fatalf("exchange %d: %s", i, d)
		}
		if i%5 == 0 {
			if st := r.Stats(); st.Records != uint64(i+1) {
				t.Fatalf("after %d exchanges, Stats().Records = %d", i+1, st.Records)
			}
		}
	}
}
