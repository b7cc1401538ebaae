#!/usr/bin/env python3
"""Build the malformed-model corpus that tests/test_malformed.sh feeds to `bdc inspect`.

Usage: make_corpus.py [OUTDIR]          (default: the folder this script is in)

Every case is a small model that would be valid except for exactly one defect, so the test
shows that bdc catches *that* defect (with exit 2 "invalid model" or 4 "I/O or resource limit")
and names what is wrong in its one-line message, instead of crashing, hanging, reading outside
the model's folder or allocating without bound. ok.onnx and ext_ok/ are the valid controls the
defective cases are derived from.

Writes the models, the external-data folders (one per case, so "the model's folder" is
well-defined) and expected.txt: `FILE EXITCODE REGEX`, where REGEX (Perl syntax, grep -P) must
match bdc's single stderr line, or `-` for "stderr empty". The output is deterministic; the
generated files are committed, rerun this script after changing it.

The 10,000-deep If nesting is serialised by hand (innermost graph first): python protobuf and
onnx refuse to build or serialise messages nested that deep.
"""

import os
import struct
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

IR_VERSION = 8
OPSET = 17
DEEP_NESTING = 10000
W_VALUES = np.arange(6, dtype=np.float32).reshape(2, 3) * 0.5 - 1.0
W_BYTES = W_VALUES.tobytes()  # 24 bytes: what a float32 [2,3] tensor needs


# ---------------------------------------------------------------------------------------------
# Valid building blocks
# ---------------------------------------------------------------------------------------------

def make_model(nodes, initializers=(), inputs=None, outputs=None, name="g"):
    """Y = f(X) over float32 [2,3] unless told otherwise."""
    inputs = inputs if inputs is not None else [
        helper.make_tensor_value_info("X", TensorProto.FLOAT, [2, 3])]
    outputs = outputs if outputs is not None else [
        helper.make_tensor_value_info("Y", TensorProto.FLOAT, [2, 3])]
    graph = helper.make_graph(nodes, name, inputs, outputs, initializer=list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="bdc-tests", producer_version="1")
    model.ir_version = IR_VERSION
    return model


def weight(name, raw=W_BYTES, dims=(2, 3)):
    t = TensorProto(name=name, data_type=TensorProto.FLOAT, dims=list(dims))
    t.raw_data = raw
    return t


def add_model(w):
    """Y = X + w: the shape of every initializer case."""
    return make_model([helper.make_node("Add", ["X", w.name], ["Y"], name="add")], [w])


def external_weight(name, location, offset=0, length=len(W_BYTES)):
    t = TensorProto(name=name, data_type=TensorProto.FLOAT, dims=[2, 3])
    t.data_location = TensorProto.EXTERNAL
    for k, v in (("location", location), ("offset", str(offset)), ("length", str(length))):
        e = t.external_data.add()
        e.key, e.value = k, v
    return t


# ---------------------------------------------------------------------------------------------
# Hand serialisation for the deep nesting case (field numbers from onnx.proto)
# ---------------------------------------------------------------------------------------------

def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def key(field, wire):
    return varint(field << 3 | wire)


def f_int(field, n):
    return key(field, 0) + varint(n)


def f_bytes(field, payload):
    return key(field, 2) + varint(len(payload)) + payload


def f_str(field, s):
    return f_bytes(field, s.encode())


def value_info(name, elem_type):
    """ValueInfoProto{name, type{tensor_type{elem_type, shape{} (a scalar)}}}."""
    tensor_type = f_int(1, elem_type) + f_bytes(2, b"")
    return f_str(1, name) + f_bytes(2, f_bytes(1, tensor_type))


def constant_node(name, output, value):
    attr = f_str(1, "value_float") + f_int(20, 1) + key(2, 5) + struct.pack("<f", value)
    return f_str(2, output) + f_str(3, name) + f_str(4, "Constant") + f_bytes(5, attr)


