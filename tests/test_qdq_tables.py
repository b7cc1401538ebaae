#!/usr/bin/env python3
"""QDQ elementwise chains computed as lookups (fuse/tables.c): a chain of float ops between a
DequantizeLinear and a QuantizeLinear, each op's output quantized and dequantized again as
onnxruntime's QDQ quantizer writes them, is a function of one 8-bit tensor; with --fusion block
bdc computes it at the 256 byte values into a table and looks each element up. Compiled under
every --fusion mode, against onnxruntime's unoptimized session (the QDQ graph as written).

Usage: test_qdq_tables.py [--bdc PATH] [--target cpu|opencl] [--gpu-builds]

- gelu_u8: a QDQ transformer's GELU, x/sqrt(2), Erf, +1, *x, *0.5, on uint8, with its constants
  dequantized from 8-bit initializers (one-element values the run computes) and x read twice (the
  8-bit value stays stored, the DequantizeLinear recomputed in both readers).
- sigmoid_s8: int8 in and out (the table at byte + 128, its entries widened to int32), Sigmoid
  then Tanh, the 8-bit result a graph output.
- relu_u8: DequantizeLinear, Relu, QuantizeLinear: too cheap for a table (a vector loop beats a
  lookup), so it must stay an expression.
Under --fusion block the fusion dump must say which nests became lookups (and relu_u8 none);
under none and op no table is made. Each output must be within one quantization step of
onnxruntime's, and at most 1% of the elements may differ at all: both sides compute the float
ops in float32, but erf, exp and tanh are different implementations, which moves a value lying
on a rounding boundary by one step. With --gpu-builds the tabulated cases are also built, not
run, for --target cuda and hip in both schedules with --werror (the lookups and SATURATE in the
CUDA and HIP dialects; PATH gets /usr/local/cuda/bin). Exits 1 on any failure.
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper, save

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TABLE_NOTE = "a function of one 8-bit tensor"


class Builder:
    """Nodes and initializers of a QDQ graph: each float op's output quantized and dequantized."""

    def __init__(self):
        self.nodes, self.inits, self.n = [], [], 0

    def qparams(self, dt, scale, zero):
        self.n += 1
        s, z = "s%d" % self.n, "z%d" % self.n
        self.inits += [numpy_helper.from_array(np.array(scale, np.float32), s),
                       numpy_helper.from_array(np.array(zero, dt), z)]
        return s, z

    def q(self, x, dt, scale, zero, out=None):
        s, z = self.qparams(dt, scale, zero)
        out = out or x + "_q"
        self.nodes.append(helper.make_node("QuantizeLinear", [x, s, z], [out], name=out))
        return out, (s, z)

    def qdq(self, x, dt, scale, zero):
        xq, (s, z) = self.q(x, dt, scale, zero)
        self.nodes.append(helper.make_node("DequantizeLinear", [xq, s, z], [x + "_dq"], name=x + "_dq"))
        return x + "_dq"

    def const(self, name, value, dt, scale, zero):
        """A float constant stored quantized and dequantized by the graph (the run computes it)."""
        s, z = self.qparams(dt, scale, zero)
        q = np.array(np.clip(np.round(value / scale) + zero, np.iinfo(dt).min, np.iinfo(dt).max), dt)
        self.inits.append(numpy_helper.from_array(q, name + "_cq"))
        self.nodes.append(helper.make_node("DequantizeLinear", [name + "_cq", s, z], [name], name=name))
        return name

    def op(self, kind, inputs, out, **attrs):
        self.nodes.append(helper.make_node(kind, inputs, [out], name=out, **attrs))
        return out


def make_gelu(b):
    x = b.qdq("x", np.uint8, 0.05, 128)
    d = b.qdq(b.op("Div", [x, "sqrt2"], "div"), np.uint8, 0.03, 128)
    e = b.qdq(b.op("Erf", [d], "erf"), np.uint8, 2.0 / 255, 128)
    a = b.qdq(b.op("Add", [e, b.const("one", 1.0, np.uint8, 1.0 / 255, 0)], "add"), np.uint8, 2.0 / 255, 0)
    m = b.qdq(b.op("Mul", [x, a], "mul"), np.uint8, 0.1, 60)
    h = b.op("Mul", [m, b.const("half", 0.5, np.uint8, 0.5 / 255, 0)], "half_mul")
    hq, (s, z) = b.q(h, np.uint8, 0.05, 30)
    b.nodes.append(helper.make_node("DequantizeLinear", [hq, s, z], ["y"], name="y"))
    b.inits.append(numpy_helper.from_array(np.array(1.4142135, np.float32), "sqrt2"))
    return [4, 1024], TensorProto.FLOAT, 0.05


