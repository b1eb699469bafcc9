"""One JSON event per line on stdout, the format every e2e client shares."""

import json
import os
import sys
import time


def security_kafka_python():
    """kafka-python's TLS and SASL settings from the environment the harness
    sets (E2E_SECURITY_PROTOCOL, E2E_SSL_CA, E2E_SASL_MECHANISM,
    E2E_SASL_USERNAME, E2E_SASL_PASSWORD); none for plaintext."""
    env = os.environ.get
    out = {"security_protocol": env("E2E_SECURITY_PROTOCOL", "PLAINTEXT")}
    if env("E2E_SSL_CA"):
        out["ssl_cafile"] = env("E2E_SSL_CA")
    if env("E2E_SASL_MECHANISM"):
        out.update(sasl_mechanism=env("E2E_SASL_MECHANISM"), sasl_plain_username=env("E2E_SASL_USERNAME"),
                   sasl_plain_password=env("E2E_SASL_PASSWORD"))
    return out


def security_librdkafka():
    """The same settings in librdkafka's (confluent-kafka's) names."""
    env = os.environ.get
    out = {"security.protocol": env("E2E_SECURITY_PROTOCOL", "PLAINTEXT")}
    if env("E2E_SSL_CA"):
        out["ssl.ca.location"] = env("E2E_SSL_CA")
    if env("E2E_SASL_MECHANISM"):
        out.update({"sasl.mechanisms": env("E2E_SASL_MECHANISM"), "sasl.username": env("E2E_SASL_USERNAME"),
                    "sasl.password": env("E2E_SASL_PASSWORD")})
    return out


def emit(event, **fields):
    """Print {"event": event, "ms": epoch ms, **fields} and flush."""
    line = {"event": event, "ms": int(time.time() * 1000)}
    line.update(fields)
    sys.stdout.write(json.dumps(line, sort_keys=True) + "\n")
    sys.stdout.flush()


def by_topic(tps):
    """{topic: [partitions...]} from objects with .topic and .partition."""
    out = {}
    for tp in tps:
        out.setdefault(tp.topic, []).append(tp.partition)
    return {t: sorted(ps) for t, ps in sorted(out.items())}
