#!/usr/bin/env bash
# `bdc compile --lib` as a user's build uses it: a CMake project calls bdc_add_model
# (cmake/BdcModel.cmake) on models/sample.onnx, links the library into a C program, runs it, and
# its output must match the stored reference output of the sample model; then the same project
# with the model built for --target opencl (run on the OpenCL device, PoCL in the tests); and a
# library compiled for a batch range, its batch set at run time.
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
# A batch range in a library: --lib --dim batch=1..4 on x[batch,4] -> Relu; the program sets
# batch 2 (a batch outside the range is refused with 6) and checks the first two rows.
/usr/bin/python3 - "$work/ranged.onnx" <<'PY'
import sys, onnx
from onnx import TensorProto, helper
g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "ranged",
                      [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
m.ir_version = 8
onnx.save(m, sys.argv[1])
PY
cat >"$work/ranged_main.c" <<'C'
#include <stdio.h>
#include "ranged.h"
int main(void) {
    float x[ranged_BATCH_MAX * 4], y[ranged_BATCH_MAX * 4];
    for (int i = 0; i < ranged_BATCH_MAX * 4; i++) x[i] = (float)(i % 3) - 1.0f, y[i] = 42.0f;
    void *m = ranged_create(1);
    const void *in[] = {x};
    void *out[] = {y};
    if (!m || ranged_set_batch(m, ranged_BATCH_MAX + 1) != 6 || ranged_set_batch(m, 2) != 0 ||
        ranged_run(m, in, out))
        return 1;
    for (int i = 0; i < 8; i++)
        if (y[i] != (x[i] > 0 ? x[i] : 0.0f)) return 2;
    ranged_destroy(m);
    printf("%d..%d %g\n", ranged_BATCH_MIN, ranged_BATCH_MAX, (double)y[5]);
    return 0;
}
C
if "$bdc" compile "$work/ranged.onnx" -o "$work/ranged.a" --lib --dim batch=1..4 -q >"$work/log" 2>&1 &&
   cc -std=c11 -Wall -Wextra -Werror -I"$work" "$work/ranged_main.c" "$work/ranged.a" -lpthread -lm \
      -o "$work/ranged" >>"$work/log" 2>&1 && out=$("$work/ranged") && [ "$out" = "1..4 1" ]; then
  ok "cpu: --lib --dim batch=1..4 runs batch 2 ($out)"
else
  bad "cpu: --lib --dim batch=1..4 runs batch 2: $(tail -5 "$work/log") ${out:-}"
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
