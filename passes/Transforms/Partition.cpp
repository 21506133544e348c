//===- Partition.cpp - SPMD partitioning ----------------------------------===//
//
// Turns a function whose values carry shardings (`loom-propagate-sharding`)
// into the program one device runs: every tensor becomes its local block,
// and collectives appear where the shardings require them:
//
// * an operand split differently from what the op's sharding rule needs is
//   gathered (`loom.all_gather`) along the dimensions it must have whole,
//   and a whole one that must be split takes its block (`loom.local_block`,
//   or a smaller splat constant); mesh axes that move from one dimension to
//   another do so with one `loom.all_to_all`;
// * an op that sums over a split factor (a contraction over the batch, a
//   reduce_sum, a summed loss) leaves partial sums on every device. They are
//   completed where they are used: by a `loom.all_reduce` (an average for
//   means) where the whole value is needed, or by a `loom.reduce_scatter`
//   where a block of it is (ZeRO's sharded optimizer update).
//
// In data parallelism this is where the gradient all-reduces come from: the
// weight gradient `dy^T x` contracts over the split batch and meets a
// parameter in the optimizer update. Arguments marked `loom.gather_for_use`
// (ZeRO-3 parameters) are stored split and gathered at every use.
//
// Every rank runs the same ops in the same order, so collectives match up
// across ranks by construction.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/Transforms/Sharding.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <map>

namespace mlir::loom {
#define GEN_PASS_DEF_LOOMPARTITIONPASS
#include "passes/Transforms/Passes.h.inc"

using namespace sharding;

namespace {

/// How a local value relates to the whole one: split dimensions, and the
/// axes over which it is a partial sum (or average) still to be completed.
struct Held {
  DimAxes dims;
  Axes partial;
  ReductionKind kind = ReductionKind::Sum;
  /// For a partial sum: the split propagation chose for the value, which
  /// its uses follow (a reduce-scatter completes it into that split, as the
  /// partial sums of a row-parallel layer meet a sequence-split stream).
  std::optional<DimAxes> annotated;
};

class Partitioner {
public:
  Partitioner(func::FuncOp func, FlatSymbolRefAttr meshRef, MeshAttr mesh,
              bool reduceScatter)
      : func(func), meshRef(meshRef), mesh(mesh), reduceScatter(reduceScatter) {
  }

  LogicalResult run() {
    // Rules are read from the global types, before operands become local.
    Block &body = func.getBody().front();
    for (Operation &op : body) {
      auto iface = dyn_cast<ShardingRuleOpInterface>(&op);
      if (!iface || op.getNumRegions() != 0)
        continue;
      FailureOr<ShardingRule> rule = iface.getShardingRule();
      if (succeeded(rule))
        rules[&op] = std::move(*rule);
    }
    for (BlockArgument arg : func.getArguments()) {
      auto attr = func.getArgAttrOfType<ShardingAttr>(arg.getArgNumber(),
                                                      kShardingAttr);
      DimAxes axes = attr ? dimAxesOf(attr) : replicated(arg.getType());
      if (auto type = dyn_cast<RankedTensorType>(arg.getType()))
        arg.setType(localType(type, axes, mesh));
      have[arg] = {axes, {}, ReductionKind::Sum};
      if (Attribute use =
              func.getArgAttr(arg.getArgNumber(), "loom.gather_for_use")) {
        gatherForUse.insert(arg);
        // The split it is used with: whole, or the one the attribute names.
        useSplit[arg] = isa<ShardingAttr>(use)
                            ? dimAxesOf(cast<ShardingAttr>(use))
                            : replicated(arg.getType());
      }
      if (auto name = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                                        "loom.param"))
        argAxes[name] = axes;
      if (auto name = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                                        "loom.state"))
        argAxes[name] = axes;
    }
    for (Operation &op : llvm::make_early_inc_range(body)) {
      if (auto ret = dyn_cast<func::ReturnOp>(&op)) {
        if (failed(finishReturn(ret)))
          return failure();
        continue;
      }
      if (failed(partition(&op)))
        return failure();
    }
    return success();
  }

private:
  Held heldOf(Value value) {
    auto it = have.find(value);
    return it != have.end() ? it->second
                            : Held{replicated(value.getType()), {},
                                   ReductionKind::Sum};
  }
  DimAxes axesOf(Value value) { return heldOf(value).dims; }

