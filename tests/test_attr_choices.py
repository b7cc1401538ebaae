#!/usr/bin/env python3
"""String attribute choices, compiled and run: every spelling bdc accepts, against onnxruntime.

Usage: test_attr_choices.py [--bdc PATH] [--fusion op|none] [-j N] [-k GLOB] [-v]
  --bdc     the bdc binary (default: $BDC, else <repo>/build/bdc)
  --fusion  bdc compile --fusion mode (default op)
  -j        cases compiled and run at once (default: os.cpu_count())
  -k        only cases whose name matches this glob (e.g. 'resize/*cubic*')
  -v        also print each passing case's max abs error and each failing case's bdc command

For every string-valued attribute that bdc reads of an op in its op table (ops.def): Gelu
approximate; Pad mode; Resize mode, coordinate_transformation_mode, nearest_mode and
keep_aspect_ratio_policy; the auto_pad of Conv, ConvTranspose, MaxPool and AveragePool; LSTM
direction and activations (with the activation_alpha/activation_beta those functions consume),
and GRU's and RNN's (with GRU's linear_before_reset); BitShift direction; DepthToSpace mode (and
SpaceToDepth beside it); GridSample mode and padding_mode; RoiAlign mode and
coordinate_transformation_mode (with both kinds of sampling_ratio, rois constant or fed at run
time); the reduction of ScatterElements, ScatterND, NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss; MaxUnpool's
windows and output_shape (no string attribute, but the same kind of branches); Upsample mode (opsets 7 and 9),
and for every value of it that bdc accepts at some opset it supports, this builds tiny models
with onnx.helper (one node, weights as initializers, inputs drawn from a numpy generator seeded
by the case name, so a case is the same on every run whatever runs beside it), then:
  compile  `bdc compile MODEL.onnx -o DIR/model --werror -q` in a temporary folder;
  run      `DIR/model --input NAME=FILE.npy ... --output-dir DIR/out` (output files named by
           `DIR/model --info --json`);
  compare  every output with onnxruntime's (CPUExecutionProvider, default session options) on
           the same input: dtype and shape exactly, float32 values with np.allclose(rtol=1e-4,
           atol=1e-5), float16 with rtol=2e-3 (two ulps), integers exactly.
One line per case (`ok NAME` or `FAIL NAME: ...`), then `N passed, M failed`; exits 1 if any
case failed or none ran. A mismatch names the output, the element furthest outside the
tolerance and whether the ONNX reference implementation (onnx.reference) sides with bdc or with
onnxruntime: the first thing a reader needs to tell a bdc bug from an onnxruntime quirk.

Why: the node suite (test_node_run.py) has a handful of models per op, and the string choices
are where it is thinnest: each choice is its own branch of bdc's inference, lowering and emitted
C (an index formula, a padding side, a gate function), and a branch no model takes can be wrong
without anything noticing; an explicit Gelu approximate="none" compiled to the tanh formula is
the bug that prompted this test. The data are picked so the choices actually differ: odd total
SAME padding (odd extents, stride 2, even kernels) so SAME_UPPER and SAME_LOWER pad different
sides; Resize scales of 2 and 1/2 so nearest_mode meets ties, odd extents, a 1-wide output and
an extent x scale that is not an integer for the coordinate modes, every scale and sizes ratio a
dyadic fraction so that a tie is exactly a tie in float32 (onnxruntime) and float64 (bdc)
alike; Gelu inputs spanning [-3, 3], where erf and tanh GELU part by up to ~5e-4; LSTM alphas
and betas that differ per slot. rtol is the node suite's tightened tenfold: each case is one
node over a few hundred elements, so float32 reordering leaves errors of order 1e-7.

Where onnxruntime cannot run a model as the spec defines it, the case's `oracle` is an
equivalent model onnxruntime does run, and its outputs are the reference (said in the comments
where each is made): dilated SAME_UPPER/SAME_LOWER Conv and pools (onnxruntime refuses the
Conv and mis-sizes the pools) against auto_pad=NOTSET with the spec's SAME pads; LSTM layout=1
(refused) against layout=0 on the transposed data; LSTM Affine and ThresholdedRelu with
activation_alpha/beta omitted against the spec's defaults spelled out (onnxruntime uses 0).

Where onnxruntime and the ONNX reference implementation disagree and bdc follows the reference
(REFERENCE_NOT_ORT below, each with its reason: Resize's length_resized for an extent x scale
that is not an integer, a 1-wide pytorch_half_pixel output, GridSample's cubic sampling with
border padding, and MaxUnpool with an output_shape larger than the unpooled tensor), the
reference's outputs are
the expected ones, and the case also checks that onnxruntime still disagrees.

bdc exit 3 (unsupported) fails a case unless EXPECTED_REFUSALS below lists it with its reason;
a listed case that compiles fails too (so the table stays honest). Any other exit fails the
case. Nothing is cached: a model compiles in about a tenth of a second, the whole run takes
under a minute on two cores.
"""

import argparse
import fnmatch
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zlib
from multiprocessing.pool import ThreadPool

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)

import numpy as np  # noqa: E402
import onnxruntime as ort  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

ort.set_default_logger_severity(4)  # its errors come back as exceptions, reported per case

RTOL, ATOL = 1e-4, 1e-5
RTOL_F16, ATOL_F16 = 2e-3, 1e-5  # two float16 ulps: bdc and onnxruntime may round differently
COMPILE_TIMEOUT_S = 120
RUN_TIMEOUT_S = 60

# Cases bdc is expected to refuse with exit 3, as (glob over case names, text bdc's message
# must contain, reason). A listed case that compiles fails, and so does one refused with
# another message: the table can neither go stale nor hide a new refusal.
EXPECTED_REFUSALS = [
    ("resize/*/mode=linear/*int[0-9]*/*", "attribute 'mode' 'linear' on",
     "linear interpolation is compiled for float32 and float64 data only (bd_lower_resize)"),
    ("resize/*/mode=cubic/*int[0-9]*/*", "attribute 'mode' 'cubic' on",
     "cubic interpolation is compiled for float32 and float64 data only (bd_lower_resize)"),
    ("pad/opset10/mode=constant/float16/value=1.5", "attribute 'value' = 1.5 on a float16",
     "the opset < 11 'value' attribute is printed as a C constant of the element type, which "
     "for float16 is only right for +0 (support check)"),
]

# Cases where onnxruntime and the ONNX reference implementation (onnx.reference, which computed
# the node suite's expected outputs) disagree, and bdc follows the reference: their expected
# outputs are the reference's, as (glob over case names, reason). Such a case also checks that
# onnxruntime still disagrees with the reference, so an entry cannot outlive the disagreement.
REFERENCE_NOT_ORT = [
    ("resize/*/coord=align_corners/*ragged-scales", "extent x scale not an integer: the "
     "reference (and the node suite's resize_downsample_scales_*_align_corners data) uses "
     "extent x scale as length_resized, onnxruntime the floored output length"),
    ("resize/*/coord=tf_crop_and_resize/*ragged-scales", "as align_corners: length_resized is "
     "extent x scale in the reference, the floored output length in onnxruntime"),
    ("resize/*/mode=cubic/coord=pytorch_half_pixel/to1-sizes", "a 1-wide output: the reference "
     "samples at -0.5 (which only cubic's taps can tell from 0), onnxruntime at 0"),
    ("gridsample/opset20/mode=cubic/padding_mode=border/*", "the reference (and the node "
     "suite's data) clamps an outside source coordinate into the input before taking the 4 x 4 "
     "taps, onnxruntime only clamps each tap"),
    ("maxunpool/*/output_shape=larger", "the reference (and the node suite's "
     "maxunpool_export_with_output_shape data) unpools into the shape the window gives and pads "
     "it at the tail to output_shape, onnxruntime reads the indices as flat positions in "
     "output_shape"),
]

