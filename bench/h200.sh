#!/usr/bin/env bash
# bench/h200.sh: bdc's CUDA executables next to PyTorch (eager, CUDA graphs, torch.compile),
# trtexec and migraphx-driver on one NVIDIA GPU (written for an H200, sm_90), within a fixed
# time budget, so that it fits a short session on a GPU machine.
#
# Usage: bench/h200.sh [--target cuda|cpu] [--arch ARCH] [--models a,b] [--runs N] [--warmup W]
#                      [--precision fp32|tf32|fp16|bf16] [--peers eager,cudagraph,compile]
#                      [--budget SECONDS] [--jobs N] [--base BDC] [--env ROW:VAR=VALUE,...]
#                      [--skip-gpu-check] [--keep-bin] [OUTDIR]
#
# Needs a built tree (build/bdc, build/bdc-runtime) and the models exported beforehand into
# build/cache/models ($BDC_MODEL_CACHE), e.g. `tests/tools/export_models.py build/cache/models
# resnet18 mobilenet_v2 squeezenet1_1 googlenet bert vit`. The models missing there are exported
# first on this machine if its Python can (meta.json lists them as exported_here, since another
# PyTorch may export a different graph). Then, smallest .onnx first:
#   1. every bdc executable is compiled, --jobs at a time (default: one per CPU):
#      `bdc compile M.onnx -o OUTDIR/bin/M-S --target cuda --arch sm_90 --schedule S` for
#      bdc-op and bdc-block, and bdc-fuse (--schedule op --branches fuse: small independent
#      nests in one kernel instead of on streams); with --base BDC, also base-op and
#      base-block by that other build of bdc (an earlier commit's), timed in the same run;
#   2. each runs once on the sample input, compared with onnxruntime (CPU), then
#      `--benchmark N --warmup W --json --device 0` (bench/gpu_rows.py exe; the row keeps the
#      compile's seconds as compile_s, and bdc-op's its 10 slowest kernels, each launched alone
#      by `--profile`, as top_kernels), every model before any peer; --env ROW:VAR=VALUE runs
#      row ROW's executable again with that runtime variable set, as row ROW[VAR=VALUE] (e.g.
#      bdc-block:BDRT_GPU_CTAS=132 for fewer persistent CTAs, bdc-op:BDRT_GPU_GRAPH=0 for
#      launches without a graph);
#   3. per model, torch-* by bench/gpu_peers.py (the same module, weights and inputs), and
#      trtexec and migraphx by bench/peers/*.py (a "skipped" row when the tool is absent).
# Each step has its own `timeout`, and no step starts once --budget seconds (default 420) are
# spent; a failing or timed-out step is recorded as a row and the script goes on. At the end
# OUTDIR (default build/h200-run) holds h200-DATE.json (every row, and per model every peer
# side by side with bdc's ratios; what bench/results/h200-*.json stores), h200-DATE.txt (the
# table) and logs/ (the executables in bin/ are deleted once timed, since they embed the
# weights, unless --keep-bin). Exit 0 when every row is measured or skipped, 1 when some step failed,
# 3 when there is no NVIDIA GPU.
#
# Environment: PYTHON (default python3: the one with numpy, onnxruntime, torch, torchvision),
# BDC (default build/bdc), BDC_MODEL_CACHE (default build/cache/models).
#
# --target cpu runs the same flow on the CPU (bdc --target cpu, gpu_peers --device cpu): a test
# of this script on a machine without a GPU; its files are named h200-cpu-DATE.*.
# --skip-gpu-check skips the nvidia-smi check, so that the GPU steps run and fail (recorded as
# rows) on a machine without one: a test of how failures are recorded.
set -u

TARGET=cuda ARCH='' MODELS=resnet18,mobilenet_v2,squeezenet1_1,googlenet,bert,vit
RUNS=100 WARMUP=10 PRECISION=fp32 PEERS=eager,cudagraph,compile BUDGET=420 CHECK_GPU=1 KEEP_BIN=0 OUTDIR=''
BASE_BDC='' ENV_ROWS=''
JOBS=$(nproc 2>/dev/null || echo 2)
while [ $# -gt 0 ]; do
    case "$1" in
        --target) TARGET=$2; shift 2 ;;
        --arch) ARCH=$2; shift 2 ;;
        --models) MODELS=$2; shift 2 ;;
        --runs) RUNS=$2; shift 2 ;;
        --warmup) WARMUP=$2; shift 2 ;;
        --precision) PRECISION=$2; shift 2 ;;
        --peers) PEERS=$2; shift 2 ;;
        --budget) BUDGET=$2; shift 2 ;;
        --jobs) JOBS=$2; shift 2 ;;
        --base) BASE_BDC=$(realpath "$2"); shift 2 ;;
        --env) ENV_ROWS=$2; shift 2 ;;
        --skip-gpu-check) CHECK_GPU=0; shift ;;
        --keep-bin) KEEP_BIN=1; shift ;;
        -h|--help) sed -n '2,/^set -u/p' "$0" | sed 's/^# \{0,1\}//;/^set -u/d'; exit 0 ;;
        -*) echo "h200.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
        *) OUTDIR=$1; shift ;;
    esac
