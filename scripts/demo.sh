#!/usr/bin/env bash
# `make demo`: compiles the bundled byte-level GPT-style decoder
# (examples/char-gpt/char_gpt.onnx, exported from PyTorch with its loss) into
# a training step with AdamW, warmup + cosine decay and gradient clipping,
# then trains it data-parallel on 2 ranks (RANKS=N to change; each rank a
# process taking its half of every batch, gradients all-reduced through
# Gloo) on this repository's README.md read byte by byte, with progress
# lines, held-out evaluation, checkpoints and a loss plot.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD="${1:-build}"
STEPS="${STEPS:-300}"
RANKS="${RANKS:-2}"
MODEL=examples/char-gpt/char_gpt.onnx
OUT="$BUILD/demo"
rm -rf "$OUT"
mkdir -p "$OUT"

echo "== loomc --train --mesh dp=$RANKS: $MODEL -> $OUT/char_gpt.loom"
"$BUILD/bin/loomc" "$MODEL" --train --optimizer=adamw --lr=3e-3 \
  --weight-decay=0.01 --lr-schedule=cosine --warmup-steps=$((STEPS / 15 + 1)) \
  --total-steps="$STEPS" --min-lr=3e-4 --clip-grad-norm=1.0 \
  --mesh dp="$RANKS" -o "$OUT/char_gpt.loom"
echo "   entry points: $(grep -o '"symbol": "[a-z_]*"' "$OUT/char_gpt.loom/manifest.json" \
  | sed -e 's/.*loom_entry_//' -e 's/"//' | tr '\n' ' ')"
echo
echo "== loom-run train --nproc $RANKS: $STEPS steps on README.md ($(wc -c < README.md) bytes)"
"$BUILD/bin/loom-run" train "$OUT/char_gpt.loom" --nproc "$RANKS" \
  --tokens README.md --token-dtype uint8 \
  --token-input tokens --token-target targets \
  --steps "$STEPS" --val-split 0.1 --eval-every 50 --seed 1 \
  --metrics "$OUT/metrics.jsonl" --checkpoint-dir "$OUT/checkpoints" \
  --checkpoint-every 100 --plot "$OUT/loss.png" --log-every 25
echo
echo "metrics: $OUT/metrics.jsonl, checkpoints: $OUT/checkpoints/, plot: $OUT/loss.png"
