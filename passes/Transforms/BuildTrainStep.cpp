//===- BuildTrainStep.cpp - training and evaluation steps -----------------===//
//
// `loom-build-train-step`: from the forward function, builds
// `train_step(params, optimizer state, step, batch) -> (loss, lr, params',
// state', step + 1)` (loss, autodiff, clipping, schedule, optimizer) and
// `eval_step(params, batch) -> loss`. See Passes.td for the semantics.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/Transforms/Autodiff.h"
#include "passes/Transforms/UnrollRecurrent.h"

#include "dialects/Loom/LoomOps.h"
#include "dialects/Loom/MoeExpansion.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/RegionUtils.h"

#include "llvm/ADT/StringSet.h"
#include "llvm/Support/GlobPattern.h"

#include <cmath>

namespace mlir::loom {
#define GEN_PASS_DEF_LOOMBUILDTRAINSTEPPASS
#include "passes/Transforms/Passes.h.inc"

namespace {

/// Scalar (rank-0) arithmetic for hyperparameters and schedules.
struct Scalars {
  OpBuilder &b;
  Location loc;
  Type type;

  Value constant(double v) {
    return ConstantOp::create(b, loc, RankedTensorType::get({}, type), v);
  }
  Value add(Value x, Value y) { return AddOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return SubOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return MulOp::create(b, loc, x, y); }
  Value div(Value x, Value y) { return DivOp::create(b, loc, x, y); }
  Value min(Value x, Value y) { return MinOp::create(b, loc, x, y); }
  Value max(Value x, Value y) { return MaxOp::create(b, loc, x, y); }
  Value mul(Value x, double c) { return mul(x, constant(c)); }
  Value add(Value x, double c) { return add(x, constant(c)); }
};

/// The optimizer's and schedule's hyperparameters as f64 scalars: constants,
/// or with runtime-hyperparams arguments of the training step that the
/// runtime sets (`loom.hyperparam`). Quantities derived from them are
/// computed in f64 and rounded once to f32 (`f32`); ops on constants fold as
/// they are built, so compiled-in values give the constants they always did
/// and a bundle given the same values at run time computes the same bits.
struct Hyperparams {
  OpBuilder &b;
  Location loc;
  bool runtime;
  llvm::StringMap<Value> arguments;

