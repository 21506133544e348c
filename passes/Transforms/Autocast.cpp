//===- Autocast.cpp - mixed precision by an op policy ---------------------===//
//
// Runs matrix products and convolutions in bf16 or fp16 and everything whose
// accuracy depends on range or long sums in fp32, by one table of op
// policies, as PyTorch's autocast lists do. Casts are inserted once per
// value (next to its definition, shared by every use) and cancel where a
// widening meets its narrowing (loom.cast's folder). Function signatures do
// not change: parameters stay fp32 (master weights) and results are cast
// back to their declared types, so the training step built afterwards keeps
// its optimizer and loss in fp32, and the gradient of each cast (a cast
// back) makes the gradients of low-precision products arrive in fp32. See
// the pass description in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialects/Loom/LoomOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include "llvm/ADT/StringSwitch.h"

#include <cstring>

namespace mlir::loom {
#define GEN_PASS_DEF_LOOMAUTOCASTPASS
#define GEN_PASS_DEF_LOOMWIDENGRADIENTSPASS
#include "passes/Transforms/Passes.h.inc"

namespace {

/// What precision an op runs in.
enum class Policy {
  /// In the low precision (bf16 or fp16): its float operands are cast down.
  Low,
  /// In the precision the model declared (fp32): operands cast back up.
  Full,
  /// In the widest float type among its operands; 0-d tensors and splat
  /// constants take the type of the others, as scalars do in PyTorch's type
  /// promotion.
  Widest,
};

/// The op policy table. Ops it does not name run in full precision.
Policy policyOf(Operation *op) {
  return llvm::StringSwitch<Policy>(op->getName().getStringRef())
      // Products: what low precision is for (their gradients are products
      // too, and so follow).
      .Cases({"loom.matmul", "loom.conv"}, Policy::Low)
      // Range and long sums: exponentials, logarithms, powers, norms,
      // softmaxes, losses, reductions and recurrences.
      .Cases({"loom.exp", "loom.log", "loom.pow", "loom.sqrt", "loom.rsqrt",
              "loom.reciprocal", "loom.softplus"},
             Policy::Full)
      .Cases({"loom.softmax", "loom.log_softmax", "loom.layer_norm",
              "loom.batch_norm", "loom.batch_norm_train"},
             Policy::Full)
      .Cases({"loom.softmax_cross_entropy", "loom.nll_loss"}, Policy::Full)
      .Cases({"loom.reduce_sum", "loom.reduce_mean", "loom.reduce_max",
              "loom.reduce_min", "loom.reduce_prod", "loom.cumsum",
              "loom.avg_pool"},
             Policy::Full)
      .Cases({"loom.lstm", "loom.gru"}, Policy::Full)
      // Elementwise arithmetic and comparisons: the widest operand.
      .Cases({"loom.add", "loom.sub", "loom.mul", "loom.div", "loom.max",
              "loom.min", "loom.where", "loom.concat"},
             Policy::Widest)
      .Cases({"loom.equal", "loom.less", "loom.less_equal", "loom.greater",
              "loom.greater_equal"},
             Policy::Widest)
      // Activations and data movement: whatever comes in.
      .Cases({"loom.neg", "loom.abs", "loom.sign", "loom.relu", "loom.gelu",
              "loom.tanh", "loom.sigmoid", "loom.erf", "loom.leaky_relu",
              "loom.elu", "loom.hard_sigmoid", "loom.clip", "loom.softsign"},
             Policy::Widest)
      .Cases({"loom.floor", "loom.ceil", "loom.round", "loom.sin", "loom.cos"},
             Policy::Widest)
      .Cases({"loom.reshape", "loom.transpose", "loom.expand", "loom.slice",
              "loom.split", "loom.pad", "loom.tile", "loom.gather",
              "loom.gather_elements", "loom.scatter_elements", "loom.trilu"},
             Policy::Widest)
      .Cases({"loom.dropout", "loom.max_pool", "loom.shard",
              "loom.optimization_barrier"},
             Policy::Widest)
      .Default(Policy::Full);
}

/// Whether `v` acts as a scalar in type promotion: a 0-d tensor or a splat
/// constant.
bool isScalarLike(Value v) {
  auto type = cast<RankedTensorType>(v.getType());
  if (type.getRank() == 0)
    return true;
  DenseElementsAttr value;
  return matchPattern(v, m_Constant(&value)) && value.isSplat();
}

FloatType floatElement(Value v) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  return type ? dyn_cast<FloatType>(type.getElementType()) : FloatType();
}

class Autocaster {
public:
  Autocaster(func::FuncOp func, FloatType low) : func(func), low(low) {}