  /// The whole size of a value: operands are local blocks by now, results
  /// still have their whole types.
  int64_t bytesOf(Value value) {
    auto type = dyn_cast<RankedTensorType>(value.getType());
    if (!type || !type.hasStaticShape())
      return 0;
    int64_t blocks = 1;
    if (auto it = have.find(value); it != have.end())
      for (const Axes &axes : it->second.dims)
        blocks *= groupSize(mesh, axes);
    return blocks * type.getNumElements() *
           std::max<int64_t>(1, type.getElementTypeBitWidth() / 8);
  }

  /// The split a value stored split but gathered for use is used with.
  DimAxes useAxes(Value value) {
    auto it = useSplit.find(value);
    return it != useSplit.end() ? it->second : replicated(value.getType());
  }

  static std::string keyOf(Value value, const DimAxes &want) {
    std::string key = std::to_string(
        reinterpret_cast<uintptr_t>(value.getAsOpaquePointer()));
    for (const Axes &axes : want)
      key += "|" + axesText(axes);
    return key;
  }

  /// Makes `value` split as `want` and complete: finishes partial sums
  /// (reduce_scatter where `want` splits a dimension over exactly the
  /// partial axes, else all_reduce), gathers dimensions split otherwise, and
  /// takes the local block of whole dimensions that must be split. The result
  /// is reused by later uses that want the same.
  FailureOr<Value> reshard(OpBuilder &b, Value value, const DimAxes &want,
                           Operation *user, unsigned index,
                           bool scatter = false) {
    Held held = heldOf(value);
    if (held.partial.empty() && held.dims == want)
      return value;
    bool reuse = !gatherForUse.contains(value);
    std::string key = keyOf(value, want);
    if (reuse)
      if (auto it = resharded.find(key); it != resharded.end())
        return it->second;
    Location loc = value.getLoc();
    MLIRContext *context = b.getContext();
    DimAxes cur = held.dims;
    if (!held.partial.empty()) {
      auto kind = ReductionKindAttr::get(context, held.kind);
      // A dimension that `want` splits over partial axes beyond the ones
      // it is split over already takes its block of the sum: a
      // reduce-scatter over those axes (`[dp]` wanted as `[dp, ep]` with
      // partial sums over ep scatters over ep within the dp block). The
      // axes left partial are then all-reduced.
      Axes partial = held.partial;
      for (unsigned d = 0; d < cur.size() && (reduceScatter || scatter);
           ++d) {
        ArrayRef<StringAttr> wanted = want[d];
        if (wanted.size() <= cur[d].size() ||
            wanted.take_front(cur[d].size()) != ArrayRef<StringAttr>(cur[d]))
          continue;
        Axes extra(wanted.begin() + cur[d].size(), wanted.end());
        if (!llvm::all_of(extra, [&](StringAttr a) {
              return llvm::is_contained(partial, a);
            }))
          continue;
        auto type = cast<RankedTensorType>(value.getType());
        if (type.getDimSize(d) % groupSize(mesh, extra) != 0)
          continue;
        SmallVector<int64_t> shape(type.getShape());
        shape[d] /= groupSize(mesh, extra);
        value = ReduceScatterOp::create(b, loc, type.clone(shape), value,
                                        meshRef, toArrayAttr(context, extra),
                                        b.getI64IntegerAttr(d), kind);
        cur[d] = want[d];
        llvm::erase_if(partial, [&](StringAttr a) {
          return llvm::is_contained(extra, a);
        });
        have[value] = {cur, partial, held.kind};
        if (partial.empty())
          break;
      }
      if (!partial.empty())
        value = AllReduceOp::create(b, loc, value, meshRef,
                                    toArrayAttr(context, partial), kind);
      have[value] = {cur, {}, ReductionKind::Sum};
    }
    for (unsigned d = 0; d < cur.size(); ++d) {
      if (cur[d].empty() || cur[d] == want[d])
        continue;
      // A dimension split over [tp, dp] that is wanted over [tp] gathers
      // over dp only: the dp blocks of one tp block are its parts in order.
      Axes keep;
      if (want[d].size() < cur[d].size() &&
          ArrayRef<StringAttr>(cur[d]).take_front(want[d].size()) ==
              ArrayRef<StringAttr>(want[d]))
        keep = want[d];
      Axes gathered(cur[d].begin() + keep.size(), cur[d].end());
      // Trailing axes leaving dimension d that another dimension e wants
      // next move there with one all-to-all: each device sends the others
      // their pieces of e and joins what it receives along d (the bytes of
      // a gather, without the whole tensor on every device).
      for (unsigned e = 0; e < cur.size(); ++e) {
        ArrayRef<StringAttr> wanted = want[e];
        if (e == d || wanted.size() <= cur[e].size() ||
            wanted.take_front(cur[e].size()) != ArrayRef<StringAttr>(cur[e]))
          continue;
        ArrayRef<StringAttr> moved = wanted.drop_front(cur[e].size());
        auto type = cast<RankedTensorType>(value.getType());
        int64_t group = groupSize(mesh, moved);
        if (moved.size() > gathered.size() ||
            ArrayRef<StringAttr>(gathered).take_back(moved.size()) != moved ||
            type.getDimSize(e) % group != 0)
          continue;
        SmallVector<int64_t> shape(type.getShape());
        shape[d] *= group;
        shape[e] /= group;
        value = AllToAllOp::create(b, loc, type.clone(shape), value, meshRef,
                                   toArrayAttr(context, moved),
                                   b.getI64IntegerAttr(e),
                                   b.getI64IntegerAttr(d));
        cur[e] = want[e];
        cur[d].resize(cur[d].size() - moved.size());
        gathered.resize(gathered.size() - moved.size());
        have[value] = {cur, {}, ReductionKind::Sum};
        break;
      }
      if (!gathered.empty()) {
        auto type = cast<RankedTensorType>(value.getType());
        SmallVector<int64_t> shape(type.getShape());
        shape[d] *= groupSize(mesh, gathered);
        value = AllGatherOp::create(b, loc, type.clone(shape), value, meshRef,
                                    toArrayAttr(context, gathered),
                                    b.getI64IntegerAttr(d));
      }
      cur[d] = keep;
      have[value] = {cur, {}, ReductionKind::Sum};
    }
    for (unsigned d = 0; d < cur.size(); ++d) {
      if (want[d].empty() || cur[d] == want[d])
        continue;
      auto type = cast<RankedTensorType>(value.getType());
      SmallVector<int64_t> shape(type.getShape());
      shape[d] /= groupSize(mesh, want[d]);
      auto constant = value.getDefiningOp<ConstantOp>();
      auto dense = constant ? dyn_cast<DenseElementsAttr>(constant.getValue())
                            : DenseElementsAttr();
      if (dense && dense.isSplat())
        value = ConstantOp::create(b, loc, dense.resizeSplat(type.clone(shape)));
      else
        value = LocalBlockOp::create(b, loc, type.clone(shape), value, meshRef,
                                     toArrayAttr(context, want[d]),
                                     b.getI64IntegerAttr(d));
      cur[d] = want[d];
      have[value] = {cur, {}, ReductionKind::Sum};
    }
    if (reuse)
      resharded[key] = value;
    return value;
  }

