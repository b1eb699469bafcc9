package main

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"
)

// TestRunStagesStopsInOrder checks that each stage's turn comes only once
// the stage before it has ended, whether it ends by its ctx, by stop or by
// itself, and that a failing stage stops serve with its error.
func TestRunStagesStopsInOrder(t *testing.T) {
	tests := []struct {
		name    string
		failAt  int // index of the stage whose run fails at once; -1 for none
		wantErr string
	}{
		{"ctx done", -1, ""},
		{"a stage fails", 2, "c: broken"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var (
				mu    sync.Mutex
				order []string
			)
			note := func(s string) {
				mu.Lock()
				defer mu.Unlock()
				order = append(order, s)
			}
			// a and b end with their ctx, a after a slow drain; c ends by
			// stop.
			aEnded := make(chan struct{})
			stopC := make(chan struct{})
			stages := []stage{
				{name: "a", run: func(ctx context.Context) error {
					<-ctx.Done()
					time.Sleep(10 * time.Millisecond) // a slow drain
					note("a ended")
					close(aEnded)
					return nil
				}},
				{name: "b", run: func(ctx context.Context) error {
					<-ctx.Done()
					select {
					case <-aEnded:
					default:
						t.Error("b's ctx done before a ended")
					}
					note("b ended")
					return nil
				}},
				{name: "c", stop: func() { note("c stopped"); close(stopC) }, run: func(context.Context) error {
					if tt.failAt == 2 {
						return errors.New("broken")
					}
					<-stopC
					note("c ended")
					return nil
				}},
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- runStages(ctx, stages) }()
			if tt.failAt < 0 {
				select {
				case err := <-done:
					t.Fatalf("runStages returned %v before ctx was done", err)
				case <-time.After(20 * time.Millisecond):
				}
				cancel()
			}
			err := <-done
			if got := errString(err); got != tt.wantErr {
				t.Errorf("runStages() = %q; want %q", got, tt.wantErr)
			}
			want := []string{"a ended", "b ended", "c stopped", "c ended"}
			if tt.failAt == 2 {
				want = []string{"a ended", "b ended", "c stopped"}
			}
			if !slices.Equal(order, want) {
				t.Errorf("order = %q; want %q", order, want)
			}
		})
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
