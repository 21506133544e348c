//===- Differentiate.cpp - gradient functions for gradient checks ---------===//
//
// `loom-differentiate`: next to each public function with one scalar
// floating-point result, adds `<name>_grad` returning the gradient with
// respect to each floating-point argument.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/Transforms/Autodiff.h"

#include "dialects/Loom/LoomOps.h"
#include "dialects/Loom/MoeExpansion.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/RegionUtils.h"

namespace mlir::loom {
#define GEN_PASS_DEF_LOOMDIFFERENTIATEPASS
#include "passes/Transforms/Passes.h.inc"

namespace {

struct LoomDifferentiatePass
    : impl::LoomDifferentiatePassBase<LoomDifferentiatePass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<func::FuncOp> functions;
    for (auto func : module.getOps<func::FuncOp>())
      if (func.isPublic() && !func.isExternal() &&
          func.getNumResults() == 1 &&
          isa<FloatType>(getElementTypeOrSelf(func.getResultTypes()[0])))
        functions.push_back(func);

    for (func::FuncOp func : functions) {
      OpBuilder builder(module.getContext());
      builder.setInsertionPointAfter(func);
      auto gradFunc = cast<func::FuncOp>(builder.clone(*func));
      gradFunc.setSymName((func.getSymName() + "_grad").str());
      auto ret = cast<func::ReturnOp>(gradFunc.getBody().front().back());
      // The function's value is its result: mixture-of-experts layers'
      // auxiliary losses are not part of it.
      expandMoeLayers(gradFunc);
      SmallVector<Value> wrt;
      for (BlockArgument arg : gradFunc.getArguments())
        if (isa<FloatType>(getElementTypeOrSelf(arg.getType())))
          wrt.push_back(arg);
      builder.setInsertionPoint(ret);
      FailureOr<SmallVector<Value>> grads =
          buildGradients(builder, ret.getOperand(0), wrt);
      if (failed(grads))
        return signalPassFailure();
      SmallVector<Value> results;
      for (auto [arg, g] : llvm::zip(wrt, *grads)) {
        if (!g)
          g = ConstantOp::create(builder, ret.getLoc(),
                                 cast<RankedTensorType>(arg.getType()), 0.0);
        results.push_back(g);
      }
      func::ReturnOp::create(builder, ret.getLoc(), results);
      ret.erase();
      gradFunc.setFunctionType(builder.getFunctionType(
          gradFunc.getArgumentTypes(), ValueRange(results).getTypes()));
      gradFunc.removeResAttrsAttr();
      IRRewriter rewriter(builder);
      (void)runRegionDCE(rewriter, gradFunc.getBody());
    }
  }
};

} // namespace
} // namespace mlir::loom
