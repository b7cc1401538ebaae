#!/usr/bin/env python3
"""If, Loop and Scan, compiled and run: bdc's inlined and unrolled bodies against onnxruntime.

Usage: test_control_flow.py [--bdc PATH] [--fusion op|none] [-j N] [-k GLOB] [-v]

bdc compiles control flow by replacing it with its body during inference
(src/front/inline_control.c): an If whose condition folds becomes its branch, a Loop with a
constant trip count whose condition stays true and every Scan are unrolled. These models, built
with onnx.helper (inputs from a generator seeded by the case name), take the paths that copying
a body can get wrong, each compared with onnxruntime by test_attr_choices.py's runner:
  - an If whose condition folds from a shape chain, with branches that read enclosing values,
    hold initializers, give an enclosing value straight back, and nest another If;
  - Loops with loop-carried values and scan outputs, a body that reads the iteration number,
    its condition passed through or a constant true, a trip count folded from a shape, zero
    iterations (M = 0, or a false initial condition);
  - Scans at opsets 8 (batched, reversed input), 9, 11 and 16 (input and output axes and
    directions, negative axes), several states and scan inputs;
  - a module with a `for` loop over a dim and a data-independent `if`, scripted with TorchScript
    and exported by torch.onnx (a Loop whose condition is an enclosing constant).
Control that depends on run-time values must be refused with exit 3 and its reason: a condition
fed at run time, a condition computed in the body, a loop past the unrolling limit, control flow
nested in a loop body.
Prints `ok NAME` or `FAIL NAME: ...` per case, then `N passed, M failed`; exits 1 on a failure.
"""
import io
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_attr_choices as runner  # noqa: E402

import numpy as np  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

REPO = runner.REPO
F, I64, BOOL = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL

# (case glob, text bdc's message must contain, reason): see test_attr_choices.EXPECTED_REFUSALS,
# whose table these replace, since the cases are these.
runner.EXPECTED_REFUSALS[:] = [
    ("if/runtime-cond", "input 0 (cond) is not a compile-time constant: it comes from graph "
     "input 'c'", "the branch is chosen at run time"),
    ("loop/computed-cond", "its body computes the loop condition",
     "the trip count depends on values computed in the body"),
    ("loop/past-limit", "would exceed bdc's limit", "unrolling stops at 65536 nodes"),
    ("loop/nested-if", "holds an If, Loop or Scan", "control flow nested in a loop body"),
]


class GraphCase(runner.Case):
    """A whole graph (not one node): `inputs` are fed at run time."""

    def __init__(self, name, opset, nodes, inputs, outputs, inits=()):
        self.name, self.opset, self.oracle = name, opset, None
        self.inputs = list(inputs)
        vis = [helper.make_tensor_value_info(n, BOOL if a.dtype == np.bool_ else
                                             runner.NP_TO_ONNX[a.dtype], list(a.shape))
               for n, a in self.inputs]
        outs = [helper.make_tensor_value_info(o, F, None) for o in outputs]
        graph = helper.make_graph(nodes, name.replace("/", "_"), vis, outs,
                                  [numpy_helper.from_array(a, n) for n, a in inits])
        opsets = [helper.make_opsetid("", opset)]
        self._model = helper.make_model(graph, opset_imports=opsets,
                                        producer_name="test_control_flow")
        self._model.ir_version = helper.find_min_ir_version_for(opsets)

    def model(self):
        return self._model


class ExportedCase(GraphCase):
    def __init__(self, name, model, inputs):
        self.name, self.opset, self.oracle, self._model = name, None, None, model
        self.inputs = list(inputs)


def data(name, *shape):
    return runner.rng_for(name).standard_normal(shape).astype(np.float32)


def const(name, value, dtype=np.int64):
    return helper.make_node("Constant", [], [name],
                            value=numpy_helper.from_array(np.array(value, dtype=dtype), name))


def graph(name, nodes, inputs, outputs, inits=()):
    return helper.make_graph(nodes, name, inputs, outputs,
                             [numpy_helper.from_array(a, n) for n, a in inits])


