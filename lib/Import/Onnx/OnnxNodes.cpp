//===- OnnxNodes.cpp - translation of single ONNX nodes -------------------===//
//
// The node context (attribute access with ONNX's defaults, constant inputs,
// common builders) and the dispatch to per-op translators.
//
//===----------------------------------------------------------------------===//

#include "OnnxNodes.h"

#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace mlir::loom;
using namespace mlir::loom::onnx_import;

InFlightDiagnostic NodeContext::error() const {
  return emitError(loc) << proto.op_type() << " node \"" << name << "\": ";
}

const onnx::AttributeProto *NodeContext::attr(StringRef attrName) const {
  for (const auto &a : proto.attribute())
    if (a.name() == attrName)
      return &a;
  return nullptr;
}

int64_t NodeContext::getInt(StringRef attrName, int64_t dflt) const {
  const onnx::AttributeProto *a = attr(attrName);
  return a ? a->i() : dflt;
}

double NodeContext::getFloat(StringRef attrName, double dflt) const {
  const onnx::AttributeProto *a = attr(attrName);
  return a ? a->f() : dflt;
}

std::string NodeContext::getString(StringRef attrName, StringRef dflt) const {
  const onnx::AttributeProto *a = attr(attrName);
  return a ? a->s() : dflt.str();
}

SmallVector<int64_t> NodeContext::getInts(StringRef attrName,
                                          ArrayRef<int64_t> dflt) const {
  const onnx::AttributeProto *a = attr(attrName);
  if (!a)
    return SmallVector<int64_t>(dflt);
  return SmallVector<int64_t>(a->ints().begin(), a->ints().end());
}

LogicalResult NodeContext::checkAttrs(ArrayRef<StringRef> known) const {
  for (const auto &a : proto.attribute())
    if (!llvm::is_contained(known, StringRef(a.name())))
      return error() << "attribute \"" << a.name() << "\" is not supported";
  return success();
}

LogicalResult NodeContext::requireInputs(unsigned required) const {
  for (unsigned i = 0; i < required; ++i)
    if (!hasInput(i))
      return error() << "expected at least " << required
                     << " inputs, input #" << i << " is missing";
  return success();
}

DenseElementsAttr NodeContext::constantInput(unsigned i) const {
  DenseElementsAttr value;
  if (hasInput(i) && matchPattern(inputs[i], m_Constant(&value)))
    return value;
  return {};
}

FailureOr<SmallVector<int64_t>> NodeContext::intsInput(unsigned i,
                                                       StringRef what) const {
  DenseElementsAttr value = constantInput(i);
  if (!value || !value.getElementType().isInteger())
    return error() << what << " (input #" << i
                   << ") must be a compile-time integer constant";
  SmallVector<int64_t> result;
  for (const APInt &v : value.getValues<APInt>())
    result.push_back(v.getSExtValue());
  return result;
}

FailureOr<double> NodeContext::floatInput(unsigned i, StringRef what) const {
  DenseElementsAttr value = constantInput(i);
  if (!value || value.getNumElements() != 1)
    return error() << what << " (input #" << i
                   << ") must be a compile-time scalar constant";
  if (isa<FloatType>(value.getElementType()))
    return (*value.getValues<APFloat>().begin()).convertToDouble();
  return (double)(*value.getValues<APInt>().begin()).getSExtValue();
}

FailureOr<int64_t> NodeContext::axis(int64_t value, int64_t rank) const {
  if (value < -rank || value >= rank)
    return error() << "axis " << value << " is out of range for rank " << rank;
  return value < 0 ? value + rank : value;
}

Value NodeContext::constant(DenseElementsAttr value) const {
  return ConstantOp::create(b, loc, value);
}

Value NodeContext::scalar(Type elementType, double value) const {
  auto type = RankedTensorType::get({}, elementType);
  if (isa<FloatType>(elementType))
    return constant(DenseElementsAttr::get(
        type, b.getFloatAttr(elementType, value)));
  return constant(DenseElementsAttr::get(
      type, b.getIntegerAttr(elementType, (int64_t)value)));
}

Value NodeContext::reshape(Value input, ArrayRef<int64_t> shape) const {
  auto type = RankedTensorType::get(
      shape, cast<RankedTensorType>(input.getType()).getElementType());
  if (type == input.getType())
    return input;
  return b.createOrFold<ReshapeOp>(loc, type, input);
}

Value NodeContext::castTo(Value value, Type elementType) const {
  auto type = cast<RankedTensorType>(value.getType());
  if (type.getElementType() == elementType)
    return value;
  return CastOp::create(b, loc, type.clone(elementType), value);
}

SmallVector<Value> NodeContext::foldOrKeep(Operation *op) const {
  SmallVector<OpFoldResult> folded;
  if (failed(op->fold(folded)) || folded.empty())
    return SmallVector<Value>(op->getResults());
  SmallVector<Value> results;
  for (auto [result, fold] : llvm::zip(op->getResults(), folded)) {
    if (auto value = dyn_cast<Value>(fold)) {
      results.push_back(value);
      continue;
    }
    auto attr = dyn_cast<DenseElementsAttr>(cast<Attribute>(fold));
    if (!attr || attr.getType() != result.getType())
      return SmallVector<Value>(op->getResults());
    results.push_back(ConstantOp::create(b, loc, attr));
  }
  op->erase();
  return results;
}

static const TranslatorTable &translators() {
  static const TranslatorTable table = [] {
    TranslatorTable t;
    addElementwiseTranslators(t);
    addTensorTranslators(t);
    addNeuralTranslators(t);
    return t;
  }();
  return table;
}

bool mlir::loom::onnx_import::isSupportedOp(StringRef opType) {
  return translators().count(opType);
}

LogicalResult
mlir::loom::onnx_import::translateNode(NodeContext &node,
                                       SmallVectorImpl<Value> &outputs) {
  // Ops of other domains are keyed by their domain, "com.microsoft.MoE".
  std::string key = node.proto.domain().empty() ||
                            node.proto.domain() == "ai.onnx"
                        ? node.proto.op_type()
                        : node.proto.domain() + "." + node.proto.op_type();
  auto it = translators().find(key);
  if (it == translators().end())
    return node.error() << "op " << key << " is not supported by the importer";
  for (unsigned i = 0; i < node.numInputs(); ++i)
    if (node.hasInput(i) && !isa<RankedTensorType>(node.inputs[i].getType()))
      return node.error() << "input #" << i << " is not a ranked tensor";
  return it->second(node, outputs);
}
