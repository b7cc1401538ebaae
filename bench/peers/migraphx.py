#!/usr/bin/env python3
"""MIGraphX's migraphx-driver as a peer: `migraphx-driver perf` compiles the ONNX file for the
GPU, times it, and its performance report becomes a row (bench/peers/common.py).

Usage: migraphx.py MODEL.onnx [--model NAME] [--runs N] [--precision P] [--timeout S]
                   [--json FILE]
       migraphx.py --parse LOG [--model NAME]         (a saved `migraphx-driver perf` log)

The tool is `$MIGRAPHX_DRIVER`, else `migraphx-driver` on PATH; without it the row says
"skipped". It runs `migraphx-driver perf --onnx MODEL --gpu -n N` (--fp16 or --bf16 for those
precisions; MIGraphX has no tf32 mode, so tf32 is skipped). perf runs the program once untimed,
then N timed runs of the whole program (each waits for the GPU), then each instruction N times.

The report format is program::perf_report (AMDMIGraphX src/program.cpp): one line per
instruction, then
  Summary:
  gpu::convolution: 0.52ms / 20 = 0.026ms, 61%          (older releases: "name: 0.52ms, 61%")
  ...
  Batch size: 1
  Rate: 1066.32 inferences/sec
  Total time: 0.93781ms (Min: 0.9102ms, Max: 1.2035ms, Mean: 0.9459ms, Median: 0.9366ms)
  Percentiles (90%, 95%, 99%): (0.9602ms, 0.9814ms, 1.1501ms)
  Total instructions time: ...
"Total time" is MIGraphX's average of the N runs (rate = 1000 / total x batch). Older releases
print only "Rate: 2866.1/sec" and "Total time: 0.348906ms"; their row has mean_ms only (and
"note" says so), since they print no minimum, median or percentile.
"""

import argparse
import json
import math
import os
import re
import shutil
import subprocess
import sys

try:
    from . import common
except ImportError:  # run as a script
    import common

PEER = "migraphx"
PRECISION_FLAGS = {"fp32": [], "fp16": ["--fp16"], "bf16": ["--bf16"]}

_NUM = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|[-+]?(?:inf|nan)"
_TOTAL = re.compile(r"^Total time: (%s)ms(.*)$" % _NUM)
_TOTAL_DETAIL = re.compile(r"^ \(Min: (%s)ms, Max: (%s)ms, Mean: (%s)ms, Median: (%s)ms\)$"
                           % ((_NUM,) * 4))
_PCTS = re.compile(r"^Percentiles \(90%%, 95%%, 99%%\): \((%s)ms, (%s)ms, (%s)ms\)$"
                   % ((_NUM,) * 3))
_RATE = re.compile(r"^Rate: (%s)(?: inferences)?/sec$" % _NUM)
_BATCH = re.compile(r"^Batch size: (\d+)$")
_OP = re.compile(r"^(.+): (%s)ms(?: / (\d+) = (%s)ms)?, (%s)%%$" % (_NUM, _NUM, _NUM))


def _num(label, s):
    v = float(s)
    if not math.isfinite(v):
        raise common.ParseError("migraphx-driver %r is %s" % (label, s))
    return v


