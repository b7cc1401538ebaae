#!/usr/bin/env python3
"""Hostile names: a model whose every string is an attack compiles, runs correctly, and makes
bdc and the executable it writes create no file other than their outputs.

Names are generated code's classic injection points: tensor and node names end up in comments,
string tables, messages and output file names. The model (MatMul -> Add -> Relu, a second
output through Sigmoid) names its tensors, nodes, graph and producer with shell substitutions
(`$(touch x)`), quote-breaking shell (`"; rm -rf`), comment terminators (`*/`), newlines and a
`#include`, trigraphs (`??/`), `../` paths, printf conversions, a trailing backslash, invalid
UTF-8 (patched into the serialized bytes, since protobuf's Python API refuses it), names that
collide once sanitised (`a b`, `a_b`, `a-b`) and a 10 kB name.

Checks, each a numbered case:
  - `bdc compile --werror` succeeds (the generated C builds with -Wall -Wextra -Werror),
  - the executable's outputs equal a numpy evaluation of the same graph (rtol 1e-5),
  - `--lib` also compiles and its header passes `cc -Wall -Wextra -Werror -fsyntax-only`,
  - under `strace -f`, every file created, renamed, linked or removed by bdc and everything it
    runs (the C compiler, assembler, linker), and by the executable, lies in the private
    temporary folder (TMPDIR) or is the requested output; no file named `x` appears anywhere
    in the sandbox folder, and the sandbox holds exactly the expected files afterwards.
Without a working strace (ptrace not permitted) the strace cases are reported as failures, not
skipped. Prints one line per case and `N passed, M failed`; exits 1 if anything failed.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Placeholder (16 bytes) swapped for invalid UTF-8 of the same length after serialisation.
BAD_UTF8_PLACEHOLDER = "BADUTF8PLACEHLDR"
BAD_UTF8_BYTES = b"bad\xff\xfe\xc0\xaf\xed\xa0\x80utf8\x80\xc3"
assert len(BAD_UTF8_BYTES) == len(BAD_UTF8_PLACEHOLDER)

NAMES = {
    "input": "$(touch x)`touch x`",
    "weight": '"; rm -rf "$HOME"; echo "',
    "matmul_out": "*/ int evil = 1; /*",
    "bias": "line1\nline2\r\n#include </etc/passwd>\n",
    "add_out": "??/ ??= ??' trigraphs ??/",
    "relu_out": "../../escape/out",
    "sig_out": BAD_UTF8_PLACEHOLDER,
    "collide1": "a b",
    "collide2": "a_b",
    "collide3": "a-b",
    "long": "L" * 10240,
    "node_matmul": "%s%n%x%999999999d",
    "node_add": "ends with a backslash \\",
    "node_relu": "/* unterminated",
    "node_sig": "\\\n#error injected",
}


def build_model():
    rng = np.random.default_rng(7)
    w = rng.standard_normal((3, 4)).astype(np.float32)
    b = rng.standard_normal((4,)).astype(np.float32)
    n = NAMES
    nodes = [
        helper.make_node("MatMul", [n["input"], n["weight"]], [n["matmul_out"]], name=n["node_matmul"]),
        helper.make_node("Add", [n["matmul_out"], n["bias"]], [n["add_out"]], name=n["node_add"]),
        helper.make_node("Relu", [n["add_out"]], [n["relu_out"]], name=n["node_relu"]),
        helper.make_node("Sigmoid", [n["add_out"]], [n["sig_out"]], name=n["node_sig"]),
        helper.make_node("Neg", [n["relu_out"]], [n["collide1"]], name=n["long"]),
        helper.make_node("Abs", [n["add_out"]], [n["collide2"]], name=n["collide3"]),
        helper.make_node("Exp", [n["collide1"]], [n["collide3"]], name=n["long"] + "2"),
        helper.make_node("Mul", [n["collide2"], n["collide3"]], [n["long"]], name="*/"),
    ]
    outs = [n["relu_out"], n["sig_out"], n["collide1"], n["collide2"], n["collide3"], n["long"]]
    graph = helper.make_graph(
        nodes, "graph */ $(touch x) \n??/",
        [helper.make_tensor_value_info(n["input"], TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, [2, 4]) for o in outs],
        initializer=[numpy_helper.from_array(w, n["weight"]), numpy_helper.from_array(b, n["bias"])],
        doc_string="*/ #error doc")
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name='"; rm -rf / ; $(touch x) */', producer_version="??/")
    model.ir_version = 8
    onnx.checker.check_model(model)
    data = model.SerializeToString()
    assert data.count(BAD_UTF8_PLACEHOLDER.encode()) >= 2
    data = data.replace(BAD_UTF8_PLACEHOLDER.encode(), BAD_UTF8_BYTES)

    def reference(x):
        mm = x @ w
        add = mm + b
        relu = np.maximum(add, 0)
        sig = 1 / (1 + np.exp(-add))
        neg = -relu
        ab = np.abs(add)
        ex = np.exp(neg)
        return [relu, sig, neg, ab, ex, ab * ex]

    return data, reference


class Results:
    def __init__(self):
        self.passed = self.failed = 0

    def case(self, name, ok, detail=""):
        print("%s %s%s" % ("PASS" if ok else "FAIL", name, (": " + detail) if detail else ""))
        if ok:
            self.passed += 1
        else:
            self.failed += 1
        return ok


# One strace line: "PID call(args) = result", possibly split by another process's line into
# "PID call(args <unfinished ...>" and "PID <... call resumed>args) = result".
SYSCALL_RE = re.compile(r'^(\d+)\s+(\w+)\((.*)\)\s+=\s+(-?\d+|\?)')
# Arguments: a dirfd decorated by -y (`3</path>` or AT_FDCWD) or a quoted path.
ARG_RE = re.compile(r'AT_FDCWD|\b\d+<((?:[^>\\]|\\.)*)>|"((?:[^"\\]|\\.)*)"')
WRITE_OPEN_FLAGS = ("O_CREAT", "O_WRONLY", "O_RDWR", "O_TRUNC")
ONE_PATH_CALLS = {"creat", "mkdir", "mkdirat", "unlink", "unlinkat", "rmdir", "mknod", "mknodat",
                  "truncate"}
TWO_PATH_CALLS = {"rename", "renameat", "renameat2", "link", "linkat", "symlink", "symlinkat"}


def strace_available():
    try:
        r = subprocess.run(["strace", "-f", "-qq", "-o", os.devnull, "true"],
                           capture_output=True, timeout=30)
        return r.returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def unescape(s):
    return s.encode("latin-1").decode("unicode_escape").encode("latin-1").decode("latin-1")


def traced_writes(trace_path, start_cwd):
    """Absolute paths that each successful syscall created, opened for writing, renamed to or
    from, linked or removed. Relative paths are resolved against the dirfd strace printed (-y)
    or the process's cwd, followed through fork/clone and chdir."""
    with open(trace_path, "rb") as f:
        lines = [raw.decode("latin-1").rstrip("\n") for raw in f]
    # Join split calls first; a child's first lines can come before its parent's clone returns.
    calls, pending, parent = [], {}, {}
    for line in lines:
        pid = line.split(None, 1)[0] if line else ""
        if "<unfinished ...>" in line:
            pending[pid] = line[:line.index("<unfinished ...>")].rstrip()
            continue
        m = re.match(r'^(\d+)\s+<\.\.\. \w+ resumed>(.*)$', line)
        if m:
            line = pending.pop(m.group(1), m.group(1) + " ?(") + m.group(2)
        m = SYSCALL_RE.match(line)
        if not m or m.group(4) == "?" or int(m.group(4)) < 0:
            continue
        calls.append(m.groups())
        if m.group(2) in ("clone", "clone3", "fork", "vfork"):
            parent[m.group(4)] = m.group(1)
    cwd, out = {}, []

    def cwd_of(pid):
        if pid not in cwd:
            cwd[pid] = cwd_of(parent[pid]) if pid in parent else start_cwd
        return cwd[pid]

    for pid, call, args, _ in calls:
        here = cwd_of(pid)
        paths, base = [], here
        for a in ARG_RE.finditer(args):
            if a.group(0) == "AT_FDCWD":
                base = here
            elif a.group(1) is not None:
                base = unescape(a.group(1))
            else:
                p = unescape(a.group(2))
                paths.append(os.path.normpath(os.path.join(base, p)))
                base = here
        if call == "chdir" and paths:
            cwd[pid] = paths[0]
        elif call in ("open", "openat") and any(fl in args for fl in WRITE_OPEN_FLAGS):
            out.append((call, paths[:1]))
        elif call in ONE_PATH_CALLS:
            out.append((call, paths[:1]))
        elif call in TWO_PATH_CALLS:
            out.append((call, paths))
    return out