NP_TO_ONNX = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.float64): TensorProto.DOUBLE,
              np.dtype(np.float16): TensorProto.FLOAT16,
              np.dtype(np.int32): TensorProto.INT32, np.dtype(np.int64): TensorProto.INT64,
              np.dtype(np.uint8): TensorProto.UINT8, np.dtype(np.int8): TensorProto.INT8,
              np.dtype(np.uint16): TensorProto.UINT16, np.dtype(np.uint32): TensorProto.UINT32,
              np.dtype(np.uint64): TensorProto.UINT64}


# ---------------------------------------------------------------------------------------------
# Building cases
# ---------------------------------------------------------------------------------------------

class Case:
    """One model: `inputs` are fed at run time, `consts` become initializers."""

    def __init__(self, name, op, attrs, opset, inputs, consts=(), n_outputs=1, out_dtype=None):
        self.name = name
        self.op, self.attrs, self.opset = op, attrs, opset
        self.inputs = list(inputs)    # [(name, array)], graph inputs
        self.consts = list(consts)    # [(name, array)], initializers (array None: omitted)
        self.node_inputs = None       # the node's input names, "" for an omitted optional one
        self.n_outputs = n_outputs
        self.out_dtype = out_dtype or self.inputs[0][1].dtype
        # (twin Case, per-output transposes or None, why): where onnxruntime cannot run this
        # model as the spec defines it, its outputs on an equivalent model are the reference.
        self.oracle = None

    def model(self):
        node_inputs = self.node_inputs or [n for n, _ in self.inputs + self.consts]
        outs = ["out%d" % i for i in range(self.n_outputs)]
        node = helper.make_node(self.op, node_inputs, outs, name="node",
                                **{k: v for k, v in self.attrs.items() if v is not None})
        graph = helper.make_graph(
            [node], self.name.replace("/", "_"),
            [helper.make_tensor_value_info(n, NP_TO_ONNX[a.dtype], list(a.shape))
             for n, a in self.inputs],
            [helper.make_tensor_value_info(o, NP_TO_ONNX[np.dtype(self.out_dtype)], None)
             for o in outs],
            [numpy_helper.from_array(a, n) for n, a in self.consts if a is not None])
        opsets = [helper.make_opsetid("", self.opset)]
        m = helper.make_model(graph, opset_imports=opsets, producer_name="test_attr_choices")
        m.ir_version = helper.find_min_ir_version_for(opsets)
        return m


def rng_for(name):
    """A generator seeded by the case name: the same data every run, whatever runs beside it."""
    return np.random.default_rng(zlib.crc32(name.encode()))


def f32(a):
    return np.asarray(a, dtype=np.float32)


def i64(a):
    return np.asarray(a, dtype=np.int64)


def gelu_cases():
    cases = []
    for opset in (20, 22):
        for dtype in (np.float32, np.float16):
            for approx in (None, "none", "tanh"):
                name = "gelu/opset%d/approximate=%s" % (opset, approx or "absent")
                if dtype == np.float16:
                    name += "/float16"  # (onnxruntime has no float64 Erf, so no float64 case)
                r = rng_for(name)
                # The whole range [-3, 3] evenly, then random points in it: erf and tanh GELU
                # part by up to ~5e-4 around |x| = 2 (and by 10% of the value near -3).
                x = np.concatenate([np.linspace(-3, 3, 97), r.uniform(-3, 3, 31)])
                cases.append(Case(name, "Gelu", {"approximate": approx}, opset,
                                  [("x", x.astype(dtype).reshape(4, 32))]))
    return cases


def bitshift_cases():
    """BitShift direction, every unsigned type, shifts up to the width and past it (0 then)."""
    cases = []
    for direction in ("LEFT", "RIGHT"):
        for dtype in (np.uint8, np.uint16, np.uint32, np.uint64):
            name = "bitshift/opset11/direction=%s/%s" % (direction, np.dtype(dtype).name)
            r = rng_for(name)
            bits = 8 * np.dtype(dtype).itemsize
            x = r.integers(0, np.iinfo(dtype).max, (3, 8), dtype=dtype, endpoint=True)
            # onnxruntime masks nothing: keep the shifts inside the width, where C is defined too
            y = r.integers(0, bits, (3, 8)).astype(dtype)
            cases.append(Case(name, "BitShift", {"direction": direction}, 11,
                              [("x", x), ("y", y)]))
    return cases


def depth_space_cases():
    """DepthToSpace mode (DCR, CRD; absent before opset 11) and SpaceToDepth, block sizes 2, 3."""
    cases = []
    for opset, modes in ((11, (None, "DCR", "CRD")), (13, (None, "DCR", "CRD"))):
        for mode in modes:
            for b in (2, 3):
                name = "depthtospace/opset%d/mode=%s/blocksize=%d" % (opset, mode or "absent", b)
                x = f32(rng_for(name).standard_normal((2, 2 * b * b, 3, 4)))
                cases.append(Case(name, "DepthToSpace", {"mode": mode, "blocksize": b}, opset,
                                  [("x", x)]))
    for b in (2, 3):
        name = "spacetodepth/opset13/blocksize=%d" % b
        x = f32(rng_for(name).standard_normal((2, 3, 2 * b, 3 * b)))
        cases.append(Case(name, "SpaceToDepth", {"blocksize": b}, 13, [("x", x)]))
    return cases


