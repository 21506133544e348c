//===- LoomCanonicalize.cpp - canonicalization patterns of loom ops -------===//
//
// Rewrites that fold chains of layout ops, which ONNX exporters produce in
// abundance (Flatten after Reshape, a transpose undone by the next one).
//
//===----------------------------------------------------------------------===//

#include "dialects/Loom/LoomOps.h"

#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace mlir::loom;

namespace {

/// reshape(reshape(x)) -> reshape(x): only the final shape matters.
struct FoldReshapeChain : OpRewritePattern<ReshapeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ReshapeOp op,
                                PatternRewriter &rewriter) const override {
    auto producer = op.getInput().getDefiningOp<ReshapeOp>();
    if (!producer)
      return rewriter.notifyMatchFailure(op, "input is not a reshape");
    rewriter.replaceOpWithNewOp<ReshapeOp>(op, op.getType(),
                                           producer.getInput());
    return success();
  }
};

/// transpose(transpose(x, p), q) -> transpose(x, p∘q), which the folder then
/// removes when it is the identity.
struct ComposeTransposes : OpRewritePattern<TransposeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TransposeOp op,
                                PatternRewriter &rewriter) const override {
    auto producer = op.getInput().getDefiningOp<TransposeOp>();
    if (!producer)
      return rewriter.notifyMatchFailure(op, "input is not a transpose");
    SmallVector<int64_t> perm;
    for (int64_t p : op.getPerm())
      perm.push_back(producer.getPerm()[p]);
    rewriter.replaceOpWithNewOp<TransposeOp>(op, producer.getInput(), perm);
    return success();
  }
};

} // namespace

void ReshapeOp::getCanonicalizationPatterns(RewritePatternSet &patterns,
                                            MLIRContext *context) {
  patterns.add<FoldReshapeChain>(context);
}

void TransposeOp::getCanonicalizationPatterns(RewritePatternSet &patterns,
                                              MLIRContext *context) {
  patterns.add<ComposeTransposes>(context);
}
