#!/usr/bin/env python3
"""ONNX backend node-suite shape test: bdc's dtype/shape inference against the suite's outputs.

Usage: test_node_shapes.py [--bdc PATH] [--cache DIR] [--root LABEL=DIR ...] [--archive TGZ]
                           [-k GLOB] [-j N] [-v]

Test roots (each a folder of case folders holding model.onnx + test_data_set_0/):
  - Debian's suite, /usr/include/onnx/backend/test/data/node (libonnx-testdata), if present,
    labelled by its package version (v1.12 on Debian 12);
  - the v1.22.0 archive, <repo>/../shared/data/onnx-backend-testdata-v1.22.0.tar.gz, if present,
    extracted once into the cache folder ($BDC_CACHE or --cache, default ./build/testdata).
  --root/--archive replace these defaults.

For each case:
  loaded     `bdc inspect --json` on the original model exits 0 or 3 (supported or cleanly
             refused); exit 2/4, a signal or a hang is a load failure. Every case counts here:
             the loader must cope with the whole suite, not only the ops bdc implements.
  in scope   every node is a top-level default-domain node whose op is a row of src/front/ops.def, the
             default-domain opset is within BD_OPSET_MIN..MAX (src/front/graph.h) and >= the op's
             `since`. (Both files are parsed here: they are the single source of truth.)
  shapes     for in-scope cases, graph inputs that feed shape-determining input slots (Reshape's
  match      shape, Slice's starts/ends, ...), directly or through the ops computing them, are
             frozen into initializers holding the test's input values (the frozen copy is
             cached), bdc inspects that model, and every graph output's dtype and shape must
             equal test_data_set_0/output_i.pb.
Why: the suite's reference outputs give an independent, exact answer for every op and attribute
combination; a static-shape compiler must get all of them right before it computes anything.

Expected failures live in tests/node_shapes_xfail.txt (`case_name  # reason`; the name may be
prefixed `v1.22/` or `v1.12/` to apply to one suite only). pass = an in-scope case that matches,
or a failure that is listed; a listed case that no longer fails is an "unexpected pass" and
counts as failed, so the list stays honest. Prints per-suite counts, the failures, and a closing
`N passed, M failed`; exits 1 if anything failed or if no case ran.
"""

import argparse
import fnmatch
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
from multiprocessing.pool import ThreadPool

import onnx
from onnx import TensorProto

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
SYSTEM_ROOT = "/usr/include/onnx/backend/test/data/node"
ARCHIVE = os.path.join(os.path.dirname(REPO), "shared", "data", "onnx-backend-testdata-v1.22.0.tar.gz")
ARCHIVE_NODE_DIR = "onnx/backend/test/data/node"
XFAIL_FILE = os.path.join(HERE, "node_shapes_xfail.txt")
BDC_TIMEOUT_S = 60

# TensorProto.DataType 1..23 -> bdc's dtype names (0 = UNDEFINED).
DTYPES = [None, "float32", "uint8", "int8", "uint16", "int16", "int32", "int64", "string", "bool",
          "float16", "float64", "uint32", "uint64", "complex64", "complex128", "bfloat16",
          "float8e4m3fn", "float8e4m3fnuz", "float8e5m2", "float8e5m2fnuz", "uint4", "int4",
          "float4e2m1", "float8e8m0", "uint2", "int2"]

# Input slots whose *values* determine an output shape. Graph inputs feeding these are frozen
# into initializers. Only ops that are rows of ops.def matter; the rest are listed so that a new
# row needs no change here.
SHAPE_SLOTS = {
    "Reshape": (1,), "Expand": (1,), "ConstantOfShape": (0,), "Range": (0, 1, 2),
    "Slice": (1, 2, 3, 4), "Pad": (1, 2, 3), "Resize": (1, 2, 3), "Upsample": (1,),
    "Split": (1,), "Squeeze": (1,), "Unsqueeze": (1,), "Tile": (1,), "TopK": (1,),
    "OneHot": (1,), "CenterCropPad": (1,), "Col2Im": (1, 2), "MaxUnpool": (2,),
    "ReduceMax": (1,), "ReduceMean": (1,), "ReduceSum": (1,), "ReduceMin": (1,),
    "ReduceProd": (1,), "ReduceL1": (1,), "ReduceL2": (1,), "ReduceLogSum": (1,),
    "ReduceLogSumExp": (1,), "ReduceSumSquare": (1,), "Compress": (1,),
    "HannWindow": (0,), "HammingWindow": (0,), "BlackmanWindow": (0,), "DFT": (1, 2),
    "AffineGrid": (1,), "If": (0,), "Loop": (0, 1),
}