done

# First of all: is there a GPU to measure? Without one every number would be missing.
if [ "$TARGET" != cpu ] && [ "$CHECK_GPU" = 1 ]; then
    if ! command -v nvidia-smi >/dev/null 2>&1; then
        echo "h200.sh: nvidia-smi not found: no NVIDIA driver on this machine, nothing to" \
             "measure (--target cpu runs the flow on the CPU)" >&2
        exit 3
    fi
    if ! nvidia-smi -L >/dev/null 2>&1; then
        echo "h200.sh: nvidia-smi finds no usable GPU: $(nvidia-smi -L 2>&1 | head -1)" >&2
        exit 3
    fi
fi

HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(dirname "$HERE")
PY=${PYTHON:-python3}
BDC=${BDC:-$REPO/build/bdc}
MODELS_CACHE=${BDC_MODEL_CACHE:-$REPO/build/cache/models}
OUTDIR=${OUTDIR:-$REPO/build/h200-run}
STAMP=$(date -u +%Y%m%d-%H%M%S)
case "$TARGET" in
    cpu) NAME=h200-cpu-$STAMP DEVICE=cpu EXE_ARGS= ;;
    *) NAME=h200-$STAMP DEVICE=cuda EXE_ARGS="--device 0" ;;
esac
if [ -z "$ARCH" ]; then
    case "$TARGET" in cuda) ARCH=sm_90 ;; hip) ARCH=gfx90a ;; esac
fi
ARCH_ARGS=()
[ -n "$ARCH" ] && ARCH_ARGS=(--arch "$ARCH")
# per-step limits (seconds), each cut to what is left of the budget
COMPILE_S=150 EXE_S=60 PEERS_S=240 PEER_S=100 TOOL_S=150 EXPORT_S=120

mkdir -p "$OUTDIR/bin" "$OUTDIR/logs" || exit 1
ROWS=$OUTDIR/rows.jsonl
: > "$ROWS"
START=$SECONDS
FAILED=0

left() { echo $((BUDGET - (SECONDS - START))); }
cap() { local l; l=$(left); [ "$l" -lt "$1" ] && echo "$l" || echo "$1"; }
# error_row MODEL PEER TEXT [LOG]: a failed step's row (the log's telling line appended)
error_row() {
    "$PY" "$HERE/gpu_rows.py" error --model "$1" --peer "$2" --error "$3" ${4:+--log "$4"} \
        >> "$ROWS"
    FAILED=1
    echo "  $1 $2: $3" >&2
}
budget_spent() {
    if [ "$(left)" -lt 15 ]; then
        "$PY" "$HERE/gpu_rows.py" error --skipped --model "$1" --peer "$2" \
            --error "not run: the time budget of $BUDGET s was spent" >> "$ROWS"
        return 0
    fi
    return 1
}
# keep_row MODEL PEER RC OUT LOG: append the row a step printed, or a row for its failure
keep_row() {
    if [ "$3" = 124 ] || [ "$3" = 137 ]; then
        error_row "$1" "$2" "timed out (step limit or budget)" "$5"
    elif [ -n "$4" ] && [ "${4:0:1}" = "{" ]; then
        printf '%s\n' "$4" >> "$ROWS"
        [ "$3" = 0 ] || FAILED=1
    else
        error_row "$1" "$2" "exit $3" "$5"
    fi
}

