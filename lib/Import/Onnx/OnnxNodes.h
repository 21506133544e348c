//===- OnnxNodes.h - translation of single ONNX nodes -----------*- C++ -*-===//
//
// What a node translator sees of an ONNX node (attributes with ONNX's
// defaults, inputs as values or folded constants, the types ONNX infers for
// its outputs) and the table of translators, split over several files by op
// family. Internal to the importer; compiled with exceptions.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_LIB_IMPORT_ONNX_ONNXNODES_H
#define LOOM_LIB_IMPORT_ONNX_ONNXNODES_H

#include "dialects/Loom/LoomOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/StringMap.h"

#include <functional>
#include <onnx/onnx_pb.h>

namespace mlir::loom::onnx_import {

/// Maps an ONNX TensorProto data type to an MLIR element type.
FailureOr<Type> elementTypeOf(MLIRContext *ctx, int32_t type, Location loc);
/// Reads an ONNX tensor (checking its data against its dims).
FailureOr<DenseElementsAttr> tensorToAttr(MLIRContext *ctx,
                                          const onnx::TensorProto &tensor,
                                          Location loc);

/// One ONNX node being translated.
class NodeContext {
public:
  NodeContext(const onnx::NodeProto &proto, StringRef name, Location loc,
              OpBuilder &builder, ArrayRef<Value> inputs,
              ArrayRef<RankedTensorType> expected, int64_t opset)
      : proto(proto), name(name), loc(loc), b(builder), inputs(inputs),
        expected(expected), opset(opset) {}

  /// Starts an error naming the node and its op.
  InFlightDiagnostic error() const;

  // Attributes, with ONNX's defaults.
  const onnx::AttributeProto *attr(StringRef attrName) const;
  bool hasAttr(StringRef attrName) const { return attr(attrName); }
  int64_t getInt(StringRef attrName, int64_t dflt) const;
  double getFloat(StringRef attrName, double dflt) const;
  std::string getString(StringRef attrName, StringRef dflt) const;
  SmallVector<int64_t> getInts(StringRef attrName,
                               ArrayRef<int64_t> dflt = {}) const;
  /// Fails (with an error) on attributes other than `known`.
  LogicalResult checkAttrs(ArrayRef<StringRef> known) const;

  // Inputs.
  unsigned numInputs() const { return inputs.size(); }
  bool hasInput(unsigned i) const { return i < inputs.size() && inputs[i]; }
  Value input(unsigned i) const { return hasInput(i) ? inputs[i] : Value(); }
  RankedTensorType inputType(unsigned i) const {
    return cast<RankedTensorType>(inputs[i].getType());
  }
  /// Fails unless inputs [0, required) are present.
  LogicalResult requireInputs(unsigned required) const;
  /// The constant value of input i, or null when it is not a constant.
  DenseElementsAttr constantInput(unsigned i) const;
  /// The integer values of constant input i; fails with an error naming
  /// `what` when the input is not a compile-time constant.
  FailureOr<SmallVector<int64_t>> intsInput(unsigned i, StringRef what) const;
  FailureOr<double> floatInput(unsigned i, StringRef what) const;

  // Outputs.
  unsigned numOutputs() const { return proto.output_size(); }
  bool wantsOutput(unsigned i) const {
    return i < (unsigned)proto.output_size() && !proto.output(i).empty();
  }
  /// The type ONNX's shape inference gives output i, or null.
  RankedTensorType expectedType(unsigned i) const {
    return i < expected.size() ? expected[i] : RankedTensorType();
  }

  /// Normalizes an ONNX axis (negative counts from the end) against `rank`.
  FailureOr<int64_t> axis(int64_t value, int64_t rank) const;

  // Builders used by many translators.
  Value constant(DenseElementsAttr value) const;
  Value scalar(Type elementType, double value) const;
  Value reshape(Value input, ArrayRef<int64_t> shape) const;
  /// Casts `value` to `elementType` when it differs.
  Value castTo(Value value, Type elementType) const;

  /// Builds `OpTy` with inferred result types and folds it when its operands
  /// are constants. A type error is reported at the node (never a crash).
  template <typename OpTy, typename... Args>
  FailureOr<SmallVector<Value>> build(Args &&...args) const {
    OperationState state(loc, OpTy::getOperationName());
    OpTy::build(b, state, TypeRange(), std::forward<Args>(args)...);
    SmallVector<Type> types;
    std::string message;
    LogicalResult inferred = failure();
    {
      ScopedDiagnosticHandler capture(b.getContext(), [&](Diagnostic &diag) {
        message = diag.str();
        return success();
      });
      inferred = OpTy::inferReturnTypes(
          b.getContext(), loc, state.operands,
          state.attributes.getDictionary(b.getContext()),
          state.getRawProperties(), state.regions, types);
    }
    if (failed(inferred))
      return error() << message;
    state.addTypes(types);
    return foldOrKeep(b.create(state));
  }

  /// `build` for single-result ops.
  template <typename OpTy, typename... Args>
  FailureOr<Value> build1(Args &&...args) const {
    FailureOr<SmallVector<Value>> results =
        build<OpTy>(std::forward<Args>(args)...);
    if (failed(results))
      return failure();
    return results->front();
  }

  /// Folds `op` when possible (replacing it by constants or existing values),
  /// otherwise returns its results.
  SmallVector<Value> foldOrKeep(Operation *op) const;

  const onnx::NodeProto &proto;
  std::string name;
  Location loc;
  OpBuilder &b;
  ArrayRef<Value> inputs;
  ArrayRef<RankedTensorType> expected;
  int64_t opset;
};

using Translator =
    std::function<LogicalResult(NodeContext &, SmallVectorImpl<Value> &)>;
using TranslatorTable = llvm::StringMap<Translator>;

/// Adds translators by family.
void addElementwiseTranslators(TranslatorTable &table);
void addTensorTranslators(TranslatorTable &table);
void addNeuralTranslators(TranslatorTable &table);

/// Translates one node, or reports an unsupported op.
LogicalResult translateNode(NodeContext &node, SmallVectorImpl<Value> &outputs);

/// True when the importer has a translator for `opType`.
bool isSupportedOp(StringRef opType);

} // namespace mlir::loom::onnx_import

#endif // LOOM_LIB_IMPORT_ONNX_ONNXNODES_H
