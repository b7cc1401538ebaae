#!/usr/bin/env python3
"""The GPU benchmark's parsers and adapters (bench/peers/, bench/gpu_rows.py), without a GPU.

Where the formats come from (each fixture's first lines say the same):
  trtexec          TensorRT's samples/common/sampleReporting.cpp, printEpilog: after
                   "=== Performance summary ===", "Throughput: X qps" and per metric
                   "NAME: min = X ms, max = X ms, mean = X ms, median = X ms,
                   percentile(P%) = X ms, ..." (one percentile, 99, before TensorRT 8.6; 90,95,99
                   after), each line behind trtexec's "[date] [I] " prefix; "&&&& FAILED" on
                   failure.
  migraphx-driver  AMDMIGraphX's src/program.cpp, program::perf_report: "Summary:" then
                   "op: Xms / N = Yms, P%" lines, "Batch size: B", "Rate: R inferences/sec",
                   "Total time: Xms (Min: Xms, Max: Xms, Mean: Xms, Median: Xms)",
                   "Percentiles (90%, 95%, 99%): (Xms, Xms, Xms)"; older releases print
                   "op: Xms, P%", "Rate: R/sec" and a bare "Total time: Xms" (as in MIGraphX's
                   examples/migraphx/migraphx_driver/README.md).
The fixtures (bench/peers/fixtures/) follow those formats with made-up numbers. Cases check the
exact numbers parsed, that cut-short or garbled output raises ParseError (naming what is wrong)
instead of yielding a number, the adapters' rows with the tool absent and with a stand-in tool
on PATH (the command line it is given, its failure, a hang), the runtime's statistics, the
report's merging, that gpu_peers.py exits 3 when CUDA is missing and that its --device cpu
run (the GPU run's code up to the device) gives checked rows.

Prints one line per case and `N passed, M failed`; exits 1 if anything failed.
"""

import contextlib
import json
import os
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "bench"))

from peers import common, migraphx, trtexec  # noqa: E402

FIXTURES = os.path.join(REPO, "bench", "peers", "fixtures")
CASES = []


def case(fn):
    CASES.append(fn)
    return fn


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as f:
        return f.read()


def expect_equal(got, want, what):
    if got != want:
        raise AssertionError("%s: got %r, want %r" % (what, got, want))


def expect_parse_error(parse, text, needle):
    try:
        got = parse(text)
    except common.ParseError as e:
        if needle not in str(e):
            raise AssertionError("ParseError %r does not mention %r" % (str(e), needle))
        return
    raise AssertionError("no ParseError; parsed %r" % (got,))


@contextlib.contextmanager
def environ(**changes):
    saved = {k: os.environ.get(k) for k in changes}
    try:
        for k, v in changes.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@contextlib.contextmanager
def fake_tool(name, script):
    """A folder holding an executable `name` running the bash `script`, first on PATH."""
    with tempfile.TemporaryDirectory(prefix="bdc-fake-tool-") as d:
        path = os.path.join(d, name)
        with open(path, "w") as f:
            f.write("#!/usr/bin/env bash\n" + script + "\n")
        os.chmod(path, 0o755)
        with environ(PATH=d + os.pathsep + "/usr/bin:/bin", TRTEXEC=None, MIGRAPHX_DRIVER=None):
            yield d


# ---- trtexec --------------------------------------------------------------------------------

@case
def trtexec_trt10_summary():
    p = trtexec.parse(fixture("trtexec_trt10.txt"))
    expect_equal(p["gpu_compute"], {"min_ms": 0.851968, "max_ms": 1.02502, "mean_ms": 0.862891,
                                    "median_ms": 0.858112, "p90_ms": 0.871424,
                                    "p95_ms": 0.883712, "p99_ms": 1.02502}, "GPU Compute Time")
    expect_equal(p["latency"]["median_ms"], 0.936035, "Latency median")
    expect_equal(p["latency"]["p90_ms"], 0.949219, "Latency p90")
    expect_equal(p["throughput_qps"], 1019.37, "throughput")
    expect_equal(p["tensorrt"], "100300", "TensorRT version")
    r = trtexec.to_row("resnet18", p)
    # the row's numbers are the GPU compute time (device time, like bdc's), not host latency
    expect_equal((r["model"], r["peer"], r["median_ms"], r["p90_ms"]),
                 ("resnet18", "trtexec", 0.858112, 0.871424), "row")


