//===- LoomToLinalgElementwise.cpp - elementwise loom ops to linalg -------===//
//
// Every elementwise loom op (unary, binary with broadcasting, comparisons,
// where, cast) becomes one linalg.generic whose body is the scalar op in
// arith/math. Elementwise fusion later merges chains of them.
//
//===----------------------------------------------------------------------===//

#include "LoomToLinalg.h"

#include "dialects/Loom/LoomOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

using namespace mlir;
using namespace mlir::loom;
using namespace mlir::loom::lowering;

AffineMap lowering::broadcastMap(RankedTensorType operand,
                                 RankedTensorType result) {
  MLIRContext *ctx = operand.getContext();
  int64_t rank = result.getRank(), operandRank = operand.getRank();
  SmallVector<AffineExpr> exprs;
  for (int64_t j = 0; j < operandRank; ++j) {
    int64_t d = j + rank - operandRank;
    if (operand.getDimSize(j) == 1 && result.getDimSize(d) != 1)
      exprs.push_back(getAffineConstantExpr(0, ctx));
    else
      exprs.push_back(getAffineDimExpr(d, ctx));
  }
  return AffineMap::get(rank, 0, exprs, ctx);
}

Value lowering::emptyTensor(OpBuilder &b, Location loc, RankedTensorType type) {
  return tensor::EmptyOp::create(b, loc, type.getShape(),
                                 type.getElementType());
}

Value lowering::filledTensor(OpBuilder &b, Location loc, RankedTensorType type,
                             TypedAttr value) {
  Value init = arith::ConstantOp::create(b, loc, value);
  return linalg::FillOp::create(b, loc, init, emptyTensor(b, loc, type))
      .getResult(0);
}

Value lowering::scalarConstant(OpBuilder &b, Location loc, Type type,
                               double value) {
  if (isa<FloatType>(type))
    return arith::ConstantOp::create(b, loc, b.getFloatAttr(type, value));
  return arith::ConstantOp::create(b, loc,
                                   b.getIntegerAttr(type, (int64_t)value));
}

Value lowering::reciprocalSqrt(OpBuilder &b, Location loc, Value x) {
  return arith::DivFOp::create(b, loc, scalarConstant(b, loc, x.getType(), 1.0),
                               math::SqrtOp::create(b, loc, x));
}

/// Converts scalar `v` to `to` with ONNX Cast semantics.
static Value castScalar(OpBuilder &b, Location loc, Value v, Type to) {
  Type from = v.getType();
  if (from == to)
    return v;
  if (to.isInteger(1)) {
    Value zero = scalarConstant(b, loc, from, 0);
    if (isa<FloatType>(from))
      return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNE, v, zero);
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, v, zero);
  }
  auto fromFloat = dyn_cast<FloatType>(from);
  auto toFloat = dyn_cast<FloatType>(to);
  if (fromFloat && toFloat)
    return fromFloat.getWidth() < toFloat.getWidth()
               ? (Value)arith::ExtFOp::create(b, loc, to, v)
               : (Value)arith::TruncFOp::create(b, loc, to, v);
  if (toFloat)
    return from.isInteger(1) ? (Value)arith::UIToFPOp::create(b, loc, to, v)
                             : (Value)arith::SIToFPOp::create(b, loc, to, v);
  if (fromFloat)
    return arith::FPToSIOp::create(b, loc, to, v);
  unsigned fromWidth = from.getIntOrFloatBitWidth(),
           toWidth = to.getIntOrFloatBitWidth();
  if (fromWidth > toWidth)
    return arith::TruncIOp::create(b, loc, to, v);
  return from.isInteger(1) ? (Value)arith::ExtUIOp::create(b, loc, to, v)
                           : (Value)arith::ExtSIOp::create(b, loc, to, v);
}

