#!/usr/bin/env bash
# The checks that need a CUDA device, for the device machine (DESIGN.md):
# builds Loom with the CUDA toolkit, cuBLAS and NCCL found in /usr/local/cuda,
# then, each step timed and recorded, prints one summary at the end:
#   1. the GPU-labelled tests (the NCCL engine; the CUDA engine's allocator,
#      kernel launches and cuBLAS products);
#   2. ONNX node conformance with every bundle run on the GPU
#      (onnx-node-conformance --run-cuda, against the test data as on the CPU);
#   3. the test models' inference on the GPU against PyTorch's outputs
#      (test/models, as test/e2e/pytorch-models.test does on the CPU);
#   4. training equivalence: 10 steps of the MLP, the CNN and the GPT-style
#      decoder on the GPU against the same bundles' CPU runs (losses and
#      parameters within 1e-4 relative);
#   5. data and tensor parallelism on the GPU: the GPT-style decoder on 2
#      ranks (dp=2 with ZeRO-2, and tp=2; one GPU each, or both on one GPU
#      when there is one) against one CPU process, within 1e-4 relative;
#   6. the benchmark: GPT-2 small (12 layers, d 768, batch 8 x 1024) trained
#      in bf16 by Loom, PyTorch eager and torch.compile on this GPU, step
#      times and MFU (bench/gpu.py; its table is in the log, its figures in
#      BUILD/gpu-check/bench.json).
# Usage: scripts/gpu-check.sh [BUILD_DIR]   (default build-gpu)
# LOOM_GPU_CHECK_TARGET=cuda-emulated runs steps 3-6 with CPU bundles of
# the same placement (step 6 with a 2-layer model and PyTorch on the CPU),
# to check this script on a machine without a GPU.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD="${1:-build-gpu}"
OUT="$ROOT/$BUILD/gpu-check"
TARGET="${LOOM_GPU_CHECK_TARGET:-cuda}"
SUMMARY=()
record() { SUMMARY+=("$(printf '%-44s %s (%ss)' "$1" "$2" "$3")"); }
step() { # step NAME COMMAND...
  local name=$1 start=$SECONDS
  shift
  echo "== $name"
  if "$@"; then record "$name" PASS $((SECONDS - start));
  else record "$name" FAIL $((SECONDS - start)); fi
}

nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv || true
start=$SECONDS
make build BUILD_DIR="$BUILD" || { echo "gpu-check: the build failed"; exit 1; }
record "build" PASS $((SECONDS - start))
export PATH="$ROOT/$BUILD/bin:$PATH"
rm -rf "$OUT" && mkdir -p "$OUT"

step "ctest -L gpu" bash -c "cd '$BUILD' && ctest -L gpu --output-on-failure"

step "ONNX node conformance on the GPU" \
  "$BUILD/bin/onnx-node-conformance" /usr/share/libonnx-testdata/data/node \
  --xfail test/conformance/node-xfail.txt --run-cuda

infer() { # infer MODEL INPUT OUTPUT
  local m=$1 input=$2 output=$3
  loomc "test/models/$m.onnx" --target="$TARGET" -o "$OUT/$m.loom" &&
    loom-run infer "$OUT/$m.loom" --input "$input=test/models/$m.in.$input.npy" \
      --output-dir "$OUT/$m.out" &&
    npy-compare "$OUT/$m.out/$output.npy" "test/models/$m.out.$output.npy" \
      --rtol 1e-4
}
for spec in mlp:x:logits gpt_opset14:tokens:logits gpt_opset17:tokens:logits \
            resnet18:x:logits moe_top2:x:y lstm:x:logits gru:x:logits; do
  IFS=: read -r m input output <<< "$spec"
  step "inference on the GPU: $m" infer "$m" "$input" "$output"
done

train() { # train NAME MODEL DATA... -- LOOMC_FLAGS...
  local name=$1 model=$2
  shift 2
  local data=()
  while [ "$1" != "--" ]; do data+=(--data "$1"); shift; done
  shift
  for target in cpu "$TARGET"; do
    loomc "test/e2e/training/$model.onnx" --train "$@" --target=$target \
      -o "$OUT/$name.$target.loom" || return 1
    loom-run train "$OUT/$name.$target.loom" "${data[@]}" --no-shuffle \
      --steps 10 --metrics "$OUT/$name.$target.jsonl" \
      --save-params "$OUT/$name.$target" || return 1
  done
  trajectory-compare "$OUT/$name.$TARGET.jsonl" "$OUT/$name.cpu.jsonl" \
    --rtol 1e-4 --params "$OUT/$name.$TARGET" --ref-params "$OUT/$name.cpu" \
    --param-rtol 1e-4
}
T=test/e2e/training
step "training on the GPU = CPU: MLP" train mlp mlp \
  "x=$T/mlp.in.x.npy" "labels=$T/mlp.in.labels.npy" -- \
  --loss=cross-entropy:labels --optimizer=sgd --lr=0.05 --momentum=0.9
step "training on the GPU = CPU: CNN" train cnn cnn \
  "x=$T/cnn.in.x.npy" "labels=$T/cnn.in.labels.npy" -- \
  --loss=cross-entropy:labels --optimizer=sgd --lr=0.05 --momentum=0.9
step "training on the GPU = CPU: GPT" train gpt gpt_opset14 \
  "tokens=$T/gpt_opset14.in.tokens.npy" "targets=$T/gpt_opset14.in.targets.npy" -- \
  --optimizer=sgd --lr=0.05 --momentum=0.9

mesh() { # mesh NAME LOOMC_FLAGS...: the GPT on 2 ranks against one CPU process
  local name=$1 data
  shift
  data=(--data "tokens=$T/gpt_opset14.in.tokens.npy"
        --data "targets=$T/gpt_opset14.in.targets.npy")
  loomc "$T/gpt_opset14.onnx" --train --optimizer=sgd --lr=0.05 --momentum=0.9 \
    "$@" --target="$TARGET" -o "$OUT/$name.loom" &&
    loom-run train "$OUT/$name.loom" --nproc 2 "${data[@]}" --no-shuffle \
      --steps 10 --metrics "$OUT/$name.jsonl" --save-params "$OUT/$name" &&
    trajectory-compare "$OUT/$name.jsonl" "$OUT/gpt.cpu.jsonl" --rtol 1e-4 \
      --params "$OUT/$name" --ref-params "$OUT/gpt.cpu" --param-rtol 1e-4
}
step "2 ranks on the GPU = one CPU process: GPT dp=2 ZeRO-2" \
  mesh gpt-dp2 --mesh dp=2 --zero=2
step "2 ranks on the GPU = one CPU process: GPT tp=2" \
  mesh gpt-tp2 --mesh tp=2 --tp-plan=auto

if [ "$TARGET" = cuda ]; then
  step "benchmark: GPT-2 small, bf16, vs PyTorch" \
    python3 bench/gpu.py --build "$BUILD" --json "$OUT/bench.json"
else
  step "benchmark (tiny, $TARGET, PyTorch on the CPU)" \
    python3 bench/gpu.py --build "$BUILD" --tiny --target "$TARGET" \
    --device cpu --no-compile --json "$OUT/bench.json"
fi

echo
echo "gpu-check summary ($(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)):"
printf '  %s\n' "${SUMMARY[@]}"
! printf '%s\n' "${SUMMARY[@]}" | grep -q " FAIL "
