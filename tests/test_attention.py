#!/usr/bin/env python3
"""Attention fused per band of rows (src/fuse/attention.c), against onnxruntime.

Usage: test_attention.py [--bdc PATH] [--target cpu|opencl] [--seeds N] [-v]
  --bdc     the bdc binary (default: $BDC, else <repo>/build/bdc)
  --target  cpu (default) or opencl (the GPU printer's ATTENTION body, on PoCL in the tests)
  --seeds   random block orders per case in the runtime's schedule test mode (cpu; default 3)
  -v        also print each passing case's detail

Each case is a small model built with onnx.helper around Softmax(score(A B)) V, with the shapes
and score expressions the real models leave out: batch 2 with a mask per batch, rows and
columns of the scores that differ, a V of other width, no batch dims at all, GPT-2's Where over
a boolean causal mask, no score expression, several heads whose bands split unevenly. For each:
  fused  `bdc compile --fusion block --dump=fuse`: how many softmaxes went into an ATTENTION nest
         must be what the case expects, so a fusion that silently stops happening fails here, and
         so does one where it must not (a softmax not along the last dim, a LogSoftmax, scores
         that a graph output also reads);
  runs   the executable under --schedule block (on the cpu also in the schedule test mode:
         random block orders, intermediates NaN-poisoned) and --schedule op, every output
         compared with onnxruntime's with np.allclose(rtol=1e-4, atol=1e-5).
One line per case, then `N passed, M failed`; exits 1 if any failed.
"""

import argparse
import os
import sys
import zlib

import numpy as np
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from test_fold_conv import REPO, run_cases  # noqa: E402
from test_horizontal import run_fused  # noqa: E402


class Case:
    """Named inputs (float32, random), constants and nodes; outputs as named."""

    def __init__(self, name, fused):
        self.name, self.fused = name, fused
        self.rng = np.random.default_rng(zlib.crc32(name.encode()))
        self.feeds, self.consts, self.nodes, self.outputs, self.n = {}, {}, [], [], 0

    def input(self, name, shape):
        self.feeds[name] = self.rng.standard_normal(shape).astype(np.float32)
        return name

    def const(self, a):
        self.n += 1
        name = "k%d" % self.n
        self.consts[name] = np.asarray(a)
        return name

    def op(self, op_type, ins, name=None, **attrs):
        self.n += 1
        y = name or "%s%d" % (op_type.lower(), self.n)
        self.nodes.append(helper.make_node(op_type, ins, [y], name=y, **attrs))
        return y

    def attention(self, q, k, v, score=None, axis=-1, softmax="Softmax"):
        """softmax(score(q k^T)) v, score(s) building the score expression's nodes."""
        r = len(self.feeds[k].shape)
        perm = list(range(r - 2)) + [r - 1, r - 2]
        s = self.op("MatMul", [q, self.op("Transpose", [k], perm=perm)])
        p = self.op(softmax, [score(s) if score else s], name="softmax%d" % (self.n + 1), axis=axis)
        return self.op("MatMul", [p, v])

    def model(self):
        graph = helper.make_graph(
            self.nodes, self.name.replace("/", "_"),
            [helper.make_tensor_value_info(n, TensorProto.FLOAT, list(a.shape)) for n, a in self.feeds.items()],
            [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in self.outputs],
            [numpy_helper.from_array(a, n) for n, a in self.consts.items()])
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="test_attention")
        m.ir_version = 8
        return m


