//===- ShardInputs.cpp - declare the mesh and the arguments' shardings ----===//
//
// The start of every parallel layout: declares the device mesh
// (`loom.mesh @mesh`) and gives the arguments of the public functions their
// shardings, from which `loom-propagate-sharding` and `loom-partition` make
// the rest. In order of precedence:
//
// * the user's shardings (`shard`: `NAME_GLOB=[{...}, ...]` for parameters
//   and inputs, as `loomc --shard` and `--shard-file` give them; the first
//   pattern that matches a name wins);
// * the tensor-parallel plan (`tp-plan=auto`: Megatron's layouts found in
//   the model, see TensorParallel.h) for the parameters the user left;
// * expert parallelism (when the mesh has the expert axis): the stacked
//   weights of mixture-of-experts layers split along the experts over it;
// * data inputs split along dimension 0 over the data axis (when the mesh
//   has one) and the expert axis;
// * optimizer state (`loom.state_of`) takes its parameter's sharding, and
//   ZeRO (`zero`) adds the data axis to its dimension 0:
//   - stage 1 and up split optimizer state, so each device updates its
//     block of every parameter;
//   - stage 2 also keeps only that block of each gradient (a partitioning
//     option: partial sums meet the split state in a reduce_scatter);
//   - stage 3 also stores parameters split (`loom.gather_for_use`: gathered
//     to the split they are used with at each use, so the whole copy lives
//     only while it is used).
//
// Tensors whose dimension 0 the data axis does not divide stay as they are.
//
//===----------------------------------------------------------------------===//

#include "dialects/Loom/MoeExpansion.h"
#include "passes/Passes.h"
#include "passes/Transforms/Sharding.h"
#include "passes/Transforms/TensorParallel.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/GlobPattern.h"

