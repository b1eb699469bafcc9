package timeline

import (
	"bytes"
	"reflect"
	"testing"
)

// TestLive adds events and publishes on one goroutine, the owner's, while
// another reads snapshots, as serve does (run with -race); once closed,
// the snapshot is the engine's report.
func TestLive(t *testing.T) {
	l := NewLive(Config{}, Retention{})
	evs := seedScript().events()
	read := make(chan struct{})
	go func() {
		defer close(read)
		for i := 0; i < 200; i++ {
			s := l.Snapshot()
			s.Report(Query{})
			s.Summaries()
		}
	}()
	for i := range evs {
		l.AddEvents(evs[i : i+1])
		l.Publish()
	}
	<-read
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
	sums := l.Snapshot().Summaries()
	if want := Summarize(&got.Groups[0]); len(sums) != 1 || !reflect.DeepEqual(sums[0], want) {
		t.Errorf("final snapshot's summaries %+v; want [%+v]", sums, want)
	}
}
