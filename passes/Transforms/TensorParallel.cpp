//===- TensorParallel.cpp - Megatron layouts found in a model -------------===//
//
// The planner pairs linear layers as Megatron-LM does (column-parallel, then
// row-parallel) by walking back from each linear layer's input, seeds the
// weights of the pairs it accepts with their splits, and lets sharding
// propagation find the parameters that follow (biases of split features)
// on a trial run over the forward function in which parameters are open.
//
//===----------------------------------------------------------------------===//

#include "passes/Transforms/TensorParallel.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace mlir::loom;
using namespace mlir::loom::sharding;

namespace {

std::string describe(Operation *op) {
  std::string node = onnxNodeOf(op->getLoc()).str();
  std::string text = "'" + op->getName().getStringRef().str() + "'";
  if (!node.empty())
    text += " (node \"" + node + "\")";
  return text;
}

StringAttr paramName(BlockArgument arg) {
  auto func = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
  return func ? func.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                                  "loom.param")
              : StringAttr();
}

/// A linear layer: a product whose right operand reads a parameter, and
/// which dimensions of that parameter hold the layer's output features (N)
/// and input features (K).
struct Linear {
  MatmulOp op;
  BlockArgument param;
  int64_t nDim = -1, kDim = -1;
};

/// The parameter a product's right operand reads, through views that only
/// add or drop unit dimensions and slices that keep the feature dimensions
/// whole (the parts of a fused projection).
std::optional<Linear> asLinear(MatmulOp op) {
  auto rhsType = cast<RankedTensorType>(op.getRhs().getType());
  if (op.getTransposeLhs() || rhsType.getRank() != 2)
    return std::nullopt;
  // Which dimension of the value at hand each rhs dimension is.
  SmallVector<int64_t, 2> at = {0, 1};
  Value v = op.getRhs();
  while (true) {
    if (auto arg = dyn_cast<BlockArgument>(v)) {
      if (!paramName(arg))
        return std::nullopt;
      Linear linear{op, arg, at[op.getTransposeRhs() ? 0 : 1],
                    at[op.getTransposeRhs() ? 1 : 0]};
      return linear;
    }
    if (auto reshape = v.getDefiningOp<ReshapeOp>()) {
      ArrayRef<int64_t> in = reshape.getInput().getType().getShape();
      ArrayRef<int64_t> out = reshape.getResult().getType().getShape();
      SmallVector<int64_t> inDims, outDims;
      for (auto [d, size] : llvm::enumerate(in))
        if (size != 1)
          inDims.push_back(d);
      for (auto [d, size] : llvm::enumerate(out))
        if (size != 1)
          outDims.push_back(d);
      if (inDims.size() != outDims.size())
        return std::nullopt;
      for (auto [i, o] : llvm::zip(inDims, outDims))
        if (in[i] != out[o])
          return std::nullopt;
      for (int64_t &d : at) {
        auto pos = llvm::find(outDims, d);
        if (pos == outDims.end())
          return std::nullopt;
        d = inDims[pos - outDims.begin()];
      }
      v = reshape.getInput();
      continue;
    }
    // Mixed precision reads the weight through its cast (loom-autocast).
    if (auto castOp = v.getDefiningOp<CastOp>()) {
      v = castOp.getInput();
      continue;
    }
    if (auto transpose = v.getDefiningOp<TransposeOp>()) {
      ArrayRef<int64_t> perm = transpose.getPerm();
      for (int64_t &d : at)
        d = perm[d];
      v = transpose.getInput();
      continue;
    }
    if (auto slice = v.getDefiningOp<SliceOp>()) {
      auto type = slice.getInput().getType();
      for (int64_t d : at)
        if (slice.getStarts()[d] != 0 || slice.getSteps()[d] != 1 ||
            slice.getLimits()[d] != type.getDimSize(d))
          return std::nullopt;
      v = slice.getInput();
      continue;
    }
    return std::nullopt;
  }
}

/// Whether `v` is a parameter or a view of one (a slice of a fused
/// projection's bias): values read elementwise, which follow the split.
bool isParamView(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    if (!isa<ReshapeOp, SliceOp, TransposeOp, ExpandOp>(def))
      return false;
    v = def->getOperand(0);
  }
  return bool(paramName(cast<BlockArgument>(v)));
}

