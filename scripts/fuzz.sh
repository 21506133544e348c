#!/usr/bin/env bash
# Builds the ONNX importer's libFuzzer target with Clang and AddressSanitizer
# (in build-fuzz/) and runs it on a seed corpus of real and broken models.
# Exits non-zero if the fuzzer finds a crash; the input that caused it is
# kept in build-fuzz/artifacts/.
#
# Usage:
#   scripts/fuzz.sh --runs N     deterministic: a fresh corpus, seed 1 and N
#                                mutations, so a result reproduces exactly
#                                (what ctest runs)
#   scripts/fuzz.sh [SECONDS]    exploratory: random seed, for SECONDS
#                                (default 60), growing the corpus between runs
#
# Every run first replays test/fuzz/regressions/ (inputs that once crashed).
set -euo pipefail
cd "$(dirname "$0")/.."
MODE=time
SECONDS_TO_RUN=60
if [ "${1:-}" = "--runs" ]; then
  MODE=runs
  RUNS="${2:?--runs needs a count}"
elif [ -n "${1:-}" ]; then
  SECONDS_TO_RUN="$1"
fi
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

FUZZER="$BUILD/bin/onnx-import-fuzzer"
shopt -s nullglob
REGRESSIONS=(test/fuzz/regressions/*)
echo "replaying ${#REGRESSIONS[@]} regression inputs"
if [ "${#REGRESSIONS[@]}" -gt 0 ]; then
  "$FUZZER" "${REGRESSIONS[@]}" > "$BUILD/regressions.log" 2>&1 \
    || { tail -n 60 "$BUILD/regressions.log"; echo "a regression input fails"; exit 1; }
fi

# Seeds: the PyTorch models, the broken models, ONNX text tests and a spread
# of ONNX node tests. The exploratory corpus persists and grows between runs.
CORPUS="$BUILD/corpus"
if [ "$MODE" = runs ]; then
  CORPUS="$BUILD/corpus-ci"
  rm -rf "$CORPUS"
fi
mkdir -p "$CORPUS" "$BUILD/artifacts"
cp test/models/*.onnx test/Import/Inputs/*.onnx "$CORPUS/"
i=0
for model in /usr/share/libonnx-testdata/data/node/*/model.onnx; do
  i=$((i + 1))
  if [ $((i % 8)) -eq 0 ]; then
    cp "$model" "$CORPUS/node_$(basename "$(dirname "$model")").onnx"
  fi
done

if [ "$MODE" = runs ]; then
  echo "fuzzing the ONNX importer: $RUNS mutations from seed 1"
  LIMIT=(-seed=1 -runs="$RUNS")
else
  echo "fuzzing the ONNX importer for ${SECONDS_TO_RUN}s"
  LIMIT=(-max_total_time="$SECONDS_TO_RUN")
fi
set +e
"$FUZZER" "$CORPUS" "${LIMIT[@]}" -timeout=20 -rss_limit_mb=4096 \
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
echo "no crash, leak or sanitizer report"
