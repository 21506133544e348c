//===- LoomToLinalg.cpp - loom ops to linalg on tensors -------------------===//
//
// Contractions, reductions, normalizations and data movement lowered to
// linalg.generic (with reduction iterators where they reduce), linalg
// named ops and tensor slicing ops, plus the pass that drives all lowering
// patterns and reports the loom ops that have no CPU lowering yet.
//
//===----------------------------------------------------------------------===//

#include "LoomToLinalg.h"
#include "passes/Conversion/CollectivesToRuntime.h"

#include "dialects/Loom/LoomOps.h"
#include "dialects/Loom/MoeExpansion.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <cmath>
#include <limits>

namespace mlir::loom {
#define GEN_PASS_DEF_CONVERTLOOMTOLINALGPASS
#define GEN_PASS_DEF_LOOMEXPOSEENTRYPOINTSPASS
#define GEN_PASS_DEF_LOOMMEMREFCOPYTOLINALGPASS
#define GEN_PASS_DEF_LOOMDUPLICATEFILLSPASS
#define GEN_PASS_DEF_LOOMCOPYREPEATEDRESULTSPASS
#define GEN_PASS_DEF_LOOMMATMULTOKERNELPASS
#define GEN_PASS_DEF_LOOMFUSEELEMENTWISEPASS
#include "passes/Conversion/Passes.h.inc"
} // namespace mlir::loom

using namespace mlir;
using namespace mlir::loom;
using namespace mlir::loom::lowering;

namespace {

using BodyFn = function_ref<Value(OpBuilder &, Location, ValueRange)>;

/// A parallel linalg.generic producing `resultType` from `inputs` broadcast
/// into it, with `body` computing each element.
Value mapElements(OpBuilder &b, Location loc, ValueRange inputs,
                  RankedTensorType resultType, BodyFn body) {
  SmallVector<AffineMap> maps;
  for (Value input : inputs)
    maps.push_back(
        broadcastMap(cast<RankedTensorType>(input.getType()), resultType));
  maps.push_back(
      AffineMap::getMultiDimIdentityMap(resultType.getRank(), b.getContext()));
  SmallVector<utils::IteratorType> iterators(resultType.getRank(),
                                             utils::IteratorType::parallel);
  return linalg::GenericOp::create(
             b, loc, TypeRange{resultType}, inputs,
             ValueRange{emptyTensor(b, loc, resultType)}, maps, iterators,
             [&](OpBuilder &nb, Location nl, ValueRange args) {
               linalg::YieldOp::create(nb, nl,
                                       body(nb, nl, args.drop_back()));
             })
      .getResult(0);
}

enum class Combine { Sum, Max, Min, Prod };

/// The identity element of `kind` for `type`.
TypedAttr identityOf(Builder &b, Combine kind, Type type) {
  if (auto f = dyn_cast<FloatType>(type)) {
    const llvm::fltSemantics &sem = f.getFloatSemantics();
    switch (kind) {
    case Combine::Sum:
      return b.getFloatAttr(type, 0.0);
    case Combine::Prod:
      return b.getFloatAttr(type, 1.0);
    case Combine::Max:
      return b.getFloatAttr(type, APFloat::getInf(sem, /*Negative=*/true));
    case Combine::Min:
      return b.getFloatAttr(type, APFloat::getInf(sem, /*Negative=*/false));
    }
  }
  unsigned width = type.getIntOrFloatBitWidth();
  switch (kind) {
  case Combine::Sum:
    return b.getIntegerAttr(type, 0);
  case Combine::Prod:
    return b.getIntegerAttr(type, 1);
  case Combine::Max:
    return b.getIntegerAttr(type, APInt::getSignedMinValue(width));
  case Combine::Min:
    return b.getIntegerAttr(type, APInt::getSignedMaxValue(width));
  }
  llvm_unreachable("unknown combine kind");
}

Value combine(OpBuilder &b, Location loc, Combine kind, Value acc, Value x) {
  bool isFloat = isa<FloatType>(x.getType());
  switch (kind) {
  case Combine::Sum:
    return isFloat ? (Value)arith::AddFOp::create(b, loc, acc, x)
                   : (Value)arith::AddIOp::create(b, loc, acc, x);
  case Combine::Prod:
    return isFloat ? (Value)arith::MulFOp::create(b, loc, acc, x)
                   : (Value)arith::MulIOp::create(b, loc, acc, x);
  case Combine::Max:
    return isFloat ? (Value)arith::MaximumFOp::create(b, loc, acc, x)
                   : (Value)arith::MaxSIOp::create(b, loc, acc, x);
  case Combine::Min:
    return isFloat ? (Value)arith::MinimumFOp::create(b, loc, acc, x)
                   : (Value)arith::MinSIOp::create(b, loc, acc, x);
  }
  llvm_unreachable("unknown combine kind");
}

/// Reduces `input` over `axes` (all when empty) with `kind`.
Value reduce(OpBuilder &b, Location loc, Value input, ArrayRef<int64_t> axes,
             bool keepdims, Combine kind) {
  auto type = cast<RankedTensorType>(input.getType());
  int64_t rank = type.getRank();
  auto reduced = [&](int64_t d) {
    return axes.empty() || llvm::is_contained(axes, d);
  };
  SmallVector<int64_t> shape;
  SmallVector<AffineExpr> outExprs;
  SmallVector<utils::IteratorType> iterators;
  for (int64_t d = 0; d < rank; ++d) {
    bool r = reduced(d);
    iterators.push_back(r ? utils::IteratorType::reduction
                          : utils::IteratorType::parallel);
    if (!r) {
      shape.push_back(type.getDimSize(d));
      outExprs.push_back(b.getAffineDimExpr(d));
    } else if (keepdims) {
      shape.push_back(1);
      outExprs.push_back(b.getAffineConstantExpr(0));
    }
  }
  auto resultType = RankedTensorType::get(shape, type.getElementType());
  Value init = filledTensor(b, loc, resultType,
                            identityOf(b, kind, type.getElementType()));
  SmallVector<AffineMap> maps = {
      AffineMap::getMultiDimIdentityMap(rank, b.getContext()),
      AffineMap::get(rank, 0, outExprs, b.getContext())};
  return linalg::GenericOp::create(
             b, loc, TypeRange{resultType}, ValueRange{input}, ValueRange{init},
             maps, iterators,
             [&](OpBuilder &nb, Location nl, ValueRange args) {
               linalg::YieldOp::create(
                   nb, nl, combine(nb, nl, kind, args[1], args[0]));
             })
      .getResult(0);
}

Value divideBy(OpBuilder &b, Location loc, Value v, int64_t count) {
  auto type = cast<RankedTensorType>(v.getType());
  return mapElements(b, loc, ValueRange{v}, type,
                     [&](OpBuilder &nb, Location nl, ValueRange a) -> Value {
                       Value c = scalarConstant(nb, nl, a[0].getType(), count);
                       if (isa<FloatType>(a[0].getType()))
                         return arith::DivFOp::create(nb, nl, a[0], c);
                       return arith::DivSIOp::create(nb, nl, a[0], c);
                     });
}

template <typename OpTy, Combine kind, bool mean = false>
struct ReduceLowering : OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;
  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    Value result = reduce(rewriter, op.getLoc(), op.getInput(), op.getAxes(),
                          op.getKeepdims(), kind);
    if (mean)
      result = divideBy(rewriter, op.getLoc(), result,
                        mlir::loom::detail::reducedCount(
                            op.getInput().getType(), op.getAxes()));
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// Whether products of `element` go to the runtime's GEMM kernels: f32, and
/// bf16 and f16, which accumulate in f32.
bool isGemmElement(Type element) {
  return element.isF32() || element.isBF16() || element.isF16();
}

/// A product accumulated in f32 as `result`: itself for f32, else rounded
/// to `result`'s element type elementwise (which fuses with its consumers).
Value roundProduct(OpBuilder &b, Location loc, Value product,
                   RankedTensorType result) {
  auto type = cast<RankedTensorType>(product.getType());
  if (type.getElementType() == result.getElementType())
    return product;
  return mapElements(b, loc, ValueRange{product},
                     type.clone(result.getElementType()),
                     [&](OpBuilder &nb, Location nl, ValueRange a) -> Value {
                       return arith::TruncFOp::create(
                           nb, nl, result.getElementType(), a[0]);
                     });
}

/// Products (f32, bf16 or f16) with a matrix on the right ([..., M, K] x [K, N] or, with
/// transpose_rhs, [N, K]) become one linalg.matmul over the flattened left
/// operand, and so do products of two matrices with either transposed; the
/// CPU pipeline hands them to the runtime's GEMM kernel. Returns null when
/// the product has another form.
Value lowerToNamedMatmul(MatmulOp op, PatternRewriter &rewriter) {
  auto lhsType = cast<RankedTensorType>(op.getLhs().getType());
  auto rhsType = cast<RankedTensorType>(op.getRhs().getType());
  RankedTensorType result = op.getType();
  Type element = lhsType.getElementType();
  if (!isGemmElement(element) || rhsType.getRank() != 2 ||
      (op.getTransposeLhs() && lhsType.getRank() != 2) ||
      !lhsType.hasStaticShape())
    return Value();
  Location loc = op.getLoc();
  MLIRContext *ctx = rewriter.getContext();
  int64_t rank = lhsType.getRank();
  int64_t k = op.getTransposeLhs() ? lhsType.getDimSize(0)
                                   : lhsType.getDimSize(rank - 1);
  int64_t rows = result.getNumElements() /
                 std::max<int64_t>(result.getDimSize(result.getRank() - 1), 1);
  int64_t n = result.getDimSize(result.getRank() - 1);
  Value lhs = op.getLhs();
  SmallVector<ReassociationIndices> groups;
  if (rank > 2) {
    ReassociationIndices outer;
    for (int64_t d = 0; d < rank - 1; ++d)
      outer.push_back(d);
    groups = {outer, {rank - 1}};
    lhs = tensor::CollapseShapeOp::create(
        rewriter, loc, RankedTensorType::get({rows, k}, element), lhs, groups);
  }
  // Low-precision products accumulate in f32.
  auto flatType = RankedTensorType::get({rows, n}, rewriter.getF32Type());
  Value init = filledTensor(rewriter, loc, flatType,
                            rewriter.getF32FloatAttr(0.0f));
  SmallVector<NamedAttribute> attrs;
  if (op.getTransposeRhs() || op.getTransposeLhs()) {
    auto d = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
    AffineMap a = op.getTransposeLhs() ? AffineMap::get(3, 0, {d(2), d(0)}, ctx)
                                       : AffineMap::get(3, 0, {d(0), d(2)}, ctx);
    AffineMap b = op.getTransposeRhs() ? AffineMap::get(3, 0, {d(1), d(2)}, ctx)
                                       : AffineMap::get(3, 0, {d(2), d(1)}, ctx);
    attrs.push_back(rewriter.getNamedAttr(
        "indexing_maps",
        rewriter.getAffineMapArrayAttr(
            {a, b, AffineMap::get(3, 0, {d(0), d(1)}, ctx)})));
  }
  Value product = linalg::MatmulOp::create(rewriter, loc, TypeRange{flatType},
                                           ValueRange{lhs, op.getRhs()},
                                           ValueRange{init}, attrs)
                      .getResult(0);
  product = roundProduct(rewriter, loc, product,
                         flatType.clone(result.getElementType()));
  if (rank > 2)
    product = tensor::ExpandShapeOp::create(rewriter, loc, result, product,
                                            groups);
  return product;
}

/// f32, bf16 and f16 products of two operands with the same batch dimensions ([..., M, K]
/// x [..., K, N], either transposed) become one linalg.batch_matmul over the
/// flattened batch, which the CPU pipeline hands to the runtime's batched
/// GEMM kernel. Returns null when the product has another form.
Value lowerToBatchMatmul(MatmulOp op, PatternRewriter &rewriter) {
  auto lhsType = cast<RankedTensorType>(op.getLhs().getType());
  auto rhsType = cast<RankedTensorType>(op.getRhs().getType());
  RankedTensorType result = op.getType();
  int64_t rank = result.getRank();
  if (!isGemmElement(lhsType.getElementType()) || rank < 3 ||
      lhsType.getRank() != rank || rhsType.getRank() != rank ||
      !result.hasStaticShape() ||
      lhsType.getShape().drop_back(2) != result.getShape().drop_back(2) ||
      rhsType.getShape().drop_back(2) != result.getShape().drop_back(2))
    return Value();
  Location loc = op.getLoc();
  MLIRContext *ctx = rewriter.getContext();
  int64_t batch = 1;
  for (int64_t d : result.getShape().drop_back(2))
    batch *= d;
  SmallVector<ReassociationIndices> groups;
  ReassociationIndices outer;
  for (int64_t d = 0; d < rank - 2; ++d)
    outer.push_back(d);
  groups = {outer, {rank - 2}, {rank - 1}};
  auto collapse = [&](Value v) -> Value {
    auto type = cast<RankedTensorType>(v.getType());
    if (rank == 3)
      return v;
    return tensor::CollapseShapeOp::create(
        rewriter, loc,
        RankedTensorType::get({batch, type.getDimSize(rank - 2),
                               type.getDimSize(rank - 1)},
                              type.getElementType()),
        v, groups);
  };
  auto flatType = RankedTensorType::get(
      {batch, result.getDimSize(rank - 2), result.getDimSize(rank - 1)},
      rewriter.getF32Type());
  Value init = filledTensor(rewriter, loc, flatType,
                            rewriter.getF32FloatAttr(0.0f));
  auto d = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
  AffineMap a = op.getTransposeLhs() ? AffineMap::get(4, 0, {d(0), d(3), d(1)}, ctx)
                                     : AffineMap::get(4, 0, {d(0), d(1), d(3)}, ctx);
  AffineMap b = op.getTransposeRhs() ? AffineMap::get(4, 0, {d(0), d(2), d(3)}, ctx)
                                     : AffineMap::get(4, 0, {d(0), d(3), d(2)}, ctx);
  SmallVector<NamedAttribute> attrs{rewriter.getNamedAttr(
      "indexing_maps",
      rewriter.getAffineMapArrayAttr(
          {a, b, AffineMap::get(4, 0, {d(0), d(1), d(2)}, ctx)}))};
  Value product =
      linalg::BatchMatmulOp::create(rewriter, loc, TypeRange{flatType},
                                    ValueRange{collapse(op.getLhs()),
                                               collapse(op.getRhs())},
                                    ValueRange{init}, attrs)
          .getResult(0);
  product = roundProduct(rewriter, loc, product,
                         flatType.clone(result.getElementType()));
  if (rank > 3)
    product = tensor::ExpandShapeOp::create(rewriter, loc, result, product,
                                            groups);
  return product;
}

struct MatmulLowering : OpRewritePattern<MatmulOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MatmulOp op,
                                PatternRewriter &rewriter) const override {
    if (Value product = lowerToNamedMatmul(op, rewriter)) {
      rewriter.replaceOp(op, product);
      return success();
    }
    if (Value product = lowerToBatchMatmul(op, rewriter)) {
      rewriter.replaceOp(op, product);
      return success();
    }
    RankedTensorType result = op.getType();
    int64_t batch = result.getRank() - 2;
    int64_t loops = batch + 3; // batch..., m, n, k
    MLIRContext *ctx = getContext();
    auto dim = [&](int64_t d) { return getAffineDimExpr(d, ctx); };
    AffineExpr m = dim(batch), n = dim(batch + 1), k = dim(batch + 2);
    auto operandMap = [&](RankedTensorType type, AffineExpr rows,
                          AffineExpr cols) {
      SmallVector<AffineExpr> exprs;
      int64_t operandBatch = type.getRank() - 2;
      for (int64_t j = 0; j < operandBatch; ++j) {
        int64_t d = j + batch - operandBatch;
        exprs.push_back(type.getDimSize(j) == 1 && result.getDimSize(d) != 1
                            ? getAffineConstantExpr(0, ctx)
                            : dim(d));
      }
      exprs.append({rows, cols});
      return AffineMap::get(loops, 0, exprs, ctx);
    };
    auto lhsType = cast<RankedTensorType>(op.getLhs().getType());
    auto rhsType = cast<RankedTensorType>(op.getRhs().getType());
    SmallVector<AffineExpr> outExprs;
    for (int64_t d = 0; d < batch + 2; ++d)
      outExprs.push_back(dim(d));
    SmallVector<AffineMap> maps = {
        op.getTransposeLhs() ? operandMap(lhsType, k, m)
                             : operandMap(lhsType, m, k),
        op.getTransposeRhs() ? operandMap(rhsType, n, k)
                             : operandMap(rhsType, k, n),
        AffineMap::get(loops, 0, outExprs, ctx)};
    SmallVector<utils::IteratorType> iterators(loops,
                                               utils::IteratorType::parallel);
    iterators.back() = utils::IteratorType::reduction;
    Location loc = op.getLoc();
    Value init = filledTensor(
        rewriter, loc, result,
        identityOf(rewriter, Combine::Sum, result.getElementType()));
    auto generic = linalg::GenericOp::create(
        rewriter, loc, TypeRange{result}, op->getOperands(), ValueRange{init},
        maps, iterators, [&](OpBuilder &b, Location l, ValueRange block) {
          SmallVector<Value> args(block);
          bool isFloat = isa<FloatType>(args[0].getType());
          // bf16 or f16 factors of an f32 result (loom-autocast's).
          if (isFloat && args[0].getType() != args[2].getType())
            for (Value &factor : MutableArrayRef<Value>(args).take_front(2))
              factor = arith::ExtFOp::create(b, l, args[2].getType(), factor);
          Value prod = isFloat
                           ? (Value)arith::MulFOp::create(b, l, args[0], args[1])
                           : (Value)arith::MulIOp::create(b, l, args[0], args[1]);
          linalg::YieldOp::create(b, l,
                                  combine(b, l, Combine::Sum, args[2], prod));
        });
    rewriter.replaceOp(op, generic.getResults());
    return success();
  }
};

