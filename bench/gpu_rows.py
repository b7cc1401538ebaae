#!/usr/bin/env python3
"""Rows of bdc's executables for the GPU benchmark (bench/h200.sh), and its report.

Usage: gpu_rows.py exe --exe PATH --model NAME --peer LABEL [--models-cache DIR] [--runs N]
                       [--warmup W] [--exe-args "ARGS"] [--timeout S] [--schedule S]
                       [--target T] [--compile-s S] [--profile-top N]
       gpu_rows.py error --model NAME --peer LABEL --error TEXT [--log FILE] [--skipped]
       gpu_rows.py report --out DIR --name NAME [--meta FILE]

exe     runs a compiled model once on its sample inputs (NAME.input*.npy in the models cache)
        and compares every output with onnxruntime's CPU provider on NAME.onnx (rtol 1e-3,
        atol 1e-4, as tests/test_real_run.py), then times it with its own `--benchmark N
        --warmup W --json` (the GPU executables time with device events); prints one row
        (bench/peers/common.py's shape) with "check" ("pass" or "fail", and the errors per
        output). Exit 0 on pass, 1 on a mismatch or failure (the row says which). With
        --profile-top N (GPU executables), `--profile` then launches every kernel alone and the
        row keeps kernels_ms (their sum), kernels (their count) and top_kernels (the N slowest:
        what each runs and its median ms).
error   prints the row of a step that failed (or with --skipped, was not run): TEXT, plus the
        telling line of the step's log FILE.
report  gathers DIR/rows.jsonl (one row per line) and the rows of every DIR/peers-*.json
        (bench/gpu_peers.py --json), and writes DIR/NAME.json (every row, then one entry per
        model with each peer's numbers side by side, as bench.py's rows, and the ratios of
        bdc's medians to each peer's) and DIR/NAME.txt (a table of medians).
"""

import argparse
import json
import math
import os
import shlex
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "tests"))

from peers import common  # noqa: E402

# column order of the table: bdc's executables first, then the peers
ORDER = ["bdc-op", "bdc-block", "bdc-fuse", "base-op", "base-block", "torch-eager", "torch-cudagraph",
         "torch-compile", "trtexec", "migraphx"]


