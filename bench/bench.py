#!/usr/bin/env python3
"""Latency of bdc-compiled executables against onnxruntime on the real-model set.

Usage: bench.py [--threads T] [--models a,b,...] [--runs N] [--warmup W] [--rounds R]
                [--json FILE] [--arch ARCH] [--bdc PATH] [--cache DIR] [--models-cache DIR]
                [--against PATH [--against-cache DIR]]

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
  --rounds R  time every side R times, one after the other in turn (bdc, against, ORT, bdc,
        ...), and keep each side's round with the lowest median: on a machine others share, the
        round least disturbed stands for each side, and a burst of load hits all of them alike.
See bench/README.md for how to read the results.
"""

import argparse
import json
import math
import os
import platform
import subprocess
import sys
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


def bench_bdc(entry, feeds_args, runs, warmup, threads):
    r = subprocess.run([os.path.join(entry, "model")] + feeds_args +
                       ["--benchmark", str(runs), "--warmup", str(warmup), "--json",
                        "--threads", str(threads)],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       errors="replace", timeout=BENCH_TIMEOUT_S)
    if r.returncode != 0:
        raise RuntimeError("benchmark exit %d: %s" % (r.returncode, real_run.first_line(r.stderr)))
    d = json.loads(r.stdout)
    return {"median_ms": d["median_ms"], "min_ms": d["min_ms"], "p90_ms": d["p90_ms"]}


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