/// Ops through which a split of the features stays local.
bool keepsSplit(Operation *op) {
  return op->hasTrait<OpTrait::Elementwise>() ||
         isa<AddOp, SubOp, MulOp, DivOp, PowOp, MaxOp, MinOp, WhereOp,
             EqualOp, LessOp, LessEqualOp, GreaterOp, GreaterEqualOp, CastOp,
             ReshapeOp, TransposeOp, ExpandOp, SoftmaxOp, LogSoftmaxOp,
             MatmulOp, TriluOp, DropoutOp, OptimizationBarrierOp>(op);
}

class Planner {
public:
  Planner(func::FuncOp func, FlatSymbolRefAttr meshRef, MeshAttr mesh,
          StringAttr axis, const llvm::StringSet<> &fixed)
      : func(func), meshRef(meshRef), mesh(mesh), axis(axis), fixed(fixed),
        size(*mesh.getAxisSize(axis.getValue())) {}

  LogicalResult run(llvm::StringMap<DimAxes> &plan,
                    llvm::StringMap<std::string> &reasons) {
    func.walk([&](MatmulOp op) {
      if (std::optional<Linear> linear = asLinear(op))
        linears.push_back(*linear);
    });
    for (Linear &l : linears)
      byOp[l.op] = &l;

    // Pairs, in program order; a layer is in at most one.
    DenseSet<Operation *> taken;
    for (Linear &row : linears) {
      if (taken.contains(row.op))
        continue;
      std::string why;
      DenseSet<Operation *> splitOps;
      SmallVector<Linear *> columns = columnsOf(row, taken, why, splitOps);
      if (columns.empty()) {
        failures[row.op] = why;
        continue;
      }
      if (failed(checkHeads(splitOps)))
        return failure();
      regions.insert(splitOps.begin(), splitOps.end());
      taken.insert(row.op);
      rowOf[row.op] = &row;
      for (Linear *c : columns) {
        taken.insert(c->op);
        columnOf[c->op] = &row;
      }
    }

    // Seeds: the weights' feature dimensions, which the axis must divide.
    DenseMap<Value, DimAxes> seeds;
    auto seed = [&](Linear &l, int64_t dim, StringRef what) -> LogicalResult {
      auto type = cast<RankedTensorType>(l.param.getType());
      if (type.getDimSize(dim) % size != 0)
        return l.op.emitError()
               << "tensor parallelism over mesh axis \"" << axis.getValue()
               << "\" (size " << size << ") cannot split the "
               << type.getDimSize(dim) << " " << what
               << " features of this linear layer (parameter \""
               << paramName(l.param).getValue() << "\" " << type << ")";
      DimAxes axes = replicated(type);
      axes[dim] = {axis};
      seeds[l.param] = axes;
      return success();
    };
    for (Linear &l : linears) {
      if (columnOf.count(l.op) && failed(seed(l, l.nDim, "output")))
        return failure();
      if (rowOf.count(l.op) && failed(seed(l, l.kDim, "input")))
        return failure();
    }
    planVocabulary(taken, seeds);

    // The trial: seeded weights fixed, the other parameters open.
    DenseSet<Value> open;
    SmallVector<std::pair<unsigned, Attribute>> saved;
    for (BlockArgument arg : func.getArguments()) {
      unsigned i = arg.getArgNumber();
      saved.push_back({i, func.getArgAttr(i, kShardingAttr)});
      func.removeArgAttr(i, kShardingAttr);
      StringAttr name = paramName(arg);
      if (auto it = seeds.find(arg); it != seeds.end())
        func.setArgAttr(i, kShardingAttr,
                        toAttr(func.getContext(), meshRef, it->second));
      else if (name && !fixed.contains(name.getValue()))
        open.insert(arg);
    }
    FailureOr<DenseMap<Value, DimAxes>> trial =
        propagateShardings(func, meshRef, mesh, open, /*annotate=*/false);
    for (auto [i, attr] : saved) {
      func.removeArgAttr(i, kShardingAttr);
      if (attr)
        func.setArgAttr(i, kShardingAttr, attr);
    }
    if (failed(trial))
      return failure();

    for (BlockArgument arg : func.getArguments()) {
      StringAttr name = paramName(arg);
      if (!name || fixed.contains(name.getValue()))
        continue;
      DimAxes axes = seeds.count(arg) ? seeds[arg] : (*trial)[arg];
      // Only the tensor-parallel axis is the plan's.
      for (Axes &dim : axes)
        llvm::erase_if(dim, [&](StringAttr a) { return a != axis; });
      if (!isReplicated(axes))
        plan[name.getValue()] = axes;
      reasons[name.getValue()] = reasonFor(arg, axes);
    }
    return success();
  }

private:
  /// The column-parallel layers feeding `row`'s input, or none (and why).
  /// Megatron-LM's vocabulary parallelism: an embedding table (gathered at
  /// the token ids of a data input) split by rows, and an output layer whose
  /// logits only a softmax cross-entropy reads (through reshapes) split by
  /// its output features, the classes; the loss is then the
  /// vocabulary-parallel cross-entropy and the logits are never whole. A
  /// vocabulary the axis does not divide stays replicated (reported).
  void planVocabulary(const DenseSet<Operation *> &taken,
                      DenseMap<Value, DimAxes> &seeds) {
    auto splitRows = [&](BlockArgument table, int64_t dim, StringRef what) {
      auto type = cast<RankedTensorType>(table.getType());
      if (type.getDimSize(dim) % size != 0) {
        vocabulary[table] = "replicated: " + what.str() + " of " +
                            std::to_string(type.getDimSize(dim)) +
                            " entries, which " + std::to_string(size) +
                            " does not divide";
        return;
      }
      if (auto it = seeds.find(table); it != seeds.end()) {
        DimAxes axes = replicated(type);
        axes[dim] = {axis};
        if (it->second != axes)
          return; // already split another way
      }
      DimAxes axes = replicated(type);
      axes[dim] = {axis};
      bool tied = seeds.count(table) && vocabulary.count(table);
      seeds[table] = axes;
      vocabulary[table] =
          tied ? "vocabulary-parallel embedding and output layer (one tied "
                 "table): its " +
                     std::to_string(type.getDimSize(dim)) +
                     " rows split over " + axis.getValue().str()
               : what.str() + " split by its " +
                     std::to_string(type.getDimSize(dim)) + " entries over " +
                     axis.getValue().str();
    };
    func.walk([&](GatherOp gather) {
      auto table = dyn_cast<BlockArgument>(gather.getInput());
      auto ids = dyn_cast<BlockArgument>(gather.getIndices());
      if (gather.getAxis() != 0 || !table || !ids || !paramName(table) ||
          !func.getArgAttr(ids.getArgNumber(), "loom.input") ||
          cast<RankedTensorType>(table.getType()).getRank() != 2)
        return;
      splitRows(table, 0,
                "vocabulary-parallel embedding: the table's rows (the "
                "vocabulary)");
    });
    for (Linear &l : linears) {
      if (taken.contains(l.op))
        continue;
      // The logits, through reshapes, must reach only a softmax
      // cross-entropy's scores, with the classes as its class dimension.
      Value v = l.op.getResult();
      int64_t classDim = cast<RankedTensorType>(v.getType()).getRank() - 1;
      bool toLoss = false;
      while (v.hasOneUse()) {
        Operation *user = *v.getUsers().begin();
        if (auto loss = dyn_cast<SoftmaxCrossEntropyOp>(user)) {
          toLoss = loss.getScores() == v && classDim == 1 && !loss.getWeight();
          break;
        }
        auto reshape = dyn_cast<ReshapeOp>(user);
        if (!reshape)
          break;
        ArrayRef<int64_t> in = reshape.getInput().getType().getShape();
        ArrayRef<int64_t> out = reshape.getResult().getType().getShape();
        // The classes stay the innermost dimension, whole.
        if (in.back() != out.back() || classDim != (int64_t)in.size() - 1)
          break;
        classDim = out.size() - 1;
        v = reshape.getResult();
      }
      if (toLoss)
        splitRows(l.param, l.nDim,
                  "vocabulary-parallel output layer: its output features "
                  "(the classes, whose loss is the vocabulary-parallel "
                  "cross-entropy)");
    }
  }