  /// Appends the argument `name` (default `value`) to `train` when the
  /// values are set at run time.
  void declare(func::FuncOp train, StringRef name, double value) {
    if (!runtime)
      return;
    auto type = RankedTensorType::get({}, b.getF64Type());
    auto attrs = b.getDictionaryAttr(
        {b.getNamedAttr("loom.hyperparam", b.getStringAttr(name)),
         b.getNamedAttr("loom.default", b.getF64FloatAttr(value))});
    unsigned index = train.getNumArguments();
    (void)train.insertArgument(index, type, attrs, train.getLoc());
    arguments[name] = train.getArgument(index);
  }
  /// The hyperparameter `name`, whose compiled-in value is `value`.
  Value get(StringRef name, double value) {
    if (Value arg = arguments.lookup(name))
      return arg;
    return constant(value);
  }
  Value constant(double v) {
    return ConstantOp::create(b, loc, RankedTensorType::get({}, b.getF64Type()),
                              v);
  }
  Value add(Value x, Value y) { return b.createOrFold<AddOp>(loc, x, y); }
  Value sub(Value x, Value y) { return b.createOrFold<SubOp>(loc, x, y); }
  Value mul(Value x, Value y) { return b.createOrFold<MulOp>(loc, x, y); }
  Value div(Value x, Value y) { return b.createOrFold<DivOp>(loc, x, y); }
  Value f32(Value x) {
    return b.createOrFold<CastOp>(loc, RankedTensorType::get({}, b.getF32Type()),
                                  x);
  }
};

/// The output of `func` called `name` (`loom.output`), or -1.
int findOutput(func::FuncOp func, StringRef name) {
  for (unsigned i = 0; i < func.getNumResults(); ++i)
    if (auto attr = func.getResultAttrOfType<StringAttr>(i, "loom.output"))
      if (attr.getValue() == name)
        return i;
  return -1;
}

std::string outputName(func::FuncOp func, unsigned i) {
  if (auto attr = func.getResultAttrOfType<StringAttr>(i, "loom.output"))
    return attr.str();
  return "output" + std::to_string(i);
}

struct LoomBuildTrainStepPass
    : impl::LoomBuildTrainStepPassBase<LoomBuildTrainStepPass> {
  using Base::Base;

  func::FuncOp forward;
  StringRef lossKind, lossInput;

  LogicalResult checkOptions() {
    ModuleOp module = getOperation();
    if (!entry.empty()) {
      forward = module.lookupSymbol<func::FuncOp>(entry);
      if (!forward)
        return module.emitError("no function @") << entry << " to train";
    } else {
      for (auto func : module.getOps<func::FuncOp>()) {
        if (!func.isPublic() || func.isExternal())
          continue;
        if (forward)
          return module.emitError("the module has several public functions; "
                                  "name the forward one with entry=NAME");
        forward = func;
      }
      if (!forward)
        return module.emitError("the module has no public function to train");
    }
    if (!loss.empty()) {
      std::tie(lossKind, lossInput) = StringRef(loss).split(':');
      if ((lossKind != "cross-entropy" && lossKind != "mse") ||
          lossInput.empty())
        return module.emitError("unknown loss '")
               << loss << "' (expected cross-entropy:LABELS or mse:TARGET)";
    }
    if (optimizer != "sgd" && optimizer != "adam" && optimizer != "adamw")
      return module.emitError("unknown optimizer '")
             << optimizer << "' (expected sgd, adam or adamw)";
    if (schedule != "constant" && schedule != "warmup" && schedule != "cosine")
      return module.emitError("unknown learning-rate schedule '")
             << schedule << "' (expected constant, warmup or cosine)";
    if (schedule == "cosine" && totalSteps <= warmupSteps)
      return module.emitError("the cosine schedule needs total-steps (")
             << (int64_t)totalSteps << ") greater than warmup-steps ("
             << (int64_t)warmupSteps
             << ")";
    if (lr <= 0 || momentum < 0 || clipNorm < 0 || warmupSteps < 0)
      return module.emitError("lr must be positive and momentum, clip-norm "
                              "and warmup-steps not negative");
    if (accumulate < 1)
      return module.emitError("accumulate must be at least 1, got ")
             << (int64_t)accumulate;
    if (lossScale != "none" && lossScale != "dynamic")
      return module.emitError("unknown loss scaling '")
             << lossScale << "' (expected none or dynamic)";
    if (lossScaleInit <= 0 || lossScaleGrowthInterval < 1)
      return module.emitError("loss-scale-init must be positive and "
                              "loss-scale-growth-interval at least 1");
    if (nesterov && (optimizer != "sgd" || momentum <= 0))
      return module.emitError("nesterov needs the sgd optimizer with a "
                              "positive momentum");
    if (weightDecay < 0)
      weightDecay = optimizer == "adamw" ? 0.01 : 0.0;
    return success();
  }

  /// Clones the forward function as `name` and computes the loss in it,
  /// adding the labels/target argument an attached loss needs. Returns the
  /// loss value; the clone's terminator is left in place.
  FailureOr<Value> cloneWithLoss(StringRef name, func::FuncOp &clone) {
    OpBuilder builder(forward);
    builder.setInsertionPointAfter(forward);
    clone = cast<func::FuncOp>(builder.clone(*forward));
    clone.setSymName(name);
    auto ret = cast<func::ReturnOp>(clone.getBody().front().back());
    builder.setInsertionPoint(ret);
    Location loc = ret.getLoc();

    if (!lossKind.empty()) {
      int index = lossOutput.empty() ? 0 : findOutput(clone, lossOutput);
      if (index < 0 || (unsigned)index >= clone.getNumResults())
        return clone.emitError("the model has no output '")
               << lossOutput << "' to attach the loss to";
      Value output = ret.getOperand(index);
      auto type = cast<RankedTensorType>(output.getType());
      if (!isa<FloatType>(type.getElementType()))
        return clone.emitError("output '")
               << outputName(clone, index)
               << "' is not floating-point; cannot attach a loss to it";
      auto inputAttr = builder.getDictionaryAttr(builder.getNamedAttr(
          "loom.input", builder.getStringAttr(lossInput)));
      if (lossKind == "cross-entropy") {
        if (type.getRank() < 2)
          return clone.emitError("cross-entropy needs logits of shape [N, C, "
                                 "...]; output '")
                 << outputName(clone, index) << "' is " << type;
        SmallVector<int64_t> labelShape(type.getShape());
        labelShape.erase(labelShape.begin() + 1);
        auto labelType =
            RankedTensorType::get(labelShape, builder.getI64Type());
        unsigned argIndex = clone.getNumArguments();
        (void)clone.insertArgument(argIndex, labelType, inputAttr, loc);
        return SoftmaxCrossEntropyOp::create(
                   builder, loc, output, clone.getArgument(argIndex), Value(),
                   LossReduction::Mean, IntegerAttr())
            .getLoss();
      }
      unsigned argIndex = clone.getNumArguments();
      (void)clone.insertArgument(argIndex, type, inputAttr, loc);
      Value diff = SubOp::create(builder, loc, output,
                                 clone.getArgument(argIndex));
      return ReduceMeanOp::create(builder, loc,
                                  MulOp::create(builder, loc, diff, diff),
                                  ArrayRef<int64_t>{}, false)
          .getResult();
    }

    int index = -1;
    if (!lossOutput.empty()) {
      index = findOutput(clone, lossOutput);
      if (index < 0)
        return clone.emitError("the model has no output '")
               << lossOutput << "' to use as the loss";
    } else {
      for (unsigned i = 0; i < clone.getNumResults(); ++i) {
        auto type = dyn_cast<RankedTensorType>(clone.getResultTypes()[i]);
        if (!type || !type.hasStaticShape() || type.getNumElements() != 1 ||
            !isa<FloatType>(type.getElementType()))
          continue;
        if (index >= 0)
          return clone.emitError("the model has several scalar outputs ('")
                 << outputName(clone, index) << "', '" << outputName(clone, i)
                 << "'); choose the loss with --loss-output";
        index = i;
      }
      if (index < 0)
        return clone.emitError(
            "the model has no scalar floating-point output to use as the "
            "loss; attach one with --loss=cross-entropy:LABELS or "
            "--loss=mse:TARGET");
    }
    Value lossValue = ret.getOperand(index);
    auto type = cast<RankedTensorType>(lossValue.getType());
    if (type.getNumElements() != 1 || !isa<FloatType>(type.getElementType()))
      return clone.emitError("output '")
             << outputName(clone, index)
             << "' is not a floating-point scalar and cannot be the loss";
    if (type.getRank() != 0)
      lossValue = ReshapeOp::create(builder, loc, type.clone({}), lossValue);
    return lossValue;
  }

  /// Replaces the clone's results by `results` with `attrs`.
  void setResults(func::FuncOp func, ArrayRef<Value> results,
                  ArrayRef<DictionaryAttr> attrs) {
    auto ret = cast<func::ReturnOp>(func.getBody().front().back());
    OpBuilder builder(ret);
    func::ReturnOp::create(builder, ret.getLoc(), results);
    ret.erase();
    func.setFunctionType(builder.getFunctionType(
        func.getArgumentTypes(), ValueRange(results).getTypes()));
    func.setAllResultAttrs(attrs);
    IRRewriter rewriter(builder);
    (void)runRegionDCE(rewriter, func.getBody());
  }

  DictionaryAttr outputAttr(OpBuilder &b, StringRef name,
                            StringRef updates = {}) {
    SmallVector<NamedAttribute> attrs{
        b.getNamedAttr("loom.output", b.getStringAttr(name))};
    if (!updates.empty())
      attrs.push_back(b.getNamedAttr("loom.update", b.getStringAttr(updates)));
    return b.getDictionaryAttr(attrs);
  }

  /// Gives every dropout of `train` its own stream (its seed plus its
  /// ordinal times 2^32) and, where it has none, an offset that stands for
  /// the random-stream position the training step fills in once its step
  /// counter exists. Returns that stand-in value, or null without dropouts.
  Value prepareDropouts(func::FuncOp train) {
    SmallVector<DropoutOp> dropouts;
    train.walk([&](DropoutOp d) { dropouts.push_back(d); });
    if (dropouts.empty())
      return Value();
    OpBuilder b = OpBuilder::atBlockBegin(&train.getBody().front());
    Value standIn = ConstantOp::create(
        b, train.getLoc(), RankedTensorType::get({}, b.getI64Type()), 0.0);
    for (auto [ordinal, d] : llvm::enumerate(dropouts)) {
      d.setSeed(d.getSeed() + ((int64_t)ordinal << 32));
      if (!d.getOffset())
        d.getOffsetMutable().assign(standIn);
    }
    return standIn;
  }

  /// Appends a zero-initialized state argument of `type`, named `name`;
  /// `of` names the parameter it belongs to (a moment, a momentum buffer,
  /// a gradient accumulator), whose sharding it takes.
  Value addState(func::FuncOp func, Type type, StringRef name,
                 StringRef of = {}) {
    OpBuilder b(func);
    SmallVector<NamedAttribute> named = {
        b.getNamedAttr("loom.state", b.getStringAttr(name))};
    if (!of.empty())
      named.push_back(b.getNamedAttr("loom.state_of", b.getStringAttr(of)));
    auto attrs = b.getDictionaryAttr(named);
    unsigned index = func.getNumArguments();
    (void)func.insertArgument(index, type, attrs, func.getLoc());
    return func.getArgument(index);
  }

  /// The learning rate at 0-based step `s` (an f32 scalar).
  Value learningRate(Scalars &s, Hyperparams &h, Value step) {
    Value lrH = h.get("lr", lr);
    Value base = h.f32(lrH);
    if (schedule == "constant")
      return base;
    Value warmup = h.get("warmup_steps", (double)warmupSteps);
    Value warm = base;
    if (h.runtime || warmupSteps > 0)
      warm = s.mul(base,
                   s.min(s.constant(1.0),
                         s.mul(s.add(step, 1.0),
                               h.f32(h.div(h.constant(1.0), warmup)))));
    if (schedule == "warmup")
      return warm;
    // Cosine decay from lr at the end of warmup to min-lr at total-steps.
    Value total = h.get("total_steps", (double)totalSteps);
    Value minLrH = h.get("min_lr", minLr);
    Value progress =
        s.mul(s.add(step, h.f32(h.sub(h.constant(0.0), warmup))),
              h.f32(h.div(h.constant(1.0), h.sub(total, warmup))));
    progress = s.min(s.max(progress, s.constant(0.0)), s.constant(1.0));
    Value cosine = CosOp::create(s.b, s.loc, s.mul(progress, M_PI));
    Value decayed =
        s.add(s.mul(s.add(cosine, 1.0),
                    h.f32(h.mul(h.constant(0.5), h.sub(lrH, minLrH)))),
              h.f32(minLrH));
    if (!h.runtime && warmupSteps == 0)
      return decayed;
    Value inWarmup = LessOp::create(s.b, s.loc, step, h.f32(warmup));
    return WhereOp::create(s.b, s.loc, inWarmup, warm, decayed);
  }

  void runOnOperation() override {
    if (failed(checkOptions()))
      return signalPassFailure();
    ModuleOp module = getOperation();
    if (module.lookupSymbol("train_step") || module.lookupSymbol("eval_step")) {
      module.emitError("the module already has a train_step or eval_step");
      return signalPassFailure();
    }

    // eval_step: the forward pass and the loss.
    func::FuncOp eval;
    FailureOr<Value> evalLoss = cloneWithLoss("eval_step", eval);
    if (failed(evalLoss))
      return signalPassFailure();
    OpBuilder b(module.getContext());
    setResults(eval, {*evalLoss}, {outputAttr(b, "loss")});
    // Evaluation normalizes with the running statistics, as PyTorch's
    // eval mode, and leaves them unchanged.
    SmallVector<BatchNormTrainOp> trainingNorms;
    eval.walk([&](BatchNormTrainOp bn) { trainingNorms.push_back(bn); });
    for (BatchNormTrainOp bn : trainingNorms) {
      if (llvm::any_of(bn->getResults().drop_front(),
                       [](Value v) { return !v.use_empty(); }))
        continue;
      OpBuilder nb(bn);
      Value y = BatchNormOp::create(nb, bn.getLoc(), bn.getInput(),
                                    bn.getScale(), bn.getBias(),
                                    bn.getRunningMean(), bn.getRunningVar(),
                                    bn.getEpsilonAttr());
      bn.getResult().replaceAllUsesWith(y);
      bn.erase();
    }
    // ... and without dropout: the identity, every entry kept.
    SmallVector<DropoutOp> evalDropouts;
    eval.walk([&](DropoutOp d) { evalDropouts.push_back(d); });
    for (DropoutOp d : evalDropouts) {
      OpBuilder nb(d);
      d.getResult().replaceAllUsesWith(d.getInput());
      d.getMask().replaceAllUsesWith(ConstantOp::create(
          nb, d.getLoc(), cast<RankedTensorType>(d.getMask().getType()), 1.0));
      d.erase();
    }

    // train_step: forward, loss, gradients, optimizer.
    func::FuncOp train;
    FailureOr<Value> lossValue = cloneWithLoss("train_step", train);
    if (failed(lossValue))
      return signalPassFailure();
    auto ret = cast<func::ReturnOp>(train.getBody().front().back());
    Location loc = ret.getLoc();
    // Backpropagation through time: recurrent layers as their time steps.
    unrollRecurrentLayers(train);
    // Mixture-of-experts layers as their routing, dispatch and experts; their
    // load-balancing and router z-losses join the training loss.
    // Their stacked expert weights are marked for expert parallelism
    // (loom-shard-inputs splits them over the expert axis).
    train.walk([&](MoeOp moe) {
      for (BlockArgument arg : expertParameters(moe))
        if (train.getArgAttr(arg.getArgNumber(), "loom.param"))
          train.setArgAttr(arg.getArgNumber(), kMoeExpertParamAttr,
                           UnitAttr::get(train.getContext()));
    });
    SmallVector<MoeExpansion> experts = expandMoeLayers(train);
    for (MoeExpansion &layer : experts) {
      if (!layer.auxLoss)
        continue;
      OpBuilder at(ret);
      Value aux = layer.auxLoss;
      if (aux.getType() != lossValue->getType())
        aux = CastOp::create(at, loc, lossValue->getType(), aux);
      *lossValue = AddOp::create(at, loc, *lossValue, aux);
    }
    Value dropoutPosition = prepareDropouts(train);

    // Frozen parameters (`freeze` globs) are inputs like any other: no
    // gradient, no optimizer state.
    SmallVector<llvm::GlobPattern> frozen;
    for (const std::string &glob : freeze) {
      llvm::Expected<llvm::GlobPattern> pattern =
          llvm::GlobPattern::create(glob);
      if (!pattern) {
        module.emitError() << "--freeze '" << glob
                           << "': " << llvm::toString(pattern.takeError());
        return signalPassFailure();
      }
      frozen.push_back(std::move(*pattern));
    }
    SmallVector<unsigned> frozenUses(frozen.size(), 0);
    SmallVector<Value> params;
    SmallVector<std::string> names;
    for (BlockArgument arg : train.getArguments()) {
      auto name = train.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                                     "loom.param");
      if (!name || !isa<FloatType>(getElementTypeOrSelf(arg.getType())))
        continue;
      bool isFrozen = false;
      for (auto [i, pattern] : llvm::enumerate(frozen))
        if (pattern.match(name.getValue())) {
          ++frozenUses[i];
          isFrozen = true;
        }
      if (isFrozen)
        continue;
      params.push_back(arg);
      names.push_back(name.str());
    }
    for (auto [i, uses] : llvm::enumerate(frozenUses))
      if (uses == 0) {
        module.emitError() << "--freeze '" << freeze[i]
                           << "' matches no parameter";
        return signalPassFailure();
      }
    Type f32 = b.getF32Type();
    Scalars s{b, loc, f32};
    // Run-time hyperparameters: arguments after the batch, in this order.
    Hyperparams h{b, loc, runtimeHyperparams, {}};
    h.declare(train, "lr", lr);
    if (schedule != "constant")
      h.declare(train, "warmup_steps", (double)warmupSteps);
    if (schedule == "cosine") {
      h.declare(train, "total_steps", (double)totalSteps);
      h.declare(train, "min_lr", minLr);
    }
    h.declare(train, "weight_decay", weightDecay);
    // A global gradient norm spans pipeline stages, which pipelining does
    // not support yet: a pipelined step clips only when compiled to.
    bool pipelined = train
                         .walk([](Operation *op) {
                           return op->hasAttr(kStageAttr)
                                      ? WalkResult::interrupt()
                                      : WalkResult::advance();
                         })
                         .wasInterrupted();
    bool clips = clipNorm > 0 || (runtimeHyperparams && !pipelined);
    if (clips)
      h.declare(train, "clip_norm", clipNorm);
    if (optimizer == "sgd") {
      h.declare(train, "momentum", momentum);
    } else {
      h.declare(train, "beta1", beta1);
      h.declare(train, "beta2", beta2);
      h.declare(train, "epsilon", epsilon);
    }
    b.setInsertionPoint(ret);
    auto stepType = RankedTensorType::get({}, b.getI64Type());
    auto i64Scalar = [&](int64_t v) -> Value {
      return ConstantOp::create(b, loc, stepType, (double)v);
    };

    // Dynamic loss scaling (torch.amp.GradScaler's): the gradients are
    // those of loss * scale, so that small fp16 gradients do not flush to
    // zero, and are unscaled before anything reads them. The scale is
    // loss-scale-init * 2^e, with the exponent e, the count of clean steps
    // since the scale last changed and the count of skipped steps in the
    // optimizer state (all starting at 0), so checkpoints carry them.
    Value scaleExponent, growthTracker, skippedSteps, scale;
    if (lossScale == "dynamic") {
      auto f32Scalar = RankedTensorType::get({}, f32);
      scaleExponent = addState(train, f32Scalar, "loss_scale.exponent");
      growthTracker = addState(train, stepType, "loss_scale.growth_tracker");
      skippedSteps = addState(train, stepType, "loss_scale.skipped_steps");
    }
    b.setInsertionPoint(ret);
    Value scaledLoss = *lossValue;
    if (scaleExponent) {
      scale = s.mul(PowOp::create(b, loc, s.constant(2.0), scaleExponent),
                    lossScaleInit);
      scaledLoss = MulOp::create(b, loc, *lossValue, scale);
    }
    FailureOr<SmallVector<Value>> grads =
        buildGradients(b, scaledLoss, params);
    if (failed(grads))
      return signalPassFailure();

    SmallVector<unsigned> trainable;
    for (unsigned i = 0; i < params.size(); ++i)
      if ((*grads)[i])
        trainable.push_back(i);
    // Name each gradient for memory accounting (loom-memory-report).
    for (unsigned i : trainable)
      if (Operation *def = (*grads)[i].getDefiningOp())
        if (!def->hasAttr("loom.gradient"))
          def->setAttr("loom.gradient", b.getStringAttr(names[i]));
    if (trainable.empty()) {
      train.emitError("the loss depends on no floating-point parameter; "
                      "there is nothing to train");
      return signalPassFailure();
    }

    auto toF32 = [&](Value v) -> Value {
      if (getElementTypeOrSelf(v.getType()) == f32)
        return v;
      return CastOp::create(b, loc, cast<RankedTensorType>(v.getType())
                                        .clone(f32), v);
    };
    auto like = [&](Value scalar, Value tensor) -> Value {
      Type element = getElementTypeOrSelf(tensor.getType());
      if (element == f32)
        return scalar;
      return CastOp::create(b, loc, RankedTensorType::get({}, element),
                            scalar);
    };

    if (scale) {
      Value inverse = s.div(s.constant(1.0), scale);
      for (unsigned i : trainable)
        (*grads)[i] = MulOp::create(b, loc, (*grads)[i],
                                    like(inverse, params[i]));
    }

    // Step counter and learning rate.
    Value step = addState(train, stepType, "step");
    b.setInsertionPoint(ret);
    Value stepF = CastOp::create(b, loc, RankedTensorType::get({}, f32), step);
    Value rate = learningRate(s, h, stepF);

    // Gradient accumulation: each call adds its micro-batch's gradient to an
    // accumulator; every `accumulate`-th call applies the optimizer to their
    // mean and resets the accumulators. Between, parameters, optimizer state
    // and the step counter keep their values.
    Value apply;
    SmallVector<Value> accumulators, accumulated;
    Value micro, microNext;
    if (accumulate > 1)
      micro = addState(train, stepType, "micro_step");
    if (dropoutPosition) {
      // Micro-batch `micro` of step `step` draws masks at position
      // step * accumulate + micro.
      OpBuilder eb = OpBuilder::atBlockBegin(&train.getBody().front());
      Value position = step;
      if (micro)
        position =
            AddOp::create(eb, loc,
                          MulOp::create(eb, loc, step,
                                        ConstantOp::create(eb, loc, stepType,
                                                           (double)accumulate)),
                          micro);
      dropoutPosition.replaceAllUsesWith(position);
      dropoutPosition.getDefiningOp()->erase();
    }
    if (accumulate > 1) {
      b.setInsertionPoint(ret);
      microNext = AddOp::create(b, loc, micro, i64Scalar(1));
      apply = EqualOp::create(b, loc, microNext, i64Scalar(accumulate));
      for (unsigned i : trainable) {
        Value acc = addState(train, params[i].getType(),
                             names[i] + ".grad_accumulator", names[i]);
        b.setInsertionPoint(ret);
        Value sum = AddOp::create(b, loc, acc, (*grads)[i]);
        accumulators.push_back(acc);
        accumulated.push_back(sum);
        (*grads)[i] = MulOp::create(
            b, loc, sum, like(s.constant(1.0 / (double)accumulate), params[i]));
      }
    }
    auto whenApplied = [&](Value next, Value old) -> Value {
      return apply ? WhereOp::create(b, loc, apply, next, old).getResult()
                   : next;
    };

    // With loss scaling, a step whose gradients hold an inf or NaN (their
    // sum times 0 is then NaN, else 0) leaves parameters and optimizer state
    // as they are.
    Value finite;
    if (scale) {
      Value found = s.constant(0.0);
      for (unsigned i : trainable) {
        Value g = (*grads)[i];
        Value zeros = MulOp::create(b, loc, g, like(s.constant(0.0), g));
        found = s.add(found, toF32(ReduceSumOp::create(
                                 b, loc, zeros, ArrayRef<int64_t>{}, false)));
      }
      finite = EqualOp::create(b, loc, found, s.constant(0.0));
    }
    auto whenUpdated = [&](Value next, Value old) -> Value {
      Value gate = apply;
      if (finite)
        gate = apply ? AndOp::create(b, loc, apply, finite).getResult()
                     : finite;
      return gate ? WhereOp::create(b, loc, gate, next, old).getResult()
                  : next;
    };

    // Global-norm clipping (at run time, a clip-norm of 0 leaves the
    // gradients as they are).
    if (clips) {
      Value total = s.constant(0.0);
      for (unsigned i : trainable) {
        Value g = (*grads)[i];
        total = s.add(total, toF32(ReduceSumOp::create(
                                 b, loc, MulOp::create(b, loc, g, g),
                                 ArrayRef<int64_t>{}, false)));
      }
      Value norm = SqrtOp::create(b, loc, total);
      Value clip = h.f32(h.get("clip_norm", clipNorm));
      Value coef = s.min(s.div(clip, s.add(norm, 1e-6)), s.constant(1.0));
      if (h.runtime)
        coef = WhereOp::create(b, loc,
                               LessOp::create(b, loc, s.constant(0.0), clip),
                               coef, s.constant(1.0));
      for (unsigned i : trainable)
        (*grads)[i] = MulOp::create(b, loc, (*grads)[i], like(coef, params[i]));
    }

    SmallVector<Value> results{*lossValue, rate};
    SmallVector<DictionaryAttr> attrs{outputAttr(b, "loss"),
                                      outputAttr(b, "lr")};
    // Each mixture-of-experts layer's load on the step's batch (routed and
    // processed assignments per expert), for loom-run to report. Pipeline
    // stages keep their outputs to the loss and the state.
    for (auto [i, layer] : llvm::enumerate(experts))
      if (!layer.load.getDefiningOp()->hasAttr(kStageAttr)) {
        results.push_back(layer.load);
        attrs.push_back(outputAttr(
            b, "moe." + (layer.name.empty() ? std::to_string(i) : layer.name) +
                   ".expert_load"));
      }
    SmallVector<Value> stateResults, stateOld;
    SmallVector<DictionaryAttr> stateAttrs;
    // 1-based step for Adam's bias correction, which skipped steps do not
    // advance (as a skipped optimizer.step() does not).
    Value t = s.add(stepF, 1.0);
    if (skippedSteps)
      t = s.sub(t, CastOp::create(b, loc, RankedTensorType::get({}, f32),
                                  skippedSteps));
    for (unsigned i : trainable) {
      // Low-precision parameters (--precision=bf16-pure stores them in
      // bf16) are updated in f32 with f32 optimizer state and rounded once.
      Value p = toF32(params[i]), g = toF32((*grads)[i]);
      StringRef name = names[i];
      auto c = [&](Value scalar) { return like(scalar, p); };
      auto mul = [&](Value x, Value y) -> Value {
        return MulOp::create(b, loc, x, y);
      };
      auto addv = [&](Value x, Value y) -> Value {
        return AddOp::create(b, loc, x, y);
      };
      Value lrP = c(rate);
      Value updated;
      // At run time, a weight decay or momentum of 0 is applied and
      // changes nothing.
      bool decays = h.runtime || weightDecay != 0;
      Value decay = h.f32(h.get("weight_decay", weightDecay));
      if (optimizer == "sgd") {
        if (decays)
          g = addv(g, mul(p, c(decay)));
        Value direction = g;
        if (h.runtime || momentum > 0) {
          Value buf =
              addState(train, p.getType(), name.str() + ".momentum", name);
          b.setInsertionPoint(ret);
          Value mu = h.f32(h.get("momentum", momentum));
          Value next = addv(mul(buf, c(mu)), g);
          stateResults.push_back(next);
          stateOld.push_back(buf);
          stateAttrs.push_back(outputAttr(b, name.str() + ".momentum.next",
                                          name.str() + ".momentum"));
          direction =
              nesterov ? addv(g, mul(next, c(mu))) : next;
        }
        updated = SubOp::create(b, loc, p, mul(direction, lrP));
      } else {
        Value m = addState(train, p.getType(), name.str() + ".exp_avg", name);
        Value v =
            addState(train, p.getType(), name.str() + ".exp_avg_sq", name);
        b.setInsertionPoint(ret);
        if (optimizer == "adamw" && decays)
          p = mul(p, c(s.sub(s.constant(1.0), s.mul(rate, decay))));
        else if (decays)
          g = addv(g, mul(p, c(decay)));
        Value b1 = h.get("beta1", beta1), b2 = h.get("beta2", beta2);
        Value one = h.constant(1.0);
        Value m2 = addv(mul(m, c(h.f32(b1))), mul(g, c(h.f32(h.sub(one, b1)))));
        Value v2 = addv(mul(v, c(h.f32(b2))),
                        mul(mul(g, g), c(h.f32(h.sub(one, b2)))));
        Value bc1 =
            s.sub(s.constant(1.0), PowOp::create(b, loc, h.f32(b1), t));
        Value bc2 =
            s.sub(s.constant(1.0), PowOp::create(b, loc, h.f32(b2), t));
        Value stepSize = s.div(rate, bc1);
        Value denom = addv(DivOp::create(b, loc, SqrtOp::create(b, loc, v2),
                                         c(SqrtOp::create(b, loc, bc2))),
                           c(h.f32(h.get("epsilon", epsilon))));
        updated = SubOp::create(
            b, loc, p, mul(DivOp::create(b, loc, m2, denom), c(stepSize)));
        stateResults.append({m2, v2});
        stateOld.append({m, v});
        stateAttrs.push_back(outputAttr(b, name.str() + ".exp_avg.next",
                                        name.str() + ".exp_avg"));
        stateAttrs.push_back(outputAttr(b, name.str() + ".exp_avg_sq.next",
                                        name.str() + ".exp_avg_sq"));
      }
      if (updated.getType() != params[i].getType())
        updated = CastOp::create(b, loc, params[i].getType(), updated);
      results.push_back(whenUpdated(updated, params[i]));
      attrs.push_back(outputAttr(b, name.str() + ".next", name));
    }
    for (auto [next, old] : llvm::zip(stateResults, stateOld))
      results.push_back(whenUpdated(next, old));
    attrs.append(stateAttrs);
    if (scale) {
      // GradScaler.update(): halve the scale and skip on inf/NaN, double it
      // after loss-scale-growth-interval clean steps in a row.
      Value one = i64Scalar(1);
      Value tracked = WhereOp::create(
          b, loc, finite, AddOp::create(b, loc, growthTracker, one),
          i64Scalar(0));
      Value grow = EqualOp::create(b, loc, tracked,
                                   i64Scalar(lossScaleGrowthInterval));
      Value trackerNext = WhereOp::create(b, loc, grow, i64Scalar(0), tracked);
      Value exponentNext = WhereOp::create(
          b, loc, finite,
          WhereOp::create(b, loc, grow, s.add(scaleExponent, 1.0),
                          scaleExponent),
          s.add(scaleExponent, -1.0));
      Value skippedNext = WhereOp::create(
          b, loc, finite, skippedSteps, AddOp::create(b, loc, skippedSteps, one));
      results.push_back(scale);
      attrs.push_back(outputAttr(b, "loss_scale"));
      results.append({whenApplied(exponentNext, scaleExponent),
                      whenApplied(trackerNext, growthTracker),
                      whenApplied(skippedNext, skippedSteps)});
      attrs.append(
          {outputAttr(b, "loss_scale.exponent.next", "loss_scale.exponent"),
           outputAttr(b, "loss_scale.growth_tracker.next",
                      "loss_scale.growth_tracker"),
           outputAttr(b, "loss_scale.skipped_steps.next",
                      "loss_scale.skipped_steps")});
    }
    results.push_back(
        whenApplied(AddOp::create(b, loc, step, i64Scalar(1)), step));
    attrs.push_back(outputAttr(b, "step.next", "step"));
    // Batch normalization in training mode updates its running statistics,
    // which are parameters without a gradient.
    llvm::StringSet<> updated;
    for (unsigned i : trainable)
      updated.insert(names[i]);
    train.walk([&](BatchNormTrainOp bn) {
      for (auto [running, next] :
           {std::pair(bn.getRunningMean(), bn.getNewRunningMean()),
            std::pair(bn.getRunningVar(), bn.getNewRunningVar())}) {
        // A bf16-pure parameter is read through its widening cast.
        if (auto widened = running.getDefiningOp<CastOp>())
          running = widened.getInput();
        auto arg = dyn_cast<BlockArgument>(running);
        if (!arg || arg.getOwner()->getParentOp() != train)
          continue;
        auto name = train.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                                       "loom.param");
        if (!name || !updated.insert(name.getValue()).second)
          continue;
        if (next.getType() != arg.getType()) {
          OpBuilder at(ret);
          next = CastOp::create(at, loc, arg.getType(), next);
        }
        results.push_back(next); // every forward pass, as PyTorch
        attrs.push_back(outputAttr(b, name.str() + ".next", name.getValue()));
      }
    });
    if (apply) {
      for (auto [i, acc, sum] :
           llvm::zip(trainable, accumulators, accumulated)) {
        Value zero = ConstantOp::create(
            b, loc, cast<RankedTensorType>(acc.getType()), 0.0);
        results.push_back(WhereOp::create(b, loc, apply, zero, sum));
        attrs.push_back(outputAttr(b, names[i] + ".grad_accumulator.next",
                                   names[i] + ".grad_accumulator"));
      }
      results.push_back(WhereOp::create(b, loc, apply, i64Scalar(0), microNext));
      attrs.push_back(outputAttr(b, "micro_step.next", "micro_step"));
    }
    setResults(train, results, attrs);

