#!/usr/bin/env python3
"""A convolution with the max pool after it, fused into one nest (src/fuse/conv_pool.c), against
onnxruntime.

Usage: test_conv_pool.py [--bdc PATH] [--seeds N] [-v]
  --bdc     the bdc binary (default: $BDC, else <repo>/build/bdc)
  --seeds   random block orders per case in the runtime's schedule test mode (default 3)
  -v        also print each passing case's detail

Each case is a small model built with onnx.helper: a Conv, its activation, a MaxPool, with the
windows the real models' stems leave out: batch 2, ceil mode, pads on both, unit-stride pools
(whose bands share two rows), rectangular and strided-by-axis pools, grouped, depthwise and
dilated convolutions, images that blocks and bands cut unevenly. For each:
  fused  `bdc compile --fusion block --dump=fuse`: how many pools went into a convolution must be
         what the case expects, so a fusion that silently stops happening fails here, and so does
         one where it must not (the convolution's output also a graph output, a pool with
         Indices, an AveragePool, a Sigmoid the kernels do not apply, a residual Add, a
         convolution stacked with a sibling);
  runs   the executable under --schedule block (also in the schedule test mode: random block
         orders, intermediates NaN-poisoned) and --schedule op, every output compared with
         onnxruntime's with np.allclose(rtol=1e-4, atol=1e-5).
One line per case, then `N passed, M failed`; exits 1 if any failed.
"""

import os
import sys
import zlib

import numpy as np
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from test_horizontal import fused_main, run_fused  # noqa: E402


class Case:
    """A float32 input (random), constants and nodes; outputs as named."""

    def __init__(self, name, fused, shape):
        self.name, self.fused = name, fused
        self.rng = np.random.default_rng(zlib.crc32(name.encode()))
        self.feeds = {"x": self.rng.standard_normal(shape).astype(np.float32)}
        self.consts, self.nodes, self.outputs, self.n = {}, [], [], 0

    def const(self, a):
        self.n += 1
        name = "k%d" % self.n
        self.consts[name] = np.asarray(a, dtype=np.float32)
        return name

    def op(self, op_type, ins, n_out=1, **attrs):
        self.n += 1
        ys = ["%s%d_%d" % (op_type.lower(), self.n, k) for k in range(n_out)]
        self.nodes.append(helper.make_node(op_type, ins, ys, name="%s%d" % (op_type.lower(), self.n), **attrs))
        return ys[0] if n_out == 1 else ys

    def conv(self, x, cin, cout, k, group=1, **attrs):
        w = self.const(self.rng.standard_normal((cout, cin // group) + tuple(k)) * 0.3)
        b = self.const(self.rng.standard_normal(cout) * 0.1)
        return self.op("Conv", [x, w, b], kernel_shape=list(k), group=group, **attrs)

    def model(self):
        graph = helper.make_graph(
            self.nodes, self.name.replace("/", "_"),
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(self.feeds["x"].shape))],
            [helper.make_tensor_value_info(o, TensorProto.INT64 if o == "indices" else TensorProto.FLOAT, None)
             for o in self.outputs],
            [numpy_helper.from_array(a, n) for n, a in self.consts.items()])
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="test_conv_pool")
        m.ir_version = 8
        return m


def case(name, fused, shape, cin, cout, k, act, pool, conv_attrs=None, pool_op="MaxPool", extra=None,
         tanh_first=False):
    """x (or tanh(x)) -> Conv(cin -> cout, k) -> act ('relu', 'clip', 'sigmoid', None) ->
    pool_op(**pool); extra(c, conv_output, pool_output) may add nodes and outputs."""
    c = Case(name, fused, shape)
    y = c.conv(c.op("Tanh", ["x"]) if tanh_first else "x", cin, cout, k, **(conv_attrs or {}))
    a = {"relu": lambda: c.op("Relu", [y]),
         "clip": lambda: c.op("Clip", [y, c.const(0.0), c.const(6.0)]),
         "sigmoid": lambda: c.op("Sigmoid", [y]),
         None: lambda: y}[act]()
    p = c.op(pool_op, [a], **pool)
    c.outputs.append(p)
    if extra:
        extra(c, a, p)
    return c