  void run() {
    Block &body = func.getBody().front();
    for (Operation &op : llvm::make_early_inc_range(body)) {
      // Results, casts and ops with regions see their declared types.
      if (isa<func::ReturnOp, CastOp>(op) || op.getNumRegions() > 0) {
        restoreOperands(&op);
        continue;
      }
      retype(&op);
      roundEpilogue(&op);
    }
    // Uses inside nested regions see the types they were written for.
    for (auto &[value, type] : declared)
      for (OpOperand &use : llvm::make_early_inc_range(value.getUses()))
        if (use.getOwner()->getBlock() != &body)
          use.set(castTo(value, type));
    keepAccumulators();
  }

private:
  /// A product whose every use widens it back to its declared type returns
  /// its f32 accumulator instead: rounding it to the low precision and
  /// widening it again only loses bits (and a bias added after the rounding
  /// can flip the sign of a sum near zero, and with it a ReLU's gradient).
  /// Convolutions with a bias keep the bias in the product, rounded once.
  void keepAccumulators() {
    for (Operation *op : products) {
      if (auto conv = dyn_cast<ConvOp>(op); conv && conv.getBias())
        continue;
      Value result = op->getResult(0);
      Type wide = declaredType(result);
      auto widens = [&](Operation *user) {
        auto cast = dyn_cast<CastOp>(user);
        return cast && cast.getType() == wide;
      };
      if (result.use_empty() || !llvm::all_of(result.getUsers(), widens))
        continue;
      result.setType(wide);
      for (Operation *user : llvm::make_early_inc_range(result.getUsers())) {
        user->getResult(0).replaceAllUsesWith(result);
        user->erase();
      }
    }
  }

  /// A product's bias add (a low-precision product plus a tensor of lower
  /// rank, as a linear layer's) runs in f32 on the product's accumulator and
  /// is rounded once to the low precision when something that does not
  /// want f32 reads it, as PyTorch's autocast rounds `addmm`: the
  /// activations between layers are then low-precision tensors, and a sum
  /// near zero keeps its sign (rounding the product before adding the bias
  /// does not).
  void roundEpilogue(Operation *op) {
    auto add = dyn_cast<AddOp>(op);
    if (!add || add.getType().getElementType() == low)
      return;
    // The product as the add reads it: widened by this pass.
    auto isProduct = [&](Value v) {
      if (auto widened = v.getDefiningOp<CastOp>())
        v = widened.getInput();
      Operation *def = v.getDefiningOp();
      return def && llvm::is_contained(products, def);
    };
    Value product = add.getLhs(), bias = add.getRhs();
    if (!isProduct(product))
      std::swap(product, bias);
    if (!isProduct(product) ||
        cast<RankedTensorType>(bias.getType()).getRank() >=
            cast<RankedTensorType>(product.getType()).getRank())
      return;
    Value sum = add.getResult();
    bool wantsLow = llvm::any_of(sum.getUsers(), [&](Operation *user) {
      return !isa<func::ReturnOp>(user) && user->getNumRegions() == 0 &&
             policyOf(user) != Policy::Full;
    });
    if (!wantsLow)
      return;
    OpBuilder b(op->getContext());
    b.setInsertionPointAfter(op);
    auto rounded = CastOp::create(
        b, op->getLoc(), cast<RankedTensorType>(sum.getType()).clone(low), sum);
    sum.replaceAllUsesExcept(rounded, rounded);
    declared.try_emplace(rounded, sum.getType());
  }

  /// The type `v` had before this pass changed it.
  Type declaredType(Value v) {
    auto it = declared.find(v);
    return it == declared.end() ? v.getType() : it->second;
  }

  /// `v` as `type` (same shape): `v` itself, or one cast per value and type
  /// right after `v`'s definition, shared by all uses.
  Value castTo(Value v, Type type) {
    if (v.getType() == type)
      return v;
    Value &cached = casts[{v, type}];
    if (cached)
      return cached;
    OpBuilder b(func.getContext());
    if (Operation *def = v.getDefiningOp())
      b.setInsertionPointAfter(def);
    else
      b.setInsertionPointToStart(cast<BlockArgument>(v).getOwner());
    cached = CastOp::create(b, v.getLoc(), type, v);
    return cached;
  }

  /// Float operands of `op` back at their declared types.
  void restoreOperands(Operation *op) {
    for (OpOperand &operand : op->getOpOperands())
      if (floatElement(operand.get()))
        operand.set(castTo(operand.get(), declaredType(operand.get())));
  }

