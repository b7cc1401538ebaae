#!/usr/bin/env bash
# Builds a libFuzzer target with clang (ASan+UBSan) and fuzzes it for a fixed time.
#   tests/fuzz/run.sh [SECONDS] [JOBS] [TARGET]     (defaults: 60 seconds, 1 job, compiler)
# With FUZZ_RUNS=N set, it runs exactly N inputs from seed 1 instead (a reproducible smoke run,
# as the test suite does).
# TARGET is "compiler" (load → verify → infer → lower → fuse → analyze → schedule → plan → emit C,
# bdc_fuzz_load) or
# "tensor" (the generated executable's .npy/.pb readers and output names, bdcrt_fuzz_tensor).
# Seeds: for compiler, the malformed-model corpus, the kept regressions and the ONNX backend node
# models; for tensor, a few valid .npy/.pb files. New inputs go to build-fuzz/corpus-TARGET,
# crashes to build-fuzz/crashes-TARGET (keep fixed ones in tests/fuzz/regressions, with seeds for
# passes the other seeds do not reach: qdq-conv-seed.onnx, a QDQ Conv for front/qdq_conv.c;
# qdq-pool-seed.onnx, a QDQ MaxPool for front/qdq_moves.c; qdq-requant-seed.onnx, a QuantizeLinear
# after a QDQ Conv for the int8 kernel's requantizing epilogue).
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds="${1:-60}"
jobs="${2:-1}"
target="${3:-compiler}"
case "$target" in
  compiler) bin=bdc_fuzz_load; path= ;;
  tensor) bin=bdcrt_fuzz_tensor; path=tests/runtime/ ;;
  *) echo "run.sh: unknown target '$target' (compiler or tensor)" >&2; exit 1 ;;
esac
CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=Debug -DBDC_FUZZ=ON -DBDC_SANITIZE=ON >/dev/null
cmake --build build-fuzz -j"$(nproc)" --target "$bin"
seeds="build-fuzz/seeds-$target"
corpus="build-fuzz/corpus-$target"
crashes="build-fuzz/crashes-$target"
mkdir -p "$seeds" "$corpus" "$crashes"
if [ "$target" = compiler ]; then
  cp -f tests/malformed/*.onnx "$seeds"/ 2>/dev/null || true
  cp -f tests/fuzz/regressions/*.onnx "$seeds"/ 2>/dev/null || true
  testdata=/usr/include/onnx/backend/test/data/node
  if [ -d "$testdata" ]; then
    for d in "$testdata"/*/; do cp -f "$d/model.onnx" "$seeds/$(basename "$d").onnx"; done
  fi
  # The newer archive's cases (opsets up to 27), where the tests have extracted it: those whose
  # names the older suite lacks, so that the ops of later opsets are seeded too.
  newer=build/cache/onnx-backend-testdata-v1.22.0/onnx/backend/test/data/node
  if [ -d "$newer" ]; then
    for d in "$newer"/*/; do
      [ -f "$seeds/$(basename "$d").onnx" ] || cp -f "$d/model.onnx" "$seeds/$(basename "$d").onnx"
    done
  fi
else
  # First byte: which expected input the parser checks against (see fuzz_tensor.c); the rest is
  # the file. One .npy and one TensorProto per expected input.
  "${PYTHON:-/usr/bin/python3}" - "$seeds" <<'EOF'
import io, sys
import numpy as np
from onnx import numpy_helper
shapes = [("<f4", (2, 3)), ("<i8", ()), ("|b1", (5,)), ("|u1", (0, 4)), ("<f2", (3,)),
          ("<f8", (1, 2, 2)), ("|i1", (7,)), ("<u4", (2,)), ("<u8", (2,)), ("<i2", (1, 1)),
          ("<u2", (4,)), ("<i4", (3,)), ("<f4", (1, 2) + (1,) * 10), ("<f4", (3, 3))]
for k, (dt, shape) in enumerate(shapes):
    a = (np.arange(int(np.prod(shape))) % 2).astype(dt).reshape(shape)
    buf = io.BytesIO()
    np.save(buf, a)
    open(f"{sys.argv[1]}/{k}.npy", "wb").write(bytes([k]) + buf.getvalue())
    pb = numpy_helper.from_array(a, name="t").SerializeToString()
    open(f"{sys.argv[1]}/{k}.pb", "wb").write(bytes([k]) + pb)
open(f"{sys.argv[1]}/names", "wb").write(b"\x80out\0OUT\0a/b\0..\0" + "é".encode())
EOF
fi
parallel=()
[ "$jobs" -gt 1 ] && parallel=(-jobs="$jobs" -workers="$jobs")
length=(-max_total_time="$seconds")
[ -n "${FUZZ_RUNS:-}" ] && length=(-runs="$FUZZ_RUNS" -seed=1)
"build-fuzz/$path$bin" "$corpus" "$seeds" "${length[@]}" \
  -rss_limit_mb=2048 -malloc_limit_mb=1024 -max_len=262144 "${parallel[@]}" \
  -artifact_prefix="$crashes/" -print_final_stats=1
