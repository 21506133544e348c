//===- PipelineStages.cpp - cut the forward graph into pipeline stages ----===//
//
// `loom-pipeline-stages`: gives every op of the forward function a
// `loom.stage` attribute, the pipeline stage that runs it, from ONNX node
// names (`cuts`) or by balancing the cost interface's FLOPs over the places
// where only a layer's output crosses (`stages` alone). See Passes.td.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/Transforms/Pipeline.h"

#include "dialects/Loom/LoomDialect.h"
#include "dialects/Loom/LoomOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Format.h"

#include <set>

namespace mlir::loom {
#define GEN_PASS_DEF_LOOMPIPELINESTAGESPASS
#include "passes/Transforms/Passes.h.inc"

namespace {

std::string nodeName(Operation *op) {
  StringRef name = onnxNodeOf(op->getLoc());
  return name.empty() ? op->getName().getStringRef().str() : name.str();
}

struct LoomPipelineStagesPass
    : impl::LoomPipelineStagesPassBase<LoomPipelineStagesPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    func::FuncOp forward;
    if (!entry.empty()) {
      forward = module.lookupSymbol<func::FuncOp>(entry);
      if (!forward) {
        module.emitError("no function @") << entry << " to cut into stages";
        return signalPassFailure();
      }
    } else {
      for (auto func : module.getOps<func::FuncOp>())
        if (func.isPublic() && !func.isExternal()) {
          if (forward) {
            module.emitError("the module has several public functions; name "
                             "the forward one with entry=NAME");
            return signalPassFailure();
          }
          forward = func;
        }
      if (!forward) {
        module.emitError("the module has no public function to cut into "
                         "pipeline stages");
        return signalPassFailure();
      }
    }
    if (stages < 1) {
      module.emitError("stages must be at least 1, got ") << (int64_t)stages;
      return signalPassFailure();
    }

    Block &body = forward.getBody().front();
    SmallVector<Operation *> ops;
    for (Operation &op : body.without_terminator())
      ops.push_back(&op);
    llvm::DenseMap<Operation *, size_t> position;
    for (auto [i, op] : llvm::enumerate(ops))
      position[op] = i;

    // Activations: values that depend on a batch input. Others (constants,
    // views of parameters) are recomputed wherever a stage needs them.
    llvm::DenseSet<Value> activations;
    for (BlockArgument arg : forward.getArguments())
      if (forward.getArgAttr(arg.getArgNumber(), "loom.input"))
        activations.insert(arg);
    for (Operation *op : ops)
      if (llvm::any_of(op->getOperands(),
                       [&](Value v) { return activations.contains(v); }))
        for (Value r : op->getResults())
          activations.insert(r);

    // Bytes of activations alive across each position (after op i, before
    // op i + 1) and FLOPs up to it.
    size_t n = ops.size();
    // How many activations cross each position, and their bytes.
    std::vector<int64_t> crossing(n, 0), crossingCount(n, 0),
        flopsBefore(n + 1, 0);
    for (auto [i, op] : llvm::enumerate(ops)) {
      int64_t flops = 0;
      if (auto cost = dyn_cast<CostOpInterface>(op))
        flops = cost.getFlops();
      flopsBefore[i + 1] = flopsBefore[i] + std::max<int64_t>(flops, 0);
      for (Value r : op->getResults()) {
        if (!activations.contains(r))
          continue;
        size_t last = i;
        for (Operation *user : r.getUsers()) {
          Operation *top = body.findAncestorOpInBlock(*user);
          if (top && position.count(top))
            last = std::max(last, position[top]);
          else
            last = n; // the terminator
        }
        for (size_t j = i; j < last && j < n; ++j) {
          crossing[j] += detail::tensorBytes(r.getType());
          ++crossingCount[j];
        }
      }
    }
    int64_t total = flopsBefore[n];

