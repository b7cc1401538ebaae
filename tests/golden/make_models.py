#!/usr/bin/env python3
"""Build the tiny models whose `bdc compile --dump=tiles` output tests/test_golden.sh compares
with the committed NAME.FUSION.tiles files in this folder.

Usage: make_models.py OUTDIR

Each model exercises a different family of access maps and tilings: convolution windows and
epilogue fusion (conv_chain, residual), matrix products with a broadcast bias and an elementwise
tail (mlp_gelu), two branches joined by Concat pieces (branches_concat), sibling 1x1 convs that
--fusion block stacks into one (siblings), a transpose/reshape
remap into a FULL softmax axis (transpose_softmax), a channels-last tensor permuted back to
channels-first in tiles of 32 channels (permute_nchw), attention that --fusion block computes per
band of rows (attention), padding into a strided pooling window
(pad_maxpool), a resized spatial dim (resize), reversed slices and Split pieces (slice_split), and
1x1 convs at 7x7 tiled by the kernel path each takes (pointwise_7x7).
Weights come from a fixed seed and the files are deterministic; test_golden.sh caches them keyed
by a hash of this script, so changing it regenerates them (then refresh the golden files with
BDC_UPDATE_GOLDEN=1).
"""

import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

IR_VERSION = 8
OPSET = 17
F = TensorProto.FLOAT


def rng(name):
    """A generator seeded by the model name, so editing one model leaves the others' weights."""
    return np.random.default_rng(sum(ord(c) * (i + 1) for i, c in enumerate(name)))


def weight(r, name, shape):
    return numpy_helper.from_array((r.standard_normal(shape) * 0.1).astype(np.float32), name)


def const_i64(name, values):
    return numpy_helper.from_array(np.array(values, dtype=np.int64), name)


def const_f32(name, values):
    return numpy_helper.from_array(np.array(values, dtype=np.float32), name)


def model(name, nodes, inputs, outputs, inits):
    graph = helper.make_graph(
        nodes, name,
        [helper.make_tensor_value_info(n, F, s) for n, s in inputs],
        [helper.make_tensor_value_info(n, F, s) for n, s in outputs],
        initializer=inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                          producer_name="bdc-tests", producer_version="1")
    m.ir_version = IR_VERSION
    return m


def conv_chain():
    """Conv1x1 (bias) -> Conv3x3 (stride 1, pad 1) -> Relu: the worked example's shape."""
    r = rng("conv_chain")
    return model("conv_chain", [
        helper.make_node("Conv", ["x", "w1", "b1"], ["a"], name="conv1x1", kernel_shape=[1, 1]),
        helper.make_node("Conv", ["a", "w3"], ["b"], name="conv3x3", kernel_shape=[3, 3],
                         pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["b"], ["y"], name="relu"),
    ], [("x", [1, 16, 28, 28])], [("y", [1, 32, 28, 28])],
        [weight(r, "w1", [32, 16, 1, 1]), weight(r, "b1", [32]), weight(r, "w3", [32, 32, 3, 3])])


def residual():
    """Conv3x3 with bias, residual Add of the input, Relu: both absorbed by --fusion op."""
    r = rng("residual")
    return model("residual", [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", kernel_shape=[3, 3],
                         pads=[1, 1, 1, 1]),
        helper.make_node("Add", ["c", "x"], ["s"], name="add_residual"),
        helper.make_node("Relu", ["s"], ["y"], name="relu"),
    ], [("x", [1, 16, 14, 14])], [("y", [1, 16, 14, 14])],
        [weight(r, "w", [16, 16, 3, 3]), weight(r, "b", [16])])


