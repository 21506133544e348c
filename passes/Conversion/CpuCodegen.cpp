//===- CpuCodegen.cpp - arithmetic rewrites for the CPU code generator ----===//
//
// Rewrites that let LLVM's loop vectorizer handle what Loom's lowering
// produces: fast-math flags on maxima, minima and products (not on sums,
// whose order must not depend on what fusion put around them), sums,
// maxima and minima split into lanes, polynomial approximations of f32
// transcendental functions in place of libm calls, and booleans loaded and
// stored as bytes.
//
//===----------------------------------------------------------------------===//

#include "LoomToLinalg.h"

#include "passes/Passes.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/AsmParser/AsmParser.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <cmath>

namespace mlir::loom {
#define GEN_PASS_DEF_LOOMREASSOCIATEREDUCTIONSPASS
#define GEN_PASS_DEF_LOOMAPPROXIMATEMATHPASS
#define GEN_PASS_DEF_LOOMBYTEBOOLEANSPASS
#define GEN_PASS_DEF_LOOMVECTORIZEINNERLOOPSPASS
#define GEN_PASS_DEF_LOOMATTACHLOOPANNOTATIONSPASS
#define GEN_PASS_DEF_LOOMSPLITLANEREDUCTIONSPASS
#include "passes/Conversion/Passes.h.inc"
} // namespace mlir::loom

using namespace mlir;

