#!/usr/bin/env bash
# The bdc command line: help and version, usage errors (exit 1), `inspect` on the bundled sample
# model in both output forms, inspect's listing of symbolic input dims (unbound, then bound by
# --dim and by --shape), `analyze` in its three forms, and an executable's --profile trace.
set -u
bdc="${1:-${BDC:-build/bdc}}"
cd "$(dirname "$0")/.."
pass=0 fail=0

check() { # name expected_exit regex command...
  local name=$1 want=$2 regex=$3
  shift 3
  local out rc
  out=$("$@" 2>&1)
  rc=$?
  if [ "$rc" = "$want" ] && grep -qE -- "$regex" <<<"$out"; then
    echo "ok    $name"
    pass=$((pass + 1))
  else
    echo "FAIL  $name: exit $rc (want $want), output:"
    head -5 <<<"$out" | sed 's/^/      /'
    fail=$((fail + 1))
  fi
}

check help 0 "inspect MODEL.onnx" "$bdc" --help
check help-limits 0 "--max-activations SIZE" "$bdc" --help
check help-shape 0 "--shape NAME=DxDx" "$bdc" --help
check help-dim 0 "--dim SYMBOL=N" "$bdc" --help
check help-const 0 "--const NAME=FILE" "$bdc" --help
check inspect-dim-no-value 1 "inspect: --dim needs a value" "$bdc" inspect models/sample.onnx --dim
check compile-const-no-value 1 "compile: --const needs a value" "$bdc" compile models/sample.onnx --const
check version 0 "^bdc [0-9]+\.[0-9]+\.[0-9]+" "$bdc" --version
check no-args 1 "usage: bdc" "$bdc"
check unknown-command 1 "unknown command 'frobnicate'" "$bdc" frobnicate
check inspect-no-model 1 "no model given" "$bdc" inspect
check inspect-bad-option 1 "unknown option '--bogus'" "$bdc" inspect models/sample.onnx --bogus
check inspect-missing-file 4 "cannot open 'no/such.onnx'" "$bdc" inspect no/such.onnx
check inspect-directory 4 "not a regular file" "$bdc" inspect models
check inspect-text 0 "unsupported  none" "$bdc" inspect models/sample.onnx
check inspect-json 0 '"all_shapes_static":[[:space:]]*true' "$bdc" inspect --json models/sample.onnx
json=$("$bdc" inspect --json models/sample.onnx 2>/dev/null)
if /usr/bin/python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["outputs"][0]["shape"]' <<<"$json"; then
  echo "ok    inspect-json-parses"
  pass=$((pass + 1))
else
  echo "FAIL  inspect-json-parses"
  fail=$((fail + 1))
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
/usr/bin/python3 - "$tmp/sym.onnx" <<'EOF'
import sys
import onnx
from onnx import TensorProto, helper
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", 4])
m = helper.make_tensor_value_info("m", TensorProto.FLOAT, ["batch", 1, 4])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
g = helper.make_graph([helper.make_node("Add", ["x", "m"], ["y"], name="add")], "sym", [x, m], [y])
model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
model.ir_version = 8
onnx.save(model, sys.argv[1])
EOF
check inspect-symbols-unbound 3 "batch +unbound \(x dim 0, m dim 0\)" "$bdc" inspect "$tmp/sym.onnx"
check inspect-symbols-hint 3 \
  "input 'x' dim 0 is symbolic \('batch'\): pin it with --dim batch=N or --shape x=NxNx4" \
  "$bdc" inspect "$tmp/sym.onnx"
check inspect-symbols-bound 0 "batch += 2 \(x dim 0, m dim 0\)" \
  "$bdc" inspect "$tmp/sym.onnx" --dim batch=2 --dim seq=7
check inspect-shape-binds-others 0 "m +float32 +\[3,1,4\]" \
  "$bdc" inspect "$tmp/sym.onnx" --shape x=3x5x4
# Mod of constants folds (a Reshape or Pad fed by it stays static): fmod 0 takes the divisor's
# sign, fmod 1 the dividend's (-7 mod 3 = 2 or -1, 5 mod -3 = -1 or 2)
/usr/bin/python3 - "$tmp/mod.onnx" <<'EOF'
import sys
import onnx
from onnx import TensorProto, helper
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 6])
outs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("y0", "y1")]
inits = [helper.make_tensor("a", TensorProto.INT64, [2], [-7, 5]),
         helper.make_tensor("b", TensorProto.INT64, [2], [3, -3])]
