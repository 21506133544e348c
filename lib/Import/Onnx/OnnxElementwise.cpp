//===- OnnxElementwise.cpp - elementwise ONNX ops -------------------------===//
//
// Unary and binary arithmetic, activations, comparisons, logic, Where, Cast,
// Clip and the variadic Sum/Mean/Max/Min, as ONNX opsets 11-17 define them.
//
//===----------------------------------------------------------------------===//

#include "OnnxNodes.h"

using namespace mlir;
using namespace mlir::loom;
using namespace mlir::loom::onnx_import;

namespace {

template <typename OpTy>
Translator unary() {
  return [](NodeContext &n, SmallVectorImpl<Value> &out) -> LogicalResult {
    if (failed(n.requireInputs(1)) || failed(n.checkAttrs({})))
      return failure();
    out.push_back(OpTy::create(n.b, n.loc, n.input(0)));
    return success();
  };
}

template <typename OpTy>
Translator binary() {
  return [](NodeContext &n, SmallVectorImpl<Value> &out) -> LogicalResult {
    if (failed(n.requireInputs(2)) || failed(n.checkAttrs({})))
      return failure();
    FailureOr<Value> result = n.build1<OpTy>(n.input(0), n.input(1));
    if (failed(result))
      return failure();
    out.push_back(*result);
    return success();
  };
}

/// Folds a variadic op (Sum, Max, ...) into a chain of binary ones; Mean
/// divides the sum by the operand count.
template <typename OpTy>
Translator variadic(bool mean = false) {
  return [mean](NodeContext &n, SmallVectorImpl<Value> &out) -> LogicalResult {
    if (failed(n.requireInputs(1)) || failed(n.checkAttrs({})))
      return failure();
    Value acc = n.input(0);
    for (unsigned i = 1; i < n.numInputs(); ++i) {
      FailureOr<Value> next = n.build1<OpTy>(acc, n.input(i));
      if (failed(next))
        return failure();
      acc = *next;
    }
    if (mean && n.numInputs() > 1) {
      auto type = cast<RankedTensorType>(acc.getType());
      FailureOr<Value> div = n.build1<DivOp>(
          acc, n.scalar(type.getElementType(), n.numInputs()));
      if (failed(div))
        return failure();
      acc = *div;
    }
    out.push_back(acc);
    return success();
  };
}

LogicalResult translateIdentity(NodeContext &n, SmallVectorImpl<Value> &out) {
  if (failed(n.requireInputs(1)))
    return failure();
  out.push_back(n.input(0));
  return success();
}

LogicalResult translatePow(NodeContext &n, SmallVectorImpl<Value> &out) {
  if (failed(n.requireInputs(2)) || failed(n.checkAttrs({})))
    return failure();
  // ONNX lets the exponent have another type; Loom casts it to the base's.
  Value exponent =
      n.castTo(n.input(1), n.inputType(0).getElementType());
  FailureOr<Value> result = n.build1<PowOp>(n.input(0), exponent);
  if (failed(result))
    return failure();
  out.push_back(*result);
  return success();
}

LogicalResult translateMod(NodeContext &n, SmallVectorImpl<Value> &out) {
  if (failed(n.requireInputs(2)) || failed(n.checkAttrs({"fmod"})))
    return failure();
  if (n.getInt("fmod", 0) != 0)
    return n.error() << "fmod = 1 (C's fmod semantics) is not supported";
  if (isa<FloatType>(n.inputType(0).getElementType()))
    return n.error() << "floating-point Mod requires fmod = 1, got fmod = 0";
  FailureOr<Value> result = n.build1<ModOp>(n.input(0), n.input(1));
  if (failed(result))
    return failure();
  out.push_back(*result);
  return success();
}

LogicalResult translateWhere(NodeContext &n, SmallVectorImpl<Value> &out) {
  if (failed(n.requireInputs(3)))
    return failure();
  FailureOr<Value> result =
      n.build1<WhereOp>(n.input(0), n.input(1), n.input(2));
  if (failed(result))
    return failure();
  out.push_back(*result);
  return success();
}

LogicalResult translateCast(NodeContext &n, SmallVectorImpl<Value> &out) {
  if (failed(n.requireInputs(1)) || failed(n.checkAttrs({"to", "saturate"})))
    return failure();
  if (!n.hasAttr("to"))
    return n.error() << "attribute \"to\" is required";
  FailureOr<Type> element =
      elementTypeOf(n.b.getContext(), n.getInt("to", 0), n.loc);
  if (failed(element))
    return failure();
  Value input = n.input(0);
  auto type = n.inputType(0).clone(*element);
  if (type == input.getType()) {
    out.push_back(input);
    return success();
  }
  out.push_back(n.foldOrKeep(CastOp::create(n.b, n.loc, type, input)).front());
  return success();
}

LogicalResult translateCastLike(NodeContext &n, SmallVectorImpl<Value> &out) {
  if (failed(n.requireInputs(2)))
    return failure();
  out.push_back(n.castTo(n.input(0), n.inputType(1).getElementType()));
  return success();
}

LogicalResult translateClip(NodeContext &n, SmallVectorImpl<Value> &out) {
  if (failed(n.requireInputs(1)) || failed(n.checkAttrs({})))
    return failure();
  // Since opset 11 the bounds are (optional, constant) inputs.
  FloatAttr minAttr, maxAttr;
  if (n.hasInput(1)) {
    FailureOr<double> v = n.floatInput(1, "min");
    if (failed(v))
      return failure();
    minAttr = n.b.getF64FloatAttr(*v);
  }
  if (n.hasInput(2)) {
    FailureOr<double> v = n.floatInput(2, "max");
    if (failed(v))
      return failure();
    maxAttr = n.b.getF64FloatAttr(*v);
  }
  out.push_back(ClipOp::create(n.b, n.loc, n.input(0), minAttr, maxAttr));
  return success();
}

LogicalResult translateLeakyRelu(NodeContext &n, SmallVectorImpl<Value> &out) {
  if (failed(n.requireInputs(1)) || failed(n.checkAttrs({"alpha"})))
    return failure();
  out.push_back(LeakyReluOp::create(
      n.b, n.loc, n.input(0), n.b.getF64FloatAttr(n.getFloat("alpha", 0.01))));
  return success();
}

LogicalResult translateElu(NodeContext &n, SmallVectorImpl<Value> &out) {
  if (failed(n.requireInputs(1)) || failed(n.checkAttrs({"alpha"})))
    return failure();
  out.push_back(EluOp::create(n.b, n.loc, n.input(0),
                              n.b.getF64FloatAttr(n.getFloat("alpha", 1.0))));
  return success();
}

LogicalResult translateHardSigmoid(NodeContext &n,
                                   SmallVectorImpl<Value> &out) {
  if (failed(n.requireInputs(1)) || failed(n.checkAttrs({"alpha", "beta"})))
    return failure();
  out.push_back(HardSigmoidOp::create(
      n.b, n.loc, n.input(0), n.b.getF64FloatAttr(n.getFloat("alpha", 0.2)),
      n.b.getF64FloatAttr(n.getFloat("beta", 0.5))));
  return success();
}

/// PRelu(x, slope) = max(x, 0) + slope * min(x, 0), slope broadcasting to x.
LogicalResult translatePRelu(NodeContext &n, SmallVectorImpl<Value> &out) {
  if (failed(n.requireInputs(2)) || failed(n.checkAttrs({})))
    return failure();
  Value x = n.input(0);
  Value zero = n.scalar(n.inputType(0).getElementType(), 0.0);
  FailureOr<Value> pos = n.build1<MaxOp>(x, zero);
  FailureOr<Value> neg = n.build1<MinOp>(x, zero);
  if (failed(pos) || failed(neg))
    return failure();
  FailureOr<Value> scaled = n.build1<MulOp>(n.input(1), *neg);
  if (failed(scaled))
    return failure();
  FailureOr<Value> sum = n.build1<AddOp>(*pos, *scaled);
  if (failed(sum))
    return failure();
  out.push_back(*sum);
  return success();
}

} // namespace