def deep_if_model(depth):
    """ModelProto whose graph nests `depth` If nodes through then_branch.

    Level k (0 <= k < depth) is graph g<k> holding node if<k> = If(c) -> y<k>, with a
    one-Constant else_branch and then_branch = g<k+1>; g<depth> is one Constant. The nested
    message is always the last field of its parent, so the file is the levels' prefixes in
    order followed by the innermost graph; the prefixes are computed innermost first, since each
    holds the length of everything inside it."""
    FLOAT, BOOL, GRAPH = 1, 9, 5
    inner = (f_bytes(1, constant_node("k%d" % depth, "y%d" % depth, 1.0))
             + f_str(2, "g%d" % depth) + f_bytes(12, value_info("y%d" % depth, FLOAT)))
    size = len(inner)
    prefixes = []
    for k in range(depth - 1, -1, -1):
        else_graph = (f_bytes(1, constant_node("e%d" % k, "e%d" % k, 2.0))
                      + f_str(2, "else%d" % k) + f_bytes(12, value_info("e%d" % k, FLOAT)))
        then_prefix = f_str(1, "then_branch") + f_int(20, GRAPH) + key(6, 2) + varint(size)
        then_size = len(then_prefix) + size
        node_fields = (f_str(1, "c") + f_str(2, "y%d" % k) + f_str(3, "if%d" % k) + f_str(4, "If")
                       + f_bytes(5, f_str(1, "else_branch") + f_int(20, GRAPH) + f_bytes(6, else_graph)))
        node_size = len(node_fields) + len(key(5, 2) + varint(then_size)) + then_size
        graph_fields = f_str(2, "g%d" % k) + f_bytes(12, value_info("y%d" % k, FLOAT))
        if k == 0:
            graph_fields += f_bytes(11, value_info("c", BOOL))
        prefix = (graph_fields + key(1, 2) + varint(node_size) + node_fields
                  + key(5, 2) + varint(then_size) + then_prefix)
        prefixes.append(prefix)
        size += len(prefix)
    model_fields = (f_int(1, IR_VERSION) + f_str(2, "bdc-tests") + f_str(3, "1")
                    + f_bytes(8, f_str(1, "") + f_int(2, OPSET)))
    return b"".join([model_fields, key(7, 2), varint(size)] + prefixes[::-1] + [inner])


# ---------------------------------------------------------------------------------------------
# The corpus
# ---------------------------------------------------------------------------------------------

