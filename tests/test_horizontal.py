#!/usr/bin/env python3
"""Horizontal fusion of sibling convolutions (src/fuse/siblings.c), against onnxruntime.

Usage: test_horizontal.py [--bdc PATH] [--seeds N] [-v]
  --bdc    the bdc binary (default: $BDC, else <repo>/build/bdc)
  --seeds  random block orders per case in the runtime's schedule test mode (default 3)
  -v       also print each passing case's max abs error

Each case is a small model built with onnx.helper: convolutions that read one tensor, each
followed by an activation or not, their outputs read by concats, further convs and graph
outputs. For each case:
  stacks  `bdc compile --fusion block --dump=fuse`: the number of convs stacked into another
          ("fused ... horizontal") must be what the case expects (compiled with
          --tile-threads 16, so the wide case's stacked conv is cut along its channels), so a stacking that silently
          stops happening, or one that happens where it must not (another activation, another
          window, an output the caller reads, batch 2), fails here;
  runs    the executable under --fusion block with --schedule block (also in the runtime's
          schedule test mode: random block orders with NaN-poisoned intermediates, which a
          missing dependency on a stacked output's slice would turn into a wrong number) and
          --schedule op; every output compared with onnxruntime's with np.allclose(rtol=1e-4,
          atol=1e-5).
One line per case, then `N passed, M failed`; exits 1 if any failed.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zlib

import numpy as np
import onnxruntime as ort
from onnx import helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
# the model builder (Case.model) and helpers of the fold tests, with their tolerances
from test_fold_conv import ATOL, REPO, RTOL, TIMEOUT_S, first_line, run_cases  # noqa: E402
from test_fold_conv import Case as FoldCase  # noqa: E402


class Case(FoldCase):
    """A graph of x built conv by conv (FoldCase.model writes it out, at opset 17)."""

    def __init__(self, name, x_shape, stacks):
        self.name, self.stacks, self.opset = name, stacks, 17
        self.rng = np.random.default_rng(zlib.crc32(name.encode()))
        self.feeds = {"x": self.rng.standard_normal(x_shape).astype(np.float32)}
        self.c = x_shape[1]
        self.nodes, self.consts, self.outputs, self.n = [], {}, [], 0

    def fresh(self, base):
        self.n += 1
        return "%s%d" % (base, self.n)

    def const(self, a):
        n = self.fresh("k")
        self.consts[n] = np.asarray(a, np.float32)
        return n

    def conv(self, x, c, m, k=1, bias=True, strides=(1, 1), act="Relu", alpha=0.1):
        ins = [x, self.const(self.rng.standard_normal((m, c, k, k)) / np.sqrt(c * k * k))]
        if bias:
            ins.append(self.const(self.rng.standard_normal(m) * 0.1))
        y = self.fresh("conv")
        self.nodes.append(helper.make_node("Conv", ins, [y], name=y, pads=[k // 2] * 4,
                                           strides=list(strides)))
        if act == "LeakyRelu":
            a = self.fresh("act")
            self.nodes.append(helper.make_node("LeakyRelu", [y], [a], name=a, alpha=alpha))
            return a
        if act:
            a = self.fresh("act")
            self.nodes.append(helper.make_node(act, [y], [a], name=a))
            return a
        return y

    def op(self, op_type, ins, **attrs):
        y = self.fresh(op_type.lower())
        self.nodes.append(helper.make_node(op_type, ins, [y], name=y, **attrs))
        return y


def cases():
    out = []
    # an Inception block: three 1x1 siblings (the first straight into the Concat, which
    # keeps it apart: its copy costs more than rereading the input), a 3x3 conv after two
    c = Case("inception", (1, 16, 12, 12), stacks=1)
    a = c.conv("x", 16, 32)
    b = c.conv(c.conv("x", 16, 8), 8, 16, k=3)
    d = c.conv(c.conv("x", 16, 4), 4, 8, k=3)
    p = c.op("MaxPool", ["x"], kernel_shape=[3, 3], pads=[1] * 4)
    c.outputs.append(c.op("Concat", [a, b, d, c.conv(p, 16, 8)], axis=1))
    out.append(c)
    # a 1x1 sibling into the Concat, small against its wide input: stacked, the copy stays
    c = Case("inception/small-part", (1, 48, 10, 10), stacks=2)
    a = c.conv("x", 48, 8)
    b = c.conv(c.conv("x", 48, 16), 16, 16, k=3)
    d = c.conv(c.conv("x", 48, 8), 8, 8, k=3)
    c.outputs.append(c.op("Concat", [a, b, d], axis=1))
    out.append(c)
    # wide siblings, the stacked conv cut into blocks along its channels: a slice's readers
    # need only the blocks of their channels (a wrong offset there reads unwritten NaN)
    c = Case("wide", (1, 64, 7, 7), stacks=2)
    ys = [c.conv("x", 64, 256) for _ in range(3)]
    c.outputs += [c.conv(ys[2], 256, 16, k=3, act=None), c.op("Add", [ys[0], ys[1]])]
    out.append(c)
    # two stacks: Relu siblings and LeakyRelu siblings; a third LeakyRelu with another slope
    c = Case("two-activations", (1, 8, 9, 11), stacks=2)
    ys = [c.conv("x", 8, m, act=act, alpha=al) for m, act, al in
          [(8, "Relu", 0), (16, "LeakyRelu", 0.1), (8, "Relu", 0), (8, "LeakyRelu", 0.1),
           (4, "LeakyRelu", 0.2)]]
    c.outputs.append(c.op("Concat", [c.conv(y, y_c, 8, k=3, act=None) for y, y_c in
                                     zip(ys, [8, 16, 8, 8, 4])], axis=1))
    out.append(c)
    # 3x3 siblings with a stride of 2, no bias; a stride-1 3x3 of the same input stays apart
    c = Case("strided-3x3", (1, 8, 14, 14), stacks=1)
    y1 = c.conv("x", 8, 16, k=3, bias=False, strides=(2, 2))
    y2 = c.conv("x", 8, 8, k=3, bias=False, strides=(2, 2))
    y3 = c.conv("x", 8, 8, k=3, bias=False)
    c.outputs += [c.op("Add", [y1, c.op("Concat", [y2, y2], axis=1)]), y3]
    out.append(c)
    # a stacked output read by several nests and a residual Add, and one that is a graph output
    # (the caller's buffer: not stacked)
    c = Case("readers-and-graph-output", (1, 8, 7, 7), stacks=1)
    y1, y2, y3 = c.conv("x", 8, 8), c.conv("x", 8, 8), c.conv("x", 8, 8)
    z = c.conv(y1, 8, 8, k=3, act=None)
    c.outputs += [c.op("Add", [z, y2]), c.op("Mul", [y1, y2]), y3]
    out.append(c)
    # must not stack: no activation (the Conv's output has other readers), mixed bias, batch 2
    c = Case("keep/no-activation", (1, 8, 6, 6), stacks=0)
    y1, y2 = c.conv("x", 8, 8, act=None), c.conv("x", 8, 8, act=None)
    c.outputs.append(c.op("Add", [y1, y2]))
    out.append(c)
    c = Case("keep/bias-and-none", (1, 8, 6, 6), stacks=0)
    c.outputs.append(c.op("Add", [c.conv("x", 8, 8), c.conv("x", 8, 8, bias=False)]))
    out.append(c)
    c = Case("keep/batch-2", (2, 8, 6, 6), stacks=0)
    c.outputs.append(c.op("Concat", [c.conv("x", 8, 8), c.conv("x", 8, 4)], axis=1))
    out.append(c)
    return out


def run(cmd, env=None):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          timeout=TIMEOUT_S, env=env)


def compare(case, exe, tmp, ref, seed=None):
    """Runs exe on the case's input; None when every output matches ref, else the reason."""
    args = []
    for n, a in case.feeds.items():
        p = os.path.join(tmp, "in_%s.npy" % n)
        np.save(p, a)
        args += ["--input", "%s=%s" % (n, p)]
    out = tempfile.mkdtemp(dir=tmp)
    env = dict(os.environ)
    if seed is not None:
        env["BDRT_SCHEDULE_SEED"] = str(seed)
    r = run([exe] + args + ["--output-dir", out], env)
    if r.returncode != 0:
        return "run exit %d: %s" % (r.returncode, first_line(r.stderr))
    files = {o["name"]: o["file"] for o in json.loads(run([exe, "--info", "--json"]).stdout)["outputs"]}
    for name in case.outputs:
        got, want = np.load(os.path.join(out, files[name])), ref[name]
        if got.shape != want.shape or not np.allclose(got, want, rtol=RTOL, atol=ATOL):
            return "output %s differs from onnxruntime's (max abs err %.3g)" % (
                name, float(np.max(np.abs(got - want))) if got.shape == want.shape else -1)
    return None


