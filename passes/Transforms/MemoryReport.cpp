//===- MemoryReport.cpp - per-rank memory of a training step --------------===//
//
// What one rank holds for a (partitioned) training step, read from the IR:
// parameters and optimizer state are the local sizes of the `loom.param` and
// `loom.state` arguments; a gradient is the value named `loom.gradient` by
// loom-build-train-step, counted at the size it has once complete (its local
// block when a reduce_scatter completes it, ZeRO-2); peak activations are the
// most bytes of temporaries alive at once in program order (before buffer
// reuse by bufferization, so an upper bound). `loomc --report` prints it.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/Transforms/Sharding.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir::loom {
#define GEN_PASS_DEF_LOOMMEMORYREPORTPASS
#include "passes/Transforms/Passes.h.inc"

namespace {

struct LoomMemoryReportPass
    : impl::LoomMemoryReportPassBase<LoomMemoryReportPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto func = module.lookupSymbol<func::FuncOp>(entry);
    if (!func || func.isExternal()) {
      module.emitError() << "no function @" << entry << " to report on";
      return signalPassFailure();
    }
    int64_t params = 0, paramElements = 0, state = 0, grads = 0;
    for (BlockArgument arg : func.getArguments()) {
      int64_t bytes = detail::tensorBytes(arg.getType());
      if (func.getArgAttr(arg.getArgNumber(), "loom.param")) {
        params += bytes;
        paramElements += detail::numElements(arg.getType());
      } else if (func.getArgAttr(arg.getArgNumber(), "loom.state")) {
        state += bytes;
      }
    }
    Block &body = func.getBody().front();
    DenseMap<Operation *, int64_t> position;
    for (auto [i, op] : llvm::enumerate(body))
      position[&op] = static_cast<int64_t>(i);
    // Bytes that start and stop being alive at each position.
    SmallVector<int64_t> born(position.size() + 1), dies(position.size() + 1);
    for (Operation &op : body) {
      for (Value result : op.getResults()) {
        int64_t bytes = detail::tensorBytes(result.getType());
        int64_t last = position[&op];
        for (Operation *user : result.getUsers())
          if (Operation *inBody = body.findAncestorOpInBlock(*user))
            last = std::max(last, position[inBody]);
        born[position[&op]] += bytes;
        dies[last] += bytes;
      }
      if (!op.hasAttr("loom.gradient") || op.getNumResults() == 0)
        continue;
      Value grad = op.getResult(0);
      int64_t bytes = detail::tensorBytes(grad.getType());
      for (Operation *user : grad.getUsers())
        if (auto scatter = dyn_cast<ReduceScatterOp>(user))
          bytes = std::min(bytes, detail::tensorBytes(scatter.getType()));
      // A block taken from the completed gradient (ZeRO-1 keeps gradients
      // whole) counts as the whole.
      for (Value v = grad; Operation *def = v.getDefiningOp();) {
        if (isa<ReshapeOp, TransposeOp>(def)) {
          v = def->getOperand(0);
          continue;
        }
        if (auto block = dyn_cast<LocalBlockOp>(def))
          bytes = std::max(bytes,
                           detail::tensorBytes(block.getInput().getType()));
        break;
      }
      grads += bytes;
    }
    int64_t live = 0, peak = 0;
    for (size_t i = 0; i < born.size(); ++i) {
      live += born[i];
      peak = std::max(peak, live);
      live -= dies[i];
    }
    std::string mesh = "one device";
    for (auto meshOp : module.getOps<MeshOp>()) {
      mesh = "mesh";
      for (auto [name, size] : llvm::zip(meshOp.getMesh().getAxisNames(),
                                         meshOp.getMesh().getAxisSizes()))
        mesh += " " + name.str() + "=" + std::to_string(size);
    }
    llvm::raw_ostream &os = llvm::outs();
    os << "memory per rank of @" << entry << " (" << mesh << "; "
       << paramElements << " parameter elements on this rank)\n";
    auto line = [&](StringRef what, int64_t bytes) {
      os << llvm::format("  %-18s %12lld bytes\n", what.str().c_str(),
                         static_cast<long long>(bytes));
    };
    line("parameters", params);
    line("gradients", grads);
    line("optimizer state", state);
    line("peak activations", peak);
    line("total", params + grads + state + peak);
    if (parameters)
      printParameters(func, os);
    if (collectives)
      printCollectives(func, os);
    os.flush();
  }

  void printParameters(func::FuncOp func, llvm::raw_ostream &os) {
    os << "parameters (sharding, whole shape, bytes on this rank):\n";
    MeshAttr mesh;
    for (auto meshOp : getOperation().getOps<MeshOp>())
      mesh = meshOp.getMesh();
    for (BlockArgument arg : func.getArguments()) {
      unsigned i = arg.getArgNumber();
      auto name = func.getArgAttrOfType<StringAttr>(i, "loom.param");
      auto type = dyn_cast<RankedTensorType>(arg.getType());
      if (!name || !type)
        continue;
      auto attr = func.getArgAttrOfType<ShardingAttr>(i, sharding::kShardingAttr);
      sharding::DimAxes axes =
          attr ? sharding::dimAxesOf(attr) : sharding::replicated(type);
      std::string split = "[";
      SmallVector<int64_t> whole(type.getShape());
      for (auto [d, dim] : llvm::enumerate(axes)) {
        split += (d ? ", " : "") + sharding::axesText(dim);
        if (mesh)
          whole[d] *= sharding::groupSize(mesh, dim);
      }
      split += "]";
      if (auto logical =
              func.getArgAttrOfType<DenseI64ArrayAttr>(i, "loom.logical_shape"))
        whole.assign(logical.asArrayRef().begin(), logical.asArrayRef().end());
      std::string shape;
      for (auto [d, size] : llvm::enumerate(whole))
        shape += (d ? "x" : "") + std::to_string(size);
      os << llvm::format("  %-36s %-14s %-12s %10lld", name.str().c_str(),
                         split.c_str(), shape.c_str(),
                         static_cast<long long>(detail::tensorBytes(type)));
      if (auto plan = func.getArgAttrOfType<StringAttr>(i, "loom.tp_plan"))
        os << "  " << plan.getValue();
      os << "\n";
    }
  }

  void printCollectives(func::FuncOp func, llvm::raw_ostream &os) {
    // (kind, axes, bytes each) -> count, in order of first appearance.
    SmallVector<std::pair<std::string, int64_t>> keys;
    llvm::StringMap<int64_t> counts;
    auto note = [&](StringRef kind, ArrayAttr axes, int64_t bytes) {
      std::string key = kind.str() + " {";
      for (auto [i, axis] : llvm::enumerate(axes))
        key += (i ? ", " : "") + cast<StringAttr>(axis).getValue().str();
      key += "}";
      std::string full = key + "|" + std::to_string(bytes);
      if (counts[full]++ == 0)
        keys.push_back({key, bytes});
    };
    func.walk([&](Operation *op) {
      if (auto c = dyn_cast<AllReduceOp>(op))
        note("all_reduce", c.getMeshAxes(), detail::tensorBytes(c.getType()));
      else if (auto c = dyn_cast<AllReduceStartOp>(op))
        note("all_reduce", c.getMeshAxes(),
             detail::tensorBytes(c.getInput().getType()));
      else if (auto c = dyn_cast<AllGatherOp>(op))
        note("all_gather", c.getMeshAxes(), detail::tensorBytes(c.getType()));
      else if (auto c = dyn_cast<ReduceScatterOp>(op))
        note("reduce_scatter", c.getMeshAxes(),
             detail::tensorBytes(c.getInput().getType()));
      else if (auto c = dyn_cast<AllToAllOp>(op))
        note("all_to_all", c.getMeshAxes(),
             detail::tensorBytes(c.getInput().getType()));
    });
    os << "collectives per call (kind, mesh axes: count x bytes each):\n";
    int64_t total = 0;
    for (auto &[key, bytes] : keys) {
      int64_t count = counts[key + "|" + std::to_string(bytes)];
      os << llvm::format("  %-28s %5lld x %12lld bytes\n", key.c_str(),
                         static_cast<long long>(count),
                         static_cast<long long>(bytes));
      total += count * bytes;
    }
    os << llvm::format("  %-28s %21lld bytes\n", "total",
                       static_cast<long long>(total));
  }
};

} // namespace
} // namespace mlir::loom
