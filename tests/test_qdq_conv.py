#!/usr/bin/env python3
"""QDQ convolutions (front/qdq_conv.c): Conv(DequantizeLinear(xq), DequantizeLinear(wq), B), then
a residual Add and a Relu, compiled with --qdq int8 (8-bit values, exact int32 sums) and
--qdq float, against onnxruntime's unoptimized session (the QDQ graph as written).

Usage: test_qdq_conv.py [--bdc PATH] [--target cpu|opencl]

Cases cover uint8 and int8 X, weights quantized per tensor or per output channel, a zero or
nonzero weight zero point, strides, pads, dilations, a bias or none, 1-D and 2-D, and grouped
convolutions (which the CPU's int8 kernel leaves to the generic loop). Each must match within
rtol 1e-4, atol 1e-5: both sides sum the same integers times the same scales, so only float32
rounding separates them. With --qdq int8 the DequantizeLinear of X must be gone from the
program (the Conv reads the 8-bit tensor) and, on the CPU, an ungrouped Conv must run the int8
kernel (`--dump=tiles`); with float the DequantizeLinear must be there.

Two more shapes of a quantized network follow the same pattern:
- requant_*: Conv, Relu, then QuantizeLinear and DequantizeLinear of the result. On the CPU with
  --qdq int8 the QuantizeLinear must be absorbed by the int8 kernel (`--dump=fuse`), which
  requantizes in its epilogue, except after a 1x1 unit-stride Conv (the kernel's GEMM path).
  The float value before the QuantizeLinear may differ from onnxruntime's in its last bit (exact
  integer sums against float ones), which moves a value lying on a rounding boundary by one
  step: every element must be within one step (the output scale) and at most 0.5% of them may
  differ at all.
- matmul_*: MatMul(DequantizeLinear(xq), DequantizeLinear(W)) + bias, W constant int8 per tensor
  or per column (a QDQ transformer's projection): with --qdq int8 the MatMul reads the 8-bit X
  (x_dq gone) and, on the CPU, runs the int8 kernel; within rtol 1e-4, atol 1e-5 as above. In
  matmul_u8_requant a QuantizeLinear and DequantizeLinear follow instead of the bias: under int8
  the QuantizeLinear is absorbed (requantized right after the product), within one step.
- qres_*: a QDQ ResNet block's end, two convolutions of x quantized and dequantized, their Add,
  a Relu, Clip or nothing, QuantizeLinear, then a MaxPool of the bytes. On the CPU with --qdq
  int8 one convolution must absorb the Add (`--dump=fuse`: the quantized residual Add into the
  8-bit kernel's epilogue) and the result match within one step as the requant_* cases do.
- pool: DequantizeLinear, MaxPool, QuantizeLinear of one scale and zero point, then
  DequantizeLinear. With --qdq int8 the MaxPool must run on the 8-bit values (front/qdq_moves.c:
  the QuantizeLinear after it is gone), and match exactly.
- moves_*: a transformer's heads split (Reshape), transposed and flattened, each between a
  DequantizeLinear and a QuantizeLinear of one scale and zero point: with --qdq int8 they must
  move the 8-bit values (the Transpose's QuantizeLinear gone), and match exactly.
Exits 1 on any failure.
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper, save

import test_real_models as real

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# The CPU target takes the int8 kernel's direct path, whose epilogue requantizes, only where the
# compiling CPU has AVX2 (bd_i8_direct_default; these cases compile for this machine).
I8_DIRECT = real.cpu_has("avx2")

# name: (x dtype, per-channel W scale, W zero point, group, strides, pads, dilations, bias, 1-D)
CASES = {
    "u8_per_channel": (np.uint8, True, 0, 1, (1, 1), (1, 1, 1, 1), (1, 1), True, False),
    "s8_per_tensor": (np.int8, False, 0, 1, (2, 2), (1, 0, 1, 0), (1, 1), True, False),
    "u8_weight_zero": (np.uint8, False, 5, 1, (1, 2), (0, 0, 0, 0), (2, 1), False, False),
    "u8_grouped": (np.uint8, True, 0, 2, (1, 1), (1, 1, 1, 1), (1, 1), True, False),
    "u8_1d": (np.uint8, True, 0, 1, (2,), (2, 1), (1,), True, True),
}


def make_model(path, case, rng):
    xdt, per_channel, wzero, group, strides, pads, dils, bias, one_d = CASES[case]
    C, M = 6, 8
    spatial = [19] if one_d else [11, 13]
    kernel = [3] if one_d else [3, 3]
    xshape = [2, C] + spatial
    qt = TensorProto.UINT8 if xdt == np.uint8 else TensorProto.INT8
    xzero = 131 if xdt == np.uint8 else -7
    wq = rng.integers(-128, 128, size=[M, C // group] + kernel).astype(np.int8)
    if wzero:
        wq = np.clip(wq.astype(np.int32) + wzero, -128, 127).astype(np.int8)
    wscale = (rng.random(M if per_channel else 1) * 0.01 + 0.001).astype(np.float32)
    inits = [
        numpy_helper.from_array(np.array(0.02, np.float32), "xs"),
        numpy_helper.from_array(np.array(xzero, xdt), "xz"),
        numpy_helper.from_array(wq, "wq"),
        numpy_helper.from_array(wscale if per_channel else wscale.reshape([]), "ws"),
        numpy_helper.from_array(np.full(M if per_channel else [], wzero, np.int8), "wz"),
    ]
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"], name="x_q"),
        helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xf"], name="x_dq"),
        helper.make_node("DequantizeLinear", ["wq", "ws", "wz"], ["wf"], name="w_dq",
                         **({"axis": 0} if per_channel else {})),
    ]
    conv_in = ["xf", "wf"]
    if bias:
        inits.append(numpy_helper.from_array(rng.standard_normal(M).astype(np.float32), "b"))
        conv_in.append("b")
    nodes.append(helper.make_node("Conv", conv_in, ["c"], name="conv", group=group,
                                  kernel_shape=kernel, strides=list(strides), pads=list(pads),
                                  dilations=list(dils)))
    nodes.append(helper.make_node("Add", ["c", "r"], ["s"], name="residual"))
    nodes.append(helper.make_node("Relu", ["s"], ["y"], name="relu"))
    out = [2, M] + [(spatial[i] + pads[i] + pads[len(spatial) + i] - dils[i] * (kernel[i] - 1) - 1)
                    // strides[i] + 1 for i in range(len(spatial))]
    g = helper.make_graph(nodes, case, [
        helper.make_tensor_value_info("x", TensorProto.FLOAT, xshape),
        helper.make_tensor_value_info("r", TensorProto.FLOAT, out)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, out)], inits)
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)
    return {"x": (rng.standard_normal(xshape) * 2).astype(np.float32),
            "r": rng.standard_normal(out).astype(np.float32)}


# name: (x dtype, output dtype, Relu or none, strides, 3x3 kernel or 1x1)
REQUANT = {
    "requant_u8_relu": (np.uint8, np.uint8, True, (1, 1), True),
    "requant_s8_strided": (np.int8, np.int8, False, (2, 2), True),
    "requant_u8_1x1": (np.uint8, np.uint8, True, (1, 1), False),
}


def make_requant(path, case, rng):
    xdt, ydt, relu, strides, k3 = REQUANT[case]
    C, M, H, W = 5, 19, 12, 37
    k = 3 if k3 else 1
    def q_pair(dt, name, scale, zero):
        return [numpy_helper.from_array(np.array(scale, np.float32), name + "s"),
                numpy_helper.from_array(np.array(zero, dt), name + "z")]
    inits = q_pair(xdt, "x", 0.02, 131 if xdt == np.uint8 else -7)
    inits += q_pair(ydt, "y", 0.05, 3 if ydt == np.uint8 else 10)
    inits += [numpy_helper.from_array(rng.integers(-128, 128, size=[M, C, k, k]).astype(np.int8), "wq"),
              numpy_helper.from_array((rng.random(M) * 0.01 + 0.001).astype(np.float32), "ws"),
              numpy_helper.from_array(rng.standard_normal(M).astype(np.float32), "b")]
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"], name="x_q"),
        helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xf"], name="x_dq"),
        helper.make_node("DequantizeLinear", ["wq", "ws"], ["wf"], name="w_dq", axis=0),
        helper.make_node("Conv", ["xf", "wf", "b"], ["c"], name="conv", kernel_shape=[k, k],
                         strides=list(strides), pads=[k // 2] * 4),
    ]
    last = "c"
    if relu:
        nodes.append(helper.make_node("Relu", ["c"], ["r"], name="relu"))
        last = "r"
    nodes += [helper.make_node("QuantizeLinear", [last, "ys", "yz"], ["yq"], name="y_q"),
              helper.make_node("DequantizeLinear", ["yq", "ys", "yz"], ["y"], name="y_dq")]
    out = [1, M] + [(d + 2 * (k // 2) - k) // s + 1 for d, s in zip((H, W), strides)]
    g = helper.make_graph(nodes, case, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, C, H, W])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, out)], inits)
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)
    return {"x": (rng.standard_normal([1, C, H, W]) * 2).astype(np.float32)}


# name: (the two convolutions' output types, the block output's type and zero point, after the
# Add: "relu", "clip" or None, strides, the Add's operands swapped)
QRESIDUAL = {
    "qres_u8_relu": (np.uint8, np.uint8, np.uint8, 9, "relu", (1, 1), False),
    "qres_s8_u8_strided": (np.int8, np.uint8, np.int8, -5, None, (2, 2), True),
    "qres_u8_clip": (np.uint8, np.int8, np.uint8, 0, "clip", (1, 1), False),
}


def make_qresidual(path, case, rng):
    """A QDQ ResNet block's end: two convolutions of x (the block's last and its shortcut's), each
    quantized and dequantized, their Add, an optional Relu or Clip, QuantizeLinear; then a MaxPool
    of the 8-bit result (which reads the bytes, so the block's output is stored as they are)."""
    ydt, rdt, odt, ozero, after, strides, swap = QRESIDUAL[case]
    C, M, H, W = 5, 19, 12, 37
    out = [1, M] + [(d + 2 - 3) // s + 1 for d, s in zip((H, W), strides)]
    def q_pair(dt, name, scale, zero):
        return [numpy_helper.from_array(np.array(scale, np.float32), name + "s"),
                numpy_helper.from_array(np.array(zero, dt), name + "z")]
    inits = q_pair(np.uint8, "x", 0.02, 131)
    inits += q_pair(ydt, "y", 0.05, 3 if ydt == np.uint8 else 10)
    inits += q_pair(rdt, "r", 0.04, 120 if rdt == np.uint8 else -3)
    inits += q_pair(odt, "o", 0.05, ozero)
    for w in ("w", "v"):
        inits += [numpy_helper.from_array(rng.integers(-128, 128, size=[M, C, 3, 3]).astype(np.int8), w + "q"),
                  numpy_helper.from_array((rng.random(M) * 0.01 + 0.001).astype(np.float32), w + "s"),
                  numpy_helper.from_array(rng.standard_normal(M).astype(np.float32), w + "b")]
    inits += [numpy_helper.from_array(np.array(0.0, np.float32), "lo"),
              numpy_helper.from_array(np.array(3.0, np.float32), "hi")]
    conv = dict(kernel_shape=[3, 3], strides=list(strides), pads=[1] * 4)
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"], name="x_q"),
        helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xf"], name="x_dq"),
        helper.make_node("DequantizeLinear", ["wq", "ws"], ["wf"], name="w_dq", axis=0),
        helper.make_node("DequantizeLinear", ["vq", "vs"], ["vf"], name="v_dq", axis=0),
        helper.make_node("Conv", ["xf", "wf", "wb"], ["c"], name="conv", **conv),
        helper.make_node("QuantizeLinear", ["c", "ys", "yz"], ["cq"], name="c_q"),
        helper.make_node("DequantizeLinear", ["cq", "ys", "yz"], ["cf"], name="c_dq"),
        helper.make_node("Conv", ["xf", "vf", "vb"], ["d"], name="shortcut", **conv),
        helper.make_node("QuantizeLinear", ["d", "rs", "rz"], ["dq"], name="d_q"),
        helper.make_node("DequantizeLinear", ["dq", "rs", "rz"], ["df"], name="d_dq"),
        helper.make_node("Add", ["df", "cf"] if swap else ["cf", "df"], ["s"], name="add"),
    ]
    last = "s"
    if after == "relu":
        nodes.append(helper.make_node("Relu", ["s"], ["a"], name="relu"))
        last = "a"
    elif after == "clip":
        nodes.append(helper.make_node("Clip", ["s", "lo", "hi"], ["a"], name="clip"))
        last = "a"
    nodes += [helper.make_node("QuantizeLinear", [last, "os", "oz"], ["oq"], name="o_q"),
              helper.make_node("DequantizeLinear", ["oq", "os", "oz"], ["of"], name="o_dq"),
              helper.make_node("MaxPool", ["of"], ["p"], name="pool", kernel_shape=[3, 3], pads=[1] * 4),
              helper.make_node("QuantizeLinear", ["p", "os", "oz"], ["pq"], name="p_q"),
              helper.make_node("DequantizeLinear", ["pq", "os", "oz"], ["y"], name="p_dq")]
    g = helper.make_graph(nodes, case, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, C, H, W])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, out)], inits)
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)
    return {"x": (rng.standard_normal([1, C, H, W]) * 2).astype(np.float32)}