def vi(name, dtype=F, shape=None):
    return helper.make_tensor_value_info(name, dtype, shape)


# ---------------------------------------------------------------------------------------------
# If
# ---------------------------------------------------------------------------------------------

def if_cases():
    cases = []
    for opset in (11, 13, 19):
        name = "if/shape-cond/opset%d" % opset
        x, y = data(name, 3, 4), data(name + "y", 3, 4)
        w = data(name + "w", 4)
        then = graph("then", [helper.make_node("Add", ["x", "w_then"], ["t0"]),
                              helper.make_node("Mul", ["t0", "y"], ["t1"]),
                              helper.make_node("Identity", ["y"], ["ty"])],
                     [], [vi("t1"), vi("ty")], inits=[("w_then", w)])
        els = graph("else", [helper.make_node("Sub", ["x", "y"], ["e0"]),
                             helper.make_node("Neg", ["e0"], ["e1"])],
                    [], [vi("e1"), vi("e0")])
        nodes = [helper.make_node("Shape", ["x"], ["s"]),
                 const("zero", 0), const("two", 2),
                 helper.make_node("Gather", ["s", "zero"], ["rows"], axis=0),
                 # rows > 2 for the then branch, < 2 (after Neg) for the else branch
                 helper.make_node("Greater", ["rows", "two"], ["c"]),
                 helper.make_node("If", ["c"], ["a", "b"], then_branch=then, else_branch=els),
                 helper.make_node("Not", ["c"], ["nc"]),
                 helper.make_node("If", ["nc"], ["a2", "b2"], then_branch=then,
                                  else_branch=els),
                 helper.make_node("Add", ["a", "a2"], ["out0"]),
                 helper.make_node("Add", ["b", "b2"], ["out1"])]
        cases.append(GraphCase(name, opset, nodes, [("x", x), ("y", y)], ["out0", "out1"]))

    name = "if/nested"
    x = data(name, 2, 5)
    inner_then = graph("inner_then", [helper.make_node("Relu", ["t0"], ["it"])], [], [vi("it")])
    inner_else = graph("inner_else", [helper.make_node("Abs", ["t0"], ["ie"])], [], [vi("ie")])
    then = graph("then", [helper.make_node("Mul", ["x", "x"], ["t0"]), const("f", False, np.bool_),
                          helper.make_node("If", ["f"], ["t1"], then_branch=inner_then,
                                           else_branch=inner_else)],
                 [], [vi("t1")])
    els = graph("else", [helper.make_node("Neg", ["x"], ["e0"])], [], [vi("e0")])
    nodes = [const("t", True, np.bool_),
             helper.make_node("If", ["t"], ["a"], then_branch=then, else_branch=els),
             helper.make_node("Sigmoid", ["a"], ["out"])]
    cases.append(GraphCase(name, 13, nodes, [("x", x)], ["out"]))

    name = "if/runtime-cond"
    then = graph("then", [helper.make_node("Relu", ["x"], ["t0"])], [], [vi("t0")])
    els = graph("else", [helper.make_node("Neg", ["x"], ["e0"])], [], [vi("e0")])
    cases.append(GraphCase(name, 13, [helper.make_node("If", ["c"], ["out"], then_branch=then,
                                                       else_branch=els)],
                           [("x", data(name, 3)), ("c", np.array(True))], ["out"]))
    return cases


# ---------------------------------------------------------------------------------------------
# Loop
# ---------------------------------------------------------------------------------------------