  /// Gathers every operand whole and leaves the op as it is.
  LogicalResult computeWhole(Operation *op) {
    OpBuilder b(op);
    for (OpOperand &operand : op->getOpOperands()) {
      FailureOr<Value> whole =
          reshard(b, operand.get(), replicated(operand.get().getType()), op,
                  operand.getOperandNumber());
      if (failed(whole))
        return failure();
      operand.set(*whole);
    }
    op->removeAttr(kShardingAttr);
    for (Value result : op->getResults())
      have[result] = {replicated(result.getType()), {}, ReductionKind::Sum};
    return success();
  }

  /// Sums of partial sums are partial sums: an add, subtract or negate of
  /// values that are all partial over the same axes (and split alike) stays
  /// partial, so the autodiff's accumulation of several gradient
  /// contributions costs one all-reduce, not one per contribution.
  bool keepPartial(Operation *op) {
    // A reshape of a whole partial sum is the partial sum of the reshape:
    // the sum is completed in the layout its uses want (expert
    // parallelism's dispatch buffers, viewed as [experts, slots, features],
    // are reduce-scattered over both dimensions).
    if (auto reshape = dyn_cast<ReshapeOp>(op)) {
      Held held = heldOf(reshape.getInput());
      if (held.partial.empty() || !isReplicated(held.dims))
        return false;
      OpBuilder b(op);
      Operation *local = b.clone(*op);
      local->removeAttr(kShardingAttr);
      have[local->getResult(0)] = {replicated(reshape.getType()), held.partial,
                                   held.kind};
      op->getResult(0).replaceAllUsesWith(local->getResult(0));
      op->erase();
      return true;
    }
    // A widening of a partial sum (a bf16 or fp16 product's gradient cast
    // back to its fp32 parameter's type) stays partial: the sum is
    // completed in fp32, of the widened local sums, as data-parallel
    // training sums fp32 gradients (--grad-reduce-dtype narrows it on
    // request).
    if (auto widen = dyn_cast<CastOp>(op)) {
      Held held = heldOf(widen.getInput());
      auto from = dyn_cast<FloatType>(widen.getInput().getType().getElementType());
      auto to = dyn_cast<FloatType>(widen.getType().getElementType());
      if (held.partial.empty() || !from || !to ||
          to.getWidth() <= from.getWidth() ||
          !APFloat::isRepresentableBy(from.getFloatSemantics(),
                                      to.getFloatSemantics()))
        return false;
      OpBuilder b(op);
      Operation *local = b.clone(*op);
      local->removeAttr(kShardingAttr);
      local->getResult(0).setType(
          cast<RankedTensorType>(widen.getInput().getType()).clone(to));
      have[local->getResult(0)] = held;
      op->getResult(0).replaceAllUsesWith(local->getResult(0));
      op->erase();
      return true;
    }
    if (!isa<AddOp, SubOp, NegOp>(op) || op->getNumResults() != 1)
      return false;
    Held first = heldOf(op->getOperand(0));
    if (first.partial.empty() || first.kind != ReductionKind::Sum)
      return false;
    for (Value operand : op->getOperands()) {
      Held held = heldOf(operand);
      if (held.partial != first.partial || held.kind != first.kind ||
          held.dims != first.dims || operand.getType() != op->getOperand(0).getType())
        return false;
    }
    // No broadcasting: the result's block is the operands' block.
    auto resultType = dyn_cast<RankedTensorType>(op->getResult(0).getType());
    if (!resultType || resultType.getRank() != (int64_t)first.dims.size() ||
        localType(resultType, first.dims, mesh) !=
            op->getOperand(0).getType())
      return false;
    OpBuilder b(op);
    Operation *local = b.clone(*op);
    local->removeAttr(kShardingAttr);
    local->getResult(0).setType(op->getOperand(0).getType());
    have[local->getResult(0)] = first;
    op->getResult(0).replaceAllUsesWith(local->getResult(0));
    op->erase();
    return true;
  }

