//===- LoomDialect.cpp - the loom dialect ---------------------------------===//
//
// Registers the loom ops and attributes and materializes folded constants.
//
//===----------------------------------------------------------------------===//

#include "dialects/Loom/LoomOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::loom;

#include "dialects/Loom/LoomDialect.cpp.inc"

void LoomDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/Loom/LoomOps.cpp.inc"
      >();
  registerAttributes();
  registerGradientModels(getContext());
}

void ConstantOp::build(OpBuilder &builder, OperationState &state,
                       RankedTensorType type, double value) {
  Type element = type.getElementType();
  Attribute splat =
      isa<FloatType>(element)
          ? Attribute(builder.getFloatAttr(element, value))
          : Attribute(builder.getIntegerAttr(element, (int64_t)value));
  build(builder, state, type,
        cast<ElementsAttr>(DenseElementsAttr::get(type, splat)));
}

Operation *LoomDialect::materializeConstant(OpBuilder &builder, Attribute value,
                                            Type type, Location loc) {
  auto elements = dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type)
    return nullptr;
  return ConstantOp::create(builder, loc, type, elements);
}

FloatType mlir::loom::lowPrecisionType(MLIRContext *ctx, StringRef name) {
  if (name == "bf16")
    return BFloat16Type::get(ctx);
  if (name == "fp16")
    return Float16Type::get(ctx);
  return {};
}

StringRef mlir::loom::onnxNodeOf(Location loc) {
  if (auto name = dyn_cast<NameLoc>(loc))
    return name.getName().getValue();
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location inner : fused.getLocations())
      if (StringRef name = onnxNodeOf(inner); !name.empty())
        return name;
  return "";
}