nodes = [helper.make_node("Mod", ["a", "b"], ["s0"], fmod=0),
         helper.make_node("Mod", ["a", "b"], ["s1"], fmod=1),
         helper.make_node("Reshape", ["x", "s0"], ["y0"]),
         helper.make_node("Reshape", ["x", "s1"], ["y1"])]
g = helper.make_graph(nodes, "mod", [x], outs, inits)
model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
model.ir_version = 8
onnx.save(model, sys.argv[1])
EOF
check inspect-mod-folds-python-sign 0 "y0 +float32 +\[2,3\]" "$bdc" inspect "$tmp/mod.onnx"
check inspect-mod-folds-c-sign 0 "y1 +float32 +\[3,2\]" "$bdc" inspect "$tmp/mod.onnx"

# analyze: the block-dependency report in its three forms, and its usage errors
check analyze-no-model 1 "no model given" "$bdc" analyze
check analyze-bad-fusion 1 "expected none, op or block" "$bdc" analyze models/sample.onnx --fusion x
check analyze-both-stdout 1 "cannot both go to stdout" "$bdc" analyze models/sample.onnx --json - --dot -
check analyze-text 0 "critical path [0-9]+ blocks" "$bdc" analyze models/sample.onnx
check analyze-schedules 0 "block  arena [0-9]+ bytes" "$bdc" analyze models/sample.onnx
check compile-bad-schedule 1 "expected op or block" "$bdc" compile models/sample.onnx -o /dev/null --schedule x
check compile-bad-winograd 1 "--winograd 'maybe': expected on or off" "$bdc" compile models/sample.onnx -o /dev/null --winograd maybe
if "$bdc" analyze models/sample.onnx --fusion block --json "$tmp/a.json" --dot "$tmp/a.dot" >/dev/null &&
    /usr/bin/python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
t = d["totals"]
assert t["operator_edges"] == len({(e["producer"], e["consumer"]) for e in d["edges"]})
assert t["block_edges"] == sum(e["block_edges"] for e in d["edges"])
assert 1 <= t["critical_path_blocks"] <= t["blocks"]
assert d["arena_bytes"]["block"] == d["arena_bytes"]["op"]
' "$tmp/a.json" && grep -q "^digraph bdc" "$tmp/a.dot" && grep -q -- "->" "$tmp/a.dot"; then
  echo "ok    analyze-json-dot"
  pass=$((pass + 1))
else
  echo "FAIL  analyze-json-dot"
  fail=$((fail + 1))
fi
# --profile on a compiled executable: a trace with one event per block, and the per-nest table
if "$bdc" compile models/sample.onnx -o "$tmp/sample" -q 2>/dev/null &&
    "$tmp/sample" models/sample.input.npy --profile "$tmp/trace.json" --threads 2 >"$tmp/prof.txt" &&
    grep -q "ms in blocks" "$tmp/prof.txt" &&
    /usr/bin/python3 -c '
import json, sys
ev = [e for e in json.load(open(sys.argv[1]))["traceEvents"] if e["ph"] == "X"]
blocks = json.load(open(sys.argv[2]))["totals"]["blocks"]
assert len(ev) == blocks, (len(ev), blocks)
assert all(e["dur"] >= 0 and e["args"]["nest"] >= 0 for e in ev)
' "$tmp/trace.json" <("$bdc" analyze models/sample.onnx --json -); then
  echo "ok    profile-trace"
  pass=$((pass + 1))
else
  echo "FAIL  profile-trace"
  fail=$((fail + 1))
fi
# --denormals: by default a run reads and writes denormal floats as zero (x86 FTZ/DAZ; the
# caller's mode is restored after the run; the pool's workers take it), keep leaves them IEEE.
# y = x * 1 on denormal x, in several blocks on two threads.
check compile-bad-denormals 1 "--denormals 'zero': expected flush or keep" "$bdc" compile models/sample.onnx -o /dev/null --denormals zero
/usr/bin/python3 - "$tmp/den.onnx" "$tmp/den.npy" <<'PY'
import sys
import numpy as np
from onnx import TensorProto, helper, save
g = helper.make_graph([helper.make_node("Mul", ["x", "one"], ["y"])], "den",
                      [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1 << 16, 4])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1 << 16, 4])],
                      [helper.make_tensor("one", TensorProto.FLOAT, [], [1.0])])
