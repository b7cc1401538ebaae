#!/usr/bin/env python3
"""Real-model shape test: bdc's inference on exported networks agrees with onnxruntime.

Usage: test_real_models.py [--bdc PATH] [--cache DIR] [NAME ...]
  --bdc    the bdc binary (default: $BDC, else <repo>/build/bdc)
  --cache  folder of exported models (default: $BDC_MODEL_CACHE, else ./build/cache/models, as the other tests and bench/)
  NAME     models to test (default: every model tests/tools/export_models.py knows)

For every model: export it if the cache lacks it (tests/tools/export_models.py, fixed seeds),
run `bdc inspect --json`, and check that
  - bdc exits 0 (every op of these models is one bdc must support),
  - all_shapes_static is true and every value has a known dtype and a fully numeric shape
    (the exports are static, so anything less means shape inference or folding gave up),
  - the graph inputs are what the sample inputs are (names, dtypes, shapes),
  - the graph outputs have exactly the dtypes and shapes onnxruntime (CPUExecutionProvider)
    produces on the sample input.
Why: real exporters emit the patterns (Shape->Gather->Concat->Reshape chains, Split, Range,
decomposed LayerNorm/GELU/attention, LSTM) that toy models miss; onnxruntime is the reference.
Prints one line per model and closes with `N passed, M failed`; exits 1 if any failed.
"""

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np
import onnxruntime as ort

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
EXPORTER = os.path.join(HERE, "tools", "export_models.py")
BDC_TIMEOUT_S = 300


def model_names(heavy=False):
    """The default test list; heavy=True: every name, those left out by default included."""
    out = subprocess.run([sys.executable, EXPORTER, "--list-all" if heavy else "--list"], check=True,
                         stdout=subprocess.PIPE, text=True).stdout
    return out.split()


def input_paths(cache, name):
    """Sample inputs in graph-input order: NAME.input.npy, NAME.input.1.npy, ..."""
    paths, i = [], 0
    while True:
        p = os.path.join(cache, "%s.input%s.npy" % (name, "" if i == 0 else ".%d" % i))
        if not os.path.exists(p):
            return paths
        paths.append(p)
        i += 1


def dtype_name(a):
    """numpy dtype -> bdc's dtype name (the same spelling for all numeric types)."""
    if a.dtype.kind in "OUS":
        return "string"
    return a.dtype.name


def cpu_has(flag):
    """Whether /proc/cpuinfo lists `flag` (False where there is no such file)."""
    try:
        with open("/proc/cpuinfo") as f:
            return any(l.startswith("flags") and flag in l.split() for l in f)
    except OSError:
        return False


