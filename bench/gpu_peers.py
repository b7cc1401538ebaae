#!/usr/bin/env python3
"""PyTorch as bdc's GPU peer: eager, CUDA graphs and torch.compile on the networks and weights
that tests/tools/export_models.py exports.

Usage: gpu_peers.py [--models a,b] [--peers eager,cudagraph,compile] [--runs N] [--warmup W]
                    [--precision fp32|tf32|fp16|bf16] [--device cuda|cpu] [--threads T]
                    [--compile-mode MODE] [--peer-timeout S] [--models-cache DIR] [--json FILE]

Every model is built by export_models.build(NAME): the same torch.nn/torchvision module, the
same seeded weights and the same sample inputs as the exported NAME.onnx, so these rows time
the network bdc compiles. Peers (one row each, bench/peers/common.py's shape):
  torch-eager      model(*inputs) under torch.no_grad()
  torch-cudagraph  the same forward captured once in a torch.cuda.CUDAGraph, then replayed
                   (no per-kernel launch cost; needs CUDA)
  torch-compile    torch.compile(model, mode=--compile-mode) (needs PyTorch 2); its first call,
                   which compiles, is timed apart as compile_s
Each peer runs W untimed warm-ups, then N timed runs, each timed alone: with torch.cuda.Event
pairs on CUDA (the device time of one inference, as bdc's GPU executables time theirs), with
time.perf_counter on the CPU. min/median/p90/p99/mean/max are computed like the bdc runtime's.
cuDNN's autotuner is on (torch.backends.cudnn.benchmark), PyTorch's fastest setting for fixed
shapes; the warm-ups absorb its search.

Precision: fp32 (default) is IEEE fp32 throughout (TF32 off for matmul and cuDNN), like bdc and
onnxruntime; tf32 allows TF32 tensor cores; fp16/bf16 cast the weights and floating inputs.
Every row's "check" compares that peer's outputs with onnxruntime's (CPU) on the exported file
(or with PyTorch fp32 on the CPU when the models cache lacks it) within a tolerance that grows
with the precision; "reference" records which, and that the sample inputs equal the cached ones.

--device cpu runs the same code on the CPU (CUDA graphs are then skipped), to test the script
without a GPU. With --device cuda and no usable CUDA it says so and exits 3.
Exit: 0 every row measured or skipped, 1 some row failed, 2 usage, 3 CUDA not available,
4 torch or torchvision missing.
"""

import argparse
import json
import os
import signal
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "tests", "tools"))

try:
    import export_models  # noqa: E402  (imports torch and torchvision quietly)
except ImportError as e:  # the model table needs both
    sys.stderr.write("gpu_peers: cannot import tests/tools/export_models.py: %s\n" % e)
    sys.exit(4)
import numpy as np  # noqa: E402
import torch  # noqa: E402

from peers import common  # noqa: E402

EXIT_NO_CUDA = 3
PEERS = ("eager", "cudagraph", "compile")
DTYPES = {"fp32": torch.float32, "tf32": torch.float32, "fp16": torch.float16,
          "bf16": torch.bfloat16}
# (rtol, atol) against the fp32 reference: fp32 as tests/test_real_run.py; the others loosen
# with the mantissa (tf32 and fp16 10 bits, bf16 7)
TOLERANCE = {"fp32": (1e-3, 1e-4), "tf32": (2e-2, 2e-2), "fp16": (5e-2, 5e-2),
             "bf16": (1e-1, 1e-1)}


def to_numpy(t):
    """torch -> numpy through Python floats (Debian's torch may not share numpy's ABI, see
    export_models.py); the outputs here are small."""
    t = t.detach().to("cpu")
    return np.asarray(t.double().flatten().tolist(), dtype=np.float64).reshape(tuple(t.shape))


def flatten(out):
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in flatten(o)]
    raise TypeError("unexpected model output %s" % type(out).__name__)


def reference(name, model, inputs, cache):
    """The outputs to check every peer against, and where they come from."""
    with torch.no_grad():
        cpu = [to_numpy(t) for t in flatten(model(*[export_models.to_torch(a)
                                                    for _, a in inputs]))]
    path = os.path.join(cache, name + ".onnx")
    files = export_models.input_paths(cache, name, len(inputs))
    if not (os.path.exists(path) and all(os.path.exists(f) for f in files)):
        return cpu, {"source": "torch-cpu-fp32",
                     "why": "%s not exported in %s" % (name, cache)}
    cached = [np.load(f) for f in files]
    same = all(np.array_equal(a, c) for (_, a), c in zip(inputs, cached))
    try:
        import onnxruntime as ort
        sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        feeds = {i.name: c for i, c in zip(sess.get_inputs(), cached)}
        want = [o.astype(np.float64) for o in sess.run(None, feeds)]
    except Exception as e:  # no onnxruntime, or it refuses the file: still time the peers
        return cpu, {"source": "torch-cpu-fp32", "inputs_match_onnx_cache": same,
                     "why": "onnxruntime: %s: %s" % (type(e).__name__, str(e)[:200])}
    info = {"source": "onnxruntime-cpu", "inputs_match_onnx_cache": same}
    if len(want) == len(cpu):
        # the torch module against the ONNX file: the same weights, or this comparison is void
        info["torch_cpu_fp32_max_abs_err"] = max(float(np.max(np.abs(w - c))) if w.size else 0.0
                                                 for w, c in zip(want, cpu))
    return want, info


