//===- TensorParallel.h - Megatron layouts found in a model -----*- C++ -*-===//
//
// The tensor-parallel planner behind `loomc --tp-plan=auto`: finds, in the
// forward function of a model, the pairs of linear layers that Megatron-LM
// splits (a column-parallel layer whose output features are split, then
// ops that keep the split, then a row-parallel layer that sums over it) and
// the parameters that follow them (biases of the split features).
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_PASSES_TRANSFORMS_TENSORPARALLEL_H
#define LOOM_PASSES_TRANSFORMS_TENSORPARALLEL_H

#include "passes/Transforms/Sharding.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

namespace mlir::loom {

/// The attribute the planner leaves on every parameter argument: how the
/// plan splits it, or why it stays replicated (`loomc --report` prints it).
inline constexpr StringLiteral kTensorParallelAttr = "loom.tp_plan";

/// Plans Megatron's layouts over mesh axis `axis` for the parameters of the
/// module's forward function (the one `loom.training` names, else the first
/// public function with parameters), leaving out the parameters in `fixed`
/// (the user's). Returns the sharding of every parameter it splits, by
/// name, and annotates every parameter argument of every function with
/// `loom.tp_plan`. Fails with an error naming the ONNX node when the axis
/// does not divide a dimension the plan must split (a hidden size, a head
/// count).
///
/// A linear layer is a `loom.matmul` whose right operand is a parameter
/// (or a slice of a parameter viewed as several, see
/// `loom-split-fused-projections`). A row-parallel candidate is accepted
/// when every path back from its input reaches the outputs of other linear
/// layers (which become column-parallel) through ops that keep a feature
/// split local: elementwise math with parameters or constants, reshapes,
/// transposes, softmax, and products of two activations (attention), and
/// when nothing outside that region reads its values.
FailureOr<llvm::StringMap<sharding::DimAxes>>
planTensorParallel(ModuleOp module, FlatSymbolRefAttr meshRef, MeshAttr mesh,
                   StringAttr axis, const llvm::StringSet<> &fixed);

} // namespace mlir::loom

#endif // LOOM_PASSES_TRANSFORMS_TENSORPARALLEL_H
