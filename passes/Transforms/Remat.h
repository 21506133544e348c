//===- Remat.h - layers of a training step, for recomputation ---*- C++ -*-===//
//
// What loom-remat and loomc --memory-budget read from a training step: its
// layers (from the ONNX node names) and what recomputing each costs.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_PASSES_TRANSFORMS_REMAT_H
#define LOOM_PASSES_TRANSFORMS_REMAT_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <string>
#include <vector>

namespace mlir::loom {

/// A layer of the forward pass: the ops whose ONNX node names lie under
/// `name` (e.g. "/gpt/blocks.0").
struct RematLayer {
  std::string name;
  /// FLOPs of the layer's forward ops (cost interface): what recomputing
  /// all of it costs at most.
  int64_t flops = 0;
};

/// The layers of the training step `func`, in the order the forward pass
/// first reaches them; empty when the node names show none.
std::vector<RematLayer> findRematLayers(func::FuncOp func);

} // namespace mlir::loom

#endif // LOOM_PASSES_TRANSFORMS_REMAT_H
