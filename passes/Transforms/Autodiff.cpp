//===- Autodiff.cpp - reverse-mode autodiff over loom ops -----------------===//

#include "passes/Transforms/Autodiff.h"

#include "dialects/Loom/LoomDialect.h"
#include "dialects/Loom/LoomOps.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/DenseSet.h"

using namespace mlir;
using namespace mlir::loom;

static bool isFloatValue(Value v) {
  return isa<FloatType>(getElementTypeOrSelf(v.getType()));
}

FailureOr<SmallVector<Value>>
mlir::loom::buildGradients(OpBuilder &builder, Value loss,
                           ArrayRef<Value> wrt) {
  Block *block = loss.getParentBlock();
  auto lossType = dyn_cast<RankedTensorType>(loss.getType());
  if (!lossType || !lossType.hasStaticShape() ||
      lossType.getNumElements() != 1 || !isFloatValue(loss))
    return emitError(loss.getLoc())
           << "the loss must be a floating-point tensor of one element, got "
           << loss.getType();

  // Values that depend on `wrt` (through floating-point results) ...
  llvm::DenseSet<Value> varied;
  for (Value v : wrt)
    if (isFloatValue(v))
      varied.insert(v);
  for (Operation &op : *block) {
    if (!llvm::any_of(op.getOperands(),
                      [&](Value v) { return varied.contains(v); }))
      continue;
    for (Value r : op.getResults())
      if (isFloatValue(r))
        varied.insert(r);
  }
  // ... and values the loss depends on.
  llvm::DenseSet<Value> useful;
  useful.insert(loss);
  for (Operation &op : llvm::reverse(*block))
    if (llvm::any_of(op.getResults(),
                     [&](Value v) { return useful.contains(v); }))
      for (Value v : op.getOperands())
        useful.insert(v);

  // Pipelined training: the forward ops carry `loom.stage`; ops without one
  // (the loss) take the latest stage of their operands, every op of the
  // gradient takes the stage of the op it differentiates, and the sum of a
  // value's gradients the stage of the value's op.
  bool staged = llvm::any_of(
      *block, [](Operation &op) { return op.hasAttr(kStageAttr); });
  auto stageOf = [](Operation *op) -> IntegerAttr {
    return op ? op->getAttrOfType<IntegerAttr>(kStageAttr) : IntegerAttr();
  };
  if (staged)
    for (Operation &op : *block) {
      if (op.hasAttr(kStageAttr) || op.hasTrait<OpTrait::IsTerminator>())
        continue;
      int64_t stage = 0;
      for (Value v : op.getOperands())
        if (IntegerAttr s = stageOf(v.getDefiningOp()))
          stage = std::max(stage, s.getInt());
      op.setAttr(kStageAttr, builder.getI64IntegerAttr(stage));
    }
  auto tagSince = [&](Operation *before, IntegerAttr stage) {
    if (!staged || !stage)
      return;
    Block *at = builder.getInsertionBlock();
    auto it = before ? std::next(before->getIterator()) : at->begin();
    for (; it != builder.getInsertionPoint(); ++it)
      if (!it->hasAttr(kStageAttr))
        it->setAttr(kStageAttr, stage);
  };
  auto lastInserted = [&]() -> Operation * {
    Block *at = builder.getInsertionBlock();
    auto ip = builder.getInsertionPoint();
    return ip == at->begin() ? nullptr : &*std::prev(ip);
  };

  llvm::DenseMap<Value, Value> grads;
  Location loc = loss.getLoc();
  grads[loss] = ConstantOp::create(builder, loc, lossType, 1.0);

  // Ops are visited in reverse order, so every use of a value has added its
  // contribution before the value's own op reads the sum.
  SmallVector<Operation *> ops;
  for (Operation &op : *block)
    ops.push_back(&op);
  for (Operation *op : llvm::reverse(ops)) {
    if (op->hasTrait<OpTrait::IsTerminator>())
      continue;
    SmallVector<Value> resultGrads;
    bool any = false;
    for (Value r : op->getResults()) {
      Value g = varied.contains(r) && useful.contains(r) ? grads.lookup(r)
                                                         : Value();
      resultGrads.push_back(g);
      any |= bool(g);
    }
    if (!any)
      continue;
    auto differentiable = dyn_cast<GradientOpInterface>(op);
    if (!differentiable)
      return op->emitError("cannot differentiate '")
             << op->getName()
             << "': it has no gradient (the loss depends on a parameter "
                "through it)";
    SmallVector<Value> operandGrads;
    Operation *before = lastInserted();
    if (failed(differentiable.buildGradient(builder, resultGrads,
                                            operandGrads)))
      return failure();
    tagSince(before, stageOf(op));
    for (auto [operand, g] : llvm::zip(op->getOperands(), operandGrads)) {
      if (!g || !varied.contains(operand))
        continue;
      if (g.getType() != operand.getType())
        return op->emitError("internal error: the gradient of operand of type ")
               << operand.getType() << " has type " << g.getType();
      Value &sum = grads[operand];
      if (sum) {
        Operation *producer = operand.getDefiningOp();
        Operation *before = lastInserted();
        sum = AddOp::create(builder, op->getLoc(), sum, g).getResult();
        tagSince(before, stageOf(producer ? producer : op));
      } else {
        sum = g;
      }
    }
  }

  SmallVector<Value> result;
  for (Value v : wrt)
    result.push_back(grads.lookup(v));
  return result;
}