def check(got, want, precision):
    rtol, atol = TOLERANCE[precision]
    if len(got) != len(want):
        return {"ok": False, "why": "%d outputs, reference has %d" % (len(got), len(want))}
    err, ok = 0.0, True
    for g, w in zip(got, want):
        if g.shape != w.shape:
            return {"ok": False, "why": "shape %s, reference %s" % (list(g.shape), list(w.shape))}
        if g.size:
            err = max(err, float(np.max(np.abs(g - w))))
            ok = ok and bool(np.allclose(g, w, rtol=rtol, atol=atol))
    return {"ok": ok, "max_abs_err": err, "rtol": rtol, "atol": atol}


def sync(cuda):
    if cuda:
        torch.cuda.synchronize()


def time_runs(fn, runs, warmup, cuda):
    """Per-run latencies in ms: CUDA events around each run on the GPU, perf_counter on CPU."""
    for _ in range(warmup):
        fn()
    sync(cuda)
    times = []
    for _ in range(runs):
        if cuda:
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
        else:
            t0 = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t0) * 1e3)
    return times


def make_peer(peer, model, args, opts, cuda):
    """Returns (callable running one inference and returning its outputs, extra row fields), or
    a string saying why this peer does not apply here."""
    if peer == "eager":
        return (lambda: model(*args)), {}
    if peer == "cudagraph":
        if not cuda:
            return "CUDA graphs need --device cuda"
        side = torch.cuda.Stream()  # warm up off the default stream, as capture requires
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                model(*args)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            static_out = model(*args)

        def replay():
            graph.replay()
            return static_out
        return replay, {}
    if peer == "compile":
        if not hasattr(torch, "compile"):
            return "torch.compile needs PyTorch 2 (this is %s)" % torch.__version__
        fn = torch.compile(model, mode=opts.compile_mode)
        t0 = time.perf_counter()
        fn(*args)  # the first call compiles
        sync(cuda)
        return (lambda: fn(*args)), {"compile_s": round(time.perf_counter() - t0, 3),
                                     "compile_mode": opts.compile_mode or "default"}
    raise ValueError(peer)


class PeerTimeout(Exception):
    pass


def _alarm(signum, frame):
    raise PeerTimeout()


def bench_model(name, opts, device, emit):
    cuda = device.type == "cuda"
    meta = {"device": opts.device_name, "precision": opts.precision, "runs": opts.runs,
            "warmup": opts.warmup}
    model, inputs, _ = export_models.build(name)
    want, ref = reference(name, model, inputs, opts.models_cache)
    meta["reference"] = ref
    dtype = DTYPES[opts.precision]
    model = model.to(device=device, dtype=dtype)
    args = []
    for _, a in inputs:
        t = export_models.to_torch(a).to(device)
        args.append(t.to(dtype) if t.is_floating_point() else t)
    for peer in opts.peers:
        label = "torch-" + peer
        signal.alarm(opts.peer_timeout)  # 0: none; a slow torch.compile must not eat the budget
        try:
            with torch.no_grad():
                made = make_peer(peer, model, args, opts, cuda)
                if isinstance(made, str):
                    emit(common.skipped(name, label, made, **meta))
                    continue
                fn, extra = made
                times = time_runs(fn, opts.runs, opts.warmup, cuda)
                got = [to_numpy(t) for t in flatten(fn())]
            emit(common.row(name, label, **meta, **extra, **common.stats_ms(times),
                            check=check(got, want, opts.precision)))
        except PeerTimeout:
            emit(common.failed(name, label, "timed out after %d s" % opts.peer_timeout, **meta))
        except Exception as e:  # one failing peer does not stop the others
            msg = str(e).strip().splitlines()
            emit(common.failed(name, label, "%s: %s" % (
                type(e).__name__, msg[0][:300] if msg else ""), **meta))
        finally:
            signal.alarm(0)
        if cuda:
            torch.cuda.synchronize()
    del model, args
    if cuda:
        torch.cuda.empty_cache()


