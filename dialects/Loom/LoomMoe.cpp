//===- LoomMoe.cpp - loom.moe as routing, dispatch and experts ------------===//
//
// `top_k` routing runs every expert on every token and weights the outputs
// by the (sparse) gates: exact, and E/k times the expert work of a sparse
// layer. The capacity routings dispatch tokens into `[E, C, D]` expert
// buffers with one-hot products and combine them back with the gates
// (GShard's dispatch and combine tensors), so each expert runs C rows.
//
//===----------------------------------------------------------------------===//

#include "dialects/Loom/MoeExpansion.h"

#include "dialects/Loom/LoomDialect.h"

#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;
using namespace mlir::loom;

namespace {

struct Layer {
  OpBuilder &b;
  Location loc;
  Type element;

  RankedTensorType typeOf(Value v) {
    return cast<RankedTensorType>(v.getType());
  }
  Value constant(ArrayRef<int64_t> shape, Type type, double value) {
    return ConstantOp::create(b, loc, RankedTensorType::get(shape, type),
                              value);
  }
  Value scalar(double value) { return constant({}, element, value); }
  /// `[off, on]` = `[0, 1]` of `type`, for one_hot.
  Value offOn(Type type) {
    auto valuesType = RankedTensorType::get({2}, type);
    Attribute off = isa<FloatType>(type) ? Attribute(b.getFloatAttr(type, 0))
                                         : b.getIntegerAttr(type, 0);
    Attribute on = isa<FloatType>(type) ? Attribute(b.getFloatAttr(type, 1))
                                        : b.getIntegerAttr(type, 1);
    return ConstantOp::create(b, loc,
                              cast<ElementsAttr>(DenseElementsAttr::get(
                                  valuesType, ArrayRef<Attribute>{off, on})));
  }
  Value oneHot(Value indices, int64_t depth, Type type) {
    return OneHotOp::create(b, loc, indices, offOn(type), depth,
                            typeOf(indices).getRank());
  }
  Value reshape(Value v, ArrayRef<int64_t> shape) {
    return ReshapeOp::create(b, loc, typeOf(v).clone(shape), v);
  }
  Value column(Value v, int64_t j) { // [N, k] -> [N]
    auto type = typeOf(v);
    Value col = SliceOp::create(b, loc, v, ArrayRef<int64_t>{0, j},
                                ArrayRef<int64_t>{type.getDimSize(0), j + 1},
                                ArrayRef<int64_t>{1, 1});
    return reshape(col, {type.getDimSize(0)});
  }
  Value add(Value x, Value y) { return AddOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return MulOp::create(b, loc, x, y); }
  Value div(Value x, Value y) { return DivOp::create(b, loc, x, y); }
  Value sum(Value x, ArrayRef<int64_t> axes, bool keepdims) {
    return ReduceSumOp::create(b, loc, x, axes, keepdims);
  }
  Value convert(Value x, Type type) {
    if (typeOf(x).getElementType() == type)
      return x;
    return CastOp::create(b, loc, typeOf(x).clone(type), x);
  }
  Value matmul(Value x, Value y, bool transposeLhs, bool transposeRhs) {
    return MatmulOp::create(b, loc, x, y, transposeLhs, transposeRhs);
  }
  Value activation(MoeActivation kind, Value x) {
    switch (kind) {
    case MoeActivation::Relu:
      return ReluOp::create(b, loc, x);
    case MoeActivation::Gelu:
      return GeluOp::create(b, loc, x, false);
    case MoeActivation::GeluTanh:
      return GeluOp::create(b, loc, x, true);
    case MoeActivation::Silu:
      return mul(x, SigmoidOp::create(b, loc, x));
    case MoeActivation::Identity:
      return x;
    }
    llvm_unreachable("activation");
  }
};

/// The experts on their rows: `rows` is `[N, D]` (every expert sees every
/// token) or `[E, R, D]`; returns `[E, R, D]`.
Value runExperts(Layer &c, MoeOp op, Value rows) {
  int64_t e = op.getNumExperts(), h = op.getHiddenSize(),
          d = op.getInput().getType().getDimSize(1);
  auto projection = [&](Value w, Value bias, int64_t width) {
    Value y = c.matmul(rows, w, false, true);
    if (bias)
      y = c.add(y, c.reshape(bias, {e, 1, width}));
    return y;
  };
  Value hidden = c.activation(
      op.getActivation(), projection(op.getFc1Weight(), op.getFc1Bias(), h));
  if (op.getFc3Weight())
    hidden = c.mul(hidden, projection(op.getFc3Weight(), op.getFc3Bias(), h));
  Value out = c.matmul(hidden, op.getFc2Weight(), false, true);
  if (op.getFc2Bias())
    out = c.add(out, c.reshape(op.getFc2Bias(), {e, 1, d}));
  return out;
}

/// Switch's load-balancing loss `E * sum_e f_e * P_e` over the top-k
/// assignments `chosen` (`[N, E]` counts) and the router probabilities.
Value balanceLoss(Layer &c, Value chosen, Value probs, int64_t n, int64_t k,
                  int64_t e) {
  Value share = c.div(c.sum(c.convert(chosen, c.element), {0}, false),
                      c.scalar((double)(n * k)));
  Value meanProb = ReduceMeanOp::create(c.b, c.loc, probs,
                                        ArrayRef<int64_t>{0}, false);
  return c.mul(c.sum(c.mul(share, meanProb), {}, false), c.scalar((double)e));
}

/// The router z-loss: the mean over tokens of `logsumexp(logits)^2`.
Value zLoss(Layer &c, Value logits) {
  Value max = ReduceMaxOp::create(c.b, c.loc, logits, ArrayRef<int64_t>{1},
                                  true);
  Value shifted = SubOp::create(c.b, c.loc, logits, max);
  Value lse = c.add(LogOp::create(c.b, c.loc,
                                  c.sum(ExpOp::create(c.b, c.loc, shifted),
                                        {1}, true)),
                    max);
  return ReduceMeanOp::create(c.b, c.loc, c.mul(lse, lse),
                              ArrayRef<int64_t>{}, false);
}

MoeExpansion expand(Layer &c, MoeOp op) {
  MoeExpansion out;
  int64_t n = op.getNumTokens(), e = op.getNumExperts(), k = op.getK(),
          d = op.getInput().getType().getDimSize(1);
  Type i64 = c.b.getI64Type(), f32 = c.b.getF32Type();
  Value x = op.getInput();
  Value probs = SoftmaxOp::create(c.b, c.loc, op.getRouterLogits(), 1);
  Value balance;

  if (op.getRouting() == MoeRouting::ExpertChoice) {
    // Each expert takes its C most probable tokens.
    int64_t capacity = op.getCapacity();
    Value byExpert = TransposeOp::create(c.b, c.loc, probs,
                                         ArrayRef<int64_t>{1, 0});
    auto top = TopKOp::create(c.b, c.loc, byExpert, capacity, 1, true);
    Value pick = c.reshape(c.oneHot(top.getIndices(), n, c.element),
                           {e * capacity, n}); // [E*C, N]
    Value rows = c.reshape(c.matmul(pick, x, false, false), {e, capacity, d});
    Value experts = c.reshape(runExperts(c, op, rows), {e * capacity, d});
    Value combine = c.mul(pick, c.reshape(top.getValues(), {e * capacity, 1}));
    out.result = c.matmul(combine, experts, true, false);
    out.load = c.constant({2, e}, f32, (double)capacity);
  } else {
    auto top = TopKOp::create(c.b, c.loc, probs, k, 1, true);
    Value gates = top.getValues(); // [N, k]
    if (op.getNormalize())
      gates = c.div(gates, c.sum(gates, {1}, true));
    // One [N, E] mask per choice rank j (first choices first). Counts are
    // f32 (exact up to 2^24 tokens), which collectives over a data-parallel
    // token dimension support.
    SmallVector<Value> masks;
    Value chosen;
    for (int64_t j = 0; j < k; ++j) {
      masks.push_back(c.oneHot(c.column(top.getIndices(), j), e, f32));
      chosen = chosen ? c.add(chosen, masks.back()) : masks.back();
    }
    if (op.getAuxLossValue() > 0)
      balance = balanceLoss(c, chosen, probs, n, k, e);

    if (op.getRouting() == MoeRouting::TopK) {
      // Every expert on every token; the gates are zero off the top k.
      Value gate; // [N, E]
      for (int64_t j = 0; j < k; ++j) {
        Value g = c.mul(c.convert(masks[j], c.element),
                        c.reshape(c.column(gates, j), {n, 1}));
        gate = gate ? c.add(gate, g) : g;
      }
      Value experts = runExperts(c, op, x); // [E, N, D]
      Value weights = c.reshape(
          TransposeOp::create(c.b, c.loc, gate, ArrayRef<int64_t>{1, 0}),
          {e, n, 1});
      out.result = c.sum(c.mul(experts, weights), {0}, false);
      Value routed = c.reshape(c.sum(chosen, {0}, false), {1, e});
      out.load = ConcatOp::create(c.b, c.loc, ValueRange{routed, routed},
                                  (uint64_t)0);
    } else {
      // Token choice: the position of a token in its expert's buffer counts
      // the earlier assignments to that expert, all first choices before
      // any second choice; positions at or past the capacity are dropped
      // (one_hot of an index out of range is all zeros).
      int64_t capacity = op.getCapacity();
      Value before = c.constant({1, e}, f32, 0);
      Value full = c.constant({n, e}, f32, (double)capacity);
      Value one = c.constant({}, f32, 1);
      Value dispatch, combine; // [N, E, C]
      for (int64_t j = 0; j < k; ++j) {
        Value position =
            c.add(CumSumOp::create(c.b, c.loc, masks[j], 0, true, false),
                  before);
        before = c.add(before, c.sum(masks[j], {0}, true));
        Value taken = EqualOp::create(c.b, c.loc, masks[j], one);
        Value slot = WhereOp::create(c.b, c.loc, taken, position, full);
        Value hot = c.oneHot(c.convert(slot, i64), capacity, c.element);
        Value weighted =
            c.mul(hot, c.reshape(c.column(gates, j), {n, 1, 1}));
        dispatch = dispatch ? c.add(dispatch, hot) : hot;
        combine = combine ? c.add(combine, weighted) : weighted;
      }
      Value pick = c.reshape(dispatch, {n, e * capacity});
      Value rows =
          c.reshape(c.matmul(pick, x, true, false), {e, capacity, d});
      Value experts = c.reshape(runExperts(c, op, rows), {e * capacity, d});
      out.result = c.matmul(c.reshape(combine, {n, e * capacity}), experts,
                            false, false);
      Value routed = c.reshape(c.sum(chosen, {0}, false), {1, e});
      Value kept = c.reshape(
          c.convert(c.sum(dispatch, {0, 2}, false), f32), {1, e});
      out.load = ConcatOp::create(c.b, c.loc, ValueRange{routed, kept},
                                  (uint64_t)0);
    }
  }

  if (balance)
    out.auxLoss = c.mul(balance, c.scalar(op.getAuxLossValue()));
  if (op.getZLossValue() > 0) {
    Value z = c.mul(zLoss(c, op.getRouterLogits()),
                    c.scalar(op.getZLossValue()));
    out.auxLoss = out.auxLoss ? c.add(out.auxLoss, z) : z;
  }
  return out;
}

} // namespace

