// RUN: not loom-opt %s --loom-build-train-step="optimizer=rmsprop" 2>&1 | FileCheck %s --check-prefix=OPT
// RUN: not loom-opt %s --loom-build-train-step="loss=hinge:y" 2>&1 | FileCheck %s --check-prefix=LOSS
// RUN: not loom-opt %s --loom-build-train-step="schedule=cosine warmup-steps=10 total-steps=5" 2>&1 | FileCheck %s --check-prefix=COS
// RUN: not loom-opt %s --loom-build-train-step="nesterov=true" 2>&1 | FileCheck %s --check-prefix=NEST
// RUN: not loom-opt %s --loom-build-train-step="accumulate=0" 2>&1 | FileCheck %s --check-prefix=ACC
// RUN: not loom-opt %s --loom-build-train-step --loom-build-train-step 2>&1 | FileCheck %s --check-prefix=SEVERAL
// RUN: not loom-opt %s --loom-build-train-step --loom-build-train-step="entry=f" 2>&1 | FileCheck %s --check-prefix=TWICE
// RUN: not loom-opt %s --loom-build-train-step="entry=g" 2>&1 | FileCheck %s --check-prefix=NOENTRY
// RUN: not loom-opt %s --loom-build-train-step="loss-scale=static" 2>&1 | FileCheck %s --check-prefix=SCALE
// RUN: not loom-opt %s --loom-build-train-step="loss-scale=dynamic loss-scale-init=0" 2>&1 | FileCheck %s --check-prefix=SCALEINIT
// RUN: not loom-opt %s --loom-build-train-step="loss-scale=dynamic loss-scale-growth-interval=0" 2>&1 | FileCheck %s --check-prefix=SCALEINIT
// SCALE: error: unknown loss scaling 'static' (expected none or dynamic)
// SCALEINIT: error: loss-scale-init must be positive and loss-scale-growth-interval at least 1
// SEVERAL: error: the module has several public functions; name the forward one with entry=NAME
// NOENTRY: error: no function @g to train
// ACC: error: accumulate must be at least 1, got 0
// TWICE: error: the module already has a train_step or eval_step
// OPT: error: unknown optimizer 'rmsprop' (expected sgd, adam or adamw)
// LOSS: error: unknown loss 'hinge:y' (expected cross-entropy:LABELS or mse:TARGET)
// COS: error: the cosine schedule needs total-steps (5) greater than warmup-steps (10)
// NEST: error: nesterov needs the sgd optimizer with a positive momentum
func.func @f(%w: tensor<3xf32> {loom.param = "w", loom.init = dense<0.5> : tensor<3xf32>}) -> tensor<f32> {
  %0 = loom.reduce_sum %w {axes = array<i64>} : (tensor<3xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}