# Ops whose subgraph attributes bdc inlines (an If by its folded condition, a Loop or Scan by
# unrolling): such a case is in scope when every node of its bodies is.
CONTROL_OPS = ("If", "Loop", "Scan")


# ---------------------------------------------------------------------------------------------
# Sources of truth: src/front/ops.def and src/graph.h
# ---------------------------------------------------------------------------------------------

def read_op_table(repo):
    """{onnx_name: since} from the X-macro rows `X(ENUM, "Name", since, ...)`."""
    text = open(os.path.join(repo, "src", "front", "ops.def")).read()
    ops = {name: int(since) for name, since in
           re.findall(r'X\(\s*\w+\s*,\s*"(\w+)"\s*,\s*(\d+)\s*,', text)}
    if not ops:
        sys.exit("test_node_shapes: no op rows found in src/front/ops.def")
    return ops


def read_opset_range(repo):
    text = open(os.path.join(repo, "src", "front", "graph.h")).read()
    lo = re.search(r"#\s*define\s+BD_OPSET_MIN\s+(\d+)", text)
    hi = re.search(r"#\s*define\s+BD_OPSET_MAX\s+(\d+)", text)
    if not (lo and hi):
        sys.exit("test_node_shapes: BD_OPSET_MIN/BD_OPSET_MAX not found in src/front/graph.h")
    return int(lo.group(1)), int(hi.group(1))


# ---------------------------------------------------------------------------------------------
# Test roots
# ---------------------------------------------------------------------------------------------

def system_label():
    try:
        v = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", "libonnx-testdata"],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True).stdout
        m = re.match(r"(\d+)\.(\d+)", v)
        if m:
            return "v%s.%s" % m.groups()
    except OSError:
        pass
    return "system"


def archive_label(path):
    m = re.search(r"v(\d+)\.(\d+)", os.path.basename(path))
    return "v%s.%s" % m.groups() if m else os.path.basename(path).split(".")[0]


def extract_archive(archive, cache):
    """Extract the node suite of `archive` once into cache; returns the node folder."""
    stem = re.sub(r"\.(tar\.gz|tgz)$", "", os.path.basename(archive))
    dest = os.path.join(cache, stem)
    node_dir = os.path.join(dest, ARCHIVE_NODE_DIR)
    stamp = os.path.join(dest, ".extracted")
    st = os.stat(archive)
    want = "%d %d\n" % (st.st_size, int(st.st_mtime))
    if os.path.exists(stamp) and open(stamp).read() == want:
        return node_dir
    tmp = "%s.tmp-%d" % (dest, os.getpid())
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    with tarfile.open(archive) as tar:
        members = []
        for m in tar.getmembers():
            parts = m.name.split("/")
            if (not m.name.startswith(ARCHIVE_NODE_DIR + "/") or m.name.startswith("/")
                    or ".." in parts or not (m.isfile() or m.isdir())):
                continue  # only plain files and folders of the node suite, nothing outside dest
            members.append(m)
        if hasattr(tarfile, "data_filter"):  # Python >= 3.12 (and late 3.8-3.11 releases)
            tar.extractall(tmp, members=members, filter="data")
        else:
            tar.extractall(tmp, members=members)
    with open(os.path.join(tmp, ".extracted"), "w") as f:
        f.write(want)
    shutil.rmtree(dest, ignore_errors=True)
    os.replace(tmp, dest)
    return node_dir


# ---------------------------------------------------------------------------------------------
# One case
# ---------------------------------------------------------------------------------------------

class Case:
    def __init__(self, label, root, name):
        self.label, self.name = label, name
        self.dir = os.path.join(root, name)
        self.model = os.path.join(self.dir, "model.onnx")
        self.loaded = False
        self.in_scope = False
        self.scope_reason = ""
        self.match = False
        self.reason = ""

    @property
    def key(self):
        return "%s/%s" % (self.label, self.name)

    @property
    def failed(self):
        return not self.loaded or (self.in_scope and not self.match)