MoeExpansion mlir::loom::expandMoe(OpBuilder &builder, MoeOp op) {
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPoint(op);
  Operation *previous = op->getPrevNode();
  Layer c{builder, op.getLoc(), op.getInput().getType().getElementType()};
  MoeExpansion expansion = expand(c, op);
  // The expansion inherits the layer's discardable attributes.
  SmallVector<NamedAttribute> inherited(op->getDiscardableAttrs());
  if (!inherited.empty())
    for (Operation *built = previous ? previous->getNextNode()
                                     : &op->getBlock()->front();
         built != op.getOperation(); built = built->getNextNode())
      for (NamedAttribute attr : inherited)
        built->setAttr(attr.getName(), attr.getValue());
  return expansion;
}

SmallVector<MoeExpansion> mlir::loom::expandMoeLayers(Operation *root) {
  SmallVector<MoeOp> layers;
  root->walk([&](MoeOp op) { layers.push_back(op); });
  SmallVector<MoeExpansion> expansions;
  OpBuilder builder(root->getContext());
  for (MoeOp op : layers) {
    MoeExpansion expansion = expandMoe(builder, op);
    expansion.name = onnxNodeOf(op.getLoc()).str();
    op.getResult().replaceAllUsesWith(expansion.result);
    expansions.push_back(expansion);
    op.erase();
  }
  return expansions;
}
