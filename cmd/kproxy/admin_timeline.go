package main

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/kproxy-dev/kproxy/timeline"
)

// Paging of the admin server's timeline: a page holds defaultPageGroups
// groups unless ?limit= says otherwise, and never more than maxPageGroups,
// so that no request renders a whole history at once.
const (
	defaultPageGroups = 100
	maxPageGroups     = 1000
)

// parseTimelineQuery reads the timeline endpoints' parameters: group
// (repeatable), since (a time as replay's --since reads it), after (the
// group a page starts after) and limit (groups per page).
func parseTimelineQuery(v url.Values) (timeline.Query, error) {
	q := timeline.Query{Groups: v["group"], After: v.Get("after"), Limit: defaultPageGroups}
	var err error
	if q.Since, err = parseReplayTime("since", v.Get("since")); err != nil {
		return q, fmt.Errorf("since %q: want an RFC 3339 time such as 2026-03-15T14:02:00Z", v.Get("since"))
	}
	if s := v.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > maxPageGroups {
			return q, fmt.Errorf("limit %q: want 1 to %d groups", s, maxPageGroups)
		}
		q.Limit = n
	}
	return q, nil
}

// nextPage is the address of the page after the one of u, which ended
// with the group last.
func nextPage(u *url.URL, last string) string {
	v := u.Query()
	v.Set("after", last)
	return u.Path + "?" + v.Encode()
}

// historyConfig says where history older than the live timeline's
// horizon is: the journal directory ("" for none), told again with the
// storm settings of the live timeline.
type historyConfig struct {
	dir   string
	storm timeline.Config
}

// history serves the timeline endpoints from the live snapshot, or from
// the journal when the query reaches before what memory keeps. A journal
// replay costs seconds of CPU per GiB; the admin server serves one
// request at a time (adminConcurrency), so one runs at a time.
type history struct {
	cfg historyConfig
}

// report answers q from snap, or from the journal when q.Since is before
// snap's horizon and a journal is on. It sets the Kproxy-Source header
// (memory or journal) and, when memory is missing history q asks for,
// Kproxy-History-From (the time from which memory is whole). It returns the
// report, the group to start the next page after, and on failure an HTTP
// status.
func (h *history) report(ctx context.Context, snap *timeline.Snapshot, q timeline.Query, hdr http.Header) (*timeline.Report, string, int, error) {
	older := !q.Since.IsZero() && q.Since.Before(snap.Horizon)
	if !older || h.cfg.dir == "" {
		hdr.Set("Kproxy-Source", "memory")
		if older {
			hdr.Set("Kproxy-History-From", snap.Horizon.UTC().Format(time.RFC3339Nano))
		}
		r, next := snap.Report(q)
		return r, next, 0, nil
	}
	r, err := h.fromJournal(ctx, q)
	if err != nil {
		return nil, "", http.StatusInternalServerError, err
	}
	hdr.Set("Kproxy-Source", "journal")
	r, next := q.Filter(r)
	return r, next, 0, nil
}

// fromJournal tells the story of the journal's exchanges completed since
// q.Since again, as replay does.
func (h *history) fromJournal(ctx context.Context, q timeline.Query) (*timeline.Report, error) {
	eng := timeline.New(h.cfg.storm)
	in, err := openJournalInput([]string{h.cfg.dir}, nil)
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	defer in.close()
	if _, err := tell(ctx, in, story{timeline: eng, batch: replayBatch, since: q.Since}); err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	return eng.Report(), nil
}