  /// A reshape that makes heads of the split features must make a number
  /// of heads the axis divides.
  LogicalResult checkHeads(const DenseSet<Operation *> &splitOps) {
    // In program order, so the first such reshape is the one reported.
    SmallVector<ReshapeOp> reshapes;
    func.walk([&](ReshapeOp op) {
      if (splitOps.contains(op))
        reshapes.push_back(op);
    });
    for (ReshapeOp reshape : reshapes) {
      ArrayRef<int64_t> in = reshape.getInput().getType().getShape();
      ArrayRef<int64_t> out = reshape.getResult().getType().getShape();
      if (in.empty() || out.size() != in.size() + 1 ||
          in.drop_back() != out.drop_back(2) ||
          out[out.size() - 2] * out.back() != in.back())
        continue;
      int64_t heads = out[out.size() - 2];
      if (heads % size != 0)
        return reshape.emitError()
               << "tensor parallelism over mesh axis \"" << axis.getValue()
               << "\" (size " << size << ") splits attention by heads, but "
               << "this reshape makes " << heads << " heads of "
               << out.back() << " features: " << size << " does not divide "
               << heads;
    }
    return success();
  }

  SmallVector<Linear *> columnsOf(Linear &row, const DenseSet<Operation *> &taken,
                                  std::string &why,
                                  DenseSet<Operation *> &splitOps) {
    llvm::SetVector<Linear *> columns;
    DenseSet<Operation *> region;
    SmallVector<Value> work = {row.op.getLhs()};
    DenseSet<Value> seen;
    while (!work.empty()) {
      Value v = work.pop_back_val();
      if (!seen.insert(v).second)
        continue;
      if (auto arg = dyn_cast<BlockArgument>(v)) {
        if (paramName(arg))
          continue; // read elementwise: a bias, a mask
        why = "its input depends on the function's input directly";
        return {};
      }
      Operation *def = v.getDefiningOp();
      if (isa<ConstantOp>(def) || isParamView(v))
        continue;
      if (auto mm = dyn_cast<MatmulOp>(def); mm && byOp.count(mm)) {
        Linear *l = byOp[mm];
        if (taken.contains(mm)) {
          why = "its input comes from " + describe(mm) +
                ", which is already split";
          return {};
        }
        columns.insert(l);
        continue;
      }
      if (!keepsSplit(def)) {
        why = "its input comes through " + describe(def) +
              ", which needs whole features";
        return {};
      }
      region.insert(def);
      for (Value operand : def->getOperands())
        work.push_back(operand);
    }
    if (columns.empty()) {
      why = "no linear layer feeds its input";
      return {};
    }
    // The ops that carry the split: those reading a column layer's output
    // (directly or not); the rest (a mask computed from a parameter) are
    // replicated and may be shared.
    DenseSet<Value> carrying;
    for (Linear *c : columns)
      carrying.insert(c->op.getResult());
    DenseSet<Operation *> split;
    func.walk([&](Operation *op) {
      if (!region.contains(op) ||
          llvm::none_of(op->getOperands(),
                        [&](Value v) { return carrying.contains(v); }))
        return;
      split.insert(op);
      for (Value r : op->getResults())
        carrying.insert(r);
    });
    // Nothing outside the region may read the split values.
    auto inside = [&](Operation *user) {
      return user == row.op.getOperation() || split.contains(user);
    };
    for (Operation *op : split)
      for (Operation *user : op->getUsers())
        if (!inside(user)) {
          why = "the values between it and " + describe(columns.front()->op) +
                " are also read by " + describe(user);
          return {};
        }
    for (Linear *c : columns)
      for (Operation *user : c->op->getUsers())
        if (!inside(user)) {
          why = "the output of " + describe(c->op) + " is also read by " +
                describe(user);
          return {};
        }
    splitOps = std::move(split);
    return SmallVector<Linear *>(columns.begin(), columns.end());
  }

