#!/usr/bin/env python3
"""ONNX backend node suite, compiled and run: bdc's executables against the suite's outputs.

Usage: test_node_run.py [--bdc PATH] [--cache DIR] [--root LABEL=DIR ...] [--archive TGZ]
                        [--xfail FILE] [--min-pass PCT] [--keep-outputs DIR] [-k GLOB] [-j N]
                        [--target cpu|opencl|cuda|hip] [--schedule op|block] [--sample K]
                        [--inputs frozen|runtime] [-v]

Test roots and scope are those of tests/test_node_shapes.py (its functions are imported, so the
two tests always agree on what is in scope): Debian's libonnx-testdata suite and the v1.22.0
archive, and a case is in scope when every node is a top-level default-domain op listed in
src/front/ops.def, the opset is within BD_OPSET_MIN..MAX and >= each op's `since`, and every graph
input and output is a tensor.

For each in-scope case and each of its test_data_set_*:
  freeze   graph inputs that feed shape-determining slots (Reshape's shape, Slice's starts, ...)
           become initializers holding that data set's values, exactly as test_node_shapes.py
           does for data set 0 (data sets whose frozen values differ get their own model);
  compile  `bdc compile frozen.onnx -o DIR/model --werror -q`; exit 3 (op, dtype or attribute
           bdc cannot compile yet) makes the case "unsupported", any other failure "failed";
  run      the executable with the remaining inputs (`--input NAME=input_i.pb`) and
           `--output-dir`; it must exit 0;
  compare  every graph output with output_i.pb: dtype and shape exactly, floats with
           rtol 1e-3, atol 1e-5 (NaN equals NaN, inf equals inf of the same sign), integers and
           bools exactly.
Why: the suite's reference outputs give an independent answer for every op and attribute
combination bdc claims to support; compiling with --werror also keeps the generated C clean.

Compiled executables are cached under $BDC_CACHE (or --cache, default build/cache) in
node_run/<sha256 of the frozen model>/<bdc stamp>/, where the stamp is the modification time of
the bdc binary and of the runtime libraries staged beside it: rebuilding bdc recompiles
everything, rerunning an unchanged tree only runs the executables. Entries for older stamps of
the same model are removed when a new one is made.

Expected failures live in tests/node_run_xfail.txt (`case_name  # reason`, the name optionally
prefixed `v1.22/` or `v1.12/` for one suite only). A listed case that fails is an expected
failure; a listed case that passes is an "unexpected pass" and counts as failed, so the list stays
honest; an unsupported (refused) case must be listed too, with its reason. Every suite must also
pass (match exactly, not merely be listed) at least --min-pass percent (default 95; 83 for the
v1.22 suite, whose later opsets bring dtypes bdc refuses: MIN_PASS) of its in-scope cases; the rate is reported but
not enforced when -k selects a subset. Prints per suite `cases, in scope, passed, failed,
unsupported`, the failures with reasons, the unsupported cases' reasons (grouped), and a closing
`N passed, M failed`; exits 1 if anything failed or if no case ran.

--target opencl compiles every case for the OpenCL target and runs it on the OpenCL device (PoCL
in the tests), in --schedule op or block (default: bdc's); the cases GPU targets cannot compile
yet are listed, with reasons, in tests/node_run_xfail_gpu.txt, read after --xfail. --sample K
keeps one in-scope case in K (those whose name hashes to 0 modulo K: the same sample on every
machine, spread over every op); like -k, it reports the pass rate without enforcing it.
--target cuda or hip only compiles (with --werror, so no warnings) and checks the executable's
--info: there is no device to run it on here; a case passes when it builds.

--inputs runtime freezes nothing: every graph input is fed to the executable at run time, as a
user would. A case whose output shapes then depend on an input's value (a Reshape target, Slice
starts, Split sizes, reduction axes fed at run time) is refused by bdc with exit 3, naming the
input and the --const option; such refusals ("known only at run time") need no entry in the
expected-failure files, are counted as unsupported and listed, grouped, with the others, and the
--min-pass rate is taken over the in-scope cases without them. --inputs frozen (default)
is the freezing described above. Both modes also print the out-of-scope cases grouped by reason,
and a closing line per suite with passed / all cases, so that "passed of every case in the
suite" is read off directly.

--keep-outputs DIR copies every file the executable writes to its --output-dir into
DIR/<suite label>/<case>/<test_data_set_N>/ (the folder is replaced if it exists), for comparing
two bdc binaries byte for byte (tests/tools/compare_outputs.sh). A run that exits non-zero keeps
nothing. With the option every data set of a compiled case is run even after one has failed (the
case still reports its first failure), so that all outputs are kept; without it, nothing is
copied and a case stops at its first failing data set.
"""