namespace mlir::loom {
#define GEN_PASS_DEF_LOOMSHARDINPUTSPASS
#include "passes/Transforms/Passes.h.inc"

using namespace sharding;

namespace {

/// Parses "dp=2,tp=2".
FailureOr<MeshAttr> parseMesh(MLIRContext *context, StringRef text,
                              function_ref<InFlightDiagnostic()> emitError) {
  SmallVector<StringAttr> names;
  SmallVector<int64_t> sizes;
  SmallVector<StringRef> axes;
  text.split(axes, ',');
  for (StringRef axis : axes) {
    auto [name, size] = axis.trim().split('=');
    int64_t value = 0;
    if (name.trim().empty() || size.trim().getAsInteger(10, value))
      return emitError() << "expected a mesh like dp=4 or dp=2,tp=2, got \""
                         << text << "\"";
    names.push_back(StringAttr::get(context, name.trim()));
    sizes.push_back(value);
  }
  MeshAttr mesh = MeshAttr::getChecked(emitError, context, ArrayRef<StringAttr>(names),
                                        ArrayRef<int64_t>(sizes));
  if (!mesh)
    return failure();
  return mesh;
}

/// One `NAME_GLOB=SPEC` of the user.
struct UserSharding {
  std::string text;
  llvm::GlobPattern pattern;
  DimAxes axes;
  bool used = false;
};

FailureOr<UserSharding> parseUserSharding(MLIRContext *context,
                                          StringRef text, MeshAttr mesh,
                                          ModuleOp module) {
  auto [glob, spec] = text.split('=');
  if (glob.trim().empty() || spec.trim().empty())
    return module.emitError()
           << "expected --shard NAME_GLOB=[{axes}, ...], e.g. "
              "'h.*.fc1.weight=[{tp}, {}]', got \""
           << text << "\"";
  llvm::Expected<llvm::GlobPattern> pattern =
      llvm::GlobPattern::create(glob.trim());
  if (!pattern)
    return module.emitError() << "--shard \"" << text
                              << "\": " << llvm::toString(pattern.takeError());
  std::string source = ("#loom.sharding<@mesh, " + spec.trim() + ">").str();
  size_t read = 0;
  Attribute attr;
  {
    // The parser's own message would point into the text built here; the
    // error below names the user's spec instead.
    ScopedDiagnosticHandler quiet(context,
                                  [](Diagnostic &) { return success(); });
    attr = parseAttribute(source, context, Type(), &read,
                          /*isKnownNullTerminated=*/false);
  }
  auto sharding = dyn_cast_or_null<ShardingAttr>(attr);
  if (!sharding || read != source.size())
    return module.emitError()
           << "--shard \"" << text
           << "\": expected a list of mesh axes per dimension, like "
              "[{tp}, {}] or [{dp, tp}, {}]";
  for (Attribute dim : sharding.getDimAxes())
    for (Attribute axis : cast<ArrayAttr>(dim))
      if (!mesh.getAxisSize(cast<StringAttr>(axis).getValue()))
        return module.emitError()
               << "--shard \"" << text << "\" names mesh axis \""
               << cast<StringAttr>(axis).getValue()
               << "\", which the mesh does not have";
  return UserSharding{text.str(), std::move(*pattern), dimAxesOf(sharding)};
}

struct LoomShardInputsPass
    : impl::LoomShardInputsPassBase<LoomShardInputsPass> {
  using Base::Base;

  /// Sets `axes` on argument `index` of `func` after checking that the mesh
  /// divides it; `what` says where the sharding came from.
  LogicalResult setSharding(func::FuncOp func, unsigned index,
                            const DimAxes &axes, FlatSymbolRefAttr meshRef,
                            MeshAttr mesh, StringRef name, StringRef what) {
    auto type = cast<RankedTensorType>(func.getArgument(index).getType());
    if (type.getRank() != (int64_t)axes.size())
      return emitError(func.getArgument(index).getLoc())
             << what << " gives \"" << name << "\" a sharding of rank "
             << axes.size() << ", but it has rank " << type.getRank() << " ("
             << type << ")";
    ShardingAttr attr = toAttr(&getContext(), meshRef, axes);
    if (failed(attr.verifyFor(type, mesh, [&] {
          return emitError(func.getArgument(index).getLoc())
                 << what << ": cannot split \"" << name << "\" " << type
                 << ": ";
        })))
      return failure();
    if (isReplicated(axes))
      func.removeArgAttr(index, kShardingAttr);
    else
      func.setArgAttr(index, kShardingAttr, attr);
    return success();
  }

  /// Sequence parallelism: the output of every embedding lookup (a gather
  /// along axis 0 of a parameter table with data-input indices of rank 2 or
  /// more: [batch, sequence]) is annotated (`loom.shard`) as split along
  /// the sequence over the tp axis (and the batch over the data axis).
  /// Returns how many it annotated.
  FailureOr<unsigned> splitSequence(func::FuncOp func, MeshAttr mesh,
                                    FlatSymbolRefAttr meshRef,
                                    bool hasDataAxis) {
    MLIRContext *context = &getContext();
    SmallVector<GatherOp> lookups;
    func.walk([&](GatherOp gather) {
      auto table = dyn_cast<BlockArgument>(gather.getInput());
      auto indices = dyn_cast<BlockArgument>(gather.getIndices());
      if (gather.getAxis() == 0 && table && indices &&
          func.getArgAttr(table.getArgNumber(), "loom.param") &&
          func.getArgAttr(indices.getArgNumber(), "loom.input") &&
          gather.getIndices().getType().getRank() >= 2)
        lookups.push_back(gather);
    });
    for (GatherOp gather : lookups) {
      auto type = cast<RankedTensorType>(gather.getType());
      DimAxes axes = replicated(type);
      if (hasDataAxis)
        axes[0].push_back(StringAttr::get(context, dataAxis));
      axes[1].push_back(StringAttr::get(context, tpAxis));
      ShardingAttr attr = toAttr(context, meshRef, axes);
      if (failed(attr.verifyFor(type, mesh, [&] {
            return gather.emitError()
                   << "--sequence-parallel cannot split this embedding's "
                      "output "
                   << type << " along the sequence (dimension 1): ";
          })))
        return failure();
      OpBuilder b(gather->getContext());
      b.setInsertionPointAfter(gather);
      auto shard = ShardOp::create(b, gather.getLoc(), gather.getResult(), attr);
      gather.getResult().replaceAllUsesExcept(shard.getResult(), shard);
    }
    return lookups.size();
  }

  /// Expert parallelism: the experts' rows are laid out as the split
  /// experts need them (`loom.shard`). Dispatched rows `[E, C, D]` split
  /// along the experts over the expert axis (and their slots over the data
  /// axis where it divides them): each rank fills its tokens' slots, and
  /// partitioning completes the partial buffers with a reduce-scatter to
  /// the experts' ranks; the experts' outputs are then gathered over the
  /// data axis only. Tokens `[N, D]` read by every expert (the model's own
  /// routing) are gathered over the expert axis, so each rank runs its
  /// experts on the tokens of its data-parallel group, and the weighted sum
  /// over experts is reduce-scattered back to the tokens' ranks.
  void pinExpertLayouts(func::FuncOp func, MeshAttr mesh,
                        FlatSymbolRefAttr meshRef, bool hasDataAxis) {
    MLIRContext *context = &getContext();
    StringAttr ep = StringAttr::get(context, expertAxis);
    StringAttr dp = StringAttr::get(context, dataAxis);
    int64_t dpSize = hasDataAxis ? *mesh.getAxisSize(dataAxis) : 1;
    auto pin = [&](OpBuilder &b, Location loc, Value value, DimAxes axes) {
      return ShardOp::create(b, loc, value, toAttr(context, meshRef, axes))
          .getResult();
    };
    DenseMap<Value, Value> pinned;
    SmallVector<Operation *> inputs, outputs;
    func.walk([&](Operation *op) {
      if (op->hasAttr(kMoeExpertInputAttr))
        inputs.push_back(op);
      if (op->hasAttr(kMoeExpertOutputAttr))
        outputs.push_back(op);
    });
    for (Operation *op : inputs) {
      Value rows = op->getOperand(0);
      auto type = cast<RankedTensorType>(rows.getType());
      Value &to = pinned[rows];
      if (!to) {
        DimAxes axes = replicated(type);
        unsigned slots = type.getRank() == 3 ? 1 : 0;
        if (type.getRank() == 3)
          axes[0].push_back(ep);
        if (hasDataAxis && type.getDimSize(slots) % dpSize == 0)
          axes[slots].push_back(dp);
        OpBuilder b(context);
        b.setInsertionPointAfterValue(rows);
        to = pin(b, op->getLoc(), rows, axes);
      }
      op->setOperand(0, to);
    }
    for (Operation *op : outputs) {
      Value out = op->getResult(0);
      auto type = cast<RankedTensorType>(out.getType());
      DimAxes axes = replicated(type);
      // Rows of routing groups that are the batch's blocks go back to the
      // ranks of their tokens (an all-to-all over ep); otherwise each rank
      // gathers every row of its experts.
      Axes data;
      if (hasDataAxis)
        data.push_back(dp);
      data.push_back(ep);
      auto groups = op->getAttrOfType<IntegerAttr>(kMoeExpertOutputAttr);
      if (groups && groups.getInt() == groupSize(mesh, data) &&
          type.getDimSize(1) % groups.getInt() == 0)
        axes[1] = data;
      else
        axes[0].push_back(ep);
      OpBuilder b(context);
      b.setInsertionPointAfter(op);
      Value to = pin(b, op->getLoc(), out, axes);
      out.replaceAllUsesExcept(to, to.getDefiningOp());
    }
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *context = &getContext();
    FailureOr<MeshAttr> meshOr =
        parseMesh(context, meshShape, [&] { return module.emitError(); });
    if (failed(meshOr))
      return signalPassFailure();
    MeshAttr mesh = *meshOr;
    bool hasDataAxis = mesh.getAxisSize(dataAxis).has_value();
    bool hasExpertAxis = mesh.getAxisSize(expertAxis).has_value();
    if (zero < 0 || zero > 3) {
      module.emitError() << "ZeRO stage must be 0, 1, 2 or 3, got "
                         << static_cast<int64_t>(zero);
      return signalPassFailure();
    }
    if (zero > 0 && !hasDataAxis) {
      module.emitError() << "ZeRO shards over the data axis, but the mesh has "
                            "no axis \""
                         << dataAxis << "\" (its axes: " << meshShape << ")";
      return signalPassFailure();
    }
    if (tpPlan != "none" && tpPlan != "auto") {
      module.emitError() << "tp-plan must be none or auto, got \"" << tpPlan
                         << "\"";
      return signalPassFailure();
    }
    if (tpPlan == "auto" && !mesh.getAxisSize(tpAxis)) {
      module.emitError() << "--tp-plan=auto splits over the mesh axis \""
                         << tpAxis << "\", which the mesh has not (its axes: "
                         << meshShape << ")";
      return signalPassFailure();
    }
    if (sequenceParallel && !mesh.getAxisSize(tpAxis)) {
      module.emitError() << "--sequence-parallel splits the sequence over the "
                            "mesh axis \""
                         << tpAxis << "\", which the mesh has not (its axes: "
                         << meshShape << ")";
      return signalPassFailure();
    }
    if (SymbolTable::lookupSymbolIn(module, "mesh")) {
      module.emitError("the module already has a symbol @mesh");
      return signalPassFailure();
    }
    SmallVector<UserSharding> user;
    for (const std::string &text : shard) {
      FailureOr<UserSharding> parsed =
          parseUserSharding(context, text, mesh, module);
      if (failed(parsed))
        return signalPassFailure();
      user.push_back(std::move(*parsed));
    }
    OpBuilder builder = OpBuilder::atBlockBegin(module.getBody());
    MeshOp::create(builder, module.getLoc(), "mesh", mesh);
    auto meshRef = FlatSymbolRefAttr::get(context, "mesh");
    StringAttr dpAxis = StringAttr::get(context, dataAxis);
    StringAttr epAxis = StringAttr::get(context, expertAxis);

    // The experts' stacked weights (marked by loom-build-train-step), by
    // name, so that every entry point splits them alike.
    llvm::StringSet<> expertParams;
    for (auto func : module.getOps<func::FuncOp>())
      for (unsigned i = 0; i < func.getNumArguments(); ++i)
        if (func.getArgAttr(i, kMoeExpertParamAttr))
          if (auto name = func.getArgAttrOfType<StringAttr>(i, "loom.param"))
            expertParams.insert(name.getValue());
    if (hasExpertAxis && expertParams.empty()) {
      module.emitError() << "the mesh axis \"" << expertAxis
                         << "\" splits the experts of mixture-of-experts "
                            "layers (loom.moe) in a training step, and this "
                            "module has none";
      return signalPassFailure();
    }

    // The tensor-parallel plan, by parameter name, for the parameters the
    // user did not annotate.
    llvm::StringMap<DimAxes> planned;
    if (tpPlan == "auto") {
      llvm::StringSet<> fixed;
      for (auto func : module.getOps<func::FuncOp>())
        for (unsigned i = 0; i < func.getNumArguments(); ++i)
          if (auto name = func.getArgAttrOfType<StringAttr>(i, "loom.param"))
            if (llvm::any_of(user, [&](const UserSharding &u) {
                  return u.pattern.match(name.getValue());
                }))
              fixed.insert(name.getValue());
      FailureOr<llvm::StringMap<DimAxes>> plan = planTensorParallel(
          module, meshRef, mesh, StringAttr::get(context, tpAxis), fixed);
      if (failed(plan))
        return signalPassFailure();
      planned = std::move(*plan);
    }

    for (auto func : module.getOps<func::FuncOp>()) {
      if (!func.isPublic() || func.isExternal())
        continue;
      llvm::StringMap<DimAxes> paramAxes;
      for (BlockArgument arg : func.getArguments()) {
        unsigned index = arg.getArgNumber();
        auto type = dyn_cast<RankedTensorType>(arg.getType());
        if (!type)
          continue;
        auto input = func.getArgAttrOfType<StringAttr>(index, "loom.input");
        auto param = func.getArgAttrOfType<StringAttr>(index, "loom.param");
        StringAttr name = input ? input : param;
        if (!name)
          continue;
        auto match = llvm::find_if(user, [&](const UserSharding &u) {
          return u.pattern.match(name.getValue());
        });
        if (match != user.end()) {
          match->used = true;
          if (failed(setSharding(func, index, match->axes, meshRef, mesh,
                                 name.getValue(),
                                 "--shard \"" + match->text + "\"")))
            return signalPassFailure();
        } else if (param && hasExpertAxis &&
                   expertParams.contains(param.getValue())) {
          DimAxes axes = replicated(type);
          axes[0].push_back(epAxis);
          if (failed(setSharding(func, index, axes, meshRef, mesh,
                                 name.getValue(), "expert parallelism")))
            return signalPassFailure();
        } else if (param && planned.count(param.getValue())) {
          if (failed(setSharding(func, index, planned[param.getValue()],
                                 meshRef, mesh, name.getValue(),
                                 "the tensor-parallel plan")))
            return signalPassFailure();
        } else if (input && (hasDataAxis || hasExpertAxis) &&
                   type.getRank() > 0) {
          DimAxes axes = replicated(type);
          if (hasDataAxis)
            axes[0].push_back(dpAxis);
          if (hasExpertAxis)
            axes[0].push_back(epAxis);
          ShardingAttr attr = toAttr(context, meshRef, axes);
          if (failed(attr.verifyFor(type, mesh, [&] {
                return emitError(arg.getLoc())
                       << "cannot split input \"" << name.getValue()
                       << "\" of @" << func.getSymName()
                       << " over the data axis: ";
              })))
            return signalPassFailure();
          func.setArgAttr(index, kShardingAttr, attr);
        }
        if (param) {
          auto attr = func.getArgAttrOfType<ShardingAttr>(index, kShardingAttr);
          paramAxes[param.getValue()] = attr ? dimAxesOf(attr) : replicated(type);
        }
      }

      // Optimizer state follows its parameter; ZeRO adds the data axis to
      // dimension 0 of state (1+) and of parameters (3) where it divides the
      // block.
      auto withDataAxis = [&](RankedTensorType type, DimAxes axes)
          -> std::optional<DimAxes> {
        if (type.getRank() == 0 || llvm::is_contained(axes[0], dpAxis))
          return std::nullopt;
        axes[0].push_back(dpAxis);
        if (type.getDimSize(0) % groupSize(mesh, axes[0]) != 0)
          return std::nullopt;
        return axes;
      };
      for (BlockArgument arg : func.getArguments()) {
        unsigned index = arg.getArgNumber();
        auto type = dyn_cast<RankedTensorType>(arg.getType());
        if (!type)
          continue;
        if (func.getArgAttr(index, "loom.state")) {
          DimAxes axes = replicated(type);
          if (auto of = func.getArgAttrOfType<StringAttr>(index, "loom.state_of"))
            if (auto it = paramAxes.find(of.getValue()); it != paramAxes.end())
              axes = it->second;
          if (zero >= 1)
            if (std::optional<DimAxes> split = withDataAxis(type, axes))
              axes = *split;
          if (failed(setSharding(func, index, axes, meshRef, mesh,
                                 func.getArgAttrOfType<StringAttr>(index, "loom.state")
                                     .getValue(),
                                 "optimizer state")))
            return signalPassFailure();
          continue;
        }
        auto param = func.getArgAttrOfType<StringAttr>(index, "loom.param");
        if (!param || zero < 3)
          continue;
        DimAxes use = paramAxes[param.getValue()];
        std::optional<DimAxes> stored = withDataAxis(type, use);
        if (!stored)
          continue;
        func.setArgAttr(index, kShardingAttr,
                        toAttr(context, meshRef, *stored));
        func.setArgAttr(index, "loom.gather_for_use",
                        isReplicated(use)
                            ? Attribute(UnitAttr::get(context))
                            : Attribute(toAttr(context, meshRef, use)));
      }
    }

    if (hasExpertAxis)
      for (auto func : module.getOps<func::FuncOp>())
        if (func.isPublic() && !func.isExternal())
          pinExpertLayouts(func, mesh, meshRef, hasDataAxis);

    unsigned annotated = 0;
    if (sequenceParallel)
      for (auto func : module.getOps<func::FuncOp>()) {
        if (!func.isPublic() || func.isExternal())
          continue;
        FailureOr<unsigned> count =
            splitSequence(func, mesh, meshRef, hasDataAxis);
        if (failed(count))
          return signalPassFailure();
        annotated += *count;
      }
    if (sequenceParallel && annotated == 0) {
      module.emitError("--sequence-parallel found no embedding lookup (a "
                       "gather of a parameter table at [batch, sequence] "
                       "token ids) to split along the sequence");
      return signalPassFailure();
    }
    for (const UserSharding &u : user)
      if (!u.used) {
        std::string names;
        unsigned count = 0;
        for (auto func : module.getOps<func::FuncOp>()) {
          if (!func.isPublic())
            continue;
          for (unsigned i = 0; i < func.getNumArguments() && count < 12; ++i)
            if (auto p = func.getArgAttrOfType<StringAttr>(i, "loom.param"))
              if (names.find("\"" + p.getValue().str() + "\"") ==
                  std::string::npos) {
                names += (count++ ? ", \"" : "\"") + p.getValue().str() + "\"";
              }
          break;
        }
        module.emitError() << "--shard \"" << u.text
                           << "\" matches no parameter or input (parameters: "
                           << names << (count == 12 ? ", ..." : "") << ")";
        return signalPassFailure();
      }
  }
};

} // namespace
} // namespace mlir::loom