@case
def trtexec_trt8_single_percentile():
    p = trtexec.parse(fixture("trtexec_trt8_p99.txt"))
    expect_equal(p["gpu_compute"], {"min_ms": 0.236, "max_ms": 0.401, "mean_ms": 0.2441,
                                    "median_ms": 0.2432, "p99_ms": 0.2617}, "GPU Compute Time")
    # "End-to-End Host Latency" (median 0.4812) must not be taken for "Latency"
    expect_equal(p["latency"]["median_ms"], 0.2432, "Latency median")
    expect_equal("p90_ms" in trtexec.to_row("m", p), False, "p90 invented")


@case
def trtexec_failed_run():
    expect_parse_error(trtexec.parse, fixture("trtexec_failed.txt"),
                       "While parsing node number 12")


@case
def trtexec_cut_mid_line():
    expect_parse_error(trtexec.parse, fixture("trtexec_truncated.txt"),
                       "'GPU Compute Time': cannot read 'mean = 0.86'")


@case
def trtexec_no_summary():
    text = "\n".join(fixture("trtexec_trt10.txt").splitlines()[:12])  # stops before timing
    expect_parse_error(trtexec.parse, text, "no '=== Performance summary ==='")


@case
def trtexec_summary_without_gpu_compute():
    text = "\n".join(l for l in fixture("trtexec_trt10.txt").splitlines()
                     if "GPU Compute Time:" not in l)
    expect_parse_error(trtexec.parse, text, "no 'GPU Compute Time' line")


@case
def trtexec_median_below_min():
    text = fixture("trtexec_trt10.txt").replace("median = 0.858112 ms", "median = 0.0858112 ms")
    expect_parse_error(trtexec.parse, text, "median_ms outside [min, max]")


@case
def trtexec_infinite_value():
    # trtexec prints inf for an empty timing set
    text = fixture("trtexec_trt8_p99.txt").replace("GPU Compute Time: min = 0.236 ms",
                                                   "GPU Compute Time: min = inf ms")
    expect_parse_error(trtexec.parse, text, "min is inf")


@case
def trtexec_missing_field():
    text = fixture("trtexec_trt8_p99.txt").replace(
        "GPU Compute Time: min = 0.236 ms, max = 0.401 ms, mean = 0.2441 ms, median = 0.2432 ms,",
        "GPU Compute Time: min = 0.236 ms, max = 0.401 ms, mean = 0.2441 ms,")
    expect_parse_error(trtexec.parse, text, "no median_ms")


@case
def trtexec_absent_is_skipped():
    with environ(PATH="/nonexistent", TRTEXEC=None):
        r = trtexec.run("model.onnx", "resnet18")
    expect_equal(r.get("skipped"), "trtexec not installed (not on PATH), skipped", "skipped")
    expect_equal("median_ms" in r or "error" in r, False, "numbers or error in a skipped row")


@case
def trtexec_stand_in_tool():
    log = os.path.join(FIXTURES, "trtexec_trt10.txt")
    with fake_tool("trtexec", 'echo "$@" > "$(dirname "$0")/argv"; cat "%s"' % log) as d:
        r = trtexec.run("/m/resnet18.onnx", "resnet18", runs=7, warmup_ms=50, precision="fp16")
        with open(os.path.join(d, "argv")) as f:
            argv = f.read().split()
    expect_equal(argv, ["--onnx=/m/resnet18.onnx", "--iterations=7", "--duration=0",
                        "--warmUp=50", "--noDataTransfers", "--useSpinWait", "--fp16"], "argv")
    expect_equal((r["median_ms"], r["min_ms"], r["precision"], r["runs"]),
                 (0.858112, 0.851968, "fp16", 7), "row")


@case
def trtexec_stand_in_tool_fails():
    log = os.path.join(FIXTURES, "trtexec_failed.txt")
    with fake_tool("trtexec", 'cat "%s"; exit 1' % log):
        r = trtexec.run("/m/bert.onnx", "bert")
    if "While parsing node number 12" not in r.get("error", "") or "median_ms" in r:
        raise AssertionError("row %r" % r)


@case
def trtexec_stand_in_tool_hangs():
    with fake_tool("trtexec", "sleep 30"):
        r = trtexec.run("/m/bert.onnx", "bert", timeout=1)
    expect_equal(r.get("error"), "trtexec timed out after 1 s", "error")


# ---- migraphx-driver ------------------------------------------------------------------------