    SmallVector<size_t> cutAfter;
    if (!cuts.empty()) {
      if ((int64_t)cuts.size() != stages - 1) {
        module.emitError() << (int64_t)stages << " pipeline stages need "
                           << (int64_t)stages - 1 << " cuts, got " << cuts.size();
        return signalPassFailure();
      }
      llvm::StringMap<size_t> lastOf;
      for (auto [i, op] : llvm::enumerate(ops)) {
        StringRef name = onnxNodeOf(op->getLoc());
        if (!name.empty())
          lastOf[name] = i;
      }
      for (const std::string &cut : cuts) {
        auto it = lastOf.find(cut);
        if (it == lastOf.end()) {
          std::string examples;
          unsigned shown = 0;
          for (Operation *op : ops) {
            StringRef name = onnxNodeOf(op->getLoc());
            if (name.empty() || examples.find(("'" + name + "'").str()) !=
                                    std::string::npos)
              continue;
            examples += (shown ? ", '" : "'") + name.str() + "'";
            if (++shown == 4)
              break;
          }
          module.emitError() << "--pipeline-cuts names no ONNX node '" << cut
                             << "' of @" << forward.getSymName()
                             << " (its nodes are named like " << examples
                             << ")";
          return signalPassFailure();
        }
        if (!cutAfter.empty() && it->second <= cutAfter.back()) {
          module.emitError() << "--pipeline-cuts must follow the graph's "
                                "order: '"
                             << cut << "' does not come after the cut before it";
          return signalPassFailure();
        }
        if (it->second + 1 >= n || crossing[it->second] == 0) {
          ops[it->second]->emitError()
              << "cutting after ONNX node '" << cut
              << "' does not separate the graph: nothing computed from the "
                 "batch flows past it to a later stage";
          return signalPassFailure();
        }
        cutAfter.push_back(it->second);
      }
    } else if (stages > 1) {
      // Places between ONNX nodes where the fewest activations cross
      // (between layers, only the layer's output), each cut at the one
      // nearest its share of the FLOPs.
      auto between = [&](size_t i) {
        return onnxNodeOf(ops[i]->getLoc()) != onnxNodeOf(ops[i + 1]->getLoc());
      };
      int64_t least = -1;
      for (size_t i = 0; i + 1 < n; ++i)
        if (crossingCount[i] > 0 && between(i) && flopsBefore[i + 1] > 0 &&
            flopsBefore[i + 1] < total)
          least = least < 0 ? crossingCount[i]
                            : std::min(least, crossingCount[i]);
      // A run of places next to each other (after a product and after its
      // activation) counts once, at its end.
      SmallVector<size_t> candidates;
      for (size_t i = 0; i + 1 < n; ++i) {
        if (crossingCount[i] != least || !between(i) ||
            flopsBefore[i + 1] == 0 || flopsBefore[i + 1] >= total)
          continue;
        // Op i lies between the two places: merge them when it is
        // elementwise (about one FLOP per element of its result).
        int64_t elements = 0;
        for (Value r : ops[i]->getResults())
          if (auto type = dyn_cast<RankedTensorType>(r.getType()))
            if (type.hasStaticShape())
              elements += type.getNumElements();
        bool cheap =
            flopsBefore[i + 1] - flopsBefore[i] <= 4 * std::max<int64_t>(elements, 1);
        if (!candidates.empty() && candidates.back() + 1 == i && cheap)
          candidates.back() = i;
        else
          candidates.push_back(i);
      }
      if (least < 0 || (int64_t)candidates.size() < stages - 1) {
        module.emitError()
            << "cannot cut @" << forward.getSymName() << " into "
            << (int64_t)stages
            << " pipeline stages: it has " << candidates.size()
            << " places between layers (where only a layer's output crosses), "
               "fewer than the "
            << (int64_t)stages - 1
            << " cuts needed; use fewer stages or name the cuts with "
               "--pipeline-cuts";
        return signalPassFailure();
      }
      size_t from = 0;
      for (int64_t k = 1; k < stages; ++k) {
        double target = (double)total * k / stages;
        // Leave enough candidates for the cuts after this one.
        size_t last = candidates.size() - (stages - 1 - k);
        size_t best = from;
        for (size_t c = from; c < last; ++c)
          if (std::abs(flopsBefore[candidates[c] + 1] - target) <
              std::abs(flopsBefore[candidates[best] + 1] - target))
            best = c;
        cutAfter.push_back(candidates[best]);
        from = best + 1;
      }
    }

