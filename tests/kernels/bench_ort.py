#!/usr/bin/env python3
"""Single-threaded reference numbers for bdckernels_bench: onnxruntime (MLAS) and numpy (BLAS).

Runs the same shapes as bench_kernels.c: square sgemm, a few GEMM shapes, the 8-bit products
(MatMulInteger), and the ResNet-like and depthwise convolution layers (with bias and Relu fused
by onnxruntime's graph optimiser, as the kernels fuse them). Times are the calling thread's CPU time (time.thread_time), best batch,
like the C benchmark; onnxruntime runs with one intra-op thread, so its work runs on this thread.

numpy must be single-threaded: run with OPENBLAS_NUM_THREADS=1 (this script sets it when unset,
before importing numpy). OPENBLAS_CORETYPE, when set in the environment, forces OpenBLAS's kernel
choice (e.g. Haswell = AVX2 kernels on an AVX-512 machine); it is printed and left as it is.

Usage: /usr/bin/python3 tests/kernels/bench_ort.py [--quick]
"""
import os
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

QUICK = "--quick" in sys.argv


def best_time(fn):
    fn()
    t0 = time.thread_time()
    fn()
    one = max(time.thread_time() - t0, 1e-7)
    reps = max(1, int((0.02 if QUICK else 0.05) / one))
    best = 1e30
    for _ in range(5 if QUICK else 15):
        t0 = time.thread_time()
        for _ in range(reps):
            fn()
        best = min(best, (time.thread_time() - t0) / reps)
    return best


def ort_session(model):
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])


def matmul_model(M, N, K):
    from onnx import TensorProto, helper, numpy_helper

    b = numpy_helper.from_array(np.random.rand(K, N).astype(np.float32) - 0.5, "B")
    g = helper.make_graph(
        [helper.make_node("MatMul", ["A", "B"], ["C"])], "mm",
        [helper.make_tensor_value_info("A", TensorProto.FLOAT, [M, K])],
        [helper.make_tensor_value_info("C", TensorProto.FLOAT, [M, N])], [b])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def matmul_integer_model(M, N, K):
    """A (uint8, zero point 3) x B (int8 constant) into int32, as the int8 BERT's products."""
    from onnx import TensorProto, helper, numpy_helper

    b = numpy_helper.from_array(np.random.randint(-127, 128, (K, N)).astype(np.int8), "B")
    za = numpy_helper.from_array(np.array(3, np.uint8), "za")
    g = helper.make_graph(
        [helper.make_node("MatMulInteger", ["A", "B", "za"], ["C"])], "mmi",
        [helper.make_tensor_value_info("A", TensorProto.UINT8, [M, K])],
        [helper.make_tensor_value_info("C", TensorProto.INT32, [M, N])], [b, za])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def conv_model(C, H, M, K, stride, pad, group):
    from onnx import TensorProto, helper, numpy_helper

    OH = (H + 2 * pad - K) // stride + 1
    w = numpy_helper.from_array(
        np.random.rand(M, C // group, K, K).astype(np.float32) - 0.5, "W")
    b = numpy_helper.from_array(np.random.rand(M).astype(np.float32) - 0.5, "Bi")
    conv = helper.make_node("Conv", ["X", "W", "Bi"], ["Y0"], kernel_shape=[K, K],
                            strides=[stride, stride], pads=[pad] * 4, group=group)
    relu = helper.make_node("Relu", ["Y0"], ["Y"])
    g = helper.make_graph(
        [conv, relu], "conv",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, C, H, H])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [1, M, OH, OH])], [w, b])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), OH