/// softmax(x) = exp(x - max) / sum(exp(x - max)); log_softmax(x) =
/// x - max - log(sum(exp(x - max))), both along one axis.
template <typename OpTy, bool isLog>
struct SoftmaxLowering : OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;
  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType type = op.getType();
    int64_t axis = op.getAxis();
    Value x = op.getInput();
    Value max = reduce(rewriter, loc, x, {axis}, /*keepdims=*/true,
                       Combine::Max);
    Value shifted =
        mapElements(rewriter, loc, ValueRange{x, max}, type,
                    [](OpBuilder &b, Location l, ValueRange a) -> Value {
                      return arith::SubFOp::create(b, l, a[0], a[1]);
                    });
    Value exps = mapElements(rewriter, loc, ValueRange{shifted}, type,
                             [](OpBuilder &b, Location l, ValueRange a) -> Value {
                               return math::ExpOp::create(b, l, a[0]);
                             });
    Value sum = reduce(rewriter, loc, exps, {axis}, /*keepdims=*/true,
                       Combine::Sum);
    Value result;
    if (isLog)
      result = mapElements(
          rewriter, loc, ValueRange{shifted, sum}, type,
          [](OpBuilder &b, Location l, ValueRange a) -> Value {
            return arith::SubFOp::create(b, l, a[0],
                                         math::LogOp::create(b, l, a[1]));
          });
    else
      result = mapElements(rewriter, loc, ValueRange{exps, sum}, type,
                           [](OpBuilder &b, Location l, ValueRange a) -> Value {
                             return arith::DivFOp::create(b, l, a[0], a[1]);
                           });
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct LayerNormLowering : OpRewritePattern<LayerNormOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(LayerNormOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = cast<RankedTensorType>(op.getInput().getType());
    SmallVector<int64_t> axes;
    for (int64_t d = op.getAxis(); d < type.getRank(); ++d)
      axes.push_back(d);
    int64_t count = mlir::loom::detail::reducedCount(type, axes);
    Value x = op.getInput();
    Value mean = divideBy(
        rewriter, loc, reduce(rewriter, loc, x, axes, true, Combine::Sum),
        count);
    Value centered =
        mapElements(rewriter, loc, ValueRange{x, mean}, type,
                    [](OpBuilder &b, Location l, ValueRange a) -> Value {
                      return arith::SubFOp::create(b, l, a[0], a[1]);
                    });
    Value squares =
        mapElements(rewriter, loc, ValueRange{centered}, type,
                    [](OpBuilder &b, Location l, ValueRange a) -> Value {
                      return arith::MulFOp::create(b, l, a[0], a[0]);
                    });
    Value var = divideBy(
        rewriter, loc,
        reduce(rewriter, loc, squares, axes, true, Combine::Sum), count);
    double epsilon = op.getEpsilon().convertToDouble();
    auto statType = cast<RankedTensorType>(var.getType());
    Value invStd = mapElements(
        rewriter, loc, ValueRange{var}, statType,
        [&](OpBuilder &b, Location l, ValueRange a) -> Value {
          Value eps = scalarConstant(b, l, a[0].getType(), epsilon);
          return reciprocalSqrt(b, l, arith::AddFOp::create(b, l, a[0], eps));
        });
    SmallVector<Value> inputs = {centered, invStd, op.getScale()};
    if (op.getBias())
      inputs.push_back(op.getBias());
    Value y = mapElements(
        rewriter, loc, inputs, type,
        [&](OpBuilder &b, Location l, ValueRange a) -> Value {
          Value v = arith::MulFOp::create(
              b, l, arith::MulFOp::create(b, l, a[0], a[1]), a[2]);
          return a.size() > 3 ? (Value)arith::AddFOp::create(b, l, v, a[3]) : v;
        });
    rewriter.replaceOp(op, {y, mean, invStd});
    return success();
  }
};

/// Inference batch norm: per-channel parameters on dimension 1.
struct BatchNormLowering : OpRewritePattern<BatchNormOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(BatchNormOp op,
                                PatternRewriter &rewriter) const override {
    RankedTensorType type = op.getType();
    int64_t rank = type.getRank();
    MLIRContext *ctx = getContext();
    AffineMap identity = AffineMap::getMultiDimIdentityMap(rank, ctx);
    AffineMap channel = AffineMap::get(rank, 0, getAffineDimExpr(1, ctx));
    SmallVector<AffineMap> maps = {identity, channel, channel, channel,
                                   channel, identity};
    SmallVector<utils::IteratorType> iterators(rank,
                                               utils::IteratorType::parallel);
    double epsilon = op.getEpsilon().convertToDouble();
    Location loc = op.getLoc();
    auto generic = linalg::GenericOp::create(
        rewriter, loc, TypeRange{type}, op->getOperands(),
        ValueRange{emptyTensor(rewriter, loc, type)}, maps, iterators,
        [&](OpBuilder &b, Location l, ValueRange a) {
          // (x - mean) / sqrt(var + eps) * scale + bias
          Value eps = scalarConstant(b, l, a[0].getType(), epsilon);
          Value inv =
              reciprocalSqrt(b, l, arith::AddFOp::create(b, l, a[4], eps));
          Value norm = arith::MulFOp::create(
              b, l, arith::SubFOp::create(b, l, a[0], a[3]), inv);
          Value y = arith::AddFOp::create(
              b, l, arith::MulFOp::create(b, l, norm, a[1]), a[2]);
          linalg::YieldOp::create(b, l, y);
        });
    rewriter.replaceOp(op, generic.getResults());
    return success();
  }
};

/// Batch normalization with batch statistics, decomposed into loom ops
/// (reductions and elementwise math) that the other patterns lower:
/// statistics over every dimension but the channel (1), the running
/// statistics blended with `momentum` (the running variance takes the
/// unbiased batch variance, as PyTorch).
struct BatchNormTrainLowering : OpRewritePattern<BatchNormTrainOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(BatchNormTrainOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = op.getInput();
    auto type = cast<RankedTensorType>(x.getType());
    Type element = type.getElementType();
    SmallVector<int64_t> axes, kept(type.getRank(), 1);
    int64_t count = 1;
    for (int64_t d = 0; d < type.getRank(); ++d) {
      if (d == 1)
        continue;
      axes.push_back(d);
      count *= type.getDimSize(d);
    }
    kept[1] = type.getDimSize(1);
    auto keptType = RankedTensorType::get(kept, element);
    auto channelType = cast<RankedTensorType>(op.getScale().getType());
    auto scalar = [&](double v) -> Value {
      return ConstantOp::create(rewriter, loc,
                                RankedTensorType::get({}, element), v);
    };
    auto asKept = [&](Value v) -> Value {
      return ReshapeOp::create(rewriter, loc, keptType, v);
    };
    auto asChannel = [&](Value v) -> Value {
      return ReshapeOp::create(rewriter, loc, channelType, v);
    };
    Value mean = ReduceMeanOp::create(rewriter, loc, x, axes, true);
    Value centered = SubOp::create(rewriter, loc, x, mean);
    Value var = ReduceMeanOp::create(
        rewriter, loc, MulOp::create(rewriter, loc, centered, centered), axes,
        true);
    Value inv = RsqrtOp::create(
        rewriter, loc,
        AddOp::create(rewriter, loc, var,
                      scalar(op.getEpsilon().convertToDouble())));
    Value y = AddOp::create(
        rewriter, loc,
        MulOp::create(rewriter, loc,
                      MulOp::create(rewriter, loc, centered, inv),
                      asKept(op.getScale())),
        asKept(op.getBias()));
    double momentum = op.getMomentum().convertToDouble();
    auto blend = [&](Value running, Value batch) -> Value {
      return AddOp::create(
          rewriter, loc, MulOp::create(rewriter, loc, running, scalar(momentum)),
          MulOp::create(rewriter, loc, batch, scalar(1.0 - momentum)));
    };
    Value unbiased = MulOp::create(
        rewriter, loc, asChannel(var),
        scalar(count > 1 ? (double)count / (double)(count - 1) : 1.0));
    rewriter.replaceOp(op, {y, blend(op.getRunningMean(), asChannel(mean)),
                            blend(op.getRunningVar(), unbiased),
                            asChannel(mean), asChannel(inv)});
    return success();
  }
};

template <typename OpTy, bool isMax>
struct ArgReduceLowering : OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;
  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto inType = cast<RankedTensorType>(op.getInput().getType());
    int64_t rank = inType.getRank(), axis = op.getAxis();
    MLIRContext *ctx = this->getContext();
    SmallVector<AffineExpr> outExprs;
    SmallVector<int64_t> shape;
    SmallVector<utils::IteratorType> iterators;
    for (int64_t d = 0; d < rank; ++d) {
      iterators.push_back(d == axis ? utils::IteratorType::reduction
                                    : utils::IteratorType::parallel);
      if (d != axis) {
        outExprs.push_back(getAffineDimExpr(d, ctx));
        shape.push_back(inType.getDimSize(d));
      } else if (op.getKeepdims()) {
        outExprs.push_back(getAffineConstantExpr(0, ctx));
        shape.push_back(1);
      }
    }
    Type element = inType.getElementType();
    auto valueType = RankedTensorType::get(shape, element);
    auto indexType = RankedTensorType::get(shape, rewriter.getI64Type());
    Value bestInit = filledTensor(
        rewriter, loc, valueType,
        identityOf(rewriter, isMax ? Combine::Max : Combine::Min, element));
    Value indexInit =
        filledTensor(rewriter, loc, indexType, rewriter.getI64IntegerAttr(0));
    AffineMap outMap = AffineMap::get(rank, 0, outExprs, ctx);
    bool last = op.getSelectLastIndex();
    auto generic = linalg::GenericOp::create(
        rewriter, loc, TypeRange{valueType, indexType},
        ValueRange{op.getInput()}, ValueRange{bestInit, indexInit},
        {AffineMap::getMultiDimIdentityMap(rank, ctx), outMap, outMap},
        iterators, [&](OpBuilder &b, Location l, ValueRange a) {
          Value i = arith::IndexCastOp::create(
              b, l, b.getI64Type(), linalg::IndexOp::create(b, l, axis));
          bool isFloat = isa<FloatType>(a[0].getType());
          // Strictly better wins; with select_last_index, ties win too.
          Value better;
          if (isFloat)
            better = arith::CmpFOp::create(
                b, l,
                isMax ? (last ? arith::CmpFPredicate::OGE
                              : arith::CmpFPredicate::OGT)
                      : (last ? arith::CmpFPredicate::OLE
                              : arith::CmpFPredicate::OLT),
                a[0], a[1]);
          else
            better = arith::CmpIOp::create(
                b, l,
                isMax ? (last ? arith::CmpIPredicate::sge
                              : arith::CmpIPredicate::sgt)
                      : (last ? arith::CmpIPredicate::sle
                              : arith::CmpIPredicate::slt),
                a[0], a[1]);
          linalg::YieldOp::create(
              b, l,
              ValueRange{arith::SelectOp::create(b, l, better, a[0], a[1]),
                         arith::SelectOp::create(b, l, better, i, a[2])});
        });
    rewriter.replaceOp(op, generic.getResult(1));
    return success();
  }
};

