//===- Sharding.cpp - helpers shared by the sharding passes ---------------===//

#include "passes/Transforms/Sharding.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace mlir::loom;

sharding::DimAxes sharding::dimAxesOf(ShardingAttr attr) {
  DimAxes result;
  for (Attribute dim : attr.getDimAxes()) {
    Axes axes;
    for (Attribute axis : cast<ArrayAttr>(dim))
      axes.push_back(cast<StringAttr>(axis));
    result.push_back(std::move(axes));
  }
  return result;
}

sharding::DimAxes sharding::replicated(Type type) {
  auto ranked = dyn_cast<RankedTensorType>(type);
  return DimAxes(ranked ? ranked.getRank() : 0);
}

bool sharding::isReplicated(const DimAxes &axes) {
  return llvm::all_of(axes, [](const Axes &a) { return a.empty(); });
}

ArrayAttr sharding::toArrayAttr(MLIRContext *context,
                                ArrayRef<StringAttr> axes) {
  return ArrayAttr::get(context, SmallVector<Attribute>(axes.begin(),
                                                        axes.end()));
}

ShardingAttr sharding::toAttr(MLIRContext *context, FlatSymbolRefAttr mesh,
                              const DimAxes &axes) {
  SmallVector<Attribute> dims;
  for (const Axes &dim : axes)
    dims.push_back(toArrayAttr(context, dim));
  return ShardingAttr::get(context, mesh, ArrayAttr::get(context, dims),
                           ArrayAttr::get(context, {}));
}

int64_t sharding::groupSize(MeshAttr mesh, ArrayRef<StringAttr> axes) {
  int64_t size = 1;
  for (StringAttr axis : axes)
    size *= mesh.getAxisSize(axis.getValue()).value_or(1);
  return size;
}

RankedTensorType sharding::localType(RankedTensorType type,
                                     const DimAxes &axes, MeshAttr mesh) {
  SmallVector<int64_t> shape(type.getShape());
  for (auto [d, dim] : llvm::enumerate(axes))
    shape[d] /= groupSize(mesh, dim);
  return type.clone(shape);
}

std::string sharding::axesText(ArrayRef<StringAttr> axes) {
  std::string text = "{";
  for (auto [i, axis] : llvm::enumerate(axes))
    text += (i ? ", " : "") + axis.getValue().str();
  return text + "}";
}

FailureOr<std::pair<ShardingAttr, MeshOp>>
sharding::meshOfFunction(Operation *op) {
  auto func = cast<func::FuncOp>(op);
  ShardingAttr first;
  for (unsigned i = 0; i < func.getNumArguments() && !first; ++i)
    first = func.getArgAttrOfType<ShardingAttr>(i, kShardingAttr);
  // A function may be split by its loom.shard annotations alone.
  if (!first)
    func.walk([&](ShardOp shard) {
      if (!first)
        first = shard.getSharding();
    });
  if (!first)
    return std::make_pair(ShardingAttr(), MeshOp());
  auto meshOp =
      SymbolTable::lookupNearestSymbolFrom<MeshOp>(func, first.getMesh());
  if (!meshOp)
    return func.emitError() << "sharding refers to " << first.getMesh()
                            << ", which is not a loom.mesh";
  return std::make_pair(first, meshOp);
}

FailureOr<SmallVector<sharding::Axes>> sharding::chooseFactorSplits(
    const ShardingRule &rule, ArrayRef<ValueSplit> values, MeshAttr mesh,
    function_ref<LogicalResult(unsigned value, unsigned dim)> indivisible) {
  struct Candidate {
    int64_t factor;
    const Axes *axes;
    bool fixed;
    bool operand;
    int64_t bytes;
    unsigned order;
  };
  SmallVector<Candidate> candidates;
  unsigned order = 0;
  for (auto [v, value] : llvm::enumerate(values)) {
    for (auto [d, dimFactors] : llvm::enumerate(*value.factors)) {
      const Axes &axes = (*value.axes)[d];
      if (dimFactors.empty() || axes.empty())
        continue;
      int64_t f = dimFactors.front();
      if (rule.factors[f].kind == FactorKind::Opaque)
        continue;
      if (rule.factors[f].size % groupSize(mesh, axes) != 0) {
        if (failed(indivisible(v, d)))
          return failure();
        continue;
      }
      candidates.push_back(
          {f, &axes, value.fixed, value.operand, value.bytes, order++});
    }
  }
  llvm::stable_sort(candidates, [](const Candidate &a, const Candidate &b) {
    if (a.fixed != b.fixed)
      return a.fixed;
    if (a.operand != b.operand)
      return a.operand;
    if (a.bytes != b.bytes)
      return a.bytes > b.bytes;
    return a.order < b.order;
  });
  SmallVector<Axes> chosen(rule.factors.size());
  auto used = [&](StringAttr axis) {
    return llvm::any_of(chosen,
                        [&](const Axes &a) { return llvm::is_contained(a, axis); });
  };
  for (const Candidate &c : candidates) {
    if (!chosen[c.factor].empty() || llvm::any_of(*c.axes, used))
      continue;
    chosen[c.factor] = *c.axes;
  }
  return chosen;
}

bool sharding::isAnchored(Value value,
                          function_ref<bool(BlockArgument)> fixedArg) {
  while (true) {
    if (auto arg = dyn_cast<BlockArgument>(value))
      return fixedArg(arg);
    Operation *def = value.getDefiningOp();
    if (isa<ShardOp>(def))
      return true;
    if (!isa<ReshapeOp, SliceOp, TransposeOp, ExpandOp>(def))
      return false;
    value = def->getOperand(0);
  }
}