def pad_cases():
    cases = []
    # pads per axis (begin..., end...) of a [2, 3, 4, 5] tensor; reflect needs each < extent.
    grow = [0, 1, 2, 1, 1, 0, 1, 3]
    mixed = [0, -1, 2, 0, 1, 1, -1, 3]  # crops one side of axes 1 and 2, pads the other
    for opset, modes in ((10, ("constant", "reflect", "edge")),
                         (13, ("constant", "reflect", "edge")),
                         (19, ("constant", "reflect", "edge", "wrap")),
                         (22, ("constant", "reflect", "edge", "wrap"))):
        for mode in modes:
            for shape_name, pads in (("grow", grow), ("mixed", mixed)):
                name = "pad/opset%d/mode=%s/%s" % (opset, mode, shape_name)
                x = f32(rng_for(name).standard_normal((2, 3, 4, 5)))
                if opset < 11:
                    attrs = {"mode": mode, "pads": pads}
                    if mode == "constant":
                        attrs["value"] = 1.5
                    cases.append(Case(name, "Pad", attrs, opset, [("x", x)]))
                    continue
                consts = [("pads", i64(pads))]
                if mode == "constant":
                    consts.append(("value", f32(1.5)))
                cases.append(Case(name, "Pad", {"mode": mode}, opset, [("x", x)], consts))
    # Opset 18's axes input, negative axes included; int32 data (a separate copy path).
    for mode in ("constant", "reflect", "edge", "wrap"):
        name = "pad/opset19/mode=%s/axes" % mode
        x = f32(rng_for(name).standard_normal((2, 3, 4, 5)))
        cases.append(Case(name, "Pad", {"mode": mode}, 19, [("x", x)],
                          [("pads", i64([2, 1, 3, 2])), ("value", None), ("axes", i64([-1, 1]))]))
        cases[-1].node_inputs = ["x", "pads", "", "axes"]
        name = "pad/opset19/mode=%s/int32" % mode
        x = rng_for(name).integers(-100, 100, (3, 4, 5)).astype(np.int32)
        consts = [("pads", i64([1, 2, 0, 0, 1, 3]))]
        if mode == "constant":
            consts.append(("value", np.asarray(7, dtype=np.int32)))
        cases.append(Case(name, "Pad", {"mode": mode}, 19, [("x", x)], consts))
    # float16 data (Pad is one of the lowerings that takes it); before opset 11 the 'value'
    # attribute matters for constant mode only.
    for mode in ("constant", "reflect", "edge", "wrap"):
        name = "pad/opset19/mode=%s/float16" % mode
        x = rng_for(name).standard_normal((3, 4, 5)).astype(np.float16)
        consts = [("pads", i64([1, 2, 0, 0, 1, 3]))]
        if mode == "constant":
            consts.append(("value", np.asarray(1.5, dtype=np.float16)))
        cases.append(Case(name, "Pad", {"mode": mode}, 19, [("x", x)], consts))
    for mode, value in (("constant", 0.0), ("constant", 1.5), ("reflect", 1.5), ("edge", 1.5)):
        name = "pad/opset10/mode=%s/float16/value=%g" % (mode, value)
        x = rng_for(name).standard_normal((3, 4, 5)).astype(np.float16)
        cases.append(Case(name, "Pad", {"mode": mode, "pads": [1, 2, 0, 0, 1, 3],
                                        "value": value}, 10, [("x", x)]))
    # wrap may pad by more than the extent (it cycles); edge and constant too.
    for mode in ("constant", "edge", "wrap"):
        name = "pad/opset19/mode=%s/wider-than-input" % mode
        x = f32(rng_for(name).standard_normal((3, 4)))
        cases.append(Case(name, "Pad", {"mode": mode}, 19, [("x", x)],
                          [("pads", i64([4, 5, 3, 9]))]))
    return cases


RESIZE_COORDS = {
    11: ["half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric",
         "tf_half_pixel_for_nn", "tf_crop_and_resize"],
    13: ["half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_crop_and_resize"],
    19: ["half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
         "asymmetric", "tf_crop_and_resize"],
}
NEAREST_MODES = ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"]
# (input shape, "scales" or "sizes", values). Every scale and every sizes/extent ratio is a
# dyadic fraction, so a sampling coordinate that is mathematically a tie or an integer (where
# nearest_mode and the edges decide) is computed exactly in float32 and float64 alike, and
# bdc (double) and onnxruntime (float) cannot part on rounding alone. Scales of 2 and 1/2 put
# nearest samples exactly halfway for asymmetric and half_pixel respectively.
RESIZE_GEOMETRY = {
    "up-scales": ((1, 2, 6, 8), "scales", [1, 1, 2.0, 2.5]),
    "down-scales": ((1, 2, 6, 8), "scales", [1, 1, 0.5, 0.375]),
    "up-sizes": ((1, 2, 6, 8), "sizes", [1, 2, 9, 12]),
    "down-sizes": ((1, 2, 6, 8), "sizes", [1, 2, 3, 6]),
    "odd-up-scales": ((1, 2, 5, 7), "scales", [1, 1, 2.0, 3.0]),
    # A 1-wide output: pytorch_half_pixel's and align_corners' special case.
    "to1-sizes": ((1, 2, 6, 8), "sizes", [1, 2, 3, 1]),
    # extent x scale not an integer (10.5 and 5.5, floored to 10 and 5): whether the
    # coordinate formulas use the output length (the spec's length_resized, as onnxruntime
    # does) or extent x scale shows here.
    "ragged-scales": ((1, 2, 6, 8), "scales", [1, 1, 1.75, 0.6875]),
}
ROI = [0, 0, -0.25, 0.125, 1, 1, 1.125, 0.875]  # tf_crop_and_resize, partly outside the input


def resize_case(opset, mode, coord, nearest, geometry, policy=None, axes=None):
    parts = ["resize/opset%d" % opset, "mode=%s" % mode]
    if coord:
        parts.append("coord=%s" % coord)
    if nearest:
        parts.append("nearest=%s" % nearest)
    if policy:
        parts.append("policy=%s" % policy)
    parts.append(geometry)
    name = "/".join(parts)
    shape, by, values = RESIZE_GEOMETRY[geometry]
    if axes:
        values = values[-len(axes):]
    x = f32(rng_for(name).standard_normal(shape))
    attrs = {"mode": mode, "coordinate_transformation_mode": coord, "nearest_mode": nearest,
             "keep_aspect_ratio_policy": policy, "axes": axes}
    if coord == "tf_crop_and_resize":
        attrs["extrapolation_value"] = 0.25
    if opset == 10:
        return Case(name, "Resize", attrs, opset, [("x", x)], [("scales", f32(values))])
    roi = None
    if coord == "tf_crop_and_resize":
        roi = f32(ROI[2:4] + ROI[6:8]) if axes else f32(ROI)
    # Opsets 11 and 12 require roi and scales, possibly empty; 13 on they may be omitted.
    empty = f32([]) if opset < 13 else None
    consts = [("roi", roi if roi is not None else empty)]
    if by == "scales":
        consts.append(("scales", f32(values)))
    else:
        consts += [("scales", empty), ("sizes", i64(values))]
    c = Case(name, "Resize", attrs, opset, [("x", x)], [(n, a) for n, a in consts if a is not None])
    c.node_inputs = ["x"] + [n if a is not None else "" for n, a in consts]
    return c


