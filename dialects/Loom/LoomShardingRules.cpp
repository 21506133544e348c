//===- LoomShardingRules.cpp - sharding rules of the loom ops -------------===//
//
// One rule per op family: which factors make up each operand and result
// dimension, and whether splitting a factor gives local blocks (parallel),
// partial sums (reduction) or is impossible (opaque). Like Shardy's registry
// of StableHLO rules, the rules live together so that they can be read side by
// side. Ops without a rule (dropout, whose mask depends on the global element
// index; the recurrent layers; the collectives) are computed whole.
//
//===----------------------------------------------------------------------===//

#include "dialects/Loom/LoomOps.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::loom;

namespace {

using ValueFactors = ShardingRule::ValueFactors;

/// Builds a rule operand by operand; dimensions of size 1 never get a factor.
class RuleBuilder {
public:
  explicit RuleBuilder(Operation *op) : op(op) {
    rule.operands.resize(op->getNumOperands());
    rule.results.resize(op->getNumResults());
    for (auto [i, type] : llvm::enumerate(op->getOperandTypes()))
      rule.operands[i].resize(rankOf(type));
    for (auto [i, type] : llvm::enumerate(op->getResultTypes()))
      rule.results[i].resize(rankOf(type));
  }

  static int64_t rankOf(Type type) {
    auto ranked = dyn_cast<RankedTensorType>(type);
    return ranked ? ranked.getRank() : 0;
  }
  static int64_t dimOf(Value value, int64_t dim) {
    return cast<RankedTensorType>(value.getType()).getDimSize(dim);
  }

  /// A new factor of `size` (none, -1, when size is 1).
  int64_t factor(int64_t size, FactorKind kind) {
    return size == 1 ? -1 : rule.addFactor(size, kind);
  }
  void operand(unsigned i, int64_t dim, int64_t f) {
    if (f >= 0)
      rule.operands[i][dim].push_back(f);
  }
  void result(unsigned i, int64_t dim, int64_t f) {
    if (f >= 0)
      rule.results[i][dim].push_back(f);
  }
  /// Gives operand `i` dimension `dim` factor `f` when the sizes agree (a
  /// broadcast dimension gets none).
  void operandIfSameSize(unsigned i, int64_t dim, int64_t f) {
    if (f >= 0 && dimOf(op->getOperand(i), dim) == rule.factors[f].size)
      rule.operands[i][dim].push_back(f);
  }

