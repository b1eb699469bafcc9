// Package timeline turns consumer-group events (decode.Event) into the story
// of each rebalance: generations, what triggered them, who joined and when,
// who the group waited for, the leader, the assignor, the assignment plan and
// what moved, the commits made while partitions were being revoked, storms,
// KIP-848 member epochs, and what kproxy could not see.
//
// The Engine is pure and deterministic: every timestamp comes from the
// events, never from the wall clock, so the same event sequence always gives
// the same entries and a byte-identical JSON report, live or replayed. It is
// owned by one goroutine and needs no locks. The only I/O is in the render
// functions, which write to an io.Writer.
//
// Feed events in the order the proxy completes exchanges (response order);
// replay must feed them in the same order to reproduce the live output.
package timeline
