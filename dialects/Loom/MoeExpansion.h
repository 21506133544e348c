//===- MoeExpansion.h - loom.moe as routing, dispatch and experts -*- C++ -*-===//
//
// The expansion of a mixture-of-experts layer into ops that have gradients,
// sharding rules and lowerings: the router's softmax and top_k, dispatch and
// combine as one-hot products (GShard's formulation), and the experts as
// batched products over the stacked weights. Autodiff, the training step and
// the CPU lowering all use it, so the layer has one definition.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_DIALECTS_LOOM_MOEEXPANSION_H
#define LOOM_DIALECTS_LOOM_MOEEXPANSION_H

#include "dialects/Loom/LoomOps.h"

#include "mlir/IR/Builders.h"

#include <string>

namespace mlir::loom {

/// Marks of the expansion's ops for expert parallelism: the products that
/// read the experts' rows (operand 0: tokens `[N, D]` or dispatched rows
/// `[E, G * C, D]`), and the op that computes dispatched rows' outputs (its
/// value: the layer's routing groups G).
inline constexpr llvm::StringLiteral kMoeExpertInputAttr =
    "loom.moe_expert_input";
inline constexpr llvm::StringLiteral kMoeExpertOutputAttr =
    "loom.moe_expert_output";
/// Marks the training step's arguments that are experts' weights or biases
/// (stacked along dimension 0).
inline constexpr llvm::StringLiteral kMoeExpertParamAttr = "loom.moe_expert";

/// The parameters (arguments of the enclosing function, seen through
/// casts) that `op` reads as stacked expert weights and biases.
SmallVector<BlockArgument> expertParameters(MoeOp op);

struct MoeExpansion {
  /// The layer's output, `[N, D]`.
  Value result;
  /// `aux_loss * balance + z_loss * z` as a scalar of the input's element
  /// type; null when both coefficients are zero.
  Value auxLoss;
  /// Token assignments per expert, `[2, E]` f32: routed to it (the top-k
  /// choices; for expert choice, what it took) and processed (within its
  /// capacity).
  Value load;
  /// The layer's ONNX node (empty when its location names none).
  std::string name;
};

/// Builds the expansion of `op` at `builder`'s insertion point; `op` is left
/// in place. Ops built carry `op`'s discardable attributes (its pipeline
/// stage, for one).
MoeExpansion expandMoe(OpBuilder &builder, MoeOp op);

/// Replaces every loom.moe under `root` by its expansion and returns the
/// expansions in program order.
SmallVector<MoeExpansion> expandMoeLayers(Operation *root);

} // namespace mlir::loom

#endif // LOOM_DIALECTS_LOOM_MOEEXPANSION_H