def mlp_gelu():
    """MatMul + bias, then the tanh form of GELU as a chain of elementwise ops."""
    r = rng("mlp_gelu")
    return model("mlp_gelu", [
        helper.make_node("MatMul", ["x", "w"], ["m"], name="matmul"),
        helper.make_node("Add", ["m", "b"], ["h"], name="add_bias"),
        helper.make_node("Pow", ["h", "three"], ["h3"], name="cube"),
        helper.make_node("Mul", ["h3", "k0"], ["t0"], name="scale_cube"),
        helper.make_node("Add", ["h", "t0"], ["t1"], name="inner"),
        helper.make_node("Mul", ["t1", "k1"], ["t2"], name="scale_inner"),
        helper.make_node("Tanh", ["t2"], ["t3"], name="tanh"),
        helper.make_node("Add", ["t3", "one"], ["t4"], name="one_plus"),
        helper.make_node("Mul", ["h", "t4"], ["t5"], name="times_h"),
        helper.make_node("Mul", ["t5", "half"], ["y"], name="half"),
    ], [("x", [4, 64])], [("y", [4, 128])],
        [weight(r, "w", [64, 128]), weight(r, "b", [128]), const_f32("three", 3.0),
         const_f32("k0", 0.044715), const_f32("k1", 0.7978845608), const_f32("one", 1.0),
         const_f32("half", 0.5)])


def branches_concat():
    """Two Inception-like branches on the same input (1x1 and 3x3), joined by Concat."""
    r = rng("branches_concat")
    return model("branches_concat", [
        helper.make_node("Conv", ["x", "wa", "ba"], ["a"], name="branch1x1", kernel_shape=[1, 1]),
        helper.make_node("Conv", ["x", "wb", "bb"], ["b"], name="branch3x3", kernel_shape=[3, 3],
                         pads=[1, 1, 1, 1]),
        helper.make_node("Concat", ["a", "b"], ["c"], name="concat", axis=1),
        helper.make_node("Relu", ["c"], ["y"], name="relu"),
    ], [("x", [1, 8, 16, 16])], [("y", [1, 24, 16, 16])],
        [weight(r, "wa", [8, 8, 1, 1]), weight(r, "ba", [8]), weight(r, "wb", [16, 8, 3, 3]),
         weight(r, "bb", [16])])


def siblings():
    """Two 1x1 convs of one input, each with a Relu, one before a 3x3 conv: stacked into one
    conv by --fusion block, each branch then a slice of its output."""
    r = rng("siblings")
    return model("siblings", [
        helper.make_node("Conv", ["x", "wa", "ba"], ["a"], name="reduce_a", kernel_shape=[1, 1]),
        helper.make_node("Relu", ["a"], ["ra"], name="relu_a"),
        helper.make_node("Conv", ["x", "wb", "bb"], ["b"], name="reduce_b", kernel_shape=[1, 1]),
        helper.make_node("Relu", ["b"], ["rb"], name="relu_b"),
        helper.make_node("Conv", ["rb", "wc"], ["c"], name="conv3x3", kernel_shape=[3, 3],
                         pads=[1, 1, 1, 1]),
        helper.make_node("Add", ["ra", "c"], ["y"], name="add"),
    ], [("x", [1, 16, 8, 8])], [("y", [1, 8, 8, 8])],
        [weight(r, "wa", [8, 16, 1, 1]), weight(r, "ba", [8]), weight(r, "wb", [16, 16, 1, 1]),
         weight(r, "bb", [16]), weight(r, "wc", [8, 16, 3, 3])])


def transpose_softmax():
    """Transpose (a permuted map), Reshape (mixing dims), Softmax over the last axis (FULL)."""
    return model("transpose_softmax", [
        helper.make_node("Transpose", ["x"], ["t"], name="transpose", perm=[0, 2, 1, 3]),
        helper.make_node("Reshape", ["t", "shape"], ["r"], name="reshape"),
        helper.make_node("Softmax", ["r"], ["y"], name="softmax", axis=-1),
    ], [("x", [2, 3, 4, 5])], [("y", [2, 4, 15])], [const_i64("shape", [2, 4, 15])])


def permute_nchw():
    """A channels-last tensor permuted back to NCHW (ConvNeXt's blocks end so): the input is
    contiguous along C, the output along W, so the tile takes 32 channels and whole rows, which
    the copy walks in blocked 2-D (a default tile of one channel reads each input line 16 times)."""
    return model("permute_nchw", [
        helper.make_node("Transpose", ["x"], ["y"], name="permute", perm=[0, 3, 1, 2]),
    ], [("x", [1, 28, 28, 96])], [("y", [1, 96, 28, 28])], [])


