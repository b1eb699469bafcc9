package main

import (
	"bufio"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kproxy-dev/kproxy/decode"
	"github.com/kproxy-dev/kproxy/internal/printable"
	"github.com/kproxy-dev/kproxy/journal"
	"github.com/kproxy-dev/kproxy/pipeline"
)

// inspectTime is how `journal inspect` prints instants: UTC, microseconds.
const inspectTime = "2006-01-02T15:04:05.000000Z07:00"

func newJournalCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "journal",
		Short: "Look inside journals recorded by kproxy serve --journal",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newJournalInspectCmd())
	return cmd
}

// inspectFilter selects the exchanges `journal inspect` prints.
type inspectFilter struct {
	apiKey int16 // -1 for any
	group  string
}

func newJournalInspectCmd() *cobra.Command {
	var (
		api     string
		group   string
		raw     bool
		summary bool
	)
	cmd := &cobra.Command{
		Use:   "inspect PATH... [--api NAME] [--group G] [--raw] [--summary]",
		Short: "One line per journaled exchange, or a summary of the journal",
		Long: `inspect prints one line per exchange in the journals at PATH (segment files
or directories), in the order the proxy observed them: by completion time,
the response time (the request time of an exchange without a response), which
is also how several journals are merged. Each line has the request time (UTC),
connection, client, broker, api and version, correlation id, latency, and the
decoded group, member, generation (or member epoch) and error. --raw adds the
request and response bytes in hex. --summary prints instead the journals, the
number of records, the time span, the groups and APIs seen, the exchanges the
writer dropped, the corrupt records skipped and any torn tail.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f := inspectFilter{apiKey: -1, group: group}
			if api != "" {
				k, err := parseAPI(api)
				if err != nil {
					return err
				}
				f.apiKey = k
			}
			r, err := journal.OpenReader(args...)
			if err != nil {
				return err
			}
			defer r.Close()
			out := bufio.NewWriter(cmd.OutOrStdout())
			defer out.Flush()
			if summary {
				return inspectSummary(r, f, out)
			}
			err = inspectLines(r, f, raw, out)
			// Flush first, so the warning follows the listing rather than
			// landing in its middle when both go to one terminal.
			if ferr := out.Flush(); err == nil {
				err = ferr
			}
			warnDamage(cmd.ErrOrStderr(), r.Stats())
			return err
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&api, "api", "", "only this API, by name (JoinGroup, case-insensitive) or key (11)")
	fl.StringVar(&group, "group", "", "only exchanges concerning this consumer group")
	fl.BoolVar(&raw, "raw", false, "add the request and response bytes in hex")
	fl.BoolVar(&summary, "summary", false, "print a summary of the journal instead of one line per exchange")
	return cmd
}

// parseAPI reads an API name as kmsg spells it, in any case, or a key.
func parseAPI(s string) (int16, error) {
	if k, err := strconv.ParseInt(s, 10, 16); err == nil && k >= 0 {
		return int16(k), nil
	}
	for k := int16(0); k < 1000; k++ {
		if strings.EqualFold(decode.APIName(k), s) {
			return k, nil
		}
	}
	return 0, fmt.Errorf("journal inspect: --api %q: not an API name (such as JoinGroup) or key", s)
}

// inspected is one exchange read from the journal with its events.
type inspected struct {
	x         *decode.Exchange
	events    []decode.Event
	decodeErr error
}

// each runs the journal through the pipeline, which decodes every
// exchange in order with one Decoder (as the live proxy does, so SyncGroup
// < v5 learns its protocol type), and calls fn for those f selects; the
// exchange and its events are valid only during the call. The first error
// fn returns stops reading and is returned.
func each(r *journal.Reader, f inspectFilter, fn func(in inspected) error) error {
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var fnErr error
	pl := pipeline.New(pipeline.Config{Inspect: func(x *decode.Exchange, events []decode.Event, derr error) {
		if fnErr != nil {
			return
		}
		if f.apiKey >= 0 && x.APIKey != f.apiKey {
			return
		}
		if f.group != "" && !hasGroup(events, f.group) {
			return
		}
		if fnErr = fn(inspected{x: x, events: events, decodeErr: derr}); fnErr != nil {
			stop()
		}
	}})
	err := pl.Run(ctx, r.Source())
	if fnErr != nil {
		return fnErr
	}
	return err
}

func hasGroup(events []decode.Event, g string) bool {
	for i := range events {
		if events[i].Group == g {
			return true
		}
	}
	return false
}

// inspectLines prints one line per selected exchange.
func inspectLines(r *journal.Reader, f inspectFilter, raw bool, out *bufio.Writer) error {
	return each(r, f, func(in inspected) error {
		x := in.x
		fmt.Fprintf(out, "%s conn=%d client=%s client_id=%q broker=%d %s v%d corr=%d",
			x.RequestAt.UTC().Format(inspectTime), x.ConnID, x.ClientAddr, x.ClientID, x.BrokerID,
			decode.APIName(x.APIKey), x.APIVersion, x.CorrelationID)
		if x.ClientCert != "" {
			fmt.Fprintf(out, " client_cert=%q", x.ClientCert)
		}
		if x.ResponseAt.IsZero() {
			out.WriteString(" no_response")
		} else {
			fmt.Fprintf(out, " latency=%s", x.Latency())
		}
		for i := range in.events {
			e := &in.events[i]
			if f.group != "" && e.Group != f.group {
				continue
			}
			ef := e.Summary()
			if e.Group != "" {
				fmt.Fprintf(out, " group=%q", e.Group)
			}
			if ef.Member != "" {
				fmt.Fprintf(out, " member=%q", ef.Member)
			}
			if ef.Instance != "" {
				fmt.Fprintf(out, " instance=%q", ef.Instance)
			}
			if ef.Generation >= 0 {
				name := "gen"
				if ef.Epoch {
					name = "epoch"
				}
				fmt.Fprintf(out, " %s=%d", name, ef.Generation)
			}
			if ef.ErrorCode != 0 {
				fmt.Fprintf(out, " error=%s", decode.ErrorName(ef.ErrorCode))
			}
		}
		if in.decodeErr != nil {
			fmt.Fprintf(out, " decode_error=%q", in.decodeErr.Error())
		}
		out.WriteByte('\n')
		if raw {
			fmt.Fprintf(out, "  request  %s\n", hex.EncodeToString(x.Request))
			if x.Response != nil {
				fmt.Fprintf(out, "  response %s\n", hex.EncodeToString(x.Response))
			}
		}
		return nil
	})
}

// inspectSummary prints what the journal holds, over the selected exchanges.
func inspectSummary(r *journal.Reader, f inspectFilter, out *bufio.Writer) error {
	groups := map[string]int{}
	apis := map[int16]int{}
	var selected, undecoded int
	var first, last time.Time
	err := each(r, f, func(in inspected) error {
		selected++
		apis[in.x.APIKey]++
		if in.decodeErr != nil {
			undecoded++
		}
		if first.IsZero() || in.x.RequestAt.Before(first) {
			first = in.x.RequestAt
		}
		if in.x.RequestAt.After(last) {
			last = in.x.RequestAt
		}
		seen := map[string]bool{}
		for i := range in.events {
			if g := in.events[i].Group; g != "" && !seen[g] && (f.group == "" || g == f.group) {
				seen[g] = true
				groups[g]++
			}
		}
		return nil
	})
	st := r.Stats()
	fmt.Fprintf(out, "files:            %d (%d bytes)\n", st.Files, st.Bytes)
	for _, j := range st.Journals {
		v := j.KproxyVersion
		if v == "" {
			v = "unknown version"
		}
		fmt.Fprintf(out, "journal:          %x, kproxy %s, started %s, %d segment(s)\n",
			j.ID, v, j.Created.UTC().Format(inspectTime), len(j.Segments))
	}
	fmt.Fprintf(out, "records:          %d exchanges", st.Records)
	if f.apiKey >= 0 || f.group != "" {
		fmt.Fprintf(out, " (%d selected)", selected)
	}
	out.WriteByte('\n')
	if selected > 0 {
		fmt.Fprintf(out, "time span:        %s .. %s (%s)\n",
			first.UTC().Format(inspectTime), last.UTC().Format(inspectTime), last.Sub(first))
	}
	writeDrops(out, st)
	fmt.Fprintf(out, "corrupt skipped:  %d records\n", st.Corrupt)
	if st.Unknown > 0 {
		fmt.Fprintf(out, "unknown records:  %d (written by a newer kproxy; skipped)\n", st.Unknown)
	}
	if undecoded > 0 {
		fmt.Fprintf(out, "undecoded:        %d exchanges did not decode\n", undecoded)
	}
	for _, d := range st.Damaged {
		fmt.Fprintf(out, "corrupt record:   %s\n", d)
	}
	for _, t := range st.Torn {
		fmt.Fprintf(out, "torn tail:        %s\n", t)
	}
	fmt.Fprintf(out, "apis:            ")
	for _, k := range sortedKeys(apis) {
		fmt.Fprintf(out, " %s=%d", decode.APIName(k), apis[k])
	}
	out.WriteByte('\n')
	fmt.Fprintf(out, "groups:           %d\n", len(groups))
	for _, g := range sortedKeys(groups) {
		fmt.Fprintf(out, "  %-40s %d exchanges\n", g, groups[g])
	}
	return err
}

func sortedKeys[K int16 | string, V any](m map[K]V) []K {
	return slices.Sorted(maps.Keys(m))
}

// warnDamage tells the user on stderr what could not be read.
func warnDamage(w io.Writer, st journal.ReadStats) {
	for _, t := range st.Torn {
		fmt.Fprintf(w, "kproxy: warning: %s\n", t)
	}
	for _, d := range st.Damaged {
		fmt.Fprintf(w, "kproxy: warning: %s\n", d)
	}
	if more := st.Corrupt - uint64(len(st.Damaged)); more > 0 {
		fmt.Fprintf(w, "kproxy: warning: %d more corrupt journal records were skipped\n", more)
	}
	queue, disk := dropCauses(st)
	if queue > 0 {
		fmt.Fprintf(w, "kproxy: warning: the journal misses %d%s exchanges its writer dropped (queue full)\n", queue, atLeast(st.Dropped))
	}
	if disk > 0 {
		fmt.Fprintf(w, "kproxy: warning: the journal misses %d%s exchanges lost while a write error had journaling suspended (%s)\n",
			disk, atLeast(disk), printable.String(st.WriteError))
	}
}

// dropCauses splits the journal's drops: those that found a queue full,
// and those lost while a write error had journaling suspended.
func dropCauses(st journal.ReadStats) (queue, disk uint64) {
	disk = min(st.WriteErrorLost, st.Dropped)
	return st.Dropped - disk, disk
}

// atLeast marks a count taken from a total of drops that saturated: gap
// records add up past what a uint64 holds only in a crafted or damaged
// journal.
func atLeast(total uint64) string {
	if total == math.MaxUint64 {
		return " (at least)"
	}
	return ""
}

// writeDrops prints the summary's dropped line and, when a write error
// lost some of them, what each cause lost.
func writeDrops(out *bufio.Writer, st journal.ReadStats) {
	queue, disk := dropCauses(st)
	if disk == 0 {
		fmt.Fprintf(out, "dropped:          %d%s exchanges (kproxy's observer queue or the journal writer's queue was full)\n", st.Dropped, atLeast(st.Dropped))
		return
	}
	fmt.Fprintf(out, "dropped:          %d%s exchanges\n", st.Dropped, atLeast(st.Dropped))
	fmt.Fprintf(out, "  queue full:     %d%s (kproxy's observer queue or the journal writer's queue was full)\n", queue, atLeast(st.Dropped))
	fmt.Fprintf(out, "  write error:    %d (journaling suspended %d time(s) by a write error, the first: %s)\n",
		disk, st.Suspensions, printable.String(st.WriteError))
}