def resize_cases():
    cases = []
    for mode in ("nearest", "linear"):  # opset 10: no coordinate or nearest attributes
        for g in ("up-scales", "down-scales", "odd-up-scales"):
            cases.append(resize_case(10, mode, None, None, g))
    # Opset 19 (the newest Resize; every later opset uses it): every coordinate mode x every
    # interpolation (nearest with each nearest_mode) x up/down x scales/sizes; the geometries
    # that probe the coordinate formulas only (odd extents, a 1-wide output, extent x scale
    # not an integer) with one nearest_mode.
    full = ["up-scales", "down-scales", "up-sizes", "down-sizes"]
    for coord in RESIZE_COORDS[19]:
        for g in RESIZE_GEOMETRY:
            for nm in (NEAREST_MODES if g in full else NEAREST_MODES[:1]):
                cases.append(resize_case(19, "nearest", coord, nm, g))
            cases.append(resize_case(19, "linear", coord, None, g))
            cases.append(resize_case(19, "cubic", coord, None, g))
    # Opsets 11 and 13 (their own lists, through bdc's same tables): one geometry each, except
    # tf_half_pixel_for_nn, which only 11 and 12 have and which gets the full treatment.
    for opset, g in ((11, "down-scales"), (13, "up-sizes")):
        for coord in RESIZE_COORDS[opset]:
            tf_nn = coord == "tf_half_pixel_for_nn"
            for gg in (full if tf_nn else [g]):
                for nm in (NEAREST_MODES if tf_nn else [None]):
                    cases.append(resize_case(opset, "nearest", coord, nm, gg))
                cases.append(resize_case(opset, "linear", coord, None, gg))
                cases.append(resize_case(opset, "cubic", coord, None, gg))
    # Integer data: nearest copies elements (every nearest_mode once for uint8); bdc compiles
    # linear and cubic for float data only (onnxruntime has linear for integers, and fails at
    # run time on cubic).
    for dtype in (np.uint8, np.int8, np.int32):
        for mode in ("nearest", "linear", "cubic"):
            for nm in (NEAREST_MODES if mode == "nearest" and dtype == np.uint8 else [None]):
                c = resize_case(19, mode, "half_pixel", nm, "down-scales")
                c.name = c.name.replace("/down-scales", "/%s/down-scales" % np.dtype(dtype).name)
                info = np.iinfo(dtype)
                c.inputs = [("x", rng_for(c.name).integers(info.min, info.max, c.inputs[0][1].shape,
                                                           endpoint=True).astype(dtype))]
                c.out_dtype = dtype
                cases.append(c)
    # keep_aspect_ratio_policy (opset 18) scales H and W by one factor computed from sizes.
    for policy in ("stretch", "not_larger", "not_smaller"):
        for mode in ("nearest", "linear", "cubic"):
            for g in ("up-sizes", "down-sizes"):
                cases.append(resize_case(19, mode, None, None, g, policy=policy, axes=[2, 3]))
    return cases


# Window geometries: (input shape, kernel, strides, dilations, explicit pads for NOTSET). The
# total SAME padding is odd on some axis, so SAME_UPPER and SAME_LOWER differ, in each geometry
# for Conv and the pools ((ceil(extent / stride) - 1) x stride + dilated kernel - extent)
# except 1d-k4s3, and in each for ConvTranspose (stride x (extent - 1) + dilated kernel -
# stride x extent) except 1d-k5s3.
WINDOWS = {
    "k4x3s2": ((1, 2, 7, 8), [4, 3], [2, 2], None, [1, 0, 2, 1]),
    "k2x2s1": ((1, 2, 7, 8), [2, 2], [1, 1], None, [0, 1, 1, 0]),
    "k3x2s2x1d2x1": ((1, 2, 8, 7), [3, 2], [2, 1], [2, 1], [2, 0, 1, 1]),
    # a plane that the pools' blocks cut into row and column ranges, unit strides
    "k3x3s1d2x1-big": ((1, 3, 131, 97), [3, 3], [1, 1], [2, 1], [2, 1, 1, 2]),
    "1d-k5s3": ((1, 2, 11), [5], [3], None, [2, 1]),
    "1d-k4s3": ((1, 2, 11), [4], [3], None, [1, 2]),
    "3d-k3s2": ((1, 2, 5, 6, 7), [3, 3, 3], [2, 2, 2], None, [1, 0, 1, 0, 1, 1]),
}
AUTO_PADS = ["NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"]


