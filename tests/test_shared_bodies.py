#!/usr/bin/env python3
"""Block functions that print alike compiled once (src/target/share.c), against onnxruntime.

Usage: test_shared_bodies.py [--bdc PATH] [-v]
  --bdc  the bdc binary (default: $BDC, else <repo>/build/bdc)
  -v     also print each passing case's max abs error and shared bodies

Each case is a small model built with onnx.helper whose layers repeat with other weights (a
stack of Gemm + Relu, of 3x3 Conv + Relu with residual Adds, of LayerNormalization + MatMul),
or do not repeat (widths that change at every layer). For each case and fusion mode (block,
none):
  shares  `bdc compile --emit-dir`: the generated C must hold at least the expected number of
          shared bodies and block functions calling them, and none for the case that does not
          repeat (so sharing that silently stops, and sharing across different shapes, fail
          here);
  runs    the executable on a seeded input, every output compared with onnxruntime's
          (CPUExecutionProvider) by np.allclose(rtol=1e-4, atol=1e-5): each block function
          must hand the shared body its own offsets;
  links   the stack of Gemms compiled twice with --lib under two names and linked into one C
          program (the shared bodies' names must not clash), whose two outputs must equal the
          executable's bit for bit.
One line per case, then `N passed, M failed`; exits 1 if any failed.
"""

import argparse
import os
import re
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
# "/* the block function of nest 7 and 3 more nests like it, ..." (target/cpu/emit.c)
SHARED = re.compile(r"/\* the block function of nest \d+ and (\d+) more nests like it")


class Case:
    def __init__(self, name, x_shape, build, min_bodies, min_callers):
        self.name, self.min_bodies, self.min_callers = name, min_bodies, min_callers
        rng = np.random.default_rng(zlib.crc32(name.encode()))
        self.x = rng.standard_normal(x_shape).astype(np.float32)
        nodes, consts = build(rng)
        graph = helper.make_graph(
            nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape))],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
            [numpy_helper.from_array(np.asarray(a, dtype=np.float32), n) for n, a in consts.items()])
        opsets = [helper.make_opsetid("", 17)]
        self.model = helper.make_model(graph, opset_imports=opsets, producer_name="test_shared_bodies")
        self.model.ir_version = helper.find_min_ir_version_for(opsets)


def gemm_stack(widths):
    def build(rng):
        nodes, consts, x = [], {}, "x"
        for i in range(len(widths) - 1):
            w, b = "w%d" % i, "b%d" % i
            consts[w] = rng.standard_normal((widths[i], widths[i + 1])) / np.sqrt(widths[i])
            consts[b] = rng.standard_normal(widths[i + 1]) * 0.1
            nodes.append(helper.make_node("Gemm", [x, w, b], ["g%d" % i]))
            y = "y" if i == len(widths) - 2 else "r%d" % i
            nodes.append(helper.make_node("Relu", ["g%d" % i], [y]))
            x = y
        return nodes, consts
    return build


def conv_stack(layers, c):
    """3x3 Conv + Relu, a residual Add every second layer."""
    def build(rng):
        nodes, consts, x = [], {}, "x"
        for i in range(layers):
            w, b = "w%d" % i, "b%d" % i
            consts[w] = rng.standard_normal((c, c, 3, 3)) / np.sqrt(9 * c)
            consts[b] = rng.standard_normal(c) * 0.1
            nodes.append(helper.make_node("Conv", [x, w, b], ["c%d" % i], pads=[1, 1, 1, 1]))
            nodes.append(helper.make_node("Relu", ["c%d" % i], ["r%d" % i]))
            if i % 2:
                nodes.append(helper.make_node("Add", ["r%d" % i, "r%d" % (i - 2) if i > 1 else "x"],
                                              ["a%d" % i]))
                x = "a%d" % i
            else:
                x = "r%d" % i
        nodes.append(helper.make_node("Identity", [x], ["y"]))
        return nodes, consts
    return build


def norm_stack(layers, d):
    """LayerNormalization, then a MatMul, then a residual Add."""
    def build(rng):
        nodes, consts, x = [], {}, "x"
        for i in range(layers):
            consts["s%d" % i] = 1 + rng.standard_normal(d) * 0.1
            consts["t%d" % i] = rng.standard_normal(d) * 0.1
            consts["w%d" % i] = rng.standard_normal((d, d)) / np.sqrt(d)
            nodes.append(helper.make_node("LayerNormalization", [x, "s%d" % i, "t%d" % i],
                                          ["n%d" % i], axis=-1, epsilon=1e-5))
            nodes.append(helper.make_node("MatMul", ["n%d" % i, "w%d" % i], ["m%d" % i]))
            y = "y" if i == layers - 1 else "a%d" % i
            nodes.append(helper.make_node("Add", [x, "m%d" % i], [y]))
            x = y
        return nodes, consts
    return build


def cases():
    # A layer reading the graph's input or writing its output prints apart from the ones between
    # (S->in, S->out against the arena), hence the margins.
    return [
        Case("gemm-stack", (8, 64), gemm_stack([64] * 7), 1, 3),
        Case("conv-stack-residual", (1, 8, 12, 12), conv_stack(6, 8), 1, 2),
        Case("layernorm-matmul-stack", (2, 16, 32), norm_stack(5, 32), 1, 3),
        Case("widths-all-different", (4, 40), gemm_stack([40, 36, 32, 28, 24, 20]), 0, 0),
    ]


def first_line(text):
    lines = [l for l in (text or "").splitlines() if l.strip()]
    return lines[0][:300] if lines else ""


def run(argv, **kw):
    return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          timeout=TIMEOUT_S, **kw)


