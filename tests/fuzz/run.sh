#!/usr/bin/env bash
# Builds the libFuzzer target with clang (ASan+UBSan) and fuzzes the loader for a fixed time.
#   tests/fuzz/run.sh [SECONDS] [JOBS]     (defaults: 60 seconds, 1 job)
# The seed corpus is the malformed-model corpus plus the ONNX backend node models; new inputs go
# to build-fuzz/corpus, crashes to build-fuzz/crashes (keep fixed ones in tests/fuzz/regressions).
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds="${1:-60}"
jobs="${2:-1}"
CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=Debug -DBDC_FUZZ=ON -DBDC_SANITIZE=ON >/dev/null
cmake --build build-fuzz -j"$(nproc)" --target bdc_fuzz_load
mkdir -p build-fuzz/corpus build-fuzz/seeds build-fuzz/crashes
cp -f tests/malformed/*.onnx build-fuzz/seeds/ 2>/dev/null || true
cp -f tests/fuzz/regressions/* build-fuzz/seeds/ 2>/dev/null || true
testdata=/usr/include/onnx/backend/test/data/node
if [ -d "$testdata" ]; then
  for d in "$testdata"/*/; do cp -f "$d/model.onnx" "build-fuzz/seeds/$(basename "$d").onnx"; done
fi
parallel=()
[ "$jobs" -gt 1 ] && parallel=(-jobs="$jobs" -workers="$jobs")
build-fuzz/bdc_fuzz_load build-fuzz/corpus build-fuzz/seeds -max_total_time="$seconds" \
  -rss_limit_mb=2048 -malloc_limit_mb=1024 -max_len=262144 "${parallel[@]}" \
  -artifact_prefix=build-fuzz/crashes/ -print_final_stats=1