  LogicalResult partition(Operation *op) {
    if (keepPartial(op))
      return success();
    // A loom.shard annotation: its operand is resharded to it, and the
    // annotation goes.
    if (auto shard = dyn_cast<ShardOp>(op)) {
      OpBuilder b(op);
      DimAxes want = dimAxesOf(shard.getSharding());
      FailureOr<Value> local =
          reshard(b, shard.getInput(), want, op, 0, /*scatter=*/true);
      if (failed(local))
        return failure();
      shard.getResult().replaceAllUsesWith(*local);
      op->erase();
      return success();
    }
    auto found = rules.find(op);
    if (found == rules.end())
      return computeWhole(op);
    const ShardingRule *rule = &found->second;

    // The split of every factor, by the priority propagation used: what
    // fixed arguments hold, then the larger values' splits. Values stored
    // split but used whole (ZeRO-3 parameters) suggest nothing; results
    // suggest what propagation chose for them.
    SmallVector<DimAxes> suggested;
    suggested.reserve(op->getNumOperands() + op->getNumResults());
    SmallVector<ValueSplit> values;
    for (auto [i, operand] : llvm::enumerate(op->getOperands())) {
      Held held = heldOf(operand);
      suggested.push_back(gatherForUse.contains(operand) ? useAxes(operand)
                          : !held.partial.empty() && held.annotated
                              ? *held.annotated
                              : held.dims);
      values.push_back({&suggested.back(), &rule->operands[i],
                        isAnchored(operand, [](BlockArgument) { return true; }),
                        /*operand=*/true, bytesOf(operand)});
    }
    auto resultAttrs = op->getAttrOfType<ArrayAttr>(kShardingAttr);
    for (auto [r, result] : llvm::enumerate(op->getResults())) {
      ShardingAttr sharding;
      if (resultAttrs && resultAttrs.size() == op->getNumResults())
        sharding = dyn_cast<ShardingAttr>(resultAttrs[r]);
      suggested.push_back(sharding ? dimAxesOf(sharding)
                                   : replicated(result.getType()));
      values.push_back({&suggested.back(), &rule->results[r], false,
                        /*operand=*/false, bytesOf(result)});
    }
    FailureOr<SmallVector<Axes>> chosen = chooseFactorSplits(
        *rule, values, mesh, [](unsigned, unsigned) { return success(); });
    if (failed(chosen))
      return failure();
    SmallVector<Axes> factorAxes = std::move(*chosen);
    // A factor that is not the leading one of a merged dimension cannot be
    // split without interleaving blocks: keep it whole.
    auto minorFactors = [&](ArrayRef<ShardingRule::ValueFactors> values) {
      for (const ShardingRule::ValueFactors &value : values)
        for (const auto &dimFactors : value)
          for (size_t k = 1; k < dimFactors.size(); ++k)
            factorAxes[dimFactors[k]].clear();
    };
    minorFactors(rule->operands);
    minorFactors(rule->results);

    auto splitOf = [&](const ShardingRule::ValueFactors &factors) {
      DimAxes axes(factors.size());
      for (auto [d, dimFactors] : llvm::enumerate(factors))
        if (!dimFactors.empty())
          axes[d] = factorAxes[dimFactors.front()];
      return axes;
    };

    OpBuilder b(op);
    for (OpOperand &operand : op->getOpOperands()) {
      unsigned i = operand.getOperandNumber();
      FailureOr<Value> local =
          reshard(b, operand.get(), splitOf(rule->operands[i]), op, i);
      if (failed(local))
        return failure();
      operand.set(*local);
    }

    Operation *local = b.clone(*op);
    local->removeAttr(kShardingAttr);
    SmallVector<DimAxes> resultAxes;
    for (auto [r, result] : llvm::enumerate(local->getResults())) {
      resultAxes.push_back(splitOf(rule->results[r]));
      if (auto type = dyn_cast<RankedTensorType>(result.getType()))
        result.setType(localType(type, resultAxes.back(), mesh));
    }
    if (auto constant = dyn_cast<ConstantOp>(local)) {
      auto dense = cast<DenseElementsAttr>(constant.getValue());
      constant.setValueAttr(dense.resizeSplat(
          cast<ShapedType>(constant.getResult().getType())));
    }
    if (auto dropout = dyn_cast<DropoutOp>(local))
      placeDropout(dropout, cast<RankedTensorType>(op->getResult(0).getType()),
                   resultAxes.front());
    if (auto slice = dyn_cast<SliceOp>(local)) {
      SmallVector<int64_t> limits(slice.getLimits());
      for (auto [d, axes] : llvm::enumerate(resultAxes.front()))
        if (!axes.empty())
          limits[d] = slice.getResult().getType().getDimSize(d);
      slice.setLimits(limits);
    }

    // Ops whose local form depends on where its block lies along an
    // indexed dimension (lookups into split tables, one-hot encodings of
    // split classes, cross-entropy over split classes).
    SmallVector<Value> localResults(local->getResults());
    if (failed(placeIndexed(op, local, *rule, factorAxes, localResults)))
      return failure();

    // Sums over split factors are partial on every device (in the results
    // that do not keep the factor as a dimension), completed where used.
    for (auto [r, result] : llvm::enumerate(localResults)) {
      Held held{resultAxes[r], {}, rule->meanOverReductions
                                       ? ReductionKind::Avg
                                       : ReductionKind::Sum,
                std::nullopt};
      if (resultAttrs && resultAttrs.size() == op->getNumResults())
        if (auto sharding = dyn_cast<ShardingAttr>(resultAttrs[r]))
          held.annotated = dimAxesOf(sharding);
      for (auto [f, factor] : llvm::enumerate(rule->factors)) {
        bool kept = llvm::any_of(rule->results[r], [&](const auto &dim) {
          return llvm::is_contained(dim, static_cast<int64_t>(f));
        });
        if (factor.kind == FactorKind::Reduction && !kept)
          held.partial.append(factorAxes[f].begin(), factorAxes[f].end());
      }
      have[result] = held;
      // What names a gradient or a pipeline stage names its local form.
      if (Operation *def = result.getDefiningOp())
        for (StringRef name : {"loom.gradient", "loom.stage"})
          if (Attribute attr = op->getAttr(name); attr && !def->hasAttr(name))
            def->setAttr(name, attr);
      op->getResult(r).replaceAllUsesWith(result);
    }
    op->erase();
    return success();
  }

