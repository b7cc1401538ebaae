#!/usr/bin/env bash
# Golden dumps of the loop-nest IR: every model that tests/golden/make_models.py builds is compiled
# with `--dump=tiles,fuse,deps,sched` (the nests after fusion, the fusion decisions, their block
# dependencies, and the block schedule's task DAG) under `--fusion none`, `op` and `block`, and
# the dump (bdc prints it to stderr) must equal the committed tests/golden/NAME.FUSION.tiles,
# else a unified diff is printed. Blocks are sized for 8 threads (--tile-threads 8), not for this
# machine's CPUs, and for portable x86-64 (--arch x86-64), not for its kind of core (the tiler
# weighs Winograd differently where AVX-512 multiply-adds run at half rate), so that the dumps are
# the same on every machine.
#
# Usage: tests/test_golden.sh [BDC]          (default: $BDC, else build/bdc)
#
#   BDC_UPDATE_GOLDEN=1   rewrite the .tiles files from this build instead of comparing (and remove
#                         those of models make_models.py no longer builds); review the git diff.
#   BDC_CACHE             where the generated models are cached (default build/cache), in a folder
#                         keyed by a hash of make_models.py, so editing it regenerates them.
#   BDC_PYTHON            the Python with the onnx package (default /usr/bin/python3).
set -u
src="$(cd "$(dirname "$0")/.." && pwd)"
bdc="${1:-${BDC:-$src/build/bdc}}"
golden="$src/tests/golden"
python="${BDC_PYTHON:-/usr/bin/python3}"
update="${BDC_UPDATE_GOLDEN:-0}"
cache="${BDC_CACHE:-$src/build/cache}"
key="$(sha256sum "$golden/make_models.py" | cut -c1-16)"
models="$cache/golden-models/$key"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
pass=0 fail=0
ok() { echo "ok    $1"; pass=$((pass + 1)); }
bad() { echo "FAIL  $1"; fail=$((fail + 1)); }

# Generate the models once per version of make_models.py (into a temporary folder beside the
# final one, renamed into place, so an interrupted run never leaves half a set).
if [ ! -f "$models/.complete" ]; then
  mkdir -p "$cache/golden-models"
  tmp="$(mktemp -d "$cache/golden-models/.tmp-XXXXXX")"
  if "$python" "$golden/make_models.py" "$tmp" && touch "$tmp/.complete" \
      && { mv -T "$tmp" "$models" 2>/dev/null || [ -f "$models/.complete" ]; }; then
    ok "models generated ($key)"
  else
    bad "make_models.py failed"
  fi
  rm -rf "$tmp"
fi

names=()
for m in "$models"/*.onnx; do
  [ -f "$m" ] && names+=("$(basename "$m" .onnx)")
done
if [ "${#names[@]}" -eq 0 ]; then
  bad "no models in $models"
fi

for name in "${names[@]}"; do
  for fusion in op none block; do
    case="$name --fusion $fusion"
    want="$golden/$name.$fusion.tiles"
    got="$work/$name.$fusion.tiles"
    if ! "$bdc" compile "$models/$name.onnx" -o "$work/out" --fusion "$fusion" --tile-threads 8 --arch x86-64 --dump=tiles,fuse,deps,sched -q \
        2>"$got"; then
      bad "$case: bdc compile failed:"
      sed 's/^/      /' "$got" | head -20
      continue
    fi
    if [ "$update" = 1 ]; then
      if cmp -s "$got" "$want"; then ok "$case: unchanged"
      else cp "$got" "$want" && ok "$case: written tests/golden/$name.$fusion.tiles"; fi
    elif [ ! -f "$want" ]; then
      bad "$case: tests/golden/$name.$fusion.tiles missing (run with BDC_UPDATE_GOLDEN=1)"
    elif diff -u --label "tests/golden/$name.$fusion.tiles" --label "bdc --dump=tiles,fuse,deps,sched" \
        "$want" "$got" >"$work/diff"; then
      ok "$case: dump matches"
    else
      bad "$case: dump differs (BDC_UPDATE_GOLDEN=1 rewrites the file if the change is intended)"
      cat "$work/diff"
    fi
  done
done

# Every golden file belongs to a model that is still built.
for f in "$golden"/*.tiles; do
  [ -f "$f" ] || continue
  base="$(basename "$f" .tiles)"
  name="${base%.*}" fusion="${base##*.}"
  known=0
  for n in "${names[@]}"; do [ "$n" = "$name" ] && known=1; done
  if [ "$known" = 1 ] && { [ "$fusion" = op ] || [ "$fusion" = none ] || [ "$fusion" = block ]; }; then continue; fi
  if [ "$update" = 1 ]; then
    rm -f "$f" && ok "removed stale tests/golden/$base.tiles"
  else
    bad "tests/golden/$base.tiles belongs to no model of make_models.py"
  fi
done

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