def run_bdc(bdc, model):
    """Returns (exit code or None, JSON object or None, one-line problem description)."""
    try:
        r = subprocess.run([bdc, "inspect", model, "--json"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=BDC_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return None, None, "timed out after %d s" % BDC_TIMEOUT_S
    err = r.stderr.decode(errors="replace").strip().splitlines()
    if r.returncode < 0:
        return None, None, "killed by signal %d" % -r.returncode
    info = None
    if r.returncode in (0, 3):
        try:
            info = json.loads(r.stdout)
        except ValueError:
            pass
    desc = "exit %d" % r.returncode + (": " + err[0] if err else "")
    if r.returncode == 3 and info and info.get("unsupported"):
        u = info["unsupported"][0]
        where = "node '%s' (%s): " % (u.get("node"), u.get("op")) if u.get("op") else ""
        desc = "exit 3: %s%s" % (where, u.get("reason"))
    return r.returncode, info, desc


def scope_check(model, ops, opset_range):
    """'' when the model is in scope, else why not."""
    g = model.graph
    opset = None
    for o in model.opset_import:
        if o.domain in ("", "ai.onnx"):
            opset = o.version
    if opset is None:
        return "no default-domain opset import"
    if not opset_range[0] <= opset <= opset_range[1]:
        return "opset %d outside %d..%d" % (opset, *opset_range)
    for kind, vis in (("input", g.input), ("output", g.output)):
        for vi in vis:  # sequences, optionals and maps are not bdc values
            if vi.type.WhichOneof("value") != "tensor_type":
                return "graph %s '%s' is not a tensor" % (kind, vi.name)
    return nodes_out_of_scope(g.node, ops, opset)


def nodes_out_of_scope(nodes, ops, opset):
    """'' when every node (and every node of an If/Loop/Scan body) is in scope, else why not."""
    for n in nodes:
        if n.domain not in ("", "ai.onnx"):
            return "node %s in domain %s" % (n.op_type, n.domain)
        if n.op_type not in ops:
            return "op %s not in ops.def" % n.op_type
        if opset < ops[n.op_type]:
            return "opset %d < since %d of %s" % (opset, ops[n.op_type], n.op_type)
        for a in n.attribute:
            bodies = ([a.g] if a.HasField("g") else []) + list(a.graphs)
            if not bodies:
                continue
            if n.op_type not in CONTROL_OPS:
                return "subgraph in %s" % n.op_type
            for body in bodies:
                why = nodes_out_of_scope(body.node, ops, opset)
                if why:
                    return "in a %s body: %s" % (n.op_type, why)
    return ""


def load_tensor(path):
    t = TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return t


def shape_determining_inputs(g, slots):
    """Names whose values reach a shape slot: the slot inputs themselves, and (walking back
    through their producers, as in the *_expanded cases where the shape is computed) the values
    they are computed from. Shape and Size end the walk: they read only their input's shape."""
    producer = {o: n for n in g.node for o in n.output}
    todo = [n.input[s] for n in g.node for s in slots.get(n.op_type, ())
            if s < len(n.input) and n.input[s]]
    seen = set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        n = producer.get(name)
        if n is not None and n.op_type not in ("Shape", "Size"):
            todo.extend(i for i in n.input if i)
            todo.extend(body_reads(n))  # an If's outputs come from what its branches read
    return seen


def body_reads(node):
    """Every name the nodes of node's subgraphs (and theirs) read."""
    names = []
    for a in node.attribute:
        for body in ([a.g] if a.HasField("g") else []) + list(a.graphs):
            for n in body.node:
                names.extend(i for i in n.input if i)
                names.extend(body_reads(n))
    return names


def frozen_model(case, model, slots, cache):
    """Path of a copy of the model whose shape-determining graph inputs are initializers
    holding test_data_set_0's values, or the original path when nothing needs freezing."""
    g = model.graph
    init_names = {t.name for t in g.initializer}
    graph_inputs = [vi.name for vi in g.input if vi.name not in init_names]
    wanted = shape_determining_inputs(g, slots) & set(graph_inputs)
    if not wanted:
        return case.model

    data = os.path.join(case.dir, "test_data_set_0")
    pbs = [os.path.join(data, "input_%d.pb" % i) for i in range(len(graph_inputs))]
    out = os.path.join(cache, "frozen", case.label, case.name + ".onnx")
    newest = max(os.path.getmtime(p) for p in [case.model] + [p for p in pbs if os.path.exists(p)])
    if os.path.exists(out) and os.path.getmtime(out) >= newest:
        return out

    values = {}
    for i, name in enumerate(graph_inputs):
        if name in wanted:
            t = load_tensor(pbs[i])
            t.name = name
            values[name] = t
    kept = [vi for vi in g.input if vi.name not in values]
    del g.input[:]
    g.input.extend(kept)
    g.initializer.extend(values[n] for n in graph_inputs if n in values)
    os.makedirs(os.path.dirname(out), exist_ok=True)
    tmp = "%s.tmp-%d" % (out, os.getpid())
    with open(tmp, "wb") as f:
        f.write(model.SerializeToString())
    os.replace(tmp, out)
    return out


def fmt(dtype, shape):
    return "%s%s" % (dtype, json.dumps(shape).replace(" ", "") if shape is not None else "[?]")


def compare_outputs(case, model, info):
    """'' when every graph output matches test_data_set_0/output_i.pb, else the first mismatch."""
    outs = info.get("outputs") or []
    by_name = {v.get("name"): v for v in outs}
    data = os.path.join(case.dir, "test_data_set_0")
    for i, vi in enumerate(model.graph.output):
        path = os.path.join(data, "output_%d.pb" % i)
        if not os.path.exists(path):
            return "missing %s" % os.path.relpath(path, case.dir)
        t = load_tensor(path)
        dtype = t.data_type
        declared = vi.type.tensor_type.elem_type
        if dtype == TensorProto.UINT16 and declared == TensorProto.BFLOAT16:
            dtype = declared  # older suites store bfloat16 reference outputs as uint16 bits
        want = (DTYPES[dtype] if dtype < len(DTYPES) else str(dtype), list(t.dims))
        v = by_name.get(vi.name, outs[i] if i < len(outs) else None)
        if v is None:
            return "output %d '%s' missing from bdc's outputs" % (i, vi.name)
        got = (v.get("dtype"), v.get("shape"))
        if got != want:
            return "output %d '%s': expected %s, got %s" % (i, vi.name, fmt(*want), fmt(*got))
    return ""


def run_case(case, bdc, ops, opset_range, slots, cache):
    code, info, desc = run_bdc(bdc, case.model)
    case.loaded = code in (0, 3)
    if not case.loaded:
        case.reason = "load: " + desc
    try:
        model = onnx.load(case.model)
    except Exception as e:  # noqa: BLE001 - any parse failure just puts it out of scope
        case.scope_reason = "onnx.load failed: %s" % e
        return case
    case.scope_reason = scope_check(model, ops, opset_range)
    case.in_scope = not case.scope_reason
    if not case.in_scope or not case.loaded:
        return case

    try:
        path = frozen_model(case, model, slots, cache)
    except Exception as e:  # noqa: BLE001
        case.reason = "cannot freeze inputs: %s" % e
        return case
    if path != case.model:
        code, info, desc = run_bdc(bdc, path)
        desc = "frozen model: " + desc
    # Exit 3 still prints the JSON: ops are in scope here, so what is unsupported is a dtype the
    # code generator lacks, and shape inference must be right all the same.
    if code not in (0, 3):
        case.reason = desc
    elif info is None:
        case.reason = "stdout is not a JSON object"
    else:
        case.reason = compare_outputs(case, model, info)
        case.match = not case.reason
    return case


# ---------------------------------------------------------------------------------------------
# Expected failures and the report
# ---------------------------------------------------------------------------------------------

def read_xfail(path):
    """{key: reason}, key = 'label/case' or bare 'case' (both suites)."""
    entries = {}
    if not os.path.exists(path):
        return entries
    for line in open(path):
        body, _, reason = line.partition("#")
        name = body.strip()
        if name:
            entries[name.split()[0]] = reason.strip()
    return entries


def xfail_entry(xfail, case):
    for k in (case.key, case.name):
        if k in xfail:
            return k
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bdc", default=os.environ.get("BDC") or os.path.join(REPO, "build", "bdc"))
    ap.add_argument("--cache", default=os.environ.get("BDC_CACHE")
                    or os.path.join("build", "testdata"))
    ap.add_argument("--root", action="append", default=[], metavar="LABEL=DIR",
                    help="a node-suite folder (repeatable; replaces the defaults)")
    ap.add_argument("--archive", action="append", default=[], metavar="TGZ",
                    help="a backend-testdata archive (repeatable; replaces the defaults)")
    ap.add_argument("--xfail", default=XFAIL_FILE)
    ap.add_argument("-k", dest="pattern", help="only cases whose name matches this glob")
    ap.add_argument("-j", dest="jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("-v", dest="verbose", action="store_true",
                    help="also list expected failures and out-of-scope reasons")
    args = ap.parse_args()

    if not os.access(args.bdc, os.X_OK):
        sys.stderr.write("test_node_shapes: bdc not found or not executable: %s "
                         "(set BDC or pass --bdc)\n" % args.bdc)
        return 1
    ops = read_op_table(REPO)
    opset_range = read_opset_range(REPO)
    slots = {op: s for op, s in SHAPE_SLOTS.items() if op in ops}
    xfail = read_xfail(args.xfail)
    os.makedirs(args.cache, exist_ok=True)

    roots = []
    for spec in args.root:
        label, sep, path = spec.partition("=")
        roots.append((label, path) if sep else (os.path.basename(spec.rstrip("/")), spec))
    archives = args.archive
    if not args.root and not args.archive:
        if os.path.isdir(SYSTEM_ROOT):
            roots.append((system_label(), SYSTEM_ROOT))
        archives = [ARCHIVE] if os.path.exists(ARCHIVE) else []
    for a in archives:
        roots.append((archive_label(a), extract_archive(a, args.cache)))

    passed = failed = 0
    seen = set()
    for label, root in roots:
        names = sorted(d for d in os.listdir(root)
                       if os.path.isfile(os.path.join(root, d, "model.onnx")))
        if args.pattern:
            names = [n for n in names if fnmatch.fnmatch(n, args.pattern)]
        cases = [Case(label, root, n) for n in names]
        with ThreadPool(max(1, args.jobs)) as pool:
            pool.map(lambda c: run_case(c, args.bdc, ops, opset_range, slots, args.cache),
                     cases, chunksize=1)

        in_scope = [c for c in cases if c.in_scope]
        print("[%s] %s" % (label, root))
        print("[%s] loaded %d/%d, in scope %d, shapes match %d/%d" % (
            label, sum(c.loaded for c in cases), len(cases), len(in_scope),
            sum(c.match for c in in_scope), len(in_scope)))
        xfailed = 0
        for c in cases:
            entry = xfail_entry(xfail, c)
            if entry:
                seen.add(entry)
            if c.failed and entry:
                passed += 1
                xfailed += 1
                if args.verbose:
                    print("  XFAIL %s: %s  [# %s]" % (c.key, c.reason, xfail[entry]))
            elif c.failed:
                failed += 1
                print("  FAIL %s: %s" % (c.key, c.reason))
            elif entry:
                failed += 1
                print("  UNEXPECTED PASS %s (listed as '%s' in %s: %s)" % (
                    c.key, entry, os.path.basename(args.xfail), xfail[entry]))
            elif c.in_scope:
                passed += 1
            elif args.verbose:
                print("  skip %s: %s" % (c.key, c.scope_reason))
        if xfailed:
            print("[%s] %d expected failure(s) (%s)" % (label, xfailed, os.path.basename(args.xfail)))
    if not args.pattern:
        labels = {label for label, _ in roots}
        for k in sorted(set(xfail) - seen):
            if "/" not in k or k.split("/")[0] in labels:
                print("warning: %s entry '%s' matches no case" % (os.path.basename(args.xfail), k))

    if passed + failed == 0:
        print("no test cases ran (no suite found, or nothing in scope)")
    print("%d passed, %d failed" % (passed, failed))
    return 0 if failed == 0 and passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
