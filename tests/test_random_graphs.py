#!/usr/bin/env python3
"""Randomized differential test: generated small graphs, every fusion x schedule mode, against
onnxruntime.

Usage: test_random_graphs.py [--bdc PATH] [--seeds N] [--first S] [-j N] [--keep DIR] [-v]

Each seed builds one graph with onnx.helper (fixed numpy seed, so a seed is a reproducible
case), from one of two families:
  cnn        an NCHW tensor through a random sequence of 3x3 / 1x1 / depthwise / strided
             convolutions, ReLU, SiLU (x * sigmoid x), max and average pooling, branches that
             fork from one tensor and join by Add or Concat, residual Adds to an earlier tensor,
             broadcasting Muls by per-channel constants, squeeze-excitation (global pool, 1x1
             convs, sigmoid, broadcast Mul), channel reductions, Inception-like sibling convs of
             one input (the horizontal fusion's candidates, alike and not), DenseNet blocks
             (each layer reading the concat of the block's features so far, some a slice of it
             that leaves the input out: the concat chains placed in one container; through
             BatchNormalization and Relu, which a 1x1 convolution may take as its prologue);
  attention  a [1, S, D] sequence through multi-head self-attention (Q/K/V projections with
             bias, Reshape + Transpose into heads, Q K^T / sqrt(d), Softmax, x V, back), a
             GELU MLP, residual Adds and layer norms written out of ReduceMean/Sub/Pow/Sqrt/Div
             (so reshapes, transposes, reductions and broadcasts meet the analysis).
Every graph is compiled with `bdc compile --fusion F --schedule S` for F in none, op, block and
S in op, block, run on one random input, and compared with onnxruntime (rtol 1e-3, atol 1e-4);
block-schedule executables also run once in the runtime's schedule test mode
(BDRT_SCHEDULE_SEED: a random topological order, NaN-poisoned intermediates). Prints one line per
seed and mode that fails, then `N passed, M failed` (a seed passes when all its modes do).
"""

import argparse
import os
import subprocess
import sys
import tempfile
from multiprocessing.pool import ThreadPool

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
MODES = [(f, s) for f in ("none", "op", "block") for s in ("op", "block")]
RTOL, ATOL = 1e-3, 1e-4


class Builder:
    def __init__(self, rng):
        self.rng = rng
        self.nodes, self.inits, self.n = [], [], 0

    def name(self, base):
        self.n += 1
        return "%s_%d" % (base, self.n)

    def const(self, arr):
        nm = self.name("c")
        self.inits.append(numpy_helper.from_array(np.asarray(arr), nm))
        return nm

    def op(self, op_type, inputs, **attrs):
        out = self.name(op_type.lower())
        self.nodes.append(helper.make_node(op_type, inputs, [out], name=out, **attrs))
        return out

    def weights(self, *shape, scale=None):
        fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else shape[0]
        s = scale if scale is not None else 1.0 / np.sqrt(max(fan_in, 1))
        return self.const((self.rng.standard_normal(shape) * s).astype(np.float32))