save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), sys.argv[1])
np.save(sys.argv[2], np.tile(np.array([1e-39, 1.0, -3e-40, 2e-38], np.float32), (1 << 16, 1)))
PY
denormals_case() { # name mode expected-y...
  local name=$1 mode=$2
  shift 2
  if "$bdc" compile "$tmp/den.onnx" -o "$tmp/den_$mode" --denormals "$mode" -q 2>/dev/null &&
      "$tmp/den_$mode" "$tmp/den.npy" --threads 2 --output-dir "$tmp/den_$mode.out" >/dev/null &&
      /usr/bin/python3 -c '
import sys
import numpy as np
y = np.load(sys.argv[1])
want = np.array([float(v) for v in sys.argv[2:]], np.float32)
assert np.array_equal(y, np.tile(want, (1 << 16, 1))), (y, want)
' "$tmp/den_$mode.out/y.npy" "$@"; then
    echo "ok    $name"
    pass=$((pass + 1))
  else
    echo "FAIL  $name"
    fail=$((fail + 1))
  fi
}
if [ "$(uname -m)" = x86_64 ]; then
  denormals_case denormals-flush flush 0 1 0 2e-38
fi
denormals_case denormals-keep keep 1e-39 1 -3e-40 2e-38
# The activation cap counts graph outputs: a 4 PiB output is refused at compile time (exit 4).
/usr/bin/python3 - "$tmp/huge.onnx" <<'PY'
import sys
from onnx import TensorProto, helper, save
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
shape = helper.make_tensor("shape", TensorProto.INT64, [2], [1 << 25, 1 << 25])
g = helper.make_graph([helper.make_node("Expand", ["x", "shape"], ["y"], name="expand")], "huge",
                      [x], [y], [shape])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
m.ir_version = 8
save(m, sys.argv[1])
PY
check huge-output-cap 4 "graph outputs included.*largest tensor 'y'" "$bdc" compile "$tmp/huge.onnx" -o "$tmp/huge"
# --profile with --benchmark N: the table's medians over N recorded runs, the last run's trace
"$bdc" analyze models/sample.onnx --json "$tmp/analyze.json" >/dev/null 2>&1
check profile-runs 0 "median of 3 runs" "$tmp/sample" models/sample.input.npy --profile "$tmp/t3.json" --benchmark 3 --warmup 0
check profile-runs-trace 0 "^one run's blocks$" /usr/bin/python3 -c '
import json, sys
ev = [e for e in json.load(open(sys.argv[1]))["traceEvents"] if e["ph"] == "X"]
blocks = json.load(open(sys.argv[2]))["totals"]["blocks"]
print("one run\x27s blocks" if len(ev) == blocks else "%d events, %d blocks" % (len(ev), blocks))
' "$tmp/t3.json" "$tmp/analyze.json"
check profile-too-many-runs 1 "at most 1000 runs" "$tmp/sample" models/sample.input.npy --profile "$tmp/t.json" --benchmark 1001

# The weights ride appended to the executable (runtime/bdrt.h): a copy elsewhere runs, a file
# that lost them (strip rewrites the ELF without them, or cut short) says so and exits 4.
cp "$tmp/sample" "$tmp/sample_copy"
check weights-copied-runs 0 "probs: float32\[1,10\]" "$tmp/sample_copy" models/sample.input.npy
size=$(stat -c %s "$tmp/sample")
head -c $((size - 5)) "$tmp/sample" >"$tmp/sample_cut" && chmod +x "$tmp/sample_cut"
check weights-cut-short 4 "the model's weights: they are missing from this executable" "$tmp/sample_cut" models/sample.input.npy
if strip -o "$tmp/sample_stripped" "$tmp/sample" 2>/dev/null; then
  check weights-stripped 4 "was it stripped" "$tmp/sample_stripped" models/sample.input.npy
fi
check weights-info-without-them 0 "probs" "$tmp/sample_cut" --info