namespace {

/// Adds `flags` to the fast-math flags of `op` when it yields a float.
static void addFastMath(Operation *op, arith::FastMathFlags flags) {
  auto fm = dyn_cast<arith::ArithFastMathInterface>(op);
  if (!fm || !llvm::any_of(op->getResultTypes(),
                           [](Type t) { return isa<FloatType>(t); }))
    return;
  arith::FastMathFlags old = fm.getFastMathFlagsAttr()
                                 ? fm.getFastMathFlagsAttr().getValue()
                                 : arith::FastMathFlags::none;
  op->setAttr(fm.getFastMathAttrName(),
              arith::FastMathFlagsAttr::get(op->getContext(), old | flags));
}

struct LoomReassociateReductionsPass
    : loom::impl::LoomReassociateReductionsPassBase<
          LoomReassociateReductionsPass> {
  void runOnOperation() override {
    auto flags = arith::FastMathFlags::reassoc | arith::FastMathFlags::contract;
    getOperation().walk([&](linalg::GenericOp generic) {
      if (generic.getNumReductionLoops() == 0)
        return;
      // Only the accumulation chain of each result: the ops that combine an
      // element with the accumulator and the products that feed only them
      // (so a multiply-add may become an FMA). Elementwise producers fused
      // into the body keep strict arithmetic: the same value computed again
      // elsewhere (a max pool's input, compared with its result in the
      // gradient) must come out bit for bit the same.
      // Sums keep their order: a reassociated sum is vectorized as LLVM's
      // cost model picks (vector width, interleaving) for the loop around
      // it, so the same sum fused with different producers (a layer's
      // forward and its recomputation in the backward pass) rounded
      // differently. loom-split-lane-reductions gives the sums that
      // vectorize well lanes of their own, in a fixed order.
      for (unsigned r = 0; r < generic.getNumDpsInits(); ++r) {
        SmallVector<Operation *, 4> combiners;
        if (!matchReduction(generic.getRegionOutputArgs(), r, combiners))
          continue;
        for (Operation *combiner : combiners) {
          if (isa<arith::AddFOp>(combiner))
            continue;
          addFastMath(combiner, flags);
          for (Value operand : combiner->getOperands()) {
            Operation *producer = operand.getDefiningOp();
            if (producer && isa<arith::MulFOp>(producer) &&
                llvm::all_of(producer->getUsers(), [&](Operation *user) {
                  return llvm::is_contained(combiners, user);
                }))
              addFastMath(producer, flags);
          }
        }
      }
    });
  }
};

/// Lanes a split reduction keeps apart: one AVX-512 vector of f32.
constexpr int64_t kLanes = 16;

/// The op that combines the accumulator of a one-result reduction with the
/// new element, when it is an f32 sum, or a maximum or minimum that
/// propagates NaN.
static Operation *laneCombiner(linalg::GenericOp op) {
  SmallVector<Operation *, 4> combiners;
  if (op.getNumDpsInits() != 1 || !matchReduction(op.getRegionOutputArgs(), 0,
                                                  combiners) ||
      combiners.size() != 1)
    return nullptr;
  Operation *combiner = combiners.front();
  if (!isa<arith::AddFOp, arith::MaximumFOp, arith::MinimumFOp>(combiner) ||
      !combiner->getResult(0).getType().isF32())
    return nullptr;
  return combiner;
}

/// Whether every input that reads along the innermost loop indexes its own
/// innermost (contiguous) dimension with it, and no other: splitting the
/// loop then splits that dimension into lanes that are adjacent in memory.
static bool readsLoopContiguously(linalg::GenericOp op, unsigned loop) {
  return llvm::all_of(op.getDpsInputOperands(), [&](OpOperand *input) {
    ArrayRef<AffineExpr> results =
        op.getMatchingIndexingMap(input).getResults();
    for (auto [position, expr] : llvm::enumerate(results)) {
      if (!expr.isFunctionOfDim(loop))
        continue;
      auto dim = dyn_cast<AffineDimExpr>(expr);
      if (!dim || position + 1 != results.size())
        return false;
    }
    return true;
  });
}

/// Splits the innermost reduction loop `k` (of size n, a multiple of kLanes)
/// of `op` into `k0` (reduction, n / kLanes) and `lane` (parallel, kLanes)
/// with k = k0 * kLanes + lane: the innermost dimension of each input that
/// k indexes is expanded into [n / kLanes, kLanes], `op` computes kLanes
/// partial results per output element into a new innermost dimension, and a
/// second op combines them with the original init.
static void splitIntoLanes(IRRewriter &rewriter, linalg::GenericOp op,
                           Operation *combiner) {
  Location loc = op.getLoc();
  MLIRContext *ctx = op.getContext();
  unsigned loops = op.getNumLoops(), k = loops - 1;
  SmallVector<Value> inputs;
  SmallVector<AffineMap> maps;
  for (OpOperand *input : op.getDpsInputOperands()) {
    AffineMap map = op.getMatchingIndexingMap(input);
    SmallVector<AffineExpr> exprs;
    SmallVector<int64_t> shape;
    SmallVector<ReassociationIndices> groups;
    auto type = dyn_cast<RankedTensorType>(input->get().getType());
    for (auto [position, expr] : llvm::enumerate(map.getResults())) {
      groups.push_back({int64_t(shape.size())});
      auto dim = dyn_cast<AffineDimExpr>(expr);
      if (dim && dim.getPosition() == k) {
        exprs.append({getAffineDimExpr(k, ctx), getAffineDimExpr(k + 1, ctx)});
        shape.append({type.getDimSize(position) / kLanes, kLanes});
        groups.back().push_back(int64_t(shape.size()) - 1);
        continue;
      }
      exprs.push_back(expr);
      shape.push_back(type.getDimSize(position));
    }
    Value value = input->get();
    if (type && shape.size() != size_t(type.getRank()))
      value = tensor::ExpandShapeOp::create(
          rewriter, loc, RankedTensorType::get(shape, type.getElementType()),
          value, groups);
    inputs.push_back(value);
    maps.push_back(AffineMap::get(loops + 1, 0, exprs, ctx));
  }
  OpOperand *init = op.getDpsInitOperand(0);
  AffineMap outMap = op.getMatchingIndexingMap(init);
  SmallVector<AffineExpr> outExprs(outMap.getResults());
  outExprs.push_back(getAffineDimExpr(k + 1, ctx));
  maps.push_back(AffineMap::get(loops + 1, 0, outExprs, ctx));

  // Partial results start from the combiner's identity.
  auto initType = cast<RankedTensorType>(init->get().getType());
  SmallVector<int64_t> partialShape(initType.getShape());
  partialShape.push_back(kLanes);
  auto partialType = RankedTensorType::get(partialShape, rewriter.getF32Type());
  bool isSum = isa<arith::AddFOp>(combiner);
  bool isMax = isa<arith::MaximumFOp>(combiner);
  Value partialInit = loom::lowering::filledTensor(
      rewriter, loc, partialType,
      rewriter.getF32FloatAttr(isSum   ? 0.0f
                               : isMax ? -INFINITY
                                       : INFINITY));

  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  iterators.push_back(utils::IteratorType::parallel);
  auto split = linalg::GenericOp::create(rewriter, loc, TypeRange{partialType},
                                         inputs, ValueRange{partialInit}, maps,
                                         iterators);
  rewriter.cloneRegionBefore(op.getRegion(), split.getRegion(),
                             split.getRegion().begin());

  // The lanes meet the original init: out = combine(init, partial[..., lane]).
  SmallVector<AffineExpr> outDims;
  for (unsigned d = 0; d < initType.getRank(); ++d)
    outDims.push_back(getAffineDimExpr(d, ctx));
  unsigned outLoops = initType.getRank() + 1;
  AffineMap identityOut = AffineMap::get(outLoops, 0, outDims, ctx);
  outDims.push_back(getAffineDimExpr(initType.getRank(), ctx));
  AffineMap partialMap = AffineMap::get(outLoops, 0, outDims, ctx);
  SmallVector<utils::IteratorType> combineIterators(
      initType.getRank(), utils::IteratorType::parallel);
  combineIterators.push_back(utils::IteratorType::reduction);
  auto combine = linalg::GenericOp::create(
      rewriter, loc, TypeRange{initType}, split.getResult(0), init->get(),
      ArrayRef<AffineMap>{partialMap, identityOut}, combineIterators,
      [&](OpBuilder &b, Location l, ValueRange args) {
        Value result =
            isSum   ? (Value)arith::AddFOp::create(b, l, args[1], args[0])
            : isMax ? (Value)arith::MaximumFOp::create(b, l, args[1], args[0])
                    : (Value)arith::MinimumFOp::create(b, l, args[1], args[0]);
        linalg::YieldOp::create(b, l, result);
      });
  rewriter.replaceOp(op, combine.getResults());
}

struct LoomSplitLaneReductionsPass
    : loom::impl::LoomSplitLaneReductionsPassBase<
          LoomSplitLaneReductionsPass> {
  void runOnOperation() override {
    SmallVector<std::pair<linalg::GenericOp, Operation *>> candidates;
    getOperation().walk([&](linalg::GenericOp op) {
      SmallVector<unsigned> reductions;
      op.getReductionDims(reductions);
      SmallVector<int64_t> ranges = op.getStaticLoopRanges();
      unsigned last = ranges.size() - 1;
      // One reduction, the innermost loop, of a static multiple of the lanes
      // (at least two vectors), over tensors, that the output does not index
      // and the body does not ask the index of.
      if (!op.hasPureTensorSemantics() || op.getNumDpsInits() != 1 ||
          reductions.size() != 1 ||
          reductions.front() != last || ShapedType::isDynamic(ranges.back()) ||
          ranges.back() % kLanes != 0 || ranges.back() < 2 * kLanes ||
          op.getMatchingIndexingMap(op.getDpsInitOperand(0))
              .isFunctionOfDim(last) ||
          !readsLoopContiguously(op, last) ||
          llvm::any_of(op.getBody()->getOps<linalg::IndexOp>(),
                       [&](linalg::IndexOp index) {
                         return index.getDim() == last;
                       }))
        return;
      if (Operation *combiner = laneCombiner(op))
        candidates.push_back({op, combiner});
    });
    IRRewriter rewriter(&getContext());
    for (auto [op, combiner] : candidates) {
      rewriter.setInsertionPoint(op);
      splitIntoLanes(rewriter, op, combiner);
    }
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

struct LoomByteBooleansPass
    : loom::impl::LoomByteBooleansPassBase<LoomByteBooleansPass> {
  void runOnOperation() override {
    OpBuilder builder(&getContext());
    Type byte = builder.getI8Type();
    auto isBool = [](Type type) { return type.isInteger(1); };
    // The ops keep their attributes (alignment, aliasing, volatility): only
    // the loaded or stored type changes.
    getOperation().walk([&](LLVM::LoadOp load) {
      if (!isBool(load.getType()))
        return;
      load.getResult().setType(byte);
      builder.setInsertionPointAfter(load);
      auto low = LLVM::TruncOp::create(builder, load.getLoc(),
                                       builder.getI1Type(), load.getResult());
      load.getResult().replaceAllUsesExcept(low, low);
    });
    getOperation().walk([&](LLVM::StoreOp store) {
      if (!isBool(store.getValue().getType()))
        return;
      builder.setInsertionPoint(store);
      auto wide =
          LLVM::ZExtOp::create(builder, store.getLoc(), byte, store.getValue());
      store.getValueMutable().assign(wide);
    });
  }
};

/// Whether every memory access of `loop`'s body walks a unit-stride
/// innermost dimension with the induction variable (as its last index, and
/// nowhere else), and the loop carries no value: a loop whose iterations are
/// independent and whose vector form reads and writes whole vectors.
static bool isUnitStrideLoop(scf::ForOp loop) {
  if (loop.getNumRegionIterArgs() != 0)
    return false;
  Value iv = loop.getInductionVar();
  bool ok = true, touches = false;
  auto check = [&](MemRefType type, ValueRange indices) {
    if (indices.empty() || indices.back() != iv ||
        llvm::is_contained(indices.drop_back(), iv)) {
      ok = false;
      return;
    }
    int64_t offset;
    SmallVector<int64_t> strides;
    if (failed(type.getStridesAndOffset(strides, offset)) ||
        strides.back() != 1)
      ok = false;
    touches = true;
  };
  loop.getBody()->walk([&](Operation *op) {
    if (isa<LoopLikeOpInterface>(op) || isa<func::CallOp>(op))
      ok = false;
    else if (auto load = dyn_cast<memref::LoadOp>(op))
      check(load.getMemRefType(), load.getIndices());
    else if (auto store = dyn_cast<memref::StoreOp>(op))
      check(store.getMemRefType(), store.getIndices());
  });
  return ok && touches;
}

struct LoomVectorizeInnerLoopsPass
    : loom::impl::LoomVectorizeInnerLoopsPassBase<LoomVectorizeInnerLoopsPass> {
  void runOnOperation() override {
    // Not unrolled first: LLVM's full unroller runs before the vectorizer
    // and would turn a 32-iteration loop into 32 scalar copies.
    Attribute vectorize = parseAttribute("#llvm.loop_annotation<vectorize = "
                                         "<disable = false>, unroll = "
                                         "<disable = true>>",
                                         &getContext());
    getOperation().walk([&](scf::ForOp loop) {
      std::optional<APInt> trips = loop.getStaticTripCount();
      if (trips && trips->getSExtValue() >= 16 && isUnitStrideLoop(loop))
        loop->setAttr("llvm.loop_annotation", vectorize);
    });
  }
};

struct LoomAttachLoopAnnotationsPass
    : loom::impl::LoomAttachLoopAnnotationsPassBase<
          LoomAttachLoopAnnotationsPass> {
  void runOnOperation() override {
    getOperation().walk([&](LLVM::BrOp br) {
      auto annotation =
          br->getAttrOfType<LLVM::LoopAnnotationAttr>("llvm.loop_annotation");
      if (!annotation)
        return;
      br->removeAttr("llvm.loop_annotation");
      br.setLoopAnnotationAttr(annotation);
    });
  }
};

} // namespace
