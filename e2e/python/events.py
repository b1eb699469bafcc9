"""One JSON event per line on stdout, the format every e2e client shares."""

import json
import sys
import time


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