struct TransposeLowering : OpRewritePattern<TransposeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TransposeOp op,
                                PatternRewriter &rewriter) const override {
    Value init = emptyTensor(rewriter, op.getLoc(), op.getType());
    auto transpose = linalg::TransposeOp::create(
        rewriter, op.getLoc(), op.getInput(), init, op.getPerm());
    rewriter.replaceOp(op, transpose->getResults());
    return success();
  }
};

/// Reshape through a flat vector: collapse to rank 1, expand to the target.
struct ReshapeLowering : OpRewritePattern<ReshapeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ReshapeOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType in = op.getInput().getType(), out = op.getType();
    auto all = [](int64_t rank) {
      ReassociationIndices group;
      for (int64_t d = 0; d < rank; ++d)
        group.push_back(d);
      return SmallVector<ReassociationIndices>{group};
    };
    Value flat = op.getInput();
    auto flatType = RankedTensorType::get({in.getNumElements()},
                                          in.getElementType());
    if (in.getRank() == 0)
      flat = tensor::ExpandShapeOp::create(rewriter, loc, flatType, flat,
                                           SmallVector<ReassociationIndices>{});
    else if (in.getRank() > 1)
      flat = tensor::CollapseShapeOp::create(rewriter, loc, flatType, flat,
                                             all(in.getRank()));
    Value result = flat;
    if (out.getRank() == 0)
      result = tensor::CollapseShapeOp::create(
          rewriter, loc, out, flat, SmallVector<ReassociationIndices>{});
    else if (out.getRank() > 1)
      result = tensor::ExpandShapeOp::create(rewriter, loc, out, flat,
                                             all(out.getRank()));
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct ExpandLowering : OpRewritePattern<ExpandOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ExpandOp op,
                                PatternRewriter &rewriter) const override {
    rewriter.replaceOp(
        op, mapElements(rewriter, op.getLoc(), ValueRange{op.getInput()},
                        op.getType(),
                        [](OpBuilder &, Location, ValueRange a) { return a[0]; }));
    return success();
  }
};

struct ConstantLowering : OpRewritePattern<ConstantOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ConstantOp op,
                                PatternRewriter &rewriter) const override {
    rewriter.replaceOpWithNewOp<arith::ConstantOp>(op, op.getValue());
    return success();
  }
};

struct ConcatLowering : OpRewritePattern<ConcatOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ConcatOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType type = op.getType();
    int64_t axis = op.getAxis();
    Value result = emptyTensor(rewriter, loc, type);
    int64_t offset = 0;
    for (Value input : op.getInputs()) {
      auto inType = cast<RankedTensorType>(input.getType());
      SmallVector<OpFoldResult> offsets(type.getRank(), rewriter.getIndexAttr(0));
      offsets[axis] = rewriter.getIndexAttr(offset);
      SmallVector<OpFoldResult> sizes, strides(type.getRank(),
                                               rewriter.getIndexAttr(1));
      for (int64_t d : inType.getShape())
        sizes.push_back(rewriter.getIndexAttr(d));
      result = tensor::InsertSliceOp::create(rewriter, loc, input, result,
                                             offsets, sizes, strides);
      offset += inType.getDimSize(axis);
    }
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct SplitLowering : OpRewritePattern<SplitOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SplitOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto inType = cast<RankedTensorType>(op.getInput().getType());
    int64_t axis = op.getAxis(), offset = 0;
    SmallVector<Value> results;
    for (Value result : op.getResults()) {
      auto type = cast<RankedTensorType>(result.getType());
      SmallVector<OpFoldResult> offsets(inType.getRank(),
                                        rewriter.getIndexAttr(0));
      offsets[axis] = rewriter.getIndexAttr(offset);
      SmallVector<OpFoldResult> sizes, strides(inType.getRank(),
                                               rewriter.getIndexAttr(1));
      for (int64_t d : type.getShape())
        sizes.push_back(rewriter.getIndexAttr(d));
      results.push_back(tensor::ExtractSliceOp::create(
          rewriter, loc, type, op.getInput(), offsets, sizes, strides));
      offset += type.getDimSize(axis);
    }
    rewriter.replaceOp(op, results);
    return success();
  }
};

/// Index-computing lowerings: a parallel generic over the result whose body
/// reads the input with tensor.extract at computed coordinates.
Value gatherGeneric(OpBuilder &b, Location loc, RankedTensorType resultType,
                    function_ref<Value(OpBuilder &, Location, ValueRange)> body) {
  SmallVector<utils::IteratorType> iterators(resultType.getRank(),
                                             utils::IteratorType::parallel);
  return linalg::GenericOp::create(
             b, loc, TypeRange{resultType}, ValueRange{},
             ValueRange{emptyTensor(b, loc, resultType)},
             {AffineMap::getMultiDimIdentityMap(resultType.getRank(),
                                                b.getContext())},
             iterators,
             [&](OpBuilder &nb, Location nl, ValueRange) {
               SmallVector<Value> ivs;
               for (int64_t d = 0; d < resultType.getRank(); ++d)
                 ivs.push_back(linalg::IndexOp::create(nb, nl, d));
               linalg::YieldOp::create(nb, nl, body(nb, nl, ivs));
             })
      .getResult(0);
}

Value indexConstant(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}

/// An integer tensor element as an index, negative values counting back from
/// `extent` (ONNX's convention).
Value normalizedIndex(OpBuilder &b, Location loc, Value element,
                      int64_t extent) {
  Value idx = arith::IndexCastOp::create(b, loc, b.getIndexType(), element);
  Value neg = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, idx,
                                    indexConstant(b, loc, 0));
  Value wrapped =
      arith::AddIOp::create(b, loc, idx, indexConstant(b, loc, extent));
  return arith::SelectOp::create(b, loc, neg, wrapped, idx);
}

struct SliceLowering : OpRewritePattern<SliceOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SliceOp op,
                                PatternRewriter &rewriter) const override {
    Value input = op.getInput();
    ArrayRef<int64_t> starts = op.getStarts(), steps = op.getSteps();
    rewriter.replaceOp(
        op, gatherGeneric(rewriter, op.getLoc(), op.getType(),
                          [&](OpBuilder &b, Location l, ValueRange ivs) {
                            SmallVector<Value> coords;
                            for (auto [d, iv] : llvm::enumerate(ivs))
                              coords.push_back(arith::AddIOp::create(
                                  b, l, indexConstant(b, l, starts[d]),
                                  arith::MulIOp::create(
                                      b, l, iv, indexConstant(b, l, steps[d]))));
                            return tensor::ExtractOp::create(b, l, input,
                                                             coords);
                          }));
    return success();
  }
};

struct GatherLowering : OpRewritePattern<GatherOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(GatherOp op,
                                PatternRewriter &rewriter) const override {
    Value input = op.getInput(), indices = op.getIndices();
    auto inType = cast<RankedTensorType>(input.getType());
    int64_t axis = op.getAxis();
    int64_t indexRank = cast<RankedTensorType>(indices.getType()).getRank();
    rewriter.replaceOp(
        op, gatherGeneric(
                rewriter, op.getLoc(), op.getType(),
                [&](OpBuilder &b, Location l, ValueRange ivs) {
                  Value k = tensor::ExtractOp::create(
                      b, l, indices, ivs.slice(axis, indexRank));
                  SmallVector<Value> coords(ivs.take_front(axis));
                  coords.push_back(
                      normalizedIndex(b, l, k, inType.getDimSize(axis)));
                  llvm::append_range(coords, ivs.drop_front(axis + indexRank));
                  return tensor::ExtractOp::create(b, l, input, coords);
                }));
    return success();
  }
};

struct GatherElementsLowering : OpRewritePattern<GatherElementsOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(GatherElementsOp op,
                                PatternRewriter &rewriter) const override {
    Value input = op.getInput(), indices = op.getIndices();
    int64_t axis = op.getAxis();
    int64_t extent = cast<RankedTensorType>(input.getType()).getDimSize(axis);
    rewriter.replaceOp(
        op, gatherGeneric(rewriter, op.getLoc(), op.getType(),
                          [&](OpBuilder &b, Location l, ValueRange ivs) {
                            Value k = tensor::ExtractOp::create(b, l, indices,
                                                                ivs);
                            SmallVector<Value> coords(ivs);
                            coords[axis] = normalizedIndex(b, l, k, extent);
                            return tensor::ExtractOp::create(b, l, input,
                                                             coords);
                          }));
    return success();
  }
};

struct OneHotLowering : OpRewritePattern<OneHotOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(OneHotOp op,
                                PatternRewriter &rewriter) const override {
    Value indices = op.getIndices(), values = op.getValues();
    int64_t axis = op.getAxis(), depth = op.getDepth();
    rewriter.replaceOp(
        op, gatherGeneric(
                rewriter, op.getLoc(), op.getType(),
                [&](OpBuilder &b, Location l, ValueRange ivs) {
                  SmallVector<Value> at(ivs.take_front(axis));
                  llvm::append_range(at, ivs.drop_front(axis + 1));
                  Value k = tensor::ExtractOp::create(b, l, indices, at);
                  Value idx = normalizedIndex(b, l, k, depth);
                  Value hit = arith::CmpIOp::create(
                      b, l, arith::CmpIPredicate::eq, idx, ivs[axis]);
                  Value off = tensor::ExtractOp::create(
                      b, l, values, ValueRange{indexConstant(b, l, 0)});
                  Value on = tensor::ExtractOp::create(
                      b, l, values, ValueRange{indexConstant(b, l, 1)});
                  return arith::SelectOp::create(b, l, hit, on, off);
                }));
    return success();
  }
};

struct TriluLowering : OpRewritePattern<TriluOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TriluOp op,
                                PatternRewriter &rewriter) const override {
    Value input = op.getInput();
    int64_t k = op.getK();
    bool upper = op.getUpper();
    RankedTensorType type = op.getType();
    rewriter.replaceOp(
        op, gatherGeneric(
                rewriter, op.getLoc(), type,
                [&](OpBuilder &b, Location l, ValueRange ivs) {
                  int64_t rank = ivs.size();
                  // Keep j - i >= k (upper) or j - i <= k (lower).
                  Value diff = arith::SubIOp::create(b, l, ivs[rank - 1],
                                                     ivs[rank - 2]);
                  Value keep = arith::CmpIOp::create(
                      b, l,
                      upper ? arith::CmpIPredicate::sge
                            : arith::CmpIPredicate::sle,
                      diff, indexConstant(b, l, k));
                  Value x = tensor::ExtractOp::create(b, l, input, ivs);
                  return arith::SelectOp::create(
                      b, l, keep, x,
                      scalarConstant(b, l, type.getElementType(), 0));
                }));
    return success();
  }
};

/// tile: the input broadcast into [r0, d0, r1, d1, ...] (each copy reads
/// the input as it is), then collapsed pairwise into [r0 * d0, ...].
struct TileLowering : OpRewritePattern<TileOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TileOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto inType = cast<RankedTensorType>(op.getInput().getType());
    int64_t rank = inType.getRank();
    SmallVector<int64_t> expanded;
    SmallVector<AffineExpr> inputExprs;
    SmallVector<ReassociationIndices> pairs;
    for (auto [d, repeat] : llvm::enumerate(op.getRepeats())) {
      int64_t at = static_cast<int64_t>(expanded.size());
      expanded.push_back(repeat);
      expanded.push_back(inType.getDimSize(d));
      inputExprs.push_back(rewriter.getAffineDimExpr(at + 1));
      pairs.push_back({at, at + 1});
    }
    auto expandedType = inType.clone(expanded);
    MLIRContext *ctx = rewriter.getContext();
    SmallVector<AffineMap> maps = {
        AffineMap::get(2 * rank, 0, inputExprs, ctx),
        AffineMap::getMultiDimIdentityMap(2 * rank, ctx)};
    SmallVector<utils::IteratorType> iterators(2 * rank,
                                               utils::IteratorType::parallel);
    Value copies =
        linalg::GenericOp::create(
            rewriter, loc, TypeRange{expandedType}, ValueRange{op.getInput()},
            ValueRange{emptyTensor(rewriter, loc, expandedType)}, maps,
            iterators,
            [](OpBuilder &b, Location l, ValueRange args) {
              linalg::YieldOp::create(b, l, args.front());
            })
            .getResult(0);
    rewriter.replaceOpWithNewOp<tensor::CollapseShapeOp>(op, op.getType(),
                                                         copies, pairs);
    return success();
  }
};

