"""kafka-python consumer for the e2e suite.

Manual commits: it keeps the offsets it has processed and commits those of the
revoked partitions from on_partitions_revoked of its ConsumerRebalanceListener
(and on close). Each non-empty poll is followed by
--work-ms of "processing". SIGTERM closes it cleanly.
"""

import argparse
import logging
import signal
import sys
import time

from kafka import ConsumerRebalanceListener, KafkaConsumer, OffsetAndMetadata
from kafka.coordinator.assignors.range import RangePartitionAssignor

from events import by_topic, emit, security_kafka_python


class CommitOnRevoke(ConsumerRebalanceListener):
    """Commits the processed offsets of partitions as they are revoked."""

    def __init__(self, consumer, processed):
        self.consumer = consumer
        self.processed = processed

    def on_partitions_revoked(self, revoked):
        emit("revoked", partitions=by_topic(revoked))
        offsets = {tp: OffsetAndMetadata(self.processed.pop(tp), "", -1)
                   for tp in list(revoked) if tp in self.processed}
        if not offsets:
            return
        shown = {}
        for tp, om in offsets.items():
            shown.setdefault(tp.topic, {})[str(tp.partition)] = om.offset
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
    p.add_argument("--max-poll-records", type=int, default=10)
    p.add_argument("--session-ms", type=int, default=10000)
    a = p.parse_args()
    logging.basicConfig(stream=sys.stderr, level=logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s %(message)s")

    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(True))

    consumer = KafkaConsumer(
        bootstrap_servers=a.bootstrap,
        group_id=a.group,
        client_id=a.client_id,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        max_poll_records=a.max_poll_records,
        session_timeout_ms=a.session_ms,
        heartbeat_interval_ms=max(100, a.session_ms // 5),
        partition_assignment_strategy=[RangePartitionAssignor],
        **security_kafka_python(),
    )
    processed = {}
    listener = CommitOnRevoke(consumer, processed)
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
        time.sleep(a.work_ms / 1000.0)
    # kafka-python 2.x does not call the listener on close, as Java does.
    listener.on_partitions_revoked(consumer.assignment())
    consumer.close()
    emit("closed", total=total)


if __name__ == "__main__":
    main()
