//===- LoomToLinalg.h - shared pieces of the loom-to-linalg lowering -*- C++ -*-===//
//
// Helpers and pattern registration shared by the files of the lowering.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_PASSES_CONVERSION_LOOMTOLINALG_H
#define LOOM_PASSES_CONVERSION_LOOMTOLINALG_H

#include "mlir/IR/AffineMap.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::loom::lowering {

/// The map from a result's iteration space to an operand broadcast into it
/// (numpy rules: operand dimensions align to the right; size-1 dimensions
/// that the result expands read index 0).
AffineMap broadcastMap(RankedTensorType operand, RankedTensorType result);

/// A zero-filled or uninitialized tensor of `type` for linalg outputs.
Value emptyTensor(OpBuilder &b, Location loc, RankedTensorType type);
Value filledTensor(OpBuilder &b, Location loc, RankedTensorType type,
                   TypedAttr value);

/// A scalar constant of `type` (float or integer) with `value`.
Value scalarConstant(OpBuilder &b, Location loc, Type type, double value);

/// 1 / sqrt(x) for a float scalar; libm, which math lowers to on CPUs, has
/// no rsqrt, so math.rsqrt is not used.
Value reciprocalSqrt(OpBuilder &b, Location loc, Value x);

/// Emits `elementwise op` on scalars `args` (the op's operands' elements).
/// Returns null when `op` is not an elementwise loom op.
Value emitScalarOp(OpBuilder &b, Location loc, Operation *op, ValueRange args,
                   Type resultElement);

/// Elementwise ops (one linalg.generic each).
void populateElementwisePatterns(RewritePatternSet &patterns);
/// Contractions, reductions, normalizations and data movement.
void populateStructuredPatterns(RewritePatternSet &patterns);

} // namespace mlir::loom::lowering

#endif // LOOM_PASSES_CONVERSION_LOOMTOLINALG_H
