// Package journal stores the exchanges kproxy observes in append-only
// segment files, and reads them back for replay.
//
// A journal is a directory of segment files written by one Writer. Each
// segment starts with a header (magic, format version, creation time,
// journal id, segment sequence number, kproxy version) and holds records
// framed with a sync marker, a length and a CRC32C, so that a reader can
// skip a damaged record and resynchronise on the next one. The layout is
// documented byte by byte in docs/journal-format.md.
//
// The Writer never slows traffic: Append hands an exchange to one writer
// goroutine through a bounded queue and drops it, counted, when the queue is
// full. Those drops, and the ones the proxy reports with Dropped (its own
// queue overflowed before the exchanges reached the Writer), are written as
// gap records, so readers know what is missing. A write error stops
// journaling; Append keeps returning at once.
//
// A Reader streams the exchanges of several journals, each in the order it
// was written and merged by completion time, reporting torn tails and
// counting the damaged records it skipped.
package journal
