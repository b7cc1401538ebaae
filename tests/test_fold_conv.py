#!/usr/bin/env python3
"""Per-channel maps after a Conv folded into it (src/front/fold_bn.c), against onnxruntime.

Usage: test_fold_conv.py [--bdc PATH] [--fusion op|none] [-v]
  --bdc     the bdc binary (default: $BDC, else <repo>/build/bdc)
  --fusion  bdc compile --fusion mode (default op)
  -v        also print each passing case's max abs error

Each case is a small model built with onnx.helper (weights as initializers, data from a numpy
generator seeded by the case name): a Conv followed by BatchNormalization (with and without a
Conv bias, opsets 9 and 15, grouped and depthwise, a Relu after it, its output a graph output
or not), by Mul or Add with a per-channel or scalar constant on either side, or chains of them;
and the cases that must not fold: a BatchNormalization after no Conv (with the Relu or Clip
after it, which it takes into its epilogue unless its output is also read; before a 1x1 Conv,
that Conv's prologue), a Conv output with
a second reader, constants that broadcast
along the spatial or batch axes, a BatchNormalization whose var + epsilon is negative (its NaN
must survive), a Conv with weights that are a graph input. Also DequantizeLinear of constant
weights before a Conv or MatMul (per-channel int8 with an int32 bias, scalar uint8), which
folds into float weights (infer/elementwise.c). A Pad of zero pads before an AveragePool is
bypassed (front/simplify.c), one of nonzero pads kept. For each case:
  folds    `bdc inspect --json`: node_count must be original_node_count minus the maps the
           case expects folded (so a fold that silently stops happening fails here);
  runs     `bdc compile --werror` and the executable on the sample input; every output is
           compared with onnxruntime's (CPUExecutionProvider) with np.allclose(rtol=1e-4,
           atol=1e-5, equal_nan=True).
Why: ONNX exporters other than PyTorch's keep BatchNormalization nodes (the real-model set is
all PyTorch exports, which fold it themselves), so only these models exercise the rewrite.
One line per case, then `N passed, M failed`; exits 1 if any failed.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zlib

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
RTOL, ATOL = 1e-4, 1e-5
TIMEOUT_S = 120


class Case:
    def __init__(self, name, opset, x_shape, nodes, consts, outputs, folds, inputs=()):
        self.name, self.opset, self.folds = name, opset, folds
        rng = np.random.default_rng(zlib.crc32(name.encode()))
        self.feeds = {"x": rng.standard_normal(x_shape).astype(np.float32)}
        for n, shape in inputs:
            self.feeds[n] = rng.standard_normal(shape).astype(np.float32)
        self.consts = {n: self.weight(f(rng) if callable(f) else f) for n, f in consts.items()}
        self.nodes, self.outputs = nodes, outputs

    @staticmethod
    def weight(a):
        """Float data as float32; integer arrays (quantized weights) keep their dtype."""
        a = np.asarray(a)
        return a.astype(np.float32) if a.dtype.kind == "f" else a

    def model(self):
        graph = helper.make_graph(
            self.nodes, self.name.replace("/", "_"),
            [helper.make_tensor_value_info(n, TensorProto.FLOAT, list(a.shape))
             for n, a in self.feeds.items()],
            [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in self.outputs],
            [numpy_helper.from_array(a, n) for n, a in self.consts.items()])
        opsets = [helper.make_opsetid("", self.opset)]
        m = helper.make_model(graph, opset_imports=opsets, producer_name="test_fold_conv")
        m.ir_version = helper.find_min_ir_version_for(opsets)
        return m


def normal(*shape, scale=1.0, offset=0.0):
    return lambda rng: rng.standard_normal(shape) * scale + offset


def bn_params(m, var_offset=0.5):
    return {"scale": normal(m), "bias": normal(m), "mean": normal(m, scale=0.5),
            "var": lambda rng: rng.uniform(0.0, 2.0, m) + var_offset}


def conv(x, y, bias=True, group=1, pads=(1, 1, 1, 1), strides=(1, 1)):
    ins = [x, "w", "b"] if bias else [x, "w"]
    return helper.make_node("Conv", ins, [y], name="conv", group=group, pads=list(pads),
                            strides=list(strides))


def bn(x, y, opset_attrs=None):
    return helper.make_node("BatchNormalization", [x, "scale", "bias", "mean", "var"], [y],
                            name="bn", epsilon=1e-3, **(opset_attrs or {}))


def cases():
    out = []
    c, m = 5, 8
    w = {"w": normal(m, c, 3, 3, scale=0.3), "b": normal(m)}
    w_nobias = {"w": normal(m, c, 3, 3, scale=0.3)}
    out.append(Case("bn/opset15/bias/relu", 15, (1, c, 9, 11),
                    [conv("x", "c"), bn("c", "n"), helper.make_node("Relu", ["n"], ["y"])],
                    {**w, **bn_params(m)}, ["y"], folds=1))
    out.append(Case("bn/opset9/no-bias/graph-output", 9, (2, c, 7, 6),
                    [conv("x", "c", bias=False), bn("c", "y")],
                    {**w_nobias, **bn_params(m)}, ["y"], folds=1))
    out.append(Case("bn/opset15/stride2", 15, (1, c, 10, 9),
                    [conv("x", "c", strides=(2, 2)), bn("c", "y")],
                    {**w, **bn_params(m)}, ["y"], folds=1))
    out.append(Case("bn/grouped", 15, (1, 6, 8, 8),
                    [conv("x", "c", group=2), bn("c", "y")],
                    {"w": normal(m, 3, 3, 3, scale=0.3), "b": normal(m), **bn_params(m)},
                    ["y"], folds=1))
    out.append(Case("bn/depthwise/relu", 15, (1, m, 12, 12),
                    [conv("x", "c", group=m), bn("c", "n"), helper.make_node("Relu", ["n"], ["y"])],
                    {"w": normal(m, 1, 3, 3), "b": normal(m), **bn_params(m)}, ["y"], folds=1))
    out.append(Case("chain/bn-mul-add", 15, (1, c, 8, 9),
                    [conv("x", "c"), bn("c", "n"),
                     helper.make_node("Mul", ["n", "k"], ["p"]),
                     helper.make_node("Add", ["s", "p"], ["y"])],
                    {**w, **bn_params(m), "k": normal(m, 1, 1), "s": np.array(0.25)},
                    ["y"], folds=3))
    out.append(Case("mul/scalar-left", 13, (1, c, 6, 6),
                    [conv("x", "c"), helper.make_node("Mul", ["k", "c"], ["y"])],
                    {**w, "k": np.array([-1.5])}, ["y"], folds=1))
    out.append(Case("add/channel-rank4", 13, (1, c, 6, 7),
                    [conv("x", "c", bias=False), helper.make_node("Add", ["c", "k"], ["y"])],
                    {**w_nobias, "k": normal(1, m, 1, 1)}, ["y"], folds=1))
    # DequantizeLinear of constant weights folds (a QDQ model's weights: the Conv or MatMul
    # then has constant weights), bit for bit the runtime's (x - zero_point) * scale
    ints = lambda dt, lo, hi, *shape: lambda rng: rng.integers(lo, hi + 1, shape).astype(dt)
    out.append(Case("dq/conv-per-channel-int8-int32-bias", 13, (1, c, 7, 8),
                    [helper.make_node("DequantizeLinear", ["wq", "ws", "wz"], ["w"], axis=0),
                     helper.make_node("DequantizeLinear", ["bq", "bs"], ["b"], axis=0),
                     conv("x", "y")],
                    {"wq": ints(np.int8, -128, 127, m, c, 3, 3), "ws": normal(m, scale=0.01, offset=0.03),
                     "wz": ints(np.int8, -3, 3, m), "bq": ints(np.int32, -3000, 3000, m),
                     "bs": normal(m, scale=1e-4, offset=5e-4)}, ["y"], folds=2))
    # (weights on the left: onnxruntime rewrites DequantizeLinear -> MatMul's right operand into
    # a matrix product that quantizes x too, 0.04 off the spec's result on this case)
    out.append(Case("dq/matmul-uint8-scalar", 13, (1, c, 6, 6),
                    [helper.make_node("DequantizeLinear", ["wq", "ws", "wz"], ["w"]),
                     helper.make_node("MatMul", ["w", "x"], ["y"])],
                    {"wq": ints(np.uint8, 0, 255, 7, 6), "ws": np.array(0.02),
                     "wz": np.array(128, dtype=np.uint8)}, ["y"], folds=1))
    # must not fold
    out.append(Case("keep/second-reader", 15, (1, c, 6, 6),
                    [conv("x", "c"), bn("c", "n"), helper.make_node("Add", ["c", "n"], ["y"])],
                    {**w, **bn_params(m)}, ["y"], folds=0))
    out.append(Case("keep/conv-output-is-graph-output", 15, (1, c, 6, 6),
                    [conv("x", "c"), bn("c", "y")], {**w, **bn_params(m)}, ["c", "y"], folds=0))
    out.append(Case("keep/mul-spatial", 13, (1, c, 6, 6),
                    [conv("x", "c"), helper.make_node("Mul", ["c", "k"], ["y"])],
                    {**w, "k": normal(1, 1, 6, 6)}, ["y"], folds=0))
    out.append(Case("keep/add-batch-broadcast", 13, (1, c, 6, 6),
                    [conv("x", "c"), helper.make_node("Add", ["c", "k"], ["y"])],
                    {**w, "k": normal(2, m, 1, 1)}, ["y"], folds=0))
    # a BatchNormalization after no Conv (DenseNet's, on a Concat) stays, and takes the Relu or
    # Clip after it into its own epilogue (fuse.c)
    out.append(Case("keep/bn-after-concat-relu", 15, (1, c, 7, 9),
                    [helper.make_node("Concat", ["x", "x"], ["cc"], axis=1),
                     helper.make_node("BatchNormalization", ["cc", "scale", "bias", "mean", "var"],
                                      ["n"], epsilon=1e-3),
                     helper.make_node("Relu", ["n"], ["y"])],
                    bn_params(2 * c), ["y"], folds=0))
    # and before a 1x1 Conv, that Conv's prologue (fuse.c: the kernel applies it as it packs the
    # input, on the GEMM past 196 pixels, on the 16-lane direct kernel below)
    for hw, relu in ((16, True), (7, False)):
        out.append(Case("keep/bn-prologue-1x1-%dx%d%s" % (hw, hw, "-relu" if relu else ""), 15,
                        (1, c, hw, hw),
                        [helper.make_node("Concat", ["x", "x"], ["cc"], axis=1),
                         helper.make_node("BatchNormalization", ["cc", "scale", "bias", "mean", "var"],
                                          ["n"], epsilon=1e-3)] +
                        ([helper.make_node("Relu", ["n"], ["r"])] if relu else []) +
                        [helper.make_node("Conv", ["r" if relu else "n", "w1", "b"], ["y"])],
                        {**bn_params(2 * c), "w1": normal(16, 2 * c, 1, 1, scale=0.3),
                         "b": normal(16)}, ["y"], folds=0))
    # a Pad of zero pads (torch.onnx's before DenseNet's average pools) is bypassed; others stay
    for pads, folds in (([0] * 8, 1), ([0, 0, 1, 0, 0, 0, 0, 1], 0)):
        out.append(Case("%s/pad-%s-avgpool" % ("pad" if folds else "keep", "zero" if folds else "1"),
                        15, (1, c, 8, 8),
                        [helper.make_node("Pad", ["x", "pads"], ["p"], mode="constant"),
                         helper.make_node("AveragePool", ["p"], ["y"], kernel_shape=[2, 2],
                                          strides=[2, 2])],
                        {"pads": np.array(pads, dtype=np.int64)}, ["y"], folds=folds))
    out.append(Case("keep/bn-clip-graph-output", 15, (1, c, 5, 5),
                    [helper.make_node("BatchNormalization", ["x", "scale", "bias", "mean", "var"],
                                      ["n"], epsilon=1e-3),
                     helper.make_node("Clip", ["n", "lo", "hi"], ["y"])],
                    {**bn_params(c), "lo": np.array(0.0), "hi": np.array(0.5)}, ["n", "y"],
                    folds=0))
    out.append(Case("keep/bn-negative-var", 15, (1, c, 6, 6),
                    [conv("x", "c"), bn("c", "y")], {**w, **bn_params(m, var_offset=-3.0)},
                    ["y"], folds=0))
    out.append(Case("keep/weights-are-input", 15, (1, c, 6, 6),
                    [conv("x", "c"), bn("c", "y")],
                    {"b": normal(m), **bn_params(m)}, ["y"], folds=0,
                    inputs=[("w", (m, c, 3, 3))]))
    return out


def first_line(text):
    lines = [l for l in (text or "").splitlines() if l.strip()]
    return lines[0][:300] if lines else ""


def run_case(case, bdc, fusion):
    """Returns (ok, detail)."""
    tmp = tempfile.mkdtemp(prefix="bdc-fold-conv-")
    try:
        src = os.path.join(tmp, "model.onnx")
        with open(src, "wb") as f:
            f.write(case.model().SerializeToString())
        r = subprocess.run([bdc, "inspect", src, "--json"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, timeout=TIMEOUT_S)
        if r.returncode != 0:
            return False, "bdc inspect exit %d: %s" % (r.returncode, first_line(r.stderr))
        info = json.loads(r.stdout)
        folded = info["original_node_count"] - info["node_count"]
        if folded != case.folds:
            return False, "%d node(s) folded, expected %d" % (folded, case.folds)
        exe = os.path.join(tmp, "model")
        r = subprocess.run([bdc, "compile", src, "-o", exe, "--werror", "-q", "--fusion", fusion],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           timeout=TIMEOUT_S)
        if r.returncode != 0:
            return False, "bdc compile exit %d: %s" % (r.returncode, first_line(r.stderr))
        r = subprocess.run([exe, "--info", "--json"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, timeout=TIMEOUT_S)
        files = {o["name"]: o["file"] for o in json.loads(r.stdout)["outputs"]}
        args = []
        for n, a in case.feeds.items():
            p = os.path.join(tmp, "in_%s.npy" % n)
            np.save(p, a)
            args += ["--input", "%s=%s" % (n, p)]
        out = os.path.join(tmp, "out")
        os.mkdir(out)
        r = subprocess.run([exe] + args + ["--output-dir", out], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, timeout=TIMEOUT_S)
        if r.returncode != 0:
            return False, "run exit %d: %s" % (r.returncode, first_line(r.stderr))
        sess = ort.InferenceSession(case.model().SerializeToString(),
                                    providers=["CPUExecutionProvider"])
        ref = dict(zip(case.outputs, sess.run(case.outputs, case.feeds)))
        worst = 0.0
        for name in case.outputs:
            got = np.load(os.path.join(out, files[name]))
            want = ref[name]
            if got.shape != want.shape or got.dtype != want.dtype:
                return False, "output %s: %s %s, expected %s %s" % (
                    name, got.dtype, got.shape, want.dtype, want.shape)
            if not np.allclose(got, want, rtol=RTOL, atol=ATOL, equal_nan=True):
                bad = np.abs(np.nan_to_num(got - want, nan=np.inf))
                i = np.unravel_index(np.argmax(bad), bad.shape)
                return False, "output %s[%s]: %r, onnxruntime %r" % (
                    name, ",".join(map(str, i)), float(got[i]), float(want[i]))
            both = np.isfinite(got) & np.isfinite(want)
            if both.any():
                worst = max(worst, float(np.max(np.abs(got - want)[both])))
        return True, "max abs err %.2e" % worst
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def run_cases(cases, run, verbose):
    """Runs run(case) -> (ok, detail) on every case: one line each, then `N passed, M failed`;
    the exit status (1 if any failed or none ran)."""
    passed = failed = 0
    for case in cases:
        try:
            ok, detail = run(case)
        except Exception as e:  # noqa: BLE001 - a broken case fails alone, with its reason
            ok, detail = False, "%s: %s" % (type(e).__name__, e)
        if ok:
            passed += 1
            print("ok %s%s" % (case.name, " (%s)" % detail if verbose else ""))
        else:
            failed += 1
            print("FAIL %s: %s" % (case.name, detail))
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed or not passed else 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bdc", default=os.environ.get("BDC", os.path.join(REPO, "build", "bdc")))
    ap.add_argument("--fusion", default="op", choices=["op", "none"])
    ap.add_argument("-v", action="store_true")
    args = ap.parse_args()
    return run_cases(cases(), lambda case: run_case(case, args.bdc, args.fusion), args.v)


if __name__ == "__main__":
    sys.exit(main())