  Operation *op;
  ShardingRule rule;
};

bool allStatic(Operation *op) {
  auto isStatic = [](Type type) {
    auto ranked = dyn_cast<RankedTensorType>(type);
    return ranked && ranked.hasStaticShape();
  };
  return llvm::all_of(op->getOperandTypes(), isStatic) &&
         llvm::all_of(op->getResultTypes(), isStatic);
}

/// Elementwise ops with numpy broadcasting: one factor per result dimension,
/// shared by the operand dimensions it is not broadcast from.
ShardingRule broadcastRule(Operation *op) {
  RuleBuilder b(op);
  auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
  int64_t rank = resultType.getRank();
  for (int64_t d = 0; d < rank; ++d) {
    int64_t f = b.factor(resultType.getDimSize(d), FactorKind::Parallel);
    for (unsigned r = 0; r < op->getNumResults(); ++r)
      b.result(r, d, f);
    for (unsigned i = 0; i < op->getNumOperands(); ++i) {
      int64_t offset = rank - RuleBuilder::rankOf(op->getOperand(i).getType());
      if (d >= offset)
        b.operandIfSameSize(i, d - offset, f);
    }
  }
  return std::move(b.rule);
}

ShardingRule matmulRule(MatmulOp op) {
  RuleBuilder b(op);
  auto lhs = op.getLhs().getType(), rhs = op.getRhs().getType();
  auto result = op.getResult().getType();
  int64_t rank = result.getRank();
  // Batch dimensions broadcast like elementwise operands.
  for (int64_t d = 0; d < rank - 2; ++d) {
    int64_t f = b.factor(result.getDimSize(d), FactorKind::Parallel);
    b.result(0, d, f);
    RankedTensorType operands[] = {lhs, rhs};
    for (unsigned i = 0; i < 2; ++i) {
      int64_t offset = rank - operands[i].getRank();
      if (d >= offset)
        b.operandIfSameSize(i, d - offset, f);
    }
  }
  int64_t lr = lhs.getRank(), rr = rhs.getRank();
  int64_t lhsM = op.getTransposeLhs() ? lr - 1 : lr - 2;
  int64_t lhsK = op.getTransposeLhs() ? lr - 2 : lr - 1;
  int64_t rhsK = op.getTransposeRhs() ? rr - 1 : rr - 2;
  int64_t rhsN = op.getTransposeRhs() ? rr - 2 : rr - 1;
  int64_t m = b.factor(lhs.getDimSize(lhsM), FactorKind::Parallel);
  int64_t n = b.factor(rhs.getDimSize(rhsN), FactorKind::Parallel);
  int64_t k = b.factor(lhs.getDimSize(lhsK), FactorKind::Reduction);
  b.operand(0, lhsM, m);
  b.operand(0, lhsK, k);
  b.operand(1, rhsK, k);
  b.operand(1, rhsN, n);
  b.result(0, rank - 2, m);
  b.result(0, rank - 1, n);
  return std::move(b.rule);
}

/// Reductions over `axes` (all when empty): `kind` is Reduction for sums
/// and means, Opaque for max/min/prod.
ShardingRule reduceRule(Operation *op, ArrayRef<int64_t> axes, bool keepdims,
                        FactorKind kind) {
  RuleBuilder b(op);
  auto input = cast<RankedTensorType>(op->getOperand(0).getType());
  int64_t out = 0;
  for (int64_t d = 0; d < input.getRank(); ++d) {
    bool reduced = axes.empty() || llvm::is_contained(axes, d);
    int64_t f = b.factor(input.getDimSize(d),
                         reduced ? kind : FactorKind::Parallel);
    b.operand(0, d, f);
    if (!reduced)
      b.result(0, out, f);
    if (!reduced || keepdims)
      ++out;
  }
  return std::move(b.rule);
}

/// Ops that act along one axis and map the other dimensions one to one
/// (softmax, cumsum, top_k, arg-reductions, pooling's spatial dimensions).
ShardingRule alongAxesRule(Operation *op, ArrayRef<int64_t> opaqueDims,
                           bool dropsDims = false) {
  RuleBuilder b(op);
  auto input = cast<RankedTensorType>(op->getOperand(0).getType());
  int64_t out = 0;
  for (int64_t d = 0; d < input.getRank(); ++d) {
    bool opaque = llvm::is_contained(opaqueDims, d);
    int64_t f = b.factor(input.getDimSize(d),
                         opaque ? FactorKind::Opaque : FactorKind::Parallel);
    b.operand(0, d, f);
    if (opaque && dropsDims)
      continue;
    for (unsigned r = 0; r < op->getNumResults(); ++r)
      if (!opaque)
        b.result(r, out, f);
    ++out;
  }
  return std::move(b.rule);
}

/// Reshape: dimensions are grouped where the running products agree; a
/// dimension that is split into (or merged from) several is made of their
/// factors, major first. Groups that mix several dimensions on both sides
/// cannot be split.
FailureOr<ShardingRule> reshapeRule(ReshapeOp op) {
  RuleBuilder b(op);
  ArrayRef<int64_t> in = op.getInput().getType().getShape();
  ArrayRef<int64_t> out = op.getResult().getType().getShape();
  size_t i = 0, j = 0;
  while (i < in.size() || j < out.size()) {
    if (i < in.size() && in[i] == 1) {
      ++i;
      continue;
    }
    if (j < out.size() && out[j] == 1) {
      ++j;
      continue;
    }
    if (i == in.size() || j == out.size())
      return failure();
    size_t i0 = i, j0 = j;
    int64_t pin = in[i++], pout = out[j++];
    while (pin != pout) {
      if (pin < pout) {
        if (i == in.size())
          return failure();
        pin *= in[i++];
      } else {
        if (j == out.size())
          return failure();
        pout *= out[j++];
      }
    }
    if (i - i0 == 1) {
      for (size_t d = j0; d < j; ++d) {
        int64_t f = b.factor(out[d], FactorKind::Parallel);
        b.result(0, d, f);
        b.operand(0, i0, f);
      }
    } else if (j - j0 == 1) {
      for (size_t d = i0; d < i; ++d) {
        int64_t f = b.factor(in[d], FactorKind::Parallel);
        b.operand(0, d, f);
        b.result(0, j0, f);
      }
    }
  }
  return std::move(b.rule);
}

ShardingRule transposeRule(TransposeOp op) {
  RuleBuilder b(op);
  auto input = op.getInput().getType();
  SmallVector<int64_t> factorOf;
  for (int64_t d = 0; d < input.getRank(); ++d) {
    factorOf.push_back(b.factor(input.getDimSize(d), FactorKind::Parallel));
    b.operand(0, d, factorOf.back());
  }
  for (auto [d, from] : llvm::enumerate(op.getPerm()))
    b.result(0, d, factorOf[from]);
  return std::move(b.rule);
}

/// Concat and split: the joined axis stays whole, the others are shared.
ShardingRule joinRule(Operation *op, int64_t axis) {
  RuleBuilder b(op);
  Value whole = isa<ConcatOp>(op) ? op->getResult(0) : op->getOperand(0);
  auto type = cast<RankedTensorType>(whole.getType());
  for (int64_t d = 0; d < type.getRank(); ++d) {
    if (d == axis)
      continue;
    int64_t f = b.factor(type.getDimSize(d), FactorKind::Parallel);
    for (unsigned i = 0; i < op->getNumOperands(); ++i)
      b.operand(i, d, f);
    for (unsigned r = 0; r < op->getNumResults(); ++r)
      b.result(r, d, f);
  }
  return std::move(b.rule);
}

/// Ops that keep a dimension as it is exactly where `keeps(d)` holds (slice,
/// pad and tile on the dimensions they do not touch).
template <typename Pred>
ShardingRule keepDimsRule(Operation *op, Pred keeps) {
  RuleBuilder b(op);
  auto input = cast<RankedTensorType>(op->getOperand(0).getType());
  for (int64_t d = 0; d < input.getRank(); ++d) {
    if (!keeps(d))
      continue;
    int64_t f = b.factor(input.getDimSize(d), FactorKind::Parallel);
    b.operand(0, d, f);
    b.result(0, d, f);
  }
  return std::move(b.rule);
}

/// gather: the indexed dimension of the input is summed over when split
/// (each device looks up the indices in its block of rows, zeros for the
/// others, and the partial results add up: a vocabulary-parallel
/// embedding); loom-partition gives the local op its block's place.
ShardingRule gatherRule(GatherOp op) {
  RuleBuilder b(op);
  auto input = op.getInput().getType();
  auto indices = op.getIndices().getType();
  int64_t axis = op.getAxis(), out = 0;
  for (int64_t d = 0; d < input.getRank(); ++d) {
    if (d == axis) {
      b.operand(0, d, b.factor(input.getDimSize(d), FactorKind::Reduction));
      for (int64_t k = 0; k < indices.getRank(); ++k) {
        int64_t f = b.factor(indices.getDimSize(k), FactorKind::Parallel);
        b.operand(1, k, f);
        b.result(0, out++, f);
      }
      continue;
    }
    int64_t f = b.factor(input.getDimSize(d), FactorKind::Parallel);
    b.operand(0, d, f);
    b.result(0, out++, f);
  }
  return std::move(b.rule);
}

/// gather_elements and scatter_elements: the indexed axis stays whole; the
/// other dimensions are shared where the sizes agree.
ShardingRule elementsRule(Operation *op, int64_t axis) {
  RuleBuilder b(op);
  auto type = cast<RankedTensorType>(op->getResult(0).getType());
  for (int64_t d = 0; d < type.getRank(); ++d) {
    if (d == axis)
      continue;
    int64_t f = b.factor(type.getDimSize(d), FactorKind::Parallel);
    b.result(0, d, f);
    for (unsigned i = 0; i < op->getNumOperands(); ++i)
      b.operandIfSameSize(i, d, f);
  }
  return std::move(b.rule);
}

/// scatter_elements: as gather_elements, except that an add into zeros (an
/// embedding gradient) is a sum over the updates' rows, which devices can
/// each do for their own rows and then add up, and its result can be split
/// along the indexed dimension (each device adds the updates that land in
/// its block: the gradient of a vocabulary-parallel embedding; loom-partition
/// gives the local op its block's place).
ShardingRule scatterRule(ScatterElementsOp op) {
  auto axis = static_cast<int64_t>(op.getAxis());
  ShardingRule rule = elementsRule(op, axis);
  auto zeros = op.getInput().getDefiningOp<ConstantOp>();
  auto dense = zeros ? dyn_cast<DenseElementsAttr>(zeros.getValue())
                     : DenseElementsAttr();
  bool intoZeros = dense && dense.isSplat() &&
                   isa<FloatType>(dense.getElementType()) &&
                   dense.getSplatValue<APFloat>().isZero();
  if (op.getReduction() != ScatterReduction::Add || !intoZeros)
    return rule;
  int64_t extent = op.getType().getDimSize(axis);
  if (extent > 1) {
    int64_t indexed = rule.addFactor(extent, FactorKind::Parallel);
    rule.results[0][axis].push_back(indexed);
    rule.operands[0][axis].push_back(indexed);
  }
  int64_t rows = op.getUpdates().getType().getDimSize(axis);
  if (rows == 1)
    return rule;
  int64_t f = rule.addFactor(rows, FactorKind::Reduction);
  rule.operands[1][axis].push_back(f);
  rule.operands[2][axis].push_back(f);
  return rule;
}

ShardingRule oneHotRule(OneHotOp op) {
  RuleBuilder b(op);
  auto indices = op.getIndices().getType();
  int64_t rank = indices.getRank();
  auto axis = static_cast<int64_t>(op.getAxis());
  if (axis < 0)
    axis += rank + 1;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t f = b.factor(indices.getDimSize(d), FactorKind::Parallel);
    b.operand(0, d, f);
    b.result(0, d < axis ? d : d + 1, f);
  }
  // The classes can be split too: each device encodes its block of them
  // (loom-partition shifts the indices into the block).
  b.result(0, axis,
           b.factor(static_cast<int64_t>(op.getDepth()), FactorKind::Parallel));
  return std::move(b.rule);
}