def shared_counts(emit_dir):
    with open(os.path.join(emit_dir, "model.c")) as f:
        more = [int(k) for k in SHARED.findall(f.read())]
    return len(more), sum(k + 1 for k in more)


def run_case(case, bdc, fusion, tmp):
    """Returns (ok, detail, y)."""
    src = os.path.join(tmp, "model.onnx")
    with open(src, "wb") as f:
        f.write(case.model.SerializeToString())
    exe, emit = os.path.join(tmp, "model"), os.path.join(tmp, "emit")
    r = run([bdc, "compile", src, "-o", exe, "--werror", "-q", "--fusion", fusion, "--emit-dir", emit])
    if r.returncode != 0:
        return False, "bdc compile exit %d: %s" % (r.returncode, first_line(r.stderr)), None
    bodies, callers = shared_counts(emit)
    if case.min_bodies == 0 and bodies:
        return False, "%d shared bodies where no layer repeats" % bodies, None
    if bodies < case.min_bodies or callers < case.min_callers:
        return False, "%d shared bodies called by %d block functions, expected at least %d and %d" % (
            bodies, callers, case.min_bodies, case.min_callers), None
    np.save(os.path.join(tmp, "x.npy"), case.x)
    out = os.path.join(tmp, "out")
    os.makedirs(out, exist_ok=True)
    r = run([exe, "--input", "x=" + os.path.join(tmp, "x.npy"), "--output-dir", out])
    if r.returncode != 0:
        return False, "run exit %d: %s" % (r.returncode, first_line(r.stderr)), None
    got = np.load(os.path.join(out, "y.npy"))
    want = ort.InferenceSession(case.model.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(["y"], {"x": case.x})[0]
    if got.shape != want.shape or not np.allclose(got, want, rtol=RTOL, atol=ATOL):
        err = np.max(np.abs(got - want)) if got.shape == want.shape else float("nan")
        return False, "output y %s differs from onnxruntime's %s (max abs err %.3g)" % (
            got.shape, want.shape, err), None
    detail = "max abs err %.2e, %d shared bodies called by %d block functions" % (
        float(np.max(np.abs(got - want))), bodies, callers)
    return True, detail, got


CONSUMER = r"""
#include <stdio.h>
#include <string.h>
#include "first.h"
#include "second.h"
int main(int argc, char **argv) {
    static float x[%(nx)d], y1[%(ny)d], y2[%(ny)d];
    FILE *f = fopen(argv[1], "rb");
    if (argc != 3 || !f || fread(x, sizeof x, 1, f) != 1) return 2;
    fclose(f);
    void *a = first_create(1), *b = second_create(2);
    const void *in[] = {x};
    void *o1[] = {y1}, *o2[] = {y2};
    if (!a || !b || first_run(a, in, o1) || second_run(b, in, o2)) return 3;
    f = fopen(argv[2], "wb");
    if (!f || fwrite(y1, sizeof y1, 1, f) != 1 || fwrite(y2, sizeof y2, 1, f) != 1) return 4;
    fclose(f);
    first_destroy(a);
    second_destroy(b);
    return 0;
}
"""


def link_two(case, bdc, tmp, y):
    """Returns (ok, detail)."""
    src = os.path.join(tmp, "model.onnx")
    libs = []
    for name in ("first", "second"):
        lib = os.path.join(tmp, name + ".a")
        r = run([bdc, "compile", src, "-o", lib, "--lib", "--werror", "-q"])
        if r.returncode != 0:
            return False, "bdc compile --lib exit %d: %s" % (r.returncode, first_line(r.stderr))
        libs.append(lib)
    with open(os.path.join(tmp, "two.c"), "w") as f:
        f.write(CONSUMER % {"nx": case.x.size, "ny": y.size})
    prog = os.path.join(tmp, "two")
    r = run(["cc", "-std=c11", "-O1", "-I", tmp, os.path.join(tmp, "two.c")] + libs +
            ["-lpthread", "-lm", "-o", prog])
    if r.returncode != 0:
        return False, "linking both libraries: %s" % first_line(r.stderr)
    case.x.tofile(os.path.join(tmp, "x.raw"))
    r = run([prog, os.path.join(tmp, "x.raw"), os.path.join(tmp, "y.raw")])
    if r.returncode != 0:
        return False, "the program of two libraries exit %d" % r.returncode
    both = np.fromfile(os.path.join(tmp, "y.raw"), dtype=np.float32)
    if not np.array_equal(both[:y.size], y.ravel()) or not np.array_equal(both[y.size:], y.ravel()):
        return False, "the two libraries' outputs differ from the executable's"
    return True, "two libraries in one program agree"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bdc", default=os.environ.get("BDC", os.path.join(REPO, "build", "bdc")))
    ap.add_argument("-v", action="store_true")
    a = ap.parse_args()
    passed = failed = 0
    for case in cases():
        for fusion in ("block", "none"):
            label = "%s/fusion-%s" % (case.name, fusion)
            tmp = tempfile.mkdtemp(prefix="bdc-shared-")
            try:
                ok, detail, y = run_case(case, a.bdc, fusion, tmp)
                if ok and case.name == "gemm-stack" and fusion == "block":
                    ok, more = link_two(case, a.bdc, tmp, y)
                    detail = more if not ok else detail + "; " + more
            except Exception as e:  # noqa: BLE001 - a broken case fails alone, with its reason
                ok, detail = False, "%s: %s" % (type(e).__name__, e)
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
            if ok:
                passed += 1
                print("ok %s%s" % (label, " (%s)" % detail if a.v else ""))
            else:
                failed += 1
                print("FAIL %s: %s" % (label, detail))
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed or not passed else 0


if __name__ == "__main__":
    sys.exit(main())
