#!/usr/bin/env bash
# The whole test suite: sets up (scripts/setup.sh), builds with -Werror, runs every test with
# ctest, then rebuilds the compiler with AddressSanitizer + UndefinedBehaviorSanitizer and runs the
# tests that exercise untrusted input again under it, and ends with a short reproducible libFuzzer
# run of each fuzz target (tests/fuzz/run.sh; a crash, leak or sanitizer report fails it).
set -euo pipefail
cd "$(dirname "$0")/.."

BDC_CMAKE_ARGS="-DBDC_WERROR=ON" scripts/setup.sh
jobs="$(nproc)"

echo "== tests (release build)"
ctest --test-dir build --output-on-failure -j"$jobs" --timeout 2400

echo "== tests under ASan+UBSan"
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DBDC_SANITIZE=ON -DBDC_WERROR=ON >/dev/null
cmake --build build-asan -j"$jobs"
ctest --test-dir build-asan --output-on-failure -j"$jobs" -L sanitize --timeout 2400

echo "== fuzz smoke (libFuzzer, fixed seed)"
FUZZ_RUNS=2000000 tests/fuzz/run.sh 0 1 compiler
FUZZ_RUNS=3000000 tests/fuzz/run.sh 0 1 tensor
