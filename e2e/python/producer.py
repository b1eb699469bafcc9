"""Paced producer for the e2e broker outage scenario, with kafka-python or
confluent-kafka (librdkafka): sends --count distinct records, one every
--every-ms, each retried until acknowledged (retries unlimited, delivery
timeout two minutes), then prints a "produced" event with the count, the
number that failed and the first error.
"""

import argparse
import time

from events import emit


def payload(i):
    return ("python-record-%d" % i).encode()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--lib", choices=["kafka-python", "confluent"], required=True)
    p.add_argument("--bootstrap", required=True)
    p.add_argument("--topic", required=True)
    p.add_argument("--count", type=int, required=True)
    p.add_argument("--every-ms", type=int, default=0)
    p.add_argument("--client-id", default="")
    a = p.parse_args()
    client_id = a.client_id or a.lib + "-producer"

    failed = []

    def result(err):
        if err is not None:
            failed.append(str(err))

    if a.lib == "kafka-python":
        from kafka import KafkaProducer
        pr = KafkaProducer(bootstrap_servers=a.bootstrap, client_id=client_id, acks="all",
                           retries=2147483647, delivery_timeout_ms=120000, request_timeout_ms=10000,
                           max_in_flight_requests_per_connection=1)
        emit("started", client_id=client_id)
        for i in range(a.count):
            fut = pr.send(a.topic, key=b"k%d" % i, value=payload(i))
            fut.add_errback(result)
            time.sleep(a.every_ms / 1000)
        pr.flush(timeout=180)
        pr.close()
    else:
        from confluent_kafka import Producer
        pr = Producer({"bootstrap.servers": a.bootstrap, "client.id": client_id, "acks": "all",
                       "message.timeout.ms": 120000})
        emit("started", client_id=client_id)
        for i in range(a.count):
            pr.produce(a.topic, key=b"k%d" % i, value=payload(i), on_delivery=lambda err, msg: result(err))
            pr.poll(0)
            time.sleep(a.every_ms / 1000)
        left = pr.flush(180)
        if left:
            failed.extend(["not delivered by flush"] * left)
    emit("produced", count=a.count, failed=len(failed), error=failed[0] if failed else "")


if __name__ == "__main__":
    main()