def print_row(r):
    if "median_ms" in r:
        c = r.get("check", {})
        print("%-20s %-16s %10.4f %10.4f %10.4f  %s" % (
            r["model"], r["peer"], r["median_ms"], r["min_ms"], r["p90_ms"],
            ("ok" if c.get("ok") else "MISMATCH") + (" (max abs err %.3g)" % c["max_abs_err"]
                                                     if "max_abs_err" in c else "")), flush=True)
    else:
        print("%-20s %-16s %s" % (r["model"], r["peer"],
                                  "skipped: " + r["skipped"] if "skipped" in r
                                  else "error: " + r["error"]), flush=True)


def command_line():
    """This run's command line, with the script named from the repository's root and the models
    cache and the JSON path as the options' names: no folder of the machine it ran on."""
    args, out = [os.path.relpath(os.path.abspath(sys.argv[0]), REPO)], iter(sys.argv[1:])
    for a in out:
        args.append(a)
        if a in ("--models-cache", "--json"):
            next(out, None)
            args.append(a[2:].upper().replace("-", "_"))
    return " ".join(args)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", help="comma-separated (default: every export_models.py model)")
    ap.add_argument("--peers", default=",".join(PEERS), help="subset of " + ",".join(PEERS))
    ap.add_argument("--runs", type=int, default=100, help="timed runs per peer (default 100)")
    ap.add_argument("--warmup", type=int, default=10, help="untimed runs first (default 10)")
    ap.add_argument("--precision", choices=sorted(DTYPES), default="fp32")
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    ap.add_argument("--threads", type=int, help="torch.set_num_threads (CPU work)")
    ap.add_argument("--compile-mode", help="torch.compile mode (default: PyTorch's default), "
                                           "e.g. max-autotune")
    ap.add_argument("--models-cache", default=os.environ.get("BDC_MODEL_CACHE")
                    or os.path.join(REPO, "build", "cache", "models"),
                    help="exported models, for the onnxruntime reference")
    ap.add_argument("--peer-timeout", type=int, default=0, metavar="S",
                    help="give up a peer (its warm-up, compile and runs) after S seconds")
    ap.add_argument("--json", metavar="FILE", help="also write the rows as JSON (rewritten "
                                                   "after every row, so a killed run keeps them)")
    opts = ap.parse_args()
    opts.peers = opts.peers.split(",")
    bad = [p for p in opts.peers if p not in PEERS]
    names = opts.models.split(",") if opts.models else [
        n for n in export_models.MODELS if n not in export_models.HEAVY]  # heavy ones by name
    bad += [n for n in names if n not in export_models.MODELS]
    if bad or opts.runs < 1 or opts.warmup < 0:
        ap.error("unknown peer/model %s, or --runs < 1 / --warmup < 0 (peers: %s; models: %s)"
                 % (" ".join(bad), ",".join(PEERS), " ".join(export_models.MODELS)))
    if opts.device == "cuda" and not torch.cuda.is_available():
        sys.stderr.write(
            "gpu_peers: CUDA is not available (torch %s, built for CUDA %s; %s): nothing to "
            "time. --device cpu runs the same code on the CPU.\n" % (
                torch.__version__, torch.version.cuda or "none",
                "no GPU visible" if torch.version.cuda else "a CPU-only build"))
        return EXIT_NO_CUDA
    if opts.threads:
        torch.set_num_threads(opts.threads)
    device = torch.device(opts.device)
    tf32 = opts.precision == "tf32"
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32
    torch.backends.cudnn.benchmark = True
    opts.device_name = (torch.cuda.get_device_name(device) if device.type == "cuda"
                        else "cpu (%d threads)" % torch.get_num_threads())
    print("PyTorch %s on %s, %s, median/min/p90 ms of %d runs after %d warm-ups" % (
        torch.__version__, opts.device_name, opts.precision, opts.runs, opts.warmup), flush=True)
    signal.signal(signal.SIGALRM, _alarm)
    rows = []

    def emit(r):
        print_row(r)
        rows.append(r)
        if opts.json:
            write_json(opts.json, device, opts, rows)

    for name in names:
        done = len(rows)
        try:
            bench_model(name, opts, device, emit)
        except Exception as e:  # building or the reference failed: its peers fail
            for p in opts.peers[len(rows) - done:]:
                emit(common.failed(name, "torch-" + p, "%s: %s" % (type(e).__name__, e)))
    return 1 if any("error" in r for r in rows) else 0


def write_json(path, device, opts, rows):
    result = {"tool": "gpu_peers", "device": opts.device_name, "torch": torch.__version__,
              "cuda": torch.version.cuda,
              "cudnn": torch.backends.cudnn.version() if device.type == "cuda" else None,
              "precision": opts.precision, "runs": opts.runs, "warmup": opts.warmup,
              "command": command_line(), "rows": rows}
    tmp = "%s.tmp-%d" % (path, os.getpid())
    with open(tmp, "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")
    os.replace(tmp, path)


if __name__ == "__main__":
    sys.exit(main())