@case
def migraphx_recent_report():
    p = migraphx.parse(fixture("migraphx_perf.txt"))
    want = {"total_time_ms": 0.93781, "min_ms": 0.9102, "max_ms": 1.2035, "mean_ms": 0.9459,
            "median_ms": 0.9366, "p90_ms": 0.9602, "p95_ms": 0.9814, "p99_ms": 1.1501,
            "batch": 1, "rate_per_s": 1066.31}
    expect_equal({k: p[k] for k in want}, want, "totals")
    expect_equal(len(p["ops"]), 6, "summary lines")
    expect_equal(p["ops"][0], {"op": "gpu::code_object::mlir_convolution_add_relu",
                               "ms": 0.7505, "percent": 89.0, "count": 2}, "slowest op")
    expect_equal(p["ops"][3]["op"], "check_context::migraphx::gpu::context", "op with '::'")


@case
def migraphx_old_report():
    p = migraphx.parse(fixture("migraphx_perf_old.txt"))
    expect_equal((p["total_time_ms"], p["mean_ms"], p["rate_per_s"]),
                 (0.41237, 0.41237, 2425.01), "totals")
    expect_equal([k for k in ("min_ms", "median_ms", "p90_ms", "p99_ms") if k in p], [],
                 "statistics the old report does not print")
    expect_equal(p["ops"][0], {"op": "gpu::gemm", "ms": 0.3011, "percent": 76.0}, "slowest op")


@case
def migraphx_killed_before_totals():
    expect_parse_error(migraphx.parse, fixture("migraphx_truncated.txt"), "no 'Total time:'")


@case
def migraphx_cut_percentiles():
    expect_parse_error(migraphx.parse, fixture("migraphx_cut_percentiles.txt"),
                       "no 'Percentiles (90%, 95%, 99%)' line")


@case
def migraphx_rate_does_not_match():
    text = fixture("migraphx_perf.txt").replace("Rate: 1066.31 inferences/sec",
                                                "Rate: 2066.31 inferences/sec")
    expect_parse_error(migraphx.parse, text, "does not match Total time")


@case
def migraphx_garbled_total():
    text = fixture("migraphx_perf_old.txt").replace("Total time: 0.41237ms", "Total time: ms")
    expect_parse_error(migraphx.parse, text, "cannot read 'Total time: ms'")


@case
def migraphx_garbled_summary_line():
    text = fixture("migraphx_perf.txt").replace("gpu::pooling: 0.0415ms / 1 = 0.0415ms, 5%",
                                                "gpu::pooling: fast")
    expect_parse_error(migraphx.parse, text, "summary: cannot read 'gpu::pooling: fast'")


@case
def migraphx_absent_is_skipped():
    with environ(PATH="/nonexistent", MIGRAPHX_DRIVER=None):
        r = migraphx.run("model.onnx", "resnet18")
    expect_equal(r.get("skipped"), "migraphx-driver not installed (not on PATH), skipped",
                 "skipped")


@case
def migraphx_stand_in_tool():
    log = os.path.join(FIXTURES, "migraphx_perf.txt")
    with fake_tool("migraphx-driver", 'echo "$@" > "$(dirname "$0")/argv"; cat "%s"' % log) as d:
        r = migraphx.run("/m/sq.onnx", "squeezenet1_1", runs=7, precision="bf16")
        with open(os.path.join(d, "argv")) as f:
            argv = f.read().split()
        tf32 = migraphx.run("/m/sq.onnx", "squeezenet1_1", precision="tf32")
    expect_equal(argv, ["perf", "--onnx", "/m/sq.onnx", "--gpu", "-n", "7", "--bf16"], "argv")
    expect_equal((r["median_ms"], r["p99_ms"], r["precision"]), (0.9366, 1.1501, "bf16"), "row")
    expect_equal(tf32.get("skipped"), "MIGraphX has no tf32 mode, skipped", "tf32")


# ---- shared statistics, the report, gpu_peers without CUDA ----------------------------------

@case
def stats_like_the_runtime():
    # runtime/bdrt_main.c: nearest-rank percentiles, the median of an even count the mean of
    # the middle two
    s = common.stats_ms([float(x) for x in (7, 3, 10, 1, 5, 2, 9, 4, 8, 6)])
    expect_equal(s, {"min_ms": 1.0, "median_ms": 5.5, "p90_ms": 9.0, "p99_ms": 10.0,
                     "mean_ms": 5.5, "max_ms": 10.0}, "ten runs")
    s = common.stats_ms([3.0, 1.0, 2.0])
    expect_equal((s["median_ms"], s["p90_ms"]), (2.0, 3.0), "three runs")