import argparse
import collections
import fnmatch
import glob
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from multiprocessing.pool import ThreadPool

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402
import onnx  # noqa: E402
from onnx import numpy_helper  # noqa: E402

import test_node_shapes as shapes  # noqa: E402

REPO = os.path.dirname(HERE)
XFAIL_FILE = os.path.join(HERE, "node_run_xfail.txt")
XFAIL_GPU_FILE = os.path.join(HERE, "node_run_xfail_gpu.txt")
COMPILE_TIMEOUT_S = 300
RUN_TIMEOUT_S = 120
RTOL, ATOL = 1e-3, 1e-5


# ---------------------------------------------------------------------------------------------
# One case
# ---------------------------------------------------------------------------------------------

class Case:
    def __init__(self, label, root, name):
        self.label, self.name = label, name
        self.dir = os.path.join(root, name)
        self.model = os.path.join(self.dir, "model.onnx")
        self.in_scope = False
        self.scope_reason = ""
        self.status = ""  # "pass", "fail", "unsupported" (in-scope cases)
        self.reason = ""

    @property
    def key(self):
        return "%s/%s" % (self.label, self.name)


def first_line(text):
    lines = [l for l in (text or "").strip().splitlines() if l.strip()]
    return lines[0].strip() if lines else "(no message)"


def unsupported_reason(stderr):
    """The line naming what bdc cannot compile (`bdc: node 'x' (Op): ...`), else the first."""
    lines = [l.strip() for l in (stderr or "").splitlines() if l.strip()]
    for l in lines:
        if "node " in l or "unsupported" in l or "not supported" in l:
            return l
    return lines[0] if lines else "(no message)"


def data_sets(case):
    return sorted(glob.glob(os.path.join(case.dir, "test_data_set_*")),
                  key=lambda p: int(re.sub(r"\D", "", os.path.basename(p)) or 0))


def frozen_bytes(model_bytes, wanted, graph_inputs, data_dir):
    """The model with the `wanted` graph inputs turned into initializers holding data_dir's
    values (test_node_shapes.frozen_model's transformation, for any data set), serialised."""
    model = onnx.ModelProto()
    model.ParseFromString(model_bytes)
    g = model.graph
    values = {}
    for i, name in enumerate(graph_inputs):
        if name in wanted:
            t = shapes.load_tensor(os.path.join(data_dir, "input_%d.pb" % i))
            t.name = name
            values[name] = t
    kept = [vi for vi in g.input if vi.name not in values]
    del g.input[:]
    g.input.extend(kept)
    g.initializer.extend(values[n] for n in graph_inputs if n in values)
    return model.SerializeToString()


def bdc_stamp(bdc):
    """Changes whenever bdc or the runtime it links into executables is rebuilt."""
    paths = [bdc] + sorted(glob.glob(os.path.join(os.path.dirname(os.path.abspath(bdc)),
                                                  "bdc-runtime", "lib", "*")))
    return "%x" % max(os.stat(p).st_mtime_ns for p in paths if os.path.exists(p))