  /// This device's first index along a dimension split over `axes` into
  /// blocks of `size` (a rank-0 tensor of `element`).
  Value blockStart(OpBuilder &b, Location loc, const Axes &axes, int64_t size,
                   Type element) {
    MLIRContext *context = b.getContext();
    auto i64 = RankedTensorType::get({}, b.getI64Type());
    Value index = BlockIndexOp::create(b, loc, i64, meshRef,
                                       toArrayAttr(context, axes));
    Value start = MulOp::create(
        b, loc, index, ConstantOp::create(b, loc, i64, (double)size));
    auto type = RankedTensorType::get({}, element);
    return element.isInteger(64) ? start
                                 : CastOp::create(b, loc, type, start).getResult();
  }

  /// Integer `indices` into a dimension of `extent` (negative ones counting
  /// from the end), shifted into this device's block of `size` along
  /// `axes`: the shifted indices, with `outside` where they leave the
  /// block, and whether each lies in the block.
  std::pair<Value, Value> shiftIntoBlock(OpBuilder &b, Location loc,
                                         Value indices, int64_t extent,
                                         const Axes &axes, int64_t size,
                                         double outside) {
    auto type = cast<RankedTensorType>(indices.getType());
    Type element = type.getElementType();
    auto scalar = [&](double v) -> Value {
      return ConstantOp::create(b, loc, RankedTensorType::get({}, element), v);
    };
    Value negative = LessOp::create(b, loc, indices, scalar(0));
    Value normal = WhereOp::create(
        b, loc, negative, AddOp::create(b, loc, indices, scalar(extent)),
        indices);
    Value shifted = SubOp::create(b, loc, normal,
                                  blockStart(b, loc, axes, size, element));
    Value inside = AndOp::create(
        b, loc, GreaterEqualOp::create(b, loc, shifted, scalar(0)),
        LessOp::create(b, loc, shifted, scalar(size)));
    return {WhereOp::create(b, loc, inside, shifted, scalar(outside)), inside};
  }