/// cumsum: a scan along the axis for every position of the other
/// dimensions, carrying the running sum (from the end when `reverse`; the
/// sum before the entry when `exclusive`).
struct CumSumLowering : OpRewritePattern<CumSumOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(CumSumOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = cast<RankedTensorType>(op.getType());
    int64_t axis = op.getAxis(), extent = type.getDimSize(axis);
    bool exclusive = op.getExclusive(), reverse = op.getReverse();
    Value input = op.getInput();
    Type element = type.getElementType();
    SmallVector<Value> lbs, ubs, steps;
    for (int64_t d = 0; d < type.getRank(); ++d) {
      if (d == axis)
        continue;
      lbs.push_back(indexConstant(rewriter, loc, 0));
      ubs.push_back(indexConstant(rewriter, loc, type.getDimSize(d)));
      steps.push_back(indexConstant(rewriter, loc, 1));
    }
    Value init = emptyTensor(rewriter, loc, type);
    scf::LoopNest nest = scf::buildLoopNest(
        rewriter, loc, lbs, ubs, steps, ValueRange{init},
        [&](OpBuilder &b, Location l, ValueRange outer,
            ValueRange acc) -> scf::ValueVector {
          Value zero = scalarConstant(b, l, element, 0);
          auto scan = scf::ForOp::create(
              b, l, indexConstant(b, l, 0), indexConstant(b, l, extent),
              indexConstant(b, l, 1), ValueRange{acc[0], zero},
              [&](OpBuilder &ib, Location il, Value j, ValueRange carried) {
                Value at = j;
                if (reverse)
                  at = arith::SubIOp::create(
                      ib, il, indexConstant(ib, il, extent - 1), j);
                SmallVector<Value> coords(outer.begin(), outer.end());
                coords.insert(coords.begin() + axis, at);
                Value x = tensor::ExtractOp::create(ib, il, input, coords);
                Value sum = combine(ib, il, Combine::Sum, carried[1], x);
                Value written = exclusive ? carried[1] : sum;
                Value updated = tensor::InsertOp::create(ib, il, written,
                                                         carried[0], coords);
                scf::YieldOp::create(ib, il, ValueRange{updated, sum});
              });
          return {scan.getResult(0)};
        });
    rewriter.replaceOp(op, nest.results);
    return success();
  }
};

/// local_block: the rank's block along `dim`, a slice at its block index
/// (loom.block_index, read at run time) times the block's size. No
/// communication, and any element type.
struct LocalBlockLowering : OpRewritePattern<LocalBlockOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(LocalBlockOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = cast<RankedTensorType>(op.getType());
    int64_t dim = op.getDim();
    Value block = BlockIndexOp::create(
        rewriter, loc, RankedTensorType::get({}, rewriter.getI64Type()),
        op.getMeshAttr(), op.getMeshAxesAttr());
    Value index = arith::IndexCastOp::create(
        rewriter, loc, rewriter.getIndexType(),
        tensor::ExtractOp::create(rewriter, loc, block, ValueRange{}));
    Value start = arith::MulIOp::create(
        rewriter, loc, index, indexConstant(rewriter, loc, type.getDimSize(dim)));
    SmallVector<OpFoldResult> offsets(type.getRank(), rewriter.getIndexAttr(0));
    offsets[dim] = start;
    SmallVector<OpFoldResult> sizes, strides(type.getRank(),
                                             rewriter.getIndexAttr(1));
    for (int64_t d : type.getShape())
      sizes.push_back(rewriter.getIndexAttr(d));
    rewriter.replaceOpWithNewOp<tensor::ExtractSliceOp>(
        op, type, op.getInput(), offsets, sizes, strides);
    return success();
  }
};

/// pipeline_mark: `loom_rt_mark(kind << 40 | microbatch << 1 | end)`.
struct PipelineMarkLowering : OpRewritePattern<PipelineMarkOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(PipelineMarkOp op,
                                PatternRewriter &rewriter) const override {
    auto module = op->getParentOfType<ModuleOp>();
    Type i64 = rewriter.getI64Type();
    auto callee = module.lookupSymbol<func::FuncOp>("loom_rt_mark");
    if (!callee) {
      OpBuilder::InsertionGuard guard(rewriter);
      rewriter.setInsertionPointToStart(module.getBody());
      callee = func::FuncOp::create(rewriter, op.getLoc(), "loom_rt_mark",
                                    rewriter.getFunctionType({i64}, {}));
      callee.setPrivate();
    }
    int64_t code = (op.getKind() << 40) | (op.getMicrobatch() << 1) |
                   (op.getEnd() ? 1 : 0);
    Value arg = arith::ConstantOp::create(rewriter, op.getLoc(),
                                          rewriter.getI64IntegerAttr(code));
    rewriter.replaceOpWithNewOp<func::CallOp>(op, callee, ValueRange{arg});
    return success();
  }
};

/// Dropout's counter-based mask (the formula is in the op's description):
/// one 64-bit key per call from `seed` and `offset`, then a SplitMix64 draw
/// per entry from its row-major index, compared with a 24-bit threshold.
struct DropoutLowering : OpRewritePattern<DropoutOp> {
  using OpRewritePattern::OpRewritePattern;

  static constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ull;

  /// SplitMix64's finalizer.
  static Value mix(OpBuilder &b, Location l, Value z) {
    auto step = [&](Value v, int64_t shift, uint64_t multiplier) -> Value {
      Value shifted = arith::ShRUIOp::create(b, l, v, i64Constant(b, l, shift));
      Value x = arith::XOrIOp::create(b, l, v, shifted);
      return multiplier ? arith::MulIOp::create(
                              b, l, x, i64Constant(b, l, (int64_t)multiplier))
                              .getResult()
                        : x;
    };
    z = step(z, 30, 0xBF58476D1CE4E5B9ull);
    z = step(z, 27, 0x94D049BB133111EBull);
    return step(z, 31, 0);
  }
  static Value i64Constant(OpBuilder &b, Location l, int64_t v) {
    return arith::ConstantOp::create(b, l, b.getI64IntegerAttr(v));
  }

  LogicalResult matchAndRewrite(DropoutOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = cast<RankedTensorType>(op.getResult().getType());
    auto maskType = cast<RankedTensorType>(op.getMask().getType());
    double ratio = op.getRatio().convertToDouble();
    Value offset = op.getOffset()
                       ? tensor::ExtractOp::create(rewriter, loc,
                                                   op.getOffset(), ValueRange{})
                             .getResult()
                       : i64Constant(rewriter, loc, 0);
    Value inner = mix(
        rewriter, loc,
        arith::AddIOp::create(rewriter, loc, offset,
                              i64Constant(rewriter, loc, (int64_t)kGolden)));
    Value key =
        mix(rewriter, loc,
            arith::AddIOp::create(rewriter, loc, inner,
                                  i64Constant(rewriter, loc, op.getSeed())));
    int64_t threshold = (int64_t)std::ceil(std::ldexp(ratio, 24));
    int64_t rank = type.getRank();
    AffineMap identity =
        AffineMap::getMultiDimIdentityMap(rank, rewriter.getContext());
    SmallVector<utils::IteratorType> parallel(rank,
                                              utils::IteratorType::parallel);
    Type element = type.getElementType();
    // The entry's row-major index in the whole tensor: a block of a split
    // tensor starts at index_base and steps by the whole tensor's strides.
    SmallVector<int64_t> whole(type.getShape());
    if (auto shape = op.getWholeShape())
      whole.assign(shape->begin(), shape->end());
    SmallVector<int64_t> strides(rank, 1);
    for (int64_t d = rank - 2; d >= 0; --d)
      strides[d] = strides[d + 1] * whole[d + 1];
    Value base = op.getIndexBase()
                     ? tensor::ExtractOp::create(rewriter, loc,
                                                 op.getIndexBase(), ValueRange{})
                           .getResult()
                     : i64Constant(rewriter, loc, 0);
    auto generic = linalg::GenericOp::create(
        rewriter, loc, TypeRange{type, maskType}, ValueRange{op.getInput()},
        ValueRange{emptyTensor(rewriter, loc, type),
                   emptyTensor(rewriter, loc, maskType)},
        {identity, identity, identity}, parallel,
        [&](OpBuilder &b, Location l, ValueRange a) {
          Value linear = base;
          for (int64_t d = 0; d < rank; ++d) {
            Value index = arith::IndexCastOp::create(
                b, l, b.getI64Type(), linalg::IndexOp::create(b, l, d));
            linear = arith::AddIOp::create(
                b, l, linear,
                arith::MulIOp::create(b, l, index,
                                      i64Constant(b, l, strides[d])));
          }
          Value counter = arith::MulIOp::create(
              b, l, arith::AddIOp::create(b, l, linear, i64Constant(b, l, 1)),
              i64Constant(b, l, (int64_t)kGolden));
          Value draw = mix(b, l, arith::AddIOp::create(b, l, key, counter));
          Value high =
              arith::ShRUIOp::create(b, l, draw, i64Constant(b, l, 40));
          Value keep =
              arith::CmpIOp::create(b, l, arith::CmpIPredicate::uge, high,
                                    i64Constant(b, l, threshold));
          Value scaled = arith::MulFOp::create(
              b, l, a[0], scalarConstant(b, l, element, 1.0 / (1.0 - ratio)));
          Value y = arith::SelectOp::create(b, l, keep, scaled,
                                            scalarConstant(b, l, element, 0.0));
          linalg::YieldOp::create(b, l, ValueRange{y, keep});
        });
    rewriter.replaceOp(op, generic.getResults());
    return success();
  }
};

struct PadLowering : OpRewritePattern<PadOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(PadOp op,
                                PatternRewriter &rewriter) const override {
    Value input = op.getInput();
    auto inType = cast<RankedTensorType>(input.getType());
    ArrayRef<int64_t> low = op.getLow();
    PadMode mode = op.getMode();
    double fill = op.getValue().convertToDouble();
    RankedTensorType type = op.getType();
    rewriter.replaceOp(
        op, gatherGeneric(
                rewriter, op.getLoc(), type,
                [&](OpBuilder &b, Location l, ValueRange ivs) -> Value {
                  // Source coordinate per dimension; constant mode also
                  // tracks whether it falls outside the input.
                  Value inside;
                  SmallVector<Value> coords;
                  for (auto [d, iv] : llvm::enumerate(ivs)) {
                    int64_t extent = inType.getDimSize(d);
                    Value src = arith::SubIOp::create(
                        b, l, iv, indexConstant(b, l, low[d]));
                    Value zero = indexConstant(b, l, 0);
                    Value last = indexConstant(b, l, extent - 1);
                    if (mode == PadMode::Edge) {
                      src = arith::MaxSIOp::create(b, l, src, zero);
                      src = arith::MinSIOp::create(b, l, src, last);
                    } else if (mode == PadMode::Reflect) {
                      // Mirror without repeating the edge: |src| then
                      // 2*last - src past the end.
                      Value neg = arith::SubIOp::create(b, l, zero, src);
                      src = arith::MaxSIOp::create(b, l, src, neg);
                      Value mirrored = arith::SubIOp::create(
                          b, l, indexConstant(b, l, 2 * (extent - 1)), src);
                      src = arith::MinSIOp::create(b, l, src, mirrored);
                    } else {
                      Value ge = arith::CmpIOp::create(
                          b, l, arith::CmpIPredicate::sge, src, zero);
                      Value le = arith::CmpIOp::create(
                          b, l, arith::CmpIPredicate::sle, src, last);
                      Value ok = arith::AndIOp::create(b, l, ge, le);
                      inside = inside ? (Value)arith::AndIOp::create(
                                            b, l, inside, ok)
                                      : ok;
                      src = arith::MaxSIOp::create(b, l, src, zero);
                      src = arith::MinSIOp::create(b, l, src, last);
                    }
                    coords.push_back(src);
                  }
                  Value x = tensor::ExtractOp::create(b, l, input, coords);
                  if (!inside)
                    return x;
                  return arith::SelectOp::create(
                      b, l, inside, x,
                      scalarConstant(b, l, type.getElementType(), fill));
                }));
    return success();
  }
};


/// Pads the spatial dimensions (2..) of an NC... tensor by `low`/`high` with
/// `value`; returns `input` itself when nothing is padded.
Value padSpatial(OpBuilder &b, Location loc, Value input, ArrayRef<int64_t> low,
                 ArrayRef<int64_t> high, TypedAttr value) {
  if (llvm::all_of(low, [](int64_t p) { return p == 0; }) &&
      llvm::all_of(high, [](int64_t p) { return p == 0; }))
    return input;
  auto type = cast<RankedTensorType>(input.getType());
  SmallVector<int64_t> lo = {0, 0}, hi = {0, 0}, shape;
  llvm::append_range(lo, low);
  llvm::append_range(hi, high);
  for (int64_t d = 0; d < type.getRank(); ++d)
    shape.push_back(type.getDimSize(d) + lo[d] + hi[d]);
  auto padded = RankedTensorType::get(shape, type.getElementType());
  Value fill = arith::ConstantOp::create(b, loc, value);
  SmallVector<OpFoldResult> loAttrs, hiAttrs;
  for (int64_t d = 0; d < type.getRank(); ++d) {
    loAttrs.push_back(b.getIndexAttr(lo[d]));
    hiAttrs.push_back(b.getIndexAttr(hi[d]));
  }
  return tensor::PadOp::create(b, loc, padded, input, loAttrs, hiAttrs, fill);
}

/// Extra end padding that ceil-mode windows read past the padded input.
SmallVector<int64_t> ceilOverhang(RankedTensorType input, RankedTensorType out,
                                  ArrayRef<int64_t> kernel,
                                  ArrayRef<int64_t> strides,
                                  ArrayRef<int64_t> pads,
                                  ArrayRef<int64_t> dilations) {
  int64_t spatial = kernel.size();
  SmallVector<int64_t> extra;
  for (int64_t d = 0; d < spatial; ++d) {
    int64_t needed = (out.getDimSize(d + 2) - 1) * strides[d] +
                     (kernel[d] - 1) * dilations[d] + 1;
    int64_t have = input.getDimSize(d + 2) + pads[d] + pads[d + spatial];
    extra.push_back(std::max<int64_t>(0, needed - have));
  }
  return extra;
}

