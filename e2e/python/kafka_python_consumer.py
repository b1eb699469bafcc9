"""kafka-python consumer for the e2e suite.

Manual commits: it keeps the offsets it has processed and commits those of the
revoked partitions from on_partitions_revoked of its ConsumerRebalanceListener
(and on close). Each non-empty poll is followed by
--work-ms of "processing". SIGTERM closes it cleanly.

--seed-bug behaves as the seed's consumers do: its offsets dict is never
pruned, so on_partitions_revoked commits (commit_async) every partition it
ever processed, including ones it no longer owns; each non-empty poll is
followed by commit_async() of the consumed positions, and close by a
synchronous commit of the owned partitions.
"""

import argparse
import logging
import signal
import sys
import time

from kafka import ConsumerRebalanceListener, KafkaConsumer, OffsetAndMetadata
from kafka.coordinator.assignors.range import RangePartitionAssignor

from events import by_topic, emit, security_kafka_python


def shown_offsets(offsets):
    shown = {}
    for tp, om in offsets.items():
        shown.setdefault(tp.topic, {})[str(tp.partition)] = om.offset
    return shown


class CommitOnRevoke(ConsumerRebalanceListener):
    """Commits the processed offsets of partitions as they are revoked."""

    def __init__(self, consumer, processed, seed_bug=False):
        self.consumer = consumer
        self.processed = processed
        self.seed_bug = seed_bug

    def on_partitions_revoked(self, revoked):
        emit("revoked", partitions=by_topic(revoked))
        if self.seed_bug:
            # The seed: consumer.commit_async(offsets=consumer_offsets), the
            # whole dict, never pruned.
            offsets = {tp: OffsetAndMetadata(o, "", -1) for tp, o in self.processed.items()}
            if not offsets:
                return
            shown = shown_offsets(offsets)

            def done(_offsets, result):
                err = "" if not isinstance(result, Exception) else "%s: %s" % (type(result).__name__, result)
                emit("commit", offsets=shown, error=err)
            self.consumer.commit_async(offsets, callback=done)
            return
        offsets = {tp: OffsetAndMetadata(self.processed.pop(tp), "", -1)
                   for tp in list(revoked) if tp in self.processed}
        if not offsets:
            return
        shown = shown_offsets(offsets)
        try:
            self.consumer.commit(offsets)
            emit("commit", offsets=shown, error="")
        except Exception as e:  # the suite reads the failure from the event
            emit("commit", offsets=shown, error="%s: %s" % (type(e).__name__, e))

    def on_partitions_assigned(self, assigned):
        emit("assigned", partitions=by_topic(assigned),
             owned=by_topic(self.consumer.assignment()))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bootstrap", required=True)
    p.add_argument("--group", required=True)
    p.add_argument("--topic", required=True)
    p.add_argument("--client-id", default="kafka-python")
    p.add_argument("--work-ms", type=int, default=0)
    p.add_argument("--max-poll-records", type=int, default=10,
                   help="0: kafka-python's default (500)")
    p.add_argument("--session-ms", type=int, default=10000,
                   help="session timeout, heartbeats every fifth of it; 0: kafka-python's defaults (10 s, 3 s)")
    p.add_argument("--max-poll-interval-ms", type=int, default=0,
                   help="0: kafka-python's default (300 s)")
    p.add_argument("--instance-id", default="",
                   help="group_instance_id (static membership, KIP-345)")
    p.add_argument("--seed-bug", action="store_true",
                   help="commit as the seed does: the offsets dict is never pruned")
    a = p.parse_args()
    logging.basicConfig(stream=sys.stderr, level=logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s %(message)s")

    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(True))

    tuned = {}
    if a.max_poll_records > 0:
        tuned["max_poll_records"] = a.max_poll_records
    if a.session_ms > 0:
        tuned["session_timeout_ms"] = a.session_ms
        tuned["heartbeat_interval_ms"] = max(100, a.session_ms // 5)
    if a.max_poll_interval_ms > 0:
        tuned["max_poll_interval_ms"] = a.max_poll_interval_ms
    if a.instance_id:
        tuned["group_instance_id"] = a.instance_id
    consumer = KafkaConsumer(
        bootstrap_servers=a.bootstrap,
        group_id=a.group,
        client_id=a.client_id,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        partition_assignment_strategy=[RangePartitionAssignor],
        **tuned,
        **security_kafka_python(),
    )
    processed = {}
    listener = CommitOnRevoke(consumer, processed, a.seed_bug)
    consumer.subscribe([a.topic], listener=listener)
    emit("started", client_id=a.client_id)
    total = 0
    seen = set()  # every value read: a record read twice is not one more
    while not stop:
        batches = consumer.poll(timeout_ms=200)
        n = 0
        for tp, records in batches.items():
            processed[tp] = records[-1].offset + 1
            n += len(records)
            seen.update(r.value for r in records)
        if n == 0:
            continue
        total += n
        emit("polled", count=n, total=total, distinct=len(seen), partitions=by_topic(batches.keys()))
        if a.seed_bug:
            consumer.commit_async()
        time.sleep(a.work_ms / 1000.0)
    if a.seed_bug:
        # The seed's finally: a synchronous commit of the consumed positions.
        owned = consumer.assignment()
        offsets = {tp: OffsetAndMetadata(o, "", -1) for tp, o in processed.items() if tp in owned}
        if offsets:
            try:
                consumer.commit(offsets)
                emit("commit", offsets=shown_offsets(offsets), error="")
            except Exception as e:
                emit("commit", offsets=shown_offsets(offsets), error="%s: %s" % (type(e).__name__, e))
        consumer.close()
        emit("closed", total=total)
        return
    # kafka-python 2.x does not call the listener on close, as Java does.
    listener.on_partitions_revoked(consumer.assignment())
    consumer.close()
    emit("closed", total=total)


if __name__ == "__main__":
    main()