  void retype(Operation *op) {
    // The float type the op was written in: its first float operand's.
    FloatType written;
    for (Value operand : op->getOperands())
      if (auto type = dyn_cast_or_null<FloatType>(
              getElementTypeOrSelf(declaredType(operand)))) {
        written = type;
        break;
      }
    if (!written || !written.isF32()) {
      restoreOperands(op);
      return;
    }
    FloatType compute = written;
    switch (policyOf(op)) {
    case Policy::Low:
      compute = low;
      products.push_back(op);
      break;
    case Policy::Full:
      break;
    case Policy::Widest: {
      FloatType widest, widestScalar;
      for (Value operand : op->getOperands()) {
        FloatType type = floatElement(operand);
        if (!type)
          continue;
        FloatType &slot = isScalarLike(operand) ? widestScalar : widest;
        if (!slot || type.getWidth() > slot.getWidth())
          slot = type;
      }
      compute = widest ? widest : widestScalar;
      break;
    }
    }
    for (OpOperand &operand : op->getOpOperands()) {
      Value v = operand.get();
      if (!floatElement(v) || getElementTypeOrSelf(declaredType(v)) != written)
        continue;
      operand.set(castTo(v, cast<RankedTensorType>(v.getType())
                                .clone(compute)));
    }
    if (compute == written)
      return;
    for (OpResult result : op->getResults()) {
      auto type = dyn_cast<RankedTensorType>(result.getType());
      if (!type || type.getElementType() != written)
        continue;
      declared.try_emplace(result, type);
      result.setType(type.clone(compute));
    }
  }

  func::FuncOp func;
  FloatType low;
  llvm::DenseMap<Value, Type> declared;
  llvm::DenseMap<std::pair<Value, Type>, Value> casts;
  /// The ops run in the low precision, in order.
  SmallVector<Operation *> products;
};

/// The f32 initial value `init` of a parameter rounded to `low` (to
/// nearest, ties to even), or null if it is not an f32 tensor value.
Attribute roundInitialValue(Attribute init, RankedTensorType lowType,
                            StringRef name) {
  const llvm::fltSemantics &to =
      cast<FloatType>(lowType.getElementType()).getFloatSemantics();
  auto round = [&](float v) {
    APFloat f(v);
    bool lost;
    f.convert(to, APFloat::rmNearestTiesToEven, &lost);
    return f;
  };
  if (auto dense = dyn_cast<DenseElementsAttr>(init)) {
    if (!dense.getElementType().isF32())
      return {};
    if (dense.isSplat())
      return DenseElementsAttr::get(lowType,
                                    round(dense.getSplatValue<float>()));
    SmallVector<APFloat> values;
    for (float v : dense.getValues<float>())
      values.push_back(round(v));
    return DenseElementsAttr::get(lowType, values);
  }
  auto resource = dyn_cast<DenseResourceElementsAttr>(init);
  if (!resource || !resource.getElementType().isF32())
    return {};
  AsmResourceBlob *blob = resource.getRawHandle().getBlob();
  if (!blob)
    return {};
  ArrayRef<char> raw = blob->getData();
  size_t count = raw.size() / sizeof(float);
  std::vector<uint16_t> bits(count);
  for (size_t i = 0; i < count; ++i) {
    float v;
    std::memcpy(&v, raw.data() + i * sizeof(float), sizeof v);
    bits[i] = (uint16_t)round(v).bitcastToAPInt().getZExtValue();
  }
  ArrayRef<char> bytes(reinterpret_cast<const char *>(bits.data()),
                       bits.size() * sizeof(uint16_t));
  return DenseResourceElementsAttr::get(
      lowType, name, HeapAsmResourceBlob::allocateAndCopyInferAlign(bytes));
}

/// --precision=bf16-pure: the f32 parameters of `func` become `low`
/// arguments (their initial values rounded once), read through a widening
/// cast that the autocast's narrowing casts for products fold into.
LogicalResult storeParametersLow(func::FuncOp func, FloatType low) {
  Block &entry = func.getBody().front();
  OpBuilder b = OpBuilder::atBlockBegin(&entry);
  SmallVector<Type> inputs(func.getArgumentTypes());
  for (BlockArgument arg : entry.getArguments()) {
    unsigned i = arg.getArgNumber();
    auto name = func.getArgAttrOfType<StringAttr>(i, "loom.param");
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!name || !type || !type.getElementType().isF32())
      continue;
    auto lowType = type.clone(low);
    Attribute init = func.getArgAttr(i, "loom.init");
    Attribute rounded =
        init ? roundInitialValue(init, lowType, name.getValue()) : Attribute();
    if (init && !rounded)
      return func.emitError("--precision=bf16-pure: the initial value of "
                            "parameter '")
             << name.getValue() << "' is not an f32 tensor";
    arg.setType(lowType);
    inputs[i] = lowType;
    if (rounded)
      func.setArgAttr(i, "loom.init", rounded);
    auto wide = CastOp::create(b, func.getLoc(), type, arg);
    arg.replaceAllUsesExcept(wide, wide);
  }
  func.setType(FunctionType::get(func.getContext(), inputs,
                                 func.getResultTypes()));
  return success();
}