def loop_body(cond_from="pass", extra=()):
    """Body (i, cond, y, z) -> (cond, y', z', scan y', scan i as float): y' = 0.5 y + i x,
    z' = z * w (an initializer of the body)."""
    nodes = [helper.make_node("Cast", ["i"], ["fi"], to=F),
             helper.make_node("Mul", ["x", "fi"], ["ix"]),
             const("half", 0.5, np.float32),
             helper.make_node("Mul", ["y_in", "half"], ["hy"]),
             helper.make_node("Add", ["hy", "ix"], ["y_out"]),
             helper.make_node("Mul", ["z_in", "w"], ["z_out"]),
             helper.make_node("Identity", ["y_out"], ["y_scan"])]
    if cond_from == "pass":
        nodes.append(helper.make_node("Identity", ["cond_in"], ["cond_out"]))
    elif cond_from == "true":
        nodes.append(const("cond_out", True, np.bool_))
    elif cond_from == "computed":
        nodes += [const("three", 3), helper.make_node("Less", ["i", "three"], ["cond_out"])]
    nodes += list(extra)
    return graph("body", nodes,
                 [vi("i", I64, []), vi("cond_in", BOOL, []), vi("y_in"), vi("z_in")],
                 [vi("cond_out", BOOL, []), vi("y_out"), vi("z_out"), vi("y_scan"), vi("fi")],
                 inits=[("w", np.array([1.5, -0.5, 2.0], np.float32))])


def loop_case(name, opset, m_nodes, cond_nodes, body, extra_inputs=(), inits=()):
    x, y0, z0 = data(name, 3), data(name + "y", 3), data(name + "z", 3)
    nodes = list(m_nodes) + list(cond_nodes) + [
        helper.make_node("Loop", ["m", "c" if cond_nodes else "", "y0", "z0"],
                         ["y", "z", "ys", "is"], body=body)]
    return GraphCase(name, opset, nodes, [("x", x), ("y0", y0), ("z0", z0)] + list(extra_inputs),
                     ["y", "z", "ys", "is"], inits=inits)


def loop_cases():
    cases = []
    for opset in (11, 13, 16):
        cases.append(loop_case("loop/carried-and-scans/opset%d" % opset, opset,
                               [const("m", 4)], [const("c", True, np.bool_)], loop_body()))
    cases.append(loop_case("loop/cond-true-in-body", 13, [const("m", 3)], [],
                           loop_body("true")))
    name = "loop/trips-from-shape"
    cases.append(loop_case(name, 13,
                           [helper.make_node("Shape", ["x"], ["s"]), const("zero", 0),
                            helper.make_node("Gather", ["s", "zero"], ["m"], axis=0)],
                           [], loop_body()))
    cases.append(loop_case("loop/past-limit", 13, [const("m", 100000)], [], loop_body()))
    cases.append(loop_case("loop/computed-cond", 13, [const("m", 5)], [],
                           loop_body("computed")))
    inner = graph("inner", [helper.make_node("Relu", ["y_out"], ["r"])], [], [vi("r")])
    cases.append(loop_case("loop/nested-if", 13, [const("m", 2)], [],
                           loop_body(extra=[const("t", True, np.bool_),
                                            helper.make_node("If", ["t"], ["unused"],
                                                             then_branch=inner,
                                                             else_branch=inner)])))
    # Zero iterations: the loop-carried outputs are the initial values (no scan outputs).
    for name, m, c in (("loop/zero-trips", 0, True), ("loop/false-cond", 3, False)):
        x, y0 = data(name, 3), data(name + "y", 3)
        body = graph("body", [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
                              helper.make_node("Add", ["y_in", "x"], ["y_out"])],
                     [vi("i", I64, []), vi("cond_in", BOOL, []), vi("y_in")],
                     [vi("cond_out", BOOL, []), vi("y_out")])
        nodes = [const("m", m), const("c", c, np.bool_),
                 helper.make_node("Loop", ["m", "c", "y0"], ["y"], body=body),
                 helper.make_node("Add", ["y", "x"], ["out"])]
        cases.append(GraphCase(name, 13, nodes, [("x", x), ("y0", y0)], ["out"]))
    return cases


# ---------------------------------------------------------------------------------------------
# Scan
# ---------------------------------------------------------------------------------------------