ShardingRule layerNormRule(LayerNormOp op) {
  RuleBuilder b(op);
  auto input = op.getInput().getType();
  int64_t rank = input.getRank(), axis = op.getAxis();
  for (int64_t d = 0; d < rank; ++d) {
    bool normalized = d >= axis;
    int64_t f = b.factor(input.getDimSize(d), normalized ? FactorKind::Opaque
                                                         : FactorKind::Parallel);
    b.operand(0, d, f);
    b.result(0, d, f);
    if (!normalized) {
      b.result(1, d, f);
      b.result(2, d, f);
      continue;
    }
    // scale and bias broadcast to the normalized dimensions.
    for (unsigned i = 1; i < op->getNumOperands(); ++i) {
      int64_t offset = rank - RuleBuilder::rankOf(op->getOperand(i).getType());
      if (d >= offset)
        b.operandIfSameSize(i, d - offset, f);
    }
  }
  return std::move(b.rule);
}

/// moe: tokens are independent under top_k routing (each token's experts
/// and gates are its own); the capacity routings rank tokens against each
/// other (a token's buffer position, an expert's top tokens), so there the
/// token dimension must be whole. Experts' dimensions are not split.
ShardingRule moeRule(MoeOp op) {
  RuleBuilder b(op);
  int64_t f = b.factor(op.getNumTokens(), op.getRouting() == MoeRouting::TopK
                                              ? FactorKind::Parallel
                                              : FactorKind::Opaque);
  b.operand(0, 0, f);
  b.operand(1, 0, f);
  b.result(0, 0, f);
  return std::move(b.rule);
}

