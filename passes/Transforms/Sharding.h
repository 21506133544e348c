//===- Sharding.h - helpers shared by the sharding passes -------*- C++ -*-===//
//
// The per-dimension mesh axes of a value, as the sharding passes work with
// them, and their conversion to and from `#loom.sharding`.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_PASSES_TRANSFORMS_SHARDING_H
#define LOOM_PASSES_TRANSFORMS_SHARDING_H

#include "dialects/Loom/LoomOps.h"

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

/// The sharding of `func`'s first sharded argument and the mesh it names;
/// a null attribute when no argument is sharded, failure (with an error)
/// when the mesh does not exist.
FailureOr<std::pair<ShardingAttr, MeshOp>> meshOfFunction(Operation *func);

} // namespace mlir::loom::sharding

#endif // LOOM_PASSES_TRANSFORMS_SHARDING_H