def same_pads(op, shape, kernel, strides, dil, auto_pad):
    """The explicit pads the spec defines for SAME_UPPER / SAME_LOWER."""
    begin, end = [], []
    for i, k in enumerate(kernel):
        n, s, d = shape[2 + i], strides[i], (dil[i] if dil else 1)
        if op == "ConvTranspose":
            total = max(0, s * (n - 1) + (k - 1) * d + 1 - n * s)
        else:
            total = max(0, (-(-n // s) - 1) * s + (k - 1) * d + 1 - n)
        small = total // 2
        begin.append(small if auto_pad == "SAME_UPPER" else total - small)
        end.append(total - begin[-1])
    return begin + end


def window_cases():
    cases = []
    for op in ("Conv", "ConvTranspose", "MaxPool", "AveragePool"):
        variants = [{}]
        if op == "AveragePool":
            variants = [{"count_include_pad": 0}, {"count_include_pad": 1}]
        for wname, (shape, kernel, strides, dil, pads) in WINDOWS.items():
            for ap in AUTO_PADS:
                for extra in variants:
                    name = "%s/auto_pad=%s/%s" % (op.lower(), ap, wname)
                    if extra:
                        name += "/count_include_pad=%d" % extra["count_include_pad"]
                    r = rng_for(name)
                    x = f32(r.standard_normal(shape))
                    attrs = dict(extra, auto_pad=ap, strides=strides, dilations=dil,
                                 kernel_shape=kernel, pads=pads if ap == "NOTSET" else None)
                    consts = []
                    if op == "Conv":
                        consts = [("w", f32(r.standard_normal([3, shape[1]] + kernel) * 0.5)),
                                  ("b", f32(r.standard_normal(3)))]
                    elif op == "ConvTranspose":
                        consts = [("w", f32(r.standard_normal([shape[1], 3] + kernel) * 0.5)),
                                  ("b", f32(r.standard_normal(3)))]
                    c = Case(name, op, attrs, 22, [("x", x)], consts)
                    if dil and ap.startswith("SAME") and op != "ConvTranspose":
                        # onnxruntime refuses SAME_* with dilations for Conv ("Dilation not
                        # supported for AutoPadType::SAME_UPPER or AutoPadType::SAME_LOWER")
                        # and gets the pools' output extent wrong (3 where the spec's
                        # ceil(extent / stride) is 4): compare with onnxruntime on the same
                        # node given the spec's SAME pads explicitly (onnx.reference is no help
                        # either: its dilated SAME_LOWER pools are off).
                        twin = Case(name, op, dict(attrs, auto_pad="NOTSET", pads=same_pads(
                            op, shape, kernel, strides, dil, ap)), 22, [("x", x)], consts)
                        c.oracle = (twin, None, "auto_pad=NOTSET with the spec's SAME pads")
                    cases.append(c)
    # ConvTranspose's output_shape: the total padding is derived from it and auto_pad decides
    # which side takes the odd element.
    for ap in ("NOTSET", "SAME_UPPER", "SAME_LOWER"):
        name = "convtranspose/auto_pad=%s/output_shape" % ap
        r = rng_for(name)
        x = f32(r.standard_normal((1, 2, 4, 5)))
        attrs = {"auto_pad": ap, "strides": [2, 2], "kernel_shape": [3, 4],
                 "output_shape": [8, 11]}
        consts = [("w", f32(r.standard_normal([2, 3, 3, 4]) * 0.5))]
        cases.append(Case(name, "ConvTranspose", attrs, 22, [("x", x)], consts))
    return cases


LSTM_ACTS = {  # name: (takes alpha, takes beta)
    "Relu": (False, False), "Tanh": (False, False), "Sigmoid": (False, False),
    "Affine": (True, True), "LeakyRelu": (True, False), "ThresholdedRelu": (True, False),
    "ScaledTanh": (True, True), "HardSigmoid": (True, True), "Elu": (True, False),
    "Softsign": (False, False), "Softplus": (False, False),
}
# The spec: "Default values are the same as of corresponding ONNX operators" (Affine and
# ThresholdedRelu: alpha 1, beta 0). onnxruntime uses 0 for these, so their default cases are
# compared with onnxruntime given these values explicitly. ScaledTanh's operator had no
# defaults, so its defaulted case is not tested at all.
SPEC_DEFAULTS = {"Affine": ([1.0], [0.0]), "ThresholdedRelu": ([1.0], None),
                 "LeakyRelu": ([0.01], None), "HardSigmoid": ([0.2], [0.5]), "Elu": ([1.0], None)}
SEQ, BATCH, IN, HID = 5, 3, 4, 6


def lstm_case(name, direction=None, activations=None, alphas=None, betas=None, opset=14,
              layout=0, extras=False, hid=HID, **more):
    """A layout=1 case is compared with onnxruntime on its layout=0 twin (the same data
    transposed), since onnxruntime's CPU LSTM refuses layout=1."""
    r = rng_for(name)
    nd = 2 if direction == "bidirectional" else 1
    x = f32(r.standard_normal((SEQ, BATCH, IN)))
    w = f32(r.standard_normal((nd, 4 * hid, IN)) * 0.4)
    rr = f32(r.standard_normal((nd, 4 * hid, hid)) * 0.4)
    b = f32(r.standard_normal((nd, 8 * hid)) * 0.3)
    consts = [("w", w), ("r", rr), ("b", b)]
    node_inputs = ["x", "w", "r", "b"]
    if extras:  # sequence_lens (one full, one shorter, one of 1), initial_h/c, peepholes
        consts += [("lens", np.asarray([SEQ, 3, 1], dtype=np.int32)),
                   ("h0", f32(r.standard_normal((nd, BATCH, hid)) * 0.5)),
                   ("c0", f32(r.standard_normal((nd, BATCH, hid)) * 0.5)),
                   ("p", f32(r.standard_normal((nd, 3 * hid)) * 0.3))]
        node_inputs += ["lens", "h0", "c0", "p"]
    attrs = {"hidden_size": hid, "direction": direction, "activations": activations,
             "activation_alpha": alphas, "activation_beta": betas}
    attrs.update(more)

    def make(layout):
        t = (lambda a: np.ascontiguousarray(a.transpose(1, 0, 2))) if layout else (lambda a: a)
        cs = [(n, t(a) if n in ("h0", "c0") else a) for n, a in consts]
        c = Case(name, "LSTM", dict(attrs, layout=layout if opset >= 14 else None), opset,
                 [("x", t(x))], cs, n_outputs=3)
        c.node_inputs = node_inputs
        return c

    c = make(layout)
    if layout:
        c.oracle = (make(0), [(2, 0, 1, 3), (1, 0, 2), (1, 0, 2)],
                    "layout=0 on the transposed data")
    return c


def lstm_cases():
    cases = []
    for d in (None, "forward", "reverse", "bidirectional"):
        base = "lstm/direction=%s" % (d or "absent")
        cases.append(lstm_case(base, d))
        if d:
            cases.append(lstm_case(base + "/opset%d" % (7 if d == "bidirectional" else 22), d,
                                   opset=7 if d == "bidirectional" else 22))
            cases.append(lstm_case(base + "/lens-h0-c0-peepholes", d, extras=True))
            cases.append(lstm_case(base + "/layout=1", d, layout=1))
            cases.append(lstm_case(base + "/layout=1/lens-h0-c0-peepholes", d, layout=1,
                                   extras=True))
    # Each function in all three slots (f, g, h), with alpha/beta given (three values each, one
    # per slot, so a slot reading the wrong one shows) and, where it takes them, defaulted.
    # Softplus in all three slots grows without bound (f and h feed each other), so it takes
    # the f slot and the g/h slots in two cases.
    for act, (ta, tb) in LSTM_ACTS.items():
        alphas = [0.7, 0.2, 1.3] if ta else None
        betas = [0.1, 0.4, 0.9] if tb else None
        if act == "ThresholdedRelu":
            alphas = [0.1, -0.3, 0.2]
        lists = [[act] * 3] if act != "Softplus" else [[act, "Tanh", "Tanh"],
                                                       ["Sigmoid", act, act]]
        for acts in lists:
            name = "lstm/activations=%s" % ",".join(acts)
            cases.append(lstm_case(name, "forward", acts, alphas, betas))
            if (ta or tb) and act in SPEC_DEFAULTS:
                c = lstm_case(name + "/default-alpha-beta", "forward", acts)
                if act in ("Affine", "ThresholdedRelu"):
                    al, be = SPEC_DEFAULTS[act]
                    twin = lstm_case(c.name, "forward", acts, al * 3, be * 3 if be else None)
                    c.oracle = (twin, None, "the spec's defaults spelled out")
                cases.append(c)
    # Mixed lists: alpha/beta are consumed in order by the functions that take them, across
    # directions.
    mixed = ["HardSigmoid", "Elu", "Softsign", "Sigmoid", "ScaledTanh", "LeakyRelu"]
    cases.append(lstm_case("lstm/direction=bidirectional/activations=mixed", "bidirectional",
                           mixed, [0.3, 0.8, 0.9, 0.05], [0.6, 1.1]))
    cases.append(lstm_case("lstm/direction=reverse/activations=mixed", "reverse",
                           ["Affine", "Softplus", "ThresholdedRelu"], [0.6, 0.2], [0.25]))
    cases.append(lstm_case("lstm/direction=bidirectional/activations=mixed/lens-h0-c0-peepholes",
                           "bidirectional", ["Sigmoid", "Tanh", "Relu", "HardSigmoid", "Affine",
                                             "Tanh"], [0.25, 0.9], [0.5, -0.1], extras=True))
    # onnxruntime matches the names case-insensitively, and so does bdc.
    # 4 * hidden of 512 columns (64K multiply-adds a step, the least that is shared): each step's
    # product is shared between threads (bdrt_help), and the two directions' blocks ask for help
    # at once
    for d in ("forward", "bidirectional"):
        cases.append(lstm_case("lstm/direction=%s/hidden=128/lens-h0-c0-peepholes" % d, d,
                               extras=True, hid=128))
    cases.append(lstm_case("lstm/activations=lowercase", "forward", ["sigmoid", "tanh", "relu"]))
    cases.append(lstm_case("lstm/activations=uppercase", "bidirectional",
                           ["SIGMOID", "TANH", "TANH", "HARDSIGMOID", "ELU", "SOFTSIGN"]))
    # The other LSTM attributes that change the cell: clip and input_forget, per direction.
    for d in ("forward", "reverse", "bidirectional"):
        cases.append(lstm_case("lstm/direction=%s/clip=0.5" % d, d, clip=0.5))
        cases.append(lstm_case("lstm/direction=%s/input_forget=1" % d, d, input_forget=1))
    return cases


def grid_sample_cases():
    """GridSample mode x padding_mode x align_corners, opset 20's names and opset 16's; the grid
    reaches past [-1, 1] so that every padding mode has samples to treat. Cubic with border
    padding is checked against the reference (REFERENCE_NOT_ORT)."""
    cases = []
    for opset, modes in ((16, ("bilinear", "nearest", "bicubic")), (20, ("linear", "nearest", "cubic"))):
        for mode in modes:
            for pad in ("zeros", "border", "reflection"):
                if mode == "bicubic" and pad == "border":
                    continue  # as opset 20's cubic border below, and the reference lacks 'bicubic'
                for align in (0, 1):
                    name = "gridsample/opset%d/mode=%s/padding_mode=%s/align_corners=%d" % (
                        opset, mode, pad, align)
                    r = rng_for(name)
                    x = f32(r.standard_normal((2, 3, 5, 4)))
                    grid = f32(r.uniform(-1.6, 1.6, (2, 6, 3, 2)))
                    cases.append(Case(name, "GridSample", {"mode": mode, "padding_mode": pad,
                                                           "align_corners": align}, opset,
                                      [("x", x), ("grid", grid)]))
    return cases


def scatter_cases():
    """ScatterElements and ScatterND reduction (opsets 16 and 18); distinct indices for 'none',
    repeated ones for the others so that they combine."""
    cases = []
    for op in ("ScatterElements", "ScatterND"):
        for red in ("none", "add", "mul", "max", "min"):
            name = "scatter/%s/reduction=%s" % (op, red)
            r = rng_for(name)
            x = f32(r.standard_normal((4, 3)))
            if op == "ScatterElements":
                idx = i64([[0, 1, 2], [3, 2, 0]] if red == "none" else [[0, 1, 2], [0, 1, -4]])
                upd = f32(r.standard_normal((2, 3)))
                attrs = {"axis": 0, "reduction": red}
            else:
                idx = i64([[1], [3]] if red == "none" else [[1], [-3]])
                upd = f32(r.standard_normal((2, 3)))
                attrs = {"reduction": red}
            cases.append(Case(name, op, attrs, 18, [("x", x)], [("indices", idx), ("updates", upd)]))
    # Without reduction a scatter is pushed (one pass over data and updates): sizes where the
    # pull's table (every output element against every update along the scattered dims) is past
    # bdc's limit of 2^24, int32 indices, negative ones; distinct per target, since the spec leaves
    # the order of duplicates open.
    name = "scatter/ScatterND/large"
    r = rng_for(name)
    x, upd = f32(r.standard_normal((4, 16, 256, 64))), f32(r.standard_normal((24, 256, 64)))
    pairs = r.permutation(64)[:24]
    idx = i64(np.stack([pairs // 16, pairs % 16 - 16 * (pairs % 3 == 0)], axis=1))
    cases.append(Case(name, "ScatterND", {}, 18, [("x", x)], [("indices", idx), ("updates", upd)]))
    name = "scatter/ScatterElements/large-int32"
    r = rng_for(name)
    x, upd = f32(r.standard_normal((64, 4096))), f32(r.standard_normal((64, 80)))
    idx = np.stack([r.permutation(4096)[:80] - 2048 for _ in range(64)]).astype(np.int32)
    cases.append(Case(name, "ScatterElements", {"axis": 1}, 18, [("x", x)],
                      [("indices", idx), ("updates", upd)]))
    return cases


def roialign_cases():
    """RoiAlign mode x coordinate_transformation_mode (opset 16; opset 10 has none) x
    sampling_ratio 0 (adaptive: each roi's samples per bin follow from its size) and 2, with rois
    and batch indices as constants and as graph inputs, on two images with rois partly outside
    them, one inverted, one large enough for more than 4 samples per bin along each dim, and
    batch indices in any order."""
    cases = []
    rois = f32([[0, 0, 5, 4], [-3, -2, 4, 3], [8, 6, 14, 12], [2.5, 1, 13, 11.5], [5, 5, 4, 4.5],
                [1, 2, 1.5, 2.2], [-4, -5, 27, 30]])
    batch = i64([0, 1, 1, 0, 1, 0, 1])
    for opset, ctms in ((10, (None,)), (16, ("half_pixel", "output_half_pixel"))):
        for mode in ("avg", "max"):
            for ctm in ctms:
                for ratio in (0, 2):
                    for runtime_rois in (False, True):
                        name = "roialign/opset%d/mode=%s%s/sampling_ratio=%d%s" % (
                            opset, mode, "/coordinate_transformation_mode=%s" % ctm if ctm else "",
                            ratio, "/rois-at-run-time" if runtime_rois else "")
                        x = f32(rng_for(name).standard_normal((2, 3, 6, 7)))
                        data = [("rois", rois), ("batch_indices", batch)]
                        attrs = {"mode": mode, "coordinate_transformation_mode": ctm,
                                 "output_height": 3, "output_width": 2, "sampling_ratio": ratio,
                                 "spatial_scale": 0.5}
                        cases.append(Case(name, "RoiAlign", attrs, opset,
                                          [("x", x)] + (data if runtime_rois else []),
                                          [] if runtime_rois else data))
    return cases


def maxpool_indices(x, attrs):
    """onnxruntime's MaxPool of x: the values and indices that a MaxUnpool undoes."""
    node = helper.make_node("MaxPool", ["x"], ["y", "i"], **attrs)
    graph = helper.make_graph([node], "pool", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, list(x.shape))], [
        helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
        helper.make_tensor_value_info("i", TensorProto.INT64, None)])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 12)])
    m.ir_version = 7
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, {"x": x})