void mlir::loom::onnx_import::addElementwiseTranslators(TranslatorTable &t) {
  t["Identity"] = translateIdentity;
  t["Neg"] = unary<NegOp>();
  t["Abs"] = unary<AbsOp>();
  t["Sign"] = unary<SignOp>();
  t["Exp"] = unary<ExpOp>();
  t["Log"] = unary<LogOp>();
  t["Sqrt"] = unary<SqrtOp>();
  t["Reciprocal"] = unary<ReciprocalOp>();
  t["Tanh"] = unary<TanhOp>();
  t["Sigmoid"] = unary<SigmoidOp>();
  t["Relu"] = unary<ReluOp>();
  t["Erf"] = unary<ErfOp>();
  t["Floor"] = unary<FloorOp>();
  t["Ceil"] = unary<CeilOp>();
  t["Round"] = unary<RoundOp>();
  t["Sin"] = unary<SinOp>();
  t["Cos"] = unary<CosOp>();
  t["Softplus"] = unary<SoftplusOp>();
  t["Softsign"] = unary<SoftsignOp>();
  t["Not"] = unary<NotOp>();
  t["LeakyRelu"] = translateLeakyRelu;
  t["Elu"] = translateElu;
  t["HardSigmoid"] = translateHardSigmoid;
  t["PRelu"] = translatePRelu;
  t["Clip"] = translateClip;
  t["Add"] = binary<AddOp>();
  t["Sub"] = binary<SubOp>();
  t["Mul"] = binary<MulOp>();
  t["Div"] = binary<DivOp>();
  t["Pow"] = translatePow;
  t["Mod"] = translateMod;
  t["And"] = binary<AndOp>();
  t["Or"] = binary<OrOp>();
  t["Xor"] = binary<XorOp>();
  t["Equal"] = binary<EqualOp>();
  t["Less"] = binary<LessOp>();
  t["LessOrEqual"] = binary<LessEqualOp>();
  t["Greater"] = binary<GreaterOp>();
  t["GreaterOrEqual"] = binary<GreaterEqualOp>();
  t["Where"] = translateWhere;
  t["Cast"] = translateCast;
  t["CastLike"] = translateCastLike;
  t["Sum"] = variadic<AddOp>();
  t["Mean"] = variadic<AddOp>(/*mean=*/true);
  t["Max"] = variadic<MaxOp>();
  t["Min"] = variadic<MinOp>();
}