def cases():
    s2 = dict(kernel_shape=[3, 3], strides=[2, 2])
    return [
        # SqueezeNet's stem: 3x3/2 unpadded, ceil mode, an odd image
        case("squeezenet-stem", 1, (1, 3, 37, 37), 3, 16, (3, 3), "relu", dict(s2, ceil_mode=1),
             dict(strides=[2, 2])),
        # ResNet's: 7x7/2 padded 3, the pool padded 1, batch 2
        case("resnet-stem-batch2", 1, (2, 3, 50, 50), 3, 24, (7, 7), "relu", dict(s2, pads=[1, 1, 1, 1]),
             dict(strides=[2, 2], pads=[3, 3, 3, 3])),
        # Clip (MobileNet's ReLU6) and a 2x2/2 pool over an odd image (its last row dropped)
        case("clip-2x2", 1, (1, 8, 21, 21), 8, 16, (3, 3), "clip", dict(kernel_shape=[2, 2], strides=[2, 2]),
             dict(pads=[1, 1, 1, 1])),
        # a unit-stride pool: consecutive bands share two rows
        case("unit-stride-pool", 1, (1, 4, 19, 23), 4, 8, (1, 1), None,
             dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1])),
        # rectangular windows, strides by axis, pads only after
        case("rect-windows", 1, (1, 5, 27, 18), 5, 12, (3, 2), "relu",
             dict(kernel_shape=[3, 2], strides=[2, 1], pads=[0, 0, 1, 1]), dict(pads=[1, 0, 1, 1])),
        # grouped, depthwise and dilated convolutions
        case("grouped", 1, (1, 8, 24, 24), 8, 16, (3, 3), "relu", s2, dict(group=4, pads=[1, 1, 1, 1])),
        case("depthwise", 1, (1, 16, 30, 30), 16, 16, (3, 3), "clip", s2, dict(group=16, pads=[1, 1, 1, 1])),
        case("dilated", 1, (1, 4, 33, 33), 4, 8, (3, 3), None, dict(kernel_shape=[2, 2], strides=[2, 2]),
             dict(dilations=[2, 2], pads=[2, 2, 2, 2])),
        # rows of 64 channels x 200 columns: bands of one pool row, each keeping two of the last
        case("wide-unit-stride", 1, (1, 4, 40, 200), 4, 64, (1, 1), "relu",
             dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1])),
        # many channels and rows: several blocks and bands each
        case("many-blocks", 1, (2, 8, 97, 97), 8, 64, (3, 3), "relu", dict(s2, ceil_mode=1),
             dict(strides=[2, 2])),
        # the input written by a nest before (its blocks are dependencies, through the composed
        # windows), tanh(x) -> Conv 5x5/2 padded 2 -> MaxPool 3x3/2 padded 1
        case("input-from-a-nest", 1, (1, 1, 300, 300), 1, 16, (5, 5), "relu", dict(s2, pads=[1, 1, 1, 1]),
             dict(strides=[2, 2], pads=[2, 2, 2, 2]), tanh_first=True),
        # must not fuse
        case("keep/conv-output-too", 0, (1, 3, 20, 20), 3, 8, (3, 3), "relu", s2,
             extra=lambda c, a, p: c.outputs.append(a)),
        case("keep/indices", 0, (1, 3, 20, 20), 3, 8, (3, 3), "relu", s2,
             extra=lambda c, a, p: c.nodes.__setitem__(-1, helper.make_node(
                 "MaxPool", [a], [p, "indices"], kernel_shape=[3, 3], strides=[2, 2])) or
             c.outputs.append("indices")),
        case("keep/average-pool", 0, (1, 3, 20, 20), 3, 8, (3, 3), "relu", s2, pool_op="AveragePool"),
        case("keep/sigmoid", 0, (1, 3, 20, 20), 3, 8, (3, 3), "sigmoid", s2),
        keep_residual(),
        keep_stacked(),
    ]


def keep_residual():
    """Conv + Add (absorbed as the convolution's residual) + Relu, then a pool: not fused."""
    c = Case("keep/residual", 0, (1, 8, 20, 20))
    y = c.conv("x", 8, 8, (3, 3), pads=[1, 1, 1, 1])
    p = c.op("MaxPool", [c.op("Relu", [c.op("Add", [y, "x"])])], kernel_shape=[3, 3], strides=[2, 2])
    c.outputs.append(p)
    return c


def keep_stacked():
    """Two 1x1 convolutions of one input, each with its Relu, stacked into one (--fusion block,
    siblings.c), one of them pooled: its output is a slice of the stacked output, not fused."""
    c = Case("keep/stacked-sibling", 0, (1, 8, 20, 20))
    p = c.op("MaxPool", [c.op("Relu", [c.conv("x", 8, 16, (1, 1))])], kernel_shape=[3, 3], strides=[2, 2])
    c.outputs += [p, c.op("Sigmoid", [c.op("Relu", [c.conv("x", 8, 24, (1, 1))])])]
    return c


def run_case(case, bdc, seeds):
    """Returns (ok, detail)."""
    return run_fused(case, bdc, ["--tile-threads", "4"], r"^fusion: fused '\S+' into '\S+': MaxPool into",
                     case.fused, "pool(s) fused into a convolution", seeds)


def main():
    return fused_main(cases, run_case)


if __name__ == "__main__":
    sys.exit(main())
