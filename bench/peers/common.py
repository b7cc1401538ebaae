"""What every GPU benchmark row shares: latency statistics computed as the bdc runtime computes
them for `--benchmark N --json`, and the row shape.

A row is one model x one peer, flat:
  {"model": "resnet18", "peer": "torch-eager", "precision": "fp32", "runs": 100, "warmup": 10,
   "min_ms": ..., "median_ms": ..., "p90_ms": ..., "p99_ms": ..., "mean_ms": ..., "max_ms": ...}
The *_ms keys are those of the compiled executable's `--benchmark N --json` and of bench.py's
per-side entries, so rows of bdc and of its peers sit next to each other. A row that could not be
measured has "error" (what went wrong) or "skipped" (why it was not attempted) instead of the
numbers. Statistics a tool does not print are left out, never filled in.
"""

import math

STAT_KEYS = ("min_ms", "median_ms", "p90_ms", "p99_ms", "mean_ms", "max_ms")


class ParseError(ValueError):
    """A tool's output lacks, or garbles, the numbers a row needs."""


def percentile(sorted_ms, pct):
    """Nearest-rank percentile of an ascending list, like runtime/bdrt_main.c."""
    r = int(math.ceil(pct / 100.0 * len(sorted_ms)))
    return sorted_ms[min(max(r, 1), len(sorted_ms)) - 1]


def stats_ms(times_ms):
    """min/median/p90/p99/mean/max of per-run latencies in ms (median of an even count: the
    mean of the middle two, as the runtime does)."""
    if not times_ms:
        raise ValueError("no timed runs")
    t = sorted(times_ms)
    n = len(t)
    median = t[n // 2] if n % 2 else (t[n // 2 - 1] + t[n // 2]) / 2.0
    return {"min_ms": t[0], "median_ms": median, "p90_ms": percentile(t, 90),
            "p99_ms": percentile(t, 99), "mean_ms": sum(t) / n, "max_ms": t[-1]}


def row(model, peer, **fields):
    r = {"model": model, "peer": peer}
    r.update(fields)
    return r


def skipped(model, peer, why, **fields):
    return row(model, peer, skipped=why, **fields)


def failed(model, peer, why, **fields):
    return row(model, peer, error=why, **fields)


def first_line(text, limit=300):
    """The most telling line of a tool's stderr/stdout for an error row."""
    lines = [l.strip() for l in (text or "").splitlines() if l.strip()]
    for l in lines:
        if "error" in l.lower() or "FAILED" in l:
            return l[:limit]
    return (lines[-1] if lines else "(no output)")[:limit]
