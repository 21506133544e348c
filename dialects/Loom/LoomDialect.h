//===- LoomDialect.h - the loom dialect -------------------------*- C++ -*-===//
//
// Declares the loom dialect, its enums, attributes and op interfaces. Include
// LoomOps.h for the ops.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_DIALECTS_LOOM_LOOMDIALECT_H
#define LOOM_DIALECTS_LOOM_LOOMDIALECT_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"

#include "dialects/Loom/ShardingRule.h"

#include "dialects/Loom/LoomDialect.h.inc"
#include "dialects/Loom/LoomEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/Loom/LoomAttrs.h.inc"

namespace mlir::loom::detail {
/// Bytes of a statically shaped tensor type (0 for anything else). Sub-byte
/// element types round up to whole bytes per element.
int64_t tensorBytes(Type type);
/// Elements of a statically shaped tensor type (0 for anything else).
int64_t numElements(Type type);
/// Elements a reduction of `type` over `axes` (all when empty) combines.
int64_t reducedCount(RankedTensorType type, ArrayRef<int64_t> axes);
/// Sum of tensorBytes over the operands / results of `op`.
int64_t operandBytes(Operation *op);
int64_t resultBytes(Operation *op);
/// One FLOP per result element: the default for elementwise ops.
int64_t defaultFlops(Operation *op);
/// The sharding rule of a loom op (LoomShardingRules.cpp), or failure for ops
/// without one.
FailureOr<ShardingRule> shardingRuleOf(Operation *op);
} // namespace mlir::loom::detail

#include "dialects/Loom/LoomInterfaces.h.inc"

namespace mlir::loom {
/// The pipeline stage that runs an op (an i64 attribute): set on the forward
/// ops by loom-pipeline-stages, carried to their gradients by autodiff and
/// read by loom-pipeline.
inline constexpr StringLiteral kStageAttr = "loom.stage";

/// The ONNX node an op came from: the importer locates every op at a NameLoc
/// of its node's name (possibly inside a FusedLoc after rewrites). Empty
/// when the location names none. The name lives in the context.
StringRef onnxNodeOf(Location loc);

/// The 16-bit float type a precision option names ("bf16" or "fp16"), or
/// null for any other name.
FloatType lowPrecisionType(MLIRContext *ctx, StringRef name);

/// Attaches GradientOpInterface to the differentiable ops (LoomGradients.cpp);
/// called when the dialect loads.
void registerGradientModels(MLIRContext *context);
} // namespace mlir::loom

#endif // LOOM_DIALECTS_LOOM_LOOMDIALECT_H
