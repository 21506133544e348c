//===- MoeRouting.cpp - routing of mixture-of-experts layers --------------===//
//
// Sets the routing attributes of every loom.moe from the compiler's flags
// (the layer's expansion, MoeExpansion.h, implements them) and reports the
// layers. See Passes.td for the semantics.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialects/Loom/LoomDialect.h"
#include "dialects/Loom/LoomOps.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>

namespace mlir::loom {
#define GEN_PASS_DEF_LOOMMOEROUTINGPASS
#include "passes/Transforms/Passes.h.inc"

namespace {

std::optional<MoeRouting> parseRouting(StringRef name) {
  if (name == "token-choice")
    return MoeRouting::TokenChoice;
  if (name == "expert-choice")
    return MoeRouting::ExpertChoice;
  if (name == "model")
    return MoeRouting::TopK;
  return std::nullopt;
}

std::string layerName(MoeOp op) {
  StringRef node = onnxNodeOf(op.getLoc());
  return node.empty() ? std::string("loom.moe") : ("'" + node + "'").str();
}

struct LoomMoeRoutingPass
    : impl::LoomMoeRoutingPassBase<LoomMoeRoutingPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::optional<MoeRouting> chosen = parseRouting(routing);
    if (!chosen) {
      module.emitError("unknown MoE routing '")
          << routing << "' (expected model, token-choice or expert-choice)";
      return signalPassFailure();
    }
    SmallVector<MoeOp> layers;
    module.walk([&](MoeOp op) { layers.push_back(op); });
    bool flagged = routing != "model" || capacityFactor != 0 || auxLoss != 0 ||
                   zLoss != 0 || groups != 1;
    if (layers.empty()) {
      if (flagged) {
        module.emitError("MoE routing options were given but the model has "
                         "no mixture-of-experts layer (loom.moe)");
        return signalPassFailure();
      }
      return;
    }
    if (capacityFactor < 0 || (capacityFactor > 0 && routing == "model")) {
      module.emitError(capacityFactor < 0
                           ? "the capacity factor must be positive"
                           : "a capacity factor needs "
                             "--moe-routing=token-choice or expert-choice "
                             "(the model's own routing drops no token)");
      return signalPassFailure();
    }
    if (groups < 1 || (groups > 1 && routing == "model")) {
      module.emitError(groups < 1
                           ? "the number of routing groups must be positive"
                           : "routing groups need --moe-routing=token-choice "
                             "or expert-choice (the model's own routing "
                             "drops no token)");
      return signalPassFailure();
    }
    if (auxLoss < 0 || zLoss < 0) {
      module.emitError("MoE loss coefficients must be non-negative");
      return signalPassFailure();
    }

    Builder b(module.getContext());
    for (MoeOp op : layers) {
      if (*chosen != MoeRouting::TopK) {
        double factor = capacityFactor != 0 ? capacityFactor
                        : *chosen == MoeRouting::ExpertChoice ? 2.0
                                                               : 1.25;
        op.setRouting(*chosen);
        op.setCapacityFactorAttr(b.getF64FloatAttr(factor));
        op.setGroups(groups);
      }
      if (auxLoss != 0)
        op.setAuxLossAttr(b.getF64FloatAttr(auxLoss));
      if (zLoss != 0)
        op.setZLossAttr(b.getF64FloatAttr(zLoss));
      if (failed(op.verify()))
        return signalPassFailure();
      if (expertParallel > 1) {
        Value fc1 = op.getFc1Weight();
        while (auto cast = fc1.getDefiningOp<CastOp>())
          fc1 = cast.getInput();
        if (!isa<BlockArgument>(fc1)) {
          op.emitError("expert parallelism splits stacked expert weights (one "
                       "[experts, ...] parameter per kind, as "
                       "com.microsoft.MoE has them); this layer's experts "
                       "have parameters of their own (a dense export raised "
                       "to loom.moe)");
          return signalPassFailure();
        }
      }
      if (expertParallel > 1 && op.getNumExperts() % expertParallel != 0) {
        op.emitError() << "the mixture-of-experts layer has "
                       << op.getNumExperts()
                       << " experts, which expert parallelism cannot split "
                          "evenly over "
                       << (int64_t)expertParallel << " ranks";
        return signalPassFailure();
      }
    }

    if (!report)
      return;
    llvm::outs() << "mixture of experts: " << layers.size() << " layer"
                 << (layers.size() == 1 ? "" : "s") << "\n";
    for (MoeOp op : layers) {
      int64_t e = op.getNumExperts(), n = op.getNumTokens();
      int64_t params = detail::tensorBytes(op.getFc1Weight().getType()) +
                       detail::tensorBytes(op.getFc2Weight().getType());
      for (Value v : {op.getFc1Bias(), op.getFc2Bias(), op.getFc3Weight(),
                      op.getFc3Bias()})
        if (v)
          params += detail::tensorBytes(v.getType());
      llvm::outs() << "  " << layerName(op) << ": " << e << " experts, "
                   << stringifyMoeActivation(op.getActivation())
                   << (op.getFc3Weight() ? " gated" : "") << ", " << n
                   << " tokens, routing " << stringifyMoeRouting(op.getRouting());
      if (op.getRouting() == MoeRouting::TopK)
        llvm::outs() << " (k = " << op.getK() << ", no token dropped)";
      else
        llvm::outs() << llvm::format(" (capacity factor %g: %lld slots per "
                                     "expert",
                                     op.getCapacityFactorValue(),
                                     (long long)op.getCapacity())
                     << (op.getGroups() > 1
                             ? " in each of " + std::to_string(op.getGroups()) +
                                   " groups"
                             : std::string())
                     << (op.getRouting() == MoeRouting::TokenChoice
                             ? ", k = " + std::to_string(op.getK())
                             : std::string())
                     << ")";
      if (op.getAuxLossValue() > 0)
        llvm::outs() << llvm::format(", load-balancing loss %g",
                                     op.getAuxLossValue());
      if (op.getZLossValue() > 0)
        llvm::outs() << llvm::format(", z-loss %g",
                                     op.getZLossValue());
      llvm::outs() << ", " << params / e << " parameter bytes per expert\n";
      if (expertParallel > 1) {
        int64_t local = e / expertParallel;
        llvm::outs() << "    expert parallelism over "
                     << (int64_t)expertParallel
                     << " ranks, " << local << " expert"
                     << (local == 1 ? "" : "s") << " each:";
        for (int64_t r = 0; r < expertParallel; ++r) {
          llvm::outs() << (r ? ", " : " ") << "rank " << r << " holds ";
          if (local == 1)
            llvm::outs() << "expert " << r;
          else
            llvm::outs() << "experts " << r * local << "-"
                         << (r + 1) * local - 1;
        }
        llvm::outs() << "\n";
      }
    }
  }
};

} // namespace
} // namespace mlir::loom
