//===- LoomCanonicalize.cpp - canonicalization patterns of loom ops -------===//
//
// Rewrites that fold chains of layout ops, which ONNX exporters produce in
// abundance (Flatten after Reshape, a transpose undone by the next one), and
// transposes of matrices into the products that read or produce them.
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

/// Whether `perm` swaps the last two dimensions and keeps the others.
static bool swapsLastTwo(ArrayRef<int64_t> perm) {
  int64_t rank = perm.size();
  if (rank < 2 || perm[rank - 2] != rank - 1 || perm[rank - 1] != rank - 2)
    return false;
  for (int64_t i = 0; i < rank - 2; ++i)
    if (perm[i] != i)
      return false;
  return true;
}

/// matmul(transpose(a), b) -> matmul(a, b) with `transpose_lhs` toggled, and
/// likewise for `rhs`, when the transpose swaps the matrix dimensions: the
/// product reads the operand transposed instead of a transposed copy
/// (`x @ W.T`, which exporters write as a Transpose of the weight).
struct FoldTransposeIntoMatmul : OpRewritePattern<MatmulOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MatmulOp op,
                                PatternRewriter &rewriter) const override {
    Value lhs = op.getLhs(), rhs = op.getRhs();
    bool transposeLhs = op.getTransposeLhs(),
         transposeRhs = op.getTransposeRhs();
    auto unwrap = [](Value &operand, bool &transposed) {
      auto transpose = operand.getDefiningOp<TransposeOp>();
      if (!transpose || !swapsLastTwo(transpose.getPerm()))
        return false;
      operand = transpose.getInput();
      transposed = !transposed;
      return true;
    };
    bool folded = unwrap(lhs, transposeLhs);
    folded |= unwrap(rhs, transposeRhs);
    if (!folded)
      return rewriter.notifyMatchFailure(op, "no transposed operand");
    rewriter.replaceOpWithNewOp<MatmulOp>(op, op.getType(), lhs, rhs,
                                          transposeLhs, transposeRhs);
    return success();
  }
};

/// transpose(matmul(a, b)) over the matrix dimensions -> matmul(b, a), as
/// (op(a) op(b))^T = op(b)^T op(a)^T: the gradient of a transposed weight
/// comes out in the weight's own layout. Only for a product used once, which
/// would otherwise be computed twice.
struct FoldTransposeOfMatmul : OpRewritePattern<TransposeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TransposeOp op,
                                PatternRewriter &rewriter) const override {
    auto product = op.getInput().getDefiningOp<MatmulOp>();
    if (!product || !product->hasOneUse() || !swapsLastTwo(op.getPerm()))
      return rewriter.notifyMatchFailure(op, "not a transposed product");
    rewriter.replaceOpWithNewOp<MatmulOp>(
        op, op.getType(), product.getRhs(), product.getLhs(),
        !product.getTransposeRhs(), !product.getTransposeLhs());
    return success();
  }
};

} // namespace

void MatmulOp::getCanonicalizationPatterns(RewritePatternSet &patterns,
                                           MLIRContext *context) {
  patterns.add<FoldTransposeIntoMatmul>(context);
}

void ReshapeOp::getCanonicalizationPatterns(RewritePatternSet &patterns,
                                            MLIRContext *context) {
  patterns.add<FoldReshapeChain>(context);
}

void TransposeOp::getCanonicalizationPatterns(RewritePatternSet &patterns,
                                              MLIRContext *context) {
  patterns.add<ComposeTransposes, FoldTransposeOfMatmul>(context);
}