# The GPU targets' command line: options a target does not take, and a GPU executable's own.
check target-unknown 3 "unknown target 'tpu' \(cpu, cuda, hip or opencl\)" "$bdc" compile models/sample.onnx -o "$tmp/x" --target tpu
check opencl-no-arch 1 "--target opencl takes no --arch" "$bdc" compile models/sample.onnx -o "$tmp/x" --target opencl --arch sm_90
check precision-cpu 1 "--precision fp16 is for the GPU targets: --target cpu computes in fp32 or bf16" "$bdc" compile models/sample.onnx -o "$tmp/x" --precision fp16
check precision-cpu-bf16 0 "" "$bdc" compile models/sample.onnx -o "$tmp/sample_bf16" --precision bf16
check precision-cpu-bf16-runs 0 "probs" "$tmp/sample_bf16" models/sample.input.npy
check precision-bad 1 "--precision 'fp8': expected fp32, tf32, fp16 or bf16" "$bdc" compile models/sample.onnx -o "$tmp/x" --target opencl --precision fp8
check cuda-old-arch 1 "expected sm_70 or newer" "$bdc" compile models/sample.onnx -o "$tmp/x" --target cuda --arch sm_60
check branches-cpu 1 "--branches is for the GPU targets' --schedule op" "$bdc" compile models/sample.onnx -o "$tmp/x" --branches fuse
check branches-block 1 "--branches is for the GPU targets' --schedule op" "$bdc" compile models/sample.onnx -o "$tmp/x" --target opencl --branches fuse
check denormals-gpu 1 "--denormals is for --target cpu" "$bdc" compile models/sample.onnx -o "$tmp/x" --target opencl --denormals keep
check winograd-gpu 1 "--winograd is for --target cpu" "$bdc" compile models/sample.onnx -o "$tmp/x" --target opencl --winograd off
check tile-threads-gpu 1 "--tile-threads is for --target cpu" "$bdc" compile models/sample.onnx -o "$tmp/x" --target opencl --tile-threads 4
check tile-threads-bad 1 "--tile-threads '0': expected a count from 1 to 1024" "$bdc" compile models/sample.onnx -o "$tmp/x" --tile-threads 0
check qdq-bad 1 "--qdq 'fp8': expected auto, int8 or float" "$bdc" compile models/sample.onnx -o "$tmp/x" --qdq fp8
check analyze-gpu-target 0 "critical path" "$bdc" analyze models/sample.onnx --target opencl
check cpu-exe-no-device 1 "--device: this model was compiled for the CPU" "$tmp/sample" models/sample.input.npy --device 1
if "$bdc" compile models/sample.onnx -o "$tmp/sample_ocl" --target opencl -q 2>/dev/null; then
  check gpu-exe-help 0 "--device N" "$tmp/sample_ocl" --help
  # --profile on a GPU model: one persistent kernel under the block schedule, every kernel timed
  # alone under the op schedule; the JSON names what each kernel runs, each with its time
  check gpu-exe-profile-block 0 "1 kernel, each launched alone" "$tmp/sample_ocl" models/sample.input.npy --profile "$tmp/t.json"
  if "$bdc" compile models/sample.onnx -o "$tmp/sample_ocl_op" --target opencl --schedule op -q 2>/dev/null; then
    check gpu-exe-profile-op 0 "[0-9]+ kernels?, each launched alone \(median of 2 passes\)" \
      "$tmp/sample_ocl_op" models/sample.input.npy --profile "$tmp/t_op.json" --benchmark 2
    check gpu-exe-profile-json 0 "^ok$" /usr/bin/python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
k = d["kernels"]
assert d["api"] == "opencl" and k and all(x["median_ms"] > 0 and "nest" in x["runs"] for x in k), d
assert abs(sum(x["median_ms"] for x in k) - d["kernels_ms"]) < 1e-3 * len(k), d
print("ok")' "$tmp/t_op.json"
  else
    echo "FAIL  gpu-exe-profile-op: bdc compile --target opencl --schedule op failed"
    fail=$((fail + 1))
  fi
  check gpu-exe-no-such-device 4 "no OpenCL device 7" "$tmp/sample_ocl" models/sample.input.npy --device 7
  check gpu-exe-benchmark-json 0 '"timer": "device events", "api": "opencl"' "$tmp/sample_ocl" models/sample.input.npy --benchmark 2 --json
else
  echo "FAIL  gpu-exe: bdc compile --target opencl failed"
  fail=$((fail + 1))
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
