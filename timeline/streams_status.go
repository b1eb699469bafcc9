package timeline

import (
	"fmt"

	"github.com/kproxy-dev/kproxy/decode"
)

// The statuses a streams group's coordinator raises in its heartbeat
// responses: why the group cannot run as it is.

// streamsStatuses raises the statuses a response lists and clears those
// it no longer lists, when the response is to the member that raised
// them, or that member is gone: a status may concern one member only
// (STALE_TOPOLOGY), and the others' responses do not clear it.
func (g *group) streamsStatuses(ev *decode.Event, m *smember) {
	h := ev.StreamsGroupHeartbeat
	st := g.streams
	listed := map[int8]bool{}
	for _, s := range h.Status {
		listed[s.Code] = true
		if st.open[s.Code] != nil {
			continue
		}
		rec := &streamsStatus{code: s.Code, detail: s.Detail, member: m.id, raised: ev.RespondedAt, raisedEpoch: st.epoch}
		st.open[s.Code] = rec
		if len(st.statuses) < maxStreamsRecords {
			st.statuses = append(st.statuses, rec)
		} else {
			st.dropped++
		}
		name := decode.StreamsStatusName(s.Code)
		g.emit(ev.RespondedAt, KindStreamsStatus, st.epoch, m.id, fmt.Sprintf("status %s raised: %s", name, s.Detail),
			map[string]any{"status": name, "status_code": s.Code, "detail": s.Detail})
	}
	for _, code := range sortedKeys(st.open) {
		rec := st.open[code]
		if listed[code] {
			continue
		}
		if by := st.members[rec.member]; by != nil && by.alive && by != m {
			continue
		}
		rec.clearedAt = ev.RespondedAt
		delete(st.open, code)
		name := decode.StreamsStatusName(code)
		g.emit(ev.RespondedAt, KindStreamsStatus, st.epoch, m.id, fmt.Sprintf("status %s cleared after %s", name, human(rec.clearedAt.Sub(rec.raised))),
			map[string]any{"status": name, "status_code": code, "cleared": true})
	}
}
