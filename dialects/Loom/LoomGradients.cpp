//===- LoomGradients.cpp - vector-Jacobian products of loom ops -----------===//
//
// Implements GradientOpInterface for the differentiable loom ops, attached to
// the ops as external models when the dialect loads. Each gradient is built
// from loom ops, so it is optimized, partitioned and lowered like the forward
// graph. Operand gradients are summed back over broadcast dimensions.
//
//===----------------------------------------------------------------------===//

#include "dialects/Loom/LoomOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/TypeUtilities.h"

#include <array>
#include <cmath>
#include <limits>
#include <numeric>

using namespace mlir;
using namespace mlir::loom;

namespace {

/// The context one gradient is built in: the builder, the op's location and
/// small constructors for the loom ops gradients are made of.
struct GradBuilder {
  OpBuilder &b;
  Location loc;

  /// A rank-0 constant of `elementType`, which broadcasts against anything.
  Value scalar(double value, Type elementType) {
    return ConstantOp::create(b, loc, RankedTensorType::get({}, elementType),
                              value);
  }
  Value scalarLike(double value, Value like) {
    return scalar(value, getElementTypeOrSelf(like.getType()));
  }
  Value zeros(RankedTensorType type) {
    return ConstantOp::create(b, loc, type, 0.0);
  }

  Value add(Value x, Value y) { return AddOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return SubOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return MulOp::create(b, loc, x, y); }
  Value div(Value x, Value y) { return DivOp::create(b, loc, x, y); }
  Value neg(Value x) { return NegOp::create(b, loc, x); }
  Value mulScalar(Value x, double c) { return mul(x, scalarLike(c, x)); }
  Value where(Value c, Value x, Value y) {
    return WhereOp::create(b, loc, c, x, y);
  }
  /// `g` where `mask` holds, 0 elsewhere.
  Value select(Value mask, Value g) {
    return where(mask, g, scalarLike(0.0, g));
  }
  Value reshape(Value x, ArrayRef<int64_t> shape) {
    auto type = cast<RankedTensorType>(x.getType());
    if (type.getShape() == shape)
      return x;
    return ReshapeOp::create(b, loc, type.clone(shape), x);
  }
  Value expandTo(Value x, RankedTensorType type) {
    if (x.getType() == type)
      return x;
    return ExpandOp::create(b, loc, type, x);
  }
  Value sum(Value x, ArrayRef<int64_t> axes, bool keepdims = true) {
    return ReduceSumOp::create(b, loc, x, axes, keepdims);
  }
  Value mean(Value x, ArrayRef<int64_t> axes) {
    return ReduceMeanOp::create(b, loc, x, axes, /*keepdims=*/true);
  }