# name: (x's type and zero point, x's shape, the MaxPool's attributes). Column strides above 1 take
# the CPU's rows-first byte loop: a ResNet stem's pool, a window cut by ceil_mode, 2x2 windows.
POOL = {
    "pool": (np.uint8, 17, [2, 3, 15, 20], dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])),
    "pool_s8_ceil": (np.int8, -100, [1, 4, 14, 16], dict(kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)),
    "pool_u8_2x2": (np.uint8, 200, [1, 5, 9, 11], dict(kernel_shape=[2, 2], strides=[2, 2])),
}


def make_pool(path, case, rng):
    xdt, zero, shape, attrs = POOL[case]
    inits = [numpy_helper.from_array(np.array(0.03, np.float32), "xs"),
             numpy_helper.from_array(np.array(zero, xdt), "xz")]
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"], name="x_q"),
        helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xf"], name="x_dq"),
        helper.make_node("MaxPool", ["xf"], ["p"], name="pool", **attrs),
        helper.make_node("QuantizeLinear", ["p", "xs", "xz"], ["pq"], name="pool_q"),
        helper.make_node("DequantizeLinear", ["pq", "xs", "xz"], ["y"], name="y_dq"),
    ]
    g = helper.make_graph(nodes, case, [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)
    return {"x": (rng.standard_normal(shape) * 2).astype(np.float32)}


# x's type and zero point: a transformer's heads split and transposed, each op between a
# DequantizeLinear and a QuantizeLinear of one scale and zero point
MOVES = {"moves_u8": (np.uint8, 127), "moves_s8": (np.int8, -5)}


def make_moves(path, case, rng):
    xdt, zero = MOVES[case]
    inits = [numpy_helper.from_array(np.array(0.03, np.float32), "xs"),
             numpy_helper.from_array(np.array(zero, xdt), "xz"),
             numpy_helper.from_array(np.array([1, 16, 4, 8], np.int64), "heads")]
    nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"], name="x_q")]
    last = "xq"
    for op, inputs, attrs in (("Reshape", ["heads"], {}), ("Transpose", [], {"perm": [0, 2, 1, 3]}),
                              ("Flatten", [], {"axis": 2})):
        name = op.lower()
        nodes += [helper.make_node("DequantizeLinear", [last, "xs", "xz"], [name + "_in"], name=name + "_dq"),
                  helper.make_node(op, [name + "_in"] + inputs, [name + "_out"], name=name, **attrs),
                  helper.make_node("QuantizeLinear", [name + "_out", "xs", "xz"], [name + "_q"],
                                   name=name + "_quantize")]
        last = name + "_q"
    nodes.append(helper.make_node("DequantizeLinear", [last, "xs", "xz"], ["y"], name="y_dq"))
    g = helper.make_graph(nodes, case, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 32])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)
    return {"x": (rng.standard_normal([1, 16, 32]) * 2).astype(np.float32)}