/// batch_norm (given statistics): every dimension is independent; the [C]
/// operands share the channel factor.
ShardingRule batchNormRule(BatchNormOp op) {
  RuleBuilder b(op);
  auto input = op.getInput().getType();
  for (int64_t d = 0; d < input.getRank(); ++d) {
    int64_t f = b.factor(input.getDimSize(d), FactorKind::Parallel);
    b.operand(0, d, f);
    b.result(0, d, f);
    if (d == 1)
      for (unsigned i = 1; i < op->getNumOperands(); ++i)
        b.operand(i, 0, f);
  }
  return std::move(b.rule);
}

/// Convolution: the batch is parallel; without groups the output channels
/// are parallel and the input channels summed over. Spatial dimensions
/// (windows overlap) stay whole.
ShardingRule convRule(ConvOp op) {
  RuleBuilder b(op);
  auto input = op.getInput().getType();
  int64_t n = b.factor(input.getDimSize(0), FactorKind::Parallel);
  b.operand(0, 0, n);
  b.result(0, 0, n);
  if (op.getGroups() == 1) {
    int64_t c = b.factor(input.getDimSize(1), FactorKind::Reduction);
    int64_t f = b.factor(op.getFilter().getType().getDimSize(0),
                         FactorKind::Parallel);
    b.operand(0, 1, c);
    b.operand(1, 1, c);
    b.operand(1, 0, f);
    b.result(0, 1, f);
    if (op.getBias())
      b.operand(2, 0, f);
  }
  return std::move(b.rule);
}