def scan_body():
    """(s1, s2, a, b) -> (s1 + a, 0.9 s2 + a b, scan s1 + a, scan a b)."""
    return graph("body", [helper.make_node("Add", ["s1", "a"], ["s1_out"]),
                          const("k", 0.9, np.float32),
                          helper.make_node("Mul", ["s2", "k"], ["s2k"]),
                          helper.make_node("Mul", ["a", "b"], ["ab"]),
                          helper.make_node("Add", ["s2k", "ab"], ["s2_out"]),
                          helper.make_node("Identity", ["s1_out"], ["s1_scan"])],
                 [vi("s1"), vi("s2"), vi("a"), vi("b")],
                 [vi("s1_out"), vi("s2_out"), vi("s1_scan"), vi("ab")])


def scan_cases():
    cases = []
    # a: [T=4, 3] scanned along 0; b: [3, T=4] scanned along 1 (or -1), reversed
    for opset, in_axes, out_axes, out_dirs in ((9, [0, 1], [0, 1], [1, 0]),
                                               (11, [0, -1], [-1, 0], [0, 1]),
                                               (16, [-2, 1], [1, -2], [1, 1])):
        name = "scan/axes-directions/opset%d" % opset
        s1, s2 = data(name + "s1", 3), data(name + "s2", 3)
        a, b = data(name + "a", 4, 3), data(name + "b", 3, 4)
        node = helper.make_node("Scan", ["s1", "s2", "a", "b"], ["f1", "f2", "y1", "y2"],
                                body=scan_body(), num_scan_inputs=2,
                                scan_input_axes=in_axes, scan_input_directions=[0, 1],
                                scan_output_axes=out_axes, scan_output_directions=out_dirs)
        cases.append(GraphCase(name, opset, [node], [("s1", s1), ("s2", s2), ("a", a), ("b", b)],
                               ["f1", "f2", "y1", "y2"]))
    name = "scan/opset8-batched"
    s1, s2 = data(name + "s1", 2, 3), data(name + "s2", 2, 3)
    a, b = data(name + "a", 2, 5, 3), data(name + "b", 2, 5, 3)
    node = helper.make_node("Scan", ["", "s1", "s2", "a", "b"], ["f1", "f2", "y1", "y2"],
                            body=scan_body(), num_scan_inputs=2, directions=[0, 1])
    cases.append(GraphCase(name, 8, [node], [("s1", s1), ("s2", s2), ("a", a), ("b", b)],
                           ["f1", "f2", "y1", "y2"]))
    return cases


# ---------------------------------------------------------------------------------------------
# Exported by torch.onnx from a TorchScript module
# ---------------------------------------------------------------------------------------------

TORCH_SOURCE = '''
import torch

class Recurrence(torch.nn.Module):
    """h <- tanh(W h + x[t]) over the first dim, then a branch on a static dim."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)

    def forward(self, x):
        h = torch.zeros(x.shape[1], 8)
        for t in range(x.shape[0]):
            h = torch.tanh(self.lin(h) + x[t])
        if x.shape[1] > 1:
            h = h * 2
        else:
            h = h - 1
        return h
'''


def torch_cases():
    import importlib.util
    import tempfile
    import torch
    import onnx
    # TorchScript reads the module's source, so it is written to a file and imported.
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "recurrence.py")
        with open(path, "w") as f:
            f.write(TORCH_SOURCE)
        spec = importlib.util.spec_from_file_location("recurrence", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        torch.manual_seed(0)
        scripted = torch.jit.script(mod.Recurrence().eval())
        name = "torchscript/for-and-if"
        x = data(name, 5, 3, 8)
        buf = io.BytesIO()
        torch.onnx.export(scripted, (torch.from_numpy(x),), buf, opset_version=17,
                          input_names=["x"], output_names=["h"])
    model = onnx.load_from_string(buf.getvalue())
    assert any(n.op_type == "Loop" for n in model.graph.node), "the export has no Loop"
    return [ExportedCase(name, model, [("x", x)])]


def all_cases():
    return if_cases() + loop_cases() + scan_cases() + torch_cases()


if __name__ == "__main__":
    sys.exit(runner.main(all_cases, __doc__, "test_control_flow"))
