//===- PropagateSharding.cpp - carry shardings through the graph ----------===//
//
// Starting from the shardings of function arguments (`loom.sharding`), gives
// every op result a sharding by the ops' sharding rules: a factor split in
// one operand or result is split alike in the others, forwards and backwards,
// until nothing changes. Arguments keep theirs (parameters stay replicated
// unless annotated); values computed by ops without a rule stay replicated.
// The result is an annotation only: `loom-partition` makes it real.
//
// Losses that average over labels with ignore_index (their divisor depends on
// the labels) are first rewritten into a sum divided by a count, so that both
// can be summed across devices.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/Transforms/Sharding.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/SmallSet.h"

namespace mlir::loom {
#define GEN_PASS_DEF_LOOMPROPAGATESHARDINGPASS
#include "passes/Transforms/Passes.h.inc"

using namespace sharding;

namespace {

/// `loss mean` with ignore_index becomes `sum / count(labels != ignore)`.
template <typename LossOp>
void splitMeanLoss(LossOp op) {
  if (op.getReduction() != LossReduction::Mean || !op.getIgnoreIndex() ||
      op.getWeight())
    return;
  OpBuilder b(op);
  Location loc = op.getLoc();
  OperationState state(loc, op->getName(), op->getOperands(),
                       op->getResultTypes(), op->getAttrs());
  Operation *sum = b.create(state);
  sum->setAttr("reduction",
               LossReductionAttr::get(b.getContext(), LossReduction::Sum));
  Value labels = op->getOperand(1);
  auto labelType = cast<RankedTensorType>(labels.getType());
  Value ignore = ConstantOp::create(
      b, loc, RankedTensorType::get({}, labelType.getElementType()),
      static_cast<double>(static_cast<int64_t>(*op.getIgnoreIndex())));
  Value kept = NotOp::create(b, loc, EqualOp::create(b, loc, labels, ignore));
  Type lossElement = getElementTypeOrSelf(op->getResult(0).getType());
  Value keptF = CastOp::create(b, loc, labelType.clone(lossElement), kept);
  Value count = ReduceSumOp::create(b, loc, keptF, b.getDenseI64ArrayAttr({}));
  Value mean = DivOp::create(b, loc, sum->getResult(0), count);
  op->getResult(0).replaceAllUsesWith(mean);
  for (unsigned r = 1; r < op->getNumResults(); ++r)
    op->getResult(r).replaceAllUsesWith(sum->getResult(r));
  op->erase();
}

class Propagator {
public:
  Propagator(func::FuncOp func, FlatSymbolRefAttr meshRef, MeshAttr mesh,
             const DenseSet<Value> &openArgs)
      : func(func), meshRef(meshRef), mesh(mesh), openArgs(openArgs) {}

  LogicalResult run() {
    for (BlockArgument arg : func.getArguments()) {
      auto attr = func.getArgAttrOfType<ShardingAttr>(arg.getArgNumber(),
                                                      kShardingAttr);
      // Parameters stored split but gathered for use (ZeRO-3) propagate
      // the split they are used with: whole, or the one their
      // `loom.gather_for_use` names.
      Attribute use =
          func.getArgAttr(arg.getArgNumber(), "loom.gather_for_use");
      if (auto useSharding = dyn_cast_or_null<ShardingAttr>(use))
        axesOf[arg] = dimAxesOf(useSharding);
      else if (attr && !use)
        axesOf[arg] = dimAxesOf(attr);
      else
        axesOf[arg] = replicated(arg.getType());
    }
    SmallVector<Operation *> ops;
    func.walk([&](Operation *op) {
      if (op != func)
        ops.push_back(op);
    });
    for (Operation *op : ops) {
      for (Value result : op->getResults())
        axesOf[result] = replicated(result.getType());
      // A loom.shard annotation fixes its result's sharding (its operand
      // is free: partitioning reshards it).
      if (auto shard = dyn_cast<ShardOp>(op))
        axesOf[shard.getResult()] = dimAxesOf(shard.getSharding());
      // Rules are read once: every sweep visits every op.
      if (auto iface = dyn_cast<ShardingRuleOpInterface>(op))
        if (FailureOr<ShardingRule> rule = iface.getShardingRule();
            succeeded(rule))
          rules[op] = std::move(*rule);
    }
    // Forward then backward sweeps until a fixed point; each change splits
    // one more dimension, so this ends.
    for (bool changed = true; changed;) {
      changed = false;
      for (Operation *op : ops)
        if (failed(visit(op, changed)))
          return failure();
      for (Operation *op : llvm::reverse(ops))
        if (failed(visit(op, changed)))
          return failure();
    }
    return success();
  }

  /// Records the shardings on the ops (`loom.sharding`, one per result).
  void annotate() {
    MLIRContext *context = func.getContext();
    func.walk([&](Operation *op) {
      if (op == func || op->getNumResults() == 0 ||
          llvm::all_of(op->getResults(),
                       [&](Value v) { return isReplicated(axesOf[v]); }))
        return;
      SmallVector<Attribute> attrs;
      for (Value result : op->getResults())
        attrs.push_back(toAttr(context, meshRef, axesOf[result]));
      op->setAttr(kShardingAttr, ArrayAttr::get(context, attrs));
    });
  }

