//===- Sharding.h - helpers shared by the sharding passes -------*- C++ -*-===//
//
// The per-dimension mesh axes of a value, as the sharding passes work with
// them, and their conversion to and from `#loom.sharding`.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_PASSES_TRANSFORMS_SHARDING_H
#define LOOM_PASSES_TRANSFORMS_SHARDING_H

#include "dialects/Loom/LoomOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseSet.h"

namespace mlir::loom::sharding {

/// Axes of one dimension, major to minor (empty: not split).
using Axes = SmallVector<StringAttr, 1>;
/// Axes of every dimension of a value.
using DimAxes = SmallVector<Axes>;

/// The attribute name of shardings: on function arguments and results one
/// `#loom.sharding`, on ops an array with one per result.
inline constexpr StringLiteral kShardingAttr = "loom.sharding";

DimAxes dimAxesOf(ShardingAttr sharding);
/// Replicated axes for a value of `type`.
DimAxes replicated(Type type);
bool isReplicated(const DimAxes &axes);
ShardingAttr toAttr(MLIRContext *context, FlatSymbolRefAttr mesh,
                    const DimAxes &axes);
ArrayAttr toArrayAttr(MLIRContext *context, ArrayRef<StringAttr> axes);
/// Number of devices along `axes`.
int64_t groupSize(MeshAttr mesh, ArrayRef<StringAttr> axes);
/// The type of one device's block of a value of `type` split as `axes`.
RankedTensorType localType(RankedTensorType type, const DimAxes &axes,
                           MeshAttr mesh);
/// "{dp, tp}" for messages.
std::string axesText(ArrayRef<StringAttr> axes);

/// What one operand or result of an op holds, as a candidate for the split
/// of the op's factors.
struct ValueSplit {
  /// The value's split (one entry per dimension).
  const DimAxes *axes;
  /// The rule's factors of each of its dimensions.
  const ShardingRule::ValueFactors *factors;
  /// A sharding nobody may change: a function argument's (the user's
  /// `--shard`, a data input's batch split, ZeRO's).
  bool fixed;
  /// An operand (what the data holds) rather than a result (what
  /// propagation suggested from its uses).
  bool operand;
  /// The value's size: moving the smaller of two conflicting values costs
  /// less communication.
  int64_t bytes;
};

/// Chooses how every factor of `rule` is split from what the op's values
/// hold. Where values disagree about a factor, the winner is, in order: a
/// fixed sharding (a user annotation or an input's), then an operand over a
/// result (the split the data has over one its uses would like, so the
/// data flows without being moved), then the larger value (so the smaller
/// one is the one resharded), then the earlier one. Only the leading factor of a dimension is read, a
/// factor is never split over an axis that already splits another factor,
/// and opaque factors stay whole. `indivisible` is called for a value whose
/// split does not divide the factor; when it fails, so does the choice.
FailureOr<SmallVector<Axes>> chooseFactorSplits(
    const ShardingRule &rule, ArrayRef<ValueSplit> values, MeshAttr mesh,
    function_ref<LogicalResult(unsigned value, unsigned dim)> indivisible);

/// Whether `value`'s sharding is fixed rather than chosen by propagation:
/// a block argument `fixedArg` accepts (the user's, an input's), the result
/// of a `loom.shard` annotation, or a view of one of those (reshapes,
/// slices, transposes and broadcasts: the parts of a fused projection's
/// weight are as fixed as the weight).
bool isAnchored(Value value, function_ref<bool(BlockArgument)> fixedArg);

/// The sharding of `func`'s first sharded argument (or, without one, of its
/// first `loom.shard` annotation) and the mesh it names;
/// a null attribute when no argument is sharded, failure (with an error)
/// when the mesh does not exist.
FailureOr<std::pair<ShardingAttr, MeshOp>> meshOfFunction(Operation *func);

/// Gives every value of `func` a sharding from its arguments' through the
/// ops' sharding rules (`loom-propagate-sharding`; with `annotate`, the ops
/// get `loom.sharding`). Arguments in `openArgs` have no fixed sharding:
/// propagation may split them like op results (the tensor-parallel planner
/// finds the biases that follow a split weight this way).
FailureOr<DenseMap<Value, DimAxes>>
propagateShardings(func::FuncOp func, FlatSymbolRefAttr meshRef,
                   MeshAttr mesh, const DenseSet<Value> &openArgs,
                   bool annotate);

} // namespace mlir::loom::sharding

#endif // LOOM_PASSES_TRANSFORMS_SHARDING_H
