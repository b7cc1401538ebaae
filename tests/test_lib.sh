#!/usr/bin/env bash
# `bdc compile --lib` as a user's build uses it: a CMake project calls bdc_add_model
# (cmake/BdcModel.cmake) on models/sample.onnx, links the library into a C program, runs it, and
# its output must match the stored reference output of the sample model; then the same project
# with the model built for --target opencl (run on the OpenCL device, PoCL in the tests).
set -u
bdc="$(realpath "${1:-${BDC:-build/bdc}}")"
cd "$(dirname "$0")/.."
src="$(pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
pass=0 fail=0
ok() { echo "ok    $1"; pass=$((pass + 1)); }
bad() { echo "FAIL  $1"; fail=$((fail + 1)); }

for target in cpu opencl; do
  build="$work/build-$target"
  if cmake -S tests/lib -B "$build" -DBDC_SOURCE_DIR="$src" -DBDC="$bdc" -DBDC_TARGET=$target >"$work/log" 2>&1 &&
     cmake --build "$build" >>"$work/log" 2>&1; then
    ok "$target: cmake project builds with bdc_add_model"
  else
    bad "$target: cmake project builds with bdc_add_model"; tail -20 "$work/log"
  fi
  [ -f "$build/bdc_sample/sample.h" ] && [ -f "$build/bdc_sample/sample.a" ] && ok "$target: header and archive generated" || bad "$target: header and archive generated"
  /usr/bin/python3 -c 'import numpy as np, sys; np.load(sys.argv[1]).astype("<f4").tofile(sys.argv[2])' \
    models/sample.input.npy "$work/input.raw"
  if out=$("$build/consumer" "$work/input.raw"); then
    ok "$target: consumer runs (two instances agree)"
    if /usr/bin/python3 - "$out" models/sample.output.npy <<'PY'
import sys, numpy as np
name, *vals = sys.argv[1].split()
ref = np.load(sys.argv[2]).reshape(-1)
got = np.array([float(v) for v in vals])
sys.exit(0 if name == "probs" and np.allclose(got, ref, rtol=1e-4, atol=1e-6) else 1)
PY
    then ok "$target: library output matches the reference"; else bad "$target: library output matches the reference: $out"; fi
  else
    bad "$target: consumer runs (exit $?)"
  fi
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