def exe_row(a):
    import numpy as np
    import onnxruntime as ort
    import test_real_models as real
    import test_real_run as real_run

    meta = {"target": a.target, "schedule": a.schedule, "runs": a.runs, "warmup": a.warmup}
    if a.compile_s is not None:
        meta["compile_s"] = a.compile_s
    path = os.path.join(a.models_cache, a.model + ".onnx")
    files = real.input_paths(a.models_cache, a.model)
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    names = [i.name for i in sess.get_inputs()]
    feeds = {n: np.load(f) for n, f in zip(names, files)}
    want = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))
    inputs = [x for n, f in zip(names, files) for x in ("--input", "%s=%s" % (n, f))]
    extra = shlex.split(a.exe_args or "")

    def run(argv, more=extra):
        return subprocess.run([a.exe] + argv + more, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, errors="replace",
                              timeout=a.timeout)

    try:
        info = run(["--info", "--json"], [])  # --info runs nothing: no device arguments
        if info.returncode != 0:
            return common.failed(a.model, a.peer, "--info exit %d: %s" % (
                info.returncode, common.first_line(info.stderr)), **meta)
        out_files = {o["name"]: o["file"] for o in json.loads(info.stdout)["outputs"]}
        with tempfile.TemporaryDirectory(prefix="bdc-gpu-rows-") as out:
            r = run(inputs + ["--output-dir", out])
            if r.returncode != 0:
                return common.failed(a.model, a.peer, "run exit %d: %s" % (
                    r.returncode, common.first_line(r.stderr)), **meta)
            outputs, ok = [], True
            for n, w in want.items():
                if n not in out_files:
                    outputs.append({"name": n, "ok": False, "why": "not an output"})
                    ok = False
                    continue
                g = np.load(os.path.join(out, out_files[n]), allow_pickle=False)
                if g.dtype != w.dtype or g.shape != w.shape:
                    outputs.append({"name": n, "ok": False, "why": "bdc %s%s, onnxruntime %s%s"
                                    % (g.dtype, list(g.shape), w.dtype, list(w.shape))})
                    ok = False
                    continue
                abs_err, rel_err = real_run.errors(g, w)
                close = bool(np.allclose(g, w, rtol=real_run.RTOL, atol=real_run.ATOL,
                                         equal_nan=True))
                outputs.append({"name": n, "ok": close, "max_abs_err": abs_err,
                                "max_rel_err": rel_err})
                ok = ok and close
        b = run(inputs + ["--benchmark", str(a.runs), "--warmup", str(a.warmup), "--json"])
        if b.returncode != 0:
            return common.failed(a.model, a.peer, "benchmark exit %d: %s" % (
                b.returncode, common.first_line(b.stderr)), **meta,
                check={"result": "pass" if ok else "fail", "outputs": outputs})
        stats = json.loads(b.stdout)
        if a.profile_top:  # each kernel launched alone, timed by device events
            with tempfile.TemporaryDirectory(prefix="bdc-gpu-profile-") as tmp:
                pf = os.path.join(tmp, "profile.json")
                p = run(inputs + ["--profile", pf, "--benchmark", "5", "--warmup", "2"])
                if p.returncode == 0:
                    with open(pf) as f:
                        prof = json.load(f)
                    top = sorted(prof["kernels"], key=lambda k: -k["median_ms"])[:a.profile_top]
                    meta["kernels_ms"] = prof["kernels_ms"]
                    meta["kernels"] = len(prof["kernels"])
                    meta["top_kernels"] = [{"runs": k["runs"], "median_ms": k["median_ms"]} for k in top]
                else:
                    meta["profile_error"] = common.first_line(p.stderr)
    except subprocess.TimeoutExpired:
        return common.failed(a.model, a.peer, "timed out after %d s" % a.timeout, **meta)
    stats.pop("model", None)  # the graph's name; the row's model is the benchmark's name
    meta.update(stats)  # the executable's own runs/warmup/threads/..._ms/peak_rss_kb
    return common.row(a.model, a.peer, **meta,
                      check={"result": "pass" if ok else "fail",
                             "rtol": real_run.RTOL, "atol": real_run.ATOL, "outputs": outputs})


def error_row(a):
    why = a.error
    if a.log and os.path.exists(a.log):
        with open(a.log, errors="replace") as f:
            text = f.read()
        if text.strip():
            why += ": " + common.first_line(text)
    return (common.skipped if a.skipped else common.failed)(a.model, a.peer, why)


def cell(r):
    if r is None:
        return "."
    if "median_ms" in r and r["median_ms"] is not None:
        v = "%.3f" % r["median_ms"]
        c = r.get("check", {})
        if c.get("result") == "fail" or c.get("ok") is False:
            v += "!"
        return v
    if "mean_ms" in r:  # a peer that prints only its average
        return "~%.3f" % r["mean_ms"]
    return "skip" if "skipped" in r else "err"