def maxunpool_cases():
    """MaxUnpool of onnxruntime's MaxPool values and indices, 1-D to 3-D: strides other than the
    kernel, pads, overlapping windows (one index twice), and output_shape absent, equal to the
    unpooled shape and larger (the reference pads the unpooled tensor at the tail;
    REFERENCE_NOT_ORT)."""
    cases = []
    for dims, shape, attrs in (
            ("1d", (1, 2, 9), {"kernel_shape": [3], "strides": [2], "pads": [1, 1]}),
            ("2d", (2, 3, 5, 7), {"kernel_shape": [2, 3], "strides": [3, 2]}),
            ("2d-overlapping", (1, 2, 5, 6), {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}),
            ("3d", (1, 2, 4, 6, 4), {"kernel_shape": [2, 2, 2], "strides": [2, 2, 2]}),
            ("2d-large", (1, 32, 64, 64), {"kernel_shape": [2, 2], "strides": [2, 2]})):
        for os_kind in ("absent", "same", "larger"):
            if os_kind != "absent" and dims == "2d-large":
                continue
            if os_kind == "larger" and dims != "2d":
                continue
            for opset in (9, 11):
                if os_kind != "absent" and opset == 9:
                    continue
                name = "maxunpool/opset%d/%s/output_shape=%s" % (opset, dims, os_kind)
                y, idx = maxpool_indices(f32(rng_for(name).standard_normal(shape)), attrs)
                extra = {"same": list(shape), "larger": list(shape[:2]) + [d + 2 for d in shape[2:]]}
                consts = [("output_shape", i64(extra[os_kind]))] if os_kind in extra else []
                cases.append(Case(name, "MaxUnpool", attrs, opset, [("x", y), ("i", idx)], consts))
    return cases


