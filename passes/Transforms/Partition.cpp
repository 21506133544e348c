//===- Partition.cpp - SPMD partitioning ----------------------------------===//
//
// Turns a function whose values carry shardings (`loom-propagate-sharding`)
// into the program one device runs: every tensor becomes its local block,
// and collectives appear where the shardings require them:
//
// * an operand split differently from what the op's sharding rule needs is
//   gathered (`loom.all_gather`) along the dimensions it must have whole;
// * an op that sums over a split factor (a contraction over the batch, a
//   reduce_sum, a summed loss) leaves partial sums on every device, which a
//   `loom.all_reduce` completes right there (an average for means).
//
// In data parallelism this is where the gradient all-reduces come from: the
// weight gradient `dy^T x` contracts over the split batch and meets a
// replicated parameter in the optimizer update.
//
// Every rank runs the same ops in the same order, so collectives match up
// across ranks by construction.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/Transforms/Sharding.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::loom {
#define GEN_PASS_DEF_LOOMPARTITIONPASS
#include "passes/Transforms/Passes.h.inc"

using namespace sharding;

namespace {

class Partitioner {
public:
  Partitioner(func::FuncOp func, FlatSymbolRefAttr meshRef, MeshAttr mesh)
      : func(func), meshRef(meshRef), mesh(mesh) {}

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
      have[arg] = axes;
    }
    for (Operation &op : llvm::make_early_inc_range(body)) {
      if (auto ret = dyn_cast<func::ReturnOp>(&op)) {
        finishReturn(ret);
        continue;
      }
      if (failed(partition(&op)))
        return failure();
    }
    return success();
  }

