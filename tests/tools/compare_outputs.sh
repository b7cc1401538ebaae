#!/usr/bin/env bash
# compare_outputs.sh: check that a compiler change is behaviour-preserving.
#
# Compiles and runs the ONNX backend node suite (tests/test_node_run.py) and the real models
# (tests/test_real_run.py, with --fusion op and --fusion none) once with each of two bdc
# binaries, keeps every output file the compiled executables write (--keep-outputs), and
# compares the two trees byte for byte. A refactor that claims not to change generated code's
# behaviour must leave every output bit-identical; tolerance-based tests cannot show that.
#
# Usage: tests/tools/compare_outputs.sh BDC_A BDC_B [WORKDIR]
#        tests/tools/compare_outputs.sh --reuse DIR BDC_B [WORKDIR]
#   BDC_A, BDC_B  the two bdc binaries (typically a baseline build and the changed build; each
#                 needs its bdc-runtime/ staged beside it, as the build tree has)
#   --reuse DIR   take the A side from an earlier run whose WORKDIR was DIR (DIR/a/outputs),
#                 instead of running a baseline binary again
#   WORKDIR       where each side keeps its compile cache, outputs and logs: WORKDIR/a/ and
#                 WORKDIR/b/ (default: a new mktemp -d folder). May equal the --reuse DIR.
# Environment:
#   BDC_MODEL_CACHE  the exported real models (exported on first use, fixed seeds); default
#                    WORKDIR/models, or with --reuse the folder the reused run used. Both sides
#                    must see the same model files: each kept real-model output folder holds an
#                    inputs.sha256 that is compared with the outputs.
#   JOBS             parallel jobs (default 2): test_node_run.py -j, and the two fusion modes of
#                    test_real_run.py run side by side when JOBS >= 2
#   NODE_RUN_ARGS    extra test_node_run.py arguments (e.g. "-k 'test_conv*'"), word-split
#   REAL_RUN_MODELS  the real models to run (default: all)
#
# Test failures (a case failing against the suite's reference, unsupported ops) do not stop the
# comparison: the per-side pass/fail summaries are printed, and only the executables' outputs
# are compared. Runs that exit non-zero keep no outputs, so a case that runs on one side only
# shows up as files present on one side only. Each side's compile cache is kept in WORKDIR and
# reused on a rerun with the same binary (sha256 of bdc and its runtime libraries); a different
# binary starts from an empty cache.
#
# Prints, per side, the test summaries and the time taken, then the number of files compared,
# how many are identical, the differing files and those present on one side only. Exits 0 only
# if both sides produced the same set of files and every file is identical; 1 if they differ;
# 2 on usage errors or when a test script itself broke (no closing "N passed, M failed" line).
#
# A manual developer tool, not registered in ctest. The in-scope node cases are decided from the
# working tree's src/ops.def and tests/*_xfail.txt, so with --reuse keep those as they were.

set -u -o pipefail

PY=${PYTHON:-/usr/bin/python3}
JOBS=${JOBS:-2}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TESTS=$(dirname "$HERE")

usage() {
    sed -n '/^# Usage:/,/^# Environment:/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2
    exit 2
}

abspath() { (cd "$(dirname "$1")" && printf '%s/%s\n' "$(pwd)" "$(basename "$1")"); }