/// Losses over `[N, C, d...]` scores and `[N, d...]` labels: the class
/// dimension of a softmax cross-entropy without class weights may be split
/// (vocabulary-parallel cross-entropy: loom-partition completes the
/// softmax's maximum and sum and the labels' scores across devices), else
/// it stays whole; N and d... are parallel, or summed over when the
/// loss is reduced. A mean over them is an average of equal shards only
/// without ignore_index or class weights (their divisor depends on the
/// labels); `loom-propagate-sharding` rewrites those means into sum / count
/// first.
template <typename LossOp>
FailureOr<ShardingRule> lossRule(LossOp op) {
  RuleBuilder b(op);
  auto scores = cast<RankedTensorType>(op->getOperand(0).getType());
  bool reduced = op.getReduction() != LossReduction::None;
  bool mean = op.getReduction() == LossReduction::Mean;
  if (mean && (op.getIgnoreIndex() || op.getWeight()))
    return failure();
  FactorKind kind = reduced ? FactorKind::Reduction : FactorKind::Parallel;
  int64_t label = 0;
  for (int64_t d = 0; d < scores.getRank(); ++d) {
    if (d == 1) {
      bool splittable =
          isa<SoftmaxCrossEntropyOp>(op.getOperation()) && !op.getWeight();
      int64_t c = b.factor(scores.getDimSize(1), splittable
                                                     ? FactorKind::Parallel
                                                     : FactorKind::Opaque);
      b.operand(0, 1, c);
      for (unsigned r = 1; r < op->getNumResults(); ++r)
        b.result(r, 1, c);
      if (op.getWeight())
        b.operand(2, 0, c);
      continue;
    }
    int64_t f = b.factor(scores.getDimSize(d), kind);
    b.operand(0, d, f);
    b.operand(1, label, f);
    if (!reduced)
      b.result(0, label, f);
    for (unsigned r = 1; r < op->getNumResults(); ++r)
      b.result(r, d, f);
    ++label;
  }
  b.rule.meanOverReductions = mean;
  return std::move(b.rule);
}

} // namespace

