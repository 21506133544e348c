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
                   zLoss != 0;
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
      }
      if (auxLoss != 0)
        op.setAuxLossAttr(b.getF64FloatAttr(auxLoss));
      if (zLoss != 0)
        op.setZLossAttr(b.getF64FloatAttr(zLoss));
      if (failed(op.verify()))
        return signalPassFailure();
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
    }
  }
};

} // namespace
} // namespace mlir::loom
