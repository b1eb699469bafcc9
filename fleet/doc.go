// Package fleet carries the exchanges of several kproxy instances through
// an events topic on the user's own Kafka cluster and merges them back
// into one stream, so that one timeline tells each group's story as if one
// proxy had seen every member.
//
// A Publisher (serve --events-topic) is a consumer of the pipeline: it
// publishes each exchange the instance observed, as the journal would
// record it, keyed by group, with the instance id, run and sequence number
// in headers, and a marker every second; it never blocks the pipeline,
// dropping and counting what the cluster cannot take. A Source (replay
// --from-topic, serve --fleet-topic) consumes the topic and hands the
// pipeline the exchanges of every instance in one order: each instance's
// own order, merged by completion time corrected for the instances' clock
// offsets, which the coordinator's own simultaneous answers reveal. The
// record format is in docs/fleet.md.
package fleet