@case
def report_merges_rows():
    with tempfile.TemporaryDirectory(prefix="bdc-report-") as d:
        rows = [{"model": "m", "peer": "bdc-op", "median_ms": 2.0, "check": {"result": "pass"}},
                {"model": "m", "peer": "bdc-block", "median_ms": 3.0,
                 "check": {"result": "fail"}},
                {"model": "m", "peer": "trtexec", "skipped": "trtexec not installed"}]
        with open(os.path.join(d, "rows.jsonl"), "w") as f:
            f.write("".join(json.dumps(r) + "\n" for r in rows))
        with open(os.path.join(d, "peers-m.json"), "w") as f:
            json.dump({"tool": "gpu_peers", "rows": [
                {"model": "m", "peer": "torch-eager", "median_ms": 4.0, "check": {"ok": True}},
                {"model": "m", "peer": "torch-compile", "error": "boom"}]}, f)
        r = subprocess.run([sys.executable, os.path.join(REPO, "bench", "gpu_rows.py"), "report",
                            "--out", d, "--name", "t"], stdout=subprocess.PIPE, text=True)
        expect_equal(r.returncode, 0, "exit")
        with open(os.path.join(d, "t.json")) as f:
            got = json.load(f)
        with open(os.path.join(d, "t.txt")) as f:
            table = f.read()
    m = got["models"][0]
    expect_equal(m["ratios"], {"bdc-op/torch-eager": 0.5, "bdc-block/torch-eager": 0.75},
                 "ratios")
    expect_equal(m["torch-compile"], {"error": "boom"}, "error entry")
    expect_equal(len(got["rows"]), 5, "rows kept")
    line = [l for l in table.splitlines() if l.startswith("m ")][0].split()
    # columns: bdc-op, bdc-block, torch-eager, torch-compile, trtexec
    expect_equal(line, ["m", "2.000", "3.000!", "4.000", "err", "skip"], "table line")


@case
def gpu_peers_without_cuda_exits_3():
    probe = subprocess.run([sys.executable, "-c", "import torch; print(torch.cuda.is_available())"],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    if probe.stdout.strip() != "False":
        return "not checked: this machine has CUDA"
    r = subprocess.run([sys.executable, os.path.join(REPO, "bench", "gpu_peers.py"),
                        "--models", "squeezenet1_1"], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True)
    expect_equal(r.returncode, 3, "exit code")
    if "CUDA is not available" not in r.stderr:
        raise AssertionError("message %r" % r.stderr)


@case
def gpu_peers_on_the_cpu():
    # the code path of the GPU run up to the device: build, reference, timing, check, JSON
    with tempfile.TemporaryDirectory(prefix="bdc-gpu-peers-") as d:
        out = os.path.join(d, "peers.json")
        r = subprocess.run([sys.executable, os.path.join(REPO, "bench", "gpu_peers.py"),
                            "--device", "cpu", "--models", "lstm,squeezenet1_1", "--peers",
                            "eager,cudagraph", "--runs", "3", "--warmup", "1", "--json", out],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        expect_equal(r.returncode, 0, "exit (output: %s)" % r.stdout[-500:])
        with open(out) as f:
            rows = json.load(f)["rows"]
    expect_equal([(x["model"], x["peer"]) for x in rows],
                 [("lstm", "torch-eager"), ("lstm", "torch-cudagraph"),
                  ("squeezenet1_1", "torch-eager"), ("squeezenet1_1", "torch-cudagraph")],
                 "rows")
    for x in rows[0], rows[2]:
        expect_equal((x["runs"], x["check"]["ok"], x["min_ms"] <= x["median_ms"] <= x["max_ms"]),
                     (3, True, True), "%s eager row" % x["model"])
    expect_equal(rows[1]["skipped"], "CUDA graphs need --device cuda", "cudagraph on the CPU")


def main():
    passed = failed = 0
    for fn in CASES:
        try:
            note = fn()
        except Exception as e:  # a broken case is a failure, whatever it raised
            failed += 1
            print("FAIL %s: %s: %s" % (fn.__name__, type(e).__name__, e), flush=True)
            continue
        if note:  # the case could not be checked here: neither passed nor failed
            print("skip %s (%s)" % (fn.__name__, note), flush=True)
            continue
        passed += 1
        print("ok   %s" % fn.__name__, flush=True)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
