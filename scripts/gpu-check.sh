#!/usr/bin/env bash
# The checks that need a CUDA device, for the device machine (DESIGN.md):
# builds Loom with the CUDA toolkit and NCCL found in /usr/local/cuda, then
# runs the GPU-labelled tests (the NCCL engine; the CUDA engine's allocator,
# kernel launches and cuBLAS products) and prints the device.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD="${1:-build-gpu}"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv || true
make build BUILD_DIR="$BUILD"
cd "$BUILD" && ctest -L gpu --output-on-failure
