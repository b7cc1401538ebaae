#!/usr/bin/env python3
"""Latency of bdc-compiled executables against onnxruntime on the real-model set.

Usage: bench.py [--threads T[,T...]] [--models a,b,...] [--runs N] [--warmup W] [--rounds R]
                [--json FILE] [--arch ARCH] [--bdc PATH] [--cache DIR] [--models-cache DIR]
                [--modes F/S,...] [--against PATH [--against-cache DIR]]

For every model of tests/tools/export_models.py (exported on first use into the models cache,
$BDC_MODEL_CACHE or build/cache/models) on its sample input:
  bdc   `bdc compile MODEL.onnx --werror [--arch ARCH]` (cached like tests/test_real_run.py
        does), then
        `model --input ... --benchmark N --warmup W --json --threads T`: the executable times
        N runs after W warm-up runs with its own clock;
  ORT   onnxruntime's CPUExecutionProvider with intra_op_num_threads=T, inter_op_num_threads=1,
        sequential execution and every graph optimisation on, timing N session.run calls after
        W warm-up calls with time.perf_counter.
Both run in this one invocation, one model after the other, on the same input and thread count.
Prints a table (model, bdc median ms, ORT median ms, ratio bdc/ORT; below 1 means bdc is
faster) and the geometric mean of the ratios; --json FILE also writes every number.
  --against PATH  a second bdc (say, a build of the commit before a change), compiled into its
        own cache and timed the same way right after the first on every model: its column and
        the ratio bdc/against (below 1: the first is faster) come next to ORT's, so a change is
        measured against its base in the same run on the same machine.
  --modes F/S,...  time one executable per `--fusion F --schedule S` pair (e.g.
        op/op,block/op,op/block,block/block) instead of bdc's defaults, each next to ORT in the
        same run; the table then has one column per mode (median ms), the ratio of each to the
        first mode, and each executable's peak resident memory (its own VmHWM), with
        ORT's process-wide peak in the JSON for reference.
  --threads 1,2  one table per thread count, in the same invocation.
  --rounds R  time every side R times, one after the other in turn (each mode, against, ORT,
        each mode, ...), and keep each side's round with the lowest median: on a machine others
        share, the round least disturbed stands for each side, and a burst of load hits all of
        them alike.
See bench/README.md for how to read the results.
"""

import argparse
import json
import math
import os
import platform
import resource
import shlex
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "tests"))

import numpy as np  # noqa: E402
import onnxruntime as ort  # noqa: E402

import test_real_models as real  # noqa: E402
import test_real_run as real_run  # noqa: E402

BENCH_TIMEOUT_S = 1800


