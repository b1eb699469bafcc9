package proxy

import "testing"

func TestInflightOrder(t *testing.T) {
	var f inflight
	if _, ok := f.peek(); ok {
		t.Fatal("peek on an empty queue found a request")
	}
	for corr := range int32(3) {
		f.push(pending{corrID: corr})
	}
	for want := range int32(2) {
		p, ok := f.peek()
		if !ok || p.corrID != want {
			t.Fatalf("peek = %d, %v; want %d, true", p.corrID, ok, want)
		}
		if again, _ := f.peek(); again.corrID != want {
			t.Fatalf("second peek = %d; want %d (peek must not remove)", again.corrID, want)
		}
		f.pop()
	}
	f.push(pending{corrID: 3})
	if n := f.len(); n != 2 {
		t.Fatalf("len = %d; want 2", n)
	}
	rest := f.drain()
	if len(rest) != 2 || rest[0].corrID != 2 || rest[1].corrID != 3 {
		t.Fatalf("drain = %+v; want corr ids 2, 3", rest)
	}
	if n := f.len(); n != 0 {
		t.Fatalf("len after drain = %d; want 0", n)
	}
}
