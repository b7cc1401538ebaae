#!/usr/bin/env bash
# The bdc command line: help and version, usage errors (exit 1), `inspect` on the bundled
# sample model in both output forms, and inspect's listing of symbolic input dims (unbound, then
# bound by --dim and by --shape).
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
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
