//===- UnrollRecurrent.h - LSTM and GRU layers as per-step ops --*- C++ -*-===//

#ifndef LOOM_PASSES_TRANSFORMS_UNROLLRECURRENT_H
#define LOOM_PASSES_TRANSFORMS_UNROLLRECURRENT_H

#include "mlir/IR/Operation.h"

namespace mlir::loom {

/// Replaces every loom.lstm and loom.gru under `root` by its unrolled time
/// steps (ONNX semantics, any direction), built from ops that have gradients,
/// so that autodiff backpropagates through time.
void unrollRecurrentLayers(Operation *root);

} // namespace mlir::loom

#endif // LOOM_PASSES_TRANSFORMS_UNROLLRECURRENT_H
