package main

import (
	"bufio"
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/kproxy-dev/kproxy/diagnose"
	"github.com/kproxy-dev/kproxy/story"
	"github.com/kproxy-dev/kproxy/timeline"
)

// diagnoseOptions are the flags of `kproxy diagnose`.
type diagnoseOptions struct {
	format string // text or json
	journalWindow
}

func newDiagnoseCmd() *cobra.Command {
	var o diagnoseOptions
	cmd := &cobra.Command{
		Use:   "diagnose PATH... [--group G] [--since T] [--until T] [--format text|json]",
		Short: "Name the causes of the rebalances in journals, with evidence and the settings that change them",
		Long: `diagnose reads the journals at PATH as replay does, runs them through the
timeline, and names what caused the rebalances: members evicted by their poll
loop or their session timeout, rollouts, static membership faults, rebalance
loops, configuration smells, partitions that flap or stay unowned, commits that
fail or go backwards, and the records processed twice at each handover. Each
finding has its evidence (the numbers), an explanation and the client settings
that change it (docs/diagnosis.md).

  --format text   one block per finding, for people
  --format json   {"findings": [...]}

The same journal gives the same bytes.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.format != "text" && o.format != "json" {
				return fmt.Errorf("diagnose: --format %q: want text or json", o.format)
			}
			if err := o.parse("diagnose"); err != nil {
				return err
			}
			return runDiagnose(cmd.Context(), args, o, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.format, "format", "text", "output format: text or json")
	o.addFlags(f)
	return cmd
}

// runDiagnose runs the journals at paths through the pipeline, which feeds
// the timeline and the diagnosis, and writes the findings to out, warnings to errOut.
func runDiagnose(ctx context.Context, paths []string, o diagnoseOptions, out, errOut io.Writer) error {
	tcfg := timeline.Config{StormRebalances: o.stormRebalances, StormWindow: o.stormWindow}
	if o.group != "" {
		tcfg.Groups = []string{o.group} // the others' exchanges only move the clocks
	}
	st := story.New(story.Config{Timeline: tcfg, Diagnose: true})
	in, err := openJournalInput(paths, nil)
	if err != nil {
		return fmt.Errorf("diagnose: %w", err)
	}
	defer in.close()
	undecoded, err := story.Tell(ctx, in, st, story.Window{Since: o.since, Until: o.until})
	if err != nil {
		return fmt.Errorf("diagnose: %w", err)
	}
	fs := st.Findings()
	w := bufio.NewWriter(out)
	if o.format == "json" {
		err = diagnose.WriteJSON(w, fs)
	} else {
		err = diagnose.WriteText(w, fs)
	}
	if ferr := w.Flush(); err == nil {
		err = ferr
	}
	in.finish(errOut)
	warnUndecoded(errOut, undecoded)
	if err != nil {
		return fmt.Errorf("diagnose: write: %w", err)
	}
	return nil
}