FailureOr<ShardingRule> mlir::loom::detail::shardingRuleOf(Operation *op) {
  if (!allStatic(op) || op->getNumResults() == 0)
    return failure();
  if (op->hasTrait<OpTrait::Elementwise>())
    return broadcastRule(op);
  return TypeSwitch<Operation *, FailureOr<ShardingRule>>(op)
      .Case<AddOp, SubOp, MulOp, DivOp, PowOp, MaxOp, MinOp, ModOp, AndOp,
            OrOp, XorOp, EqualOp, LessOp, LessEqualOp, GreaterOp,
            GreaterEqualOp, WhereOp, ExpandOp>(
          [](Operation *op) { return broadcastRule(op); })
      .Case([](ConstantOp op) -> FailureOr<ShardingRule> {
        // Only a splat has the same value in every block.
        auto dense = dyn_cast<DenseElementsAttr>(op.getValue());
        if (!dense || !dense.isSplat())
          return failure();
        return broadcastRule(op);
      })
      // Dropout on a block draws the whole tensor's masks (loom-partition
      // gives the local op its block's place).
      .Case([](DropoutOp op) { return broadcastRule(op); })
      .Case([](OptimizationBarrierOp op) { return broadcastRule(op); })
      .Case([](MatmulOp op) { return matmulRule(op); })
      .Case<ReduceSumOp, ReduceMeanOp>([](auto op) {
        ShardingRule rule = reduceRule(op, op.getAxes(), op.getKeepdims(),
                                       FactorKind::Reduction);
        rule.meanOverReductions = isa<ReduceMeanOp>(op.getOperation());
        return rule;
      })
      .Case<ReduceMaxOp, ReduceMinOp, ReduceProdOp>([](auto op) {
        return reduceRule(op, op.getAxes(), op.getKeepdims(),
                          FactorKind::Opaque);
      })
      .Case<ArgMaxOp, ArgMinOp>([](auto op) {
        return alongAxesRule(op, {static_cast<int64_t>(op.getAxis())},
                             !op.getKeepdims());
      })
      .Case<SoftmaxOp, LogSoftmaxOp, CumSumOp, TopKOp>(
          [](auto op) {
            return alongAxesRule(op, {static_cast<int64_t>(op.getAxis())});
          })
      .Case([](TriluOp op) {
        int64_t rank = op.getInput().getType().getRank();
        return alongAxesRule(op, {rank - 2, rank - 1});
      })
      .Case<MaxPoolOp, AvgPoolOp>([](auto op) {
        SmallVector<int64_t> spatial;
        for (int64_t d = 2; d < op.getInput().getType().getRank(); ++d)
          spatial.push_back(d);
        // Pooled dimensions change size: the results do not share them.
        return alongAxesRule(op, spatial);
      })
      .Case([](ReshapeOp op) { return reshapeRule(op); })
      .Case([](TransposeOp op) { return transposeRule(op); })
      .Case([](ConcatOp op) { return joinRule(op, op.getAxis()); })
      .Case([](SplitOp op) { return joinRule(op, op.getAxis()); })
      .Case([](SliceOp op) {
        auto type = op.getInput().getType();
        return keepDimsRule(op, [&](int64_t d) {
          return op.getStarts()[d] == 0 && op.getSteps()[d] == 1 &&
                 op.getLimits()[d] == type.getDimSize(d);
        });
      })
      .Case([](PadOp op) {
        return keepDimsRule(op, [&](int64_t d) {
          return op.getLow()[d] == 0 && op.getHigh()[d] == 0;
        });
      })
      .Case([](TileOp op) {
        return keepDimsRule(op,
                            [&](int64_t d) { return op.getRepeats()[d] == 1; });
      })
      .Case([](GatherOp op) { return gatherRule(op); })
      .Case([](GatherElementsOp op) { return elementsRule(op, op.getAxis()); })
      .Case([](ScatterElementsOp op) { return scatterRule(op); })
      .Case([](OneHotOp op) { return oneHotRule(op); })
      .Case([](LayerNormOp op) { return layerNormRule(op); })
      .Case([](MoeOp op) { return moeRule(op); })
      .Case([](BatchNormOp op) { return batchNormRule(op); })
      .Case([](ConvOp op) { return convRule(op); })
      .Case<SoftmaxCrossEntropyOp, NllLossOp>(
          [](auto op) { return lossRule(op); })
      .Default([](Operation *) { return failure(); });
}