  const DenseMap<Value, DimAxes> &shardings() const { return axesOf; }

private:
  /// Values whose sharding propagation may choose: results of ops with a
  /// rule and open arguments (block arguments are otherwise fixed, ops
  /// without a rule compute whole).
  bool isOpen(Value value) {
    if (isa<BlockArgument>(value))
      return openArgs.contains(value);
    Operation *def = value.getDefiningOp();
    return def && rules.contains(def);
  }

  static int64_t bytesOf(Value value) {
    auto type = dyn_cast<RankedTensorType>(value.getType());
    if (!type || !type.hasStaticShape())
      return 0;
    return type.getNumElements() *
           std::max<int64_t>(1, type.getElementTypeBitWidth() / 8);
  }

  LogicalResult visit(Operation *op, bool &changed) {
    auto found = rules.find(op);
    if (found == rules.end())
      return success();
    const ShardingRule *rule = &found->second;
    // Which factors are split, from what the operands and results hold.
    SmallVector<ValueSplit> values;
    SmallVector<std::pair<StringRef, unsigned>> roles;
    for (auto [i, operand] : llvm::enumerate(op->getOperands())) {
      bool fixed = isAnchored(operand, [&](BlockArgument arg) {
        return !isOpen(arg);
      });
      values.push_back({&axesOf[operand], &rule->operands[i], fixed,
                        /*operand=*/true, bytesOf(operand)});
      roles.push_back({"operand", (unsigned)i});
    }
    for (auto [r, result] : llvm::enumerate(op->getResults())) {
      values.push_back({&axesOf[result], &rule->results[r], false,
                        /*operand=*/false, bytesOf(result)});
      roles.push_back({"result", (unsigned)r});
    }
    FailureOr<SmallVector<Axes>> chosen = chooseFactorSplits(
        *rule, values, mesh, [&](unsigned v, unsigned d) -> LogicalResult {
          Value value = v < op->getNumOperands()
                            ? op->getOperand(v)
                            : op->getResult(v - op->getNumOperands());
          const Axes &axes = axesOf[value][d];
          const auto &dimFactors = (*values[v].factors)[d];
          int64_t f = dimFactors.front();
          int64_t size = groupSize(mesh, axes);
          int64_t dimSize =
              cast<RankedTensorType>(value.getType()).getDimSize(d);
          InFlightDiagnostic diag = op->emitError()
                                    << "mesh axis " << axesText(axes)
                                    << " of size " << size
                                    << " does not divide ";
          if (dimFactors.size() > 1)
            diag << "the leading part (size " << rule->factors[f].size
                 << ") of ";
          diag << "dimension " << d << " (size " << dimSize << ") of "
               << roles[v].first << " #" << roles[v].second;
          return diag;
        });
    if (failed(chosen))
      return failure();
    const SmallVector<Axes> &factorAxes = *chosen;

    // Splits the undecided dimensions of open values alike.
    auto assign = [&](Value value, const ShardingRule::ValueFactors &factors) {
      if (!isOpen(value))
        return;
      DimAxes &axes = axesOf[value];
      for (auto [d, dimFactors] : llvm::enumerate(factors)) {
        if (dimFactors.empty() || !axes[d].empty())
          continue;
        const Axes &split = factorAxes[dimFactors.front()];
        if (split.empty())
          continue;
        bool clash = llvm::any_of(axes, [&](const Axes &other) {
          return llvm::any_of(split, [&](StringAttr a) {
            return llvm::is_contained(other, a);
          });
        });
        if (clash)
          continue;
        axes[d] = split;
        changed = true;
      }
    };
    for (auto [r, result] : llvm::enumerate(op->getResults()))
      assign(result, rule->results[r]);
    for (auto [i, operand] : llvm::enumerate(op->getOperands()))
      assign(operand, rule->operands[i]);
    return success();
  }

  func::FuncOp func;
  FlatSymbolRefAttr meshRef;
  MeshAttr mesh;
  const DenseSet<Value> &openArgs;
  DenseMap<Value, DimAxes> axesOf;
  DenseMap<Operation *, ShardingRule> rules;
};

} // namespace

FailureOr<DenseMap<Value, DimAxes>>
sharding::propagateShardings(func::FuncOp func, FlatSymbolRefAttr meshRef,
                   MeshAttr mesh, const DenseSet<Value> &openArgs,
                   bool annotate) {
  Propagator propagator(func, meshRef, mesh, openArgs);
  if (failed(propagator.run()))
    return failure();
  if (annotate)
    propagator.annotate();
  return propagator.shardings();
}

namespace {

struct LoomPropagateShardingPass
    : impl::LoomPropagateShardingPassBase<LoomPropagateShardingPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    for (auto func : module.getOps<func::FuncOp>()) {
      auto found = meshOfFunction(func);
      if (failed(found))
        return signalPassFailure();
      auto [first, meshOp] = *found;
      if (!first)
        continue;
      func.walk([](Operation *op) {
        if (auto loss = dyn_cast<SoftmaxCrossEntropyOp>(op))
          splitMeanLoss(loss);
        else if (auto loss = dyn_cast<NllLossOp>(op))
          splitMeanLoss(loss);
      });
      if (failed(propagateShardings(func, first.getMesh(), meshOp.getMesh(),
                                    /*openArgs=*/{}, /*annotate=*/true)))
        return signalPassFailure();
    }
  }
};

} // namespace

} // namespace mlir::loom
