// Package story is the one constructor of kproxy's story of consumer
// groups: the timeline, the diagnosis beside it when asked, the retention
// that bounds them, and the settling at the end. serve, capture, replay,
// diagnose, the demo, the admin server's history and the journal
// generator all build their story here, so that they tell the same one
// from the same exchanges; what differs between them is only what they
// keep (Config.Retain), whether they diagnose, and what they do with the
// entries and findings as they come.
//
// A Story is a consumer of one pipeline (Feed), owned by its goroutine
// (see docs/architecture.md): nothing in it is locked. Readers on other
// goroutines take the timeline's snapshot and the diagnosis' published
// findings; a group's report is rendered for them on the owner (its
// pipeline.Owner). Once the pipeline has stopped, Settle, Close and Report
// take the owner's place through the same Owner, so that a reader never
// renders while the story settles.
package story

import (
	"context"
	"time"

	"github.com/kproxy-dev/kproxy/diagnose"
	"github.com/kproxy-dev/kproxy/pipeline"
	"github.com/kproxy-dev/kproxy/timeline"
)

// Config says what story to tell.
type Config struct {
	// Timeline tunes the timeline: storm detection, the groups told
	// (the diagnosis keeps the same), the clock's location, what is done
	// with each entry (OnEntry) and, live, how often it publishes.
	Timeline timeline.Config
	// Retain is what the timeline keeps; the zero value keeps everything.
	Retain timeline.Retention
	// Diagnose runs the diagnosis beside the timeline, with Diagnosis.
	Diagnose  bool
	Diagnosis diagnose.Config
	// OnFinding is handed each finding once, as it is found (nil: none);
	// AfterStorm each storm's findings once it has ended (nil: none).
	OnFinding  func(diagnose.Finding)
	AfterStorm func(group string, fs []diagnose.Finding)
}

// Story is a story being told: the timeline and, when diagnosed, the
// diagnosis that reads it.
type Story struct {
	tl    *timeline.Live
	diag  *diagnose.Live // nil when not diagnosed
	owner *pipeline.Owner
}

// New returns the story cfg says.
func New(cfg Config) *Story {
	s := &Story{owner: &pipeline.Owner{}}
	if !cfg.Diagnose {
		s.tl = timeline.NewLive(cfg.Timeline, cfg.Retain)
	} else {
		dcfg := cfg.Diagnosis
		dcfg.Groups = cfg.Timeline.Groups
		s.diag = diagnose.NewLive(cfg.Timeline, cfg.Retain, dcfg, cfg.OnFinding, cfg.AfterStorm)
		s.tl = s.diag.Timeline()
	}
	s.tl.SetOwner(s.owner.Do)
	return s
}

// Feed makes the story a consumer of the pipeline pc configures: the
// timeline takes the events (through the diagnosis, when diagnosed), what
// the source is blind to and its ticks; the diagnosis, after it, each
// decoded exchange and the ticks. The pipeline's goroutine is the story's
// owner while it runs (pipeline.Config.Owner): a story is fed by one
// pipeline.
func (s *Story) Feed(pc *pipeline.Config) {
	pc.Owner = s.owner
	pc.Blind = append(pc.Blind, s.tl)
	pc.Ticks = append(pc.Ticks, s.tl)
	if s.diag == nil {
		pc.Events = append(pc.Events, s.tl)
		return
	}
	// The diagnosis moves its clock before the timeline takes each
	// exchange's events, and hands them on to it.
	pc.Events = append(pc.Events, s.diag)
	pc.Decoded = append(pc.Decoded, s.diag)
	pc.Ticks = append(pc.Ticks, s.diag)
}

// Timeline is the story's timeline: its snapshot for readers, its
// report.
func (s *Story) Timeline() *timeline.Live { return s.tl }

// Diagnosis is the story's diagnosis; nil when not diagnosed.
func (s *Story) Diagnosis() *diagnose.Live { return s.diag }

// Settle settles what is pending as of at (zero: the last event seen), as
// at the end of the input, and tells what that reveals; the timeline's
// snapshot stays as it was (see Close). It is called once the pipeline
// has stopped, and waits for a reader's report being rendered.
func (s *Story) Settle(at time.Time) {
	s.own(func() {
		if s.diag != nil {
			s.diag.Settle(at)
			return
		}
		s.tl.Settle(at)
	})
}

// Close is Settle, then publishes the final snapshot for readers.
func (s *Story) Close(at time.Time) {
	s.own(func() {
		if s.diag != nil {
			s.diag.Close(at)
			return
		}
		s.tl.Close(at)
	})
}

// Report is the report of what the timeline keeps, once the pipeline has
// stopped.
func (s *Story) Report() *timeline.Report {
	var r *timeline.Report
	s.own(func() { r = s.tl.Report() })
	return r
}

// own runs fn as the story's owner: once the pipeline has stopped, on the
// calling goroutine, one at a time with the readers' renders.
func (s *Story) own(fn func()) {
	s.owner.Do(context.Background(), fn) //nolint:errcheck // a Background context is never done
}

// Findings is every finding as last published (after Settle: all of
// them); nil when not diagnosed.
func (s *Story) Findings() []diagnose.Finding {
	if s.diag == nil {
		return nil
	}
	return s.diag.Findings()
}

// Window is the part of a source a story is told, and how.
type Window struct {
	// Since and Until keep the events of the exchanges completed in that
	// window (pipeline.Config); the story is settled as of Until (zero:
	// its last event).
	Since, Until time.Time
	// Batch is pipeline.Config.Batch (a diagnosed story takes each
	// exchange's events at once).
	Batch int
}

// Tell runs src through a pipeline into s, then settles s as of w.Until:
// as a live proxy does when it stops, or as of the end of the window.
// Times come from the source, never the clock. When the pipeline fails
// (ctx cancelled, say) s is not settled. It returns how many exchanges did
// not decode.
func Tell(ctx context.Context, src pipeline.Source, s *Story, w Window) (undecoded uint64, err error) {
	pc := pipeline.Config{Batch: w.Batch, Since: w.Since, Until: w.Until}
	s.Feed(&pc)
	pl := pipeline.New(pc)
	err = pl.Run(ctx, src)
	undecoded = pl.Stats().Undecoded
	if err != nil {
		return undecoded, err
	}
	s.Settle(w.Until)
	return undecoded, nil
}
