package timeline

import (
	"bytes"
	"context"
	"reflect"
	"testing"
)

// TestLive adds events and publishes on one goroutine, the owner's, while
// another reads snapshots, as serve does (run with -race); once closed,
// the snapshot is the engine's report.
func TestLive(t *testing.T) {
	l := NewLive(Config{}, Retention{})
	// The owner runs the readers' renders between its events.
	asks := make(chan func(), 1)
	l.SetOwner(func(ctx context.Context, fn func()) error {
		done := make(chan struct{})
		asks <- func() { fn(); close(done) }
		<-done
		return nil
	})
	evs := seedScript().events()
	read := make(chan struct{})
	go func() {
		defer close(read)
		for i := 0; i < 200; i++ {
			s := l.Snapshot()
			if _, _, err := s.Report(context.Background(), Query{}); err != nil {
				t.Error(err)
			}
			s.Summaries()
		}
	}()
	for i := range evs {
		l.AddEvents(evs[i : i+1])
		l.Publish()
		select {
		case fn := <-asks:
			fn()
		default:
		}
	}
	for reading := true; reading; {
		select {
		case fn := <-asks:
			fn()
		case <-read:
			reading = false
		}
	}
	l.SetOwner(nil)
	l.Close(sec(30))
	got, _, _ := l.Snapshot().Report(context.Background(), Query{})
	if g := got.Groups; len(g) != 1 || len(g[0].Generations) != 2 {
		t.Fatalf("snapshot %+v; want one group with 2 generations", g)
	}
	var a, b bytes.Buffer
	if err := WriteJSON(&a, got); err != nil {
		t.Fatal(err)
	}
	if err := WriteJSON(&b, l.Report()); err != nil {
		t.Fatal(err)
	}
	if a.String() != b.String() {
		t.Errorf("final snapshot differs from the report:\n%s\nwant\n%s", a.String(), b.String())
	}
	sums := l.Snapshot().Summaries()
	if want := Summarize(&got.Groups[0]); len(sums) != 1 || !reflect.DeepEqual(sums[0], want) {
		t.Errorf("final snapshot's summaries %+v; want [%+v]", sums, want)
	}
}
