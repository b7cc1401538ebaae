#!/usr/bin/env bash
# The bdc command line: help and version, usage errors (exit 1), and `inspect` on the bundled
# sample model in both output forms.
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
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