private:
  DimAxes axesOf(Value value) {
    auto it = have.find(value);
    return it != have.end() ? it->second : replicated(value.getType());
  }

  /// Makes `value` split as `want`: gathers dimensions split otherwise, and
  /// splits a replicated splat constant by making a smaller one. Splitting
  /// any other whole value would need the device's index; it is an error.
  FailureOr<Value> reshard(OpBuilder &b, Value value, const DimAxes &want,
                           Operation *user, unsigned index) {
    DimAxes cur = axesOf(value);
    if (cur == want)
      return value;
    Location loc = user->getLoc();
    for (unsigned d = 0; d < cur.size(); ++d) {
      if (cur[d].empty() || cur[d] == want[d])
        continue;
      auto type = cast<RankedTensorType>(value.getType());
      SmallVector<int64_t> shape(type.getShape());
      shape[d] *= groupSize(mesh, cur[d]);
      value = AllGatherOp::create(b, loc, type.clone(shape), value, meshRef,
                                  toArrayAttr(b.getContext(), cur[d]),
                                  b.getI64IntegerAttr(d));
      cur[d].clear();
      have[value] = cur;
    }
    for (unsigned d = 0; d < cur.size(); ++d) {
      if (want[d].empty() || cur[d] == want[d])
        continue;
      auto constant = value.getDefiningOp<ConstantOp>();
      auto dense = constant ? dyn_cast<DenseElementsAttr>(constant.getValue())
                            : DenseElementsAttr();
      if (!dense || !dense.isSplat()) {
        InFlightDiagnostic diag =
            user->emitError()
            << "cannot partition: operand #" << index
            << " must be split along dimension " << d << " over mesh axis "
            << axesText(want[d])
            << ", but it is computed whole (by an op without a sharding "
               "rule, or a value that is not a splat constant)";
        if (Operation *def = value.getDefiningOp())
          diag.attachNote(def->getLoc()) << "computed here";
        return diag;
      }
      auto type = cast<RankedTensorType>(value.getType());
      SmallVector<int64_t> shape(type.getShape());
      shape[d] /= groupSize(mesh, want[d]);
      value = ConstantOp::create(b, loc, dense.resizeSplat(type.clone(shape)));
      cur[d] = want[d];
      have[value] = cur;
    }
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
      have[result] = replicated(result.getType());
    return success();
  }

  LogicalResult partition(Operation *op) {
    auto found = rules.find(op);
    if (found == rules.end())
      return computeWhole(op);
    const ShardingRule *rule = &found->second;

    // The split of every factor: what propagation chose for the results,
    // then what the operands hold.
    SmallVector<Axes> factorAxes(rule->factors.size());
    auto used = [&](StringAttr axis) {
      return llvm::any_of(factorAxes, [&](const Axes &a) {
        return llvm::is_contained(a, axis);
      });
    };
    auto collect = [&](const DimAxes &axes,
                       const ShardingRule::ValueFactors &factors) {
      for (auto [d, dimFactors] : llvm::enumerate(factors)) {
        if (dimFactors.empty() || axes[d].empty())
          continue;
        int64_t f = dimFactors.front();
        if (rule->factors[f].kind == FactorKind::Opaque ||
            !factorAxes[f].empty() || llvm::any_of(axes[d], used) ||
            rule->factors[f].size % groupSize(mesh, axes[d]) != 0)
          continue;
        factorAxes[f] = axes[d];
      }
    };
    auto resultAttrs = op->getAttrOfType<ArrayAttr>(kShardingAttr);
    if (resultAttrs && resultAttrs.size() == op->getNumResults())
      for (auto [r, attr] : llvm::enumerate(resultAttrs))
        if (auto sharding = dyn_cast<ShardingAttr>(attr))
          collect(dimAxesOf(sharding), rule->results[r]);
    for (auto [i, operand] : llvm::enumerate(op->getOperands()))
      collect(axesOf(operand), rule->operands[i]);
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
    if (auto slice = dyn_cast<SliceOp>(local)) {
      SmallVector<int64_t> limits(slice.getLimits());
      for (auto [d, axes] : llvm::enumerate(resultAxes.front()))
        if (!axes.empty())
          limits[d] = slice.getResult().getType().getDimSize(d);
      slice.setLimits(limits);
    }

    // Sums over split factors are partial on every device (in the results
    // that do not keep the factor as a dimension).
    b.setInsertionPointAfter(local);
    for (auto [r, result] : llvm::enumerate(local->getResults())) {
      Axes partial;
      for (auto [f, factor] : llvm::enumerate(rule->factors)) {
        bool kept = llvm::any_of(rule->results[r], [&](const auto &dim) {
          return llvm::is_contained(dim, static_cast<int64_t>(f));
        });
        if (factor.kind == FactorKind::Reduction && !kept)
          partial.append(factorAxes[f].begin(), factorAxes[f].end());
      }
      Value out = result;
      if (!partial.empty()) {
        auto kind = rule->meanOverReductions ? ReductionKind::Avg
                                             : ReductionKind::Sum;
        out = AllReduceOp::create(
            b, op->getLoc(), out, meshRef,
            toArrayAttr(b.getContext(), partial),
            ReductionKindAttr::get(b.getContext(), kind));
      }
      have[out] = resultAxes[r];
      op->getResult(r).replaceAllUsesWith(out);
    }
    op->erase();
    return success();
  }

  void finishReturn(func::ReturnOp ret) {
    MLIRContext *context = func.getContext();
    for (auto [i, value] : llvm::enumerate(ret.getOperands())) {
      DimAxes axes = axesOf(value);
      if (isReplicated(axes))
        func.removeResultAttr(i, StringAttr::get(context, kShardingAttr));
      else
        func.setResultAttr(i, kShardingAttr, toAttr(context, meshRef, axes));
    }
    func.setType(FunctionType::get(context, func.getBody().getArgumentTypes(),
                                   ret.getOperandTypes()));
  }

  func::FuncOp func;
  FlatSymbolRefAttr meshRef;
  MeshAttr mesh;
  DenseMap<Value, DimAxes> have;
  DenseMap<Operation *, ShardingRule> rules;
};

struct LoomPartitionPass : impl::LoomPartitionPassBase<LoomPartitionPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    for (auto func : module.getOps<func::FuncOp>()) {
      ShardingAttr first;
      for (unsigned i = 0; i < func.getNumArguments() && !first; ++i)
        first = func.getArgAttrOfType<ShardingAttr>(i, kShardingAttr);
      if (!first || func.isExternal())
        continue;
      auto meshOp = SymbolTable::lookupNearestSymbolFrom<MeshOp>(
          func, first.getMesh());
      if (!meshOp) {
        func.emitError() << "sharding refers to " << first.getMesh()
                         << ", which is not a loom.mesh";
        return signalPassFailure();
      }
      if (!llvm::hasSingleElement(func.getBody())) {
        func.emitError("partitioning needs a function with one block");
        return signalPassFailure();
      }
      if (failed(Partitioner(func, first.getMesh(), meshOp.getMesh()).run()))
        return signalPassFailure();
    }
  }
};

} // namespace
} // namespace mlir::loom