    // Tag the ops.
    Builder b(&getContext());
    SmallVector<int64_t> flops(stages, 0);
    SmallVector<std::string> first(stages), last(stages);
    for (auto [i, op] : llvm::enumerate(ops)) {
      int64_t stage =
          llvm::count_if(cutAfter, [&](size_t c) { return c < i; });
      op->setAttr(kStageAttr, b.getI64IntegerAttr(stage));
      flops[stage] += flopsBefore[i + 1] - flopsBefore[i];
      if (first[stage].empty())
        first[stage] = nodeName(op);
      last[stage] = nodeName(op);
    }

    // Ops that do not depend on the batch (views and casts of parameters,
    // such as loom-autocast's low-precision weights, which sit at the top of
    // the function) run in the stage that reads them, so that their
    // gradients (a weight's cast back to fp32) stay in that stage too.
    for (Operation *op : llvm::reverse(ops)) {
      if (op->getNumResults() == 0 ||
          llvm::any_of(op->getResults(),
                       [&](Value r) { return activations.contains(r); }))
        continue;
      std::optional<int64_t> reader;
      for (Value r : op->getResults())
        for (Operation *user : r.getUsers())
          if (auto stage = user->getAttrOfType<IntegerAttr>(kStageAttr))
            reader = std::min(reader.value_or(stage.getInt()), stage.getInt());
      if (reader)
        op->setAttr(kStageAttr, b.getI64IntegerAttr(*reader));
    }

    // Every stage holds parameters, and each parameter lies in one stage.
    SmallVector<int64_t> paramBytes(stages, 0);
    for (BlockArgument arg : forward.getArguments()) {
      auto name = forward.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                                       "loom.param");
      if (!name)
        continue;
      // A parameter belongs to the stages of the ops that read it (through
      // views: ops that do not depend on the batch).
      std::set<int64_t> users = stagesReading(
          arg,
          [&](Operation *user) -> std::optional<int64_t> {
            if (auto stage = user->getAttrOfType<IntegerAttr>(kStageAttr))
              return stage.getInt();
            return std::nullopt;
          },
          [&](Operation *user) {
            return user->hasAttr(kStageAttr) &&
                   llvm::none_of(user->getResults(), [&](Value r) {
                     return activations.contains(r);
                   });
          });
      // Read by several stages: a buffer every stage holds a copy of (a
      // trainable one is refused once gradients exist, by loom-pipeline).
      if (users.size() > 1)
        continue;
      if (!users.empty())
        paramBytes[*users.begin()] += detail::tensorBytes(arg.getType());
    }
    for (int64_t s = 0; s < stages; ++s)
      if (paramBytes[s] == 0) {
        module.emitError() << "pipeline stage " << s << " (ONNX nodes '"
                           << first[s] << "' to '" << last[s]
                           << "') has no parameters to train; move the cut";
        return signalPassFailure();
      }

    if (report) {
      llvm::raw_ostream &os = llvm::outs();
      os << "pipeline stages of @" << forward.getSymName() << ":\n";
      for (int64_t s = 0; s < stages; ++s)
        os << llvm::format("  stage %lld: %12lld parameter bytes, %5.1f%% of "
                           "the forward FLOPs, nodes '%s' .. '%s'\n",
                           (long long)s, (long long)paramBytes[s],
                           total ? 100.0 * flops[s] / total : 0.0,
                           first[s].c_str(), last[s].c_str());
      os.flush();
    }
  }
};

} // namespace
} // namespace mlir::loom
