"""confluent-kafka (librdkafka) consumer for the e2e suite.

Subscribes with the roundrobin assignor (the one protocol name it shares
with the kafkajs and franz-go clients), commits processed offsets of revoked
partitions from its on_revoke callback, and sleeps --work-ms after each
non-empty poll. SIGTERM closes it cleanly.
"""

import argparse
import signal
import time

from confluent_kafka import Consumer, KafkaException, TopicPartition

from events import by_topic, emit, security_librdkafka


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bootstrap", required=True)
    p.add_argument("--group", required=True)
    p.add_argument("--topic", required=True)
    p.add_argument("--client-id", default="confluent-kafka")
    p.add_argument("--work-ms", type=int, default=0)
    p.add_argument("--session-ms", type=int, default=10000,
                   help="session timeout, heartbeats every fifth of it; 0: librdkafka's defaults (45 s, 3 s)")
    p.add_argument("--assignor", default="roundrobin")
    p.add_argument("--max-poll-interval-ms", type=int, default=0,
                   help="0: librdkafka's default (300 s); at least the session timeout")
    p.add_argument("--instance-id", default="",
                   help="group.instance.id (static membership, KIP-345)")
    a = p.parse_args()

    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(True))

    conf = {
        "bootstrap.servers": a.bootstrap,
        "group.id": a.group,
        "client.id": a.client_id,
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "partition.assignment.strategy": a.assignor,
        **security_librdkafka(),
    }
    if a.session_ms > 0:
        conf["session.timeout.ms"] = a.session_ms
        conf["heartbeat.interval.ms"] = max(100, a.session_ms // 5)
    if a.max_poll_interval_ms > 0:
        conf["max.poll.interval.ms"] = a.max_poll_interval_ms
    if a.instance_id:
        conf["group.instance.id"] = a.instance_id
    consumer = Consumer(conf)
    processed = {}

    def commit(tps):
        offsets = [TopicPartition(tp.topic, tp.partition, processed.pop((tp.topic, tp.partition)))
                   for tp in tps if (tp.topic, tp.partition) in processed]
        if not offsets:
            return
        shown = {}
        for tp in offsets:
            shown.setdefault(tp.topic, {})[str(tp.partition)] = tp.offset
        try:
            consumer.commit(offsets=offsets, asynchronous=False)
            emit("commit", offsets=shown, error="")
        except KafkaException as e:
            emit("commit", offsets=shown, error=str(e))

    def on_assign(c, tps):
        emit("assigned", partitions=by_topic(tps))

    def on_revoke(c, tps):
        emit("revoked", partitions=by_topic(tps))
        commit(tps)

    def on_lost(c, tps):
        emit("lost", partitions=by_topic(tps))
        for tp in tps:
            processed.pop((tp.topic, tp.partition), None)

    consumer.subscribe([a.topic], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_lost)
    emit("started", client_id=a.client_id)
    total = 0
    seen = set()  # every value read: a record read twice is not one more
    while not stop:
        msgs = consumer.consume(num_messages=10, timeout=0.2)
        good = [m for m in msgs if m.error() is None]
        for m in msgs:
            if m.error() is not None:
                emit("error", error=str(m.error()))
        if not good:
            continue
        for m in good:
            processed[(m.topic(), m.partition())] = m.offset() + 1
            seen.add(m.value())
        total += len(good)
        emit("polled", count=len(good), total=total, distinct=len(seen),
             partitions=by_topic(TopicPartition(t, p)
                                 for t, p in {(m.topic(), m.partition()) for m in good}))
        time.sleep(a.work_ms / 1000.0)
    consumer.close()
    emit("closed", total=total)


if __name__ == "__main__":
    main()