  std::string reasonFor(BlockArgument arg, const DimAxes &axes) {
    if (auto it = vocabulary.find(arg); it != vocabulary.end())
      return it->second;
    for (Linear &l : linears) {
      if (l.param != arg)
        continue;
      if (auto it = columnOf.find(l.op); it != columnOf.end())
        return "column-parallel: output features split over " +
               axis.getValue().str() + ", summed by the row-parallel \"" +
               paramName(it->second->param).getValue().str() + "\"";
      if (rowOf.count(l.op))
        return "row-parallel: input features split over " +
               axis.getValue().str() + ", its output all-reduced";
      if (auto it = failures.find(l.op); it != failures.end())
        return "replicated: " + it->second;
    }
    if (!isReplicated(axes))
      return "split like the layer it follows (it acts on split features)";
    for (Operation *user : arg.getUsers())
      if (isa<AddOp>(user))
        for (Value operand : user->getOperands())
          if (auto mm = operand.getDefiningOp<MatmulOp>(); mm && rowOf.count(mm))
            return "replicated: the bias of the row-parallel \"" +
                   paramName(rowOf[mm]->param).getValue().str() +
                   "\", added after its all-reduce";
    if (!arg.use_empty() && llvm::all_of(arg.getUsers(), [&](Operation *u) {
          return regions.contains(u) ||
                 llvm::all_of(u->getUsers(), [&](Operation *uu) {
                   return regions.contains(uu);
                 });
        }))
      return "replicated: read whole inside the split layers (it has no "
             "split dimension)";
    for (Operation *user : arg.getUsers()) {
      if (isa<GatherOp>(user))
        return "replicated: a table looked up at positions that are not "
               "token ids (a data input), such as a position embedding";
      if (isa<LayerNormOp>(user) || isa<BatchNormOp, BatchNormTrainOp>(user))
        return "replicated: a normalization's scale or bias, which acts on "
               "whole features";
      return "replicated: read by " + describe(user) +
             " outside the split layers";
    }
    return "replicated: unused";
  }

