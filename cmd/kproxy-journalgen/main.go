// Command kproxy-journalgen writes a synthetic journal of a given size:
// many consumer groups joining, syncing, heartbeating, committing and
// rebalancing as members come and go, every frame encoded by kmsg. It feeds
// the replay benchmark (kproxy replay on a journal of 1 GiB or more).
//
//	kproxy-journalgen -out /tmp/big -size 1GiB [-groups 2000] [-members 8] [-seed 1]
package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kproxy-dev/kproxy/journal"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "kproxy-journalgen:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("kproxy-journalgen", flag.ContinueOnError)
	out := fs.String("out", "", "journal directory to write (required)")
	sizeFlag := fs.String("size", "64MiB", "stop once this many bytes are written (KiB, MiB, GiB suffixes)")
	groups := fs.Int("groups", 2000, "number of consumer groups")
	members := fs.Int("members", 8, "most members in a group (at least 3)")
	seed := fs.Uint64("seed", 1, "random seed: the same seed writes the same exchanges")
	segment := fs.String("segment", "64MiB", "segment size")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" || fs.NArg() > 0 {
		return fmt.Errorf("usage: kproxy-journalgen -out DIR [-size 1GiB] [-groups N] [-members N] [-seed N]")
	}
	size, err := parseSize(*sizeFlag)
	if err != nil {
		return fmt.Errorf("-size: %w", err)
	}
	segBytes, err := parseSize(*segment)
	if err != nil {
		return fmt.Errorf("-segment: %w", err)
	}
	if *groups < 1 || *members < 3 {
		return fmt.Errorf("-groups must be at least 1 and -members at least 3")
	}
	if err := checkVersions(); err != nil {
		return err
	}

	w, err := journal.Open(*out, journal.Options{
		KproxyVersion: "kproxy-journalgen",
		Fsync:         journal.FsyncNever,
		SegmentBytes:  segBytes,
		RetainBytes:   -1,
		RetainAge:     -1,
	}, nil)
	if err != nil {
		return err
	}
	tr := newTraffic(*seed, *groups, *members, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	start := time.Now()
	var n uint64
	for {
		// The writer drops what its queue cannot hold; a generator must
		// not, so wait whenever the queue is half full.
		if n%256 == 0 {
			st := w.Stats()
			if st.Err != nil {
				break
			}
			if st.Bytes >= uint64(size) {
				break
			}
			for st.Queued > journal.DefaultQueueLen/2 {
				time.Sleep(200 * time.Microsecond)
				st = w.Stats()
			}
		}
		w.Append(tr.next())
		n++
	}
	if err := w.Close(); err != nil {
		return err
	}
	st := w.Stats()
	if st.Dropped > 0 {
		return fmt.Errorf("the writer dropped %d exchanges", st.Dropped)
	}
	el := time.Since(start)
	fmt.Printf("wrote %d exchanges, %d bytes in %d segments to %s in %s (%.0f MB/s, %.0f exchanges/s)\n",
		st.Written, st.Bytes, st.Segments, *out, el.Round(time.Millisecond),
		float64(st.Bytes)/el.Seconds()/1e6, float64(st.Written)/el.Seconds())
	return nil
}

// checkVersions makes sure kmsg can encode the versions the clients speak.
func checkVersions() error {
	for _, r := range []struct {
		req kmsg.Request
		v   int16
	}{
		{kmsg.NewPtrFindCoordinatorRequest(), vFindCoordinator},
		{kmsg.NewPtrJoinGroupRequest(), vJoinGroup},
		{kmsg.NewPtrSyncGroupRequest(), vSyncGroup},
		{kmsg.NewPtrHeartbeatRequest(), vHeartbeat},
		{kmsg.NewPtrLeaveGroupRequest(), vLeaveGroup},
		{kmsg.NewPtrOffsetCommitRequest(), vOffsetCommit},
	} {
		if r.req.MaxVersion() < r.v {
			return fmt.Errorf("kmsg knows %s up to v%d; the generator needs v%d", kmsg.NameForKey(r.req.Key()), r.req.MaxVersion(), r.v)
		}
	}
	return nil
}

// parseSize reads "1GiB", "64MiB", "512KiB" or a plain byte count.
func parseSize(s string) (int64, error) {
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3}, {"B", 1}} {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSuffix(s, u.suffix), u.mult
			break
		}
	}
	n, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%q is not a size such as 1GiB", s)
	}
	return int64(n * float64(mult)), nil
}
