#!/usr/bin/env bash
# Installs the Debian packages that Loom's build and tests need. Idempotent: packages
# already present are skipped, and apt is only touched when something is missing.
set -euo pipefail

PACKAGES=(
  cmake ninja-build ccache g++ pkg-config python3
  llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools
  libonnx-dev libprotobuf-dev protobuf-compiler libonnx-testdata
  libgtest-dev
  libgloo-dev libdnnl-dev libopenblas-dev nlohmann-json3-dev libpng-dev
  clang-14 libclang-rt-14-dev
  # The loom Python package's tests and the Optuna example (ctest's python).
  python3-numpy python3-pytest python3-optuna python3-matplotlib python3-sklearn
)

# TensorBoard's event reader checks loom-run's --tensorboard files
# (test/e2e/tensorboard.test, skipped without it). It is not a Debian package:
# pip installs it into the python3 on PATH when that one has pip.
if ! python3 -c "import tensorboard" 2>/dev/null; then
  if python3 -m pip --version >/dev/null 2>&1; then
    python3 -m pip install -q tensorboard 2>/dev/null ||
      echo "install-deps: could not install tensorboard with pip; its test will be skipped"
  fi
fi

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