  func::FuncOp func;
  FlatSymbolRefAttr meshRef;
  MeshAttr mesh;
  StringAttr axis;
  const llvm::StringSet<> &fixed;
  int64_t size;
  SmallVector<Linear> linears;
  DenseMap<Operation *, Linear *> byOp;
  /// Row-parallel layers, and the row-parallel layer of each column one.
  DenseMap<Operation *, Linear *> rowOf, columnOf;
  DenseMap<Operation *, std::string> failures;
  /// The ops of all accepted pairs that carry a split.
  DenseSet<Operation *> regions;
  /// What the vocabulary plan did with a table or output layer, and why.
  DenseMap<Value, std::string> vocabulary;
};

/// The function whose forward pass the plan reads.
func::FuncOp forwardFunction(ModuleOp module) {
  if (auto training = module->getAttrOfType<DictionaryAttr>("loom.training"))
    if (auto name = training.getAs<StringAttr>("forward"))
      if (auto func = module.lookupSymbol<func::FuncOp>(name))
        return func;
  for (auto func : module.getOps<func::FuncOp>())
    if (func.isPublic() && !func.isExternal() &&
        llvm::any_of(func.getArguments(),
                     [](BlockArgument a) { return bool(paramName(a)); }))
      return func;
  return {};
}

} // namespace

FailureOr<llvm::StringMap<DimAxes>>
mlir::loom::planTensorParallel(ModuleOp module, FlatSymbolRefAttr meshRef,
                               MeshAttr mesh, StringAttr axis,
                               const llvm::StringSet<> &fixed) {
  llvm::StringMap<DimAxes> plan;
  func::FuncOp forward = forwardFunction(module);
  if (!forward)
    return plan;
  llvm::StringMap<std::string> reasons;
  if (failed(Planner(forward, meshRef, mesh, axis, fixed).run(plan, reasons)))
    return failure();
  MLIRContext *context = module.getContext();
  for (auto func : module.getOps<func::FuncOp>())
    for (BlockArgument arg : func.getArguments())
      if (StringAttr name = paramName(arg))
        if (auto it = reasons.find(name.getValue()); it != reasons.end())
          func.setArgAttr(arg.getArgNumber(), kTensorParallelAttr,
                          StringAttr::get(context, it->second));
  return plan;
}