struct LoomAutocastPass
    : impl::LoomAutocastPassBase<LoomAutocastPass> {
  using LoomAutocastPassBase::LoomAutocastPassBase;

  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    bool pure = precision == "bf16-pure";
    FloatType low =
        lowPrecisionType(ctx, pure ? StringRef("bf16") : StringRef(precision));
    if (!low) {
      emitError(UnknownLoc::get(ctx))
          << "loom-autocast: unknown precision '" << precision
          << "' (expected bf16, bf16-pure or fp16)";
      return signalPassFailure();
    }
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      if (func.isExternal())
        continue;
      Autocaster(func, low).run();
      if (pure && failed(storeParametersLow(func, low)))
        return signalPassFailure();
      if (failed(mlir::verify(func)))
        return signalPassFailure();
    }
  }
};

/// loom-widen-gradients: an op whose every use widens its low-precision
/// result to one type computes in that type instead. Products keep their
/// low-precision factors and return the accumulator; sums, sum-reductions
/// and data movement widen their operands (the widening moves up, to the
/// products or to a narrowing cast it cancels).
struct WidenLowPrecision : RewritePattern {
  WidenLowPrecision(MLIRContext *ctx)
      : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/1, ctx) {}

  LogicalResult matchAndRewrite(Operation *op,
                                PatternRewriter &rewriter) const override {
    bool product = isa<MatmulOp>(op);
    if (auto conv = dyn_cast<ConvOp>(op))
      product = !conv.getBias();
    if (!product && !isa<AddOp, ReduceSumOp, ReshapeOp, TransposeOp, SliceOp>(
                        op))
      return failure();
    Value result = op->getResult(0);
    FloatType low = floatElement(result);
    if (!low || low.getWidth() != 16 || result.use_empty())
      return failure();
    // Every use is the same widening cast.
    Type wide;
    for (Operation *user : result.getUsers()) {
      auto cast = dyn_cast<CastOp>(user);
      if (!cast)
        return failure();
      auto to = dyn_cast<FloatType>(cast.getType().getElementType());
      if (!to || !to.isF32() || (wide && cast.getType() != wide))
        return failure();
      wide = cast.getType();
    }
    auto wideElement = cast<RankedTensorType>(wide).getElementType();
    rewriter.setInsertionPoint(op);
    SmallVector<Value> operands(op->getOperands());
    if (!product)
      for (Value &operand : operands) {
        auto type = dyn_cast<RankedTensorType>(operand.getType());
        if (!type || type.getElementType() != low)
          continue;
        Operation *widened = CastOp::create(rewriter, op->getLoc(),
                                            type.clone(wideElement), operand);
        // Marks such as the pipeline stage follow the op it feeds.
        for (NamedAttribute attr : op->getDiscardableAttrs())
          if (attr.getName() != "loom.gradient")
            widened->setAttr(attr.getName(), attr.getValue());
        operand = widened->getResult(0);
      }
    rewriter.modifyOpInPlace(op, [&] {
      op->setOperands(operands);
      result.setType(wide);
      // The widening's marks that the op lacks (loom.gradient: this is a
      // parameter's gradient) move to the op that now defines the wide
      // value; its own (its pipeline stage) stay.
      for (Operation *user : result.getUsers())
        for (NamedAttribute attr : user->getDiscardableAttrs())
          if (!op->hasAttr(attr.getName()))
            op->setAttr(attr.getName(), attr.getValue());
    });
    for (Operation *user : llvm::make_early_inc_range(result.getUsers()))
      rewriter.replaceOp(user, result);
    return success();
  }
};

struct LoomWidenGradientsPass
    : impl::LoomWidenGradientsPassBase<LoomWidenGradientsPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<WidenLowPrecision>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
} // namespace mlir::loom
