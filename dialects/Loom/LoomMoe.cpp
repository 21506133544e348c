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
  Value column(Value v, int64_t j) { // [..., k] -> [...], entry j
    auto type = typeOf(v);
    int64_t rank = type.getRank();
    SmallVector<int64_t> starts(rank, 0), limits(type.getShape()),
        steps(rank, 1);
    starts.back() = j;
    limits.back() = j + 1;
    Value col = SliceOp::create(b, loc, v, starts, limits, steps);
    return reshape(col, type.getShape().drop_back());
  }
  Value transpose(Value v, ArrayRef<int64_t> perm) {
    return TransposeOp::create(b, loc, v, perm);
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
/// token) or `[E, R, D]`; returns `[E, R, D]`. The products that read
/// `rows` are marked `loom.moe_expert_input`, and for `[E, R, D]` rows the
/// op computing the result `loom.moe_expert_output`: expert parallelism
/// (ShardInputs.cpp) fixes the layouts of these values.
Value runExperts(Layer &c, MoeOp op, Value rows) {
  int64_t e = op.getNumExperts(), h = op.getHiddenSize(),
          d = op.getInput().getType().getDimSize(1);
  auto projection = [&](Value w, Value bias, int64_t width) {
    Value y = c.matmul(rows, w, false, true);
    y.getDefiningOp()->setAttr(kMoeExpertInputAttr, c.b.getUnitAttr());
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
  if (c.typeOf(rows).getRank() == 3)
    out.getDefiningOp()->setAttr(kMoeExpertOutputAttr,
                                 c.b.getI64IntegerAttr(op.getGroups()));
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

/// Dispatched rows `[G, E * C, D]` (group-major) as the experts' rows
/// `[E, G * C, D]`, and back.
Value toExpertMajor(Layer &c, Value rows, int64_t g, int64_t e, int64_t cap,
                    int64_t d) {
  if (g == 1)
    return c.reshape(rows, {e, cap, d});
  Value grouped = c.reshape(rows, {g, e, cap, d});
  return c.reshape(c.transpose(grouped, {1, 0, 2, 3}), {e, g * cap, d});
}
Value toGroupMajor(Layer &c, Value rows, int64_t g, int64_t e, int64_t cap,
                   int64_t d) {
  if (g == 1)
    return c.reshape(rows, {1, e * cap, d});
  Value byExpert = c.reshape(rows, {e, g, cap, d});
  return c.reshape(c.transpose(byExpert, {1, 0, 2, 3}), {g, e * cap, d});
}

MoeExpansion expand(Layer &c, MoeOp op) {
  MoeExpansion out;
  int64_t n = op.getNumTokens(), e = op.getNumExperts(), k = op.getK(),
          d = op.getInput().getType().getDimSize(1);
  Type i64 = c.b.getI64Type(), f32 = c.b.getF32Type();
  Value x = op.getInput();
  Value probs = SoftmaxOp::create(c.b, c.loc, op.getRouterLogits(), 1);
  Value balance;
  // The capacity routings route each group of s tokens on its own.
  int64_t g = op.getGroups(), s = n / g;

  if (op.getRouting() == MoeRouting::ExpertChoice) {
    // Each expert takes its C most probable tokens of each group.
    int64_t capacity = op.getCapacity();
    Value byExpert =
        c.transpose(c.reshape(probs, {g, s, e}), {0, 2, 1}); // [G, E, S]
    auto top = TopKOp::create(c.b, c.loc, byExpert, capacity, 2, true);
    Value pick = c.reshape(c.oneHot(top.getIndices(), s, c.element),
                           {g, e * capacity, s}); // [G, E*C, S]
    Value rows = c.matmul(pick, c.reshape(x, {g, s, d}), false, false);
    Value experts = toGroupMajor(
        c,
        runExperts(c, op, toExpertMajor(c, rows, g, e, capacity, d)), g, e,
        capacity, d); // [G, E*C, D]
    Value combine =
        c.mul(pick, c.reshape(top.getValues(), {g, e * capacity, 1}));
    out.result =
        c.reshape(c.matmul(combine, experts, true, false), {n, d});
    out.load = c.constant({2, e}, f32, (double)(capacity * g));
  } else {
    bool model = op.getRouting() == MoeRouting::TopK;
    // The model's own routing has one group (the verifier sees to it).
    Value grouped = model ? probs : c.reshape(probs, {g, s, e});
    auto top = TopKOp::create(c.b, c.loc, grouped, k, model ? 1 : 2, true);
    Value gates = top.getValues(); // [N, k] or [G, S, k]
    if (op.getNormalize())
      gates = c.div(gates, c.sum(gates, {model ? 1 : 2}, true));
    // One mask per choice rank j (first choices first), `[N, E]` or
    // `[G, S, E]`. Counts are f32 (exact up to 2^24 tokens), which
    // collectives over a data-parallel token dimension support.
    SmallVector<Value> masks;
    Value chosen;
    for (int64_t j = 0; j < k; ++j) {
      masks.push_back(c.oneHot(c.column(top.getIndices(), j), e, f32));
      chosen = chosen ? c.add(chosen, masks.back()) : masks.back();
    }
    if (op.getAuxLossValue() > 0)
      balance = balanceLoss(c, model ? chosen : c.reshape(chosen, {n, e}),
                            probs, n, k, e);

    if (model) {
      // Every expert on every token; the gates are zero off the top k.
      Value gate; // [N, E]
      for (int64_t j = 0; j < k; ++j) {
        Value gj = c.mul(c.convert(masks[j], c.element),
                         c.reshape(c.column(gates, j), {n, 1}));
        gate = gate ? c.add(gate, gj) : gj;
      }
      Value experts = runExperts(c, op, x); // [E, N, D]
      Value weights = c.reshape(c.transpose(gate, {1, 0}), {e, n, 1});
      out.result = c.sum(c.mul(experts, weights), {0}, false);
      Value routed = c.reshape(c.sum(chosen, {0}, false), {1, e});
      out.load = ConcatOp::create(c.b, c.loc, ValueRange{routed, routed},
                                  (uint64_t)0);
    } else {
      // Token choice: the position of a token in its expert's buffer counts
      // the earlier assignments of its group to that expert, all first
      // choices before any second choice; positions at or past the capacity
      // are dropped (one_hot of an index out of range is all zeros).
      int64_t capacity = op.getCapacity();
      Value before = c.constant({g, 1, e}, f32, 0);
      Value full = c.constant({g, s, e}, f32, (double)capacity);
      Value one = c.constant({}, f32, 1);
      Value dispatch, combine; // [G, S, E, C]
      for (int64_t j = 0; j < k; ++j) {
        Value position =
            c.add(CumSumOp::create(c.b, c.loc, masks[j], 1, true, false),
                  before);
        before = c.add(before, c.sum(masks[j], {1}, true));
        Value taken = EqualOp::create(c.b, c.loc, masks[j], one);
        Value slot = WhereOp::create(c.b, c.loc, taken, position, full);
        Value hot = c.oneHot(c.convert(slot, i64), capacity, c.element);
        Value weighted =
            c.mul(hot, c.reshape(c.column(gates, j), {g, s, 1, 1}));
        dispatch = dispatch ? c.add(dispatch, hot) : hot;
        combine = combine ? c.add(combine, weighted) : weighted;
      }
      Value pick = c.reshape(dispatch, {g, s, e * capacity});
      Value rows = c.matmul(pick, c.reshape(x, {g, s, d}), true, false);
      Value experts = toGroupMajor(
          c,
          runExperts(c, op, toExpertMajor(c, rows, g, e, capacity, d)), g,
          e, capacity, d); // [G, E*C, D]
      out.result = c.reshape(
          c.matmul(c.reshape(combine, {g, s, e * capacity}), experts, false,
                   false),
          {n, d});
      Value routed = c.reshape(c.sum(chosen, {0, 1}, false), {1, e});
      Value kept = c.reshape(
          c.convert(c.sum(dispatch, {0, 1, 3}, false), f32), {1, e});
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

SmallVector<BlockArgument> mlir::loom::expertParameters(MoeOp op) {
  SmallVector<BlockArgument> params;
  for (Value v : {op.getFc1Weight(), op.getFc1Bias(), op.getFc2Weight(),
                  op.getFc2Bias(), op.getFc3Weight(), op.getFc3Bias()}) {
    while (v && v.getDefiningOp<CastOp>())
      v = v.getDefiningOp<CastOp>().getInput();
    if (auto arg = dyn_cast_or_null<BlockArgument>(v))
      if (!llvm::is_contained(params, arg))
        params.push_back(arg);
  }
  return params;
}
