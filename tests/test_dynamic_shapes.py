#!/usr/bin/env python3
"""Models with symbolic dimensions, compiled with --dim / --shape, and inputs frozen by --const:
bdc's executables against onnxruntime at the bound shapes.

Usage: test_dynamic_shapes.py [--bdc PATH] [--cache DIR] [--models-cache DIR]

Models (tests/tools/export_models.py DYNAMIC_MODELS, exported with fixed seeds on first use):
  resnet18_dynamic   torchvision ResNet-18, input x [batch,3,224,224]
  bert_tiny_dynamic  a 2-layer BERT-shaped encoder, input_ids and attention_mask [batch,seq]:
                     the position-id slice and the attention reshapes all depend on seq
  gpt2_tiny_dynamic  a 2-layer GPT-2-shaped decoder, input_ids [batch,seq]: the causal mask is
                     sliced by seq from a buffer, the position ids are Range(seq)
Checks:
  * `bdc inspect --json` lists each symbol with the inputs and dims where it occurs, unbound
    (value null, the input listed as unsupported with the --dim/--shape hint, exit 3), and
    bound by --dim (value set, every shape static, exit 0);
  * each model compiled with --dim and with --shape (a --shape of one input binds its symbols at
    the other inputs too) runs and matches onnxruntime at that shape: dtype and shape exactly,
    values with np.allclose(rtol=1e-3, atol=1e-4) as in test_real_run.py;
  * a Reshape whose target is a graph input, compiled with --const (.npy and TensorProto .pb),
    matches onnxruntime fed the same target;
  * batch ranges (--dim batch=LO..HI, one executable for every batch in the range): ResNet-18
    compiled with --dim batch=1..8 shows the range in --info and matches onnxruntime at batch 1,
    3 and 8 (the block schedule, also in its schedule test mode, and --schedule op), refuses batch
    9 with exit 6 naming the input; the BERT-shaped model with --dim batch=1..4 --dim seq=16
    matches at batch 1 and 3, the GPT-2-shaped one, pinned (--dim, --shape) and with
    --dim batch=1..4 --dim seq=12, at batch 1 and 3. Graphs whose batch is not kept apart are refused with exit 3 and a
    message naming the node or value: a reduction, transpose or softmax over the batch, and the
    batch extent used as a number; a range on a non-leading dim (exit 3), an empty range and a
    GPU target (exit 1);
  * a Reshape whose target is computed from Shape(x) through Mod (both fmod modes, negative
    operands), Or, Xor, GreaterOrEqual, LessOrEqual, Where and integer ReduceProd/Min/Sum/Max (the chains newer exporters and the
    ONNX function expansions write) folds to static shapes (`inspect --json`: all static, none of
    those ops left), and the folded values, also returned as outputs, match onnxruntime;
  * CumSum over a 3-D tensor whose axis is a graph input (bdc needs it at compile time), frozen
    with --const, for every axis and exclusive/reverse combination, matches onnxruntime.
Compiled executables are cached like test_real_run.py's (the flags are part of the key). Prints
one line per check and `N passed, M failed`; exits 1 if any failed.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402
import onnx  # noqa: E402
import onnxruntime as ort  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import test_real_models as real  # noqa: E402
import test_real_run as run  # noqa: E402

REPO = os.path.dirname(HERE)


class Checks:
    def __init__(self):
        self.passed = self.failed = 0

    def report(self, name, problem, detail=""):
        if problem:
            self.failed += 1
            print("FAIL %s: %s" % (name, problem), flush=True)
        else:
            self.passed += 1
            print("PASS %s%s" % (name, " (%s)" % detail if detail else ""), flush=True)


def inspect_json(bdc, model, flags):
    r = subprocess.run([bdc, "inspect", model, "--json"] + flags, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=300)
    return r.returncode, (json.loads(r.stdout) if r.stdout.strip() else None), r.stderr


def run_and_compare(bdc, cache, name, model, flags, feeds):
    """'' when the executable compiled with flags matches onnxruntime on feeds, else why not;
    and a detail line with the largest error."""
    entry, problem = run.compile_cached(bdc, cache, name, model, flags)
    if problem:
        return problem, ""
    sess = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    want = dict(zip(names, sess.run(names, feeds)))
    with open(os.path.join(entry, "info.json")) as f:
        files = {o["name"]: o["file"] for o in json.load(f)["outputs"]}
    with tempfile.TemporaryDirectory(prefix="bdc-dynamic-") as tmp:
        args = run.save_inputs(tmp, feeds)
        out = os.path.join(tmp, "out")
        r = subprocess.run([os.path.join(entry, "model")] + args + ["--output-dir", out],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           timeout=run.RUN_TIMEOUT_S)
        if r.returncode != 0:
            return "run exit %d: %s" % (r.returncode, run.first_line(r.stderr)), ""
        worst = 0.0
        for n in names:
            got = np.load(os.path.join(out, files[n]))
            if got.dtype != want[n].dtype or got.shape != want[n].shape:
                return "output %s: bdc %s%s, onnxruntime %s%s" % (
                    n, got.dtype, list(got.shape), want[n].dtype, list(want[n].shape)), ""
            if not np.allclose(got, want[n], rtol=run.RTOL, atol=run.ATOL):
                return "output %s: max abs err %.3g" % (n, run.errors(got, want[n])[0]), ""
            worst = max(worst, run.errors(got, want[n])[0])
    return "", "outputs %s, max abs err %.3g" % (
        ", ".join("%s%s" % (n, list(want[n].shape)) for n in names), worst)


def check_symbols(c, bdc, name, model, symbols, bind):
    """inspect lists `symbols` ({name: [(input, dim)]}) unbound, then bound by `bind`."""
    rc, j, err = inspect_json(bdc, model, [])
    got = {s["name"]: [(u["input"], u["dim"]) for u in s["inputs"]] for s in (j or {}).get("symbols", [])}
    unbound = [u for u in (j or {}).get("unsupported", []) if "symbolic" in u.get("reason", "")]
    problem = ""
    if rc != 3 or not j:
        problem = "inspect exit %d (want 3): %s" % (rc, run.first_line(err))
    elif got != symbols or any(s["value"] is not None for s in j["symbols"]):
        problem = "symbols %s, expected %s unbound" % (j["symbols"], symbols)
    elif not unbound or "--dim" not in unbound[0]["reason"] or "--shape" not in unbound[0]["reason"]:
        problem = "no unsupported entry suggesting --dim and --shape: %s" % j["unsupported"]
    c.report("%s-inspect-unbound" % name, problem, unbound[0]["reason"] if unbound else "")
    flags = sum((["--dim", "%s=%d" % kv] for kv in bind.items()), [])
    rc, j, err = inspect_json(bdc, model, flags)
    problem = ""
    if rc != 0 or not j:
        problem = "inspect %s exit %d: %s" % (" ".join(flags), rc, run.first_line(err))
    elif {s["name"]: s["value"] for s in j["symbols"]} != bind or not j["all_shapes_static"]:
        problem = "symbols %s, all_shapes_static %s" % (j["symbols"], j["all_shapes_static"])
    c.report("%s-inspect-bound" % name, problem, " ".join(flags))


def const_model(folder):
    """x [2,6] float -> Reshape(x, shape) -> Relu, with shape a graph input."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 6])
    shape = helper.make_tensor_value_info("shape", TensorProto.INT64, [3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    g = helper.make_graph([helper.make_node("Reshape", ["x", "shape"], ["r"], name="reshape"),
                           helper.make_node("Relu", ["r"], ["y"], name="relu")],
                          "reshape_by_input", [x, shape], [y])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    path = os.path.join(folder, "reshape_by_input.onnx")
    onnx.save(m, path)
    return path


def batch_model(folder, name, nodes):
    """x [batch, 4] float -> nodes -> y, the graph input's dim 0 the symbol 'batch'."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    m = helper.make_model(helper.make_graph(nodes, name, [x], [y]),
                          opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    path = os.path.join(folder, name + ".onnx")
    onnx.save(m, path)
    return path


# Graphs a batch range must refuse (exit 3): each mixes batch items or computes with the batch
# extent, so running a prefix of the blocks at a smaller batch would be wrong.
RANGE_REFUSALS = {
    "reduce-over-batch": [helper.make_node("ReduceMax", ["x"], ["y"], axes=[0], keepdims=1)],
    "reverse-batch": [  # same shapes at every batch: only the nest check sees item i read as b-1-i
        helper.make_node("Constant", [], ["st"], value=numpy_helper.from_array(np.array([-1], np.int64))),
        helper.make_node("Constant", [], ["en"], value=numpy_helper.from_array(
            np.array([-(2 ** 62)], np.int64))),
        helper.make_node("Constant", [], ["ax"], value=numpy_helper.from_array(np.array([0], np.int64))),
        helper.make_node("Constant", [], ["sp"], value=numpy_helper.from_array(np.array([-1], np.int64))),
        helper.make_node("Slice", ["x", "st", "en", "ax", "sp"], ["y"])],
    "transpose": [helper.make_node("Transpose", ["x"], ["t"], perm=[1, 0]),
                  helper.make_node("Relu", ["t"], ["y"])],
    "softmax-over-batch": [helper.make_node("Softmax", ["x"], ["y"], axis=0)],
    "batch-as-a-number": [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Constant", [], ["zero"], value=numpy_helper.from_array(np.array(0, np.int64))),
        helper.make_node("Gather", ["s", "zero"], ["b"]),
        helper.make_node("Cast", ["b"], ["bf"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["x", "bf"], ["y"])],
}


def shape_chain_model(folder):
    """x [2,6,4] float; the target of Reshape(x) and the int/bool outputs are computed from
    Shape(x) by ops that must fold: with d = [2,6,4], m0 = Mod(d - 5, 4) = [1,1,3] (the divisor's
    sign), m1 = Mod(d - 5, 4, fmod=1) = [-3,1,-1]; the target is [d0, Where(ge Or le Xor ...)]."""
    i64 = lambda name, vals: helper.make_node("Constant", [], [name], value=numpy_helper.from_array(
        np.array(vals, np.int64), name))
    nodes = [
        helper.make_node("Shape", ["x"], ["d"]),
        i64("five", [5]), i64("four", [4]), i64("minus_four", [-4]), i64("two", [2]),
        i64("neg1", [-1]), i64("zero", [0]), i64("one", [1]),
        helper.make_node("Sub", ["d", "five"], ["dm5"]),
        helper.make_node("Mod", ["dm5", "four"], ["m0"]),
        helper.make_node("Mod", ["dm5", "minus_four"], ["m0n"]),
        helper.make_node("Mod", ["dm5", "four"], ["m1"], fmod=1),
        helper.make_node("GreaterOrEqual", ["m0", "one"], ["ge"]),
        helper.make_node("LessOrEqual", ["m1", "zero"], ["le"]),
        helper.make_node("Or", ["ge", "le"], ["either"]),
        helper.make_node("Xor", ["ge", "le"], ["just_one"]),
        helper.make_node("And", ["either", "just_one"], ["cond"]),  # [F, T, F]
        helper.make_node("Where", ["cond", "neg1", "one"], ["sel"]),  # [1, -1, 1]
        helper.make_node("Slice", ["sel", "one", "two"], ["any_neg"]),  # [-1]
        helper.make_node("Slice", ["d", "zero", "one"], ["d0"]),
        helper.make_node("Concat", ["d0", "any_neg"], ["target"], axis=0),  # [2, -1]
        helper.make_node("Reshape", ["x", "target"], ["r"]),
        helper.make_node("Relu", ["r"], ["y"]),
        helper.make_node("ReduceProd", ["d"], ["numel"], keepdims=1),  # [48]
        helper.make_node("ReduceMin", ["m1"], ["least"], keepdims=1),  # [-3]
        helper.make_node("ReduceSum", ["m0", "zero"], ["total"], keepdims=1),  # [5]
        helper.make_node("ReduceMax", ["m0n"], ["most"], keepdims=1),  # [-1]
        helper.make_node("Concat", ["m0", "m0n", "m1", "sel", "numel", "least", "total", "most"],
                         ["ints"], axis=0),
        helper.make_node("Concat", ["ge", "le", "either", "just_one"], ["bools"], axis=0),
    ]
    g = helper.make_graph(
        nodes, "shape_chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 6, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
         helper.make_tensor_value_info("ints", TensorProto.INT64, None),
         helper.make_tensor_value_info("bools", TensorProto.BOOL, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    path = os.path.join(folder, "shape_chain.onnx")
    onnx.save(m, path)
    return path


def cumsum_model(folder, exclusive, reverse):
    """x [3,4,5] float -> CumSum(x, axis) with axis a graph input."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4, 5])
    axis = helper.make_tensor_value_info("axis", TensorProto.INT64, [])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    g = helper.make_graph([helper.make_node("CumSum", ["x", "axis"], ["y"], name="cumsum",
                                            exclusive=exclusive, reverse=reverse)],
                          "cumsum_by_input", [x, axis], [y])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)])
    m.ir_version = 8
    path = os.path.join(folder, "cumsum_%d%d.onnx" % (exclusive, reverse))
    onnx.save(m, path)
    return path


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bdc", default=os.environ.get("BDC") or os.path.join(REPO, "build", "bdc"))
    ap.add_argument("--cache", default=os.environ.get("BDC_CACHE")
                    or os.path.join("build", "cache"))
    ap.add_argument("--models-cache", default=os.environ.get("BDC_MODEL_CACHE")
                    or os.path.join("build", "cache", "models"))
    args = ap.parse_args()
    os.makedirs(args.models_cache, exist_ok=True)
    c = Checks()
    rng = np.random.default_rng(20240917)

    for name in ("resnet18_dynamic", "bert_tiny_dynamic", "gpt2_tiny_dynamic"):
        err = real.ensure_exported(args.models_cache, name)
        if err:
            c.report(name, err)
    resnet = os.path.join(args.models_cache, "resnet18_dynamic.onnx")
    if os.path.exists(resnet):
        check_symbols(c, args.bdc, "resnet18", resnet, {"batch": [("x", 0)]}, {"batch": 3})
        for flags, batch in ((["--dim", "batch=3"], 3), (["--shape", "x=2x3x224x224"], 2)):
            x = rng.standard_normal((batch, 3, 224, 224), dtype=np.float32)
            c.report("resnet18 " + " ".join(flags),
                     *run_and_compare(args.bdc, args.cache, "resnet18_dynamic", resnet, flags,
                                      {"x": x}))
    bert = os.path.join(args.models_cache, "bert_tiny_dynamic.onnx")
    if os.path.exists(bert):
        check_symbols(c, args.bdc, "bert_tiny", bert,
                      {"batch": [("input_ids", 0), ("attention_mask", 0)],
                       "seq": [("input_ids", 1), ("attention_mask", 1)]},
                      {"batch": 2, "seq": 16})
        for flags, (b, t) in ((["--dim", "batch=2", "--dim", "seq=16"], (2, 16)),
                              (["--shape", "input_ids=1x24"], (1, 24))):
            ids = rng.integers(0, 512, size=(b, t), dtype=np.int64)
            mask = np.ones((b, t), dtype=np.int64)
            mask[:, t - 4:] = 0
            c.report("bert_tiny " + " ".join(flags),
                     *run_and_compare(args.bdc, args.cache, "bert_tiny_dynamic", bert, flags,
                                      {"input_ids": ids, "attention_mask": mask}))

    if os.path.exists(resnet):
        flags = ["--dim", "batch=1..8"]
        entry, problem = run.compile_cached(args.bdc, args.cache, "resnet18_dynamic", resnet, flags)
        if not problem:
            with open(os.path.join(entry, "info.json")) as f:
                shape = json.load(f)["inputs"][0]
            problem = "" if shape.get("batch") == [1, 8] else "--info: %s" % shape
        c.report("resnet18 --dim batch=1..8 info", problem)
        rc, j, err = inspect_json(args.bdc, resnet, flags)
        ranges = [sym.get("range") for sym in (j or {}).get("symbols", [])]
        c.report("resnet18 inspect --dim batch=1..8", "" if rc == 0 and ranges == [[1, 8]] else
                 "exit %d, symbols %s: %s" % (rc, (j or {}).get("symbols"), run.first_line(err)))
        for batch, extra in ((1, []), (3, []), (8, []), (3, ["--schedule", "op"])):
            x = rng.standard_normal((batch, 3, 224, 224), dtype=np.float32)
            c.report("resnet18 %s at batch %d" % (" ".join(flags + extra), batch),
                     *run_and_compare(args.bdc, args.cache, "resnet18_dynamic", resnet,
                                      flags + extra, {"x": x}))
        with tempfile.TemporaryDirectory(prefix="bdc-range-") as tmp:
            np.save(os.path.join(tmp, "x9.npy"), np.zeros((9, 3, 224, 224), np.float32))
            r = subprocess.run([os.path.join(entry, "model"), "--input",
                                "x=" + os.path.join(tmp, "x9.npy")] if entry else ["false"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            ok = r.returncode == 6 and "'x'" in r.stderr and "1..8" in r.stderr
            c.report("resnet18 batch 9 outside 1..8", "" if ok else "exit %d: %s" % (
                r.returncode, r.stderr.strip()))
    if os.path.exists(bert):
        flags = ["--dim", "batch=1..4", "--dim", "seq=16"]
        for b in (1, 3):
            ids = rng.integers(0, 512, size=(b, 16), dtype=np.int64)
            mask = np.ones((b, 16), dtype=np.int64)
            mask[:, 12:] = 0
            c.report("bert_tiny %s at batch %d" % (" ".join(flags), b),
                     *run_and_compare(args.bdc, args.cache, "bert_tiny_dynamic", bert, flags,
                                      {"input_ids": ids, "attention_mask": mask}))
        r = subprocess.run([args.bdc, "compile", bert, "-o", os.devnull, "--dim", "batch=2",
                            "--dim", "seq=4..16"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True)
        c.report("bert_tiny range on seq (dim 1) refused", "" if r.returncode == 3 and
                 "dim 1" in r.stderr else "exit %d: %s" % (r.returncode, r.stderr.strip()))

    gpt2 = os.path.join(args.models_cache, "gpt2_tiny_dynamic.onnx")
    if os.path.exists(gpt2):
        # a causal mask sliced by seq from a registered buffer, position ids from Range(seq)
        for flags, b, t in ((["--dim", "batch=2", "--dim", "seq=12"], 2, 12),
                            (["--shape", "input_ids=1x40"], 1, 40),
                            (["--dim", "batch=1..4", "--dim", "seq=12"], 3, 12),
                            (["--dim", "batch=1..4", "--dim", "seq=12"], 1, 12)):
            ids = rng.integers(0, 512, size=(b, t), dtype=np.int64)
            c.report("gpt2_tiny %s at batch %d" % (" ".join(flags), b),
                     *run_and_compare(args.bdc, args.cache, "gpt2_tiny_dynamic", gpt2, flags,
                                      {"input_ids": ids}))

    with tempfile.TemporaryDirectory(prefix="bdc-range-") as tmp:
        model = batch_model(tmp, "relu", [helper.make_node("Relu", ["x"], ["y"])])
        c.report("relu --dim batch=2..5 at batch 4",
                 *run_and_compare(args.bdc, tmp, "relu", model, ["--dim", "batch=2..5"],
                                  {"x": rng.standard_normal((4, 4), dtype=np.float32)}))
        for flags, code in ((["--dim", "batch=5..2"], 1), (["--dim", "batch=1..4", "--target", "opencl"], 1)):
            r = subprocess.run([args.bdc, "compile", model, "-o", os.path.join(tmp, "m")] + flags,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            c.report("relu %s refused" % " ".join(flags), "" if r.returncode == code else
                     "exit %d (want %d): %s" % (r.returncode, code, r.stderr.strip()))
        for name, nodes in RANGE_REFUSALS.items():
            model = batch_model(tmp, name.replace("-", "_"), nodes)
            r = subprocess.run([args.bdc, "compile", model, "-o", os.path.join(tmp, "m"), "--dim",
                                "batch=1..4"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
            ok = r.returncode == 3 and ("node '" in r.stderr or "value '" in r.stderr)
            c.report("range refuses %s" % name, "" if ok else "exit %d: %s" % (
                r.returncode, r.stderr.strip()), run.first_line(r.stderr))

    with tempfile.TemporaryDirectory(prefix="bdc-chain-") as tmp:
        model = shape_chain_model(tmp)
        rc, j, err = inspect_json(args.bdc, model, [])
        left = sorted(set((j or {}).get("op_histogram", {})) &
                      {"Mod", "Or", "Xor", "GreaterOrEqual", "LessOrEqual", "Where", "Shape",
                       "ReduceProd", "ReduceMin", "ReduceSum", "ReduceMax"})
        problem = ""
        if rc != 0 or not j or not j.get("all_shapes_static"):
            problem = "inspect exit %d, all_shapes_static %s: %s" % (
                rc, (j or {}).get("all_shapes_static"), run.first_line(err))
        elif left:
            problem = "not folded: %s" % ", ".join(left)
        c.report("shape-chain-folds", problem)
        c.report("shape-chain-values",
                 *run_and_compare(args.bdc, tmp, "shape_chain", model, [],
                                  {"x": rng.standard_normal((2, 6, 4), dtype=np.float32)}))

    with tempfile.TemporaryDirectory(prefix="bdc-const-") as tmp:
        model = const_model(tmp)
        target = np.array([3, 2, 2], np.int64)
        npy, pb = os.path.join(tmp, "target.npy"), os.path.join(tmp, "target.pb")
        np.save(npy, target)
        with open(pb, "wb") as f:
            f.write(numpy_helper.from_array(target).SerializeToString())
        x = rng.standard_normal((2, 6), dtype=np.float32)
        for path in (npy, pb):
            entry, problem = run.compile_cached(args.bdc, tmp, "reshape_by_input", model,
                                                ("--const", "shape=" + path))
            if problem:
                c.report("const " + os.path.basename(path), problem)
                continue
            want = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(
                None, {"x": x, "shape": target})[0]
            np.save(os.path.join(tmp, "x.npy"), x)
            out = os.path.join(tmp, "out-" + os.path.basename(path))
            r = subprocess.run([os.path.join(entry, "model"), "--input",
                                "x=" + os.path.join(tmp, "x.npy"), "--output-dir", out],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            got = np.load(os.path.join(out, "y.npy")) if r.returncode == 0 else None
            problem = "run exit %d: %s" % (r.returncode, r.stderr.strip()) if got is None else \
                "" if got.shape == want.shape and np.array_equal(got, want) else \
                "got %s%s, expected %s" % (got.shape, got.ravel()[:4], want.shape)
            c.report("const " + os.path.basename(path), problem, "y%s" % list(want.shape))

    with tempfile.TemporaryDirectory(prefix="bdc-cumsum-") as tmp:
        x = rng.standard_normal((3, 4, 5), dtype=np.float32)
        np.save(os.path.join(tmp, "x.npy"), x)
        for exclusive in (0, 1):
            for reverse in (0, 1):
                model = cumsum_model(tmp, exclusive, reverse)
                for axis in (0, 1, -1):
                    name = "const cumsum axis=%d exclusive=%d reverse=%d" % (axis, exclusive,
                                                                          reverse)
                    apath = os.path.join(tmp, "axis%d.npy" % axis)
                    np.save(apath, np.array(axis, np.int64))
                    entry, problem = run.compile_cached(args.bdc, tmp, "cumsum", model,
                                                        ("--const", "axis=" + apath))
                    if problem:
                        c.report(name, problem)
                        continue
                    want = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(
                        None, {"x": x, "axis": np.array(axis, np.int64)})[0]
                    out = os.path.join(tmp, "out")
                    r = subprocess.run([os.path.join(entry, "model"), "--input",
                                        "x=" + os.path.join(tmp, "x.npy"), "--output-dir", out],
                                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                    got = np.load(os.path.join(out, "y.npy")) if r.returncode == 0 else None
                    problem = "run exit %d: %s" % (r.returncode, r.stderr.strip()) if got is None \
                        else "" if got.shape == want.shape and np.allclose(got, want, 1e-5, 1e-5) \
                        else "max abs err %.3g" % float(np.abs(got - want).max())
                    c.report(name, problem)

    print("%d passed, %d failed" % (c.passed, c.failed))
    return 0 if c.failed == 0 and c.passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