/// A sliding-window reduction over the spatial dimensions of an NC...
/// tensor (already padded): out[n, c, o...] = combine over k... of
/// in[n, c, o*stride + k*dilation]. A `window` operand of the kernel's shape
/// gives linalg the reduction loops' extents.
Value slidingWindow(OpBuilder &b, Location loc, Value input,
                    RankedTensorType outType, ArrayRef<int64_t> kernel,
                    ArrayRef<int64_t> strides, ArrayRef<int64_t> dilations,
                    Combine kind) {
  MLIRContext *ctx = b.getContext();
  int64_t spatial = kernel.size(), loops = 2 + 2 * spatial;
  auto dim = [&](int64_t d) { return getAffineDimExpr(d, ctx); };
  SmallVector<AffineExpr> inExprs = {dim(0), dim(1)}, winExprs, outExprs;
  for (int64_t d = 0; d < spatial; ++d) {
    inExprs.push_back(dim(2 + d) * strides[d] +
                      dim(2 + spatial + d) * dilations[d]);
    winExprs.push_back(dim(2 + spatial + d));
  }
  for (int64_t d = 0; d < 2 + spatial; ++d)
    outExprs.push_back(dim(d));
  SmallVector<utils::IteratorType> iterators(2 + spatial,
                                             utils::IteratorType::parallel);
  iterators.append(spatial, utils::IteratorType::reduction);
  Type element = outType.getElementType();
  Value window = tensor::EmptyOp::create(b, loc, kernel, element);
  Value init = filledTensor(b, loc, outType, identityOf(b, kind, element));
  return linalg::GenericOp::create(
             b, loc, TypeRange{outType}, ValueRange{input, window},
             ValueRange{init},
             {AffineMap::get(loops, 0, inExprs, ctx),
              AffineMap::get(loops, 0, winExprs, ctx),
              AffineMap::get(loops, 0, outExprs, ctx)},
             iterators,
             [&](OpBuilder &nb, Location nl, ValueRange a) {
               linalg::YieldOp::create(nb, nl,
                                       combine(nb, nl, kind, a[2], a[0]));
             })
      .getResult(0);
}

struct MaxPoolLowering : OpRewritePattern<MaxPoolOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MaxPoolOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto inType = cast<RankedTensorType>(op.getInput().getType());
    int64_t spatial = op.getKernelShape().size();
    ArrayRef<int64_t> pads = op.getPads();
    SmallVector<int64_t> high(pads.drop_front(spatial));
    SmallVector<int64_t> extra =
        ceilOverhang(inType, op.getType(), op.getKernelShape(), op.getStrides(),
                     pads, op.getDilations());
    for (int64_t d = 0; d < spatial; ++d)
      high[d] += extra[d];
    // Padding never wins a max: pad with the type's lowest value.
    Type element = inType.getElementType();
    Value padded = padSpatial(rewriter, loc, op.getInput(),
                              pads.take_front(spatial), high,
                              identityOf(rewriter, Combine::Max, element));
    rewriter.replaceOp(op, slidingWindow(rewriter, loc, padded, op.getType(),
                                         op.getKernelShape(), op.getStrides(),
                                         op.getDilations(), Combine::Max));
    return success();
  }
};

struct AvgPoolLowering : OpRewritePattern<AvgPoolOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AvgPoolOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto inType = cast<RankedTensorType>(op.getInput().getType());
    RankedTensorType outType = op.getType();
    Type element = inType.getElementType();
    int64_t spatial = op.getKernelShape().size();
    ArrayRef<int64_t> pads = op.getPads();
    SmallVector<int64_t> extra =
        ceilOverhang(inType, outType, op.getKernelShape(), op.getStrides(),
                     pads, op.getDilations());
    SmallVector<int64_t> zeros(spatial, 0);
    auto zero = rewriter.getFloatAttr(element, 0.0);
    auto one = rewriter.getFloatAttr(element, 1.0);
    // Sums over the explicitly padded input, then over the ceil overhang.
    Value padded = padSpatial(rewriter, loc, op.getInput(),
                              pads.take_front(spatial),
                              pads.drop_front(spatial), zero);
    padded = padSpatial(rewriter, loc, padded, zeros, extra, zero);
    Value sums = slidingWindow(rewriter, loc, padded, outType,
                               op.getKernelShape(), op.getStrides(),
                               op.getDilations(), Combine::Sum);
    // The divisor counts the window positions inside the input, plus the
    // explicit pads with count_include_pad (never the ceil overhang).
    Value ones = filledTensor(rewriter, loc, inType, one);
    Value mask = padSpatial(rewriter, loc, ones, pads.take_front(spatial),
                            pads.drop_front(spatial),
                            op.getCountIncludePad() ? one : zero);
    mask = padSpatial(rewriter, loc, mask, zeros, extra, zero);
    Value counts = slidingWindow(rewriter, loc, mask, outType,
                                 op.getKernelShape(), op.getStrides(),
                                 op.getDilations(), Combine::Sum);
    rewriter.replaceOp(
        op, mapElements(rewriter, loc, ValueRange{sums, counts}, outType,
                        [](OpBuilder &b, Location l, ValueRange a) -> Value {
                          return arith::DivFOp::create(b, l, a[0], a[1]);
                        }));
    return success();
  }
};

/// Direct (grouped, strided, dilated) convolution as one reduction generic:
/// out[n, f, o...] += in[n, (f / Fg) * Cg + c, o*s + k*d] * w[f, c, k...].
struct ConvLowering : OpRewritePattern<ConvOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ConvOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = getContext();
    RankedTensorType outType = op.getType();
    auto filterType = cast<RankedTensorType>(op.getFilter().getType());
    int64_t spatial = filterType.getRank() - 2;
    int64_t groups = op.getGroups();
    int64_t featuresPerGroup = filterType.getDimSize(0) / groups;
    int64_t channelsPerGroup = filterType.getDimSize(1);
    ArrayRef<int64_t> pads = op.getPads(), strides = op.getStrides(),
                      dilations = op.getDilations();
    // The factors' element type (an f32 result may accumulate bf16 ones).
    Type element = filterType.getElementType();
    Value padded = padSpatial(
        rewriter, loc, op.getInput(), pads.take_front(spatial),
        pads.drop_front(spatial), rewriter.getFloatAttr(element, 0.0));
    Value result;
    if (spatial == 2 && isGemmElement(element)) {
      // The named grouped convolution, which loom-matmul-to-kernel hands to
      // the runtime's im2col + GEMM kernel after bufferization: input
      // [N, G, Cg, H, W], filter [G, Fg, Cg, KH, KW], result [N, G, Fg, OH,
      // OW], reshaped from and to loom's layouts. bf16 and f16 accumulate in
      // f32.
      auto paddedType = cast<RankedTensorType>(padded.getType());
      ArrayRef<int64_t> in = paddedType.getShape();
      ArrayRef<int64_t> out = outType.getShape();
      auto split = [&](Value v, ArrayRef<int64_t> shape,
                       ArrayRef<ReassociationIndices> reassociation) -> Value {
        return tensor::ExpandShapeOp::create(
            rewriter, loc, RankedTensorType::get(shape, element), v,
            reassociation);
      };
      ReassociationIndices n = {0}, g = {1, 2}, h = {3}, w = {4};
      Value input5 =
          split(padded, {in[0], groups, channelsPerGroup, in[2], in[3]},
                {n, g, h, w});
      Value filter5 =
          split(op.getFilter(),
                {groups, featuresPerGroup, channelsPerGroup,
                 filterType.getDimSize(2), filterType.getDimSize(3)},
                {{0, 1}, {2}, {3}, {4}});
      auto out5 = RankedTensorType::get(
          {out[0], groups, featuresPerGroup, out[2], out[3]},
          rewriter.getF32Type());
      Value init5 = filledTensor(rewriter, loc, out5,
                                 rewriter.getF32FloatAttr(0.0f));
      Value conv =
          linalg::Conv2DNgchwGfchwOp::create(
              rewriter, loc, TypeRange{out5}, ValueRange{input5, filter5},
              ValueRange{init5}, rewriter.getI64TensorAttr(strides),
              rewriter.getI64TensorAttr(dilations))
              .getResult(0);
      conv = roundProduct(rewriter, loc, conv,
                          out5.clone(outType.getElementType()));
      result = tensor::CollapseShapeOp::create(
          rewriter, loc, outType, conv,
          SmallVector<ReassociationIndices>{n, g, h, w});
    } else {
      // Loops: n, f, o..., c, k...
      int64_t loops = 3 + 2 * spatial;
      auto dim = [&](int64_t d) { return getAffineDimExpr(d, ctx); };
      AffineExpr c = dim(2 + spatial);
      SmallVector<AffineExpr> inExprs = {
          dim(0), dim(1).floorDiv(featuresPerGroup) * channelsPerGroup + c};
      SmallVector<AffineExpr> filterExprs = {dim(1), c}, outExprs;
      for (int64_t d = 0; d < spatial; ++d) {
        AffineExpr k = dim(3 + spatial + d);
        inExprs.push_back(dim(2 + d) * strides[d] + k * dilations[d]);
        filterExprs.push_back(k);
      }
      for (int64_t d = 0; d < 2 + spatial; ++d)
        outExprs.push_back(dim(d));
      SmallVector<utils::IteratorType> iterators(2 + spatial,
                                                 utils::IteratorType::parallel);
      iterators.append(1 + spatial, utils::IteratorType::reduction);
      Type accumulator = outType.getElementType();
      Value init = filledTensor(
          rewriter, loc, outType,
          identityOf(rewriter, Combine::Sum, accumulator));
      result = linalg::GenericOp::create(
                   rewriter, loc, TypeRange{outType},
                   ValueRange{padded, op.getFilter()}, ValueRange{init},
                   {AffineMap::get(loops, 0, inExprs, ctx),
                    AffineMap::get(loops, 0, filterExprs, ctx),
                    AffineMap::get(loops, 0, outExprs, ctx)},
                   iterators,
                   [&](OpBuilder &b, Location l, ValueRange a) {
                     Value x = a[0], w = a[1];
                     if (element != accumulator) {
                       x = arith::ExtFOp::create(b, l, accumulator, x);
                       w = arith::ExtFOp::create(b, l, accumulator, w);
                     }
                     Value prod = arith::MulFOp::create(b, l, x, w);
                     Value sum = arith::AddFOp::create(b, l, a[2], prod);
                     linalg::YieldOp::create(b, l, sum);
                   })
                   .getResult(0);
    }
    if (Value bias = op.getBias()) {
      int64_t rank = outType.getRank();
      AffineMap identity = AffineMap::getMultiDimIdentityMap(rank, ctx);
      SmallVector<utils::IteratorType> parallel(rank,
                                                utils::IteratorType::parallel);
      result = linalg::GenericOp::create(
                   rewriter, loc, TypeRange{outType}, ValueRange{result, bias},
                   ValueRange{emptyTensor(rewriter, loc, outType)},
                   {identity, AffineMap::get(rank, 0, getAffineDimExpr(1, ctx)),
                    identity},
                   parallel,
                   [](OpBuilder &b, Location l, ValueRange a) {
                     Value sum = arith::AddFOp::create(b, l, a[0], a[1]);
                     linalg::YieldOp::create(b, l, sum);
                   })
                   .getResult(0);
    }
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// The negative log-likelihood of `logProbs` [N, C, d...] at `labels`
/// [N, d...] with optional class weights, reduced as ONNX specifies: `mean`
/// divides by the summed weights of the labels that are not ignored.
Value nllLoss(OpBuilder &b, Location loc, Value logProbs, Value labels,
              Value weight, LossReduction reduction,
              std::optional<int64_t> ignoreIndex, RankedTensorType lossType) {
  auto labelType = cast<RankedTensorType>(labels.getType());
  auto scoreType = cast<RankedTensorType>(logProbs.getType());
  Type element = scoreType.getElementType();
  int64_t classes = scoreType.getDimSize(1);
  auto perSample = RankedTensorType::get(labelType.getShape(), element);
  int64_t rank = labelType.getRank();
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  AffineMap identity = AffineMap::getMultiDimIdentityMap(rank, b.getContext());
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{perSample, perSample}, ValueRange{labels},
      ValueRange{emptyTensor(b, loc, perSample), emptyTensor(b, loc, perSample)},
      {identity, identity, identity}, iterators,
      [&](OpBuilder &nb, Location nl, ValueRange a) {
        Value label = a[0];
        Value zero = scalarConstant(nb, nl, element, 0.0);
        Value ignored = arith::ConstantOp::create(nb, nl, nb.getBoolAttr(false));
        if (ignoreIndex)
          ignored = arith::CmpIOp::create(
              nb, nl, arith::CmpIPredicate::eq, label,
              scalarConstant(nb, nl, label.getType(), *ignoreIndex));
        // An ignored label may be out of range: read class 0 instead.
        Value cls = normalizedIndex(nb, nl, label, classes);
        cls = arith::SelectOp::create(nb, nl, ignored, indexConstant(nb, nl, 0),
                                      cls);
        SmallVector<Value> at = {linalg::IndexOp::create(nb, nl, 0), cls};
        for (int64_t d = 1; d < rank; ++d)
          at.push_back(linalg::IndexOp::create(nb, nl, d));
        Value logp = tensor::ExtractOp::create(nb, nl, logProbs, at);
        Value w = weight ? (Value)tensor::ExtractOp::create(nb, nl, weight,
                                                           ValueRange{cls})
                         : scalarConstant(nb, nl, element, 1.0);
        w = arith::SelectOp::create(nb, nl, ignored, zero, w);
        Value loss = arith::NegFOp::create(
            nb, nl, arith::MulFOp::create(nb, nl, logp, w));
        linalg::YieldOp::create(nb, nl, ValueRange{loss, w});
      });
  Value losses = generic.getResult(0), weights = generic.getResult(1);
  if (reduction == LossReduction::None)
    return losses;
  Value total = reduce(b, loc, losses, {}, /*keepdims=*/false, Combine::Sum);
  if (reduction == LossReduction::Sum)
    return total;
  Value norm = reduce(b, loc, weights, {}, /*keepdims=*/false, Combine::Sum);
  return mapElements(b, loc, ValueRange{total, norm}, lossType,
                     [](OpBuilder &nb, Location nl, ValueRange a) -> Value {
                       return arith::DivFOp::create(nb, nl, a[0], a[1]);
                     });
}

