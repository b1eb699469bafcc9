package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kproxy-dev/kproxy/decode"
	"github.com/kproxy-dev/kproxy/diagnose"
	"github.com/kproxy-dev/kproxy/journal"
	"github.com/kproxy-dev/kproxy/pipeline"
	"github.com/kproxy-dev/kproxy/story"
	"github.com/kproxy-dev/kproxy/timeline"
)

// replayOptions are the flags of `kproxy replay`.
type replayOptions struct {
	format     string // text, json, jsonl or html
	output     string // --output: a file instead of stdout
	noFindings bool   // --findings=false: no findings block after each storm (text)
	journalWindow
	fromTopic topicOptions // replay_topic.go
	pcap      bool         // --pcap: the PATHs are packet captures (capture.go)
	capture   captureFlags
}

func newReplayCmd() *cobra.Command {
	var o replayOptions
	findings := true
	cmd := &cobra.Command{
		Use:   "replay PATH...|--pcap FILE...|--from-topic NAME --brokers HOST:PORT [--format text|json|jsonl|html] [-o FILE] [--group G] [--since T] [--until T]",
		Short: "Tell the story of the rebalances again from journals or packet captures",
		Long: `replay reads the journals at PATH (segment files or directories written by
kproxy serve --journal; journals of several proxies are merged by time) and
runs them through the same decode and timeline path as the live proxy.

  --format text   the timeline, one line per fact, as the live proxy logs it,
                  with its "findings" block after each storm (docs/diagnosis.md);
                  --findings=false leaves the blocks out, and is faster
  --format jsonl  the same entries, one JSON object per line
  --format json   the report: every group and generation (docs/timeline-json.md);
                  for the same traffic it is identical to the live proxy's report.
                  One document holds it all, so replay keeps every generation
                  (up to 1000 per group) in memory until the end: its memory
                  grows with the journal. text and jsonl do not: they stream,
                  or, for text with its findings blocks, keep 10 generations
                  per group, as serve does.
  --format html   the web page of the admin server as one self-contained file
                  (data, script and style inline; opens from disk with no
                  network), to attach to an incident: -o report.html.

--since and --until (RFC 3339, e.g. 2026-03-15T14:02:00Z, or "2026-03-15 14:02:00"
in UTC) replay only the exchanges completed in that window. Torn tails, corrupt
records and exchanges the writer dropped are reported on stderr. For journals
over 64 MiB a progress bar is shown on stderr when it is a terminal.

--pcap reads packet captures instead (pcap or pcapng, as tcpdump -w writes
them; - for standard input) of clients talking to the brokers directly: the
story kproxy would have told, without re-pointing a client (docs/capture.md).
--broker-ports names the brokers' ports (default 9092); the ports the
captured Metadata responses name are added.

--from-topic NAME --brokers HOST:PORT reads instead the events topic kproxy
serve --events-topic instances publish to (docs/fleet.md): the story of the
whole fleet, each instance's clock corrected by up to --max-skew.`,
		Args: func(_ *cobra.Command, args []string) error { return o.fromTopic.replayArgs(args) },
		RunE: func(cmd *cobra.Command, args []string) error {
			switch o.format {
			case "text", "json", "jsonl", "html":
			default:
				return fmt.Errorf("replay: --format %q: want text, json, jsonl or html", o.format)
			}
			if err := o.parse("replay"); err != nil {
				return err
			}
			if !o.pcap && cmd.Flags().Changed("broker-ports") {
				return fmt.Errorf("replay: --broker-ports: only with --pcap")
			}
			if o.pcap && o.fromTopic.topic != "" {
				return fmt.Errorf("replay: --pcap reads captures, --from-topic a topic: choose one")
			}
			o.noFindings = !findings
			if !wholeReport(o.format) && os.Getenv("GOGC") == "" {
				defer debug.SetGCPercent(debug.SetGCPercent(streamingGCPercent))
			}
			out, done, err := replayOutput(o.output, cmd.OutOrStdout())
			if err != nil {
				return err
			}
			err = replay(cmd.Context(), args, o, out, cmd.ErrOrStderr())
			if cerr := done(); err == nil && cerr != nil {
				err = fmt.Errorf("replay: %w", cerr)
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.format, "format", "text", "output format: text, json, jsonl or html")
	f.StringVarP(&o.output, "output", "o", "", "write to this file instead of stdout")
	f.BoolVar(&findings, "findings", true, "text: print the findings block after each storm, as serve logs it")
	o.addFlags(f)
	o.fromTopic.addFlags(f)
	f.BoolVar(&o.pcap, "pcap", false, "the PATHs are packet captures (pcap or pcapng; - for standard input), not journals")
	o.capture.addFlags(f)
	return cmd
}

// parseReplayTime reads an RFC 3339 time, or a date and time in UTC.
func parseReplayTime(flag, s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02 15:04:05.999999999", "2006-01-02T15:04:05.999999999", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, time.UTC); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("replay: %s %q: want an RFC 3339 time such as 2026-03-15T14:02:00Z", flag, s)
}

// streamingGCPercent is the garbage collector's target (GOGC) while
// replay streams text or jsonl, unless GOGC is set: the heap may grow to
// four times what is live before a collection instead of twice. A
// streaming replay's live heap stops growing once every group has kept
// its generations, so this costs a bounded amount of memory and saves
// collections; a higher target saves little more time for much more RSS
// (docs/benchmarks.md, Replay). The json report's heap grows with the
// journal, so it keeps the default.
const streamingGCPercent = 300

// replayBatch is about how many events replay hands to the timeline at
// once (see pipeline.Config.Batch): the timeline loads what they read all
// together, and the cache misses of different events overlap.
const replayBatch = 32

// replay runs the journals at paths through the pipeline into a timeline
// and writes the timeline to out, warnings and progress to errOut.
func replay(ctx context.Context, paths []string, o replayOptions, out, errOut io.Writer) error {
	in, err := openReplayInput(ctx, paths, o, errOut)
	if err != nil {
		return err
	}
	defer in.close()

	// A write error (a closed pipe) stops reading through ctx.
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	w := bufio.NewWriterSize(out, 64<<10)
	var writeErr error
	write := func(f func() error) {
		if writeErr == nil {
			if writeErr = f(); writeErr != nil {
				stop()
			}
		}
	}
	cfg := timeline.Config{StormRebalances: o.stormRebalances, StormWindow: o.stormWindow}
	if o.group != "" {
		cfg.Groups = []string{o.group} // the others' events only move the clock
	}
	var retain timeline.Retention // the whole report keeps everything
	if !wholeReport(o.format) {
		// Entries are printed as they come: keep only what later ones need,
		// so memory does not grow with the journal.
		retain = timeline.StreamRetention
		cfg.OnEntry = func(e timeline.Entry) {
			write(func() error {
				if o.format == "jsonl" {
					return timeline.WriteEntryJSONL(w, e)
				}
				return timeline.WriteEntryText(w, e)
			})
		}
	}
	sc := story.Config{Timeline: cfg, Retain: retain}
	errs := pageErrors(o.format, &sc.Timeline)
	switch {
	case o.format == "html":
		sc.Diagnose = true // the page shows the findings, as diagnose finds them
	case o.format == "text" && !o.noFindings:
		// serve's "findings" block after each storm: the diagnosis runs
		// as serve runs it (serve's default retention), so that the
		// blocks are the ones serve logs. Its report must still hold a
		// storm once it has ended, so the timeline does not stream: the
		// retention's generations bound its memory instead.
		sc.Retain = timeline.DefaultRetention
		sc.Diagnose, sc.Diagnosis = true, diagnose.Config{Forget: timeline.DefaultRetention.MaxAge}
		sc.AfterStorm = func(group string, fs []diagnose.Finding) {
			if o.group == "" || group == o.group {
				write(func() error { _, err := io.WriteString(w, stormFindingsBlock(group, fs)+"\n"); return err })
			}
		}
	}
	st := story.New(sc)
	undecoded, err := story.Tell(ctx, in.Source, st, story.Window{Since: o.since, Until: o.until, Batch: replayBatch})
	if err != nil && writeErr == nil {
		return fmt.Errorf("replay: %w", err)
	}
	if writeErr == nil && wholeReport(o.format) {
		writeErr = writeWholeReport(w, o.format, st.Report(), errs, st.Findings())
	}
	if err := w.Flush(); writeErr == nil {
		writeErr = err
	}
	in.finish(errOut)
	warnUndecoded(errOut, undecoded)
	if writeErr != nil {
		return fmt.Errorf("replay: write: %w", writeErr)
	}
	return nil
}

// progressSource is a journal Source that redraws the progress bar every
// few thousand exchanges, between two reads (the reader's Stats may not be
// asked for while an exchange it read is in use).
type progressSource struct {
	pipeline.Source
	r   *journal.Reader
	bar *progress
	n   int
}

func (s *progressSource) Next() (*decode.Exchange, uint64, error) {
	if s.n%4096 == 0 {
		s.bar.update(s.r.Stats())
	}
	s.n++
	return s.Source.Next()
}

// progressMin is the input size from which replay shows a progress bar.
const progressMin = 64 << 20

// progress draws a progress bar on a terminal; it does nothing when the
// output is not a terminal or the input is small.
type progress struct {
	w     io.Writer // nil when off
	total int64
	start time.Time
	last  time.Time
	drawn bool
}

func newProgress(w io.Writer, total int64) *progress {
	p := &progress{total: total, start: time.Now()}
	if f, ok := w.(*os.File); ok && total > progressMin && isTerminal(f) {
		p.w = w
	}
	return p
}

// isTerminal reports whether f is a character device, as a terminal is.
func isTerminal(f *os.File) bool {
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}

// update redraws the bar at most five times a second.
func (p *progress) update(st journal.ReadStats) {
	if p.w == nil {
		return
	}
	now := time.Now()
	if now.Sub(p.last) < 200*time.Millisecond {
		return
	}
	p.last = now
	frac := float64(st.BytesRead) / float64(p.total)
	const width = 30
	done := int(frac * width)
	el := now.Sub(p.start).Seconds()
	fmt.Fprintf(p.w, "\rreplay %3.0f%% [%s%s] %d/%d MiB  %d exchanges  %.0f/s ",
		frac*100, strings.Repeat("#", done), strings.Repeat(" ", width-done),
		st.BytesRead>>20, p.total>>20, st.Records, float64(st.Records)/max(el, 1e-9))
	p.drawn = true
}

// clear erases the bar.
func (p *progress) clear() {
	if p.w != nil && p.drawn {
		fmt.Fprint(p.w, "\r\033[K")
		p.drawn = false
	}
}