def run_fused(case, bdc, flags, pattern, expected, what, seeds):
    """Compiles the case with --fusion block (and `flags`) in both schedules; the --dump=fuse
    lines matching `pattern` must number `expected` (`what` names them), and every run must match
    onnxruntime's outputs, under --schedule block also in `seeds` orders of the schedule test
    mode. Returns (ok, detail)."""
    tmp = tempfile.mkdtemp(prefix="bdc-fused-")
    try:
        src = os.path.join(tmp, "model.onnx")
        with open(src, "wb") as f:
            f.write(case.model().SerializeToString())
        sess = ort.InferenceSession(src, providers=["CPUExecutionProvider"])
        ref = dict(zip(case.outputs, sess.run(case.outputs, case.feeds)))
        for schedule in ("block", "op"):
            exe = os.path.join(tmp, "model_" + schedule)
            r = run([bdc, "compile", src, "-o", exe, "--werror", "-q", "--fusion", "block",
                     "--schedule", schedule, "--dump=fuse"] + flags)
            if r.returncode != 0:
                return False, "bdc compile exit %d: %s" % (r.returncode, first_line(r.stderr))
            found = len(re.findall(pattern, r.stderr, re.M))
            if found != expected:
                return False, "%d %s, expected %d" % (found, what, expected)
            why = compare(case, exe, tmp, ref)
            for seed in range(1, seeds + 1 if schedule == "block" else 1):
                why = why or compare(case, exe, tmp, ref, seed)
            if why:
                return False, "--schedule %s: %s" % (schedule, why)
        return True, "%d %s" % (expected, what)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def run_case(case, bdc, seeds):
    """Returns (ok, detail)."""
    return run_fused(case, bdc, ["--tile-threads", "16"], r"^fusion: fused .*: horizontal", case.stacks,
                     "conv(s) stacked", seeds)


def fused_main(make_cases, run_one):
    """The command line of the tests of one fusion: --bdc, --seeds, -v; run_one(case, bdc, seeds)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--bdc", default=os.environ.get("BDC", os.path.join(REPO, "build", "bdc")))
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("-v", action="store_true")
    args = ap.parse_args()
    return run_cases(make_cases(), lambda case: run_one(case, args.bdc, args.seeds), args.v)


def main():
    return fused_main(cases, run_case)


if __name__ == "__main__":
    sys.exit(main())