TRIGRAPHS = {"??=": "#", "??/": "\\", "??'": "^", "??(": "[", "??)": "]", "??!": "|", "??<": "{",
             "??>": "}", "??-": "~"}
# Pieces of the hostile names that must never reach the compiler as code.
CODE_MARKERS = ["evil", "touch", "injected", "passwd", "rm -rf", "LLLLLLLL", "escape", "unterminated",
                "trigraphs", "backslash", "line2"]


def code_outside_comments_and_literals(src):
    """The C text as the compiler's tokenizer sees it, minus comments and string/char literals:
    trigraphs replaced and backslash-newlines spliced first (translation phases 1-2, -std=c11)."""
    for k, v in TRIGRAPHS.items():
        src = src.replace(k, v)
    src = src.replace("\\\n", "")
    out, i, n = [], 0, len(src)
    while i < n:
        c = src[i]
        if src.startswith("/*", i):
            j = src.find("*/", i + 2)
            i = n if j < 0 else j + 2
            out.append(" ")
        elif src.startswith("//", i):
            j = src.find("\n", i)
            i = n if j < 0 else j
        elif c in "\"'":
            j = i + 1
            while j < n and src[j] != c and src[j] != "\n":
                j += 2 if src[j] == "\\" else 1
            i = j + 1
            out.append(c + c)
        else:
            out.append(c)
            i += 1
    return "".join(out)


