//===- CpuCodegen.cpp - arithmetic rewrites for the CPU code generator ----===//
//
// Two rewrites that let LLVM's loop vectorizer handle what Loom's lowering
// produces: fast-math flags on reductions, and polynomial approximations of
// f32 transcendental functions in place of libm calls.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::loom {
#define GEN_PASS_DEF_LOOMREASSOCIATEREDUCTIONSPASS
#define GEN_PASS_DEF_LOOMAPPROXIMATEMATHPASS
#include "passes/Conversion/Passes.h.inc"
} // namespace mlir::loom

using namespace mlir;

namespace {

struct LoomReassociateReductionsPass
    : loom::impl::LoomReassociateReductionsPassBase<
          LoomReassociateReductionsPass> {
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    auto flags = arith::FastMathFlagsAttr::get(
        ctx, arith::FastMathFlags::reassoc | arith::FastMathFlags::contract);
    getOperation().walk([&](linalg::GenericOp generic) {
      if (generic.getNumReductionLoops() == 0)
        return;
      generic.getRegion().walk([&](arith::ArithFastMathInterface op) {
        Operation *raw = op.getOperation();
        if (!llvm::any_of(raw->getResultTypes(),
                          [](Type t) { return isa<FloatType>(t); }))
          return;
        arith::FastMathFlags old = op.getFastMathFlagsAttr()
                                       ? op.getFastMathFlagsAttr().getValue()
                                       : arith::FastMathFlags::none;
        raw->setAttr(
            op.getFastMathAttrName(),
            arith::FastMathFlagsAttr::get(ctx, old | flags.getValue()));
      });
    });
  }
};

struct LoomApproximateMathPass
    : loom::impl::LoomApproximateMathPassBase<LoomApproximateMathPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateMathPolynomialApproximationPatterns(patterns, [](StringRef name) {
      return llvm::is_contained(
          {math::ExpOp::getOperationName(), math::ExpM1Op::getOperationName(),
           math::LogOp::getOperationName(), math::Log1pOp::getOperationName(),
           math::Log2Op::getOperationName(), math::TanhOp::getOperationName(),
           math::ErfOp::getOperationName()},
          name);
    });
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