  /// Sums `grad` (of a broadcast result) back to the shape of `target`.
  Value unbroadcast(Value grad, Type target) {
    auto gradType = cast<RankedTensorType>(grad.getType());
    auto targetType = cast<RankedTensorType>(target);
    if (gradType.getShape() == targetType.getShape())
      return grad;
    int64_t lead = gradType.getRank() - targetType.getRank();
    SmallVector<int64_t> axes;
    for (int64_t d = 0; d < gradType.getRank(); ++d)
      if (d < lead || (targetType.getDimSize(d - lead) == 1 &&
                       gradType.getDimSize(d) != 1))
        axes.push_back(d);
    Value reduced = axes.empty() ? grad : sum(grad, axes);
    return reshape(reduced, targetType.getShape());
  }
};

bool isFloatTensor(Type type) {
  return isa<FloatType>(getElementTypeOrSelf(type));
}

/// Normalized axes from `axis` to the last dimension.
SmallVector<int64_t> trailingAxes(int64_t axis, int64_t rank) {
  SmallVector<int64_t> axes;
  for (int64_t d = axis; d < rank; ++d)
    axes.push_back(d);
  return axes;
}

//===----------------------------------------------------------------------===//
// Per-op gradients. Each takes the op, the helper and the result gradients
// and fills the operand gradients (already sized, all null).
//===----------------------------------------------------------------------===//

using Grads = SmallVectorImpl<Value>;

// Elementwise unary ops: dx = g * f'(x), written with x and y = f(x).
LogicalResult gradient(NegOp, GradBuilder &h, ArrayRef<Value> g, Grads &dx) {
  dx[0] = h.neg(g[0]);
  return success();
}
LogicalResult gradient(ExpOp op, GradBuilder &h, ArrayRef<Value> g, Grads &dx) {
  dx[0] = h.mul(g[0], op.getResult());
  return success();
}
LogicalResult gradient(LogOp op, GradBuilder &h, ArrayRef<Value> g, Grads &dx) {
  dx[0] = h.div(g[0], op.getInput());
  return success();
}
LogicalResult gradient(SqrtOp op, GradBuilder &h, ArrayRef<Value> g,
                       Grads &dx) {
  dx[0] = h.div(h.mulScalar(g[0], 0.5), op.getResult());
  return success();
}
LogicalResult gradient(RsqrtOp op, GradBuilder &h, ArrayRef<Value> g,
                       Grads &dx) {
  Value y = op.getResult();
  dx[0] = h.mul(h.mulScalar(g[0], -0.5), h.mul(y, h.mul(y, y)));
  return success();
}
LogicalResult gradient(ReciprocalOp op, GradBuilder &h, ArrayRef<Value> g,
                       Grads &dx) {
  Value y = op.getResult();
  dx[0] = h.neg(h.mul(g[0], h.mul(y, y)));
  return success();
}
LogicalResult gradient(TanhOp op, GradBuilder &h, ArrayRef<Value> g,
                       Grads &dx) {
  Value y = op.getResult();
  dx[0] = h.mul(g[0], h.sub(h.scalarLike(1.0, y), h.mul(y, y)));
  return success();
}
LogicalResult gradient(SigmoidOp op, GradBuilder &h, ArrayRef<Value> g,
                       Grads &dx) {
  Value y = op.getResult();
  dx[0] = h.mul(g[0], h.mul(y, h.sub(h.scalarLike(1.0, y), y)));
  return success();
}
LogicalResult gradient(ReluOp op, GradBuilder &h, ArrayRef<Value> g,
                       Grads &dx) {
  if (!isFloatTensor(op.getType()))
    return success();
  Value x = op.getInput();
  dx[0] = h.select(GreaterOp::create(h.b, h.loc, x, h.scalarLike(0.0, x)),
                   g[0]);
  return success();
}
LogicalResult gradient(LeakyReluOp op, GradBuilder &h, ArrayRef<Value> g,
                       Grads &dx) {
  Value x = op.getInput();
  Value positive = GreaterOp::create(h.b, h.loc, x, h.scalarLike(0.0, x));
  dx[0] = h.where(positive, g[0],
                  h.mulScalar(g[0], op.getAlpha().convertToDouble()));
  return success();
}
LogicalResult gradient(AbsOp op, GradBuilder &h, ArrayRef<Value> g,
                       Grads &dx) {
  if (!isFloatTensor(op.getType()))
    return success();
  dx[0] = h.mul(g[0], SignOp::create(h.b, h.loc, op.getInput()));
  return success();
}
LogicalResult gradient(ErfOp op, GradBuilder &h, ArrayRef<Value> g,
                       Grads &dx) {
  // d/dx erf(x) = 2/sqrt(pi) * exp(-x^2)
  Value x = op.getInput();
  Value e = ExpOp::create(h.b, h.loc, h.neg(h.mul(x, x)));
  dx[0] = h.mul(g[0], h.mulScalar(e, 2.0 / std::sqrt(M_PI)));
  return success();
}
LogicalResult gradient(GeluOp op, GradBuilder &h, ArrayRef<Value> g,
                       Grads &dx) {
  Value x = op.getInput();
  Value one = h.scalarLike(1.0, x);
  Value d;
  if (op.getApproximate()) {
    // y = 0.5 x (1 + tanh(u)), u = c (x + 0.044715 x^3), c = sqrt(2/pi):
    // dy = 0.5 (1 + t) + 0.5 x (1 - t^2) c (1 + 3 * 0.044715 x^2).
    double c = std::sqrt(2.0 / M_PI);
    Value x2 = h.mul(x, x);
    Value u = h.mulScalar(h.add(x, h.mulScalar(h.mul(x2, x), 0.044715)), c);
    Value t = TanhOp::create(h.b, h.loc, u);
    Value du = h.mulScalar(h.add(one, h.mulScalar(x2, 3 * 0.044715)), c);
    Value first = h.mulScalar(h.add(one, t), 0.5);
    Value second =
        h.mul(h.mulScalar(h.mul(x, h.sub(one, h.mul(t, t))), 0.5), du);
    d = h.add(first, second);
  } else {
    // y = x Phi(x): dy = Phi(x) + x phi(x).
    Value cdf = h.mulScalar(
        h.add(one, ErfOp::create(h.b, h.loc, h.mulScalar(x, M_SQRT1_2))), 0.5);
    Value pdf = h.mulScalar(
        ExpOp::create(h.b, h.loc, h.mulScalar(h.mul(x, x), -0.5)),
        1.0 / std::sqrt(2.0 * M_PI));
    d = h.add(cdf, h.mul(x, pdf));
  }
  dx[0] = h.mul(g[0], d);
  return success();
}
LogicalResult gradient(SoftplusOp op, GradBuilder &h, ArrayRef<Value> g,
                       Grads &dx) {
  dx[0] = h.mul(g[0], SigmoidOp::create(h.b, h.loc, op.getInput()));
  return success();
}
LogicalResult gradient(EluOp op, GradBuilder &h, ArrayRef<Value> g,
                       Grads &dx) {
  // y = alpha (exp(x) - 1) below 0, so dy/dx = y + alpha there.
  Value x = op.getInput(), y = op.getResult();
  Value positive = GreaterOp::create(h.b, h.loc, x, h.scalarLike(0.0, x));
  Value below = h.add(y, h.scalarLike(op.getAlpha().convertToDouble(), y));
  dx[0] = h.where(positive, g[0], h.mul(g[0], below));
  return success();
}
LogicalResult gradient(SoftsignOp op, GradBuilder &h, ArrayRef<Value> g,
                       Grads &dx) {
  // y = x / (1 + |x|): dy/dx = 1 / (1 + |x|)^2.
  Value x = op.getInput();
  Value d = h.add(h.scalarLike(1.0, x), AbsOp::create(h.b, h.loc, x));
  dx[0] = h.div(g[0], h.mul(d, d));
  return success();
}
LogicalResult gradient(HardSigmoidOp op, GradBuilder &h, ArrayRef<Value> g,
                       Grads &dx) {
  // alpha where 0 < alpha x + beta < 1 (strictly, as PyTorch), else 0.
  Value x = op.getInput();
  double alpha = op.getAlpha().convertToDouble();
  Value z = h.add(h.mulScalar(x, alpha),
                  h.scalarLike(op.getBeta().convertToDouble(), x));
  Value inside = AndOp::create(
      h.b, h.loc, GreaterOp::create(h.b, h.loc, z, h.scalarLike(0.0, z)),
      LessOp::create(h.b, h.loc, z, h.scalarLike(1.0, z)));
  dx[0] = h.select(inside, h.mulScalar(g[0], alpha));
  return success();
}
LogicalResult gradient(SinOp op, GradBuilder &h, ArrayRef<Value> g,
                       Grads &dx) {
  dx[0] = h.mul(g[0], CosOp::create(h.b, h.loc, op.getInput()));
  return success();
}
LogicalResult gradient(CosOp op, GradBuilder &h, ArrayRef<Value> g,
                       Grads &dx) {
  dx[0] = h.neg(h.mul(g[0], SinOp::create(h.b, h.loc, op.getInput())));
  return success();
}
LogicalResult gradient(ClipOp op, GradBuilder &h, ArrayRef<Value> g,
                       Grads &dx) {
  if (!isFloatTensor(op.getType()))
    return success();
  Value x = op.getInput();
  Value grad = g[0];
  if (auto min = op.getMin())
    grad = h.select(GreaterEqualOp::create(
                        h.b, h.loc, x, h.scalarLike(min->convertToDouble(), x)),
                    grad);
  if (auto max = op.getMax())
    grad = h.select(LessEqualOp::create(h.b, h.loc, x,
                                        h.scalarLike(max->convertToDouble(), x)),
                    grad);
  dx[0] = grad;
  return success();
}
LogicalResult gradient(CastOp op, GradBuilder &h, ArrayRef<Value> g,
                       Grads &dx) {
  if (isFloatTensor(op.getInput().getType()) && isFloatTensor(op.getType()))
    dx[0] = CastOp::create(h.b, h.loc, op.getInput().getType(), g[0]);
  return success();
}

/// Dropout's mask depends only on its seed, offset and the entry's index, so
/// the same dropout of the incoming gradient applies the forward's mask and
/// scale.
LogicalResult gradient(DropoutOp op, GradBuilder &h, ArrayRef<Value> g,
                       Grads &dx) {
  if (g[0])
    dx[0] = DropoutOp::create(h.b, h.loc, g[0], op.getOffset(),
                              op.getIndexBase(), op.getRatioAttr(),
                              op.getSeedAttr(), op.getWholeShapeAttr())
                .getResult();
  return success();
}

// Binary ops with numpy broadcasting.
LogicalResult gradient(AddOp op, GradBuilder &h, ArrayRef<Value> g,
                       Grads &dx) {
  if (!isFloatTensor(op.getType()))
    return success();
  dx[0] = h.unbroadcast(g[0], op.getLhs().getType());
  dx[1] = h.unbroadcast(g[0], op.getRhs().getType());
  return success();
}
LogicalResult gradient(SubOp op, GradBuilder &h, ArrayRef<Value> g,
                       Grads &dx) {
  if (!isFloatTensor(op.getType()))
    return success();
  dx[0] = h.unbroadcast(g[0], op.getLhs().getType());
  dx[1] = h.unbroadcast(h.neg(g[0]), op.getRhs().getType());
  return success();
}
LogicalResult gradient(MulOp op, GradBuilder &h, ArrayRef<Value> g,
                       Grads &dx) {
  if (!isFloatTensor(op.getType()))
    return success();
  dx[0] = h.unbroadcast(h.mul(g[0], op.getRhs()), op.getLhs().getType());
  dx[1] = h.unbroadcast(h.mul(g[0], op.getLhs()), op.getRhs().getType());
  return success();
}
LogicalResult gradient(DivOp op, GradBuilder &h, ArrayRef<Value> g,
                       Grads &dx) {
  if (!isFloatTensor(op.getType()))
    return success();
  Value q = h.div(g[0], op.getRhs());
  dx[0] = h.unbroadcast(q, op.getLhs().getType());
  dx[1] = h.unbroadcast(h.neg(h.mul(q, op.getResult())),
                        op.getRhs().getType());
  return success();
}
LogicalResult gradient(PowOp op, GradBuilder &h, ArrayRef<Value> g,
                       Grads &dx) {
  if (!isFloatTensor(op.getType()))
    return success();
  // d/dx x^p = p x^(p-1); d/dp x^p = x^p log x.
  Value x = op.getLhs(), p = op.getRhs();
  Value xpm1 = PowOp::create(h.b, h.loc, x, h.sub(p, h.scalarLike(1.0, p)));
  dx[0] = h.unbroadcast(h.mul(g[0], h.mul(p, xpm1)), x.getType());
  dx[1] = h.unbroadcast(
      h.mul(g[0], h.mul(op.getResult(), LogOp::create(h.b, h.loc, x))),
      p.getType());
  return success();
}
template <typename CompareOp, typename OpTy>
LogicalResult minMaxGradient(OpTy op, GradBuilder &h, ArrayRef<Value> g,
                             Grads &dx) {
  if (!isFloatTensor(op.getType()))
    return success();
  Value lhsWins = CompareOp::create(h.b, h.loc, op.getLhs(), op.getRhs());
  Value zero = h.scalarLike(0.0, g[0]);
  dx[0] = h.unbroadcast(h.where(lhsWins, g[0], zero), op.getLhs().getType());
  dx[1] = h.unbroadcast(h.where(lhsWins, zero, g[0]), op.getRhs().getType());
  return success();
}
LogicalResult gradient(MaxOp op, GradBuilder &h, ArrayRef<Value> g,
                       Grads &dx) {
  return minMaxGradient<GreaterEqualOp>(op, h, g, dx);
}
LogicalResult gradient(MinOp op, GradBuilder &h, ArrayRef<Value> g,
                       Grads &dx) {
  return minMaxGradient<LessEqualOp>(op, h, g, dx);
}
LogicalResult gradient(WhereOp op, GradBuilder &h, ArrayRef<Value> g,
                       Grads &dx) {
  if (!isFloatTensor(op.getType()))
    return success();
  Value zero = h.scalarLike(0.0, g[0]);
  dx[1] = h.unbroadcast(h.where(op.getCondition(), g[0], zero),
                        op.getLhs().getType());
  dx[2] = h.unbroadcast(h.where(op.getCondition(), zero, g[0]),
                        op.getRhs().getType());
  return success();
}

// Contractions.
/// `v` with elements of type `element` (itself when they already are).
static Value castElements(GradBuilder &h, Value v, Type element) {
  auto type = cast<RankedTensorType>(v.getType());
  if (type.getElementType() == element)
    return v;
  return CastOp::create(h.b, h.loc, type.clone(element), v);
}

LogicalResult gradient(MatmulOp op, GradBuilder &h, ArrayRef<Value> g,
                       Grads &dx) {
  if (!isFloatTensor(op.getType()))
    return success();
  Value a = op.getLhs(), w = op.getRhs(), d = g[0];
  bool ta = op.getTransposeLhs(), tb = op.getTransposeRhs();
  auto aType = cast<RankedTensorType>(a.getType());
  auto wType = cast<RankedTensorType>(w.getType());
  // A product of bf16 or f16 factors that returned its f32 accumulator: its
  // gradients are products in the factors' precision.
  d = castElements(h, d, aType.getElementType());
  if (wType.getRank() == 2 && aType.getRank() > 2 && !ta) {
    // A layer applied to every row of a batch ([..., M, K] x [K, N]): the
    // weight's gradient is one product over all rows, A^T G with the
    // leading dimensions flattened, rather than a batch of products summed.
    auto type = cast<RankedTensorType>(d.getType());
    int64_t k = aType.getDimSize(aType.getRank() - 1);
    int64_t n = type.getDimSize(type.getRank() - 1);
    int64_t rows = type.getNumElements() / std::max<int64_t>(n, 1);
    Value a2 = h.reshape(a, {rows, k});
    Value d2 = h.reshape(d, {rows, n});
    dx[1] = tb ? MatmulOp::create(h.b, h.loc, d2, a2, true, false)   // G^T A
               : MatmulOp::create(h.b, h.loc, a2, d2, true, false);  // A^T G
    dx[0] = MatmulOp::create(h.b, h.loc, d, w, false, !tb);
    return success();
  }
  Value da, dw;
  // C = op(A) op(B); dA and dB follow from dC = G with the transposes folded
  // into the products.
  if (!ta && !tb) {
    da = MatmulOp::create(h.b, h.loc, d, w, false, true);   // G B^T
    dw = MatmulOp::create(h.b, h.loc, a, d, true, false);   // A^T G
  } else if (ta && !tb) {
    da = MatmulOp::create(h.b, h.loc, w, d, false, true);   // B G^T
    dw = MatmulOp::create(h.b, h.loc, a, d, false, false);  // A G
  } else if (!ta && tb) {
    da = MatmulOp::create(h.b, h.loc, d, w, false, false);  // G B
    dw = MatmulOp::create(h.b, h.loc, d, a, true, false);   // G^T A
  } else {
    da = MatmulOp::create(h.b, h.loc, w, d, true, true);    // B^T G^T
    dw = MatmulOp::create(h.b, h.loc, d, a, true, true);    // G^T A^T
  }
  dx[0] = h.unbroadcast(da, a.getType());
  dx[1] = h.unbroadcast(dw, w.getType());
  return success();
}

// Reductions.
/// The gradient of a reduction broadcast back to the input's shape.
Value expandReduced(GradBuilder &h, Value grad, RankedTensorType inputType,
                    ArrayRef<int64_t> axes, bool keepdims) {
  SmallVector<int64_t> kept(inputType.getShape());
  for (int64_t d = 0; d < inputType.getRank(); ++d)
    if (axes.empty() || llvm::is_contained(axes, d))
      kept[d] = 1;
  Value reshaped = keepdims ? grad : h.reshape(grad, kept);
  return h.expandTo(reshaped,
                    inputType.clone(getElementTypeOrSelf(grad.getType())));
}
LogicalResult gradient(ReduceSumOp op, GradBuilder &h, ArrayRef<Value> g,
                       Grads &dx) {
  if (!isFloatTensor(op.getType()))
    return success();
  dx[0] = expandReduced(h, g[0], op.getInput().getType(), op.getAxes(),
                        op.getKeepdims());
  return success();
}
LogicalResult gradient(ReduceMeanOp op, GradBuilder &h, ArrayRef<Value> g,
                       Grads &dx) {
  if (!isFloatTensor(op.getType()))
    return success();
  auto type = cast<RankedTensorType>(op.getInput().getType());
  Value scaled = h.mulScalar(
      g[0], 1.0 / (double)mlir::loom::detail::reducedCount(type, op.getAxes()));
  dx[0] = expandReduced(h, scaled, type, op.getAxes(), op.getKeepdims());
  return success();
}
template <typename OpTy>
LogicalResult extremumGradient(OpTy op, GradBuilder &h, ArrayRef<Value> g,
                               Grads &dx) {
  if (!isFloatTensor(op.getType()))
    return success();
  // The gradient is shared evenly by the entries equal to the extremum (as
  // PyTorch's amax/amin).
  auto type = cast<RankedTensorType>(op.getInput().getType());
  Value y = expandReduced(h, op.getResult(), type, op.getAxes(),
                          op.getKeepdims());
  Value grad = expandReduced(h, g[0], type, op.getAxes(), op.getKeepdims());
  Value hit = h.select(EqualOp::create(h.b, h.loc, op.getInput(), y),
                       h.expandTo(h.scalarLike(1.0, grad), type));
  SmallVector<int64_t> axes(op.getAxes());
  if (axes.empty())
    for (int64_t d = 0; d < type.getRank(); ++d)
      axes.push_back(d);
  Value ties = h.expandTo(h.sum(hit, axes), type);
  dx[0] = h.div(h.mul(hit, grad), ties);
  return success();
}
LogicalResult gradient(ReduceMaxOp op, GradBuilder &h, ArrayRef<Value> g,
                       Grads &dx) {
  return extremumGradient(op, h, g, dx);
}
LogicalResult gradient(ReduceMinOp op, GradBuilder &h, ArrayRef<Value> g,
                       Grads &dx) {
  return extremumGradient(op, h, g, dx);
}
LogicalResult gradient(ReduceProdOp op, GradBuilder &h, ArrayRef<Value> g,
                       Grads &dx) {
  if (!isFloatTensor(op.getType()))
    return success();
  // The derivative by x_i is the product of the other entries, computed
  // without dividing by a zero: with no zero in the group it is y / x_i;
  // with exactly one, the zero entry gets the product of the nonzero ones
  // and the others 0; with two or more, every entry gets 0.
  auto type = cast<RankedTensorType>(op.getInput().getType());
  ArrayRef<int64_t> axes = op.getAxes();
  bool keep = op.getKeepdims();
  Value x = op.getInput();
  Value isZero = EqualOp::create(h.b, h.loc, x, h.scalarLike(0.0, x));
  Value ones = h.expandTo(h.scalarLike(1.0, x), type);
  Value nonZero = h.where(isZero, ones, x);
  Value prodNonZero = ReduceProdOp::create(h.b, h.loc, nonZero, axes, keep);
  Value zeros = ReduceSumOp::create(h.b, h.loc, h.select(isZero, ones), axes,
                                    keep);
  Value zerosAt = expandReduced(h, zeros, type, axes, keep);
  Value othersNonZero =
      h.div(expandReduced(h, prodNonZero, type, axes, keep), nonZero);
  Value noZero = EqualOp::create(h.b, h.loc, zerosAt, h.scalarLike(0.0, x));
  Value oneZero = EqualOp::create(h.b, h.loc, zerosAt, h.scalarLike(1.0, x));
  Value onlyZero = AndOp::create(h.b, h.loc, isZero, oneZero);
  Value others = h.where(OrOp::create(h.b, h.loc, noZero, onlyZero),
                         othersNonZero, h.scalarLike(0.0, x));
  dx[0] = h.mul(expandReduced(h, g[0], type, axes, keep), others);
  return success();
}
LogicalResult gradient(SoftmaxOp op, GradBuilder &h, ArrayRef<Value> g,
                       Grads &dx) {
  // dx = y * (g - sum(g * y))
  Value y = op.getResult();
  int64_t axis = op.getAxis();
  Value dot = h.sum(h.mul(g[0], y), {axis});
  dx[0] = h.mul(y, h.sub(g[0], dot));
  return success();
}
LogicalResult gradient(LogSoftmaxOp op, GradBuilder &h, ArrayRef<Value> g,
                       Grads &dx) {
  // dx = g - softmax(x) * sum(g)
  Value p = ExpOp::create(h.b, h.loc, op.getResult());
  dx[0] = h.sub(g[0], h.mul(p, h.sum(g[0], {(int64_t)op.getAxis()})));
  return success();
}
LogicalResult gradient(LayerNormOp op, GradBuilder &h, ArrayRef<Value> g,
                       Grads &dx) {
  if (g[1] || g[2])
    return op.emitOpError(
        "cannot differentiate through its mean or inv_std_dev results");
  auto type = cast<RankedTensorType>(op.getInput().getType());
  SmallVector<int64_t> axes = trailingAxes(op.getAxis(), type.getRank());
  Value xhat = h.mul(h.sub(op.getInput(), op.getMean()), op.getInvStdDev());
  if (Value bias = op.getBias())
    dx[2] = h.unbroadcast(g[0], bias.getType());
  dx[1] = h.unbroadcast(h.mul(g[0], xhat), op.getScale().getType());
  Value dxhat = h.mul(g[0], op.getScale());
  Value m1 = h.mean(dxhat, axes);
  Value m2 = h.mean(h.mul(dxhat, xhat), axes);
  dx[0] = h.mul(op.getInvStdDev(), h.sub(h.sub(dxhat, m1), h.mul(xhat, m2)));
  return success();
}

LogicalResult gradient(BatchNormOp op, GradBuilder &h, ArrayRef<Value> g,
                       Grads &dx) {
  // Inference form: the statistics are constants, so the op is affine per
  // channel: y = (x - mean) * inv * scale + bias, inv = 1/sqrt(var + eps).
  auto type = cast<RankedTensorType>(op.getInput().getType());
  SmallVector<int64_t> axes, kept(type.getRank(), 1);
  for (int64_t d = 0; d < type.getRank(); ++d)
    if (d != 1)
      axes.push_back(d);
  kept[1] = type.getDimSize(1);
  auto channels = cast<RankedTensorType>(op.getScale().getType()).getShape();
  Value inv = RsqrtOp::create(
      h.b, h.loc,
      h.add(h.reshape(op.getVar(), kept),
            h.scalarLike(op.getEpsilon().convertToDouble(), op.getVar())));
  Value xhat = h.mul(h.sub(op.getInput(), h.reshape(op.getMean(), kept)), inv);
  dx[0] = h.mul(g[0], h.mul(inv, h.reshape(op.getScale(), kept)));
  dx[1] = h.reshape(h.sum(h.mul(g[0], xhat), axes), channels);
  dx[2] = h.reshape(h.sum(g[0], axes), channels);
  return success();
}

LogicalResult gradient(BatchNormTrainOp op, GradBuilder &h, ArrayRef<Value> g,
                       Grads &dx) {
  // The running statistics are state, not differentiated.
  if (g[3] || g[4])
    return op.emitOpError(
        "cannot differentiate through its saved batch statistics");
  if (!g[0])
    return success();
  auto type = cast<RankedTensorType>(op.getInput().getType());
  SmallVector<int64_t> axes, kept(type.getRank(), 1);
  for (int64_t d = 0; d < type.getRank(); ++d)
    if (d != 1)
      axes.push_back(d);
  kept[1] = type.getDimSize(1);
  Value mean = h.reshape(op.getSavedMean(), kept);
  Value inv = h.reshape(op.getSavedInvStd(), kept);
  Value scale = h.reshape(op.getScale(), kept);
  Value xhat = h.mul(h.sub(op.getInput(), mean), inv);
  auto channels = cast<RankedTensorType>(op.getScale().getType()).getShape();
  dx[2] = h.reshape(h.sum(g[0], axes), channels);
  dx[1] = h.reshape(h.sum(h.mul(g[0], xhat), axes), channels);
  Value dxhat = h.mul(g[0], scale);
  Value m1 = h.mean(dxhat, axes);
  Value m2 = h.mean(h.mul(dxhat, xhat), axes);
  dx[0] = h.mul(inv, h.sub(h.sub(dxhat, m1), h.mul(xhat, m2)));
  return success();
}

/// `v` with its first two dimensions exchanged ([N, C, ...] <-> [C, N, ...]).
Value swapLeading(GradBuilder &h, Value v) {
  int64_t rank = cast<RankedTensorType>(v.getType()).getRank();
  SmallVector<int64_t> perm(rank);
  for (int64_t i = 0; i < rank; ++i)
    perm[i] = i;
  std::swap(perm[0], perm[1]);
  return TransposeOp::create(h.b, h.loc, v, perm);
}

/// `v` ([A, B, rest...]) with its two leading dimensions viewed as the
/// three of `view`, those permuted by `perm` and merged back into the two of
/// `merged`; the trailing dimensions stay in place. Grouped convolutions'
/// gradients move channel groups with it.
Value regroup(GradBuilder &h, Value v, std::array<int64_t, 3> view,
              std::array<int64_t, 3> perm, std::array<int64_t, 2> merged) {
  ArrayRef<int64_t> rest =
      cast<RankedTensorType>(v.getType()).getShape().drop_front(2);
  SmallVector<int64_t> split(view.begin(), view.end()),
      order(perm.begin(), perm.end());
  split.append(rest.begin(), rest.end());
  for (int64_t i = 3; i < (int64_t)split.size(); ++i)
    order.push_back(i);
  Value t = TransposeOp::create(h.b, h.loc, h.reshape(v, split), order);
  SmallVector<int64_t> shape(merged.begin(), merged.end());
  shape.append(rest.begin(), rest.end());
  return h.reshape(t, shape);
}

/// `g` ([N, F, O...]) spread by `strides`: zeros between its elements, so
/// that element o lands at o * stride; the result has O * stride positions.
Value spreadByStride(GradBuilder &h, Value g, ArrayRef<int64_t> strides) {
  auto gType = cast<RankedTensorType>(g.getType());
  int64_t spatial = gType.getRank() - 2;
  if (llvm::all_of(strides, [](int64_t s) { return s == 1; }))
    return g;
  SmallVector<int64_t> spread(gType.getShape().take_front(2));
  SmallVector<int64_t> flat(gType.getShape().take_front(2));
  SmallVector<int64_t> low(2, 0), high(2, 0);
  for (int64_t i = 0; i < spatial; ++i) {
    spread.append({gType.getDimSize(i + 2), 1});
    flat.push_back(gType.getDimSize(i + 2) * strides[i]);
    low.append({0, 0});
    high.append({0, strides[i] - 1});
  }
  Value v = h.reshape(g, spread);
  v = PadOp::create(h.b, h.loc, v, low, high, PadMode::Constant, APFloat(0.0));
  return h.reshape(v, flat);
}

/// The gradient of a convolution's input: `g` spread out by the stride,
/// padded so that the flipped kernel slides over every input position, and
/// convolved with the flipped, channel-transposed filter `w`.
Value convInputGradient(GradBuilder &h, Value g, Value w,
                        RankedTensorType xType, ArrayRef<int64_t> strides,
                        ArrayRef<int64_t> pads, ArrayRef<int64_t> dilations,
                        int64_t groups = 1) {
  auto gType = cast<RankedTensorType>(g.getType());
  auto wType = cast<RankedTensorType>(w.getType());
  int64_t spatial = xType.getRank() - 2;
  Value spreadG = spreadByStride(h, g, strides);
  // Pad (or crop, where negative) so that a stride-1 convolution with the
  // flipped kernel yields the input's size.
  SmallVector<int64_t> padLow(2, 0), padHigh(2, 0);
  bool any = false;
  for (int64_t i = 0; i < spatial; ++i) {
    int64_t k = wType.getDimSize(i + 2), dil = dilations[i];
    int64_t begin = dil * (k - 1) - pads[i];
    int64_t end = xType.getDimSize(i + 2) -
                  gType.getDimSize(i + 2) * strides[i] + pads[i];
    padLow.push_back(begin);
    padHigh.push_back(end);
    any |= begin != 0 || end != 0;
  }
  if (any)
    spreadG = PadOp::create(h.b, h.loc, spreadG, padLow, padHigh,
                            PadMode::Constant, APFloat(0.0));
  SmallVector<int64_t> starts(wType.getRank(), 0), limits(wType.getShape()),
      steps(wType.getRank(), 1);
  for (int64_t i = 0; i < spatial; ++i) {
    starts[i + 2] = wType.getDimSize(i + 2) - 1;
    limits[i + 2] = -1;
    steps[i + 2] = -1;
  }
  // Within each group, the filter's output and input channels exchange
  // places: [G * Fg, Cg, k...] -> [G * Cg, Fg, k...].
  Value flipped = SliceOp::create(h.b, h.loc, w, starts, limits, steps);
  int64_t fg = wType.getDimSize(0) / groups, cg = wType.getDimSize(1);
  flipped = groups == 1 ? swapLeading(h, flipped)
                        : regroup(h, flipped, {groups, fg, cg}, {0, 2, 1},
                                  {groups * cg, fg});
  SmallVector<int64_t> ones(spatial, 1), zeros(2 * spatial, 0);
  return ConvOp::create(h.b, h.loc, spreadG, flipped, Value(), ones, zeros,
                        dilations, (uint64_t)groups);
}

/// Pads and strides of a pooling op, with the ceil-mode overhang (windows
/// reading past the padded input) added to the end pads.
SmallVector<int64_t> effectivePads(RankedTensorType in, RankedTensorType out,
                                   ArrayRef<int64_t> kernel,
                                   ArrayRef<int64_t> strides,
                                   ArrayRef<int64_t> pads,
                                   ArrayRef<int64_t> dilations) {
  int64_t spatial = kernel.size();
  SmallVector<int64_t> result(pads);
  for (int64_t i = 0; i < spatial; ++i) {
    int64_t needed = (out.getDimSize(i + 2) - 1) * strides[i] +
                     (kernel[i] - 1) * dilations[i] + 1;
    int64_t have = in.getDimSize(i + 2) + pads[i] + pads[i + spatial];
    result[i + spatial] += std::max<int64_t>(0, needed - have);
  }
  return result;
}

LogicalResult gradient(AvgPoolOp op, GradBuilder &h, ArrayRef<Value> g,
                       Grads &dx) {
  // Average pooling is a sum-pooling convolution of each channel with a
  // kernel of ones, divided by the window counts; its input gradient is that
  // convolution's, applied to g / counts. Channels become batch entries.
  auto xType = cast<RankedTensorType>(op.getInput().getType());
  auto gType = cast<RankedTensorType>(g[0].getType());
  Type element = xType.getElementType();
  int64_t n = xType.getDimSize(0), c = xType.getDimSize(1);
  int64_t spatial = xType.getRank() - 2;
  if (op.getCeilMode() && op.getCountIncludePad())
    return op.emitOpError("cannot differentiate ceil_mode with "
                          "count_include_pad yet");
  ArrayRef<int64_t> kernel = op.getKernelShape();
  SmallVector<int64_t> pads = effectivePads(
      xType, gType, kernel, op.getStrides(), op.getPads(), op.getDilations());
  SmallVector<int64_t> flatX{n * c, 1}, flatG{n * c, 1}, filter{1, 1};
  for (int64_t i = 0; i < spatial; ++i) {
    flatX.push_back(xType.getDimSize(i + 2));
    flatG.push_back(gType.getDimSize(i + 2));
    filter.push_back(kernel[i]);
  }
  auto onesOf = [&](ArrayRef<int64_t> shape) -> Value {
    return ConstantOp::create(h.b, h.loc, RankedTensorType::get(shape, element),
                              1.0);
  };
  Value ones = onesOf(filter);
  Value grad = h.reshape(g[0], flatG);
  if (op.getCountIncludePad()) {
    int64_t window = 1;
    for (int64_t k : kernel)
      window *= k;
    grad = h.mulScalar(grad, 1.0 / (double)window);
  } else {
    // Positions of each window inside the input.
    SmallVector<int64_t> one(flatX);
    one[0] = 1;
    Value counts = ConvOp::create(h.b, h.loc, onesOf(one), ones, Value(),
                                  op.getStrides(), pads, op.getDilations(),
                                  (uint64_t)1);
    grad = h.div(grad, counts);
  }
  Value result = convInputGradient(h, grad, ones, xType.clone(flatX),
                                   op.getStrides(), pads, op.getDilations());
  dx[0] = h.reshape(result, xType.getShape());
  return success();
}

LogicalResult gradient(MaxPoolOp op, GradBuilder &h, ArrayRef<Value> g,
                       Grads &dx) {
  if (!isFloatTensor(op.getType()))
    return success();
  // Each output's gradient goes to the first position of its window that
  // holds the maximum (as PyTorch): for every kernel offset k, the inputs at
  // o * stride + k * dilation are compared with the window's maximum, and
  // the winners' gradients are spread back to those positions. The maximum
  // is taken again from the same candidates rather than read from the
  // forward result, so a window always finds it even if the code generator
  // computed the forward's input with other rounding.
  auto xType = cast<RankedTensorType>(op.getInput().getType());
  auto gType = cast<RankedTensorType>(g[0].getType());
  int64_t spatial = xType.getRank() - 2;
  ArrayRef<int64_t> kernel = op.getKernelShape(), strides = op.getStrides(),
                    dilations = op.getDilations();
  SmallVector<int64_t> pads =
      effectivePads(xType, gType, kernel, strides, op.getPads(), dilations);
  SmallVector<int64_t> low(2, 0), high(2, 0);
  for (int64_t i = 0; i < spatial; ++i) {
    low.push_back(pads[i]);
    high.push_back(pads[i + spatial]);
  }
  Value padded = PadOp::create(h.b, h.loc, op.getInput(), low, high,
                               PadMode::Constant,
                               APFloat(-std::numeric_limits<double>::infinity()));
  int64_t offsets = 1;
  for (int64_t k : kernel)
    offsets *= k;
  struct Offset {
    Value candidate;
    SmallVector<int64_t> placeLow, placeHigh;
  };
  SmallVector<Offset> windows;
  Value y;
  for (int64_t flat = 0; flat < offsets; ++flat) {
    SmallVector<int64_t> k(spatial);
    for (int64_t i = spatial - 1, rest = flat; i >= 0; --i) {
      k[i] = rest % kernel[i];
      rest /= kernel[i];
    }
    SmallVector<int64_t> starts(2, 0), limits(gType.getShape().take_front(2)),
        steps(2, 1);
    Offset window{Value(), SmallVector<int64_t>(2, 0),
                  SmallVector<int64_t>(2, 0)};
    for (int64_t i = 0; i < spatial; ++i) {
      int64_t start = k[i] * dilations[i];
      starts.push_back(start);
      limits.push_back(start + (gType.getDimSize(i + 2) - 1) * strides[i] + 1);
      steps.push_back(strides[i]);
      // Output o lands on input o * stride + k * dilation - pad.
      int64_t shift = start - pads[i];
      window.placeLow.push_back(shift);
      window.placeHigh.push_back(xType.getDimSize(i + 2) -
                                 gType.getDimSize(i + 2) * strides[i] - shift);
    }
    window.candidate =
        SliceOp::create(h.b, h.loc, padded, starts, limits, steps);
    y = y ? MaxOp::create(h.b, h.loc, y, window.candidate).getResult()
          : window.candidate;
    windows.push_back(std::move(window));
  }
  Value taken;
  Value total;
  for (Offset &window : windows) {
    Value hit = EqualOp::create(h.b, h.loc, window.candidate, y);
    if (taken) {
      Value fresh = AndOp::create(h.b, h.loc, hit,
                                  NotOp::create(h.b, h.loc, taken));
      taken = OrOp::create(h.b, h.loc, taken, hit);
      hit = fresh;
    } else {
      taken = hit;
    }
    Value contribution = spreadByStride(h, h.select(hit, g[0]), strides);
    contribution = PadOp::create(h.b, h.loc, contribution, window.placeLow,
                                 window.placeHigh, PadMode::Constant,
                                 APFloat(0.0));
    total = total ? h.add(total, contribution) : contribution;
  }
  dx[0] = total;
  return success();
}

LogicalResult gradient(ConvOp op, GradBuilder &h, ArrayRef<Value> g,
                       Grads &dx) {
  int64_t groups = op.getGroups();
  Value x = op.getInput(), w = op.getFilter(), d = g[0];
  auto xType = cast<RankedTensorType>(x.getType());
  auto wType = cast<RankedTensorType>(w.getType());
  auto gType = cast<RankedTensorType>(d.getType());
  int64_t spatial = xType.getRank() - 2;
  ArrayRef<int64_t> strides = op.getStrides(), pads = op.getPads(),
                    dilations = op.getDilations();
  auto transpose = [&](Value v) { return swapLeading(h, v); };

  if (Value bias = op.getBias()) {
    SmallVector<int64_t> axes;
    for (int64_t i = 0; i < gType.getRank(); ++i)
      if (i != 1)
        axes.push_back(i);
    dx[2] = h.sum(d, axes, /*keepdims=*/false);
  }
  // A bf16 or f16 convolution that returned its f32 accumulator: its
  // gradients are convolutions in the operands' precision.
  d = castElements(h, d, xType.getElementType());
  gType = cast<RankedTensorType>(d.getType());

  // dW[f, c, k] = sum_{n, o} g[n, f, o] x[n, (f / Fg) * Cg + c,
  // o*s + k*dil - pad]: a convolution of x (channels as batch) by g (batch as
  // channels) with the stride and dilation exchanged, cropped to the kernel's
  // size. With G groups, x becomes [Cg, G * N, ...] so that group g of that
  // convolution reads the batch of x's channel group g.
  {
    int64_t n = xType.getDimSize(0), cg = xType.getDimSize(1) / groups;
    Value xT = groups == 1 ? transpose(x)
                           : regroup(h, x, {n, groups, cg}, {2, 1, 0},
                                     {cg, groups * n});
    Value r = ConvOp::create(h.b, h.loc, xT, transpose(d), Value(), dilations,
                             pads, strides, (uint64_t)groups);
    auto rType = cast<RankedTensorType>(r.getType());
    SmallVector<int64_t> starts(rType.getRank(), 0), steps(rType.getRank(), 1);
    SmallVector<int64_t> limits(rType.getShape());
    for (int64_t i = 0; i < spatial; ++i)
      limits[i + 2] = wType.getDimSize(i + 2);
    if (ArrayRef<int64_t>(limits) != rType.getShape())
      r = SliceOp::create(h.b, h.loc, r, starts, limits, steps);
    dx[1] = transpose(r);
  }

  dx[0] = convInputGradient(h, d, w, xType, strides, pads, dilations, groups);
  return success();
}

// Shape and data movement.
LogicalResult gradient(ReshapeOp op, GradBuilder &h, ArrayRef<Value> g,
                       Grads &dx) {
  if (isFloatTensor(op.getType()))
    dx[0] = ReshapeOp::create(h.b, h.loc, op.getInput().getType(), g[0]);
  return success();
}
LogicalResult gradient(TransposeOp op, GradBuilder &h, ArrayRef<Value> g,
                       Grads &dx) {
  if (!isFloatTensor(op.getType()))
    return success();
  ArrayRef<int64_t> perm = op.getPerm();
  SmallVector<int64_t> inverse(perm.size());
  for (auto [i, p] : llvm::enumerate(perm))
    inverse[p] = i;
  dx[0] = TransposeOp::create(h.b, h.loc, g[0], inverse);
  return success();
}
LogicalResult gradient(ExpandOp op, GradBuilder &h, ArrayRef<Value> g,
                       Grads &dx) {
  if (isFloatTensor(op.getType()))
    dx[0] = h.unbroadcast(g[0], op.getInput().getType());
  return success();
}
LogicalResult gradient(ConcatOp op, GradBuilder &h, ArrayRef<Value> g,
                       Grads &dx) {
  if (!isFloatTensor(op.getType()))
    return success();
  auto type = cast<RankedTensorType>(op.getType());
  int64_t axis = op.getAxis(), offset = 0;
  for (auto [i, input] : llvm::enumerate(op.getInputs())) {
    int64_t size = cast<RankedTensorType>(input.getType()).getDimSize(axis);
    SmallVector<int64_t> starts(type.getRank(), 0);
    SmallVector<int64_t> limits(type.getShape());
    SmallVector<int64_t> steps(type.getRank(), 1);
    starts[axis] = offset;
    limits[axis] = offset + size;
    dx[i] = SliceOp::create(h.b, h.loc, g[0], starts, limits, steps);
    offset += size;
  }
  return success();
}
LogicalResult gradient(SplitOp op, GradBuilder &h, ArrayRef<Value> g,
                       Grads &dx) {
  if (!isFloatTensor(op.getInput().getType()))
    return success();
  SmallVector<Value> pieces;
  for (auto [grad, result] : llvm::zip(g, op.getResults()))
    pieces.push_back(grad ? grad
                          : h.zeros(cast<RankedTensorType>(result.getType())));
  dx[0] = ConcatOp::create(h.b, h.loc, pieces, op.getAxis());
  return success();
}
LogicalResult gradient(SliceOp op, GradBuilder &h, ArrayRef<Value> g,
                       Grads &dx) {
  if (!isFloatTensor(op.getType()))
    return success();
  auto type = cast<RankedTensorType>(op.getInput().getType());
  SmallVector<int64_t> low, high;
  for (int64_t d = 0; d < type.getRank(); ++d) {
    if (op.getSteps()[d] != 1)
      return op.emitOpError("cannot differentiate a slice with step ")
             << op.getSteps()[d] << " yet";
    low.push_back(op.getStarts()[d]);
    high.push_back(type.getDimSize(d) - op.getLimits()[d]);
  }
  dx[0] = PadOp::create(h.b, h.loc, g[0], low, high, PadMode::Constant,
                        APFloat(0.0));
  return success();
}
LogicalResult gradient(PadOp op, GradBuilder &h, ArrayRef<Value> g,
                       Grads &dx) {
  if (!isFloatTensor(op.getType()))
    return success();
  if (op.getMode() != PadMode::Constant)
    return op.emitOpError("cannot differentiate a pad in mode ")
           << stringifyPadMode(op.getMode()) << " yet";
  auto type = cast<RankedTensorType>(op.getInput().getType());
  // The input's entries sit at [low, low + size) of the result; a negative
  // amount cropped the input there instead, which pads the gradient back.
  SmallVector<int64_t> starts, limits, steps(type.getRank(), 1);
  SmallVector<int64_t> low, high;
  bool crops = false;
  for (int64_t d = 0; d < type.getRank(); ++d) {
    int64_t lo = op.getLow()[d], hi = op.getHigh()[d];
    starts.push_back(std::max<int64_t>(lo, 0));
    limits.push_back(starts.back() + type.getDimSize(d) +
                     std::min<int64_t>(lo, 0) + std::min<int64_t>(hi, 0));
    low.push_back(std::max<int64_t>(-lo, 0));
    high.push_back(std::max<int64_t>(-hi, 0));
    crops |= lo < 0 || hi < 0;
  }
  Value grad = SliceOp::create(h.b, h.loc, g[0], starts, limits, steps);
  if (crops)
    grad = PadOp::create(h.b, h.loc, grad, low, high, PadMode::Constant,
                         APFloat(0.0));
  dx[0] = grad;
  return success();
}
LogicalResult gradient(GatherOp op, GradBuilder &h, ArrayRef<Value> g,
                       Grads &dx) {
  if (!isFloatTensor(op.getType()))
    return success();
  // Scatter-add the result's slices back to the rows they came from, so that
  // repeated indices (a token seen twice) accumulate.
  auto dataType = cast<RankedTensorType>(op.getInput().getType());
  auto indexType = cast<RankedTensorType>(op.getIndices().getType());
  int64_t axis = op.getAxis(), rank = dataType.getRank();
  int64_t count = indexType.getNumElements();
  SmallVector<int64_t> updateShape(dataType.getShape());
  updateShape[axis] = count;
  SmallVector<int64_t> indexShape(rank, 1);
  indexShape[axis] = count;
  Value updates = h.reshape(g[0], updateShape);
  Value indices = h.reshape(op.getIndices(), indexShape);
  indices = h.expandTo(indices, indexType.clone(updateShape));
  dx[0] = ScatterElementsOp::create(h.b, h.loc, h.zeros(dataType), indices,
                                    updates, (uint64_t)axis,
                                    ScatterReduction::Add);
  return success();
}

LogicalResult gradient(TileOp op, GradBuilder &h, ArrayRef<Value> g,
                       Grads &dx) {
  if (!isFloatTensor(op.getType()))
    return success();
  // The result is [r0 * d0, r1 * d1, ...]: viewed as [r0, d0, r1, d1, ...],
  // every copy's gradient sums into the input.
  auto type = cast<RankedTensorType>(op.getInput().getType());
  SmallVector<int64_t> split, axes;
  for (auto [d, repeat] : llvm::enumerate(op.getRepeats())) {
    axes.push_back(static_cast<int64_t>(split.size()));
    split.push_back(repeat);
    split.push_back(type.getDimSize(d));
  }
  dx[0] = h.reshape(h.sum(h.reshape(g[0], split), axes, /*keepdims=*/false),
                    type.getShape());
  return success();
}
LogicalResult gradient(CumSumOp op, GradBuilder &h, ArrayRef<Value> g,
                       Grads &dx) {
  if (!isFloatTensor(op.getType()))
    return success();
  // Each input entry counts in the sums after it (before it, reversed).
  dx[0] = CumSumOp::create(h.b, h.loc, g[0], op.getAxis(), op.getExclusive(),
                           !op.getReverse());
  return success();
}
LogicalResult gradient(TriluOp op, GradBuilder &h, ArrayRef<Value> g,
                       Grads &dx) {
  if (isFloatTensor(op.getType()))
    dx[0] = TriluOp::create(h.b, h.loc, g[0], op.getK(), op.getUpper());
  return success();
}
/// Adds `updates` into zeros of `type` at `indices` along `axis`.
Value scatterAdd(GradBuilder &h, RankedTensorType type, Value indices,
                 Value updates, int64_t axis) {
  return ScatterElementsOp::create(h.b, h.loc, h.zeros(type), indices, updates,
                                   (uint64_t)axis, ScatterReduction::Add);
}
Value gatherElements(GradBuilder &h, Value input, Value indices, int64_t axis) {
  return GatherElementsOp::create(h.b, h.loc, input, indices, (uint64_t)axis);
}
LogicalResult gradient(GatherElementsOp op, GradBuilder &h, ArrayRef<Value> g,
                       Grads &dx) {
  if (!isFloatTensor(op.getType()))
    return success();
  // Every picked entry's gradient goes back to where it was picked from;
  // an entry picked twice accumulates.
  dx[0] = scatterAdd(h, op.getInput().getType(), op.getIndices(), g[0],
                     op.getAxis());
  return success();
}
LogicalResult gradient(ScatterElementsOp op, GradBuilder &h, ArrayRef<Value> g,
                       Grads &dx) {
  if (!isFloatTensor(op.getType()))
    return success();
  Value input = op.getInput(), indices = op.getIndices(),
        updates = op.getUpdates(), y = op.getResult();
  auto inputType = cast<RankedTensorType>(input.getType());
  auto updatesType = cast<RankedTensorType>(updates.getType());
  int64_t axis = op.getAxis();
  auto write = [&](Value into, Value values, ScatterReduction reduction) {
    return ScatterElementsOp::create(h.b, h.loc, into, indices, values,
                                     (uint64_t)axis, reduction)
        .getResult();
  };
  switch (op.getReduction()) {
  case ScatterReduction::None:
    // Overwritten entries of the input get nothing; each update gets the
    // gradient of the entry it was written to (with repeated indices, every
    // duplicate gets it, as PyTorch's scatter).
    dx[0] = write(g[0], h.zeros(updatesType), ScatterReduction::None);
    dx[2] = gatherElements(h, g[0], indices, axis);
    return success();
  case ScatterReduction::Add:
    dx[0] = g[0];
    dx[2] = gatherElements(h, g[0], indices, axis);
    return success();
  case ScatterReduction::Max:
  case ScatterReduction::Min: {
    // The gradient is shared evenly by the input entry and the updates that
    // equal the result (PyTorch's scatter_reduce amax/amin).
    Value inputHit = h.select(EqualOp::create(h.b, h.loc, input, y),
                              h.expandTo(h.scalarLike(1.0, y), inputType));
    Value picked = gatherElements(h, y, indices, axis);
    Value updateHit =
        h.select(EqualOp::create(h.b, h.loc, updates, picked),
                 h.expandTo(h.scalarLike(1.0, y), updatesType));
    Value ties = write(inputHit, updateHit, ScatterReduction::Add);
    Value share = h.div(g[0], ties);
    dx[0] = h.mul(inputHit, share);
    dx[2] = h.mul(updateHit, gatherElements(h, share, indices, axis));
    return success();
  }
  case ScatterReduction::Mul: {
    // y = input * prod(updates at the entry). The input's derivative is
    // that product; an update's is the product of the others, taken
    // without dividing by a zero update (as ReduceProd's gradient).
    Value ones = h.expandTo(h.scalarLike(1.0, y), inputType);
    Value product = write(ones, updates, ScatterReduction::Mul);
    dx[0] = h.mul(g[0], product);
    Value isZero = EqualOp::create(h.b, h.loc, updates, h.scalarLike(0.0, y));
    Value updateOnes = h.expandTo(h.scalarLike(1.0, y), updatesType);
    Value nonZero = h.where(isZero, updateOnes, updates);
    Value zeroCount = write(h.zeros(inputType), h.select(isZero, updateOnes),
                            ScatterReduction::Add);
    Value withNonZero =
        h.mul(input, write(ones, nonZero, ScatterReduction::Mul));
    Value gy = gatherElements(h, h.mul(g[0], y), indices, axis);
    Value gNonZero = gatherElements(h, h.mul(g[0], withNonZero), indices, axis);
    Value zerosAt = gatherElements(h, zeroCount, indices, axis);
    Value onlyZero = AndOp::create(
        h.b, h.loc, isZero,
        EqualOp::create(h.b, h.loc, zerosAt, h.scalarLike(1.0, y)));
    dx[2] = h.where(isZero, h.select(onlyZero, gNonZero), h.div(gy, nonZero));
    return success();
  }
  }
  return success();
}
LogicalResult gradient(TopKOp op, GradBuilder &h, ArrayRef<Value> g,
                       Grads &dx) {
  if (!g[0] || !isFloatTensor(op.getInput().getType()))
    return success();
  // The values' gradients go back to the positions they were taken from.
  dx[0] = scatterAdd(h, op.getInput().getType(), op.getIndices(), g[0],
                     op.getAxis());
  return success();
}
LogicalResult gradient(OneHotOp op, GradBuilder &h, ArrayRef<Value> g,
                       Grads &dx) {
  if (!isFloatTensor(op.getType()))
    return success();
  // result = off + (on - off) * hot: d(on) = sum(g * hot), d(off) = sum(g)
  // - d(on).
  auto valuesType = cast<RankedTensorType>(op.getValues().getType());
  Type element = valuesType.getElementType();
  Value offOn = ConstantOp::create(
      h.b, h.loc,
      cast<ElementsAttr>(DenseElementsAttr::get(
          valuesType, ArrayRef<Attribute>{h.b.getFloatAttr(element, 0.0),
                                          h.b.getFloatAttr(element, 1.0)})));
  Value hot = OneHotOp::create(h.b, h.loc, op.getIndices(), offOn,
                               op.getDepth(), op.getAxis());
  Value on = h.sum(h.mul(g[0], hot), {}, /*keepdims=*/false);
  Value off = h.sub(h.sum(g[0], {}, /*keepdims=*/false), on);
  dx[1] = ConcatOp::create(h.b, h.loc,
                           ValueRange{h.reshape(off, {1}), h.reshape(on, {1})},
                           (uint64_t)0);
  return success();
}

// Losses.
/// `[N, 1, d...]`: a per-sample tensor of a `[N, C, d...]` loss input,
/// broadcastable against it.
SmallVector<int64_t> classShape(RankedTensorType inputType) {
  SmallVector<int64_t> shape(inputType.getShape());
  shape[1] = 1;
  return shape;
}

/// What the gradients of the class-indexed losses share: per-sample class
/// weights, the one-hot labels and the validity of each label.
struct ClassLoss {
  /// `[N, d...]`: the class weight at each label (1 without weights), 0
  /// where the label is ignored.
  Value sampleWeight;
  /// `[N, C, d...]` one-hot labels (all-off rows for ignored labels).
  Value oneHot;
  /// `[N, d...]` 1 where the label counts, 0 where it is ignored.
  Value valid;
};

ClassLoss classLoss(GradBuilder &h, Value labels, Value weight,
                    std::optional<int64_t> ignoreIndex,
                    RankedTensorType inputType) {
  Type elementType = inputType.getElementType();
  auto labelType = cast<RankedTensorType>(labels.getType());
  ClassLoss result;
  Value validMask;
  if (ignoreIndex) {
    Value ignored = ConstantOp::create(
        h.b, h.loc, RankedTensorType::get({}, labelType.getElementType()),
        (double)*ignoreIndex);
    Value isIgnored = EqualOp::create(h.b, h.loc, labels, ignored);
    validMask = NotOp::create(h.b, h.loc, isIgnored);
    // Ignored labels may be out of range for the lookups.
    labels = h.where(isIgnored, h.zeros(labelType), labels);
  }
  Value one = h.expandTo(h.scalar(1.0, elementType),
                         labelType.clone(elementType));
  result.valid = validMask ? h.select(validMask, one) : one;
  Value w = weight ? GatherOp::create(h.b, h.loc, weight, labels, (uint64_t)0)
                         .getResult()
                   : one;
  result.sampleWeight = validMask ? h.select(validMask, w) : w;
  auto valuesType = RankedTensorType::get({2}, elementType);
  Value offOn = ConstantOp::create(
      h.b, h.loc,
      cast<ElementsAttr>(DenseElementsAttr::get(
          valuesType, ArrayRef<Attribute>{h.b.getFloatAttr(elementType, 0.0),
                                          h.b.getFloatAttr(elementType, 1.0)})));
  Value oneHot = OneHotOp::create(h.b, h.loc, labels, offOn,
                                  (uint64_t)inputType.getDimSize(1),
                                  (uint64_t)1);
  result.oneHot = h.mul(oneHot, h.reshape(result.valid, classShape(inputType)));
  return result;
}

/// d(loss)/d(log-probabilities) of a negative log-likelihood: minus the
/// one-hot labels scaled by each sample's weight and the reduction.
Value nllInputGradient(GradBuilder &h, const ClassLoss &c, Value grad,
                       LossReduction reduction, RankedTensorType inputType) {
  Value factor = h.mul(c.sampleWeight, grad);
  if (reduction == LossReduction::Mean)
    factor = h.div(factor, h.sum(c.sampleWeight, {}, /*keepdims=*/false));
  return h.neg(h.mul(c.oneHot, h.reshape(factor, classShape(inputType))));
}

/// d(loss)/d(class weights): each sample's unweighted loss `nll` [N, d...]
/// (minus the mean loss, for `mean`) summed into its class.
Value nllWeightGradient(GradBuilder &h, const ClassLoss &c, Value grad,
                        Value nll, Value loss, LossReduction reduction,
                        RankedTensorType inputType, Type weightType) {
  Value perSample = h.mul(nll, grad);
  if (reduction == LossReduction::Mean)
    perSample = h.div(h.mul(h.sub(nll, loss), grad),
                      h.sum(c.sampleWeight, {}, /*keepdims=*/false));
  Value spread =
      h.mul(c.oneHot, h.reshape(perSample, classShape(inputType)));
  SmallVector<int64_t> axes;
  for (int64_t d = 0; d < inputType.getRank(); ++d)
    if (d != 1)
      axes.push_back(d);
  return h.reshape(h.sum(spread, axes), cast<RankedTensorType>(weightType)
                                            .getShape());
}

/// Minus the log-probability at each label, `[N, d...]`.
Value unweightedNll(GradBuilder &h, const ClassLoss &c, Value logProb) {
  return h.neg(ReduceSumOp::create(h.b, h.loc, h.mul(c.oneHot, logProb),
                                   ArrayRef<int64_t>{1}, false));
}

LogicalResult gradient(SoftmaxCrossEntropyOp op, GradBuilder &h,
                       ArrayRef<Value> g, Grads &dx) {
  Value logProb = op.getLogProb();
  Value p = ExpOp::create(h.b, h.loc, logProb);
  auto scoresType = cast<RankedTensorType>(op.getScores().getType());
  ClassLoss c = classLoss(h, op.getLabels(), op.getWeight(),
                          op.getIgnoreIndex(), scoresType);
  Value grad;
  if (g[0]) {
    // Through log_softmax: d/dscores = dLogProb - p * sum(dLogProb).
    Value dLogProb =
        nllInputGradient(h, c, g[0], op.getReduction(), scoresType);
    grad = h.sub(dLogProb, h.mul(p, h.sum(dLogProb, {1})));
    if (Value weight = op.getWeight())
      dx[2] = nllWeightGradient(h, c, g[0], unweightedNll(h, c, logProb),
                                op.getLoss(), op.getReduction(), scoresType,
                                weight.getType());
  }
  if (g[1]) {
    Value viaLogProb = h.sub(g[1], h.mul(p, h.sum(g[1], {1})));
    grad = grad ? h.add(grad, viaLogProb) : viaLogProb;
  }
  dx[0] = grad;
  return success();
}
LogicalResult gradient(NllLossOp op, GradBuilder &h, ArrayRef<Value> g,
                       Grads &dx) {
  auto inputType = cast<RankedTensorType>(op.getInput().getType());
  ClassLoss c = classLoss(h, op.getTarget(), op.getWeight(),
                          op.getIgnoreIndex(), inputType);
  dx[0] = nllInputGradient(h, c, g[0], op.getReduction(), inputType);
  if (Value weight = op.getWeight())
    dx[2] = nllWeightGradient(h, c, g[0], unweightedNll(h, c, op.getInput()),
                              op.getLoss(), op.getReduction(), inputType,
                              weight.getType());
  return success();
}

//===----------------------------------------------------------------------===//
// Attachment
//===----------------------------------------------------------------------===//

template <typename OpTy>
struct GradientModel
    : public GradientOpInterface::ExternalModel<GradientModel<OpTy>, OpTy> {
  LogicalResult buildGradient(Operation *op, OpBuilder &builder,
                              ArrayRef<Value> resultGrads,
                              SmallVectorImpl<Value> &operandGrads) const {
    operandGrads.assign(op->getNumOperands(), Value());
    // Results without a gradient contribute nothing.
    bool any = llvm::any_of(resultGrads, [](Value v) { return v; });
    if (!any)
      return success();
    GradBuilder helper{builder, op->getLoc()};
    return gradient(cast<OpTy>(op), helper, resultGrads, operandGrads);
  }
};

/// Piecewise-constant ops: their gradient is zero almost everywhere.
template <typename OpTy>
struct ZeroGradientModel
    : public GradientOpInterface::ExternalModel<ZeroGradientModel<OpTy>, OpTy> {
  LogicalResult buildGradient(Operation *op, OpBuilder &, ArrayRef<Value>,
                              SmallVectorImpl<Value> &operandGrads) const {
    operandGrads.assign(op->getNumOperands(), Value());
    return success();
  }
};

template <typename... Ops>
void attach(MLIRContext *context) {
  (Ops::template attachInterface<GradientModel<Ops>>(*context), ...);
}
template <typename... Ops>
void attachZero(MLIRContext *context) {
  (Ops::template attachInterface<ZeroGradientModel<Ops>>(*context), ...);
}

} // namespace