def compile_cached(bdc, stamp, cache, model_bytes, flags=()):
    """Returns (status, message, folder): status "ok" (folder holds model + info.json),
    "unsupported" (bdc exit 3) or "fail". ok and unsupported results are cached; flags (extra
    `bdc compile` options) are part of the key."""
    sha = hashlib.sha256(model_bytes + " ".join(flags).encode()).hexdigest()
    top = os.path.join(cache, "node_run", sha)
    entry = os.path.join(top, stamp)
    result = os.path.join(entry, "result.json")
    if os.path.exists(result):
        with open(result) as f:
            r = json.load(f)
        if r["status"] != "ok" or os.path.exists(os.path.join(entry, "model")):
            return r["status"], r["message"], entry
    os.makedirs(top, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="tmp-", dir=top)
    try:
        src = os.path.join(tmp, "model.onnx")
        with open(src, "wb") as f:
            f.write(model_bytes)
        exe = os.path.join(tmp, "model")
        try:
            r = subprocess.run([bdc, "compile", src, "-o", exe, "--werror", "-q"] + list(flags),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               errors="replace", timeout=COMPILE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return "fail", "bdc compile timed out after %d s" % COMPILE_TIMEOUT_S, None
        if r.returncode < 0:
            return "fail", "bdc compile killed by signal %d" % -r.returncode, None
        if r.returncode == 3:
            status, message = "unsupported", unsupported_reason(r.stderr)
        elif r.returncode != 0:
            return "fail", "bdc compile exit %d: %s" % (r.returncode, first_line(r.stderr)), None
        else:
            info = subprocess.run([exe, "--info", "--json"], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, errors="replace",
                                  timeout=RUN_TIMEOUT_S)
            if info.returncode != 0:
                return "fail", "model --info exit %d: %s" % (info.returncode,
                                                             first_line(info.stderr)), None
            with open(os.path.join(tmp, "info.json"), "w") as f:
                f.write(info.stdout)
            status, message = "ok", ""
        os.unlink(src)
        with open(os.path.join(tmp, "result.json"), "w") as f:
            json.dump({"status": status, "message": message}, f)
        for old in os.listdir(top):  # older stamps of this model, and a racing copy of ours
            if not old.startswith("tmp-") and old != stamp:
                shutil.rmtree(os.path.join(top, old), ignore_errors=True)
        try:
            os.replace(tmp, entry)
        except OSError:  # another thread made it meanwhile: use theirs
            pass
        return status, message, entry
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def compare(name, got, want):
    """'' when got (from the executable) equals want (the reference), else the difference."""
    if got.dtype != want.dtype:
        return "output '%s': dtype %s, expected %s" % (name, got.dtype, want.dtype)
    if got.shape != want.shape:
        return "output '%s': shape %s, expected %s" % (name, list(got.shape), list(want.shape))
    if got.size == 0:
        return ""
    if want.dtype.kind in "fc":
        ok = np.isclose(got, want, rtol=RTOL, atol=ATOL, equal_nan=True)
        if ok.all():
            return ""
        bad = np.flatnonzero(~ok.ravel())
        i = bad[0]
        with np.errstate(all="ignore"):
            err = np.abs(got.astype(np.float64) - want.astype(np.float64))
            err = np.where(np.isnan(err), np.inf, err)
        return "output '%s': %d of %d elements differ, max abs error %.3g; first at flat index " \
               "%d: got %r, expected %r" % (name, len(bad), got.size, float(err.max()), i,
                                            got.ravel()[i].item(), want.ravel()[i].item())
    if np.array_equal(got, want):
        return ""
    bad = np.flatnonzero((got != want).ravel())
    i = bad[0]
    return "output '%s': %d of %d elements differ; first at flat index %d: got %r, expected %r" \
        % (name, len(bad), got.size, i, got.ravel()[i].item(), want.ravel()[i].item())


def keep_outputs(keep, case, data_dir, out):
    """Copies the executable's output folder to keep/<label>/<case>/<data set>/."""
    dest = os.path.join(keep, case.label, case.name, os.path.basename(data_dir))
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(out, dest)


def run_data_set(case, entry, data_dir, graph_inputs, frozen, outputs, keep=None):
    """'' when the executable reproduces data_dir's outputs, else why not. keep: a folder to
    copy the outputs to (see --keep-outputs), or None."""
    with open(os.path.join(entry, "info.json")) as f:
        info = json.load(f)
    files = {o["name"]: o["file"] for o in info["outputs"]}
    args = []
    for i, name in enumerate(graph_inputs):
        if name not in frozen:
            args += ["--input", "%s=%s" % (name, os.path.join(data_dir, "input_%d.pb" % i))]
    tag = os.path.basename(data_dir)
    with tempfile.TemporaryDirectory(prefix="bdc-node-run-") as out:
        try:
            r = subprocess.run([os.path.join(entry, "model")] + args + ["--output-dir", out],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               errors="replace", timeout=RUN_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return "%s: run timed out after %d s" % (tag, RUN_TIMEOUT_S)
        if r.returncode < 0:
            return "%s: run killed by signal %d" % (tag, -r.returncode)
        if r.returncode != 0:
            return "%s: run exit %d: %s" % (tag, r.returncode, first_line(r.stderr))
        if keep:
            keep_outputs(keep, case, data_dir, out)
        for i, name in enumerate(outputs):
            ref = os.path.join(data_dir, "output_%d.pb" % i)
            if not os.path.exists(ref):
                return "%s: missing output_%d.pb" % (tag, i)
            want = numpy_helper.to_array(shapes.load_tensor(ref))
            if name not in files:
                return "%s: output '%s' is not an output of the executable" % (tag, name)
            got = np.load(os.path.join(out, files[name]), allow_pickle=False)
            diff = compare(name, got, want)
            if diff:
                return "%s: %s" % (tag, diff)
    return ""


# The least pass rate per suite (--min-pass overrides). The v1.22 suite's opsets 23..27 add about
# 165 cases of float8, float4 and packed 2- and 4-bit dtypes, which bdc refuses (listed in the
# expected-failure file); its other cases pass as the v1.12 suite's do.
MIN_PASS = {"v1.22": 83.0}

# bdc's refusal of a value it needs at compile time but which is a graph input fed at run time
# (a Reshape target, Slice starts, reduction axes): bd_fail_not_const and the support check.
RUNTIME_VALUE_REFUSAL = "known only at run time"


def run_case(case, bdc, stamp, ops, opset_range, slots, cache, keep=None, flags=(), sample=0,
             compile_only=False, freeze=True):
    try:
        with open(case.model, "rb") as f:
            model_bytes = f.read()
        model = onnx.load_from_string(model_bytes)
    except Exception as e:  # noqa: BLE001 - any parse failure just puts it out of scope
        case.scope_reason = "onnx.load failed: %s" % e
        return case
    case.scope_reason = shapes.scope_check(model, ops, opset_range)
    if not case.scope_reason and sample > 1 and \
            int(hashlib.sha1(case.name.encode()).hexdigest(), 16) % sample:
        case.scope_reason = "not in the --sample %d sample" % sample
    case.in_scope = not case.scope_reason
    if not case.in_scope:
        return case
    try:
        g = model.graph
        init_names = {t.name for t in g.initializer}
        graph_inputs = [vi.name for vi in g.input if vi.name not in init_names]
        outputs = [vi.name for vi in g.output]
        frozen = shapes.shape_determining_inputs(g, slots) & set(graph_inputs) if freeze else set()
        sets = data_sets(case)
        if not sets:
            case.status, case.reason = "fail", "no test_data_set_*"
            return case
        first_problem = ""
        for data_dir in sets:
            mb = frozen_bytes(model_bytes, frozen, graph_inputs, data_dir) if frozen else model_bytes
            status, message, entry = compile_cached(bdc, stamp, cache, mb, flags)
            if status != "ok":
                if first_problem:  # only with keep: an earlier data set already failed
                    break
                case.status, case.reason = status, message
                return case
            problem = "" if compile_only else run_data_set(case, entry, data_dir, graph_inputs, frozen,
                                                           outputs, keep)
            if problem and not keep:
                case.status, case.reason = "fail", problem
                return case
            first_problem = first_problem or problem
        if first_problem:
            case.status, case.reason = "fail", first_problem
            return case
        case.status = "pass"
    except Exception as e:  # noqa: BLE001 - a broken case fails alone, with its reason
        case.status, case.reason = "fail", "%s: %s" % (type(e).__name__, e)
    return case


# ---------------------------------------------------------------------------------------------
# The report
# ---------------------------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bdc", default=os.environ.get("BDC") or os.path.join(REPO, "build", "bdc"))
    ap.add_argument("--cache", default=os.environ.get("BDC_CACHE")
                    or os.path.join("build", "cache"))
    ap.add_argument("--root", action="append", default=[], metavar="LABEL=DIR",
                    help="a node-suite folder (repeatable; replaces the defaults)")
    ap.add_argument("--archive", action="append", default=[], metavar="TGZ",
                    help="a backend-testdata archive (repeatable; replaces the defaults)")
    ap.add_argument("--xfail", default=XFAIL_FILE)
    ap.add_argument("--min-pass", type=float, metavar="PCT",
                    help="least percentage of in-scope cases that must pass (default: 95, and "
                         "83 for the v1.22 suite)")
    ap.add_argument("--keep-outputs", metavar="DIR",
                    help="copy every output file the executables write to "
                         "DIR/<suite label>/<case>/<data set>/ (for comparing two bdc binaries)")
    ap.add_argument("-k", dest="pattern", help="only cases whose name matches this glob")
    ap.add_argument("-j", dest="jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--target", choices=("cpu", "opencl", "cuda", "hip"), default="cpu",
                    help="bdc compile --target (opencl: run on the OpenCL device; cuda, hip: "
                         "build only)")
    ap.add_argument("--schedule", choices=("op", "block"), help="bdc compile --schedule")
    ap.add_argument("--sample", type=int, default=0, metavar="K",
                    help="one in-scope case in K, chosen by a hash of its name")
    ap.add_argument("--inputs", choices=("frozen", "runtime"), default="frozen",
                    help="frozen (default): shape-deciding graph inputs become initializers; "
                         "runtime: every graph input is fed at run time")
    ap.add_argument("-v", dest="verbose", action="store_true",
                    help="also list expected failures, each unsupported case and out-of-scope "
                         "reasons")
    args = ap.parse_args()
    flags = []
    if args.target != "cpu":
        flags += ["--target", args.target]
    if args.schedule:
        flags += ["--schedule", args.schedule]

    if not os.access(args.bdc, os.X_OK):
        sys.stderr.write("test_node_run: bdc not found or not executable: %s "
                         "(set BDC or pass --bdc)\n" % args.bdc)
        return 1
    ops = shapes.read_op_table(REPO)
    opset_range = shapes.read_opset_range(REPO)
    slots = {op: s for op, s in shapes.SHAPE_SLOTS.items() if op in ops}
    xfail = shapes.read_xfail(args.xfail)
    if args.target != "cpu":
        xfail.update(shapes.read_xfail(XFAIL_GPU_FILE))
    os.makedirs(args.cache, exist_ok=True)
    if args.keep_outputs:
        os.makedirs(args.keep_outputs, exist_ok=True)
    stamp = bdc_stamp(args.bdc)

    roots = []
    for spec in args.root:
        label, sep, path = spec.partition("=")
        roots.append((label, path) if sep else (os.path.basename(spec.rstrip("/")), spec))
    archives = args.archive
    if not args.root and not args.archive:
        if os.path.isdir(shapes.SYSTEM_ROOT):
            roots.append((shapes.system_label(), shapes.SYSTEM_ROOT))
        archives = [shapes.ARCHIVE] if os.path.exists(shapes.ARCHIVE) else []
    for a in archives:
        roots.append((shapes.archive_label(a), shapes.extract_archive(a, args.cache)))

    passed = failed = 0
    seen = set()
    for label, root in roots:
        names = sorted(d for d in os.listdir(root)
                       if os.path.isfile(os.path.join(root, d, "model.onnx")))
        if args.pattern:
            names = [n for n in names if fnmatch.fnmatch(n, args.pattern)]
        cases = [Case(label, root, n) for n in names]
        with ThreadPool(max(1, args.jobs)) as pool:
            pool.map(lambda c: run_case(c, args.bdc, stamp, ops, opset_range, slots, args.cache,
                                        args.keep_outputs, tuple(flags), args.sample,
                                        args.target in ("cuda", "hip"), args.inputs == "frozen"),
                     cases, chunksize=1)

        in_scope = [c for c in cases if c.in_scope]
        n_pass = sum(c.status == "pass" for c in in_scope)
        n_fail = sum(c.status == "fail" for c in in_scope)
        unsupported = [c for c in in_scope if c.status == "unsupported"]
        print("[%s] %s" % (label, root))
        print("[%s] cases %d, in scope %d, passed %d, failed %d, unsupported %d" % (
            label, len(cases), len(in_scope), n_pass, n_fail, len(unsupported)))

        xfailed = 0
        for c in cases:
            entry = shapes.xfail_entry(xfail, c)
            if entry:
                seen.add(entry)
            if not c.in_scope:
                if args.verbose:
                    print("  skip %s: %s" % (c.key, c.scope_reason))
            elif c.status == "fail" and entry:
                xfailed += 1
                if args.verbose:
                    print("  XFAIL %s: %s  [# %s]" % (c.key, c.reason, xfail[entry]))
            elif c.status == "fail":
                failed += 1
                print("  FAIL %s: %s" % (c.key, c.reason))
            elif c.status == "pass" and entry:
                failed += 1
                print("  UNEXPECTED PASS %s (listed as '%s' in %s: %s)" % (
                    c.key, entry, os.path.basename(args.xfail), xfail[entry]))
            elif c.status == "pass":
                passed += 1
            elif not entry and args.inputs == "runtime" and RUNTIME_VALUE_REFUSAL in c.reason:
                if args.verbose:  # the documented refusal of this mode; listed grouped below
                    print("  unsupported %s: %s" % (c.key, c.reason))
            elif not entry:
                # Refusing is honest, but every refusal is listed with its reason in the file.
                failed += 1
                print("  UNLISTED UNSUPPORTED %s: %s (add it to %s with its reason)" % (
                    c.key, c.reason, os.path.basename(args.xfail)))
            elif args.verbose:
                print("  unsupported %s: %s  [# %s]" % (c.key, c.reason, xfail[entry]))
        if xfailed:
            print("[%s] %d expected failure(s) (%s)" % (label, xfailed,
                                                        os.path.basename(args.xfail)))
        if unsupported:
            # Grouped by reason with node names stripped, so one missing op reads as one line.
            why = collections.OrderedDict()
            for c in unsupported:
                why.setdefault(re.sub(r"node '[^']*' ", "node ", c.reason), []).append(c.name)
            print("[%s] unsupported (bdc exit 3), by reason:" % label)
            for reason, which in sorted(why.items(), key=lambda kv: -len(kv[1])):
                print("  %4d  %s  (%s%s)" % (len(which), reason, ", ".join(which[:3]),
                                            ", ..." if len(which) > 3 else ""))
        out_of_scope = collections.Counter(
            re.sub(r"'[^']*'", "'...'", c.scope_reason) for c in cases if not c.in_scope)
        if out_of_scope and args.sample <= 1:
            print("[%s] out of scope (not compiled), by reason:" % label)
            for reason, count in out_of_scope.most_common():
                print("  %4d  %s" % (count, reason))
        print("[%s] inputs %s: %d of all %d cases pass (%d in scope; %d unsupported, %d out of "
              "scope, %d failed)" % (label, args.inputs, n_pass, len(cases), len(in_scope),
                                     len(unsupported), len(cases) - len(in_scope), n_fail))
        rated = in_scope
        if args.inputs == "runtime":
            rated = [c for c in in_scope if not (c.status == "unsupported"
                                                 and RUNTIME_VALUE_REFUSAL in c.reason)]
        if rated:
            rate = 100.0 * n_pass / len(rated)
            enforce = not args.pattern and args.sample <= 1
            min_pass = args.min_pass if args.min_pass is not None else MIN_PASS.get(label, 95.0)
            ok = rate >= min_pass
            print("[%s] pass rate %.1f%% of in-scope cases%s (%s %.0f%%)%s" % (
                label, rate, "" if rated is in_scope else " whose values are known at compile time",
                ">=" if ok else "<", min_pass,
                "" if enforce else "; not enforced with -k or --sample"))
            if enforce and not ok:
                failed += 1
                print("  FAIL [%s] pass rate %.1f%% is below %.0f%%" % (label, rate,
                                                                     min_pass))
    if not args.pattern and args.sample <= 1:
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
