package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/kproxy-dev/kproxy/decode"
	"github.com/kproxy-dev/kproxy/pipeline"
	"github.com/kproxy-dev/kproxy/story"
	"github.com/kproxy-dev/kproxy/timeline"
)

// Paging of the admin server's timeline and findings: a page holds
// defaultPageGroups groups unless ?limit= says otherwise, and never more
// than maxPageGroups, so that no request renders a whole history at once.
const (
	defaultPageGroups = 100
	maxPageGroups     = 1000
)

// parsePageQuery reads the parameters of the timeline and findings
// endpoints: group (repeatable), since (a time as replay's --since reads
// it), after (the group a page starts after) and limit (groups per page).
func parsePageQuery(v url.Values) (timeline.Query, error) {
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
// replay costs seconds of CPU per GiB: historyConcurrency run at a time,
// beside the other admin requests, and each for historyTimeout at most.
type history struct {
	cfg historyConfig
}

// How many journal replays the admin server runs at once, how long a
// query waits for its turn, and how long one may run before it is
// stopped (503).
const (
	historyConcurrency = 1
	historyWait        = 30 * time.Second
	historyTimeout     = 2 * time.Minute
)

// readsJournal says whether the timeline query v is answered from the
// journal (see report); a query that does not parse is not.
func (h *history) readsJournal(snap *timeline.Snapshot, v url.Values) bool {
	q, err := parsePageQuery(v)
	return err == nil && h.cfg.dir != "" && older(snap, q)
}

// older says whether q asks for history from before what snap keeps.
func older(snap *timeline.Snapshot, q timeline.Query) bool {
	return !q.Since.IsZero() && q.Since.Before(snap.Horizon)
}

// report answers q from snap (its reports rendered by the timeline's
// owner), or from the journal when q.Since is before
// snap's horizon and a journal is on. It sets the Kproxy-Source header
// (memory or journal) and, when memory is missing history q asks for,
// Kproxy-History-From (the time from which memory is whole). It returns the
// report, the group to start the next page after, and on failure an HTTP
// status.
func (h *history) report(ctx context.Context, snap *timeline.Snapshot, q timeline.Query, hdr http.Header) (*timeline.Report, string, int, error) {
	if !older(snap, q) || h.cfg.dir == "" {
		hdr.Set("Kproxy-Source", "memory")
		if older(snap, q) {
			hdr.Set("Kproxy-History-From", snap.Horizon.UTC().Format(time.RFC3339Nano))
		}
		r, next, err := snap.Report(ctx, q)
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, "", http.StatusServiceUnavailable, fmt.Errorf("busy: the pipeline did not render the timeline within %s; try again", timeline.RenderWait)
		}
		if err != nil {
			return nil, "", http.StatusServiceUnavailable, err // the reader has gone
		}
		return r, next, 0, nil
	}
	ctx, cancel := context.WithTimeout(ctx, historyTimeout)
	defer cancel()
	r, next, err := h.fromJournal(ctx, q)
	if errors.Is(err, context.DeadlineExceeded) {
		return nil, "", http.StatusServiceUnavailable, fmt.Errorf("history: reading the journal took longer than %s; ask for fewer groups or a later since", historyTimeout)
	}
	if err != nil {
		return nil, "", http.StatusInternalServerError, err
	}
	hdr.Set("Kproxy-Source", "journal")
	return r, next, 0, nil
}

// fromJournal tells the story of the journal's exchanges completed since
// q.Since again, as replay does, for the groups q asks for only: those it
// names or, when it names none, those of its page (pageGroups reads the
// journal once more to find them, and says which page is next). One
// request thus holds at most a page of groups' history, however long the
// journal. It returns the page, and the group to start the next page
// after.
func (h *history) fromJournal(ctx context.Context, q timeline.Query) (*timeline.Report, string, error) {
	cfg := h.cfg.storm
	cfg.Groups = q.Groups
	pageNext := ""
	if len(q.Groups) == 0 {
		var err error
		if cfg.Groups, pageNext, err = h.pageGroups(ctx, q); err != nil {
			return nil, "", err
		}
		if len(cfg.Groups) == 0 {
			return story.New(story.Config{}).Report(), "", nil // none: a story told nothing
		}
	}
	st := story.New(story.Config{Timeline: cfg})
	in, err := openJournalInput([]string{h.cfg.dir}, nil)
	if err != nil {
		return nil, "", fmt.Errorf("history: %w", err)
	}
	defer in.close()
	if _, err := story.Tell(ctx, in, st, story.Window{Since: q.Since, Batch: replayBatch}); err != nil {
		return nil, "", fmt.Errorf("history: %w", err)
	}
	r, next := q.Filter(st.Report())
	if len(q.Groups) == 0 {
		// Told the page's groups alone, the report has no next page; the
		// first pass knows it (even if retention dropped a group of the
		// page between the passes).
		next = pageNext
	}
	return r, next, nil
}

// pageGroups is the ids of the groups of q's page, as q.Filter would pick
// them from the whole story of the journal since q.Since: the groups seen
// at or after q.Since, paged as q says (Query.Page); and the id to start
// the next page after.
func (h *history) pageGroups(ctx context.Context, q timeline.Query) ([]string, string, error) {
	in, err := openJournalInput([]string{h.cfg.dir}, nil)
	if err != nil {
		return nil, "", fmt.Errorf("history: %w", err)
	}
	defer in.close()
	seen := groupsSeen{}
	pl := pipeline.New(pipeline.Config{Events: []pipeline.EventConsumer{seen}, Batch: replayBatch, Since: q.Since})
	if err := pl.Run(ctx, in); err != nil {
		return nil, "", fmt.Errorf("history: %w", err)
	}
	var ids []string
	for id, last := range seen {
		if !last.Before(q.Since) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	page, next := q.Page(ids)
	return page, next, nil
}

// groupsSeen is, by group id, the latest time carried by its events (its
// report's LastSeen): a consumer of the pipeline's events.
type groupsSeen map[string]time.Time

// AddEvents notes the events' groups and times.
func (s groupsSeen) AddEvents(events []decode.Event) {
	for i := range events {
		ev := &events[i]
		if ev.Group == "" {
			continue
		}
		last := s[ev.Group]
		if ev.At.After(last) {
			last = ev.At
		}
		if ev.RespondedAt.After(last) {
			last = ev.RespondedAt
		}
		s[ev.Group] = last
	}
}
