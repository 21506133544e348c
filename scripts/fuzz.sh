#!/usr/bin/env bash
# Builds the ONNX importer's libFuzzer target with Clang and AddressSanitizer
# (in build-fuzz/) and runs it for a bounded time on a seed corpus of real
# and broken models. Exits non-zero if the fuzzer finds a crash; the input
# that caused it is kept in build-fuzz/artifacts/.
#
# Usage: scripts/fuzz.sh [SECONDS]   (default 60)
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_TO_RUN="${1:-60}"
BUILD=build-fuzz
CLANG="${CLANG:-clang-14}"
CLANGXX="${CLANGXX:-clang++-14}"

if [ ! -f "$BUILD/build.ninja" ]; then
  mkdir -p "$BUILD"
  CC="$CLANG" CXX="$CLANGXX" cmake -S . -B "$BUILD" -G Ninja \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit \
    -DMLIR_LINK_MLIR_DYLIB=ON -DLOOM_ENABLE_FUZZING=ON > "$BUILD/configure.log" 2>&1 \
    || { cat "$BUILD/configure.log"; exit 1; }
fi
cmake --build "$BUILD" --target onnx-import-fuzzer

# Seeds: the PyTorch models, the broken models, ONNX text tests and a spread
# of ONNX node tests. The corpus persists and grows between runs.
mkdir -p "$BUILD/corpus" "$BUILD/artifacts"
cp test/models/*.onnx test/Import/Inputs/*.onnx "$BUILD/corpus/"
i=0
for model in /usr/share/libonnx-testdata/data/node/*/model.onnx; do
  i=$((i + 1))
  if [ $((i % 8)) -eq 0 ]; then
    cp "$model" "$BUILD/corpus/node_$(basename "$(dirname "$model")").onnx"
  fi
done

echo "fuzzing the ONNX importer for ${SECONDS_TO_RUN}s"
set +e
"$BUILD/bin/onnx-import-fuzzer" "$BUILD/corpus" \
  -max_total_time="$SECONDS_TO_RUN" -timeout=20 -rss_limit_mb=4096 \
  -max_len=2000000 -artifact_prefix="$BUILD/artifacts/" -print_final_stats=1 \
  > "$BUILD/fuzz.log" 2>&1
status=$?
set -e
# libFuzzer's per-input progress lines are noise here; keep the rest.
grep -v '^#[0-9]' "$BUILD/fuzz.log" | tail -n 60
if [ "$status" -ne 0 ]; then
  echo "fuzzer found a failure (exit $status); inputs in $BUILD/artifacts/"
  exit 1
fi
echo "no crash, leak or sanitizer report in ${SECONDS_TO_RUN}s"