# x's type, W per output column (else per tensor), x's rank, a QuantizeLinear after, and the op:
# MatMul (then an Add of the bias unless requantized), or Gemm with C the bias and W stored [N, K]
# (transB, its scale along axis 0, as exporters write a classifier) or [K, N]
MATMUL = {
    "matmul_u8_per_column": (np.uint8, True, 3, False, "MatMul"),
    "matmul_s8_per_tensor": (np.int8, False, 2, False, "MatMul"),
    "matmul_u8_requant": (np.uint8, True, 3, True, "MatMul"),
    "gemm_u8_transb_per_column": (np.uint8, True, 2, False, "transB"),
    "gemm_s8_per_tensor": (np.int8, False, 2, False, "Gemm"),
    "gemm_u8_transb_requant": (np.uint8, True, 2, True, "transB"),
}


def make_matmul(path, case, rng):
    xdt, per_column, rank, requant, op = MATMUL[case]
    K, N = 48, 40
    xshape = [2, 7, K] if rank == 3 else [9, K]
    inits = [numpy_helper.from_array(np.array(0.03, np.float32), "xs"),
             numpy_helper.from_array(np.array(120 if xdt == np.uint8 else -5, xdt), "xz"),
             numpy_helper.from_array(rng.integers(-128, 128, size=[N, K] if op == "transB" else [K, N])
                                     .astype(np.int8), "wq"),
             numpy_helper.from_array((rng.random(N if per_column else 1) * 0.01 + 0.001).astype(np.float32)
                                     .reshape([N] if per_column else []), "ws"),
             numpy_helper.from_array(rng.standard_normal(N).astype(np.float32), "b")]
    product = helper.make_node("MatMul", ["xf", "wf"], ["m"], name="matmul") if op == "MatMul" else \
        helper.make_node("Gemm", ["xf", "wf", "b"], ["m"], name="matmul", transB=int(op == "transB"))
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"], name="x_q"),
        helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xf"], name="x_dq"),
        helper.make_node("DequantizeLinear", ["wq", "ws"], ["wf"], name="w_dq",
                         **({"axis": 0 if op == "transB" else 1} if per_column else {})),
        product,
    ]
    if requant:
        inits += [numpy_helper.from_array(np.array(0.05, np.float32), "ys"),
                  numpy_helper.from_array(np.array(128, np.uint8), "yz")]
        nodes += [helper.make_node("QuantizeLinear", ["m", "ys", "yz"], ["mq"], name="m_q"),
                  helper.make_node("DequantizeLinear", ["mq", "ys", "yz"], ["y"], name="m_dq")]
    elif op == "MatMul":
        nodes.append(helper.make_node("Add", ["m", "b"], ["y"], name="bias"))
    else:
        nodes[-1].output[0] = "y"
    g = helper.make_graph(nodes, case, [helper.make_tensor_value_info("x", TensorProto.FLOAT, xshape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, xshape[:-1] + [N])], inits)
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)
    return {"x": (rng.standard_normal(xshape) * 2).astype(np.float32)}