def check_writes(res, name, trace, cwd, allowed_dirs, allowed_files):
    """Every written path must lie under an allowed folder or be an allowed file, or be the temp
    name bd_publish writes beside an allowed file and renames into place (FILE.bdc-tmp-XXXXXX)."""
    bad, seen = [], 0
    for call, paths in traced_writes(trace, cwd):
        for full in paths:
            seen += 1
            if full.startswith("/dev/"):
                continue
            if full in allowed_files or any(full == d or full.startswith(d + os.sep) for d in allowed_dirs):
                continue
            if any(re.fullmatch(re.escape(f) + r"\.bdc-tmp-[A-Za-z0-9]{6}", full) for f in allowed_files):
                continue
            bad.append("%s(%r)" % (call, full[:100]))
    # A trace that saw no writes at all would pass vacuously: the outputs must show up in it.
    res.case(name, not bad and seen > 0, "; ".join(bad[:5]) + (" ... %d in all" % len(bad) if len(bad) > 5 else "")
             if bad else "%d writes, all inside the allowed places" % seen)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bdc", default=os.environ.get("BDC") or os.path.join(REPO, "build", "bdc"))
    args = ap.parse_args()
    bdc = os.path.abspath(args.bdc)
    if not os.access(bdc, os.X_OK):
        sys.stderr.write("test_hostile_names: bdc not found at %s (set BDC or pass --bdc)\n" % bdc)
        return 1
    res = Results()
    have_strace = strace_available()
    res.case("strace-works", have_strace, "" if have_strace else "strace -f cannot trace here")

    sandbox = os.path.realpath(tempfile.mkdtemp(prefix="bdc-hostile-"))
    try:
        work, tmp, out = (os.path.join(sandbox, d) for d in ("work", "tmp", "out"))
        for d in (work, tmp, out):
            os.mkdir(d)
        data, reference = build_model()
        model = os.path.join(work, "model.onnx")
        with open(model, "wb") as f:
            f.write(data)
        x = np.random.default_rng(3).standard_normal((2, 3)).astype(np.float32)
        np.save(os.path.join(work, "in.npy"), x)
        env = dict(os.environ, TMPDIR=tmp)
        exe = os.path.join(out, "model")

        # LeakSanitizer cannot run under ptrace: traced runs of a sanitized bdc skip the leak
        # check, which the untraced --lib compile below still does.
        traced_env = dict(env)
        if have_strace and os.environ.get("BDC_SANITIZED") == "1":
            traced_env["ASAN_OPTIONS"] = os.environ.get("ASAN_OPTIONS", "") + ":detect_leaks=0"

        def traced(cmd, trace):
            full = (["strace", "-f", "-qq", "-y", "-s", "16384", "-o", trace,
                     "-e", "trace=%file,%process"] if have_strace else []) + cmd
            return subprocess.run(full, cwd=work, env=traced_env, capture_output=True, timeout=600)

        trace = os.path.join(sandbox, "compile.trace")
        emit = os.path.join(sandbox, "emit")
        r = traced([bdc, "compile", "model.onnx", "-o", exe, "--werror", "-q", "--emit-dir", emit], trace)
        if not res.case("compile-werror", r.returncode == 0,
                        "exit %d: %s" % (r.returncode, r.stderr.decode("latin-1")[-800:])):
            raise SystemExit
        res.case("compile-sanitizer-clean", not re.search(rb"runtime error:|Sanitizer", r.stderr),
                 r.stderr.decode("latin-1")[-300:])
        with open(os.path.join(emit, "model.c"), encoding="latin-1") as f:
            code = code_outside_comments_and_literals(f.read())
        leaks = [m for m in CODE_MARKERS if m in code]
        res.case("names-only-in-comments-and-literals", not leaks, "found in code: %r" % leaks)
        if have_strace:
            # The publish step writes a temp name beside the output, then renames it.
            check_writes(res, "compile-writes-only-temp-and-output", trace, work, [tmp, emit],
                         {exe} | {os.path.join(out, f) for f in os.listdir(out)})
        res.case("compile-temp-removed", os.listdir(tmp) == [], repr(os.listdir(tmp)))
        res.case("compile-output-only", sorted(os.listdir(out)) == ["model"], repr(os.listdir(out)))

        run_out = os.path.join(sandbox, "run-out")
        trace = os.path.join(sandbox, "run.trace")
        r = traced([exe, "in.npy", "--output-dir", run_out], trace)
        if res.case("run", r.returncode == 0, "exit %d: %s" % (r.returncode, r.stderr.decode("latin-1")[-500:])):
            files = sorted(os.listdir(run_out))
            res.case("run-one-file-per-output", len(files) == 6 and all(
                re.fullmatch(r"[A-Za-z0-9_.-]+\.npy", f) and not f.startswith(".") for f in files),
                repr([f[:40] for f in files]))
            # --info lists outputs in order with their file names: use it to pair them.
            info = subprocess.run([exe, "--info", "--json"], capture_output=True, timeout=60)
            import json
            meta = json.loads(info.stdout)
            expect = reference(x)
            got_files = [o["file"] for o in meta["outputs"]]
            ok, detail = True, ""
            for k, (fname, want) in enumerate(zip(got_files, expect)):
                got = np.load(os.path.join(run_out, fname))
                if got.shape != want.shape or not np.allclose(got, want, rtol=1e-5, atol=1e-6):
                    ok, detail = False, "output %d (%s): max abs err %g" % (
                        k, fname[:40], float(np.max(np.abs(got - want))) if got.shape == want.shape else -1)
            res.case("run-matches-numpy", ok and len(got_files) == 6, detail)
            if have_strace:
                check_writes(res, "run-writes-only-outputs", trace, work, [run_out], set())
        res.case("no-file-named-x", not any("x" in fs for _, _, fs in os.walk(sandbox)) and
                 not os.path.exists(os.path.join(REPO, "x")))

        lib = os.path.join(out, "libhostile.a")
        r = subprocess.run([bdc, "compile", "model.onnx", "-o", lib, "--lib", "--werror", "-q"],
                           cwd=work, env=env, capture_output=True, timeout=600)
        if res.case("lib-compile-werror", r.returncode == 0,
                    "exit %d: %s" % (r.returncode, r.stderr.decode("latin-1")[-500:])):
            src = os.path.join(sandbox, "use.c")
            with open(src, "w") as f:
                f.write('#include "libhostile.h"\nint main(void) { return 0; }\n')
            cc = os.environ.get("CC") or "cc"
            r = subprocess.run([cc, "-std=c11", "-Wall", "-Wextra", "-Wpedantic", "-Werror", "-Wtrigraphs",
                                "-fsyntax-only", "-I", out, src], capture_output=True, timeout=120)
            res.case("lib-header-werror", r.returncode == 0, r.stderr.decode("latin-1")[-500:])
        res.case("sandbox-contents", sorted(os.listdir(sandbox)) == sorted(
            ["work", "tmp", "out", "run-out", "use.c", "emit"] + (["compile.trace", "run.trace"] if have_strace else [])),
            repr(sorted(os.listdir(sandbox))))
    except SystemExit:
        pass
    finally:
        shutil.rmtree(sandbox, ignore_errors=True)
    print("%d passed, %d failed" % (res.passed, res.failed))
    return 0 if res.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