def build(out):
    """Writes every case; returns the expected.txt rows (file, exit code, regex)."""
    rows = []

    def write(rel, data, code, regex):
        path = os.path.join(out, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data if isinstance(data, bytes) else data.SerializeToString())
        rows.append((rel, code, regex))

    def write_file(rel, data):
        path = os.path.join(out, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)

    ok = add_model(weight("w"))
    onnx.checker.check_model(ok, full_check=True)
    ok_bytes = ok.SerializeToString()
    write("ok.onnx", ok_bytes, 0, "-")

    # -- not a model at all ------------------------------------------------------------------
    # An empty buffer decodes as an empty ModelProto: the message may say "empty", or name
    # what is missing (graph, ir_version, opset).
    write("empty.onnx", b"", 2, "(?i)empty|graph|ir_version|opset|pars|protobuf|invalid")
    text = b"This is not an ONNX model, just a line of text.\n"
    write("text.onnx", text, 2, "(?i)pars|protobuf|invalid|decod|corrupt|ModelProto")
    # Cut inside the initializer's raw_data: the length prefix promises bytes that are absent.
    cut = ok_bytes.index(W_BYTES) + len(W_BYTES) // 2
    write("truncated.onnx", ok_bytes[:cut], 2, "(?i)truncat|pars|protobuf|invalid|decod|corrupt|ModelProto")

    # -- graph structure ---------------------------------------------------------------------
    # bdc walks back through producers and names the cycle and both nodes in it.
    write("cycle.onnx", make_model([
        helper.make_node("Add", ["X", "Y"], ["t_a"], name="node_a"),
        helper.make_node("Relu", ["t_a"], ["Y"], name="node_b"),
    ]), 2, r"^(?=.*node_a)(?=.*node_b)(?=.*(?i:cycle))")
    write("undefined_input.onnx", make_model([
        helper.make_node("Relu", ["ghost_value"], ["Y"], name="relu"),
    ]), 2, "ghost_value")
    # A required output left empty (""): LayerNormalization's Y, with only Mean kept.
    write("empty_required_output.onnx", make_model([
        helper.make_node("LayerNormalization", ["X", "X_scale"], ["", "Y"], name="ln_no_y",
                         axis=-1),
    ], initializers=[numpy_helper.from_array(np.ones(3, np.float32), "X_scale")],
        outputs=[helper.make_tensor_value_info("Y", TensorProto.FLOAT, [2, 1])]),
        2, r"^(?=.*ln_no_y)(?=.*required output 0)")
    write("duplicate_output.onnx", make_model([
        helper.make_node("Relu", ["X"], ["dup_out"], name="relu"),
        helper.make_node("Sigmoid", ["X"], ["dup_out"], name="sigmoid"),
    ], outputs=[helper.make_tensor_value_info("dup_out", TensorProto.FLOAT, [2, 3])]),
        2, "dup_out")

    # -- initializers ------------------------------------------------------------------------
    write("raw_data_short.onnx", add_model(weight("w_short", W_BYTES[:20])),
          2, r"^(?=.*w_short)(?=.*\b24\b)(?=.*\b20\b)")
    write("raw_data_long.onnx", add_model(weight("w_long", W_BYTES + b"\0" * 4)),
          2, r"^(?=.*w_long)(?=.*\b24\b)(?=.*\b28\b)")
    write("negative_dim.onnx", add_model(weight("w_neg", dims=(2, -3))), 2, r"w_neg")
    write("dim_overflow.onnx", add_model(weight("w_huge", b"", dims=(1 << 32, 1 << 32))),
          2, r"w_huge")

    # -- nesting: far beyond any sane limit, must be refused before recursing ------------------
    probe = deep_if_model(3)  # the same builder, shallow enough for onnx to check and run
    onnx.checker.check_model(onnx.load_from_string(probe), full_check=True)
    write("deep_nesting.onnx", deep_if_model(DEEP_NESTING), 4, r"(?i)nest|depth|deep|limit")

    # -- external data: each case in its own folder ------------------------------------------
    write_file("secret.bin", W_BYTES)  # a real file outside every case folder, to escape to
    write_file("ext_ok/weights.bin", W_BYTES)
    write("ext_ok/model.onnx", add_model(external_weight("w_ext", "weights.bin")), 0, "-")
    onnx.checker.check_model(os.path.join(out, "ext_ok", "model.onnx"), full_check=True)

    write("ext_parent/model.onnx", add_model(external_weight("w_ext", "../secret.bin")),
          2, r"\.\.")
    write("ext_absolute/model.onnx", add_model(external_weight("w_ext", "/etc/passwd")),
          2, r"/etc/passwd")
    link = os.path.join(out, "ext_symlink", "weights.bin")
    os.makedirs(os.path.dirname(link), exist_ok=True)
    if os.path.lexists(link):
        os.unlink(link)
    os.symlink(os.path.join("..", "secret.bin"), link)
    write("ext_symlink/model.onnx", add_model(external_weight("w_ext", "weights.bin")),
          2, r"weights\.bin")
    write("ext_missing/model.onnx", add_model(external_weight("w_ext", "missing.bin")),
          4, r"missing\.bin")
    write_file("ext_range/weights.bin", W_BYTES)
    write("ext_range/model.onnx", add_model(external_weight("w_ext", "weights.bin", offset=8)),
          2, r"w_ext|weights\.bin")
    write_file("ext_offset/weights.bin", W_BYTES)
    write("ext_offset/model.onnx", add_model(external_weight("w_ext", "weights.bin", offset=64)),
          2, r"w_ext|weights\.bin")
    return rows


def self_check(out):
    """The controls load and run; the undecodable inputs really are undecodable."""
    import onnxruntime as ort
    x = np.ones((2, 3), dtype=np.float32)
    for rel in ("ok.onnx", "ext_ok/model.onnx"):
        sess = ort.InferenceSession(os.path.join(out, rel), providers=["CPUExecutionProvider"])
        y = sess.run(None, {"X": x})[0]
        assert np.array_equal(y, x + W_VALUES), rel
    sess = ort.InferenceSession(deep_if_model(3), providers=["CPUExecutionProvider"])
    assert sess.run(None, {"c": np.array(True)})[0] == 1.0
    for rel in ("text.onnx", "truncated.onnx"):
        try:
            onnx.ModelProto().ParseFromString(open(os.path.join(out, rel), "rb").read())
        except Exception:  # noqa: BLE001 - DecodeError's class differs between backends
            continue
        raise AssertionError("%s unexpectedly parses as a ModelProto" % rel)


def main(argv):
    out = argv[0] if argv else os.path.dirname(os.path.abspath(__file__))
    rows = build(out)
    self_check(out)
    with open(os.path.join(out, "expected.txt"), "w") as f:
        f.write("# Generated by make_corpus.py: FILE EXITCODE REGEX\n"
                "# REGEX (grep -P) must match bdc's single stderr line; '-' = stderr empty.\n")
        for rel, code, regex in rows:
            f.write("%s %d %s\n" % (rel, code, regex))
    print("%d cases written to %s" % (len(rows), out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
