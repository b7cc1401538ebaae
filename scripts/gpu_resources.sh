#!/usr/bin/env bash
# Registers, spills and scratch of every kernel bdc generates for a model, without a GPU:
# `ptxas -v` for --target cuda (sm_90 unless ARCH is set) and hipcc's kernel-resource-usage
# remarks for --target hip (gfx90a). Per target and schedule, one line per kernel, sorted by
# registers, then the maximum and whether anything spills.
#
# Usage: scripts/gpu_resources.sh MODEL.onnx [BDC] [cuda|hip|all] [op|block|all]
set -euo pipefail
model=$1
bdc=$(realpath "${2:-build/bdc}")
targets=${3:-all}
schedules=${4:-all}
[ "$targets" = all ] && targets="cuda hip"
[ "$schedules" = all ] && schedules="op block"
rt="$(dirname "$bdc")/bdc-runtime/include"
export PATH="$PATH:/usr/local/cuda/bin"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for t in $targets; do
  for s in $schedules; do
    src="$work/$t-$s"
    "$bdc" compile "$model" -o "$work/exe" --target "$t" --schedule "$s" -q --emit-dir "$src"
    echo "== $(basename "$model") --target $t --schedule $s"
    if [ "$t" = cuda ]; then
      (cd "$src" && nvcc -O3 -std=c++17 -arch="${ARCH:-sm_90}" -Xptxas -v -I"$rt" -c model.cu \
        -o /dev/null 2>&1) |
        awk '/Compiling entry function/ { match($0, /'"'"'[^'"'"']*'"'"'/); k = substr($0, RSTART + 1, RLENGTH - 2) }
             /Used [0-9]+ registers/ { match($0, /Used [0-9]+/); r = substr($0, RSTART + 5, RLENGTH - 5) + 0
                                       printf "%-16s %4d registers\n", k, r }
             /bytes spill stores/ && !/ 0 bytes spill stores, 0 bytes spill loads/ { print "spill: " $0 }' > "$work/lines"
    else
      (cd "$src" && hipcc -O3 -std=c++17 --offload-arch="${ARCH:-gfx90a}" -Rpass-analysis=kernel-resource-usage \
        -I"$rt" -c model.hip -o /dev/null 2>&1) |
        awk '/remark: Function Name:/ { k = $(NF - 1) }
             /remark:     VGPRs: / { v = $(NF - 1) + 0 }
             /remark:     VGPRs Spill: / { printf "%-16s %4d VGPRs, %d VGPRs spilled\n", k, v, $(NF - 1) }
             /remark:     ScratchSize/ && $(NF - 1) + 0 > 0 { print "spill: " k " scratch " $(NF - 1) " bytes/lane" }' > "$work/lines"
    fi
    grep -v '^spill' "$work/lines" | sort -k2 -n -r | head -n 40
    echo "max $(grep -v '^spill' "$work/lines" | sort -k2 -n -r | head -1 | awk '{ print $2 }') registers per thread; $(grep -c '^spill' "$work/lines" || true) kernel(s) or function(s) spill"
    grep '^spill' "$work/lines" | head -n 10 || true
  done
done