def attention():
    """Q K^T / sqrt(d) + a mask, Softmax, x V: with --fusion block one ATTENTION nest per band of
    rows (PANEL), the scores never stored."""
    return model("attention", [
        helper.make_node("Transpose", ["k"], ["kt"], name="keys_t", perm=[0, 1, 3, 2]),
        helper.make_node("MatMul", ["q", "kt"], ["s"], name="scores"),
        helper.make_node("Div", ["s", "sqrt_d"], ["sd"], name="scale"),
        helper.make_node("Add", ["sd", "mask"], ["sm"], name="mask_add"),
        helper.make_node("Softmax", ["sm"], ["p"], name="softmax", axis=-1),
        helper.make_node("MatMul", ["p", "v"], ["y"], name="weighted"),
    ], [("q", [1, 2, 16, 8]), ("k", [1, 2, 16, 8]), ("v", [1, 2, 16, 8]), ("mask", [1, 1, 1, 16])],
        [("y", [1, 2, 16, 8])], [const_f32("sqrt_d", np.sqrt(8.0))])


def pad_maxpool():
    """Explicit Pad, then MaxPool 3x3 stride 2 (a strided window over the padded tensor)."""
    return model("pad_maxpool", [
        helper.make_node("Pad", ["x", "pads", "zero"], ["p"], name="pad", mode="constant"),
        helper.make_node("MaxPool", ["p"], ["y"], name="maxpool", kernel_shape=[3, 3],
                         strides=[2, 2]),
    ], [("x", [1, 4, 15, 15])], [("y", [1, 4, 8, 8])],
        [const_i64("pads", [0, 0, 1, 1, 0, 0, 1, 1]), const_f32("zero", 0.0)])


def resize():
    """Resize x2 (linear, half_pixel) then a 1x1 conv over the resized map."""
    r = rng("resize")
    return model("resize", [
        helper.make_node("Resize", ["x", "", "scales"], ["u"], name="upsample", mode="linear",
                         coordinate_transformation_mode="half_pixel"),
        helper.make_node("Conv", ["u", "w"], ["y"], name="conv1x1", kernel_shape=[1, 1]),
    ], [("x", [1, 3, 8, 8])], [("y", [1, 4, 16, 16])],
        [const_f32("scales", [1.0, 1.0, 2.0, 2.0]), weight(r, "w", [4, 3, 1, 1])])


def slice_split():
    """A reversed Slice (negative step: a negative-scale map), then Split into two pieces."""
    return model("slice_split", [
        helper.make_node("Slice", ["x", "starts", "ends", "axes", "steps"], ["s"], name="reverse"),
        helper.make_node("Split", ["s", "split"], ["y0", "y1"], name="split", axis=1),
    ], [("x", [2, 10, 6])], [("y0", [2, 4, 6]), ("y1", [2, 6, 6])],
        [const_i64("starts", [-1]), const_i64("ends", [-(2 ** 62)]), const_i64("axes", [1]),
         const_i64("steps", [-1]), const_i64("split", [4, 6])])


def pointwise_7x7():
    """1x1 convs at 7x7 as MobileNetV2's head has them, each tiled by the costs of the kernel
    path it takes: 160 -> 960 (+ Relu) the transposed product's, in tiles of channels (the GEMM's
    costs cut its rows instead), 960 -> 320 and 320 -> 1280 the 16-lane direct kernel's."""
    r = rng("pointwise_7x7")
    return model("pointwise_7x7", [
        helper.make_node("Conv", ["x", "w1"], ["e"], name="expand", kernel_shape=[1, 1]),
        helper.make_node("Relu", ["e"], ["a"], name="relu"),
        helper.make_node("Conv", ["a", "w2"], ["p"], name="project", kernel_shape=[1, 1]),
        helper.make_node("Conv", ["p", "w3"], ["y"], name="head", kernel_shape=[1, 1]),
    ], [("x", [1, 160, 7, 7])], [("y", [1, 1280, 7, 7])],
        [weight(r, "w1", [960, 160, 1, 1]), weight(r, "w2", [320, 960, 1, 1]),
         weight(r, "w3", [1280, 320, 1, 1])])


MODELS = [conv_chain, residual, mlp_gelu, branches_concat, siblings, transpose_softmax, permute_nchw,
          attention, pad_maxpool, resize, slice_split, pointwise_7x7]


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make_models.py OUTDIR")
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for make in MODELS:
        m = make()
        with open(os.path.join(out, make.__name__ + ".onnx"), "wb") as f:
            f.write(m.SerializeToString())


if __name__ == "__main__":
    main()