# The models missing from the cache are exported first, in one call (one import of torch).
MISSING=
for m in ${MODELS//,/ }; do [ -f "$MODELS_CACHE/$m.onnx" ] || MISSING="$MISSING $m"; done
EXPORTED_HERE=
if [ -n "$MISSING" ]; then
    echo "h200.sh: not in $MODELS_CACHE, exporting:$MISSING" >&2
    mkdir -p "$MODELS_CACHE"
    timeout -k 5 "$(cap $EXPORT_S)" "$PY" "$REPO/tests/tools/export_models.py" "$MODELS_CACHE" \
        $MISSING > "$OUTDIR/logs/export.log" 2>&1
    for m in $MISSING; do
        if [ -f "$MODELS_CACHE/$m.onnx" ]; then
            EXPORTED_HERE="$EXPORTED_HERE $m"
        else
            error_row "$m" bdc-op "not exported ($MODELS_CACHE/$m.onnx missing) and exporting it failed" \
                "$OUTDIR/logs/export.log"
        fi
    done
fi
# smallest exported file first: a short budget then covers the most models
ORDERED=$(for m in ${MODELS//,/ }; do
    [ -f "$MODELS_CACHE/$m.onnx" ] && printf '%s %s\n' "$(stat -c %s "$MODELS_CACHE/$m.onnx")" "$m"
done | sort -n | cut -d' ' -f2)
# bdc's rows: op, block, and op with small sibling nests fused into one kernel instead of on
# streams; with --base, the op and block schedules of that compiler too
VARIANTS="bdc-op bdc-block"
[ "$TARGET" != cpu ] && VARIANTS="$VARIANTS bdc-fuse"
[ -n "$BASE_BDC" ] && VARIANTS="$VARIANTS base-op base-block"

echo "h200.sh: target $TARGET${ARCH:+ ($ARCH)}, $RUNS runs after $WARMUP warm-ups, $PRECISION," \
     "budget $BUDGET s, $JOBS compiles at a time, models: ${ORDERED//$'\n'/ }" >&2

# compile_one M P: `bdc compile` of model M for row P (bdc-S or base-S: schedule S, by $BDC or
# $BASE_BDC); LOG.compile.rc holds its exit status and seconds
compile_one() {
    local M=$1 S=${2#*-} EXE=$OUTDIR/bin/$1-$2 LOG=$OUTDIR/logs/$1-$2 t0 rc COMPILER=$BDC
    local SCHED_ARGS=(--schedule "$S")
    [ "$S" = fuse ] && SCHED_ARGS=(--schedule op --branches fuse)
    [ "${2%%-*}" = base ] && COMPILER=$BASE_BDC
    t0=$EPOCHREALTIME
    timeout -k 5 "$(cap $COMPILE_S)" "$COMPILER" compile "$MODELS_CACHE/$M.onnx" -o "$EXE" \
        --target "$TARGET" "${ARCH_ARGS[@]}" "${SCHED_ARGS[@]}" > "$LOG.compile.log" 2>&1
    rc=$?
    echo "$rc $(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')" \
        > "$LOG.compile.rc"
}

# 1. Every executable is compiled first, JOBS at a time (each `bdc compile` runs one nvcc).
echo "h200.sh: compiling $(echo $ORDERED | wc -w) models x ($VARIANTS)" >&2
for M in $ORDERED; do
    for P in $VARIANTS; do
        [ "$(left)" -lt 15 ] && break 2
        while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n; done
        compile_one "$M" "$P" &
    done
done
wait

# exe_row ROW [ARG... ] [-- VAR=VALUE]: the row of executable $EXE (model $M, schedule $S), by
# gpu_rows.py exe with those extra arguments, run with that variable in its environment; its
# stderr appended to $LOG.run.log
exe_row() {
    local row=$1 args=() envs=() out
    shift
    while [ $# -gt 0 ] && [ "$1" != -- ]; do args+=("$1"); shift; done
    [ $# -gt 0 ] && { shift; envs=("$@"); }
    out=$(env "${envs[@]}" timeout -k 5 "$(cap $EXE_S)" "$PY" "$HERE/gpu_rows.py" exe \
        --exe "$EXE" --model "$M" --peer "$row" --models-cache "$MODELS_CACHE" --runs "$RUNS" \
        --warmup "$WARMUP" --target "$TARGET" --schedule "$S" --exe-args "$EXE_ARGS" \
        --timeout "$EXE_S" "${args[@]}" 2>> "$LOG.run.log")
    keep_row "$M" "$row" $? "$out" "$LOG.run.log"
}

# 2. bdc's rows: each executable checked against onnxruntime and timed, every model before any
# peer, so that a short budget still covers bdc on all of them.
for M in $ORDERED; do
    for P in $VARIANTS; do
        S=${P#*-} EXE=$OUTDIR/bin/$M-$P LOG=$OUTDIR/logs/$M-$P PROFILE_ARGS=
        # where the op schedule's time goes: its 10 slowest kernels, each launched alone
        [ "$P" = bdc-op ] && [ "$TARGET" != cpu ] && PROFILE_ARGS="--profile-top 10"
        budget_spent "$M" "$P" && continue
        if [ ! -f "$LOG.compile.rc" ]; then
            error_row "$M" "$P" "not compiled: the time budget of $BUDGET s was spent"; continue
        fi
        read -r rc secs < "$LOG.compile.rc"
        if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
            error_row "$M" "$P" "bdc compile timed out" "$LOG.compile.log"; continue
        elif [ "$rc" != 0 ]; then
            error_row "$M" "$P" "bdc compile exit $rc" "$LOG.compile.log"; continue
        fi
        echo "$M $P: compiled in $secs s; check and benchmark" >&2
        : > "$LOG.run.log"
        exe_row "$P" --compile-s "$secs" $PROFILE_ARGS
        # --env: the same executable again with a runtime variable set, as row P[VAR=VALUE]
        for spec in ${ENV_ROWS//,/ }; do
            [ "${spec%%:*}" = "$P" ] || continue
            budget_spent "$M" "$P[${spec#*:}]" && continue
            exe_row "$P[${spec#*:}]" -- "${spec#*:}"
        done
        [ "$KEEP_BIN" = 1 ] || rm -f "$EXE"
    done
done

# 3. The peers, model by model.
for M in $ORDERED; do
    ONNX=$MODELS_CACHE/$M.onnx
    if [ "$(left)" -lt 15 ]; then
        for p in ${PEERS//,/ }; do budget_spent "$M" "torch-$p"; done
    else
        echo "$M torch: $PEERS" >&2
        PJ=$OUTDIR/peers-$M.json PLOG=$OUTDIR/logs/$M-torch.log
        timeout -k 5 "$(cap $PEERS_S)" "$PY" "$HERE/gpu_peers.py" --models "$M" \
            --device "$DEVICE" --peers "$PEERS" --runs "$RUNS" --warmup "$WARMUP" \
            --precision "$PRECISION" --peer-timeout "$PEER_S" --models-cache "$MODELS_CACHE" \
            --json "$PJ" > "$PLOG" 2>&1
        rc=$?
        [ $rc = 1 ] && FAILED=1  # its failed peers are rows of peers-M.json
        if [ $rc != 0 ] && [ $rc != 1 ]; then
            # killed, or stopped before timing (exit 3: no CUDA): a row for each peer it lacks
            why="gpu_peers.py exit $rc"
            [ $rc = 124 ] || [ $rc = 137 ] && why="gpu_peers.py killed at its step limit"
            for p in ${PEERS//,/ }; do
                grep -q "\"peer\": \"torch-$p\"" "$PJ" 2>/dev/null ||
                    error_row "$M" "torch-$p" "$why" "$PLOG"
            done
        fi
    fi

    for T in trtexec migraphx; do
        budget_spent "$M" "$T" && continue
        out=$(timeout -k 5 "$(cap $TOOL_S)" "$PY" "$HERE/peers/$T.py" "$ONNX" --model "$M" \
            --runs "$RUNS" --precision "$PRECISION" --timeout "$TOOL_S" \
            2> "$OUTDIR/logs/$M-$T.log")
        keep_row "$M" "$T" $? "$out" "$OUTDIR/logs/$M-$T.log"
    done
done

# what the numbers were taken with
GPU=cpu
[ "$DEVICE" = cuda ] && GPU=$(nvidia-smi --query-gpu=name,driver_version,memory.total \
    --format=csv,noheader 2>/dev/null | head -1)
GPU=${GPU:-unknown (nvidia-smi printed nothing)}
NVCC=$(nvcc --version 2>/dev/null | tail -1)
"$PY" -c 'import json, sys; json.dump(dict(zip(sys.argv[2::2], sys.argv[3::2])),
                                      open(sys.argv[1], "w"), indent=1)' "$OUTDIR/meta.json" \
    date "$STAMP" gpu "$GPU" nvcc "${NVCC:-none}" cpu "$(grep -m1 'model name' /proc/cpuinfo |
    cut -d: -f2- | sed 's/^ //')" bdc "$("$BDC" --version 2>&1 | head -1)" \
    commit "$(git -C "$REPO" rev-parse HEAD 2>/dev/null || echo unknown)" target "$TARGET" \
    arch "${ARCH:-default}" runs "$RUNS" warmup "$WARMUP" precision "$PRECISION" \
    budget_s "$BUDGET" elapsed_s "$((SECONDS - START))" exported_here "${EXPORTED_HERE# }" \
    command "bench/h200.sh --target $TARGET --models $MODELS --runs $RUNS --warmup $WARMUP --precision $PRECISION --peers $PEERS --budget $BUDGET${BASE_BDC:+ --base BASE}"
"$PY" "$HERE/gpu_rows.py" report --out "$OUTDIR" --name "$NAME" --meta "$OUTDIR/meta.json" \
    || FAILED=1
echo "h200.sh: $OUTDIR/$NAME.json, $OUTDIR/$NAME.txt ($((SECONDS - START)) s)" >&2
exit $FAILED