LAYERS = [
    ("resnet conv1 3->64 7x7/2 224", 3, 224, 64, 7, 2, 3, 1),
    ("3x3 64->64 56x56", 64, 56, 64, 3, 1, 1, 1),
    ("3x3/2 64->128 56->28", 64, 56, 128, 3, 2, 1, 1),
    ("3x3 128->128 28x28", 128, 28, 128, 3, 1, 1, 1),
    ("3x3 256->256 14x14", 256, 14, 256, 3, 1, 1, 1),
    ("3x3 512->512 7x7", 512, 7, 512, 3, 1, 1, 1),
    ("1x1/2 64->128 56->28 (downsample)", 64, 56, 128, 1, 2, 0, 1),
    ("1x1/2 256->512 14->7 (downsample)", 256, 14, 512, 1, 2, 0, 1),
    ("1x1 64->256 56x56", 64, 56, 256, 1, 1, 0, 1),
    ("1x1 256->64 56x56", 256, 56, 64, 1, 1, 0, 1),
    ("1x1 512->512 7x7", 512, 7, 512, 1, 1, 0, 1),
    ("1x1 32->16 112x112 (MobileNetV2)", 32, 112, 16, 1, 1, 0, 1),
    ("1x1 16->96 112x112 (MobileNetV2)", 16, 112, 96, 1, 1, 0, 1),
    ("1x1 144->24 56x56 (MobileNetV2)", 144, 56, 24, 1, 1, 0, 1),
    ("1x1 320->1280 7x7 (MobileNetV2)", 320, 7, 1280, 1, 1, 0, 1),
    ("depthwise 3x3 32 112x112", 32, 112, 32, 3, 1, 1, 32),
    ("depthwise 3x3/2 144 56->28", 144, 56, 144, 3, 2, 1, 144),
    ("depthwise 5x5 240 28x28", 240, 28, 240, 5, 1, 2, 240),
    ("group8 3x3/2 48 112->56 (RegNetY)", 48, 112, 48, 3, 2, 1, 6),
    ("group8 3x3 104 28x28 (RegNetY)", 104, 28, 104, 3, 1, 1, 13),
    ("group8 3x3 208 14x14 (RegNetY)", 208, 14, 208, 3, 1, 1, 26),
]


def main():
    print("OPENBLAS_NUM_THREADS=%s OPENBLAS_CORETYPE=%s" % (
        os.environ.get("OPENBLAS_NUM_THREADS"), os.environ.get("OPENBLAS_CORETYPE", "(unset)")))
    try:
        import onnxruntime as ort
        print("onnxruntime %s, numpy %s" % (ort.__version__, np.__version__))
    except ImportError:
        ort = None
        print("onnxruntime not installed: numpy only")
    shapes = [(256, 256, 256), (512, 512, 512), (1024, 1024, 1024)]
    if not QUICK:
        shapes.append((2048, 2048, 2048))
    shapes += [(64, 3136, 576), (1, 1000, 512), (128, 768, 768)]
    for M, N, K in shapes:
        a = np.random.rand(M, K).astype(np.float32)
        b = np.random.rand(K, N).astype(np.float32)
        flops = 2.0 * M * N * K
        t_np = best_time(lambda: np.matmul(a, b))
        line = "  sgemm %5dx%5dx%5d   numpy %7.1f GFLOP/s" % (M, N, K, flops / t_np * 1e-9)
        if ort:
            s = ort_session(matmul_model(M, N, K))
            feed = {"A": a}
            t_ort = best_time(lambda: s.run(None, feed))
            line += "   onnxruntime %7.1f GFLOP/s" % (flops / t_ort * 1e-9)
        print(line)
    if not ort:
        return
    for M, N, K in [(128, 256, 256), (128, 1024, 256), (128, 256, 1024), (128, 768, 768),
                    (1024, 1024, 1024)]:
        s = ort_session(matmul_integer_model(M, N, K))
        feed = {"A": np.random.randint(0, 256, (M, K)).astype(np.uint8)}
        t = best_time(lambda: s.run(None, feed))
        print("  i8 gemm %5dx%5dx%5d   onnxruntime %7.1f GOP/s" % (M, N, K, 2.0 * M * N * K / t * 1e-9))
    for name, C, H, M, K, stride, pad, group in LAYERS:
        model, OH = conv_model(C, H, M, K, stride, pad, group)
        s = ort_session(model)
        feed = {"X": np.random.rand(1, C, H, H).astype(np.float32)}
        flops = 2.0 * M * OH * OH * (C // group) * K * K
        t = best_time(lambda: s.run(None, feed))
        print("  %-34s onnxruntime %7.1f GFLOP/s  (%.3f ms)" % (name, flops / t * 1e-9, t * 1e3))


if __name__ == "__main__":
    main()