def close(got, want):
    return None if np.allclose(got, want, rtol=1e-4, atol=1e-5) else \
        "max abs err %.3g against onnxruntime" % float(np.abs(got - want).max())


def run_case(args, tmp, case, model, feeds, mode, dump, check_program, compare):
    """Compiles model with --qdq mode, checks the dump (check_program: stderr -> problem or None),
    runs it and compares its y with onnxruntime's (compare: got, want -> problem or None)."""
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    want = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    for name, a in feeds.items():
        np.save(os.path.join(tmp, "%s.%s.npy" % (case, name)), a)
    exe = os.path.join(tmp, "%s_%s" % (case, mode))
    r = subprocess.run([args.bdc, "compile", model, "-o", exe, "--werror", "-q", "--qdq", mode,
                        "--target", args.target, "--dump=" + dump], capture_output=True, text=True)
    if r.returncode:
        return "bdc compile exit %d: %s" % (r.returncode, r.stderr.strip()[-300:])
    problem = check_program(r.stderr)
    if problem:
        return problem
    out = os.path.join(tmp, "out_" + case + mode)
    cmd = [exe, "--output-dir", out]
    for n in feeds:
        cmd += ["--input", "%s=%s" % (n, os.path.join(tmp, "%s.%s.npy" % (case, n)))]
    run = subprocess.run(cmd, capture_output=True, text=True)
    if run.returncode:
        return "run exit %d: %s" % (run.returncode, run.stderr.strip()[-300:])
    got = np.load(os.path.join(out, "y.npy"))
    if got.shape != want.shape:
        return "shape %s, want %s" % (got.shape, want.shape)
    return compare(got, want)


