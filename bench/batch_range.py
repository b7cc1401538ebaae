#!/usr/bin/env python3
"""One executable for a range of batches against onnxruntime, at several batches.

Usage: batch_range.py [--models resnet18_dynamic,bert_tiny_dynamic] [--range LO..HI]
                      [--batches 1,3,8] [--threads T] [--runs N] [--warmup W] [--json FILE]
                      [--bdc PATH] [--cache DIR] [--models-cache DIR]

For each model with a symbolic batch (tests/tools/export_models.py DYNAMIC_MODELS; the BERT-shaped
one also gets --dim seq=16) and each batch b:
  ranged  `bdc compile --dim batch=LO..HI`, one executable, run at batch b (it runs only the
          blocks over the first b batch items);
  fixed   `bdc compile --dim batch=b`, an executable for that batch alone;
  ORT     onnxruntime on the same model and input, as bench/bench.py times it.
All three in this one invocation, on the same random input (fixed seed) and thread count. Prints
median latencies and the ratios ranged/ORT and ranged/fixed (below 1: the ranged executable is
faster); --json FILE also writes every number.
"""

import argparse
import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import bench  # noqa: E402  (its timers, and the tests' compile cache and exporter through it)
import numpy as np  # noqa: E402

SEQ = 16


def feeds_for(name, batch, rng):
    if name.startswith("bert"):
        ids = rng.integers(0, 512, size=(batch, SEQ), dtype=np.int64)
        mask = np.ones((batch, SEQ), dtype=np.int64)
        mask[:, SEQ - 4:] = 0
        return {"input_ids": ids, "attention_mask": mask}
    return {"x": rng.standard_normal((batch, 3, 224, 224), dtype=np.float32)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default="resnet18_dynamic,bert_tiny_dynamic")
    ap.add_argument("--range", default="1..8", help="the compiled batch range (default 1..8)")
    ap.add_argument("--batches", default="1,3,8", help="batches to time (default 1,3,8)")
    ap.add_argument("--threads", type=int, default=bench.cpu_count())
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--json", metavar="FILE")
    ap.add_argument("--bdc", default=os.environ.get("BDC") or os.path.join(bench.REPO, "build", "bdc"))
    ap.add_argument("--cache", default=os.environ.get("BDC_CACHE") or os.path.join("build", "cache"))
    ap.add_argument("--models-cache", default=os.environ.get("BDC_MODEL_CACHE")
                    or os.path.join("build", "cache", "models"))
    args = ap.parse_args()
    rng = np.random.default_rng(20261201)
    rows = []
    print("%-20s %5s %11s %11s %11s %12s %13s" % ("model", "batch", "ranged ms", "fixed ms",
                                                  "ORT ms", "ranged/ORT", "ranged/fixed"))
    for name in args.models.split(","):
        err = bench.real.ensure_exported(args.models_cache, name)
        if err:
            print("%s: %s" % (name, err))
            continue
        path = os.path.join(args.models_cache, name + ".onnx")
        extra = ["--dim", "seq=%d" % SEQ] if name.startswith("bert") else []
        ranged, problem = bench.real_run.compile_cached(args.bdc, args.cache, name, path,
                                                         ["--dim", "batch=" + args.range] + extra)
        if problem:
            print("%s --dim batch=%s: %s" % (name, args.range, problem))
            continue
        for b in (int(x) for x in args.batches.split(",")):
            fixed, problem = bench.real_run.compile_cached(args.bdc, args.cache, name, path,
                                                            ["--dim", "batch=%d" % b] + extra)
            if problem:
                print("%s --dim batch=%d: %s" % (name, b, problem))
                continue
            feeds = feeds_for(name, b, rng)
            with tempfile.TemporaryDirectory(prefix="bdc-batch-range-") as tmp:
                feeds_args = bench.real_run.save_inputs(tmp, feeds)
                row = {"model": name, "batch": b, "range": args.range, "threads": args.threads,
                       "ranged": bench.bench_bdc(ranged, feeds_args, args.runs, args.warmup,
                                                 args.threads),
                       "fixed": bench.bench_bdc(fixed, feeds_args, args.runs, args.warmup,
                                                args.threads),
                       "ort": bench.bench_ort(path, feeds, args.runs, args.warmup, args.threads)}
            r, f, o = (row[k]["median_ms"] for k in ("ranged", "fixed", "ort"))
            row["ratio_ort"], row["ratio_fixed"] = r / o, r / f
            rows.append(row)
            print("%-20s %5d %11.3f %11.3f %11.3f %12.2f %13.2f" % (name, b, r, f, o, r / o, r / f))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"cpu": bench.cpu_name(), "rows": rows}, fh, indent=1)
    return 0 if rows else 1


if __name__ == "__main__":
    sys.exit(main())
