#!/usr/bin/env python3
"""Make models/sample.onnx, the small CNN bundled with bdc, with its sample input and output.

Usage: make_sample.py [OUTDIR]          (default: the folder this script is in)

  input [1,3,32,32] -> Conv 3x3 (8) -> Relu -> MaxPool 2x2 -> Conv 3x3 (16) -> Relu
    -> GlobalAveragePool -> Flatten -> Gemm (10) -> Softmax -> probs [1,10]

Opset 17, fixed seed, a few KB. Writes sample.onnx, sample.input.npy and sample.output.npy: the
expected output, computed here in float64 numpy (an independent reference) and checked against
onnxruntime. Deterministic: rerunning reproduces the same files.
"""

import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

SEED = 20240601


def conv2d(x, w, b, pad):
    """NCHW convolution, stride 1, by summing shifted slices (reference only)."""
    n, c, h, wd = x.shape
    k = w.shape[2]
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = h + 2 * pad - k + 1, wd + 2 * pad - k + 1
    y = np.zeros((n, w.shape[0], oh, ow))
    for i in range(k):
        for j in range(k):
            y += np.einsum("nchw,oc->nohw", xp[:, :, i:i + oh, j:j + ow], w[:, :, i, j])
    return y + b[None, :, None, None]


def reference(x, p):
    y = np.maximum(conv2d(x, p["conv1.w"], p["conv1.b"], 1), 0)
    n, c, h, w = y.shape
    y = y.reshape(n, c, h // 2, 2, w // 2, 2).max(axis=(3, 5))
    y = np.maximum(conv2d(y, p["conv2.w"], p["conv2.b"], 1), 0)
    y = y.mean(axis=(2, 3))
    y = y @ p["fc.w"].T + p["fc.b"]
    e = np.exp(y - y.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def main(argv):
    out = argv[0] if argv else os.path.dirname(os.path.abspath(__file__))
    rng = np.random.default_rng(SEED)

    def he(*shape):
        fan_in = int(np.prod(shape[1:]))
        return (rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)).astype(np.float32)

    p = {
        "conv1.w": he(8, 3, 3, 3), "conv1.b": (rng.standard_normal(8) * 0.1).astype(np.float32),
        "conv2.w": he(16, 8, 3, 3), "conv2.b": (rng.standard_normal(16) * 0.1).astype(np.float32),
        "fc.w": he(10, 16), "fc.b": (rng.standard_normal(10) * 0.1).astype(np.float32),
    }
    x = rng.standard_normal((1, 3, 32, 32)).astype(np.float32)

    nodes = [
        helper.make_node("Conv", ["input", "conv1.w", "conv1.b"], ["conv1"], name="conv1",
                         kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["conv1"], ["relu1"], name="relu1"),
        helper.make_node("MaxPool", ["relu1"], ["pool1"], name="pool1",
                         kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["pool1", "conv2.w", "conv2.b"], ["conv2"], name="conv2",
                         kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["conv2"], ["relu2"], name="relu2"),
        helper.make_node("GlobalAveragePool", ["relu2"], ["gap"], name="gap"),
        helper.make_node("Flatten", ["gap"], ["flat"], name="flatten", axis=1),
        helper.make_node("Gemm", ["flat", "fc.w", "fc.b"], ["logits"], name="fc", transB=1),
        helper.make_node("Softmax", ["logits"], ["probs"], name="softmax", axis=-1),
    ]
    graph = helper.make_graph(
        nodes, "sample_cnn",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, 32, 32])],
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT, [1, 10])],
        initializer=[numpy_helper.from_array(v, k) for k, v in p.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name="bdc-make_sample", producer_version="1")
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)

    expected = reference(x.astype(np.float64), {k: v.astype(np.float64) for k, v in p.items()})
    expected = expected.astype(np.float32)
    try:
        import onnxruntime as ort
    except ImportError:
        ort = None
    if ort is not None:
        sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        got = sess.run(None, {"input": x})[0]
        if not np.allclose(got, expected, rtol=1e-4, atol=1e-6):
            sys.exit("make_sample: onnxruntime disagrees with the reference (max diff %g)"
                     % np.abs(got - expected).max())

    os.makedirs(out, exist_ok=True)
    onnx.save(model, os.path.join(out, "sample.onnx"))
    np.save(os.path.join(out, "sample.input.npy"), x)
    np.save(os.path.join(out, "sample.output.npy"), expected)
    print("wrote %s (%d bytes), sample.input.npy, sample.output.npy; top class %d (p=%.3f)"
          % (os.path.join(out, "sample.onnx"), os.path.getsize(os.path.join(out, "sample.onnx")),
             int(expected.argmax()), float(expected.max())))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