def loss_cases():
    """NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss reduction, with and without
    weights and ignore_index (a target that is ignore_index is in the data)."""
    cases = []
    for op in ("NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss"):
        for red in ("none", "sum", "mean"):
            for weighted in (False, True):
                for ii in (None, 2):
                    name = "loss/%s/reduction=%s%s%s" % (op, red, "/weight" if weighted else "",
                                                         "/ignore_index" if ii is not None else "")
                    r = rng_for(name)
                    x = f32(r.standard_normal((3, 5, 4)))
                    t = i64(r.integers(0, 5, (3, 4)))
                    t[0, 0] = 2
                    consts = [("target", t)] + ([("weight", f32(r.uniform(0.5, 2, 5)))]
                                                if weighted else [])
                    cases.append(Case(name, op, {"reduction": red, "ignore_index": ii}, 13,
                                      [("x", x)], consts))
    return cases


def rnn_cases():
    """GRU and RNN direction and activations (with linear_before_reset for GRU)."""
    cases = []
    for op, gates, acts in (("RNN", 1, (["Relu"], ["HardSigmoid"])),
                            ("GRU", 3, (["Sigmoid", "Tanh"], ["HardSigmoid", "Softsign"]))):
        for d in ("forward", "reverse", "bidirectional"):
            nd = 2 if d == "bidirectional" else 1
            for act in (None,) + acts:
                for lbr in ((0, 1) if op == "GRU" else (None,)):
                    name = "%s/direction=%s%s%s" % (op.lower(), d,
                                                    "/activations=" + "-".join(act) if act else "",
                                                    "/linear_before_reset=%d" % lbr if lbr else "")
                    r = rng_for(name)
                    x = f32(r.standard_normal((4, 2, 3)))
                    consts = [("W", f32(r.standard_normal((nd, gates * 5, 3)) * 0.5)),
                              ("R", f32(r.standard_normal((nd, gates * 5, 5)) * 0.5)),
                              ("B", f32(r.standard_normal((nd, 2 * gates * 5)) * 0.5))]
                    attrs = {"hidden_size": 5, "direction": d,
                             "activations": act * nd if act else None,
                             "linear_before_reset": lbr}
                    cases.append(Case(name, op, attrs, 14, [("x", x)], consts, n_outputs=2))
    return cases


def upsample_cases():
    """Upsample's mode at opset 7 (scales an attribute) and 9 (scales an input): Resize as opset
    10 defines it, integer and fractional scales."""
    cases = []
    for opset in (7, 9):
        for mode in ("nearest", "linear"):
            for sname, scales in (("x2x3", [1.0, 1.0, 2.0, 3.0]), ("x1.5x2.5", [1.0, 1.0, 1.5, 2.5])):
                name = "upsample/opset=%d/mode=%s/%s" % (opset, mode, sname)
                x = f32(rng_for(name).standard_normal((1, 2, 5, 4)))
                if opset < 9:
                    cases.append(Case(name, "Upsample", {"mode": mode, "scales": scales}, opset,
                                      [("x", x)]))
                else:
                    cases.append(Case(name, "Upsample", {"mode": mode}, opset, [("x", x)],
                                      [("scales", f32(scales))]))
    return cases


def all_cases():
    return (gelu_cases() + pad_cases() + resize_cases() + window_cases() + lstm_cases() +
            bitshift_cases() + depth_space_cases() + grid_sample_cases() + scatter_cases() +
            roialign_cases() + maxunpool_cases() + loss_cases() + rnn_cases() + upsample_cases())


# ---------------------------------------------------------------------------------------------
# Running one case
# ---------------------------------------------------------------------------------------------

def first_line(text):
    lines = [l.strip() for l in (text or "").splitlines() if l.strip()]
    for l in lines:  # prefer the line naming what went wrong
        if "error" in l or "node " in l:
            return l
    return lines[0] if lines else "(no message)"


def expected_refusal(name):
    """(message text, reason) when EXPECTED_REFUSALS lists the case, else None."""
    for pattern, text, reason in EXPECTED_REFUSALS:
        if fnmatch.fnmatchcase(name, pattern):
            return text, reason
    return None


def max_err(got, want):
    g, w = got.astype(np.float64), want.astype(np.float64)
    with np.errstate(all="ignore"):
        d = np.abs(g - w)
        d = np.where(np.isnan(g) & np.isnan(w), 0.0, d)
        d = np.where(np.isnan(d), np.inf, d)
    return float(d.max()) if d.size else 0.0


def tolerance(dtype):
    return (RTOL_F16, ATOL_F16) if dtype == np.float16 else (RTOL, ATOL)


def close_mask(got, want):
    if got.dtype.kind in "fc":
        rtol, atol = tolerance(got.dtype)
        return np.isclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
    return got == want


def close(got, want):
    return bool(close_mask(got, want).all())


def reference_side(case, model, name, got, want):
    """Which of bdc and onnxruntime the ONNX reference implementation agrees with."""
    try:
        from onnx.reference import ReferenceEvaluator
        ref = ReferenceEvaluator(model).run([name], {n: a for n, a in case.inputs})[0]
        ref = np.asarray(ref).astype(want.dtype)
    except Exception as e:  # noqa: BLE001 - the reference lacks some attribute values
        return "onnx.reference: n/a (%s)" % (str(e).splitlines()[0][:60] if str(e) else
                                            type(e).__name__)
    if ref.shape != want.shape:
        return "onnx.reference: shape %s" % list(ref.shape)
    eb, eo = max_err(got, ref), max_err(want, ref)
    side = ("agrees with bdc" if close(got, ref) and not close(want, ref) else
            "agrees with onnxruntime" if close(want, ref) and not close(got, ref) else
            "agrees with both" if close(got, ref) else "agrees with neither")
    return "onnx.reference %s (its max abs err to bdc %.3g, to onnxruntime %.3g)" % (side, eb, eo)