def within_one_step(got, want):
    step = 0.05 * 1.001
    differ = float(np.mean(np.abs(got - want) > 1e-6))
    err = float(np.abs(got - want).max())
    if err > step or differ > 0.005:
        return "max abs err %.3g, %.2f%% of the elements differ, against onnxruntime" % (err, 100 * differ)
    return None


def exact(got, want):
    return None if np.array_equal(got, want) else "max abs err %.3g against onnxruntime" % float(
        np.abs(got - want).max())


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bdc", default=os.environ.get("BDC") or os.path.join(REPO, "build", "bdc"))
    ap.add_argument("--target", choices=("cpu", "opencl"), default="cpu")
    args = ap.parse_args()
    passed = failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for case in CASES:
            rng = np.random.default_rng(len(case))
            model = os.path.join(tmp, case + ".onnx")
            feeds = make_model(model, case, rng)
            for mode in ("int8", "float"):
                kernel = mode == "int8" and args.target == "cpu" and CASES[case][3] == 1
                def check(err, mode=mode, kernel=kernel):
                    if ("'x_dq'" in err) != (mode == "float"):
                        return "the program %s x_dq's DequantizeLinear" % (
                            "still has" if mode == "int8" else "lacks")
                    if ("int8 kernel" in err) != kernel:
                        return "the int8 kernel %s" % ("runs" if "int8 kernel" in err else "does not run")
                    return None
                problem = run_case(args, tmp, case, model, feeds, mode, "tiles", check, close)
                print("%s  %-16s --qdq %-5s %s" % ("FAIL" if problem else "PASS", case, mode,
                                                   problem or "matches onnxruntime"))
                if problem:
                    failed += 1
                else:
                    passed += 1
        more = [(c, make_requant, "fuse", "QuantizeLinear into the 8-bit kernel's epilogue", within_one_step)
                for c in REQUANT]
        more += [(c, make_qresidual, "fuse", "quantized residual Add", within_one_step)
                 for c in QRESIDUAL]
        # (fuse too: --fusion block may inline the QuantizeLinear's nest into its reader's)
        more += [(c, make_pool, "tiles,fuse", "'pool_q'", exact) for c in POOL]
        more += [(c, make_moves, "tiles,fuse", "'transpose_quantize'", exact) for c in MOVES]
        more += [(c, make_matmul, "tiles", "'x_dq'", within_one_step if MATMUL[c][3] else close)
                 for c in MATMUL]
        for case, make, dump, mark, compare in more:
            rng = np.random.default_rng(len(case))
            model = os.path.join(tmp, case + ".onnx")
            feeds = make(model, case, rng)
            for mode in ("int8", "float"):
                # requant: the mark (a fusion note) only for the CPU's int8 kernel on its direct
                # path (AVX2 or AVX-512 VNNI); pool: the mark
                # (the QuantizeLinear after the pool) only without the rewrite, under float
                # matmul and gemm: the mark (x_dq's DequantizeLinear) only under float, and the
                # int8 kernel on the CPU under int8
                expect = (mode == "int8" and args.target == "cpu" and I8_DIRECT) \
                    if case.startswith(("requant", "qres")) else mode == "float"
                if case.startswith("requant") and not REQUANT[case][4]:
                    expect = False  # 1x1, unit strides: the GEMM path, which does not requantize
                kernel = case in MATMUL and mode == "int8" and args.target == "cpu"
                # matmul_*_requant: the QuantizeLinear after the product absorbed under int8
                absorbed = case in MATMUL and MATMUL[case][3] and mode == "int8"
                def check(err, expect=expect, mark=mark, kernel=kernel, absorbed=absorbed):
                    if (mark in err) != expect:
                        return "the program %s %s" % ("has" if mark in err else "lacks", mark)
                    if kernel and "int8 kernel" not in err:
                        return "the MatMul does not run the int8 kernel"
                    if absorbed and "'m_q'" in err:
                        return "the QuantizeLinear after the MatMul was not absorbed"
                    return None
                problem = run_case(args, tmp, case, model, feeds, mode, dump, check, compare)
                print("%s  %-22s --qdq %-5s %s" % ("FAIL" if problem else "PASS", case, mode,
                                                   problem or "matches onnxruntime"))
                if problem:
                    failed += 1
                else:
                    passed += 1
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed or not passed else 0


if __name__ == "__main__":
    sys.exit(main())
