//===- LoomInterfaces.cpp - op interfaces of the loom dialect -------------===//
//
// Default implementations of the cost interface, shared by ops that do not
// define their own.
//
//===----------------------------------------------------------------------===//

#include "dialects/Loom/LoomDialect.h"

using namespace mlir;

int64_t mlir::loom::detail::tensorBytes(Type type) {
  auto shaped = dyn_cast<RankedTensorType>(type);
  if (!shaped || !shaped.hasStaticShape())
    return 0;
  Type element = shaped.getElementType();
  if (!element.isIntOrFloat())
    return 0;
  int64_t bits = element.getIntOrFloatBitWidth();
  return shaped.getNumElements() * ((bits + 7) / 8);
}

int64_t mlir::loom::detail::reducedCount(RankedTensorType type,
                                         ArrayRef<int64_t> axes) {
  int64_t count = 1;
  for (int64_t d = 0; d < type.getRank(); ++d)
    if (axes.empty() || llvm::is_contained(axes, d))
      count *= type.getDimSize(d);
  return count;
}

int64_t mlir::loom::detail::numElements(Type type) {
  auto shaped = dyn_cast<RankedTensorType>(type);
  return shaped && shaped.hasStaticShape() ? shaped.getNumElements() : 0;
}

int64_t mlir::loom::detail::operandBytes(Operation *op) {
  int64_t bytes = 0;
  for (Type type : op->getOperandTypes())
    bytes += tensorBytes(type);
  return bytes;
}

int64_t mlir::loom::detail::resultBytes(Operation *op) {
  int64_t bytes = 0;
  for (Type type : op->getResultTypes())
    bytes += tensorBytes(type);
  return bytes;
}

int64_t mlir::loom::detail::defaultFlops(Operation *op) {
  int64_t flops = 0;
  for (Type type : op->getResultTypes())
    flops += numElements(type);
  return flops;
}

#include "dialects/Loom/LoomInterfaces.cpp.inc"