std::optional<int64_t> ignoreIndexOf(std::optional<uint64_t> attr) {
  if (!attr)
    return std::nullopt;
  return (int64_t)*attr;
}

struct NllLossLowering : OpRewritePattern<NllLossOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(NllLossOp op,
                                PatternRewriter &rewriter) const override {
    rewriter.replaceOp(
        op, nllLoss(rewriter, op.getLoc(), op.getInput(), op.getTarget(),
                    op.getWeight(), op.getReduction(),
                    ignoreIndexOf(op.getIgnoreIndex()), op.getType()));
    return success();
  }
};

struct SoftmaxCrossEntropyLowering : OpRewritePattern<SoftmaxCrossEntropyOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SoftmaxCrossEntropyOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value logProbs = LogSoftmaxOp::create(rewriter, loc, op.getScores(), 1);
    Value loss = nllLoss(rewriter, loc, logProbs, op.getLabels(),
                         op.getWeight(), op.getReduction(),
                         ignoreIndexOf(op.getIgnoreIndex()),
                         cast<RankedTensorType>(op.getLoss().getType()));
    rewriter.replaceOp(op, {loss, logProbs});
    return success();
  }
};


/// scatter_elements: a loop nest over `updates` writing (or combining) each
/// update into a copy of the input, in order, so that with duplicate
/// indices the last update wins as ONNX specifies.
struct ScatterElementsLowering : OpRewritePattern<ScatterElementsOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ScatterElementsOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto updType = cast<RankedTensorType>(op.getUpdates().getType());
    auto inType = cast<RankedTensorType>(op.getInput().getType());
    int64_t axis = op.getAxis(), extent = inType.getDimSize(axis);
    ScatterReduction reduction = op.getReduction();
    Value indices = op.getIndices(), updates = op.getUpdates();
    SmallVector<Value> lbs, ubs, steps;
    for (int64_t d : updType.getShape()) {
      lbs.push_back(indexConstant(rewriter, loc, 0));
      ubs.push_back(indexConstant(rewriter, loc, d));
      steps.push_back(indexConstant(rewriter, loc, 1));
    }
    // Start from a copy of the input (the op has value semantics).
    Value init = mapElements(rewriter, loc, ValueRange{op.getInput()}, inType,
                             [](OpBuilder &, Location, ValueRange a) {
                               return a[0];
                             });
    scf::LoopNest nest = scf::buildLoopNest(
        rewriter, loc, lbs, ubs, steps, ValueRange{init},
        [&](OpBuilder &b, Location l, ValueRange ivs,
            ValueRange acc) -> scf::ValueVector {
          Value k = tensor::ExtractOp::create(b, l, indices, ivs);
          SmallVector<Value> at(ivs);
          at[axis] = normalizedIndex(b, l, k, extent);
          Value update = tensor::ExtractOp::create(b, l, updates, ivs);
          Value value = update;
          if (reduction != ScatterReduction::None) {
            Value old = tensor::ExtractOp::create(b, l, acc[0], at);
            Combine kind = reduction == ScatterReduction::Add   ? Combine::Sum
                           : reduction == ScatterReduction::Mul ? Combine::Prod
                           : reduction == ScatterReduction::Max ? Combine::Max
                                                                : Combine::Min;
            value = combine(b, l, kind, old, update);
          }
          return {tensor::InsertOp::create(b, l, value, acc[0], at)};
        });
    rewriter.replaceOp(op, nest.results);
    return success();
  }
};

/// top_k by repeated selection: step j picks, for every row, the best
/// element that sorts after the one picked at step j-1 (value descending --
/// ascending when !largest -- then index ascending, as ONNX orders ties).
struct TopKLowering : OpRewritePattern<TopKOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TopKOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = getContext();
    Value input = op.getInput();
    auto inType = cast<RankedTensorType>(input.getType());
    auto valType = cast<RankedTensorType>(op.getValues().getType());
    auto idxType = cast<RankedTensorType>(op.getIndices().getType());
    int64_t axis = op.getAxis(), rank = inType.getRank(), k = op.getK();
    bool largest = op.getLargest();
    Type element = inType.getElementType();
    bool isFloat = isa<FloatType>(element);

    SmallVector<int64_t> stepShape(inType.getShape());
    stepShape[axis] = 1;
    auto stepVal = RankedTensorType::get(stepShape, element);
    auto stepIdx = RankedTensorType::get(stepShape, rewriter.getI64Type());
    SmallVector<AffineExpr> outExprs;
    SmallVector<utils::IteratorType> iterators;
    for (int64_t d = 0; d < rank; ++d) {
      outExprs.push_back(d == axis ? getAffineConstantExpr(0, ctx)
                                   : getAffineDimExpr(d, ctx));
      iterators.push_back(d == axis ? utils::IteratorType::reduction
                                    : utils::IteratorType::parallel);
    }
    AffineMap outMap = AffineMap::get(rank, 0, outExprs, ctx);
    AffineMap inMap = AffineMap::getMultiDimIdentityMap(rank, ctx);

    auto cmp = [&](OpBuilder &b, Location l, bool greater, Value x,
                   Value y) -> Value {
      if (isFloat)
        return arith::CmpFOp::create(b, l,
                                     greater ? arith::CmpFPredicate::OGT
                                             : arith::CmpFPredicate::OLT,
                                     x, y);
      return arith::CmpIOp::create(b, l,
                                   greater ? arith::CmpIPredicate::sgt
                                           : arith::CmpIPredicate::slt,
                                   x, y);
    };
    auto eq = [&](OpBuilder &b, Location l, Value x, Value y) -> Value {
      if (isFloat)
        return arith::CmpFOp::create(b, l, arith::CmpFPredicate::OEQ, x, y);
      return arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, x, y);
    };

    Value values = emptyTensor(rewriter, loc, valType);
    Value idxs = emptyTensor(rewriter, loc, idxType);
    auto loop = scf::ForOp::create(
        rewriter, loc, indexConstant(rewriter, loc, 0),
        indexConstant(rewriter, loc, k), indexConstant(rewriter, loc, 1),
        ValueRange{values, idxs},
        [&](OpBuilder &b, Location l, Value j, ValueRange acc) {
          Value bestInit = filledTensor(b, l, stepVal,
                                        identityOf(b, largest ? Combine::Max
                                                              : Combine::Min,
                                                   element));
          Value idxInit = filledTensor(b, l, stepIdx, b.getI64IntegerAttr(-1));
          auto step = linalg::GenericOp::create(
              b, l, TypeRange{stepVal, stepIdx}, ValueRange{input},
              ValueRange{bestInit, idxInit}, {inMap, outMap, outMap},
              iterators, [&](OpBuilder &nb, Location nl, ValueRange a) {
                Value v = a[0], best = a[1], bestIdx = a[2];
                Value i = arith::IndexCastOp::create(
                    nb, nl, nb.getI64Type(), linalg::IndexOp::create(nb, nl, axis));
                // Does v sort after the element picked at step j - 1?
                Value first = arith::CmpIOp::create(
                    nb, nl, arith::CmpIPredicate::eq, j, indexConstant(nb, nl, 0));
                SmallVector<Value> prevAt;
                for (int64_t d = 0; d < rank; ++d)
                  prevAt.push_back(d == axis
                                       ? (Value)arith::MaxSIOp::create(
                                             nb, nl,
                                             arith::SubIOp::create(
                                                 nb, nl, j,
                                                 indexConstant(nb, nl, 1)),
                                             indexConstant(nb, nl, 0))
                                       : (Value)linalg::IndexOp::create(nb, nl, d));
                Value prevV = tensor::ExtractOp::create(nb, nl, acc[0], prevAt);
                Value prevI = tensor::ExtractOp::create(nb, nl, acc[1], prevAt);
                Value after = arith::OrIOp::create(
                    nb, nl, cmp(nb, nl, !largest, v, prevV),
                    arith::AndIOp::create(
                        nb, nl, eq(nb, nl, v, prevV),
                        arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::sgt,
                                              i, prevI)));
                Value eligible = arith::OrIOp::create(nb, nl, first, after);
                // Better than the best so far (ties keep the lower index).
                Value none = arith::CmpIOp::create(
                    nb, nl, arith::CmpIPredicate::slt, bestIdx,
                    scalarConstant(nb, nl, nb.getI64Type(), 0));
                Value better = arith::OrIOp::create(
                    nb, nl, none, cmp(nb, nl, largest, v, best));
                Value take = arith::AndIOp::create(nb, nl, eligible, better);
                linalg::YieldOp::create(
                    nb, nl,
                    ValueRange{arith::SelectOp::create(nb, nl, take, v, best),
                               arith::SelectOp::create(nb, nl, take, i,
                                                       bestIdx)});
              });
          SmallVector<OpFoldResult> offsets(rank, b.getIndexAttr(0)),
              sizes, strides(rank, b.getIndexAttr(1));
          offsets[axis] = j;
          for (int64_t d : stepShape)
            sizes.push_back(b.getIndexAttr(d));
          Value newVals = tensor::InsertSliceOp::create(
              b, l, step.getResult(0), acc[0], offsets, sizes, strides);
          Value newIdxs = tensor::InsertSliceOp::create(
              b, l, step.getResult(1), acc[1], offsets, sizes, strides);
          scf::YieldOp::create(b, l, ValueRange{newVals, newIdxs});
        });
    rewriter.replaceOp(op, loop.getResults());
    return success();
  }
};


/// Recurrent layers unrolled over time as an scf.for whose body is built of
/// loom ops (lowered by the same greedy rewrite that runs this pattern).
/// Input projections for all steps are one batched matmul up front.
class RecurrentBuilder {
public:
  RecurrentBuilder(PatternRewriter &b, Location loc) : b(b), loc(loc) {}

  Value matmulT(Value lhs, Value rhs) {
    return MatmulOp::create(b, loc, lhs, rhs, /*transpose_lhs=*/false,
                            /*transpose_rhs=*/true);
  }
  Value add(Value x, Value y) { return AddOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return SubOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return MulOp::create(b, loc, x, y); }
  Value sigmoid(Value x) { return SigmoidOp::create(b, loc, x); }
  Value tanh(Value x) { return TanhOp::create(b, loc, x); }

  /// `v[..., begin:begin+count, ...]` along `dim`, static.
  Value slice(Value v, int64_t dim, int64_t begin, int64_t count) {
    auto type = cast<RankedTensorType>(v.getType());
    SmallVector<int64_t> starts(type.getRank(), 0), limits(type.getShape()),
        steps(type.getRank(), 1);
    starts[dim] = begin;
    limits[dim] = begin + count;
    return SliceOp::create(b, loc, v, starts, limits, steps);
  }
  /// Drops leading unit dimension 0 ([1, a, b] -> [a, b]).
  Value squeeze0(Value v) {
    auto type = cast<RankedTensorType>(v.getType());
    return ReshapeOp::create(
        b, loc,
        RankedTensorType::get(type.getShape().drop_front(),
                              type.getElementType()),
        v);
  }
  Value unsqueeze0(Value v) {
    auto type = cast<RankedTensorType>(v.getType());
    SmallVector<int64_t> shape = {1};
    llvm::append_range(shape, type.getShape());
    return ReshapeOp::create(
        b, loc, RankedTensorType::get(shape, type.getElementType()), v);
  }
  Value zeros(ArrayRef<int64_t> shape, Type element) {
    auto type = RankedTensorType::get(shape, element);
    return ConstantOp::create(
        b, loc, DenseElementsAttr::get(type, b.getFloatAttr(element, 0.0)));
  }

  /// Step `t` of [S, B, G] as [B, G] (t dynamic).
  Value stepOf(OpBuilder &ob, Value all, Value t) {
    auto type = cast<RankedTensorType>(all.getType());
    auto stepType = RankedTensorType::get(type.getShape().drop_front(),
                                          type.getElementType());
    SmallVector<OpFoldResult> offsets = {t, ob.getIndexAttr(0),
                                         ob.getIndexAttr(0)};
    SmallVector<OpFoldResult> sizes = {ob.getIndexAttr(1)};
    for (int64_t d : stepType.getShape())
      sizes.push_back(ob.getIndexAttr(d));
    SmallVector<OpFoldResult> strides(3, ob.getIndexAttr(1));
    return tensor::ExtractSliceOp::create(ob, loc, stepType, all, offsets,
                                          sizes, strides);
  }
  /// Writes h [B, H] into y [S, D, B, H] at (t, d).
  Value store(OpBuilder &ob, Value h, Value y, Value t, int64_t d) {
    auto hType = cast<RankedTensorType>(h.getType());
    SmallVector<OpFoldResult> offsets = {t, ob.getIndexAttr(d),
                                         ob.getIndexAttr(0),
                                         ob.getIndexAttr(0)};
    SmallVector<OpFoldResult> sizes = {ob.getIndexAttr(1), ob.getIndexAttr(1),
                                       ob.getIndexAttr(hType.getDimSize(0)),
                                       ob.getIndexAttr(hType.getDimSize(1))};
    SmallVector<OpFoldResult> strides(4, ob.getIndexAttr(1));
    return tensor::InsertSliceOp::create(ob, loc, h, y, offsets, sizes,
                                         strides);
  }
  /// The time index of loop iteration `iv` (reversed for backward passes).
  Value timeIndex(OpBuilder &ob, Value iv, int64_t seq, bool reverse) {
    if (!reverse)
      return iv;
    return arith::SubIOp::create(ob, loc, indexConstant(ob, loc, seq - 1), iv);
  }