def make_sigmoid(b):
    x = b.qdq("x", np.int8, 0.04, -3)
    s = b.qdq(b.op("Sigmoid", [x], "sig"), np.int8, 1.0 / 255, -128)
    t = b.op("Tanh", [b.op("Mul", [s, "six"], "mul")], "tanh")
    b.q(t, np.int8, 1.0 / 127, 0, out="y")
    b.inits.append(numpy_helper.from_array(np.array(6.0, np.float32), "six"))
    return [8, 512], TensorProto.INT8, 1


def make_relu(b):
    x = b.qdq("x", np.uint8, 0.05, 100)
    r = b.op("Relu", [x], "relu")
    rq, (s, z) = b.q(r, np.uint8, 0.05, 0)
    b.nodes.append(helper.make_node("DequantizeLinear", [rq, s, z], ["y"], name="y"))
    return [4, 1024], TensorProto.FLOAT, 0.05


# name: (maker, whether --fusion block tabulates it)
CASES = {"gelu_u8": (make_gelu, True), "sigmoid_s8": (make_sigmoid, True), "relu_u8": (make_relu, False)}


def make_model(path, case):
    b = Builder()
    shape, ytype, step = CASES[case][0](b)
    g = helper.make_graph(b.nodes, case, [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                          [helper.make_tensor_value_info("y", ytype, shape)], b.inits)
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)
    return shape, step


def within_one_step(got, want, step):
    got, want = got.astype(np.float64), want.astype(np.float64)
    err = float(np.abs(got - want).max())
    differ = float(np.mean(np.abs(got - want) > 1e-6 * step))
    if err > step * 1.001 or differ > 0.01:
        return "max abs err %.3g, %.2f%% of the elements differ, against onnxruntime" % (err, 100 * differ)
    return None


def run_case(args, tmp, case, fusion):
    model = os.path.join(tmp, case + ".onnx")
    shape, step = make_model(model, case)
    x = (np.random.default_rng(len(case)).standard_normal(shape) * 3).astype(np.float32)
    np.save(os.path.join(tmp, case + ".x.npy"), x)
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    want = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    exe = os.path.join(tmp, "%s_%s" % (case, fusion))
    r = subprocess.run([args.bdc, "compile", model, "-o", exe, "--werror", "-q", "--fusion", fusion,
                        "--target", args.target, "--dump=fuse"], capture_output=True, text=True)
    if r.returncode:
        return "bdc compile exit %d: %s" % (r.returncode, r.stderr.strip()[-300:])
    tabulated = TABLE_NOTE in r.stderr
    if tabulated != (fusion == "block" and CASES[case][1]):
        return "the program %s a lookup table" % ("has" if tabulated else "lacks")
    out = os.path.join(tmp, "out_%s_%s" % (case, fusion))
    run = subprocess.run([exe, "--output-dir", out, os.path.join(tmp, case + ".x.npy")],
                         capture_output=True, text=True)
    if run.returncode:
        return "run exit %d: %s" % (run.returncode, run.stderr.strip()[-300:])
    got = np.load(os.path.join(out, "y.npy"))
    if got.shape != want.shape or got.dtype != want.dtype:
        return "%s %s, want %s %s" % (got.dtype, got.shape, want.dtype, want.shape)
    return within_one_step(got, want, step)


def gpu_build(args, tmp, case, target, schedule):
    model = os.path.join(tmp, case + ".onnx")
    make_model(model, case)
    r = subprocess.run([args.bdc, "compile", model, "-o", os.path.join(tmp, "gpu_exe"), "--werror", "-q",
                        "--fusion", "block", "--target", target, "--schedule", schedule, "--dump=fuse"],
                       capture_output=True, text=True,
                       env=dict(os.environ, PATH=os.environ.get("PATH", "") + ":/usr/local/cuda/bin"))
    if r.returncode:
        return "bdc compile exit %d: %s" % (r.returncode, r.stderr.strip()[-300:])
    return None if TABLE_NOTE in r.stderr else "the program lacks a lookup table"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bdc", default=os.environ.get("BDC") or os.path.join(REPO, "build", "bdc"))
    ap.add_argument("--target", choices=("cpu", "opencl"), default="cpu")
    ap.add_argument("--gpu-builds", action="store_true")
    args = ap.parse_args()
    passed = failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for case in CASES:
            for fusion in ("none", "op", "block"):
                problem = run_case(args, tmp, case, fusion)
                print("%s  %-11s --fusion %-5s %s" % ("FAIL" if problem else "PASS", case, fusion,
                                                     problem or "matches onnxruntime"))
                failed += problem is not None
                passed += problem is None
            for target in ("cuda", "hip") if args.gpu_builds and CASES[case][1] else ():
                for schedule in ("op", "block"):
                    problem = gpu_build(args, tmp, case, target, schedule)
                    print("%s  %-11s %s/%s build %s" % ("FAIL" if problem else "PASS", case, target,
                                                        schedule, problem or "with its lookups"))
                    failed += problem is not None
                    passed += problem is None
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed or not passed else 0


if __name__ == "__main__":
    sys.exit(main())