case "${1:-}" in -h|--help) usage ;; esac
REUSE=
if [ "${1:-}" = "--reuse" ]; then
    [ $# -ge 3 ] || usage
    REUSE=$(cd "$2" 2>/dev/null && pwd) || { echo "compare_outputs: no such folder: $2" >&2; exit 2; }
    if [ ! -f "$REUSE/a/complete" ]; then
        echo "compare_outputs: $REUSE/a holds no complete run to reuse" >&2
        exit 2
    fi
    BDC_A=
    shift 2
else
    [ $# -ge 2 ] || usage
    BDC_A=$1
    shift
fi
if [ $# -lt 1 ] || [ $# -gt 2 ]; then usage; fi
BDC_B=$1
WORK=${2:-}
case "$BDC_A" in -*) usage ;; esac
case "$BDC_B" in -*) usage ;; esac

for b in ${BDC_A:+"$BDC_A"} "$BDC_B"; do
    if [ ! -x "$b" ] || [ -d "$b" ]; then
        echo "compare_outputs: not an executable: $b" >&2
        exit 2
    fi
done
[ -n "$BDC_A" ] && BDC_A=$(abspath "$BDC_A")
BDC_B=$(abspath "$BDC_B")
if [ -z "$WORK" ]; then
    WORK=$(mktemp -d "${TMPDIR:-/tmp}/bdc-compare.XXXXXX") || exit 2
else
    mkdir -p "$WORK" || exit 2
    WORK=$(cd "$WORK" && pwd)
fi

if [ -n "${BDC_MODEL_CACHE:-}" ]; then
    MODELS=$BDC_MODEL_CACHE
elif [ -n "$REUSE" ] && [ -s "$REUSE/a/models_cache" ]; then
    MODELS=$(cat "$REUSE/a/models_cache")
else
    MODELS=$WORK/models
fi
mkdir -p "$MODELS" || exit 2
MODELS=$(cd "$MODELS" && pwd)

PIDS=()
cleanup() {
    local p
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

fingerprint() {  # the binary and the runtime it links into executables
    local rt
    rt=$(dirname "$1")/bdc-runtime/lib
    { sha256sum "$1" | cut -d' ' -f1
      if [ -d "$rt" ]; then (cd "$rt" && find . -type f -print0 | sort -z | xargs -0 -r sha256sum); fi
    } | sha256sum | cut -d' ' -f1
}

summary() {  # the closing "N passed, M failed" of a test log, or nothing
    tail -n 1 "$1" 2>/dev/null | grep -E '^[0-9]+ passed, [0-9]+ failed$'
}

# run_side SIDE BDC: both test scripts with BDC, outputs into WORK/SIDE/outputs.
run_side() {
    local side=$1 bdc=$2 dir=$WORK/$1 fp t0 broken=0 fusion log pid
    local -a node_args=() models=() pids=() logs=()
    fp=$(fingerprint "$bdc")
    if [ "$(cat "$dir/bdc.sha256" 2>/dev/null)" != "$fp" ]; then
        rm -rf "$dir/cache"
    fi
    rm -rf "$dir/outputs" "$dir/logs" "$dir/complete"
    mkdir -p "$dir/cache" "$dir/outputs" "$dir/logs" || return 2
    printf '%s\n' "$fp" >"$dir/bdc.sha256"
    printf '%s\n' "$bdc" >"$dir/bdc.path"
    printf '%s\n' "$MODELS" >"$dir/models_cache"
    # shellcheck disable=SC2206  # word-splitting is the point
    [ -n "${NODE_RUN_ARGS:-}" ] && eval "node_args=(${NODE_RUN_ARGS})"
    # shellcheck disable=SC2206
    [ -n "${REAL_RUN_MODELS:-}" ] && models=(${REAL_RUN_MODELS})

    echo "== side $side: $bdc"
    t0=$SECONDS
    "$PY" "$TESTS/test_node_run.py" --bdc "$bdc" --cache "$dir/cache" -j "$JOBS" \
        --keep-outputs "$dir/outputs/node_run" "${node_args[@]}" >"$dir/logs/node_run.log" 2>&1
    echo "   node_run:               $(summary "$dir/logs/node_run.log" || echo 'BROKEN (no summary)')" \
         "($((SECONDS - t0)) s; log $dir/logs/node_run.log)"
    summary "$dir/logs/node_run.log" >/dev/null || broken=1

    local t1=$SECONDS
    for fusion in op none; do
        log=$dir/logs/real_run-fusion-$fusion.log
        logs+=("$log")
        BDC_MODEL_CACHE=$MODELS "$PY" "$TESTS/test_real_run.py" --bdc "$bdc" \
            --cache "$dir/cache" --models-cache "$MODELS" --fusion "$fusion" \
            --keep-outputs "$dir/outputs/real_run" "${models[@]}" >"$log" 2>&1 &
        pid=$!
        PIDS+=("$pid")
        if [ "$JOBS" -lt 2 ]; then wait "$pid"; else pids+=("$pid"); fi
    done
    for pid in "${pids[@]}"; do wait "$pid"; done
    for log in "${logs[@]}"; do
        printf '   %-23s %s\n' "$(basename "$log" .log | sed 's/real_run-fusion-/real_run --fusion /'):" \
            "$(summary "$log" || echo 'BROKEN (no summary)')"
        summary "$log" >/dev/null || broken=1
    done
    echo "   real_run both fusion modes: $((SECONDS - t1)) s; side $side total $((SECONDS - t0)) s"
    if [ "$broken" != 0 ]; then
        echo "compare_outputs: a test script broke on side $side; see $dir/logs/" >&2
        return 2
    fi
    echo "$((SECONDS - t0))" >"$dir/complete"
    return 0
}

echo "workdir: $WORK"
echo "models:  $MODELS"
# Export once up front (a no-op for models already there), not twice concurrently below.
# shellcheck disable=SC2206
[ -n "${REAL_RUN_MODELS:-}" ] && EXPORT_MODELS=(${REAL_RUN_MODELS}) || EXPORT_MODELS=()
if ! "$PY" "$HERE/export_models.py" "$MODELS" "${EXPORT_MODELS[@]}" >"$WORK/export.log" 2>&1; then
    echo "compare_outputs: exporting the real models failed; see $WORK/export.log" >&2
    exit 2
fi
if [ -n "$REUSE" ]; then
    A_OUT=$REUSE/a/outputs
    echo "== side a: reused from $REUSE/a ($(cat "$REUSE/a/bdc.path" 2>/dev/null || echo '?'), took" \
         "$(cat "$REUSE/a/complete") s)"
    [ "$(cat "$REUSE/a/models_cache" 2>/dev/null)" = "$MODELS" ] || \
        echo "   note: side a used models from $(cat "$REUSE/a/models_cache" 2>/dev/null || echo '?')"
else
    run_side a "$BDC_A" || exit 2
    A_OUT=$WORK/a/outputs
fi
run_side b "$BDC_B" || exit 2
B_OUT=$WORK/b/outputs

echo "== comparing $A_OUT and $B_OUT"
"$PY" - "$A_OUT" "$B_OUT" <<'EOF'
import os
import sys


def files(top):
    out = set()
    for d, _, names in os.walk(top):
        for n in names:
            out.add(os.path.relpath(os.path.join(d, n), top))
    return out


def same(p, q):
    if os.path.getsize(p) != os.path.getsize(q):
        return False
    with open(p, "rb") as f, open(q, "rb") as g:
        while True:
            x, y = f.read(1 << 20), g.read(1 << 20)
            if x != y:
                return False
            if not x:
                return True


a, b = sys.argv[1], sys.argv[2]
fa, fb = files(a), files(b)
both = sorted(fa & fb)
differ = [p for p in both if not same(os.path.join(a, p), os.path.join(b, p))]
only_a, only_b = sorted(fa - fb), sorted(fb - fa)
npy = sum(p.endswith(".npy") for p in both)
print("files compared: %d (%d .npy outputs, %d input manifests)"
      % (len(both), npy, len(both) - npy))
print("identical:      %d" % (len(both) - len(differ)))
print("differing:      %d" % len(differ))
for p in differ:
    print("  DIFFER  %s" % p)
print("only in a:      %d" % len(only_a))
for p in only_a:
    print("  ONLY A  %s" % p)
print("only in b:      %d" % len(only_b))
for p in only_b:
    print("  ONLY B  %s" % p)
ok = not differ and not only_a and not only_b and both
print("RESULT: %s" % ("identical" if ok else "DIFFERENT" if both else "nothing to compare"))
sys.exit(0 if ok else 1)
EOF
