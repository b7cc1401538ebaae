#!/usr/bin/env python3
"""TensorRT's trtexec as a peer: builds an engine from the ONNX file, times it, and turns its
performance summary into a row (bench/peers/common.py).

Usage: trtexec.py MODEL.onnx [--model NAME] [--runs N] [--warmup-ms MS] [--precision P]
                  [--timeout S] [--json FILE]
       trtexec.py --parse LOG [--model NAME]          (a saved trtexec log)

The tool is `$TRTEXEC`, else `trtexec` on PATH; without it the row says "skipped". It runs
  trtexec --onnx=MODEL --iterations=N --duration=0 --warmUp=MS --noDataTransfers --useSpinWait
with --noTF32 for fp32, nothing for tf32 (TensorRT's default), --fp16 or --bf16. trtexec feeds
its own random inputs of the model's shapes. The row's *_ms are trtexec's "GPU Compute Time"
(the kernels of one inference, timed with CUDA events, like bdc's GPU executables); its
"Latency" line (H2D + compute + D2H; with --noDataTransfers the same) is kept as "latency".

The summary format is trtexec's printEpilog (TensorRT samples/common/sampleReporting.cpp), one
line per metric after "=== Performance summary ===", each line behind a log prefix such as
"[12/01/2026-10:00:00] [I] ":
  Throughput: 353.015 qps
  Latency: min = 2.80988 ms, max = 3.0116 ms, mean = 2.83097 ms, median = 2.83057 ms,
           percentile(90%) = 2.83545 ms, percentile(95%) = 2.83649 ms, percentile(99%) = 2.83984 ms
  GPU Compute Time: (the same fields)
TensorRT 8.6 and later print the percentiles of --percentile (default 90,95,99); older
releases print a single percentile(99%) (then the row has no p90_ms).
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

PEER = "trtexec"
PRECISION_FLAGS = {"fp32": ["--noTF32"], "tf32": [], "fp16": ["--fp16"], "bf16": ["--bf16"]}

# "[12/01/2026-10:00:00] [I] " in front of every line of trtexec's log
_PREFIX = re.compile(r"^(\[[^\]]*\]\s*)*")
_NUM = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|[-+]?(?:inf|nan)"
_FIELD = re.compile(r"^(min|max|mean|median|percentile\((\d+(?:\.\d+)?)%%\)) = (%s) ms$" % _NUM)
_NAMES = {"min": "min_ms", "max": "max_ms", "mean": "mean_ms", "median": "median_ms"}


def _stats(label, text):
    """'min = 1 ms, max = 2 ms, ...' -> {"min_ms": 1.0, ...}; every field must be well formed."""
    out = {}
    for part in text.split(", "):
        m = _FIELD.match(part.strip())
        if not m:
            raise common.ParseError("trtexec %r: cannot read %r" % (label, part.strip()))
        value = float(m.group(3))
        if not math.isfinite(value):
            raise common.ParseError("trtexec %r: %s is %s" % (label, m.group(1), m.group(3)))
        key = _NAMES.get(m.group(1)) or "p%s_ms" % m.group(2)
        out[key] = value
    missing = [k for k in ("min_ms", "max_ms", "mean_ms", "median_ms") if k not in out]
    if missing:
        raise common.ParseError("trtexec %r: no %s" % (label, ", ".join(missing)))
    lo, hi = out["min_ms"], out["max_ms"]
    bad = [k for k, v in out.items() if not lo <= v <= hi]
    if bad:
        raise common.ParseError("trtexec %r: %s outside [min, max]" % (label, ", ".join(bad)))
    return out


def parse(text):
    """trtexec's log -> {"gpu_compute": stats, "latency": stats, "throughput_qps", "tensorrt"}.
    Raises common.ParseError when the run failed or the summary is missing or garbled."""
    lines = [_PREFIX.sub("", l.rstrip()) for l in text.splitlines()]
    for l in lines:
        if l.startswith("&&&& FAILED"):
            # the first "[E]" line names the cause; the later ones are its consequences
            errors = [_PREFIX.sub("", x).strip() for x in text.splitlines() if "] [E] " in x]
            raise common.ParseError("trtexec failed: %s" % (errors[0] if errors else l)[:300])
    starts = [i for i, l in enumerate(lines) if l.strip() == "=== Performance summary ==="]
    if not starts:
        raise common.ParseError("trtexec printed no '=== Performance summary ===' "
                                "(it stopped before timing)")
    fields = {}
    for l in lines[starts[-1] + 1:]:
        label, sep, rest = l.partition(": ")
        if sep and label in ("Throughput", "Latency", "GPU Compute Time"):
            fields[label] = rest.strip()
    if "GPU Compute Time" not in fields:
        raise common.ParseError("trtexec summary has no 'GPU Compute Time' line (cut short?)")
    result = {"gpu_compute": _stats("GPU Compute Time", fields["GPU Compute Time"])}
    if "Latency" in fields:
        result["latency"] = _stats("Latency", fields["Latency"])
    if "Throughput" in fields:
        m = re.match(r"^(%s) qps$" % _NUM, fields["Throughput"])
        if not m:
            raise common.ParseError("trtexec 'Throughput': cannot read %r" % fields["Throughput"])
        result["throughput_qps"] = float(m.group(1))
    version = re.search(r"\[TensorRT v(\d+)\]", text)
    if version:
        result["tensorrt"] = version.group(1)
    return result


def to_row(model, parsed, **fields):
    r = common.row(model, PEER, **fields)
    r.update(parsed["gpu_compute"])
    for k in ("latency", "throughput_qps", "tensorrt"):
        if k in parsed:
            r[k] = parsed[k]
    return r


def find_tool():
    return os.environ.get("TRTEXEC") or shutil.which("trtexec")


def run(onnx_path, model, runs=100, warmup_ms=200, precision="fp32", timeout=300, extra=()):
    """Times onnx_path with trtexec; returns one row (numbers, "skipped" or "error")."""
    meta = {"precision": precision, "runs": runs, "warmup_ms": warmup_ms}
    exe = find_tool()
    if not exe:
        return common.skipped(model, PEER, "trtexec not installed (not on PATH), skipped", **meta)
    argv = [exe, "--onnx=" + onnx_path, "--iterations=%d" % runs, "--duration=0",
            "--warmUp=%d" % warmup_ms, "--noDataTransfers", "--useSpinWait"]
    argv += PRECISION_FLAGS[precision] + list(extra)
    meta["command"] = " ".join(argv)
    try:
        r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           errors="replace", timeout=timeout)
    except subprocess.TimeoutExpired:
        return common.failed(model, PEER, "trtexec timed out after %d s" % timeout, **meta)
    try:
        parsed = parse(r.stdout)
    except common.ParseError as e:
        return common.failed(model, PEER, "exit %d: %s" % (r.returncode, e), **meta)
    if r.returncode != 0:
        return common.failed(model, PEER, "exit %d: %s" % (r.returncode,
                                                          common.first_line(r.stdout)), **meta)
    return to_row(model, parsed, **meta)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("onnx", nargs="?")
    ap.add_argument("--parse", metavar="LOG", help="read a saved trtexec log instead of running")
    ap.add_argument("--model", help="the row's model name (default: the file's name)")
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--warmup-ms", type=int, default=200, help="trtexec --warmUp (milliseconds)")
    ap.add_argument("--precision", choices=sorted(PRECISION_FLAGS), default="fp32")
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
        r = run(args.onnx, model, args.runs, args.warmup_ms, args.precision, args.timeout)
    print(json.dumps(r))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(r, f, indent=1)
            f.write("\n")
    return 1 if "error" in r else 0


if __name__ == "__main__":
    sys.exit(main())
