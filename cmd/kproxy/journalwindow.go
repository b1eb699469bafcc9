package main

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/pflag"

	"github.com/kproxy-dev/kproxy/config"
	"github.com/kproxy-dev/kproxy/journal"
	"github.com/kproxy-dev/kproxy/pipeline"
)

// journalWindow is what replay and diagnose take of the journals they read:
// one group or all, a window of time, and serve's storm settings, so that
// the same values tell the same storms as live.
type journalWindow struct {
	group           string // "" for all
	since, until    time.Time
	stormRebalances int
	stormWindow     time.Duration

	sinceArg, untilArg string // --since and --until as given
}

// addFlags adds --group, --since, --until, --storm-rebalances and
// --storm-window to f.
func (w *journalWindow) addFlags(f *pflag.FlagSet) {
	f.StringVar(&w.group, "group", "", "only this consumer group")
	f.StringVar(&w.sinceArg, "since", "", "only exchanges completed at or after this time")
	f.StringVar(&w.untilArg, "until", "", "only exchanges completed at or before this time")
	f.IntVar(&w.stormRebalances, "storm-rebalances", config.DefaultStormRebalances,
		"a group rebalancing this many times within --storm-window is in a storm (as kproxy serve's flag)")
	f.DurationVar(&w.stormWindow, "storm-window", config.DefaultStormWindow, "sliding window of storm detection (as kproxy serve's flag)")
}

// parse checks the flags addFlags added and reads --since and --until; its
// errors start with command, the command's name.
func (w *journalWindow) parse(command string) error {
	var err error
	if w.since, err = parseReplayTime("--since", w.sinceArg); err != nil {
		return err
	}
	if w.until, err = parseReplayTime("--until", w.untilArg); err != nil {
		return err
	}
	if w.stormRebalances < 2 {
		return fmt.Errorf("%s: --storm-rebalances %d: want at least 2", command, w.stormRebalances)
	}
	if w.stormWindow <= 0 {
		return fmt.Errorf("%s: --storm-window %s: want a positive duration", command, w.stormWindow)
	}
	if !w.since.IsZero() && !w.until.IsZero() && w.until.Before(w.since) {
		return fmt.Errorf("%s: --until %s is before --since %s", command, w.untilArg, w.sinceArg)
	}
	return nil
}

// storyInput is what a story is told from: journals (openJournalInput) or,
// for replay, the events topic (openTopicInput).
type storyInput struct {
	pipeline.Source
	// close releases the input; finish, once the pipeline has run and
	// before close, clears the progress bar and tells errOut what could
	// not be read.
	close  func()
	finish func(errOut io.Writer)
}

// openJournalInput opens the journals at paths, as replay, diagnose and
// history read them. It draws a progress bar on bar when bar is a terminal
// and the journals are large (nil: never); its finish tells of the damage
// the reader met (torn tails, corrupt records, exchanges the writer
// dropped).
func openJournalInput(paths []string, bar io.Writer) (*storyInput, error) {
	r, err := journal.OpenReader(paths...)
	if err != nil {
		return nil, err
	}
	p := newProgress(bar, r.Stats().Bytes)
	return &storyInput{
		Source: &progressSource{Source: r.Source(), r: r, bar: p},
		close:  func() { r.Close() },
		finish: func(errOut io.Writer) {
			p.clear()
			warnDamage(errOut, r.Stats())
		},
	}, nil
}

// warnUndecoded says how many exchanges did not decode, if any.
func warnUndecoded(w io.Writer, n uint64) {
	if n > 0 {
		fmt.Fprintf(w, "kproxy: warning: %d exchanges did not decode (kproxy journal inspect shows them)\n", n)
	}
}