  PatternRewriter &b;
  Location loc;
};

Value getInitialC(LstmOp op) { return op.getInitialC(); }
Value getInitialC(GruOp) { return Value(); }

/// Shared skeleton: per direction, precompute projections, run the time
/// loop with `step(h, c, x_t) -> (h', c')`, collect Y and the final states.
template <typename OpTy>
LogicalResult lowerRecurrent(
    OpTy op, PatternRewriter &rewriter, int64_t gates, bool hasCell,
    function_ref<std::pair<Value, Value>(RecurrentBuilder &, Value h, Value c,
                                         Value xt, int64_t d)>
        step) {
  Location loc = op.getLoc();
  RecurrentBuilder rb(rewriter, loc);
  auto xType = cast<RankedTensorType>(op.getInput().getType());
  Type element = xType.getElementType();
  int64_t seq = xType.getDimSize(0), batch = xType.getDimSize(1);
  int64_t hidden = op.getHiddenSize();
  bool bidirectional = op.getDirection() == RnnDirection::Bidirectional;
  int64_t dirs = bidirectional ? 2 : 1;
  Value y = emptyTensor(rewriter, loc,
                        RankedTensorType::get({seq, dirs, batch, hidden},
                                              element));
  SmallVector<Value> finalH, finalC;
  for (int64_t d = 0; d < dirs; ++d) {
    bool reverse = op.getDirection() == RnnDirection::Reverse || d == 1;
    Value w = rb.squeeze0(rb.slice(op.getW(), 0, d, 1));
    Value proj = rb.matmulT(op.getInput(), w); // [S, B, G*H]
    if (Value bias = op.getB()) {
      Value bd = rb.squeeze0(rb.slice(bias, 0, d, 1)); // [2*G*H]
      proj = rb.add(proj, rb.slice(bd, 0, 0, gates * hidden));
    }
    auto state = [&](Value init) {
      return init ? rb.squeeze0(rb.slice(init, 0, d, 1))
                  : rb.zeros({batch, hidden}, element);
    };
    Value h0 = state(op.getInitialH());
    Value c0 = hasCell ? state(getInitialC(op)) : h0;
    auto loop = scf::ForOp::create(
        rewriter, loc, indexConstant(rewriter, loc, 0),
        indexConstant(rewriter, loc, seq), indexConstant(rewriter, loc, 1),
        ValueRange{h0, c0, y},
        [&](OpBuilder &ob, Location, Value iv, ValueRange acc) {
          OpBuilder::InsertionGuard guard(rewriter);
          rewriter.setInsertionPoint(ob.getInsertionBlock(),
                                     ob.getInsertionPoint());
          Value t = rb.timeIndex(rewriter, iv, seq, reverse);
          Value xt = rb.stepOf(rewriter, proj, t);
          auto [h, c] = step(rb, acc[0], acc[1], xt, d);
          Value yNext = rb.store(rewriter, h, acc[2], t, d);
          scf::YieldOp::create(rewriter, loc, ValueRange{h, c, yNext});
        });
    finalH.push_back(rb.unsqueeze0(loop.getResult(0)));
    finalC.push_back(rb.unsqueeze0(loop.getResult(1)));
    y = loop.getResult(2);
  }
  auto join = [&](ArrayRef<Value> parts) -> Value {
    if (parts.size() == 1)
      return parts.front();
    return ConcatOp::create(rewriter, loc, parts, 0);
  };
  SmallVector<Value> results = {y, join(finalH)};
  if (hasCell)
    results.push_back(join(finalC));
  rewriter.replaceOp(op, results);
  return success();
}

struct LstmLowering : OpRewritePattern<LstmOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(LstmOp op,
                                PatternRewriter &rewriter) const override {
    int64_t hidden = op.getHiddenSize();
    return lowerRecurrent(
        op, rewriter, 4, /*hasCell=*/true,
        [&](RecurrentBuilder &rb, Value h, Value c, Value xt, int64_t d) {
          Value r = rb.squeeze0(rb.slice(op.getR(), 0, d, 1)); // [4H, H]
          Value g = rb.add(xt, rb.matmulT(h, r));
          if (Value bias = op.getB())
            g = rb.add(g, rb.slice(rb.squeeze0(rb.slice(bias, 0, d, 1)), 0,
                                   4 * hidden, 4 * hidden));
          // ONNX's gate order: input, output, forget, cell.
          Value i = rb.sigmoid(rb.slice(g, 1, 0, hidden));
          Value o = rb.sigmoid(rb.slice(g, 1, hidden, hidden));
          Value f = rb.sigmoid(rb.slice(g, 1, 2 * hidden, hidden));
          Value cand = rb.tanh(rb.slice(g, 1, 3 * hidden, hidden));
          Value cNext = rb.add(rb.mul(f, c), rb.mul(i, cand));
          Value hNext = rb.mul(o, rb.tanh(cNext));
          return std::make_pair(hNext, cNext);
        });
  }
};

struct GruLowering : OpRewritePattern<GruOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(GruOp op,
                                PatternRewriter &rewriter) const override {
    int64_t hidden = op.getHiddenSize();
    bool linearBeforeReset = op.getLinearBeforeReset();
    return lowerRecurrent(
        op, rewriter, 3, /*hasCell=*/false,
        [&](RecurrentBuilder &rb, Value h, Value c, Value xt, int64_t d) {
          Value r = rb.squeeze0(rb.slice(op.getR(), 0, d, 1)); // [3H, H]
          Value rz = rb.slice(r, 0, 0, hidden), rr = rb.slice(r, 0, hidden, hidden),
                rh = rb.slice(r, 0, 2 * hidden, hidden);
          Value rbias;
          if (Value bias = op.getB())
            rbias = rb.slice(rb.squeeze0(rb.slice(bias, 0, d, 1)), 0,
                             3 * hidden, 3 * hidden);
          auto withBias = [&](Value v, int64_t gate) {
            return rbias ? rb.add(v, rb.slice(rbias, 0, gate * hidden, hidden))
                         : v;
          };
          // ONNX's gate order: update (z), reset (r), hidden (h).
          Value z = rb.sigmoid(rb.add(rb.slice(xt, 1, 0, hidden),
                                      withBias(rb.matmulT(h, rz), 0)));
          Value reset = rb.sigmoid(rb.add(rb.slice(xt, 1, hidden, hidden),
                                          withBias(rb.matmulT(h, rr), 1)));
          Value recurrent =
              linearBeforeReset
                  ? rb.mul(reset, withBias(rb.matmulT(h, rh), 2))
                  : withBias(rb.matmulT(rb.mul(reset, h), rh), 2);
          Value cand =
              rb.tanh(rb.add(rb.slice(xt, 1, 2 * hidden, hidden), recurrent));
          // h' = (1 - z) * cand + z * h = cand + z * (h - cand)
          Value hNext = rb.add(cand, rb.mul(z, rb.sub(h, cand)));
          return std::make_pair(hNext, c);
        });
  }
};

struct ConvertLoomToLinalgPass
    : mlir::loom::impl::ConvertLoomToLinalgPassBase<ConvertLoomToLinalgPass> {
  void runOnOperation() override {
    // Mixture-of-experts layers lower through their expansion (their
    // auxiliary losses only matter to training, which expanded them before).
    expandMoeLayers(getOperation());
    RewritePatternSet patterns(&getContext());
    populateElementwisePatterns(patterns);
    populateStructuredPatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns)))) {
      getOperation().emitError("lowering loom to linalg did not converge");
      return signalPassFailure();
    }
    // What is left has no CPU lowering yet; say which ops, where. All-reduce,
    // all-gather, reduce-scatter, all-to-all and local blocks become runtime calls
    // during bufferization, and optimization barriers their operand's buffer
    // (CollectivesToRuntime.cpp).
    bool failedAny = false;
    getOperation().walk([&](Operation *op) {
      if (isa<LoomDialect>(op->getDialect()) &&
          !isa<MeshOp, AllReduceOp, AllGatherOp, ReduceScatterOp, AllToAllOp,
               AllReduceStartOp, WaitOp, BlockIndexOp, SendOp, RecvOp,
               OptimizationBarrierOp>(op)) {
        op->emitOpError() << "has no CPU lowering yet";
        failedAny = true;
      }
    });
    if (failedAny)
      signalPassFailure();
  }
};

struct LoomExposeEntryPointsPass
    : mlir::loom::impl::LoomExposeEntryPointsPassBase<
          LoomExposeEntryPointsPass> {
  void runOnOperation() override {
    // Meshes only named the groups of collectives, which bufferization has
    // turned into runtime calls; LLVM IR has no place for them.
    for (MeshOp mesh :
         llvm::make_early_inc_range(getOperation().getOps<MeshOp>()))
      mesh.erase();
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      if (!func.isPublic() || func.isExternal())
        continue;
      func->setAttr("llvm.emit_c_interface", UnitAttr::get(&getContext()));
      // Names and initial values were read from the loom dialect already;
      // LLVM IR has no place for them.
      auto strip = [](DictionaryAttr attrs) {
        SmallVector<NamedAttribute> kept;
        if (attrs)
          for (NamedAttribute attr : attrs)
            if (!attr.getName().getValue().starts_with("loom."))
              kept.push_back(attr);
        return kept;
      };
      for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i)
        func.setArgAttrs(i, strip(func.getArgAttrDict(i)));
      for (unsigned i = 0, e = func.getNumResults(); i < e; ++i)
        func.setResultAttrs(i, strip(func.getResultAttrDict(i)));
    }
  }
};

/// Whether the body of `producer` is cheap enough to compute again for each
/// element of a consumer that broadcasts it: a few plain arithmetic ops, no
/// gathers (`tensor.extract`), divisions or transcendental functions.
static bool isCheapToRecompute(linalg::GenericOp producer) {
  unsigned count = 0;
  for (Operation &op : producer.getBody()->without_terminator()) {
    if (isa<tensor::ExtractOp, arith::DivFOp, arith::RemFOp>(op) ||
        isa<math::MathDialect>(op.getDialect()))
      return false;
    if (!isa<linalg::IndexOp, arith::ConstantOp>(op) && ++count > 2)
      return false;
  }
  return true;
}

/// Whether the body of `producer` divides or calls a transcendental function
/// (GELU's erf and exp, softmax's exp): work worth doing once per element.
static bool isCostly(linalg::GenericOp producer) {
  return llvm::any_of(producer.getBody()->without_terminator(),
                      [](Operation &op) {
                        return isa<arith::DivFOp, arith::RemFOp>(op) ||
                               isa<math::MathDialect>(op.getDialect());
                      });
}

/// Whether fusing the producer of `use` into its consumer is worth it. A
/// producer whose iteration space is smaller than the consumer's (a per-row
/// statistic broadcast over the row, say) would be recomputed for every
/// element it is broadcast to, so only cheap ones are fused; a gather is
/// fused only into its single consumer, not copied into each of several.
/// A costly producer with other uses is computed once and read by each:
/// fusing it would copy its body into every consumer (GELU's gradient into
/// both the bias gradient and the product that reads it).
static bool shouldFuse(OpOperand *use) {
  auto producer = use->get().getDefiningOp<linalg::GenericOp>();
  auto consumer = dyn_cast<linalg::GenericOp>(use->getOwner());
  if (!producer || !consumer)
    return true;
  bool gathers = !producer.getBody()->getOps<tensor::ExtractOp>().empty();
  if ((gathers || isCostly(producer)) && !use->get().hasOneUse())
    return false;
  AffineMap map = consumer.getMatchingIndexingMap(use);
  if (map.isPermutation() && producer.getNumReductionLoops() == 0)
    return true;
  return isCheapToRecompute(producer);
}

/// Fuses a producer whose result is also returned (an optimizer's new
/// moment, both a result of the step and an input of the update) into an
/// all-parallel consumer, which then yields the producer's result too: one
/// loop reads the moments and the gradient once, instead of the producer's
/// loop and a consumer that recomputes it. Runs to a fixed point before
/// upstream's patterns, which would keep the producer and recompute it.
/// Other uses (activations the backward pass reads) are left to those: the
/// fused ops would grow with every result they keep.
struct FuseReturnedProducer : OpRewritePattern<linalg::GenericOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(linalg::GenericOp consumer,
                                PatternRewriter &rewriter) const override {
    if (consumer.getNumReductionLoops() != 0)
      return failure();
    for (OpOperand &operand : consumer->getOpOperands()) {
      auto producer = operand.get().getDefiningOp<linalg::GenericOp>();
      if (!producer || producer->hasOneUse() ||
          producer->getBlock() != consumer->getBlock() ||
          !linalg::areElementwiseOpsFusable(&operand) || !shouldFuse(&operand))
        continue;
      // Every other use must be the function's return, after the consumer,
      // where the fused op's extra result is available; and the consumer
      // must read the producer through this operand only (the fused op
      // would otherwise read its own result).
      if (!llvm::all_of(producer->getUsers(),
                        [&](Operation *user) {
                          return user == consumer.getOperation() ||
                                 (isa<func::ReturnOp>(user) &&
                                  user->getBlock() == consumer->getBlock());
                        }) ||
          llvm::count_if(consumer->getOperands(), [&](Value value) {
            return value.getDefiningOp() == producer.getOperation();
          }) != 1)
        continue;
      FailureOr<linalg::ElementwiseOpFusionResult> fused =
          linalg::fuseElementwiseOps(rewriter, &operand);
      if (failed(fused))
        continue;
      // The consumer's results, and the producer's, come from the fused op
      // now; the producer, left without uses, is erased as dead.
      for (auto [original, replacement] : fused->replacements)
        rewriter.replaceUsesWithIf(original, replacement, [&](OpOperand &use) {
          return use.getOwner() != producer.getOperation();
        });
      rewriter.eraseOp(consumer);
      return success();
    }
    return failure();
  }
};