Value lowering::emitScalarOp(OpBuilder &b, Location loc, Operation *op,
                             ValueRange args, Type resultElement) {
  Type type = args.empty() ? resultElement : args.front().getType();
  bool isFloat = isa<FloatType>(type);
  auto cst = [&](double v) { return scalarConstant(b, loc, type, v); };
  auto x = [&]() { return args[0]; };
  auto y = [&]() { return args[1]; };
  auto fAttr = [](FloatAttr a) { return a.getValueAsDouble(); };
  // Binary arithmetic on floats or signed integers.
  auto arith2 = [&](auto floatOp, auto intOp) -> Value {
    using F = decltype(floatOp);
    using I = decltype(intOp);
    if (isFloat)
      return F::create(b, loc, x(), y());
    return I::create(b, loc, x(), y());
  };
  auto compare = [&](arith::CmpFPredicate f, arith::CmpIPredicate i) -> Value {
    if (isFloat)
      return arith::CmpFOp::create(b, loc, f, x(), y());
    return arith::CmpIOp::create(b, loc, i, x(), y());
  };
  auto sigmoid = [&](Value v) -> Value {
    Value neg = arith::NegFOp::create(b, loc, v);
    Value e = math::ExpOp::create(b, loc, neg);
    Value denom = arith::AddFOp::create(b, loc, cst(1.0), e);
    return arith::DivFOp::create(b, loc, cst(1.0), denom);
  };

  return TypeSwitch<Operation *, Value>(op)
      .Case([&](NegOp) -> Value {
        if (isFloat)
          return arith::NegFOp::create(b, loc, x());
        return arith::SubIOp::create(b, loc, cst(0), x());
      })
      .Case([&](AbsOp) -> Value {
        if (isFloat)
          return math::AbsFOp::create(b, loc, x());
        return math::AbsIOp::create(b, loc, x());
      })
      .Case([&](SignOp) -> Value {
        Value zero = cst(0);
        Value gt = isFloat ? (Value)arith::CmpFOp::create(
                                 b, loc, arith::CmpFPredicate::OGT, x(), zero)
                           : (Value)arith::CmpIOp::create(
                                 b, loc, arith::CmpIPredicate::sgt, x(), zero);
        Value lt = isFloat ? (Value)arith::CmpFOp::create(
                                 b, loc, arith::CmpFPredicate::OLT, x(), zero)
                           : (Value)arith::CmpIOp::create(
                                 b, loc, arith::CmpIPredicate::slt, x(), zero);
        Value negOrZero = arith::SelectOp::create(b, loc, lt, cst(-1), zero);
        return arith::SelectOp::create(b, loc, gt, cst(1), negOrZero);
      })
      .Case([&](ExpOp) -> Value { return math::ExpOp::create(b, loc, x()); })
      .Case([&](LogOp) -> Value { return math::LogOp::create(b, loc, x()); })
      .Case([&](SqrtOp) -> Value { return math::SqrtOp::create(b, loc, x()); })
      .Case([&](RsqrtOp) -> Value { return reciprocalSqrt(b, loc, x()); })
      .Case([&](ReciprocalOp) -> Value {
        return arith::DivFOp::create(b, loc, cst(1.0), x());
      })
      .Case([&](TanhOp) -> Value { return math::TanhOp::create(b, loc, x()); })
      .Case([&](SigmoidOp) -> Value { return sigmoid(x()); })
      .Case([&](ReluOp) -> Value {
        if (isFloat)
          return arith::MaximumFOp::create(b, loc, x(), cst(0));
        return arith::MaxSIOp::create(b, loc, x(), cst(0));
      })
      .Case([&](ErfOp) -> Value { return math::ErfOp::create(b, loc, x()); })
      .Case([&](FloorOp) -> Value { return math::FloorOp::create(b, loc, x()); })
      .Case([&](CeilOp) -> Value { return math::CeilOp::create(b, loc, x()); })
      .Case([&](RoundOp) -> Value {
        return math::RoundEvenOp::create(b, loc, x());
      })
      .Case([&](SinOp) -> Value { return math::SinOp::create(b, loc, x()); })
      .Case([&](CosOp) -> Value { return math::CosOp::create(b, loc, x()); })
      .Case([&](SoftplusOp) -> Value {
        return math::Log1pOp::create(b, loc, math::ExpOp::create(b, loc, x()));
      })
      .Case([&](SoftsignOp) -> Value {
        Value denom = arith::AddFOp::create(
            b, loc, cst(1.0), math::AbsFOp::create(b, loc, x()));
        return arith::DivFOp::create(b, loc, x(), denom);
      })
      .Case([&](NotOp) -> Value {
        return arith::XOrIOp::create(b, loc, x(), cst(1));
      })
      .Case([&](GeluOp gelu) -> Value {
        Value half = arith::MulFOp::create(b, loc, x(), cst(0.5));
        Value inner;
        if (gelu.getApproximate()) {
          // 0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715x^3)))
          Value x3 = arith::MulFOp::create(
              b, loc, x(), arith::MulFOp::create(b, loc, x(), x()));
          Value poly = arith::AddFOp::create(
              b, loc, x(), arith::MulFOp::create(b, loc, x3, cst(0.044715)));
          inner = math::TanhOp::create(
              b, loc,
              arith::MulFOp::create(b, loc, poly, cst(std::sqrt(2.0 / M_PI))));
        } else {
          inner = math::ErfOp::create(
              b, loc, arith::MulFOp::create(b, loc, x(), cst(M_SQRT1_2)));
        }
        return arith::MulFOp::create(
            b, loc, half, arith::AddFOp::create(b, loc, cst(1.0), inner));
      })
      .Case([&](LeakyReluOp lr) -> Value {
        Value neg = arith::MulFOp::create(b, loc, x(), cst(fAttr(lr.getAlphaAttr())));
        Value ge = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGE, x(),
                                         cst(0));
        return arith::SelectOp::create(b, loc, ge, x(), neg);
      })
      .Case([&](EluOp elu) -> Value {
        Value em1 = math::ExpM1Op::create(b, loc, x());
        Value neg = arith::MulFOp::create(b, loc, em1, cst(fAttr(elu.getAlphaAttr())));
        Value gt = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, x(),
                                         cst(0));
        return arith::SelectOp::create(b, loc, gt, x(), neg);
      })
      .Case([&](HardSigmoidOp hs) -> Value {
        Value lin = arith::AddFOp::create(
            b, loc,
            arith::MulFOp::create(b, loc, x(), cst(fAttr(hs.getAlphaAttr()))),
            cst(fAttr(hs.getBetaAttr())));
        Value lo = arith::MaximumFOp::create(b, loc, lin, cst(0));
        return arith::MinimumFOp::create(b, loc, lo, cst(1));
      })
      .Case([&](ClipOp clip) -> Value {
        Value v = x();
        if (clip.getMinAttr()) {
          Value lo = cst(fAttr(clip.getMinAttr()));
          v = isFloat ? (Value)arith::MaximumFOp::create(b, loc, v, lo)
                      : (Value)arith::MaxSIOp::create(b, loc, v, lo);
        }
        if (clip.getMaxAttr()) {
          Value hi = cst(fAttr(clip.getMaxAttr()));
          v = isFloat ? (Value)arith::MinimumFOp::create(b, loc, v, hi)
                      : (Value)arith::MinSIOp::create(b, loc, v, hi);
        }
        return v;
      })
      .Case([&](CastOp) -> Value {
        return castScalar(b, loc, x(), resultElement);
      })
      .Case([&](AddOp) { return arith2(arith::AddFOp(), arith::AddIOp()); })
      .Case([&](SubOp) { return arith2(arith::SubFOp(), arith::SubIOp()); })
      .Case([&](MulOp) { return arith2(arith::MulFOp(), arith::MulIOp()); })
      .Case([&](DivOp) { return arith2(arith::DivFOp(), arith::DivSIOp()); })
      .Case([&](MaxOp) { return arith2(arith::MaximumFOp(), arith::MaxSIOp()); })
      .Case([&](MinOp) { return arith2(arith::MinimumFOp(), arith::MinSIOp()); })
      .Case([&](PowOp) -> Value {
        if (isFloat)
          return math::PowFOp::create(b, loc, x(), y());
        return math::IPowIOp::create(b, loc, x(), y());
      })
      .Case([&](ModOp) -> Value {
        // Python's %: the remainder takes the divisor's sign.
        Value r = arith::RemSIOp::create(b, loc, x(), y());
        Value zero = cst(0);
        Value nonZero =
            arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, r, zero);
        Value rNeg =
            arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, r, zero);
        Value yNeg =
            arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, y(), zero);
        Value signsDiffer = arith::XOrIOp::create(b, loc, rNeg, yNeg);
        Value fix = arith::AndIOp::create(b, loc, nonZero, signsDiffer);
        return arith::SelectOp::create(
            b, loc, fix, arith::AddIOp::create(b, loc, r, y()), r);
      })
      .Case([&](AndOp) -> Value { return arith::AndIOp::create(b, loc, x(), y()); })
      .Case([&](OrOp) -> Value { return arith::OrIOp::create(b, loc, x(), y()); })
      .Case([&](XorOp) -> Value { return arith::XOrIOp::create(b, loc, x(), y()); })
      .Case([&](EqualOp) {
        return compare(arith::CmpFPredicate::OEQ, arith::CmpIPredicate::eq);
      })
      .Case([&](LessOp) {
        return compare(arith::CmpFPredicate::OLT, arith::CmpIPredicate::slt);
      })
      .Case([&](LessEqualOp) {
        return compare(arith::CmpFPredicate::OLE, arith::CmpIPredicate::sle);
      })
      .Case([&](GreaterOp) {
        return compare(arith::CmpFPredicate::OGT, arith::CmpIPredicate::sgt);
      })
      .Case([&](GreaterEqualOp) {
        return compare(arith::CmpFPredicate::OGE, arith::CmpIPredicate::sge);
      })
      .Case([&](WhereOp) -> Value {
        return arith::SelectOp::create(b, loc, args[0], args[1], args[2]);
      })
      .Default([](Operation *) { return Value(); });
}

