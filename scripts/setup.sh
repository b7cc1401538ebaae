#!/usr/bin/env bash
# Installs what bdc needs on a fresh Debian machine (build tools, protobuf-c, cJSON, onnx.proto,
# the ONNX test data, Python test packages; for the GPU targets PoCL with the OpenCL headers, on
# which the tests run the OpenCL executables, and hipcc for HIP builds; CUDA builds use the CUDA
# toolkit's nvcc, looked for on PATH and in /usr/local/cuda) and builds bdc into build/.
#   scripts/setup.sh            install missing packages, then build (Release)
#   BDC_NO_INSTALL=1 ...        only build
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"

apt_packages=(build-essential cmake pkg-config protobuf-c-compiler libprotobuf-c-dev libcjson-dev
              libonnx-dev libonnx-testdata python3 python3-pip python3-torch python3-torchvision
              clang strace bc pocl-opencl-icd ocl-icd-opencl-dev opencl-headers clinfo hipcc)

if [ -z "${BDC_NO_INSTALL:-}" ]; then
  missing=()
  for p in "${apt_packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "setup: installing Debian packages: ${missing[*]}"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
  # Test packages go to Debian's interpreter, next to its torch (see tests/requirements.txt).
  if ! /usr/bin/python3 - <<'PY' 2>/dev/null
import importlib.metadata as md, sys
want = {}
for line in open("tests/requirements.txt"):
    line = line.split("#")[0].strip()
    if line:
        name, ver = line.split("==")
        want[name] = ver
sys.exit(0 if all(md.version(n) == v for n, v in want.items()) else 1)
PY
  then
    echo "setup: installing Python test packages"
    $SUDO /usr/bin/python3 -m pip install -q --break-system-packages --root-user-action=ignore \
      -r tests/requirements.txt
  fi
fi

# nvcc: the CUDA toolkit where it is (PATH, /usr/local/cuda), else Debian's nvidia-cuda-toolkit
# (in non-free: it installs only where that component is enabled).
if ! command -v nvcc >/dev/null && [ ! -x /usr/local/cuda/bin/nvcc ]; then
  if [ -z "${BDC_NO_INSTALL:-}" ]; then
    echo "setup: nvcc not found: trying Debian's nvidia-cuda-toolkit"
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends nvidia-cuda-toolkit >/dev/null 2>&1 || true
  fi
  command -v nvcc >/dev/null ||
    echo "setup: warning: nvcc not found (install the CUDA toolkit): --target cuda cannot build here, and its tests fail"
fi

build_type="${BDC_BUILD_TYPE:-Release}"
cmake -S . -B build -DCMAKE_BUILD_TYPE="$build_type" ${BDC_CMAKE_ARGS:-} >/dev/null
cmake --build build -j"$(nproc)"
echo "setup: built build/bdc ($build_type)"
