#!/usr/bin/env python3
"""How long `bdc compile` takes against how long onnxruntime takes to create its session.

Usage: compile_time.py [--models a,b,...] [--rounds R] [--arch ARCH] [--bdc PATH]
                       [--against PATH] [--models-cache DIR] [--json FILE]

For every model (default: the real-model set with the heavy ones, exported on first use into the
models cache, $BDC_MODEL_CACHE or build/cache/models):
  bdc      `bdc compile MODEL.onnx -o TMP --arch ARCH -v` (default --arch native), wall time, into
           an empty folder each time (nothing cached); its `-v` stages (load to fold, lowering to
           memory planning, emitting C, the native build, appending the weights) from the same
           run;
  against  the same with a second bdc (say, a build of the commit before a change);
  ORT      onnxruntime.InferenceSession(MODEL, CPUExecutionProvider) with every graph
           optimisation on, wall time of the constructor.
Each side runs R times (default 3), one after the other in turn, and keeps its fastest run: on a
machine others share, the least disturbed run stands for each. Prints one line per model
(seconds; bdc/ORT above 1 means the session starts sooner than bdc compiles) and the geometric
mean of the ratios; --json FILE also writes every number. The argument for compile time is
T(n) = T_compile + n T_run: see bench/README.md.
"""

import argparse
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "tests"))

import onnxruntime as ort  # noqa: E402

import test_real_models as real  # noqa: E402

STAGE = re.compile(r"^bdc: (.+?)\s+([0-9.]+)s$")
TIMEOUT_S = 600


def time_bdc(bdc, model, arch, work):
    """(seconds, {stage: seconds}) of one compile into an empty folder, or raises."""
    out = os.path.join(work, "out")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    t0 = time.perf_counter()
    r = subprocess.run([bdc, "compile", model, "-o", os.path.join(out, "model"), "--arch", arch,
                        "-v"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                       timeout=TIMEOUT_S)
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        lines = [l for l in r.stderr.splitlines() if l.strip()]
        raise RuntimeError("bdc compile exit %d: %s" % (r.returncode, lines[-1] if lines else ""))
    stages = {}
    for line in r.stderr.splitlines():
        m = STAGE.match(line)
        if m:
            stages[m.group(1)] = float(m.group(2))
    return wall, stages


def time_ort(model):
    t0 = time.perf_counter()
    sess = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    wall = time.perf_counter() - t0
    del sess
    return wall


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", help="comma-separated model names (default: all, heavy included)")
    ap.add_argument("--rounds", type=int, default=3, help="runs per side, the fastest kept")
    ap.add_argument("--arch", default="native", help="bdc compile --arch (default native)")
    ap.add_argument("--bdc", default=os.environ.get("BDC") or os.path.join(REPO, "build", "bdc"))
    ap.add_argument("--against", metavar="PATH", help="a second bdc timed the same way")
    ap.add_argument("--models-cache", default=os.environ.get("BDC_MODEL_CACHE")
                    or os.path.join("build", "cache", "models"))
    ap.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    args = ap.parse_args()
    known = real.model_names(heavy=True)
    names = args.models.split(",") if args.models else known
    bad = [n for n in names if n not in known]
    if bad:
        ap.error("unknown model(s) %s; known: %s" % (" ".join(bad), " ".join(known)))
    if args.rounds < 1:
        ap.error("--rounds must be >= 1")
    for b in [args.bdc] + ([args.against] if args.against else []):
        if not os.access(b, os.X_OK):
            ap.error("not an executable: %s" % b)
    os.makedirs(args.models_cache, exist_ok=True)
    sides = [("bdc", args.bdc)] + ([("against", args.against)] if args.against else [])
    print("bdc compile --arch %s against onnxruntime %s session creation, fastest of %d, %d CPUs"
          % (args.arch, ort.__version__, args.rounds, os.cpu_count() or 0))
    head = "%-22s %9s" % ("model", "bdc s")
    if args.against:
        head += " %10s %11s" % ("against s", "bdc/against")
    print(head + " %9s %8s  %s" % ("ORT s", "bdc/ORT", "bdc: native build, weights"))
    rows, ratios = [], []
    work = tempfile.mkdtemp(prefix="bdc-compile-time-")
    try:
        for name in names:
            row = {"model": name}
            err = real.ensure_exported(args.models_cache, name)
            path = os.path.join(args.models_cache, name + ".onnx")
            best = {}
            try:
                if err:
                    raise RuntimeError(err)
                for _ in range(args.rounds):
                    for side, bdc in sides:
                        wall, stages = time_bdc(bdc, path, args.arch, work)
                        if side not in best or wall < best[side][0]:
                            best[side] = (wall, stages)
                    wall = time_ort(path)
                    if "ort" not in best or wall < best["ort"][0]:
                        best["ort"] = (wall, {})
            except (RuntimeError, subprocess.TimeoutExpired, OSError) as e:
                row["error"] = str(e)
                print("%-22s error: %s" % (name, e))
                rows.append(row)
                continue
            for side, (wall, stages) in best.items():
                row[side + "_s"] = round(wall, 4)
                if stages:
                    row[side + "_stages"] = stages
            row["bdc_over_ort"] = round(best["bdc"][0] / best["ort"][0], 4)
            ratios.append(row["bdc_over_ort"])
            line = "%-22s %9.2f" % (name, best["bdc"][0])
            if args.against:
                row["bdc_over_against"] = round(best["bdc"][0] / best["against"][0], 4)
                line += " %10.2f %11.3f" % (best["against"][0], row["bdc_over_against"])
            st = best["bdc"][1]
            print(line + " %9.2f %8.2f  %.2f, %.2f" % (
                best["ort"][0], row["bdc_over_ort"], st.get("native build", float("nan")),
                st.get("append the weights", float("nan"))))
            rows.append(row)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    geo = math.exp(sum(math.log(r) for r in ratios) / len(ratios)) if ratios else float("nan")
    print("geomean bdc/ORT %.3f over %d models" % (geo, len(ratios)))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"command": " ".join(sys.argv), "arch": args.arch, "rounds": args.rounds,
                       "onnxruntime": ort.__version__, "cpus": os.cpu_count(),
                       "geomean_bdc_over_ort": geo, "models": rows}, f, indent=1)
            f.write("\n")
    return 1 if any("error" in r for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