namespace {

/// Lowers any elementwise loom op to a broadcasting linalg.generic.
struct ElementwiseToGeneric : RewritePattern {
  ElementwiseToGeneric(MLIRContext *ctx)
      : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/1, ctx) {}

  LogicalResult matchAndRewrite(Operation *op,
                                PatternRewriter &rewriter) const override {
    if (!isa<LoomDialect>(op->getDialect()) || op->getNumResults() != 1)
      return rewriter.notifyMatchFailure(op, "not a single-result loom op");
    auto resultType = dyn_cast<RankedTensorType>(op->getResult(0).getType());
    if (!resultType || !resultType.hasStaticShape())
      return rewriter.notifyMatchFailure(op, "needs a static result");
    bool elementwise =
        op->hasTrait<OpTrait::Elementwise>() ||
        isa<AddOp, SubOp, MulOp, DivOp, PowOp, MaxOp, MinOp, ModOp, AndOp,
            OrOp, XorOp, EqualOp, LessOp, LessEqualOp, GreaterOp,
            GreaterEqualOp, WhereOp>(op);
    if (!elementwise)
      return rewriter.notifyMatchFailure(op, "not elementwise");

    Location loc = op->getLoc();
    SmallVector<AffineMap> maps;
    for (Value operand : op->getOperands())
      maps.push_back(
          broadcastMap(cast<RankedTensorType>(operand.getType()), resultType));
    maps.push_back(AffineMap::getMultiDimIdentityMap(resultType.getRank(),
                                                     getContext()));
    SmallVector<utils::IteratorType> iterators(resultType.getRank(),
                                               utils::IteratorType::parallel);
    Type resultElement = resultType.getElementType();
    bool emitted = true;
    auto generic = linalg::GenericOp::create(
        rewriter, loc, TypeRange{resultType}, op->getOperands(),
        ValueRange{emptyTensor(rewriter, loc, resultType)}, maps, iterators,
        [&](OpBuilder &b, Location nested, ValueRange args) {
          Value result = emitScalarOp(b, nested, op, args.drop_back(),
                                      resultElement);
          if (!result) {
            emitted = false;
            result = args.back();
          }
          linalg::YieldOp::create(b, nested, result);
        });
    if (!emitted) {
      rewriter.eraseOp(generic);
      return rewriter.notifyMatchFailure(op, "no scalar lowering");
    }
    rewriter.replaceOp(op, generic.getResults());
    return success();
  }
};

} // namespace

void lowering::populateElementwisePatterns(RewritePatternSet &patterns) {
  patterns.add<ElementwiseToGeneric>(patterns.getContext());
}