  /// `mask` (of some dimensions of `like`) reshaped to broadcast against
  /// `like`, whose dimensions [at, at + mask rank) it covers.
  static Value broadcastMask(OpBuilder &b, Location loc, Value mask,
                             RankedTensorType like, int64_t at) {
    auto maskType = cast<RankedTensorType>(mask.getType());
    SmallVector<int64_t> shape(like.getRank(), 1);
    for (int64_t d = 0; d < maskType.getRank(); ++d)
      shape[at + d] = maskType.getDimSize(d);
    if (ArrayRef<int64_t>(shape) == maskType.getShape())
      return mask;
    return ReshapeOp::create(b, loc, maskType.clone(shape), mask);
  }

  /// The local forms of ops over a split indexed dimension. `local` is the
  /// op cloned with local types; `results` receives what replaces its
  /// results (`local` is erased when it is replaced).
  LogicalResult placeIndexed(Operation *op, Operation *local,
                             const ShardingRule &rule,
                             ArrayRef<Axes> factorAxes,
                             SmallVectorImpl<Value> &results) {
    auto factorOf = [&](const ShardingRule::ValueFactors &value,
                        int64_t dim) -> int64_t {
      return value[dim].empty() ? -1 : value[dim].front();
    };
    auto splitOf = [&](int64_t f) -> const Axes * {
      return f >= 0 && !factorAxes[f].empty() ? &factorAxes[f] : nullptr;
    };
    OpBuilder b(local);
    Location loc = op->getLoc();
    if (auto gather = dyn_cast<GatherOp>(local)) {
      // A lookup into this device's block of rows: zeros for indices
      // outside it, partial sums that add up to the whole lookup.
      int64_t axis = gather.getAxis();
      const Axes *axes = splitOf(factorOf(rule.operands[0], axis));
      if (!axes)
        return success();
      auto table = cast<RankedTensorType>(gather.getInput().getType());
      int64_t whole =
          cast<RankedTensorType>(op->getOperand(0).getType()).getDimSize(axis);
      auto [safe, inside] =
          shiftIntoBlock(b, loc, gather.getIndices(), whole, *axes,
                         table.getDimSize(axis), 0.0);
      auto resultType = cast<RankedTensorType>(gather.getType());
      Value looked = GatherOp::create(b, loc, resultType, gather.getInput(),
                                      safe, gather.getAxisAttr());
      Value zero = ConstantOp::create(
          b, loc, RankedTensorType::get({}, resultType.getElementType()), 0.0);
      results[0] = WhereOp::create(
          b, loc, broadcastMask(b, loc, inside, resultType, axis), looked, zero);
      local->erase();
      return success();
    }
    if (auto scatter = dyn_cast<ScatterElementsOp>(local)) {
      // An add into this device's block of rows of zeros: the updates whose
      // index lies in the block.
      int64_t axis = scatter.getAxis();
      const Axes *axes = splitOf(factorOf(rule.results[0], axis));
      if (!axes)
        return success();
      auto resultType = cast<RankedTensorType>(scatter.getType());
      int64_t whole =
          cast<RankedTensorType>(op->getResult(0).getType()).getDimSize(axis);
      auto [safe, inside] =
          shiftIntoBlock(b, loc, scatter.getIndices(), whole, *axes,
                         resultType.getDimSize(axis), 0.0);
      Value zero = ConstantOp::create(
          b, loc, RankedTensorType::get({}, resultType.getElementType()), 0.0);
      Value updates =
          WhereOp::create(b, loc, inside, scatter.getUpdates(), zero);
      results[0] = ScatterElementsOp::create(
          b, loc, resultType, scatter.getInput(), safe, updates,
          scatter.getAxisAttr(), scatter.getReductionAttr());
      local->erase();
      return success();
    }
    if (auto oneHot = dyn_cast<OneHotOp>(local)) {
      // This device's block of the classes: indices shifted into it, the
      // others encoded as out of range (all off).
      auto resultType = cast<RankedTensorType>(oneHot.getType());
      auto attrAxis = static_cast<int64_t>(oneHot.getAxis());
      int64_t axis =
          attrAxis < 0 ? attrAxis + resultType.getRank() : attrAxis;
      const Axes *axes = splitOf(factorOf(rule.results[0], axis));
      if (!axes)
        return success();
      int64_t size = resultType.getDimSize(axis);
      // Out of range: all off.
      Value safe = shiftIntoBlock(b, loc, oneHot.getIndices(),
                                  (int64_t)oneHot.getDepth(), *axes, size,
                                  (double)size)
                       .first;
      results[0] = OneHotOp::create(b, loc, resultType, safe,
                                    oneHot.getValues(),
                                    b.getI64IntegerAttr(size),
                                    oneHot.getAxisAttr());
      local->erase();
      return success();
    }
    if (auto loss = dyn_cast<SoftmaxCrossEntropyOp>(local)) {
      const Axes *axes = splitOf(factorOf(rule.operands[0], 1));
      if (!axes)
        return success();
      return vocabParallelLoss(op, loss, *axes, results);
    }
    return success();
  }

