//===- SplitFusedProjections.cpp - one product per part of a projection ---===//
//
// A fused projection (a transformer's query/key/value layer) computes k
// tensors with one product and splits the result. Tensor parallelism splits
// each of them by heads, which interleaves the weight's rows; viewing the
// weight [k*C, K] as [k, C, K] makes each rank's part a block again. See
// the pass description in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialects/Loom/LoomOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"

namespace mlir::loom {
#define GEN_PASS_DEF_LOOMSPLITFUSEDPROJECTIONSPASS
#include "passes/Transforms/Passes.h.inc"

namespace {

/// A parameter argument of `func` used by nothing but `user`.
BlockArgument soleParam(func::FuncOp func, Value v, Operation *user) {
  auto arg = dyn_cast<BlockArgument>(v);
  if (!arg || arg.getOwner() != &func.getBody().front() ||
      !func.getArgAttr(arg.getArgNumber(), "loom.param") ||
      !arg.hasOneUse() || *arg.getUsers().begin() != user)
    return {};
  return arg;
}

/// Gives parameter `arg` the type `view` (the same row-major data): its
/// initial value is reinterpreted and its ONNX shape kept as
/// `loom.logical_shape`.
LogicalResult viewParam(func::FuncOp func, BlockArgument arg,
                        RankedTensorType view) {
  unsigned i = arg.getArgNumber();
  auto type = cast<RankedTensorType>(arg.getType());
  Attribute init = func.getArgAttr(i, "loom.init");
  Attribute reshaped;
  if (auto resource = dyn_cast_or_null<DenseResourceElementsAttr>(init))
    reshaped = DenseResourceElementsAttr::get(view, resource.getRawHandle());
  else if (auto dense = dyn_cast_or_null<DenseElementsAttr>(init))
    reshaped = dense.reshape(view);
  else
    return failure();
  func.setArgAttr(i, "loom.init", reshaped);
  if (!func.getArgAttr(i, "loom.logical_shape"))
    func.setArgAttr(i, "loom.logical_shape",
                    DenseI64ArrayAttr::get(func.getContext(), type.getShape()));
  arg.setType(view);
  return success();
}

/// Rewrites `split(add?(matmul(x, W)))` when it is a fused projection.
LogicalResult splitProjection(func::FuncOp func, SplitOp split) {
  auto resultType = cast<RankedTensorType>(split.getInput().getType());
  int64_t axis = split.getAxis(), rank = resultType.getRank();
  int64_t parts = split.getNumResults();
  if (axis != rank - 1 || parts < 2)
    return failure();
  int64_t part = cast<RankedTensorType>(split.getResult(0).getType())
                     .getDimSize(axis);
  for (Value r : split.getResults())
    if (cast<RankedTensorType>(r.getType()).getDimSize(axis) != part)
      return failure();

  Operation *producer = split.getInput().getDefiningOp();
  if (!producer || !producer->hasOneUse())
    return failure();
  AddOp add = dyn_cast<AddOp>(producer);
  MatmulOp matmul;
  BlockArgument bias;
  bool biasFirst = false;
  if (add) {
    for (unsigned side : {0u, 1u}) {
      auto mm = add->getOperand(side).getDefiningOp<MatmulOp>();
      BlockArgument b = soleParam(func, add->getOperand(1 - side), add);
      auto bType = b ? cast<RankedTensorType>(b.getType()) : nullptr;
      if (mm && b && bType.getRank() == 1 &&
          bType.getDimSize(0) == parts * part) {
        matmul = mm;
        bias = b;
        biasFirst = side == 1;
      }
    }
    if (!matmul || !matmul->hasOneUse())
      return failure();
  } else {
    matmul = dyn_cast<MatmulOp>(producer);
    if (!matmul)
      return failure();
  }
  if (matmul.getTransposeLhs())
    return failure();
  BlockArgument weight = soleParam(func, matmul.getRhs(), matmul);
  if (!weight || cast<RankedTensorType>(weight.getType()).getRank() != 2)
    return failure();
  bool transposed = matmul.getTransposeRhs();
  auto wType = cast<RankedTensorType>(weight.getType());
  // [k*C, K] (transposed, PyTorch's layout) or [K, k*C].
  int64_t other = wType.getDimSize(transposed ? 1 : 0);
  SmallVector<int64_t> view = transposed
                                  ? SmallVector<int64_t>{parts, part, other}
                                  : SmallVector<int64_t>{other, parts, part};
  if (failed(viewParam(func, weight, wType.clone(view))))
    return failure();
  if (bias && failed(viewParam(func, bias,
                               cast<RankedTensorType>(bias.getType())
                                   .clone({parts, part}))))
    return failure();

  OpBuilder b(split);
  int64_t partDim = transposed ? 0 : 1;
  auto partOf = [&](Value viewed, int64_t dim, int64_t i,
                    ArrayRef<int64_t> shape, Location loc) -> Value {
    auto type = cast<RankedTensorType>(viewed.getType());
    SmallVector<int64_t> starts(type.getRank(), 0), steps(type.getRank(), 1);
    SmallVector<int64_t> limits(type.getShape());
    starts[dim] = i;
    limits[dim] = i + 1;
    Value slice = SliceOp::create(b, loc, viewed, starts, limits, steps);
    return ReshapeOp::create(b, loc, type.clone(shape), slice);
  };
  SmallVector<int64_t> wPart =
      transposed ? SmallVector<int64_t>{part, other}
                 : SmallVector<int64_t>{other, part};
  for (int64_t i = 0; i < parts; ++i) {
    Value w = partOf(weight, partDim, i, wPart, matmul.getLoc());
    auto outType = cast<RankedTensorType>(split.getResult(i).getType());
    Value y = MatmulOp::create(b, matmul.getLoc(), outType, matmul.getLhs(), w,
                               matmul.getTransposeLhsAttr(),
                               matmul.getTransposeRhsAttr());
    if (bias) {
      Value bi = partOf(bias, 0, i, {part}, add.getLoc());
      y = biasFirst ? AddOp::create(b, add.getLoc(), bi, y).getResult()
                    : AddOp::create(b, add.getLoc(), y, bi).getResult();
    }
    split.getResult(i).replaceAllUsesWith(y);
  }
  split.erase();
  if (add)
    add.erase();
  matmul.erase();
  return success();
}

struct LoomSplitFusedProjectionsPass
    : impl::LoomSplitFusedProjectionsPassBase<LoomSplitFusedProjectionsPass> {
  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      if (func.isExternal())
        continue;
      SmallVector<SplitOp> splits;
      func.walk([&](SplitOp split) { splits.push_back(split); });
      bool changed = false;
      for (SplitOp split : splits)
        changed |= succeeded(splitProjection(func, split));
      if (changed)
        func.setType(FunctionType::get(&getContext(),
                                       func.getBody().getArgumentTypes(),
                                       func.getResultTypes()));
    }
  }
};

} // namespace
} // namespace mlir::loom
