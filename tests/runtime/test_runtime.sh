#!/usr/bin/env bash
# The runtime linked into generated executables, through the hand-written fake model
# (fake_model.c): inputs from .npy (1.0/2.0/3.0, big-endian) and .pb (raw_data and typed
# fields), named and positional; every class of bad input (exit 6, one line naming the input with
# expected vs actual); output files (values, sanitised names, collisions, all-or-nothing writes,
# unwritable folders -> exit 4 with nothing left behind); --info, --benchmark --json, --threads,
# usage errors; and every dtype round-tripped through every reader and the writer by the echo
# model (echo_model.c). Usage: test_runtime.sh PATH/TO/bdcrt_fake_model [PATH/TO/bdcrt_echo_model]
# (default: bdcrt_echo_model beside the fake model).
set -u
fake="${1:?usage: test_runtime.sh PATH/TO/bdcrt_fake_model [PATH/TO/bdcrt_echo_model]}"
case "$fake" in /*) ;; *) fake="$PWD/$fake" ;; esac
echo_model="${2:-$(dirname "$fake")/bdcrt_echo_model}"
case "$echo_model" in /*) ;; *) echo_model="$PWD/$echo_model" ;; esac
py=${BDC_PYTHON:-/usr/bin/python3}
pass=0 fail=0
work=$(mktemp -d)
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
cd "$work" || exit 1

ok() { echo "ok    $1"; pass=$((pass + 1)); }
bad() {
    echo "FAIL  $1"
    fail=$((fail + 1))
}

# check NAME WANT_EXIT REGEX COMMAND...: exit status and a regex over stdout+stderr.
check() {
    local name=$1 want=$2 regex=$3
    shift 3
    local out rc
    out=$("$@" 2>&1)
    rc=$?
    if [ "$rc" = "$want" ] && grep -qE -- "$regex" <<<"$out"; then
        ok "$name"
    else
        bad "$name: exit $rc (want $want), output:"
        head -5 <<<"$out" | sed 's/^/      /'
    fi
}

# bad_input NAME REGEX ARGS...: exit 6, exactly one line on stderr matching REGEX, nothing on
# stdout, and no output folder created.
bad_input() {
    local name=$1 regex=$2
    shift 2
    local rc
    rm -rf outbad
    timeout 20 "$fake" "$@" --output-dir outbad >stdout.txt 2>stderr.txt
    rc=$?
    if [ "$rc" = 6 ] && [ "$(wc -l <stderr.txt)" = 1 ] && grep -qE -- "$regex" stderr.txt &&
        [ ! -s stdout.txt ] && [ ! -e outbad ]; then
        ok "$name"
    else
        bad "$name: exit $rc (want 6), stderr lines $(wc -l <stderr.txt), outbad exists: \
$([ -e outbad ] && echo yes || echo no), stderr:"
        head -5 stderr.txt | sed 's/^/      /'
    fi
}

# pycheck NAME PYTHON-CODE [ARGS...]: the python snippet must exit 0.
pycheck() {
    local name=$1 code=$2
    shift 2
    local out
    if out=$("$py" -c "$code" "$@" 2>&1); then
        ok "$name"
    else
        bad "$name:"
        tail -5 <<<"$out" | sed 's/^/      /'
    fi
}

# ---- test data ----
"$py" - <<'EOF' || { echo "FAIL  setup: cannot generate test data (numpy/onnx missing?)"; echo "0 passed, 1 failed"; exit 1; }
import numpy as np, onnx, struct
from onnx import numpy_helper, helper, TensorProto
x = np.array([[1.5, -2.0, 3.25], [0.0, 1e-3, -7.0]], dtype=np.float32)
idx = np.array([1, -2, 300, 0], dtype=np.int64)
np.save("x.npy", x); np.save("idx.npy", idx)
def pb(path, t): open(path, "wb").write(t.SerializeToString())
pb("x.pb", numpy_helper.from_array(x, "x")); pb("idx.pb", numpy_helper.from_array(idx, "idx"))
pb("x_typed.pb", helper.make_tensor("x", TensorProto.FLOAT, [2, 3], x.flatten().tolist()))
pb("idx_typed.pb", helper.make_tensor("idx", TensorProto.INT64, [4], idx.tolist()))
# unpacked repeated fields (proto2 style): dims and int64_data one tag each
def varint(v):
    v &= (1 << 64) - 1; out = b""
    while True:
        b = v & 0x7f; v >>= 7
        if v: out += bytes([b | 0x80])
        else: return out + bytes([b])
raw = b"".join(varint(1 << 3 | 0) + varint(4) for _ in [0]) + varint(2 << 3) + varint(7)
raw += b"".join(varint(7 << 3) + varint(int(v)) for v in idx)
open("idx_unpacked.pb", "wb").write(raw)
xs = x.copy(); xs[0, 0] = np.nan; xs[0, 1] = np.inf; xs[1, 2] = -np.inf
np.save("x_nan.npy", xs)
for v in [(2, 0), (3, 0)]:
    with open("x_v%d.npy" % v[0], "wb") as f: np.lib.format.write_array(f, x, version=v)
np.save("x_be.npy", x.astype(">f4")); np.save("idx_be.npy", idx.astype(">i8"))
# bad inputs
np.save("x_f64.npy", x.astype(np.float64))
np.save("x_t.npy", np.ascontiguousarray(x.T))
np.save("x_scalar.npy", np.float32(1.0))
np.save("x_flat.npy", x.flatten())
np.save("idx_1x4.npy", idx.reshape(1, 4))
np.save("x_fortran.npy", np.asfortranarray(x))
good = open("x.npy", "rb").read()
open("x_trunc.npy", "wb").write(good[:-4])
open("x_trail.npy", "wb").write(good + b"\0\0\0\0")
open("x_hdronly.npy", "wb").write(good[:20])
hdr = b"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"
def npy(path, h, data=x.tobytes(), ver=(1, 0)):
    h = h + b" " * ((64 - (10 + len(h) + 1) % 64) % 64) + b"\n"
    lenb = struct.pack("<H", len(h)) if ver[0] == 1 else struct.pack("<I", len(h))
    open(path, "wb").write(b"\x93NUMPY" + bytes(ver) + lenb + h + data)
npy("x_garbage.npy", b"{'descr': <f4', 'fortran_order': Fals, 'shape': (2, 3 }")
npy("x_nodict.npy", b"this is not a dict at all")
npy("x_extrakey.npy", hdr[:-1] + b"'extra': 1, }")
npy("x_negdim.npy", b"{'descr': '<f4', 'fortran_order': False, 'shape': (-2, 3), }")
npy("x_bigdim.npy", b"{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999999, 3), }")
npy("x_struct.npy", b"{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2, 3), }")
npy("x_complex.npy", b"{'descr': '<c8', 'fortran_order': False, 'shape': (2, 3), }")
npy("x_v9.npy", hdr, ver=(9, 0))
open("x_hugehdr.npy", "wb").write(b"\x93NUMPY\x02\x00\xff\xff\xff\xff{'descr'")
open("x_random.npy", "wb").write(bytes(range(256)) * 3)
open("x_random.pb", "wb").write(bytes(range(256)) * 3)
open("x_empty.npy", "wb").write(b""); open("x_empty.pb", "wb").write(b"")
t = numpy_helper.from_array(x, "x"); t.raw_data = x.tobytes()[:20]; pb("x_short.pb", t)
pb("x_int64.pb", numpy_helper.from_array(x.astype(np.int64), "x"))
pb("x_dims.pb", numpy_helper.from_array(x.reshape(3, 2), "x"))
t = onnx.TensorProto(); t.dims.extend([2, 3]); t.data_type = TensorProto.FLOAT; t.float_data.extend([1.0] * 5)
pb("x_count.pb", t)
t = onnx.TensorProto(); t.dims.extend([2, 3]); t.data_type = TensorProto.FLOAT; t.int64_data.extend(range(6))
pb("x_wrongfield.pb", t)
open("x_garbage.pb", "wb").write(b"\x0a\xff\xff\xff\xff\x0f garbage")
# packed dims + packed float_data, written by hand (onnx itself writes dims unpacked)
dims = varint(2) + varint(3)
open("x_packed.pb", "wb").write(varint(1 << 3 | 2) + varint(len(dims)) + dims + varint(2 << 3) + varint(1)
    + varint(4 << 3 | 2) + varint(24) + x.tobytes() + varint(8 << 3 | 2) + varint(1) + b"x")
EOF

mkdir adir
mkfifo afifo

expect_outputs() { # DIR [x.npy-source] : compares every output file with numpy
    "$py" - "$@" <<'EOF'
import sys, os, numpy as np
d = sys.argv[1]; xsrc = sys.argv[2] if len(sys.argv) > 2 else "x.npy"
x = np.load(xsrc).astype(np.float32); idx = np.load("idx.npy")
P = "encoder/layer.11/attention/self attention/output projection/with spaces and slashes/"
L1 = P + "dense (bias) & gelu: #1 dense (bias) & gelu: #1 dense (bias) & gel"
L2 = P + "dense (bias) & gelu: #2 dense (bias) & gelu: #2 dense (bias) & gel"
def fnv(b):
    h = 2166136261
    for c in b: h = ((h ^ c) * 16777619) & 0xffffffff
    return h
def files(names):
    out, taken = [], set()
    for n in names:
        b = n.encode()
        s = "".join(chr(c) if chr(c).isascii() and (chr(c).isalnum() or chr(c) in "_.-") else "_" for c in b[:100]) or "_"
        if s[0] in ".-": s = "_" + s[1:]
        if len(b) > 100: s += "-%08x" % fnv(b)
        k, cand = 1, s
        while cand.lower() in taken: k += 1; cand = "%s_%d" % (s, k)
        taken.add(cand.lower()); out.append(cand + ".npy")
    return out
k = np.arange(1024)
exp = [("y", 2 * x), ("pos", idx > 0), ("idx_sum", np.array(idx.sum(), dtype=np.int64)),
       (L1, x.astype(np.float64) + 0.5), ("a/b", idx.astype(np.int32)),
       ("a b", (idx & 255).astype(np.uint8)),
       ("big", (x.flatten()[k % 6] + k.astype(np.float32)).reshape(32, 32).astype(np.float32)),
       ("../up", np.array([1, -1], np.int8)), ("A/B", np.array([1.0, -2.0], np.float16)),
       (L2, np.array([7, 65535], np.uint16))]
names = files([n for n, _ in exp])
assert sorted(os.listdir(d)) == sorted(names), (sorted(os.listdir(d)), sorted(names))
for (n, want), f in zip(exp, names):
    raw = open(os.path.join(d, f), "rb").read()
    assert raw[:8] == b"\x93NUMPY\x01\x00", f
    hl = int.from_bytes(raw[8:10], "little")
    assert (10 + hl) % 64 == 0 and raw[10 + hl - 1:10 + hl] == b"\n", (f, hl)
    got = np.load(os.path.join(d, f))
    assert got.dtype == want.dtype and got.shape == want.shape, (f, got.dtype, got.shape, want.dtype, want.shape)
    assert np.array_equal(got, want, equal_nan=got.dtype.kind == "f"), (f, got, want)
EOF
}

# run_ok NAME DIR X-SOURCE ARGS...: exit 0, nothing printed (but the benchmark), outputs in DIR
# correct.
run_ok() {
    local name=$1 dir=$2 xsrc=$3 rc out
    shift 3
    rm -rf "$dir"
    out=$("$fake" --output-dir "$dir" "$@" 2>&1)
    rc=$?
    if [ "$rc" != 0 ] || { [ -n "$out" ] && ! grep -q "^benchmark 'fake'" <<<"$out"; }; then
        bad "$name: exit $rc, output:"
        head -5 <<<"$out" | sed 's/^/      /'
    elif out=$(expect_outputs "$dir" "$xsrc" 2>&1); then
        ok "$name"
    else
        bad "$name: wrong outputs:"
        tail -3 <<<"$out" | sed 's/^/      /'
    fi
}

# ---- good inputs ----
run_ok named-npy out1 x.npy --input x=x.npy --input idx=idx.npy
run_ok named-eq-form out1 x.npy --input=idx=idx.npy --input=x=x.npy
run_ok positional-npy out1 x.npy x.npy idx.npy
run_ok mixed-named-then-positional out1 x.npy --input idx=idx.npy x.npy
run_ok mixed-positional-then-named out1 x.npy x.npy --input idx=idx.npy
run_ok pb-raw-data out1 x.npy x.pb idx.pb
run_ok pb-typed-fields out1 x.npy x_typed.pb idx_typed.pb
run_ok pb-unpacked-fields out1 x.npy x.npy idx_unpacked.pb
run_ok pb-packed-fields out1 x.npy x_packed.pb idx.npy
run_ok npy-and-pb out1 x.npy --input x=x.pb --input idx=idx.npy
run_ok npy-v2 out1 x.npy x_v2.npy idx.npy
run_ok npy-v3 out1 x.npy x_v3.npy idx.npy
run_ok npy-big-endian out1 x.npy x_be.npy idx_be.npy
run_ok nan-inf-are-data out1 x_nan.npy x_nan.npy idx.npy
run_ok nested-output-dir out2/sub/dir x.npy x.npy idx.npy
run_ok double-dash out1 x.npy -- x.npy idx.npy
mkdir -p out3 && echo old >out3/y.npy && ln -s /nonexistent/target out3/big.npy
run_ok overwrites-existing-files out3 x.npy x.npy idx.npy
for t in 1 2 3 8; do
    check "threads-$t" 0 "^fake: threads=$t\$" env BDRT_FAKE_VERBOSE=1 "$fake" --threads "$t" x.npy idx.npy
    run_ok "threads-$t-outputs" out1 x.npy --threads "$t" x.npy idx.npy
done
ncpu=$("$py" -c 'import os; print(len(os.sched_getaffinity(0)))')
check threads-default 0 "^fake: threads=$ncpu\$" env BDRT_FAKE_VERBOSE=1 "$fake" x.npy idx.npy
check threads-zero-is-default 0 "^fake: threads=$ncpu\$" env BDRT_FAKE_VERBOSE=1 "$fake" --threads 0 x.npy idx.npy
check threads-no-spin 0 "^y: float32" env BDRT_SPIN_US=0 "$fake" --threads 2 x.npy idx.npy
check summary 0 '^y: float32\[2,3\] = \[3, -4, 6.5, 0, 0.002, -14\]$' "$fake" x.npy idx.npy
check summary-scalar 0 '^idx_sum: int64\[\] = 299$' "$fake" x.npy idx.npy
check summary-bool 0 '^pos: bool\[4\] = \[true, false, true, false\]$' "$fake" x.npy idx.npy
check summary-long 0 '^big: float32\[32,32\] = \[1.5, -1, 5.25, 3, 4.001, -2, 7.5, 5, ...\] \(1024 values\)$' "$fake" x.npy idx.npy
check summary-half 0 '^A/B: float16\[2\] = \[1, -2\]$' "$fake" x.npy idx.npy
check summary-nan 0 '^y: float32\[2,3\] = \[nan, inf, 6.5, 0, 0.002, -inf\]$' "$fake" x_nan.npy idx.npy
check summary-escapes-names 0 "^encoder/layer.11/attention/self attention/output projection/with spaces and slashes/dense \(bias\) & gelu: #1 dense \(bias\)\.\.\.: float64" "$fake" x.npy idx.npy
if [ -w /dev/full ]; then
    check stdout-write-failure 4 "cannot write standard output" sh -c '"$0" x.npy idx.npy >/dev/full' "$fake"
else
    echo "skip  stdout-write-failure (no writable /dev/full)"
fi

# ---- bad inputs: exit 6, one line naming the input, expected vs actual ----
bad_input wrong-dtype-npy "input 'x' from 'x_f64.npy': dtype mismatch: expected float32 \('<f4'\), got float64 \('<f8'\)" x_f64.npy idx.npy
bad_input wrong-dtype-complex "input 'x' .*expected float32 .*got unsupported '<c8'" x_complex.npy idx.npy
bad_input structured-dtype "input 'x' .*dtype mismatch: expected float32 .*got unsupported '\[\.\.\.\]'" x_struct.npy idx.npy
bad_input wrong-shape "input 'x' from 'x_t.npy': shape mismatch: expected \[2,3\], got \[3,2\]$" x_t.npy idx.npy
bad_input wrong-rank "input 'x' .*shape mismatch: expected \[2,3\], got \[6\]$" x_flat.npy idx.npy
bad_input scalar-vs-tensor "input 'x' .*shape mismatch: expected \[2,3\], got \[\] \(a scalar\)" x_scalar.npy idx.npy
bad_input extra-unit-dim "input 'idx' .*shape mismatch: expected \[4\], got \[1,4\]" x.npy idx_1x4.npy
bad_input truncated-npy "input 'x' .*truncated .npy data: expected 24 bytes, got 20" x_trunc.npy idx.npy
bad_input trailing-bytes "input 'x' .*byte size mismatch: expected 24 data bytes, got 28 \(4 trailing\)" x_trail.npy idx.npy
bad_input truncated-header "input 'x' .*truncated .npy header" x_hdronly.npy idx.npy
bad_input garbage-header "input 'x' .*malformed .npy header" x_garbage.npy idx.npy
bad_input not-a-dict "input 'x' .*malformed .npy header: not a dict" x_nodict.npy idx.npy
bad_input extra-key "input 'x' .*malformed .npy header: unexpected key 'extra'" x_extrakey.npy idx.npy
bad_input negative-dim "input 'x' .*negative dimension" x_negdim.npy idx.npy
bad_input huge-dim "input 'x' .*dimension too large" x_bigdim.npy idx.npy
bad_input huge-header-length "input 'x' .*header length 4294967295 over the limit" x_hugehdr.npy idx.npy
bad_input npy-version "input 'x' .*unsupported .npy format version 9.0" x_v9.npy idx.npy
bad_input fortran-order "input 'x' .*fortran_order True is not supported" x_fortran.npy idx.npy
bad_input random-bytes "input 'x' from 'x_random.npy': not a .npy file \(bad magic\)" x_random.npy idx.npy
bad_input empty-file "input 'x' from 'x_empty.npy': not a .npy file \(empty file\)" x_empty.npy idx.npy
bad_input random-bytes-pb "input 'x' from 'x_random.pb': malformed TensorProto" x_random.pb idx.npy
bad_input empty-pb "input 'x' from 'x_empty.pb': dtype mismatch: expected float32, got no data_type" x_empty.pb idx.npy
bad_input pb-byte-size "input 'x' .*byte size mismatch: expected 24 bytes of raw_data for 6 elements, got 20" x_short.pb idx.npy
bad_input pb-dtype "input 'x' from 'x_int64.pb': dtype mismatch: expected float32, got int64" x_int64.pb idx.npy
bad_input pb-shape "input 'x' .*shape mismatch: expected \[2,3\], got \[3,2\]" x_dims.pb idx.npy
bad_input pb-count "input 'x' .*element count mismatch: expected 6 values in float_data, got 5" x_count.pb idx.npy
bad_input pb-wrong-field "input 'x' .*stores its values in float_data, found int64_data" x_wrongfield.pb idx.npy
bad_input pb-garbage "input 'x' .*malformed TensorProto" x_garbage.pb idx.npy
bad_input missing-file "input 'x' from 'no/such.npy': cannot open: No such file or directory" no/such.npy idx.npy
bad_input directory "input 'idx' from 'adir': not a regular file \(a directory\)" x.npy adir
start=$(date +%s)
bad_input fifo "input 'x' from 'afifo': not a regular file \(a FIFO\)" afifo idx.npy
[ $(($(date +%s) - start)) -lt 10 ] && ok fifo-does-not-block || bad fifo-does-not-block
bad_input dev-null "input 'x' from '/dev/null': not a regular file \(a character device\)" /dev/null idx.npy
# several bad inputs: one line each
rm -rf outbad
"$fake" x_t.npy adir --output-dir outbad >/dev/null 2>stderr.txt
rc=$?
if [ $rc = 6 ] && [ "$(wc -l <stderr.txt)" = 2 ] && grep -q "input 'x'" stderr.txt &&
    grep -q "input 'idx'" stderr.txt && [ ! -e outbad ]; then
    ok every-bad-input-reported
else
    bad "every-bad-input-reported: exit $rc, $(wc -l <stderr.txt) lines"
fi
# the model itself rejecting its data (run returns 6), or failing (other codes -> 4)
rm -rf outrun
check model-rejects-data 6 "fake: index out of range" env BDRT_FAKE_FAIL=6 "$fake" x.npy idx.npy --output-dir outrun
[ ! -e outrun ] && ok model-rejects-data-no-folder || bad model-rejects-data-no-folder
check model-fails 4 "running the model 'fake' failed \(code 3\)" env BDRT_FAKE_FAIL=3 "$fake" x.npy idx.npy --output-dir outrun
check model-fails-benchmark 4 "failed \(code 3\)" env BDRT_FAKE_FAIL=3 "$fake" x.npy idx.npy --benchmark 3

# ---- output folder failures: exit 4, nothing written ----
echo data >afile
check outdir-is-file 4 "cannot open output folder 'afile': Not a directory" "$fake" x.npy idx.npy --output-dir afile
[ "$(cat afile)" = data ] && ok outdir-is-file-untouched || bad outdir-is-file-untouched
check outdir-under-file 4 "cannot create output folder 'afile/sub': Not a directory" "$fake" x.npy idx.npy --output-dir afile/sub
if [ "$(id -u)" != 0 ]; then
    mkdir ro && chmod 555 ro
    check outdir-read-only 4 "cannot write in output folder 'ro'" "$fake" x.npy idx.npy --output-dir ro
    [ -z "$(ls -A ro)" ] && ok outdir-read-only-empty || bad outdir-read-only-empty
    check outdir-read-only-parent 4 "cannot create output folder 'ro/sub'" "$fake" x.npy idx.npy --output-dir ro/sub
else
    echo "skip  outdir-read-only (running as root: permissions do not apply; covered by the file-size limit test)"
fi
# A write failure in the middle (file size limit: big.npy is 4 KiB, the others are smaller).
mkdir -p full && rm -f full/*
out=$(bash -c 'trap "" XFSZ; ulimit -f 2; exec "$0" x.npy idx.npy --output-dir full' "$fake" 2>&1)
rc=$?
if [ $rc = 4 ] && grep -q "cannot write output 'big' to 'full/big.npy': File too large" <<<"$out" &&
    [ -z "$(ls -A full)" ]; then
    ok write-failure-leaves-nothing
else
    bad "write-failure-leaves-nothing: exit $rc, left: $(ls -A full | tr '\n' ' ') output: $out"
fi
mkdir -p blocked/pos.npy
check folder-in-the-way 4 "cannot write output 'pos': 'blocked/pos.npy' is a folder" "$fake" x.npy idx.npy --output-dir blocked
[ "$(ls -A blocked)" = pos.npy ] && ok folder-in-the-way-leaves-nothing || bad "folder-in-the-way-leaves-nothing: $(ls -A blocked | tr '\n' ' ')"

# ---- usage errors: exit 1 ----
check no-inputs 1 "input 'x' \(float32\[2,3\]\) not given" "$fake"
check missing-one-input 1 "input 'idx' \(int64\[4\]\) not given" "$fake" x.npy
check too-many-paths 1 "too many input paths: the model has 2 inputs" "$fake" x.npy idx.npy idx.npy
check given-twice 1 "input 'x' given twice" "$fake" --input x=x.npy --input x=x.npy idx.npy
check unknown-input 1 "unknown input 'z' \(the model's inputs: 'x', 'idx'\)" "$fake" --input z=x.npy idx.npy
check input-without-eq 1 "--input expects NAME=PATH" "$fake" --input x.npy idx.npy
check input-without-value 1 "--input needs NAME=PATH" "$fake" x.npy idx.npy --input
check unknown-option 1 "unknown option '--bogus'" "$fake" --bogus x.npy idx.npy
check bench-zero 1 "--benchmark needs a run count" "$fake" x.npy idx.npy --benchmark 0
check bench-garbage 1 "--benchmark needs a run count" "$fake" x.npy idx.npy --benchmark 5x
check threads-negative 1 "--threads needs a count" "$fake" x.npy idx.npy --threads -1
check threads-huge 1 "--threads needs a count" "$fake" x.npy idx.npy --threads 100000
check warmup-alone 1 "--warmup needs --benchmark" "$fake" x.npy idx.npy --warmup 3
check json-alone 1 "--json needs --benchmark or --info" "$fake" x.npy idx.npy --json
check outdir-twice 1 "--output-dir given twice" "$fake" x.npy idx.npy --output-dir a --output-dir b
check outdir-empty 1 "--output-dir needs a folder" "$fake" x.npy idx.npy --output-dir=

# ---- help, version, info ----
check help 0 "^usage: [^ ]+ \[--input NAME=PATH\]" "$fake" --help
check help-lists-inputs 0 "'idx' int64\[4\]" "$fake" --help
check help-exit-codes 0 "6 bad input" "$fake" --help
check version 0 "model 'fake', bdc runtime [0-9]+\.[0-9]+\.[0-9]+" "$fake" --version
check info-inputs 0 "1  'idx'  int64\[4\]" "$fake" --info
check info-map 0 "'a b'  uint8\[4\]  -> a_b_2.npy" "$fake" --info
check info-map-case 0 "'A/B'  float16\[2\]  -> A_B_3.npy" "$fake" --info
check info-map-dotdot 0 "'../up'  int8\[2\]  -> _._up.npy" "$fake" --info
check info-map-hash 0 "-> encoder_layer.11_attention_self_attention_output_projection_with_spaces_and_slashes_dense__bias____g-[0-9a-f]{8}\.npy" "$fake" --info
"$fake" --info --json >info.json 2>&1
pycheck info-json '
import json, sys
d = json.load(open("info.json"))
assert d["model"] == "fake"
assert [(i["name"], i["dtype"], i["shape"]) for i in d["inputs"]] == [("x", "float32", [2, 3]), ("idx", "int64", [4])]
assert len(d["outputs"]) == 10 and d["outputs"][2]["shape"] == [] and d["outputs"][5]["file"] == "a_b_2.npy"
files = [o["file"] for o in d["outputs"]]
assert len(set(f.lower() for f in files)) == len(files)
assert all(len(f) <= 124 and f.endswith(".npy") and f[0] not in ".-" for f in files)
'

# ---- benchmark ----
"$fake" x.npy idx.npy --benchmark 7 --json >bench.json 2>bench.err
rc=$?
pycheck benchmark-json '
import json, sys
assert sys.argv[1] == "0", "exit " + sys.argv[1]
d = json.load(open("bench.json"))
for k in ["model", "runs", "warmup", "threads", "min_ms", "median_ms", "p90_ms", "p99_ms", "mean_ms", "max_ms"]:
    assert k in d, k
assert d["runs"] == 7 and d["warmup"] == 7 and d["model"] == "fake"
assert 0 <= d["min_ms"] <= d["median_ms"] <= d["p90_ms"] <= d["p99_ms"] <= d["max_ms"]
assert d["min_ms"] <= d["mean_ms"] <= d["max_ms"]
assert open("bench.err").read() == ""
' "$rc"
"$fake" x.npy idx.npy --benchmark 50 --warmup 2 --threads 2 --json >bench.json 2>bench.err
pycheck benchmark-json-warmup-threads '
import json
d = json.load(open("bench.json"))
assert d["runs"] == 50 and d["warmup"] == 2 and d["threads"] == 2, d
'
check benchmark-text 0 "latency ms +min +median +p90 +p99 +mean +max" "$fake" x.npy idx.npy --benchmark 20
check benchmark-text-header 0 "benchmark 'fake': 20 runs after 10 warm-up runs" "$fake" x.npy idx.npy --benchmark 20
run_ok benchmark-writes-outputs out1 x.npy x.npy idx.npy --benchmark 3
check benchmark-bad-input 6 "input 'x' .*shape mismatch" "$fake" x_t.npy idx.npy --benchmark 3

# ---- every dtype through every reader and the writer (echo model: out = in) ----
if [ -x "$echo_model" ]; then
    "$py" - "$echo_model" >roundtrip.txt 2>&1 <<'EOF'
import sys, os, subprocess, numpy as np
from onnx import numpy_helper, helper
echo = sys.argv[1]
codes = {np.float32: 1, np.uint8: 2, np.int8: 3, np.uint16: 4, np.int16: 5, np.int32: 6,
         np.int64: 7, np.bool_: 9, np.float16: 10, np.float64: 11, np.uint32: 12, np.uint64: 13}
def values(dt, n):
    if dt == np.bool_: return (np.arange(n) % 3 == 0)
    if np.dtype(dt).kind == "f":
        v = np.array([0.0, -0.0, 1.5, -2.25, np.inf, -np.inf, np.nan, 65504.0], dtype=dt)
    else:
        info = np.iinfo(dt)
        v = np.array([0, 1, info.max, info.min, info.max - 1, 7, info.min + 1, 2], dtype=dt)
    return np.resize(v, n)
def forms(a):
    yield "npy", lambda p: np.save(p, a)
    if a.dtype.itemsize > 1:
        yield "npy-be", lambda p: np.save(p, a.astype(a.dtype.newbyteorder(">")))
    yield "pb-raw", lambda p: open(p, "wb").write(numpy_helper.from_array(a, "in").SerializeToString())
    if a.size:
        t = helper.make_tensor("in", codes[a.dtype.type], a.shape, a.flatten().tolist())
        yield "pb-typed", lambda p: open(p, "wb").write(t.SerializeToString())
for dt in codes:
    for shape in [(), (2, 3), (0, 3), (1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2)]:
        a = values(dt, int(np.prod(shape))).astype(dt).reshape(shape)
        for form, write in forms(a):
            name = "roundtrip-%s-%s-%s" % (np.dtype(dt).name, "x".join(map(str, shape)) or "scalar", form)
            path = "rt-in" + (".npy" if form.startswith("npy") else ".pb")
            write(path)
            env = dict(os.environ, BDRT_ECHO_DTYPE=str(codes[dt]),
                       BDRT_ECHO_SHAPE=",".join(map(str, shape)))
            r = subprocess.run([echo, path, "--output-dir", "rt-out"], env=env,
                               capture_output=True, text=True)
            try:
                assert r.returncode == 0, "exit %d: %s" % (r.returncode, r.stderr.strip())
                b = np.load("rt-out/out.npy")
                assert b.dtype == a.dtype and b.shape == a.shape, (b.dtype, b.shape)
                assert b.tobytes() == a.tobytes(), (a, b)
                print("ok    " + name)
            except Exception as e:
                print("FAIL  %s: %s" % (name, e))
EOF
    n_ok=$(grep -c "^ok" roundtrip.txt)
    n_bad=$(grep -c "^FAIL" roundtrip.txt)
    pass=$((pass + n_ok))
    fail=$((fail + n_bad))
    grep -v "^ok" roundtrip.txt
    [ "$n_ok" -gt 0 ] && ok "roundtrip: $n_ok cases" || bad "roundtrip: no case ran"
    # a bool stored as 2 comes back as 1 (generated code may read bools as C _Bool)
    "$py" -c 'import numpy as np; np.save("bool2.npy", np.array([0, 1, 2, 255], np.uint8).view(np.bool_))'
    rm -rf rt-out
    BDRT_ECHO_DTYPE=9 BDRT_ECHO_SHAPE=4 "$echo_model" bool2.npy --output-dir rt-out >/dev/null 2>&1
    pycheck bool-normalised 'import numpy as np; assert np.load("rt-out/out.npy").view(np.uint8).tolist() == [0, 1, 1, 1]'
else
    bad "roundtrip: echo model '$echo_model' not found"
fi

# ---- nothing left behind anywhere ----
leftover=$(find . -name '.*.tmp-*' -o -name '.bdrt-probe-*')
[ -z "$leftover" ] && ok no-temp-files-left || bad "no-temp-files-left: $leftover"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
