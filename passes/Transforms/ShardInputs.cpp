//===- ShardInputs.cpp - declare the mesh and split the batch -------------===//
//
// The start of data parallelism: declares the device mesh (`loom.mesh @mesh`)
// and splits dimension 0 of every data input (`loom.input` arguments) of the
// public functions over the data axis. Parameters and optimizer state stay
// replicated, unless ZeRO shards them (`zero`):
//
// * stage 1 and up split optimizer state (`loom.state`) along dimension 0,
//   so each device updates its block of every parameter;
// * stage 2 also keeps only that block of each gradient (a partitioning
//   option: partial sums meet the split state in a reduce_scatter);
// * stage 3 also stores parameters split (`loom.gather_for_use`: gathered
//   whole at each use, so the whole copy lives only while it is used).
//
// Tensors whose dimension 0 the data axis does not divide stay replicated.
// `loom-propagate-sharding` carries the split through the graph and
// `loom-partition` turns it into per-device programs.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/Transforms/Sharding.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::loom {
#define GEN_PASS_DEF_LOOMSHARDINPUTSPASS
#include "passes/Transforms/Passes.h.inc"

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

struct LoomShardInputsPass
    : impl::LoomShardInputsPassBase<LoomShardInputsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *context = &getContext();
    FailureOr<MeshAttr> mesh =
        parseMesh(context, meshShape, [&] { return module.emitError(); });
    if (failed(mesh))
      return signalPassFailure();
    if (!mesh->getAxisSize(dataAxis)) {
      module.emitError() << "the mesh has no data axis \"" << dataAxis
                         << "\" (its axes: " << meshShape << ")";
      return signalPassFailure();
    }
    if (zero < 0 || zero > 3) {
      module.emitError() << "ZeRO stage must be 0, 1, 2 or 3, got "
                         << static_cast<int64_t>(zero);
      return signalPassFailure();
    }
    if (SymbolTable::lookupSymbolIn(module, "mesh")) {
      module.emitError("the module already has a symbol @mesh");
      return signalPassFailure();
    }
    OpBuilder builder = OpBuilder::atBlockBegin(module.getBody());
    MeshOp::create(builder, module.getLoc(), "mesh", *mesh);
    auto meshRef = FlatSymbolRefAttr::get(context, "mesh");
    StringAttr axis = StringAttr::get(context, dataAxis);

    for (auto func : module.getOps<func::FuncOp>()) {
      if (!func.isPublic() || func.isExternal())
        continue;
      for (BlockArgument arg : func.getArguments()) {
        unsigned index = arg.getArgNumber();
        auto name = func.getArgAttrOfType<StringAttr>(index, "loom.input");
        auto type = dyn_cast<RankedTensorType>(arg.getType());
        if (!type || type.getRank() == 0)
          continue;
        bool state = func.getArgAttr(index, "loom.state") != nullptr;
        bool param = func.getArgAttr(index, "loom.param") != nullptr;
        int64_t size = *mesh->getAxisSize(dataAxis);
        if (!name && ((state && zero >= 1) || (param && zero >= 3)) &&
            type.getDimSize(0) % size == 0) {
          sharding::DimAxes axes = sharding::replicated(type);
          axes[0].push_back(axis);
          func.setArgAttr(index, sharding::kShardingAttr,
                          sharding::toAttr(context, meshRef, axes));
          if (param)
            func.setArgAttr(index, "loom.gather_for_use",
                            UnitAttr::get(context));
          continue;
        }
        if (!name)
          continue;
        sharding::DimAxes axes = sharding::replicated(type);
        axes[0].push_back(axis);
        ShardingAttr attr = sharding::toAttr(context, meshRef, axes);
        if (failed(attr.verifyFor(type, *mesh, [&] {
              return emitError(arg.getLoc())
                     << "cannot split input \"" << name.getValue()
                     << "\" of @" << func.getSymName()
                     << " over the data axis: ";
            })))
          return signalPassFailure();
        func.setArgAttr(arg.getArgNumber(), sharding::kShardingAttr, attr);
      }
    }
  }
};

} // namespace
} // namespace mlir::loom