def report(a):
    rows = []
    path = os.path.join(a.out, "rows.jsonl")
    if os.path.exists(path):
        with open(path) as f:
            rows += [json.loads(l) for l in f if l.strip()]
    peer_runs = []
    for fn in sorted(os.listdir(a.out)):
        if fn.startswith("peers-") and fn.endswith(".json"):
            with open(os.path.join(a.out, fn)) as f:
                d = json.load(f)
            rows += d.pop("rows")
            peer_runs.append(d)
    meta = {}
    if a.meta:
        with open(a.meta) as f:
            meta = json.load(f)
    models, by_model = [], {}
    for r in rows:
        if r["model"] not in by_model:
            by_model[r["model"]] = {"model": r["model"]}
            models.append(by_model[r["model"]])
        entry = {k: v for k, v in r.items() if k not in ("model", "peer")}
        by_model[r["model"]][r["peer"]] = entry
    peers = [p for p in ORDER if any(p in m for m in models)]
    peers += sorted({r["peer"] for r in rows} - set(peers))
    ratios = {}
    for m in models:
        m["ratios"] = {}
        for b in (p for p in peers if p.startswith("bdc")):
            for p in (p for p in peers if not p.startswith("bdc")):
                bm = m.get(b, {}).get("median_ms")
                pm = m.get(p, {}).get("median_ms")
                if bm and pm:
                    key = "%s/%s" % (b, p)
                    m["ratios"][key] = bm / pm
                    ratios.setdefault(key, []).append(bm / pm)
    geomean = {k: math.exp(sum(math.log(x) for x in v) / len(v)) for k, v in ratios.items()}
    result = {"name": a.name, "meta": meta, "peer_runs": peer_runs, "peers": peers,
              "geomean": geomean, "models": models, "rows": rows}
    with open(os.path.join(a.out, a.name + ".json"), "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")

    lines = ["%s: median ms per inference (! output check failed, ~ average only, skip/err: "
             "see below)" % a.name]
    for k in ("gpu", "command", "runs", "warmup", "precision"):
        if k in meta:
            lines.append("  %s: %s" % (k, meta[k]))
    lines.append("%-20s" % "model" + "".join(" %15s" % p for p in peers))
    for m in models:
        lines.append("%-20s" % m["model"] + "".join(" %15s" % cell(m.get(p)) for p in peers))
    if geomean:
        lines.append("geomean of ratios (below 1: bdc faster): " + ", ".join(
            "%s %.3fx" % (k, v) for k, v in sorted(geomean.items())))
    lines.append("")
    rank = {p: i for i, p in enumerate(peers)}
    place = {m["model"]: i for i, m in enumerate(models)}
    for r in sorted(rows, key=lambda r: (place[r["model"]], rank.get(r["peer"], len(rank)))):
        c = r.get("check")
        if "error" in r or "skipped" in r:
            lines.append("%s %s: %s %s" % (r["model"], r["peer"],
                                           "error" if "error" in r else "skipped",
                                           r.get("error") or r.get("skipped")))
        elif c and "result" in c:
            worst = max((o.get("max_abs_err", 0.0) for o in c.get("outputs", [])), default=0.0)
            lines.append("%s %s: check %s (max abs err %.3g)" % (r["model"], r["peer"],
                                                                 c["result"], worst))
    text = "\n".join(lines) + "\n"
    with open(os.path.join(a.out, a.name + ".txt"), "w") as f:
        f.write(text)
    sys.stdout.write(text)
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("exe")
    e.add_argument("--exe", required=True)
    e.add_argument("--model", required=True)
    e.add_argument("--peer", required=True)
    e.add_argument("--models-cache", default=os.path.join(REPO, "build", "cache", "models"))
    e.add_argument("--runs", type=int, default=100)
    e.add_argument("--warmup", type=int, default=10)
    e.add_argument("--exe-args", help="more arguments for every run, e.g. '--device 0'")
    e.add_argument("--timeout", type=int, default=120, help="per run of the executable")
    e.add_argument("--target", default="cuda")
    e.add_argument("--schedule")
    e.add_argument("--compile-s", type=float, help="how long `bdc compile` took, kept in the row")
    e.add_argument("--profile-top", type=int, default=0,
                   help="GPU executables: keep the N slowest kernels of `--profile` (each kernel "
                        "launched alone) in the row, with the kernels' total")
    r = sub.add_parser("error")
    r.add_argument("--model", required=True)
    r.add_argument("--peer", required=True)
    r.add_argument("--error", required=True)
    r.add_argument("--log")
    r.add_argument("--skipped", action="store_true")
    p = sub.add_parser("report")
    p.add_argument("--out", required=True)
    p.add_argument("--name", required=True)
    p.add_argument("--meta")
    a = ap.parse_args()
    if a.cmd == "report":
        return report(a)
    row = exe_row(a) if a.cmd == "exe" else error_row(a)
    print(json.dumps(row))
    return 0 if "median_ms" in row and row.get("check", {}).get("result") == "pass" else 1


if __name__ == "__main__":
    sys.exit(main())
