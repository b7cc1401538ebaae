#!/usr/bin/env bash
# The same model compiled twice — from different working directories, with different TMPDIRs and
# with an absolute vs a relative model path — gives byte-identical generated sources and weights,
# and byte-identical executables.
set -u
bdc="$(realpath "${1:-${BDC:-build/bdc}}")"
src="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/a/tmp" "$work/b/deeper/tmp"
pass=0 fail=0
check() { if "$@"; then echo "ok    $name"; pass=$((pass + 1)); else echo "FAIL  $name"; fail=$((fail + 1)); fi; }

for model in sample.onnx; do
  (cd "$work/a" && TMPDIR="$work/a/tmp" "$bdc" compile "$src/models/$model" -o out --emit-dir emit -q)
  cp "$src/models/$model" "$work/b/deeper/$model"
  (cd "$work/b/deeper" && TMPDIR="$work/b/deeper/tmp" "$bdc" compile "$model" -o ../out --emit-dir ../emit -q)
  for f in model.c weights.bin; do
    name="$model: $f identical"
    check cmp -s "$work/a/emit/$f" "$work/b/emit/$f"
  done
  name="$model: executables identical"
  check cmp -s "$work/a/out" "$work/b/out"
  name="$model: no temporary folders left"
  check test -z "$(find "$work/a/tmp" "$work/b/deeper/tmp" -mindepth 1)"
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
