//===- NarrowReductions.cpp - gradient reductions in bf16 or fp16 ---------===//
//
// Data parallelism sums every gradient over the ranks. Sent as bf16 (or
// fp16), those sums move half the bytes, at the cost of rounding each
// partial sum to the format, as mixed-precision training systems allow
// (PyTorch DDP's bf16 compression hook, DeepSpeed's communication_data_type).
// See the pass description in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialects/Loom/LoomOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::loom {
#define GEN_PASS_DEF_LOOMNARROWREDUCTIONSPASS
#include "passes/Transforms/Passes.h.inc"

namespace {

/// Whether `op` sums (or averages) over exactly the mesh axis `axis`.
bool reducesOver(ArrayAttr axes, ReductionKind kind, StringRef axis) {
  return (kind == ReductionKind::Sum || kind == ReductionKind::Avg) &&
         axes.size() == 1 && cast<StringAttr>(axes[0]).getValue() == axis;
}

struct LoomNarrowReductionsPass
    : impl::LoomNarrowReductionsPassBase<LoomNarrowReductionsPass> {
  using LoomNarrowReductionsPassBase::LoomNarrowReductionsPassBase;

  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    FloatType narrow = lowPrecisionType(ctx, dtype);
    if (!narrow) {
      emitError(UnknownLoc::get(ctx))
          << "loom-narrow-reductions: unknown dtype '" << dtype
          << "' (expected bf16 or fp16)";
      return signalPassFailure();
    }
    // The f32 tensors (not scalars: the loss and its statistics keep f32)
    // that a collective sums over the data axis.
    SmallVector<Operation *> targets;
    getOperation().walk([&](Operation *op) {
      auto type = op->getNumResults() == 1
                      ? dyn_cast<RankedTensorType>(op->getResult(0).getType())
                      : RankedTensorType();
      if (!type || !type.getElementType().isF32() || type.getRank() == 0)
        return;
      if (auto r = dyn_cast<AllReduceOp>(op)) {
        if (reducesOver(r.getMeshAxes(), r.getReduction(), axis))
          targets.push_back(op);
      } else if (auto s = dyn_cast<ReduceScatterOp>(op)) {
        if (reducesOver(s.getMeshAxes(), s.getReduction(), axis))
          targets.push_back(op);
      }
    });
    for (Operation *op : targets) {
      OpBuilder b(op);
      Location loc = op->getLoc();
      Value input = op->getOperand(0);
      auto inType = cast<RankedTensorType>(input.getType());
      op->setOperand(0, CastOp::create(b, loc, inType.clone(narrow), input));
      Value result = op->getResult(0);
      auto wide = cast<RankedTensorType>(result.getType());
      result.setType(wide.clone(narrow));
      b.setInsertionPointAfter(op);
      auto back = CastOp::create(b, loc, wide, result);
      result.replaceAllUsesExcept(back, back);
    }
  }
};

} // namespace
} // namespace mlir::loom