void mlir::loom::registerGradientModels(MLIRContext *context) {
  attach<NegOp, ExpOp, LogOp, SqrtOp, RsqrtOp, ReciprocalOp, TanhOp, SigmoidOp,
         ReluOp, LeakyReluOp, AbsOp, ErfOp, GeluOp, SoftplusOp, SinOp, CosOp,
         ClipOp, CastOp, AddOp, SubOp, MulOp, DivOp, PowOp, MaxOp, MinOp,
         WhereOp, MatmulOp, ReduceSumOp, ReduceMeanOp, ReduceMaxOp, ReduceMinOp,
         SoftmaxOp, LogSoftmaxOp, LayerNormOp, ReshapeOp, TransposeOp, ExpandOp,
         ConcatOp, SplitOp, SliceOp, PadOp, GatherOp, SoftmaxCrossEntropyOp,
         NllLossOp, BatchNormOp, BatchNormTrainOp, ConvOp, AvgPoolOp, MaxPoolOp,
         DropoutOp, EluOp, SoftsignOp, HardSigmoidOp, ReduceProdOp, TileOp,
         CumSumOp, TriluOp, GatherElementsOp, ScatterElementsOp, TopKOp,
         OneHotOp>(context);
  attachZero<FloorOp, CeilOp, RoundOp, SignOp, ConstantOp>(context);
}
