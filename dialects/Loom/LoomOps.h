//===- LoomOps.h - ops of the loom dialect ----------------------*- C++ -*-===//
//
// The loom ops and the shape helpers their type inference shares.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_DIALECTS_LOOM_LOOMOPS_H
#define LOOM_DIALECTS_LOOM_LOOMOPS_H

#include "dialects/Loom/LoomDialect.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::loom::detail {
/// Infers the numpy-broadcast result type of elementwise `operands`; with
/// `boolResult` the element type is i1, else the operands' (which must agree).
LogicalResult inferBroadcast(std::optional<Location> loc, ValueRange operands,
                             bool boolResult, SmallVectorImpl<Type> &types);
/// Numpy broadcast of two shapes, or failure when they are incompatible.
FailureOr<SmallVector<int64_t>> broadcastShapes(ArrayRef<int64_t> a,
                                                ArrayRef<int64_t> b);
/// Result type of a reduction of `input` over `axes` (all when empty); the
/// element type is `elementType` when given, else the input's.
LogicalResult inferReduce(std::optional<Location> loc, Value input,
                          ArrayRef<int64_t> axes, bool keepdims,
                          Type elementType, SmallVectorImpl<Type> &types);
/// Result type of max/avg pooling.
LogicalResult inferPool(std::optional<Location> loc, Value input,
                        ArrayRef<int64_t> kernel, ArrayRef<int64_t> strides,
                        ArrayRef<int64_t> pads, ArrayRef<int64_t> dilations,
                        bool ceilMode, SmallVectorImpl<Type> &types);
/// Emits an error on `op` unless 0 <= axis < rank.
LogicalResult verifyAxis(Operation *op, int64_t axis, int64_t rank);
} // namespace mlir::loom::detail

#define GET_OP_CLASSES
#include "dialects/Loom/LoomOps.h.inc"

#endif // LOOM_DIALECTS_LOOM_LOOMOPS_H
