package main

import (
	"context"
	"fmt"

	"golang.org/x/sync/errgroup"
)

// stage is one long-lived component of serve, a row of the table
// runStages starts and stops.
type stage struct {
	// name prefixes the stage's error.
	name string
	// run runs the stage until it ends. Its ctx is done when the stage's
	// turn to stop comes (see runStages). A stage that must first hand on
	// what the stages before it handed it ignores ctx and ends by itself,
	// when its input ends.
	run func(ctx context.Context) error
	// stop, when not nil, is called when the stage's turn to stop comes,
	// for a stage that ends by being closed rather than by its ctx.
	stop func()
}

// runStages runs every stage at once and stops them one after another, in
// table order: the first stage's turn comes when ctx is done or a stage
// fails, and each next stage's turn once the stage before it has ended, so
// that every stage drains into stages still running. It returns once
// every stage has ended, with the first error.
func runStages(ctx context.Context, stages []stage) error {
	g, failed := errgroup.WithContext(ctx)
	cancels := make([]context.CancelFunc, len(stages))
	ended := make([]chan struct{}, len(stages))
	for i, st := range stages {
		parent := context.Background()
		if i == 0 {
			parent = failed
		}
		sctx, cancel := context.WithCancel(parent)
		cancels[i], ended[i] = cancel, make(chan struct{})
		g.Go(func() error { // ends when its turn below comes
			defer close(ended[i])
			if err := st.run(sctx); err != nil {
				return fmt.Errorf("%s: %w", st.name, err)
			}
			return nil
		})
	}
	<-failed.Done()
	for i, st := range stages {
		cancels[i]()
		if st.stop != nil {
			st.stop()
		}
		<-ended[i]
	}
	return g.Wait()
}