def ensure_exported(cache, name):
    if os.path.exists(os.path.join(cache, name + ".onnx")):
        return None
    r = subprocess.run([sys.executable, EXPORTER, cache, name],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        tail = r.stdout.strip().splitlines()[-1:] or ["(no output)"]
        return "export failed (exit %d): %s" % (r.returncode, tail[0])
    return None


def run_ort(model_path, feeds):
    sess = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    return list(zip(names, sess.run(names, feeds)))


def fmt_value(v):
    return "%s%s" % (v.get("dtype"), v.get("shape"))


def check_model(bdc, cache, name):
    """Returns (ok, detail)."""
    err = ensure_exported(cache, name)
    if err:
        return False, err
    path = os.path.join(cache, name + ".onnx")
    arrays = [np.load(p) for p in input_paths(cache, name)]

    sess_inputs = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).get_inputs()
    if len(sess_inputs) != len(arrays):
        return False, "%d graph inputs but %d sample inputs in %s" % (
            len(sess_inputs), len(arrays), cache)
    feeds = {i.name: a for i, a in zip(sess_inputs, arrays)}
    reference = run_ort(path, feeds)

    t0 = time.time()
    try:
        r = subprocess.run([bdc, "inspect", path, "--json"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, timeout=BDC_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return False, "bdc inspect timed out after %d s" % BDC_TIMEOUT_S
    secs = time.time() - t0
    if r.returncode < 0:
        return False, "bdc killed by signal %d" % -r.returncode
    if r.returncode != 0:
        detail = r.stderr.strip().splitlines()[:1] or ["(no message)"]
        if r.returncode == 3:  # the JSON lists what is unsupported
            try:
                unsup = json.loads(r.stdout).get("unsupported", [])
                detail = ["; ".join("%s (%s): %s" % (u.get("node"), u.get("op"), u.get("reason"))
                                    for u in unsup[:3])] or detail
            except ValueError:
                pass
        return False, "exit %d: %s" % (r.returncode, detail[0])
    try:
        info = json.loads(r.stdout)
    except ValueError as e:
        return False, "stdout is not JSON: %s" % e

    problems = []
    if info.get("all_shapes_static") is not True:
        problems.append("all_shapes_static is %r" % info.get("all_shapes_static"))
    values = info.get("values") or []
    if not values:
        problems.append("no values listed")
    dynamic = [v for v in values + (info.get("inputs") or []) + (info.get("outputs") or [])
               if v.get("dtype") is None or not isinstance(v.get("shape"), list)
               or not all(isinstance(d, int) and not isinstance(d, bool) for d in v["shape"])]
    if dynamic:
        problems.append("%d value(s) not fully static, e.g. %s: %s" % (
            len(dynamic), dynamic[0].get("name"), fmt_value(dynamic[0])))

    got_in = [(v.get("name"), v.get("dtype"), v.get("shape")) for v in info.get("inputs") or []]
    want_in = [(n, dtype_name(a), list(a.shape)) for n, a in feeds.items()]
    if got_in != want_in:
        problems.append("inputs: expected %s, got %s" % (want_in, got_in))

    outs = info.get("outputs") or []
    if [v.get("name") for v in outs] != [n for n, _ in reference]:
        problems.append("output names: expected %s, got %s"
                        % ([n for n, _ in reference], [v.get("name") for v in outs]))
    by_name = {v.get("name"): v for v in outs}
    for n, a in reference:
        want = {"dtype": dtype_name(a), "shape": list(a.shape)}
        v = by_name.get(n)
        if v is None:
            continue  # reported above
        if v.get("dtype") != want["dtype"] or v.get("shape") != want["shape"]:
            problems.append("output %s: onnxruntime %s, bdc %s" % (n, fmt_value(want), fmt_value(v)))
    if problems:
        return False, "; ".join(problems)
    return True, "%d -> %d nodes, %d values, outputs %s (%.1f s)" % (
        info.get("original_node_count", -1), info.get("node_count", -1), len(values),
        ", ".join(fmt_value(by_name[n]) for n, _ in reference), secs)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bdc", default=os.environ.get("BDC") or os.path.join(REPO, "build", "bdc"))
    ap.add_argument("--cache", default=os.environ.get("BDC_MODEL_CACHE")
                    or os.path.join("build", "cache", "models"))
    ap.add_argument("models", nargs="*")
    args = ap.parse_args()

    known = model_names(heavy=True)
    names = args.models or model_names()
    bad = [n for n in names if n not in known]
    if bad:
        ap.error("unknown model(s) %s; known: %s" % (" ".join(bad), " ".join(known)))
    if not os.access(args.bdc, os.X_OK):
        sys.stderr.write("test_real_models: bdc not found or not executable: %s "
                         "(set BDC or pass --bdc)\n" % args.bdc)
        return 1
    os.makedirs(args.cache, exist_ok=True)

    passed = failed = 0
    for name in names:
        try:
            ok, detail = check_model(args.bdc, args.cache, name)
        except Exception as e:  # a broken cache entry or ORT failure fails this model only
            ok, detail = False, "%s: %s" % (type(e).__name__, e)
        print("%s %-20s %s" % ("PASS" if ok else "FAIL", name, detail), flush=True)
        passed += ok
        failed += not ok
    print("%d passed, %d failed" % (passed, failed))
    return 0 if failed == 0 and passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