def parse(text):
    """The perf report -> {"total_time_ms", "mean_ms", and where printed "min_ms", "max_ms",
    "median_ms", "p90_ms", "p95_ms", "p99_ms", "rate_per_s", "batch", "ops" (the per-operator
    summary, slowest first)}. Raises common.ParseError when the report is missing, cut short or garbled."""
    lines = [l.rstrip() for l in text.splitlines()]
    totals = [i for i, l in enumerate(lines) if l.startswith("Total time:")]
    if not totals:
        raise common.ParseError("migraphx-driver printed no 'Total time:' line (perf did not "
                                "finish)")
    i = totals[-1]
    m = _TOTAL.match(lines[i])
    if not m:
        raise common.ParseError("migraphx-driver: cannot read %r" % lines[i])
    # "Total time" is MIGraphX's own average of the runs; "Mean" (newer reports) the plain mean
    out = {"total_time_ms": _num("Total time", m.group(1))}
    if m.group(2).strip():  # the newer report: min/max/mean/median, then the percentiles
        d = _TOTAL_DETAIL.match(m.group(2))
        if not d:
            raise common.ParseError("migraphx-driver: cannot read %r" % lines[i])
        for k, s in zip(("min_ms", "max_ms", "mean_ms", "median_ms"), d.groups()):
            out[k] = _num(k, s)
        p = _PCTS.match(lines[i + 1]) if i + 1 < len(lines) else None
        if not p:
            raise common.ParseError("migraphx-driver: no 'Percentiles (90%, 95%, 99%)' line "
                                    "after 'Total time'")
        for k, s in zip(("p90_ms", "p95_ms", "p99_ms"), p.groups()):
            out[k] = _num(k, s)
        bad = [k for k, v in out.items() if not out["min_ms"] <= v <= out["max_ms"]]
        if bad:
            raise common.ParseError("migraphx-driver: %s outside [Min, Max]" % ", ".join(bad))
    else:
        out["mean_ms"] = out["total_time_ms"]
        out["note"] = "this migraphx-driver prints only its average (no min, median, percentiles)"
    batch = 1
    for l in lines[:i]:
        b = _BATCH.match(l)
        if b:
            batch = out["batch"] = int(b.group(1))
        r = _RATE.match(l)
        if r:
            out["rate_per_s"] = _num("Rate", r.group(1))
    # "Rate" is 1000 / "Total time" x batch: a mismatch means lines of two reports got mixed
    total = float(m.group(1))
    if "rate_per_s" in out and abs(out["rate_per_s"] * total / (1000.0 * batch) - 1) > 0.01:
        raise common.ParseError("migraphx-driver: Rate %g/sec does not match Total time %gms"
                                % (out["rate_per_s"], total))
    if "Summary:" in lines[:i]:
        ops = []
        for l in lines[lines.index("Summary:") + 1:i]:
            if not l.strip():
                break
            o = _OP.match(l)
            if not o:
                raise common.ParseError("migraphx-driver summary: cannot read %r" % l)
            op = {"op": o.group(1), "ms": float(o.group(2)), "percent": float(o.group(5))}
            if o.group(3):
                op["count"] = int(o.group(3))
            ops.append(op)
        out["ops"] = ops
    return out


def to_row(model, parsed, **fields):
    r = common.row(model, PEER, **fields)
    r.update(parsed)
    return r


def find_tool():
    return os.environ.get("MIGRAPHX_DRIVER") or shutil.which("migraphx-driver")


def run(onnx_path, model, runs=100, precision="fp32", timeout=300, extra=()):
    """Times onnx_path with `migraphx-driver perf`; returns one row."""
    meta = {"precision": precision, "runs": runs}
    exe = find_tool()
    if not exe:
        return common.skipped(model, PEER, "migraphx-driver not installed (not on PATH), skipped",
                              **meta)
    if precision not in PRECISION_FLAGS:
        return common.skipped(model, PEER, "MIGraphX has no %s mode, skipped" % precision, **meta)
    argv = [exe, "perf", "--onnx", onnx_path, "--gpu", "-n", str(runs)]
    argv += PRECISION_FLAGS[precision] + list(extra)
    meta["command"] = " ".join(argv)
    try:
        r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           errors="replace", timeout=timeout)
    except subprocess.TimeoutExpired:
        return common.failed(model, PEER, "migraphx-driver timed out after %d s" % timeout,
                             **meta)
    if r.returncode != 0:
        return common.failed(model, PEER, "exit %d: %s" % (r.returncode,
                                                          common.first_line(r.stdout)), **meta)
    try:
        return to_row(model, parse(r.stdout), **meta)
    except common.ParseError as e:
        return common.failed(model, PEER, str(e), **meta)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("onnx", nargs="?")
    ap.add_argument("--parse", metavar="LOG", help="read a saved perf log instead of running")
    ap.add_argument("--model", help="the row's model name (default: the file's name)")
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--precision", choices=["fp32", "tf32", "fp16", "bf16"], default="fp32")
    ap.add_argument("--timeout", type=int, default=300)
    ap.add_argument("--json", metavar="FILE", help="also write the row to FILE")
    args = ap.parse_args(argv)
    if bool(args.onnx) == bool(args.parse):
        ap.error("give MODEL.onnx or --parse LOG")
    path = args.onnx or args.parse
    model = args.model or os.path.basename(path).split(".")[0]
    if args.parse:
        with open(args.parse, errors="replace") as f:
            try:
                r = to_row(model, parse(f.read()))
            except common.ParseError as e:
                r = common.failed(model, PEER, str(e))
    else:
        r = run(args.onnx, model, args.runs, args.precision, args.timeout)
    print(json.dumps(r))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(r, f, indent=1)
            f.write("\n")
    return 1 if "error" in r else 0


if __name__ == "__main__":
    sys.exit(main())
