package timeline

import (
	"bytes"
	"context"
	"testing"
	"time"
)

// TestLive adds events on one goroutine while another publishes and reads
// snapshots, as serve does (run with -race); once closed, the snapshot is
// the engine's report.
func TestLive(t *testing.T) {
	l := NewLive(Config{}, Retention{})
	evs := seedScript().events()
	ctx, cancel := context.WithCancel(context.Background())
	published := make(chan struct{})
	go func() {
		defer close(published)
		l.Run(ctx, time.Millisecond)
	}()
	read := make(chan struct{})
	go func() {
		defer close(read)
		for i := 0; i < 200; i++ {
			s := l.Snapshot()
			s.Report(Query{})
		}
	}()
	for i := range evs {
		l.AddEvents(evs[i : i+1])
	}
	<-read
	cancel()
	<-published
	l.Close(sec(30))
	got, _ := l.Snapshot().Report(Query{})
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
}