def onnxruntime_outputs(case):
    """{output name: onnxruntime's value} for the case (or for its oracle twin)."""
    twin, perms, _ = case.oracle or (case, None, "")
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    sess = ort.InferenceSession(twin.model().SerializeToString(), so,
                                providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    values = sess.run(names, dict(twin.inputs))
    if perms:
        values = [np.ascontiguousarray(v.transpose(p)) for v, p in zip(values, perms)]
    return names, dict(zip(names, values))


def run_case(case, bdc, fusion, verbose):
    """Returns (status, detail lines): status "ok", "refused" (expected) or "fail"."""
    listed = expected_refusal(case.name)
    try:
        model = case.model()
        data = model.SerializeToString()
    except Exception as e:  # noqa: BLE001 - a broken case fails alone, with its reason
        return "fail", ["building the model: %s: %s" % (type(e).__name__, e)]

    tmp = tempfile.mkdtemp(prefix="bdc-attr-choices-")
    try:
        src = os.path.join(tmp, "model.onnx")
        with open(src, "wb") as f:
            f.write(data)
        exe = os.path.join(tmp, "model")
        cmd = [bdc, "compile", src, "-o", exe, "--werror", "-q", "--fusion", fusion]
        try:
            r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               errors="replace", timeout=COMPILE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return "fail", ["bdc compile timed out after %d s" % COMPILE_TIMEOUT_S]
        if r.returncode < 0:
            return "fail", ["bdc killed by signal %d" % -r.returncode]
        if r.returncode == 3 and listed and listed[0] in r.stderr:
            return "refused", ["refused as expected (%s): %s" % (listed[1],
                                                                 first_line(r.stderr))]
        if r.returncode != 0:
            why = ["bdc exit %d%s: %s" % (r.returncode,
                                          " (unsupported)" if r.returncode == 3 else "",
                                          first_line(r.stderr))]
            if listed:
                why.append("(EXPECTED_REFUSALS lists it for a message containing %r)"
                           % listed[0])
            return "fail", why
        if listed:
            return "fail", ["listed in EXPECTED_REFUSALS (%s) but compiled: remove the entry"
                            % listed[1]]
        info = subprocess.run([exe, "--info", "--json"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, errors="replace",
                              timeout=RUN_TIMEOUT_S)
        if info.returncode != 0:
            return "fail", ["model --info exit %d: %s" % (info.returncode,
                                                          first_line(info.stderr))]
        files = {o["name"]: o["file"] for o in json.loads(info.stdout)["outputs"]}
        try:
            out_names, reference = onnxruntime_outputs(case)
        except Exception as e:  # noqa: BLE001 - a case onnxruntime rejects is a broken case
            return "fail", ["onnxruntime: %s: %s" % (type(e).__name__,
                                                     str(e).splitlines()[0][:200])]
        by_reference = [why for pat, why in REFERENCE_NOT_ORT if fnmatch.fnmatchcase(case.name, pat)]
        if by_reference:
            from onnx.reference import ReferenceEvaluator
            ref = ReferenceEvaluator(model).run(out_names, dict(case.inputs))
            ref = {n: np.asarray(v).astype(reference[n].dtype) for n, v in zip(out_names, ref)}
            if all(close(reference[n], ref[n]) for n in out_names):
                return "fail", ["listed in REFERENCE_NOT_ORT (%s) but onnxruntime now agrees with "
                                "onnx.reference: remove the entry" % by_reference[0]]
            reference = ref
        args = []
        for n, a in case.inputs:
            p = os.path.join(tmp, "in_%s.npy" % n)
            np.save(p, a)
            args += ["--input", "%s=%s" % (n, p)]
        out = os.path.join(tmp, "out")
        os.mkdir(out)
        try:
            r = subprocess.run([exe] + args + ["--output-dir", out], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, errors="replace",
                               timeout=RUN_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return "fail", ["run timed out after %d s" % RUN_TIMEOUT_S]
        if r.returncode != 0:
            return "fail", ["run exit %d: %s" % (r.returncode, first_line(r.stderr))]

        problems, worst, details = [], 0.0, []
        for n in out_names:
            want = reference[n]
            if n not in files:
                problems.append("output '%s' is not an output of the executable" % n)
                continue
            got = np.load(os.path.join(out, files[n]), allow_pickle=False)
            if got.dtype != want.dtype or got.shape != want.shape:
                problems.append("output '%s': bdc %s%s, onnxruntime %s%s" % (
                    n, got.dtype, list(got.shape), want.dtype, list(want.shape)))
                continue
            err = max_err(got, want)
            worst = max(worst, err)
            if close(got, want):
                continue
            with np.errstate(all="ignore"):
                d = np.abs(got.astype(np.float64) - want.astype(np.float64))
                d = np.where(np.isnan(d), np.inf, d)
            if got.dtype.kind in "fc":  # the element furthest outside the tolerance
                rtol, atol = tolerance(got.dtype)
                with np.errstate(all="ignore"):
                    i = int(np.argmax(d - rtol * np.abs(want.astype(np.float64))))
            else:
                i = int(np.argmax(d))
            bad = int((~close_mask(got, want)).sum())
            problems.append("max abs err %.3g in output '%s' (%d of %d elements differ; worst "
                            "outside the tolerance at %s: bdc %r, onnxruntime %r)" % (
                                err, n, bad, got.size, list(np.unravel_index(i, got.shape)),
                                got.ravel()[i].item(), want.ravel()[i].item()))
            details.append(reference_side(case, model, n, got, want))
        if problems:
            lines = ["; ".join(problems)] + details
            if case.oracle:
                lines.append("(onnxruntime's side is its output on %s)" % case.oracle[2])
            if verbose:
                lines.append(" ".join(cmd))
            return "fail", lines
        return "ok", ["max abs err %.2g" % worst] if verbose else []
    except Exception as e:  # noqa: BLE001 - a broken case fails alone, with its reason
        return "fail", ["%s: %s" % (type(e).__name__, e)]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main(make_cases=None, doc=None, prog="test_attr_choices"):
    """The command line over make_cases() (default: this file's cases); test_control_flow.py
    runs its own cases through it."""
    ap = argparse.ArgumentParser(description=(doc or __doc__).split("\n")[0])
    ap.add_argument("--bdc", default=os.environ.get("BDC") or os.path.join(REPO, "build", "bdc"))
    ap.add_argument("--fusion", choices=("op", "none"), default="op")
    ap.add_argument("-j", dest="jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("-k", dest="pattern", help="only cases whose name matches this glob")
    ap.add_argument("-v", dest="verbose", action="store_true")
    args = ap.parse_args()
    if not os.access(args.bdc, os.X_OK):
        sys.stderr.write("%s: bdc not found or not executable: %s "
                         "(set BDC or pass --bdc)\n" % (prog, args.bdc))
        return 1
    bdc = os.path.abspath(args.bdc)

    cases = (make_cases or all_cases)()
    names = [c.name for c in cases]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        sys.stderr.write("%s: duplicate case names: %s\n" % (prog, " ".join(dup)))
        return 1
    if args.pattern:
        cases = [c for c in cases if fnmatch.fnmatchcase(c.name, args.pattern)]
    for pattern, _, _ in EXPECTED_REFUSALS:
        if not any(fnmatch.fnmatchcase(n, pattern) for n in names):
            print("warning: EXPECTED_REFUSALS entry '%s' matches no case" % pattern)

    t0 = time.time()
    passed = failed = refused = 0
    with ThreadPool(max(1, args.jobs)) as pool:
        results = pool.imap(lambda c: run_case(c, bdc, args.fusion, args.verbose), cases)
        for case, (status, lines) in zip(cases, results):
            if status == "fail":
                failed += 1
                print("FAIL %s: %s" % (case.name, lines[0]), flush=True)
                lines = lines[1:]
            else:
                passed += 1
                refused += status == "refused"
                print("ok %s%s" % (case.name, ": " + lines[0] if lines else ""), flush=True)
                lines = lines[1:]
            for l in lines:
                print("     %s" % l, flush=True)
    if refused:
        print("(%d of the passes are expected refusals, see EXPECTED_REFUSALS)" % refused)
    if passed + failed == 0:
        print("no test cases ran")
    print("(%.1f s, -j %d)" % (time.time() - t0, args.jobs))
    print("%d passed, %d failed" % (passed, failed))
    return 0 if failed == 0 and passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
