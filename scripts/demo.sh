#!/usr/bin/env bash
# `make demo`: imports the bundled example model (a small GPT-style decoder
# exported from PyTorch) into the loom dialect, prints its IR and an op
# summary with FLOPs and bytes from the cost interface, then compiles it to a
# CPU bundle, runs it and compares its logits with PyTorch's.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD="${1:-build}"
MODEL="${MODEL:-test/models/gpt_opset17.onnx}"
OUT="$BUILD/demo"
mkdir -p "$OUT"

echo "== loomc: importing $MODEL"
"$BUILD/bin/loomc" "$MODEL" -o "$OUT/model.mlir"
echo "   wrote $OUT/model.mlir ($(wc -c < "$OUT/model.mlir") bytes, parameters included)"
echo
echo "== the loom dialect (parameter values elided)"
"$BUILD/bin/loom-opt" "$OUT/model.mlir" --mlir-elide-resource-strings-if-larger=16 \
  | sed -e '/^{-#$/,$d'
echo "== op summary (loom-opt --loom-cost-report)"
"$BUILD/bin/loom-opt" "$OUT/model.mlir" --loom-cost-report -o /dev/null
echo
echo "== loomc -o $OUT/model.loom: native code for this CPU, parameters, manifest"
"$BUILD/bin/loomc" "$MODEL" -o "$OUT/model.loom"
ls -l "$OUT/model.loom"
echo
echo "== loom-run infer: the bundled input tokens, compared with PyTorch's logits"
NAME="$(basename "$MODEL" .onnx)"
"$BUILD/bin/loom-run" infer "$OUT/model.loom" \
  --input "tokens=test/models/$NAME.in.tokens.npy" --output-dir "$OUT/out" \
  --repeat 20 --warmup 2
"$BUILD/bin/npy-compare" "$OUT/out/logits.npy" "test/models/$NAME.out.logits.npy" --rtol 1e-4