def cpu_count():
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def run_measured(argv, timeout):
    """Runs argv; returns (exit code, stdout, stderr, the child's own peak RSS in KiB)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        p = subprocess.Popen(argv, stdout=out, stderr=err)
        timer = threading.Timer(timeout, p.kill)
        timer.start()
        try:
            _, status, usage = os.wait4(p.pid, 0)
        finally:
            timer.cancel()
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return (p.returncode, out.read().decode(errors="replace"),
                err.read().decode(errors="replace"), usage.ru_maxrss)


def bench_bdc(entry, feeds_args, runs, warmup, threads):
    code, out, err, rss_kb = run_measured(
        [os.path.join(entry, "model")] + feeds_args +
        ["--benchmark", str(runs), "--warmup", str(warmup), "--json", "--threads", str(threads)],
        BENCH_TIMEOUT_S)
    if code != 0:
        raise RuntimeError("benchmark exit %d: %s" % (code, real_run.first_line(err)))
    d = json.loads(out)
    # the executable's own peak (VmHWM): a forked child's ru_maxrss would count the Python parent
    return {"median_ms": d["median_ms"], "min_ms": d["min_ms"], "p90_ms": d["p90_ms"],
            "peak_rss_kb": d.get("peak_rss_kb", rss_kb)}


def bench_ort(path, feeds, runs, warmup, threads):
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    for _ in range(warmup):
        sess.run(None, feeds)
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        sess.run(None, feeds)
        times.append((time.perf_counter() - t0) * 1e3)
    times.sort()
    return {"median_ms": float(np.median(times)), "min_ms": times[0],
            "p90_ms": times[min(len(times) - 1, int(math.ceil(0.9 * len(times))) - 1)]}


def mode_label(mode):
    return "default" if mode is None else "%s/%s" % mode


def bench_model(args, name, threads):
    row = {"model": name, "threads": threads}
    err = real.ensure_exported(args.models_cache, name)
    if err:
        row["error"] = err
        return row
    path = os.path.join(args.models_cache, name + ".onnx")
    inputs = real.input_paths(args.models_cache, name)
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    names = [i.name for i in sess.get_inputs()]
    del sess
    feeds = {n: np.load(p) for n, p in zip(names, inputs)}
    feeds_args = []
    for n, p in zip(names, inputs):
        feeds_args += ["--input", "%s=%s" % (n, p)]
    arch = ["--arch", args.arch] if args.arch else []
    row["modes"] = {}
    entries = []
    for mode in args.modes:
        flags = arch + ([] if mode is None else ["--fusion", mode[0], "--schedule", mode[1]])
        entry, problem = real_run.compile_cached(args.bdc, args.cache, name, path, flags)
        if problem:
            row["error"] = "%s: %s" % (mode_label(mode), problem)
            break
        entries.append((mode_label(mode), entry))
    against = None
    if args.against and "error" not in row:
        mode = args.modes[0]
        flags = arch + ([] if mode is None else ["--fusion", mode[0], "--schedule", mode[1]])
        flags += shlex.split(args.against_flags or "")
        against, problem = real_run.compile_cached(args.against, args.against_cache, name, path,
                                                   flags)
        if problem:
            row["error"] = "--against: " + problem

    def keep_best(table, key, result):
        if key not in table or result["median_ms"] < table[key]["median_ms"]:
            table[key] = result

    for _ in range(args.rounds):
        if "error" in row:
            break
        for label, entry in entries:
            try:
                keep_best(row["modes"], label, bench_bdc(entry, feeds_args, args.runs,
                                                         args.warmup, threads))
            except (RuntimeError, ValueError, KeyError, subprocess.TimeoutExpired) as e:
                row["error"] = "%s: %s" % (label, e)
                break
        if against and "error" not in row:
            try:
                keep_best(row, "against", bench_bdc(against, feeds_args, args.runs, args.warmup,
                                                    threads))
            except (RuntimeError, ValueError, KeyError, subprocess.TimeoutExpired) as e:
                row["error"] = "--against: %s" % e
        keep_best(row, "ort", bench_ort(path, feeds, args.runs, args.warmup, threads))
    if "ort" not in row:
        row["ort"] = bench_ort(path, feeds, args.runs, args.warmup, threads)
    first = mode_label(args.modes[0])
    if first in row["modes"]:
        row["bdc"] = row["modes"][first]
    # onnxruntime runs in this process: its peak is the whole process's (Python, numpy included)
    row["ort"]["process_peak_rss_kb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    if "bdc" in row:
        row["ratio"] = row["bdc"]["median_ms"] / row["ort"]["median_ms"]
        for label, m in row["modes"].items():
            m["ratio_ort"] = m["median_ms"] / row["ort"]["median_ms"]
            m["ratio_first"] = m["median_ms"] / row["bdc"]["median_ms"]
    if "bdc" in row and "against" in row:
        row["ratio_against"] = row["bdc"]["median_ms"] / row["against"]["median_ms"]
    return row


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def print_table(args, threads, rows):
    labels = [mode_label(m) for m in args.modes]
    print("\n%d thread(s)" % threads)
    head = "%-20s" % "model"
    for l in labels:
        head += " %11s" % (l + " ms")
    head += " %10s" % "ORT ms"
    for l in labels:
        head += " %11s" % (l + "/ORT")
    if len(labels) > 1:
        for l in labels[1:]:
            head += " %11s" % (l + "/" + labels[0])
    for l in labels:
        head += " %10s" % ("MiB " + l)
    if args.against:
        head += " %12s %11s" % ("against ms", "bdc/against")
    print(head)
    for row in rows:
        line = "%-20s" % row["model"]
        modes = row.get("modes", {})
        for l in labels:
            line += " %11.3f" % modes[l]["median_ms"] if l in modes else " %11s" % "-"
        line += " %10.3f" % row["ort"]["median_ms"] if "ort" in row else " %10s" % "-"
        for l in labels:
            line += " %10.2fx" % modes[l]["ratio_ort"] if "ratio_ort" in modes.get(l, {}) \
                else " %11s" % "-"
        for l in labels[1:]:
            line += " %10.3fx" % modes[l]["ratio_first"] if "ratio_first" in modes.get(l, {}) \
                else " %11s" % "-"
        for l in labels:
            line += " %10.1f" % (modes[l]["peak_rss_kb"] / 1024.0) if l in modes \
                else " %10s" % "-"
        if args.against:
            line += " %12.3f" % row["against"]["median_ms"] if "against" in row \
                else " %12s" % "-"
            line += " %10.3fx" % row["ratio_against"] if "ratio_against" in row \
                else " %11s" % "-"
        if "error" in row:
            line += "  " + row["error"]
        print(line, flush=True)
    summary = {}
    for l in labels:
        xs = [r["modes"][l]["ratio_ort"] for r in rows if "ratio_ort" in r.get("modes", {}).get(l, {})]
        summary[l + "/ORT"] = geomean(xs)
    for l in labels[1:]:
        xs = [r["modes"][l]["ratio_first"] for r in rows
              if "ratio_first" in r.get("modes", {}).get(l, {})]
        summary[l + "/" + labels[0]] = geomean(xs)
    against = [r["ratio_against"] for r in rows if "ratio_against" in r]
    if against:
        summary["bdc/against"] = geomean(against)
    print("geomean (below 1: faster): " + ", ".join(
        "%s %.3fx" % (k, v) for k, v in summary.items() if v is not None))
    return summary


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", default=str(cpu_count()),
                    help="comma-separated thread counts for both (default: every CPU this "
                         "process may use)")
    ap.add_argument("--models", help="comma-separated model names (default: all)")
    ap.add_argument("--runs", type=int, default=50, help="timed runs per model (default 50)")
    ap.add_argument("--warmup", type=int, default=5, help="untimed runs first (default 5)")
    ap.add_argument("--rounds", type=int, default=1,
                    help="time each side this many times in turn and keep its best median")
    ap.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    ap.add_argument("--arch", help="passed to `bdc compile --arch` (e.g. native; default: "
                                   "bdc's default, portable code)")
    ap.add_argument("--bdc", default=os.environ.get("BDC") or os.path.join(REPO, "build", "bdc"))
    ap.add_argument("--cache", default=os.environ.get("BDC_CACHE")
                    or os.path.join("build", "cache"))
    ap.add_argument("--models-cache", default=os.environ.get("BDC_MODEL_CACHE")
                    or os.path.join("build", "cache", "models"))
    ap.add_argument("--modes", help="comma-separated FUSION/SCHEDULE pairs, e.g. "
                                    "op/op,block/op,op/block,block/block (default: bdc's own)")
    ap.add_argument("--against", metavar="PATH",
                    help="a second bdc to time next to the first (e.g. the base of a change)")
    ap.add_argument("--against-flags", metavar="FLAGS",
                    help="more `bdc compile` options for --against (e.g. \"--winograd off\": the "
                         "same compiler with a choice turned off)")
    ap.add_argument("--against-cache", metavar="DIR",
                    help="its compiled executables (default: CACHE/against)")
    args = ap.parse_args()
    if args.against and not args.against_cache:
        args.against_cache = os.path.join(args.cache, "against")
    if args.against and not os.access(args.against, os.X_OK):
        ap.error("--against: not an executable: %s" % args.against)
    try:
        thread_counts = [int(t) for t in args.threads.split(",")]
    except ValueError:
        ap.error("--threads: expected numbers such as 1,2")
    if min(thread_counts) < 1 or args.runs < 1 or args.warmup < 0 or args.rounds < 1:
        ap.error("--threads, --runs and --rounds must be >= 1, --warmup >= 0")
    if args.modes:
        try:
            args.modes = [tuple(m.split("/")) for m in args.modes.split(",")]
        except ValueError:
            ap.error("--modes: expected FUSION/SCHEDULE pairs")
        for f, sch in args.modes:
            if f not in ("none", "op", "block") or sch not in ("op", "block"):
                ap.error("--modes: %s/%s: fusion none|op|block, schedule op|block" % (f, sch))
    else:
        args.modes = [None]
    known = real.model_names(heavy=True)
    names = args.models.split(",") if args.models else real.model_names()
    bad = [n for n in names if n not in known]
    if bad:
        ap.error("unknown model(s) %s; known: %s" % (" ".join(bad), " ".join(known)))
    if not os.access(args.bdc, os.X_OK):
        sys.stderr.write("bench: bdc not found or not executable: %s (set BDC or pass --bdc)\n"
                         % args.bdc)
        return 1
    os.makedirs(args.cache, exist_ok=True)
    os.makedirs(args.models_cache, exist_ok=True)

    print("bdc%s vs onnxruntime %s, median of %d runs after %d warm-up, %s" % (
        " --arch " + args.arch if args.arch else "", ort.__version__, args.runs, args.warmup,
        cpu_name()))
    if args.against:
        print("against: %s %s" % (args.against, args.against_flags or ""))
        os.makedirs(args.against_cache, exist_ok=True)
    tables, all_rows = [], []
    for threads in thread_counts:
        rows = []
        for name in names:
            try:
                row = bench_model(args, name, threads)
            except Exception as e:  # one broken model does not stop the table
                row = {"model": name, "threads": threads, "error": "%s: %s" % (type(e).__name__, e)}
            rows.append(row)
        tables.append({"threads": threads, "geomean": print_table(args, threads, rows)})
        all_rows += rows

    if args.json:
        result = {"threads": thread_counts, "runs": args.runs, "warmup": args.warmup,
                  "rounds": args.rounds,
                  "arch": args.arch, "modes": [mode_label(m) for m in args.modes],
                  "cpu": cpu_name(), "onnxruntime": ort.__version__,
                  "command": " ".join(sys.argv), "tables": tables, "models": all_rows}
        if args.against:
            result["against"] = args.against
            result["against_flags"] = args.against_flags or ""
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
            f.write("\n")
    return 0 if all_rows and all("error" not in r for r in all_rows) else 1


if __name__ == "__main__":
    sys.exit(main())