def bench_model(args, name):
    row = {"model": name}
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
    flags = ["--arch", args.arch] if args.arch else []
    entry, problem = real_run.compile_cached(args.bdc, args.cache, name, path, flags)
    if problem:
        row["error"] = problem
    against = None
    if args.against and "error" not in row:
        against, problem = real_run.compile_cached(args.against, args.against_cache, name, path,
                                                   flags)
        if problem:
            row["error"] = "--against: " + problem

    def keep_best(key, result):
        if key not in row or result["median_ms"] < row[key]["median_ms"]:
            row[key] = result

    for _ in range(args.rounds):
        if "error" in row:
            break
        try:
            keep_best("bdc", bench_bdc(entry, feeds_args, args.runs, args.warmup, args.threads))
        except (RuntimeError, ValueError, KeyError, subprocess.TimeoutExpired) as e:
            row["error"] = str(e)
            break
        if against:
            try:
                keep_best("against", bench_bdc(against, feeds_args, args.runs, args.warmup,
                                               args.threads))
            except (RuntimeError, ValueError, KeyError, subprocess.TimeoutExpired) as e:
                row["error"] = "--against: %s" % e
                break
        keep_best("ort", bench_ort(path, feeds, args.runs, args.warmup, args.threads))
    if "ort" not in row:
        row["ort"] = bench_ort(path, feeds, args.runs, args.warmup, args.threads)
    if "bdc" in row:
        row["ratio"] = row["bdc"]["median_ms"] / row["ort"]["median_ms"]
    if "bdc" in row and "against" in row:
        row["ratio_against"] = row["bdc"]["median_ms"] / row["against"]["median_ms"]
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=cpu_count(),
                    help="threads for both (default: every CPU this process may use)")
    ap.add_argument("--models", help="comma-separated model names (default: all)")
    ap.add_argument("--runs", type=int, default=50, help="timed runs per model (default 50)")
    ap.add_argument("--warmup", type=int, default=5, help="untimed runs first (default 5)")
    ap.add_argument("--rounds", type=int, default=1,
                    help="rounds per side, taken in turn; the best median is kept (default 1)")
    ap.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    ap.add_argument("--arch", help="passed to `bdc compile --arch` (e.g. native; default: "
                                   "bdc's default, portable code)")
    ap.add_argument("--bdc", default=os.environ.get("BDC") or os.path.join(REPO, "build", "bdc"))
    ap.add_argument("--cache", default=os.environ.get("BDC_CACHE")
                    or os.path.join("build", "cache"))
    ap.add_argument("--models-cache", default=os.environ.get("BDC_MODEL_CACHE")
                    or os.path.join("build", "cache", "models"))
    ap.add_argument("--against", metavar="PATH",
                    help="a second bdc to time next to the first (e.g. the base of a change)")
    ap.add_argument("--against-cache", metavar="DIR",
                    help="its compiled executables (default: CACHE/against)")
    args = ap.parse_args()
    if args.against and not args.against_cache:
        args.against_cache = os.path.join(args.cache, "against")
    if args.against and not os.access(args.against, os.X_OK):
        ap.error("--against: not an executable: %s" % args.against)
    if args.threads < 1 or args.runs < 1 or args.warmup < 0 or args.rounds < 1:
        ap.error("--threads, --runs and --rounds must be >= 1, --warmup >= 0")

    known = real.model_names()
    names = args.models.split(",") if args.models else known
    bad = [n for n in names if n not in known]
    if bad:
        ap.error("unknown model(s) %s; known: %s" % (" ".join(bad), " ".join(known)))
    if not os.access(args.bdc, os.X_OK):
        sys.stderr.write("bench: bdc not found or not executable: %s (set BDC or pass --bdc)\n"
                         % args.bdc)
        return 1
    os.makedirs(args.cache, exist_ok=True)
    os.makedirs(args.models_cache, exist_ok=True)

    print("bdc%s vs onnxruntime %s, %d thread(s), median of %d runs after %d warm-up%s, %s" % (
        " --arch " + args.arch if args.arch else "", ort.__version__, args.threads, args.runs,
        args.warmup, ", best of %d rounds" % args.rounds if args.rounds > 1 else "", cpu_name()))
    if args.against:
        print("against: %s" % args.against)
        os.makedirs(args.against_cache, exist_ok=True)
    extra = "%12s %10s" % ("against ms", "bdc/against") if args.against else ""
    print("%-20s %12s %12s %10s %s" % ("model", "bdc ms", "ORT ms", "bdc/ORT", extra))
    rows = []
    for name in names:
        try:
            row = bench_model(args, name)
        except Exception as e:  # one broken model does not stop the table
            row = {"model": name, "error": "%s: %s" % (type(e).__name__, e)}
        rows.append(row)
        b = "%12.3f" % row["bdc"]["median_ms"] if "bdc" in row else "%12s" % "-"
        o = "%12.3f" % row["ort"]["median_ms"] if "ort" in row else "%12s" % "-"
        r = "%9.2fx" % row["ratio"] if "ratio" in row else "%10s" % "-"
        if args.against:
            a = "%12.3f" % row["against"]["median_ms"] if "against" in row else "%12s" % "-"
            ra = "%10.3fx" % row["ratio_against"] if "ratio_against" in row else "%11s" % "-"
            r += " " + a + " " + ra
        print("%-20s %s %s %s%s" % (name, b, o, r, "  " + row["error"] if "error" in row else ""),
              flush=True)
    ratios = [r["ratio"] for r in rows if "ratio" in r]
    geo = math.exp(sum(math.log(x) for x in ratios) / len(ratios)) if ratios else None
    if geo is not None:
        print("%-20s %12s %12s %9.2fx  (geometric mean over %d model(s); worst %.2fx)" % (
            "geomean", "", "", geo, len(ratios), max(ratios)))
    against = [r["ratio_against"] for r in rows if "ratio_against" in r]
    geo_against = (math.exp(sum(math.log(x) for x in against) / len(against))
                   if against else None)
    if geo_against is not None:
        print("%-20s bdc/against %.3fx  (geometric mean over %d model(s); from %.3fx to %.3fx)"
              % ("geomean", geo_against, len(against), min(against), max(against)))

    if args.json:
        result = {"threads": args.threads, "runs": args.runs, "warmup": args.warmup,
                  "rounds": args.rounds, "arch": args.arch,
                  "cpu": cpu_name(), "onnxruntime": ort.__version__,
                  "geomean_ratio": geo, "models": rows}
        if args.against:
            result["against"] = args.against
            result["geomean_ratio_against"] = geo_against
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
            f.write("\n")
    return 0 if rows and all("error" not in r for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
