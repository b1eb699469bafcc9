package diagnose

import (
	"fmt"
	"strings"
	"time"

	"github.com/kproxy-dev/kproxy/timeline"
)

// An online migration (KIP-848, group.consumer.migration.policy) leaves a
// group mixed: classic members in a consumer group. It is meant to last
// as long as a rolling restart. While it lasts, every group epoch makes
// each classic member rejoin (JoinGroup, SyncGroup), and one with an
// eager assignor gives up all its partitions each time; an upgrade is not
// complete until the last classic member leaves, a downgrade does not
// convert the group until the last consumer-protocol member leaves.

// migrationStalledAfter is how long a group may stay mixed before it is a
// finding: a roll of a few hundred instances takes minutes.
const migrationStalledAfter = 10 * time.Minute

// migrationsStalled makes a migration_stalled finding per migration that
// kept the group mixed for migrationStalledAfter or more, still under way
// at the end of the input or completed late.
func (e *Engine) migrationsStalled(g *groupState, gr *timeline.GroupView) []Finding {
	var out []Finding
	for _, mg := range gr.Migrations {
		end, ongoing := mg.Completed, mg.Completed.IsZero()
		if ongoing {
			end = gr.LastSeen
		}
		mixed := end.Sub(mg.Started)
		if mixed < migrationStalledAfter {
			continue
		}
		old, now := timeline.ProtocolClassic, timeline.ProtocolConsumer
		if mg.Direction == timeline.MigrationDowngrade {
			old, now = now, old
		}
		f := newFinding(MigrationStalled, g.id, Warning, mg.Started, "")
		f.Evidence["direction"] = mg.Direction
		f.Evidence["startedAt"] = stamp(mg.Started)
		f.Evidence["startedBy"] = mg.StartedBy
		f.Evidence["mixedMs"] = ms(mixed)
		f.Evidence["ongoing"] = ongoing
		if !mg.Converted.IsZero() {
			f.Evidence["convertedAt"] = stamp(mg.Converted)
			f.Evidence["generation"] = mg.Generation
		}
		var remain []string
		if ongoing {
			remain = membersOf(gr, mg.Started, old)
			f.Evidence["remaining"] = remain
		} else {
			f.Evidence["completedAt"] = stamp(mg.Completed)
			f.Evidence["lastMember"] = mg.LastMember
			remain = []string{mg.LastMember}
		}
		f.Members = e.infos(g, remain...)
		what := "the online upgrade is complete only when the last classic member leaves"
		if mg.Direction == timeline.MigrationDowngrade {
			what = "the group converts back to a classic group only when its last consumer-protocol member leaves"
		}
		state := fmt.Sprintf("%s members still in the group: %s", old, strings.Join(remain, ", "))
		if !ongoing {
			state = fmt.Sprintf("it completed at %s, when %s, the last %s member, left", stamp(mg.Completed), mg.LastMember, old)
		}
		f.Explanation = fmt.Sprintf("the group had %s and %s members together for %.1f min (online %s started at %s by %s): %s; meanwhile every group epoch makes each classic member rejoin (JoinGroup, SyncGroup), and one with an eager assignor gives up all its partitions each time; %s",
			old, now, mixed.Minutes(), mg.Direction, stamp(mg.Started), mg.StartedBy, what, state)
		f.Suggestion = advice(MigrationStalled)
		out = append(out, f)
	}
	return out
}

// membersOf is the members of protocol proto in gr's latest generation
// formed since since, sorted (generation members are).
func membersOf(gr *timeline.GroupView, since time.Time, proto string) []string {
	out := []string{}
	for i := len(gr.Generations) - 1; i >= 0; i-- {
		gen := &gr.Generations[i]
		if gen.Started.Before(since) && !gen.Started.IsZero() {
			break
		}
		for _, m := range gen.Members {
			if m.Protocol == proto {
				out = append(out, m.MemberID)
			}
		}
		return out
	}
	return out
}

// migrationDuring is the migration whose mixed time overlaps from..to,
// nil if none: a storm then comes partly from the roll itself, each
// member replaced by one of the other protocol leaving and joining.
func migrationDuring(gr *timeline.GroupView, from, to time.Time) *timeline.MigrationView {
	for i := range gr.Migrations {
		mg := &gr.Migrations[i]
		end := mg.Completed
		if end.IsZero() {
			end = gr.LastSeen
		}
		if !to.Before(mg.Started) && !from.After(end) {
			return mg
		}
	}
	return nil
}