def cnn_graph(b, rng):
    c, h = int(rng.choice([8, 16])), int(rng.choice([12, 16, 20]))
    x = "x"
    shapes = {x: (c, h)}
    cur = x
    history = [x]
    for _ in range(int(rng.integers(4, 9))):
        c, h = shapes[cur]
        kind = rng.choice(["conv3", "conv1", "dw", "stride", "pool", "branch_add",
                           "branch_concat", "residual", "se", "silu", "scale", "reduce",
                           "inception", "dense"])
        if kind in ("conv3", "conv1", "dw", "stride"):
            k = 1 if kind == "conv1" else 3
            groups = c if kind == "dw" else 1
            m = c if kind == "dw" else int(rng.choice([c, 2 * c if c < 32 else c, max(4, c // 2)]))
            stride = 2 if kind == "stride" else 1
            w = b.weights(m, c // groups, k, k)
            bias = b.weights(m, scale=0.1)
            y = b.op("Conv", [cur, w, bias], kernel_shape=[k, k], pads=[k // 2] * 4,
                     strides=[stride, stride], group=groups)
            if rng.random() < 0.7:
                y = b.op("Relu", [y])
            shapes[y] = (m, (h + 2 * (k // 2) - k) // stride + 1)
        elif kind == "pool":
            if rng.random() < 0.5:
                y = b.op("MaxPool", [cur], kernel_shape=[3, 3], pads=[1, 1, 1, 1])
            else:
                y = b.op("AveragePool", [cur], kernel_shape=[2, 2], strides=[2, 2])
                h = h // 2
            shapes[y] = (c, h)
        elif kind in ("branch_add", "branch_concat"):
            outs = []
            for k in (1, 3):
                w = b.weights(c, c, k, k)
                outs.append(b.op("Relu", [b.op("Conv", [cur, w], kernel_shape=[k, k],
                                                  pads=[k // 2] * 4)]))
            if kind == "branch_add":
                y = b.op("Add", outs)
                shapes[y] = (c, h)
            else:
                y = b.op("Concat", outs, axis=1)
                shapes[y] = (2 * c, h)
        elif kind == "inception":
            # sibling convs of one input: 1x1s (and a 3x3) with or without bias, each followed
            # by Relu, LeakyRelu or nothing, some by a 3x3 conv; those alike are stacked
            # (--fusion block), the others must stay apart
            outs, total = [], 0
            with_bias = rng.random() < 0.5
            for _ in range(int(rng.integers(2, 5))):
                k = 3 if rng.random() < 0.2 else 1
                m = int(rng.choice([4, 8, c]))
                ins = [cur, b.weights(m, c, k, k)]
                if with_bias or rng.random() < 0.1:
                    ins.append(b.weights(m, scale=0.1))
                y = b.op("Conv", ins, kernel_shape=[k, k], pads=[k // 2] * 4)
                act = rng.choice(["Relu", "Relu", "Relu", "LeakyRelu", "none"])
                if act == "LeakyRelu":
                    y = b.op("LeakyRelu", [y], alpha=0.1)
                elif act == "Relu":
                    y = b.op("Relu", [y])
                if rng.random() < 0.4:
                    y = b.op("Conv", [y, b.weights(m, m, 3, 3)], kernel_shape=[3, 3], pads=[1] * 4)
                outs.append(y)
                total += m
            y = b.op("Concat", outs, axis=1)
            shapes[y] = (total, h)
        elif kind == "dense":
            # a DenseNet block: layer k reads the concat of the input and the features so far
            # (one input alone for the first), through BatchNormalization and Relu; a layer may
            # instead read the features without the input (a slice of the last concat at a
            # shift), and the block ends with the concat of all
            feats, g = [cur], int(rng.choice([4, 8]))
            for _ in range(int(rng.integers(2, 5))):
                ins = feats if rng.random() < 0.8 or len(feats) < 2 else feats[1:]
                cat = b.op("Concat", ins, axis=1)
                cc = sum(shapes[f][0] for f in ins)
                bn = b.op("BatchNormalization", [cat, b.weights(cc, scale=1.0), b.weights(cc, scale=0.1),
                                                 b.weights(cc, scale=0.1),
                                                 b.const((rng.random(cc) + 0.5).astype(np.float32))])
                k = int(rng.choice([1, 3]))  # 1x1 of more than 196 pixels: the BN in its prologue
                act = b.op("Relu", [bn]) if rng.random() < 0.8 else bn
                f = b.op("Conv", [act, b.weights(g, cc, k, k)], kernel_shape=[k, k], pads=[k // 2] * 4)
                shapes[f] = (g, h)
                feats.append(f)
            y = b.op("Concat", feats, axis=1)
            shapes[y] = (c + g * (len(feats) - 1), h)
        elif kind == "residual":
            same = [t for t in history if shapes[t] == (c, h) and t != cur]
            if not same:
                continue
            y = b.op("Add", [cur, same[int(rng.integers(len(same)))]])
            shapes[y] = (c, h)
        elif kind == "se":
            s = b.op("GlobalAveragePool", [cur])
            r = max(2, c // 4)
            s = b.op("Relu", [b.op("Conv", [s, b.weights(r, c, 1, 1)], kernel_shape=[1, 1])])
            s = b.op("Sigmoid", [b.op("Conv", [s, b.weights(c, r, 1, 1)], kernel_shape=[1, 1])])
            y = b.op("Mul", [cur, s])
            shapes[y] = (c, h)
        elif kind == "silu":
            y = b.op("Mul", [cur, b.op("Sigmoid", [cur])])
            shapes[y] = (c, h)
        elif kind == "scale":
            k = b.const((rng.random((c, 1, 1)) + 0.5).astype(np.float32))
            y = b.op("Add", [b.op("Mul", [cur, k]), b.weights(c, 1, 1, scale=0.1)])
            shapes[y] = (c, h)
        else:  # reduce over channels, broadcast back
            m = b.op("ReduceMean", [cur], axes=[1], keepdims=1)
            y = b.op("Sub", [cur, m])
            shapes[y] = (c, h)
        cur = y
        history.append(y)
    c0, h0 = shapes[x]
    return ([helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, c0, h0, h0])],
            [helper.make_tensor_value_info(cur, TensorProto.FLOAT, None)],
            {x: rng.standard_normal((1, c0, h0, h0)).astype(np.float32)})


def layer_norm(b, x, d):
    mean = b.op("ReduceMean", [x], axes=[-1], keepdims=1)
    xc = b.op("Sub", [x, mean])
    var = b.op("ReduceMean", [b.op("Pow", [xc, b.const(np.float32(2.0))])], axes=[-1], keepdims=1)
    den = b.op("Sqrt", [b.op("Add", [var, b.const(np.float32(1e-5))])])
    return b.op("Add", [b.op("Mul", [b.op("Div", [xc, den]), b.weights(d, scale=1.0)]),
                        b.weights(d, scale=0.1)])


def attention_graph(b, rng):
    s, heads, dh = int(rng.choice([8, 16, 24])), int(rng.choice([1, 2, 4])), int(rng.choice([8, 16]))
    d = heads * dh
    x = "x"
    cur = x
    for _ in range(int(rng.integers(1, 3))):
        t = layer_norm(b, cur, d) if rng.random() < 0.5 else cur

        def heads_of(v):
            r = b.op("Reshape", [v, b.const(np.array([1, s, heads, dh], np.int64))])
            return b.op("Transpose", [r], perm=[0, 2, 1, 3])

        q, k, v = [heads_of(b.op("Add", [b.op("MatMul", [t, b.weights(d, d)]), b.weights(d, scale=0.1)]))
                   for _ in range(3)]
        kt = b.op("Transpose", [k], perm=[0, 1, 3, 2])
        sc = b.op("Div", [b.op("MatMul", [q, kt]), b.const(np.float32(np.sqrt(dh)))])
        p = b.op("Softmax", [sc], axis=-1)
        o = b.op("Transpose", [b.op("MatMul", [p, v])], perm=[0, 2, 1, 3])
        o = b.op("Reshape", [o, b.const(np.array([1, s, d], np.int64))])
        o = b.op("Add", [b.op("MatMul", [o, b.weights(d, d)]), b.weights(d, scale=0.1)])
        cur = b.op("Add", [cur, o])
        if rng.random() < 0.7:  # GELU MLP
            t = layer_norm(b, cur, d)
            hmid = b.op("Add", [b.op("MatMul", [t, b.weights(d, 2 * d)]), b.weights(2 * d, scale=0.1)])
            one_plus_erf = b.op("Add", [b.op("Erf", [b.op("Div", [hmid, b.const(np.float32(np.sqrt(2)))])]),
                                        b.const(np.float32(1.0))])
            # both spellings that fuse into the epilogue, and a near miss that must not
            spelling = rng.choice(["hugging_face", "torch", "not_gelu"])
            if spelling == "hugging_face":  # x * 0.5 * (1 + erf(x / sqrt 2))
                g = b.op("Mul", [b.op("Mul", [hmid, b.const(np.float32(0.5))]), one_plus_erf])
            else:  # torch.onnx: (x * (1 + erf(x / sqrt 2))) * 0.5, or * 0.25
                half = 0.5 if spelling == "torch" else 0.25
                g = b.op("Mul", [b.op("Mul", [hmid, one_plus_erf]), b.const(np.float32(half))])
            cur = b.op("Add", [cur, b.op("Add", [b.op("MatMul", [g, b.weights(2 * d, d)]),
                                                 b.weights(d, scale=0.1)])])
    return ([helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, s, d])],
            [helper.make_tensor_value_info(cur, TensorProto.FLOAT, None)],
            {x: rng.standard_normal((1, s, d)).astype(np.float32)})


def make_case(seed):
    rng = np.random.default_rng(seed)
    b = Builder(rng)
    family = "cnn" if seed % 2 == 0 else "attention"
    inputs, outputs, feeds = (cnn_graph if family == "cnn" else attention_graph)(b, rng)
    graph = helper.make_graph(b.nodes, "random_%d" % seed, inputs, outputs, b.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name="test_random_graphs")
    model.ir_version = 8
    model = onnx.shape_inference.infer_shapes(model)
    onnx.checker.check_model(model)
    return family, model, feeds


def run_seed(args, seed):
    """Returns (seed, family, list of failure lines)."""
    family, model, feeds = make_case(seed)
    problems = []
    with tempfile.TemporaryDirectory(prefix="bdc-random-") as tmp:
        path = os.path.join(tmp, "model.onnx")
        onnx.save(model, path)
        if args.keep:
            onnx.save(model, os.path.join(args.keep, "random_%d.onnx" % seed))
        sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        want = sess.run(None, feeds)[0]
        inp = os.path.join(tmp, "x.npy")
        np.save(inp, feeds["x"])
        for fusion, schedule in MODES:
            tag = "%s/%s" % (fusion, schedule)
            exe = os.path.join(tmp, "model_%s_%s" % (fusion, schedule))
            r = subprocess.run([args.bdc, "compile", path, "-o", exe, "--werror", "-q",
                                "--fusion", fusion, "--schedule", schedule],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               errors="replace", timeout=600)
            if r.returncode != 0:
                problems.append("%s: compile exit %d: %s" % (tag, r.returncode,
                                                            (r.stderr.strip().splitlines() or ["?"])[-1]))
                continue
            runs = [None] + ([str(seed + 1)] if schedule == "block" else [])
            for check in runs:
                env = dict(os.environ)
                if check:
                    env["BDRT_SCHEDULE_SEED"] = check
                out = os.path.join(tmp, "out")
                os.makedirs(out, exist_ok=True)
                r = subprocess.run([exe, "--input", "x=" + inp, "--output-dir", out],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                   errors="replace", timeout=300, env=env)
                what = tag + (" (schedule test mode)" if check else "")
                if r.returncode != 0:
                    problems.append("%s: run exit %d: %s" % (what, r.returncode, r.stderr.strip()))
                    continue
                files = [f for f in os.listdir(out) if f.endswith(".npy")]
                got = np.load(os.path.join(out, files[0]))
                if got.shape != want.shape or not np.allclose(got, want, rtol=RTOL, atol=ATOL):
                    err = float(np.max(np.abs(got.astype(np.float64) - want))) \
                        if got.shape == want.shape else float("inf")
                    problems.append("%s: max abs error %.3g" % (what, err))
    return seed, family, problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bdc", default=os.environ.get("BDC") or os.path.join(REPO, "build", "bdc"))
    ap.add_argument("--seeds", type=int, default=8, help="how many seeds (default 8)")
    ap.add_argument("--first", type=int, default=0, help="first seed (default 0)")
    ap.add_argument("-j", dest="jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--keep", metavar="DIR", help="also save every generated model in DIR")
    ap.add_argument("-v", dest="verbose", action="store_true", help="a line per passing seed too")
    args = ap.parse_args()
    if not os.access(args.bdc, os.X_OK):
        sys.stderr.write("test_random_graphs: bdc not found: %s\n" % args.bdc)
        return 1
    if args.keep:
        os.makedirs(args.keep, exist_ok=True)
    seeds = range(args.first, args.first + args.seeds)
    passed = failed = 0
    with ThreadPool(max(1, args.jobs)) as pool:
        for seed, family, problems in pool.imap(lambda s: run_seed(args, s), seeds):
            if problems:
                failed += 1
                print("FAIL seed %d (%s)" % (seed, family))
                for p in problems:
                    print("     " + p)
            else:
                passed += 1
                if args.verbose:
                    print("ok   seed %d (%s): %d modes" % (seed, family, len(MODES)))
            sys.stdout.flush()
    print("%d passed, %d failed" % (passed, failed))
    return 0 if failed == 0 and passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
