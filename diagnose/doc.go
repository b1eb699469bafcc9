// Package diagnose turns what the timeline tells into causes and advice:
// findings such as "member X was evicted because its poll loop was slower
// than max.poll.interval.ms", each with its evidence (the numbers), an
// explanation and the client settings that change it.
//
// An Engine is a consumer of the pipeline (pipeline.Config.Decoded): it is
// fed each exchange with its decoded events and its decoded Fetch or
// ApiVersions request (AddDecoded), the timeline's entries as they are
// emitted (Entry), and, when asked for its findings, the timeline's typed
// views of its groups (Findings, timeline.GroupView). Like the timeline it is
// deterministic: every inference uses the times carried by the exchanges,
// never the wall clock, so the same journal gives the same findings, byte
// for byte. The only clock it accepts is Advance, which serve calls on the
// source's ticks (pipeline.TickSource) so that a live warning ("this member's heartbeats stopped two
// thirds of its session timeout ago") is not delayed until the next
// exchange arrives; a warning is stamped with the time its threshold was
// crossed, not with the time it was noticed, so live and replay agree.
//
// docs/diagnosis.md documents every kind of finding.
package diagnose