struct LoomFuseElementwisePass
    : mlir::loom::impl::LoomFuseElementwisePassBase<LoomFuseElementwisePass> {
  void runOnOperation() override {
    RewritePatternSet multiUse(&getContext());
    multiUse.add<FuseReturnedProducer>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(multiUse))))
      return signalPassFailure();
    RewritePatternSet patterns(&getContext());
    linalg::populateElementwiseOpsFusionPatterns(patterns, shouldFuse);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

/// Calls of the runtime's kernels in place of bufferized linalg ops.
class KernelCalls {
public:
  explicit KernelCalls(ModuleOp module) : module(module) {}

  /// A memref type of `rank` dimensions of `element` that accepts every
  /// layout.
  static MemRefType anyLayout(int64_t rank, Type element) {
    int64_t dyn = ShapedType::kDynamic;
    SmallVector<int64_t> dims(rank, dyn);
    return MemRefType::get(dims, element,
                           StridedLayoutAttr::get(element.getContext(), dyn,
                                                  dims));
  }

  /// The suffix of the kernel that computes `op`, whose operands must be
  /// strided memrefs (with unit inner stride where `unitRows`): "f32" when
  /// all are f32, "bf16" or "f16" when the factors are bf16 or f16 and the
  /// result (accumulator, the last operand) f32; empty for anything else.
  static StringRef kernelSuffix(Operation *op, bool unitRows) {
    SmallVector<Type> elements;
    for (Value operand : op->getOperands()) {
      auto type = dyn_cast<MemRefType>(operand.getType());
      SmallVector<int64_t> strides;
      int64_t offset;
      if (!type || failed(type.getStridesAndOffset(strides, offset)) ||
          (unitRows && strides.back() != 1))
        return {};
      elements.push_back(type.getElementType());
    }
    if (elements.size() != 3 || !elements[2].isF32() ||
        elements[0] != elements[1])
      return {};
    return runtimeTypeSuffix(elements[0]);
  }

  /// Replaces `op` by a call of `name` (declared on first use with the C
  /// interface) on its operands cast to memrefs of any layout, then `extra`
  /// i64 constants.
  void replace(Operation *op, StringRef name, ArrayRef<int64_t> extra) {
    OpBuilder b(op);
    Location loc = op->getLoc();
    SmallVector<Value> args;
    for (Value operand : op->getOperands()) {
      auto type = cast<MemRefType>(operand.getType());
      args.push_back(memref::CastOp::create(
          b, loc, anyLayout(type.getRank(), type.getElementType()), operand));
    }
    for (int64_t value : extra)
      args.push_back(
          arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(value)));
    func::FuncOp &kernel = kernels[name];
    if (!kernel) {
      OpBuilder mb(module.getBodyRegion());
      kernel = func::FuncOp::create(
          mb, module.getLoc(), name,
          mb.getFunctionType(ValueRange(args).getTypes(), {}));
      kernel.setPrivate();
      kernel->setAttr("llvm.emit_c_interface", mb.getUnitAttr());
    }
    func::CallOp::create(b, loc, kernel, args);
    op->erase();
  }

private:
  ModuleOp module;
  llvm::StringMap<func::FuncOp> kernels;
};

/// Whether `value` is a +0.0 float constant.
static bool isPositiveZero(Value value) {
  FloatAttr attr;
  return matchPattern(value, m_Constant(&attr)) &&
         attr.getValue().isPosZero();
}

/// Whether `buffer` holds zeros wherever it is read: its only writer is a
/// linalg.fill with +0.0, and everything else only copies from it or frees
/// it.
static bool holdsZeros(Value buffer) {
  if (!buffer.getDefiningOp<memref::AllocOp>())
    return false;
  unsigned fills = 0;
  for (Operation *user : buffer.getUsers()) {
    if (auto fill = dyn_cast<linalg::FillOp>(user)) {
      if (!fill.hasPureBufferSemantics() ||
          !isPositiveZero(fill.getInputs()[0]) || ++fills > 1)
        return false;
      continue;
    }
    auto copy = dyn_cast<memref::CopyOp>(user);
    if (!(copy && copy.getSource() == buffer) && !isa<memref::DeallocOp>(user))
      return false;
  }
  return fills == 1;
}

/// The op that zeroes the result `c` of a contraction just before it (the
/// previous op but for constants): a fill of `c` with +0.0, or a copy into
/// `c` from a buffer of zeros. Null if there is none.
static Operation *zeroingOf(Operation *contraction, Value c) {
  Operation *prev = contraction->getPrevNode();
  while (prev && prev->hasTrait<OpTrait::ConstantLike>())
    prev = prev->getPrevNode();
  if (auto fill = dyn_cast_or_null<linalg::FillOp>(prev))
    if (fill.hasPureBufferSemantics() && fill.getOutputs()[0] == c &&
        isPositiveZero(fill.getInputs()[0]))
      return fill;
  if (auto copy = dyn_cast_or_null<memref::CopyOp>(prev))
    if (copy.getTarget() == c && holdsZeros(copy.getSource()))
      return copy;
  return nullptr;
}

struct LoomMatmulToKernelPass
    : mlir::loom::impl::LoomMatmulToKernelPassBase<LoomMatmulToKernelPass> {
  using Base::Base;

  /// Flag 4 for a product whose result was just zeroed, with the zeroing op
  /// removed (and, once nothing copies from it, the buffer of zeros).
  int64_t overwriteFlag(Operation *contraction, Value c) {
    Operation *zeroing = zeroingOf(contraction, c);
    if (!zeroing)
      return 0;
    if (auto copy = dyn_cast<memref::CopyOp>(zeroing))
      zeroSources.insert(copy.getSource());
    zeroing->erase();
    return 4;
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    KernelCalls calls(module);
    // Flags: 1 = b transposed, 2 = a transposed (4 = overwrite c, above).
    auto flags = [](bool transposeA, bool transposeB) -> int64_t {
      return (transposeB ? 1 : 0) | (transposeA ? 2 : 0);
    };
    module.walk([&](linalg::MatmulOp matmul) {
      if (!matmul.hasPureBufferSemantics())
        return;
      auto maps = matmul.getIndexingMapsArray();
      MLIRContext *c = matmul.getContext();
      auto d = [&](unsigned i) { return getAffineDimExpr(i, c); };
      bool transposeB = maps[1] == AffineMap::get(3, 0, {d(1), d(2)}, c);
      bool plainB = maps[1] == AffineMap::get(3, 0, {d(2), d(1)}, c);
      bool transposeA = maps[0] == AffineMap::get(3, 0, {d(2), d(0)}, c);
      bool plainA = maps[0] == AffineMap::get(3, 0, {d(0), d(2)}, c);
      if ((!transposeB && !plainB) || (!transposeA && !plainA) ||
          maps[2] != AffineMap::get(3, 0, {d(0), d(1)}, c))
        return;
      StringRef suffix = KernelCalls::kernelSuffix(matmul, /*unitRows=*/true);
      if (suffix.empty())
        return;
      int64_t overwrite = overwriteFlag(matmul, matmul.getOutputs()[0]);
      calls.replace(matmul,
                    (Twine(kernelPrefix.getValue()) + "matmul_" + suffix).str(),
                    {flags(transposeA, transposeB) | overwrite});
    });

    module.walk([&](linalg::BatchMatmulOp matmul) {
      if (!matmul.hasPureBufferSemantics())
        return;
      auto maps = matmul.getIndexingMapsArray();
      MLIRContext *c = matmul.getContext();
      auto d = [&](unsigned i) { return getAffineDimExpr(i, c); };
      auto map = [&](unsigned x, unsigned y) {
        return AffineMap::get(4, 0, {d(0), d(x), d(y)}, c);
      };
      bool transposeA = maps[0] == map(3, 1), plainA = maps[0] == map(1, 3);
      bool transposeB = maps[1] == map(2, 3), plainB = maps[1] == map(3, 2);
      if ((!transposeA && !plainA) || (!transposeB && !plainB) ||
          maps[2] != map(1, 2))
        return;
      StringRef suffix = KernelCalls::kernelSuffix(matmul, /*unitRows=*/true);
      if (suffix.empty())
        return;
      int64_t overwrite = overwriteFlag(matmul, matmul.getOutputs()[0]);
      calls.replace(
          matmul,
          (Twine(kernelPrefix.getValue()) + "batch_matmul_" + suffix).str(),
          {flags(transposeA, transposeB) | overwrite});
    });

    // Grouped 2-D convolutions: im2col + GEMM in the runtime, with the
    // strides and dilations as arguments.
    module.walk([&](linalg::Conv2DNgchwGfchwOp conv) {
      if (!convolutions)
        return;
      StringRef suffix = KernelCalls::kernelSuffix(conv, /*unitRows=*/false);
      if (!conv.hasPureBufferSemantics() || suffix.empty())
        return;
      SmallVector<int64_t> extra;
      for (DenseIntElementsAttr attr : {conv.getStrides(), conv.getDilations()})
        for (APInt v : attr.getValues<APInt>())
          extra.push_back(v.getSExtValue());
      calls.replace(conv,
                    (Twine(kernelPrefix.getValue()) + "conv2d_" + suffix).str(),
                    extra);
    });

    // Buffers of zeros that no product copies from any more.
    for (Value zeros : zeroSources) {
      if (llvm::any_of(zeros.getUsers(), llvm::IsaPred<memref::CopyOp>))
        continue;
      for (Operation *user : llvm::make_early_inc_range(zeros.getUsers()))
        user->erase();
      zeros.getDefiningOp()->erase();
    }
  }

private:
  llvm::SetVector<Value> zeroSources;
};

struct LoomMemrefCopyToLinalgPass
    : mlir::loom::impl::LoomMemrefCopyToLinalgPassBase<
          LoomMemrefCopyToLinalgPass> {
  void runOnOperation() override {
    getOperation().walk([](memref::CopyOp copy) {
      OpBuilder b(copy);
      linalg::CopyOp::create(b, copy.getLoc(), copy.getSource(),
                             copy.getTarget());
      copy.erase();
    });
  }
};

struct LoomCopyRepeatedResultsPass
    : mlir::loom::impl::LoomCopyRepeatedResultsPassBase<
          LoomCopyRepeatedResultsPass> {
  void runOnOperation() override {
    getOperation().walk([](func::ReturnOp ret) {
      llvm::SmallPtrSet<Value, 8> seen;
      for (OpOperand &operand : ret->getOpOperands()) {
        Value v = operand.get();
        auto type = dyn_cast<RankedTensorType>(v.getType());
        if (!type || seen.insert(v).second)
          continue;
        OpBuilder b(ret);
        Value empty = tensor::EmptyOp::create(b, ret.getLoc(), type.getShape(),
                                              type.getElementType());
        operand.set(
            linalg::CopyOp::create(b, ret.getLoc(), v, empty).getResult(0));
      }
    });
  }
};

struct LoomDuplicateFillsPass
    : mlir::loom::impl::LoomDuplicateFillsPassBase<LoomDuplicateFillsPass> {
  void runOnOperation() override {
    SmallVector<linalg::FillOp> fills;
    getOperation().walk([&](linalg::FillOp fill) {
      Value result = fill->getResult(0);
      if (fill.hasPureTensorSemantics() &&
          !(result.hasOneUse() &&
            fill->getNextNode() == *result.getUsers().begin()))
        fills.push_back(fill);
    });
    for (linalg::FillOp fill : fills) {
      SmallVector<OpOperand *> inits;
      for (OpOperand &use : fill->getResult(0).getUses())
        if (auto dps = dyn_cast<DestinationStyleOpInterface>(use.getOwner()))
          if (dps.isDpsInit(&use))
            inits.push_back(&use);
      for (OpOperand *use : inits) {
        OpBuilder b(use->getOwner());
        Value init = fill.getOutputs()[0];
        if (auto empty = init.getDefiningOp<tensor::EmptyOp>())
          init = b.clone(*empty)->getResult(0);
        use->set(linalg::FillOp::create(b, fill.getLoc(),
                                        fill.getInputs()[0], init)
                     .getResult(0));
      }
      if (fill->use_empty()) {
        Value init = fill.getOutputs()[0];
        fill.erase();
        if (auto empty = init.getDefiningOp<tensor::EmptyOp>())
          if (empty->use_empty())
            empty.erase();
      }
    }
  }
};

} // namespace

void lowering::populateStructuredPatterns(RewritePatternSet &patterns) {
  MLIRContext *ctx = patterns.getContext();
  patterns.add<
      ReduceLowering<ReduceSumOp, Combine::Sum>,
      ReduceLowering<ReduceMeanOp, Combine::Sum, /*mean=*/true>,
      ReduceLowering<ReduceMaxOp, Combine::Max>,
      ReduceLowering<ReduceMinOp, Combine::Min>,
      ReduceLowering<ReduceProdOp, Combine::Prod>,
      ArgReduceLowering<ArgMaxOp, true>, ArgReduceLowering<ArgMinOp, false>,
      MatmulLowering, SoftmaxLowering<SoftmaxOp, false>,
      SoftmaxLowering<LogSoftmaxOp, true>, LayerNormLowering, BatchNormLowering,
      BatchNormTrainLowering, TransposeLowering, ReshapeLowering,
      ExpandLowering, ConstantLowering, ConcatLowering, SplitLowering,
      SliceLowering, GatherLowering, GatherElementsLowering, OneHotLowering,
      TriluLowering, TileLowering, CumSumLowering, LocalBlockLowering,
      PipelineMarkLowering,
      DropoutLowering,
      PadLowering, ConvLowering,
      MaxPoolLowering, AvgPoolLowering, NllLossLowering,
      SoftmaxCrossEntropyLowering, ScatterElementsLowering, TopKLowering,
      LstmLowering, GruLowering>(ctx);
}