  /// Softmax cross-entropy over classes split across devices (Megatron-LM's
  /// vocabulary-parallel cross-entropy): the maximum and the sum of the
  /// exponentials are completed by all-reduces (max, sum), and so is each
  /// label's log-probability, which only the device holding its class has.
  LogicalResult vocabParallelLoss(Operation *op, SoftmaxCrossEntropyOp loss,
                                  const Axes &axes,
                                  SmallVectorImpl<Value> &results) {
    OpBuilder b(loss);
    Location loc = op->getLoc();
    MLIRContext *context = b.getContext();
    ArrayAttr group = toArrayAttr(context, axes);
    Value scores = loss.getScores(), labels = loss.getLabels();
    auto scoresType = cast<RankedTensorType>(scores.getType());
    auto labelType = cast<RankedTensorType>(labels.getType());
    Type element = scoresType.getElementType();
    int64_t classes = scoresType.getDimSize(1);
    int64_t whole =
        cast<RankedTensorType>(op->getOperand(0).getType()).getDimSize(1);
    auto complete = [&](Value v, ReductionKind kind) -> Value {
      return AllReduceOp::create(b, loc, v, meshRef, group,
                                 ReductionKindAttr::get(context, kind));
    };
    Value max = complete(ReduceMaxOp::create(b, loc, scores,
                                             ArrayRef<int64_t>{1}, true),
                         ReductionKind::Max);
    Value shiftedScores = SubOp::create(b, loc, scores, max);
    Value sum = complete(
        ReduceSumOp::create(b, loc, ExpOp::create(b, loc, shiftedScores),
                            ArrayRef<int64_t>{1}, true),
        ReductionKind::Sum);
    Value logProb = SubOp::create(b, loc, shiftedScores,
                                  LogOp::create(b, loc, sum));
    // Each label's log-probability, from the device holding its class.
    Type labelElement = labelType.getElementType();
    Value safe = shiftIntoBlock(b, loc, labels, whole, axes, classes,
                                (double)classes)
                     .first;
    auto offOnType = RankedTensorType::get({2}, element);
    Value offOn = ConstantOp::create(
        b, loc,
        cast<ElementsAttr>(DenseElementsAttr::get(
            offOnType, ArrayRef<Attribute>{b.getFloatAttr(element, 0.0),
                                           b.getFloatAttr(element, 1.0)})));
    Value hot = OneHotOp::create(b, loc, safe, offOn, (uint64_t)classes,
                                 (uint64_t)1);
    Value picked = complete(
        ReduceSumOp::create(b, loc, MulOp::create(b, loc, logProb, hot),
                            ArrayRef<int64_t>{1}, false),
        ReductionKind::Sum);
    Value nll = NegOp::create(b, loc, picked);
    if (auto ignore = loss.getIgnoreIndex()) {
      Value ignored = EqualOp::create(
          b, loc, labels,
          ConstantOp::create(b, loc, RankedTensorType::get({}, labelElement),
                             (double)*ignore));
      nll = WhereOp::create(
          b, loc, ignored,
          ConstantOp::create(b, loc, RankedTensorType::get({}, element), 0.0),
          nll);
    }
    Value result = nll;
    if (loss.getReduction() == LossReduction::Sum)
      result = ReduceSumOp::create(b, loc, nll, ArrayRef<int64_t>{}, false);
    else if (loss.getReduction() == LossReduction::Mean)
      result = ReduceMeanOp::create(b, loc, nll, ArrayRef<int64_t>{}, false);
    if (result.getType() != loss.getLoss().getType())
      return loss.emitOpError("internal error: the vocabulary-parallel loss "
                              "has type ")
             << result.getType();
    results[0] = result;
    results[1] = logProb;
    loss->erase();
    return success();
  }