def cases():
    out = []
    # BERT's: Div by sqrt(d), then a mask broadcast over heads and rows
    c = Case("bert-mask", fused=1)
    q, k, v = c.input("q", (1, 2, 16, 8)), c.input("k", (1, 2, 16, 8)), c.input("v", (1, 2, 16, 8))
    mask = c.const(np.where(np.arange(16) < 11, 0, -1e4).astype(np.float32).reshape(1, 1, 1, 16))
    c.outputs.append(c.attention(q, k, v, lambda s: c.op("Add", [c.op("Div", [s, c.const(np.float32(np.sqrt(8)))]), mask])))
    out.append(c)
    # batch 2, a mask per batch (an input), 20 rows of 28 scores, V 12 wide
    c = Case("batch2-mask-per-batch", fused=1)
    q, k, v = c.input("q", (2, 3, 20, 8)), c.input("k", (2, 3, 28, 8)), c.input("v", (2, 3, 28, 12))
    mask = c.input("mask", (2, 1, 1, 28))
    c.feeds["mask"] = np.where(c.rng.random((2, 1, 1, 28)) < 0.3, -1e4, 0).astype(np.float32)
    c.outputs.append(c.attention(q, k, v, lambda s: c.op("Add", [s, mask])))
    out.append(c)
    # no batch dims; a Mul by a scale
    c = Case("rank2-mul", fused=1)
    q, k, v = c.input("q", (40, 16)), c.input("k", (40, 16)), c.input("v", (40, 16))
    c.outputs.append(c.attention(q, k, v, lambda s: c.op("Mul", [s, c.const(np.float32(0.25))])))
    out.append(c)
    # GPT-2's: Where over a boolean causal mask (constant), scaled scores elsewhere
    c = Case("gpt2-causal-where", fused=1)
    q, k, v = c.input("q", (1, 4, 24, 8)), c.input("k", (1, 4, 24, 8)), c.input("v", (1, 4, 24, 8))
    causal = c.const(np.tril(np.ones((24, 24), bool)).reshape(1, 1, 24, 24))
    c.outputs.append(c.attention(q, k, v, lambda s: c.op(
        "Where", [causal, c.op("Mul", [s, c.const(np.float32(0.35))]), c.const(np.float32(-1e4))])))
    out.append(c)
    # ViT's: no score expression, rank 3; 197 rows split into uneven bands on the cpu
    c = Case("vit-no-score", fused=1)
    q, k, v = c.input("q", (3, 197, 16)), c.input("k", (3, 197, 16)), c.input("v", (3, 197, 16))
    c.outputs.append(c.attention(q, k, v))
    out.append(c)
    # two layers, the second reading the first's output as its queries
    c = Case("two-layers", fused=2)
    q, k, v = c.input("q", (1, 2, 12, 8)), c.input("k", (1, 2, 12, 8)), c.input("v", (1, 2, 12, 8))
    c.outputs.append(c.attention(c.attention(q, k, v), k, v))
    out.append(c)
    # must not fuse: a softmax not along the last dim, a LogSoftmax, scores a graph output reads
    c = Case("keep/softmax-axis", fused=0)
    q, k, v = c.input("q", (1, 2, 12, 8)), c.input("k", (1, 2, 12, 8)), c.input("v", (1, 2, 12, 8))
    c.outputs.append(c.attention(q, k, v, axis=-2))
    out.append(c)
    c = Case("keep/log-softmax", fused=0)
    q, k, v = c.input("q", (1, 2, 12, 8)), c.input("k", (1, 2, 12, 8)), c.input("v", (1, 2, 12, 8))
    c.outputs.append(c.attention(q, k, v, softmax="LogSoftmax"))
    out.append(c)
    c = Case("keep/scores-an-output", fused=0)
    q, k, v = c.input("q", (1, 2, 12, 8)), c.input("k", (1, 2, 12, 8)), c.input("v", (1, 2, 12, 8))
    scores = []
    c.outputs.append(c.attention(q, k, v, lambda s: scores.append(s) or c.op("Mul", [s, c.const(np.float32(0.5))])))
    c.outputs += scores
    out.append(c)
    return out


def run_case(case, bdc, target, seeds):
    """Returns (ok, detail). The schedule test mode's seeds are the CPU runtime's."""
    return run_fused(case, bdc, ["--target", target], r"^fusion: fused 'softmax\d+' into .*: attention",
                     case.fused, "softmax(es) fused into attention", seeds if target == "cpu" else 0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bdc", default=os.environ.get("BDC", os.path.join(REPO, "build", "bdc")))
    ap.add_argument("--target", default="cpu", choices=["cpu", "opencl"])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("-v", action="store_true")
    args = ap.parse_args()
    return run_cases(cases(), lambda case: run_case(case, args.bdc, args.target, args.seeds), args.v)


if __name__ == "__main__":
    sys.exit(main())