    // The configuration, for the bundle's manifest.
    SmallVector<NamedAttribute> config{
        b.getNamedAttr("optimizer", b.getStringAttr(optimizer)),
        b.getNamedAttr("lr", b.getF64FloatAttr(lr)),
        b.getNamedAttr("weight_decay", b.getF64FloatAttr(weightDecay)),
        b.getNamedAttr("schedule", b.getStringAttr(schedule)),
        b.getNamedAttr("warmup_steps", b.getI64IntegerAttr(warmupSteps)),
        b.getNamedAttr("total_steps", b.getI64IntegerAttr(totalSteps)),
        b.getNamedAttr("min_lr", b.getF64FloatAttr(minLr)),
        b.getNamedAttr("clip_norm", b.getF64FloatAttr(clipNorm)),
        b.getNamedAttr("accumulate", b.getI64IntegerAttr(accumulate)),
        b.getNamedAttr("loss_scale", b.getStringAttr(lossScale)),
        b.getNamedAttr("runtime_hyperparams", b.getBoolAttr(runtimeHyperparams)),
        b.getNamedAttr("forward", b.getStringAttr(forward.getSymName())),
        b.getNamedAttr("train_entry", b.getStringAttr("train_step")),
        b.getNamedAttr("eval_entry", b.getStringAttr("eval_step"))};
    if (optimizer == "sgd") {
      config.push_back(b.getNamedAttr("momentum", b.getF64FloatAttr(momentum)));
      config.push_back(b.getNamedAttr("nesterov", b.getBoolAttr(nesterov)));
    } else {
      config.push_back(b.getNamedAttr("beta1", b.getF64FloatAttr(beta1)));
      config.push_back(b.getNamedAttr("beta2", b.getF64FloatAttr(beta2)));
      config.push_back(b.getNamedAttr("epsilon", b.getF64FloatAttr(epsilon)));
    }
    if (!loss.empty())
      config.push_back(b.getNamedAttr("loss", b.getStringAttr(loss)));
    else
      config.push_back(b.getNamedAttr(
          "loss_output",
          b.getStringAttr(lossOutput.empty() ? std::string("(the scalar output)")
                                             : std::string(lossOutput))));
    module->setAttr("loom.training", b.getDictionaryAttr(config));
  }
};

} // namespace
} // namespace mlir::loom