  /// A dropout on a block of a split tensor draws the whole tensor's masks:
  /// it gets the whole shape and the whole index of its block's first
  /// entry, the sum over split dimensions of (block index * block size *
  /// the whole tensor's stride), from each device's block index.
  void placeDropout(DropoutOp dropout, RankedTensorType whole,
                    const DimAxes &axes) {
    if (isReplicated(axes))
      return;
    OpBuilder b(dropout);
    Location loc = dropout.getLoc();
    MLIRContext *context = b.getContext();
    auto i64 = RankedTensorType::get({}, b.getI64Type());
    ArrayRef<int64_t> shape = whole.getShape();
    int64_t rank = whole.getRank();
    SmallVector<int64_t> strides(rank, 1);
    for (int64_t d = rank - 2; d >= 0; --d)
      strides[d] = strides[d + 1] * shape[d + 1];
    Value base = dropout.getIndexBase();
    for (int64_t d = 0; d < rank; ++d) {
      if (axes[d].empty())
        continue;
      int64_t block = shape[d] / groupSize(mesh, axes[d]);
      Value index = BlockIndexOp::create(b, loc, i64, meshRef,
                                         toArrayAttr(context, axes[d]));
      Value step = ConstantOp::create(b, loc, i64, (double)(block * strides[d]));
      Value term = MulOp::create(b, loc, index, step);
      base = base ? AddOp::create(b, loc, base, term).getResult() : term;
    }
    dropout.setWholeShapeAttr(b.getDenseI64ArrayAttr(shape));
    dropout.getIndexBaseMutable().assign(base);
  }

  /// Results are complete; an update of a parameter or state has the
  /// split of what it replaces (the runtime swaps the two buffers).
  LogicalResult finishReturn(func::ReturnOp ret) {
    MLIRContext *context = func.getContext();
    OpBuilder b(ret);
    for (OpOperand &operand : ret->getOpOperands()) {
      unsigned i = operand.getOperandNumber();
      DimAxes want = axesOf(operand.get());
      if (auto updates = func.getResultAttrOfType<StringAttr>(i, "loom.update"))
        if (auto it = argAxes.find(updates); it != argAxes.end())
          want = it->second;
      FailureOr<Value> local = reshard(b, operand.get(), want, ret, i);
      if (failed(local))
        return failure();
      operand.set(*local);
      if (isReplicated(want))
        func.removeResultAttr(i, StringAttr::get(context, kShardingAttr));
      else
        func.setResultAttr(i, kShardingAttr, toAttr(context, meshRef, want));
    }
    func.setType(FunctionType::get(context, func.getBody().getArgumentTypes(),
                                   ret.getOperandTypes()));
    return success();
  }

  func::FuncOp func;
  FlatSymbolRefAttr meshRef;
  MeshAttr mesh;
  bool reduceScatter;
  DenseMap<Value, Held> have;
  DenseMap<Operation *, ShardingRule> rules;
  DenseSet<Value> gatherForUse;
  DenseMap<Value, DimAxes> useSplit;
  /// Split of each parameter and state argument, by name.
  DenseMap<StringAttr, DimAxes> argAxes;
  std::map<std::string, Value> resharded;
};

struct LoomPartitionPass : impl::LoomPartitionPassBase<LoomPartitionPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    for (auto func : module.getOps<func::FuncOp>()) {
      if (func.isExternal())
        continue;
      auto found = meshOfFunction(func);
      if (failed(found))
        return signalPassFailure();
      auto [first, meshOp] = *found;
      if (!first)
        continue;
      if (!llvm::hasSingleElement(func.getBody())) {
        func.emitError("partitioning needs a function with one block");
        return signalPassFailure();
      }
      if (failed(Partitioner(func, first.getMesh(), meshOp.getMesh(), reduceScatter)
                     .run()))
        return signalPassFailure();
    }
  }
};

} // namespace
} // namespace mlir::loom
