// RUN: loom-opt %s --loom-build-train-step="optimizer=sgd lr=0.1 schedule=warmup warmup-steps=3 runtime-hyperparams=true" | FileCheck %s --check-prefix=SGD
// RUN: loom-opt %s --loom-build-train-step="optimizer=adamw schedule=cosine total-steps=10 runtime-hyperparams=true" | FileCheck %s --check-prefix=ADAM
// RUN: loom-opt %s --loom-build-train-step="optimizer=sgd lr=0.1 schedule=warmup warmup-steps=3 weight-decay=0.01" --canonicalize | FileCheck %s --check-prefix=FIXED

// Run-time hyperparameters are f64 scalars after the parameters, with the
// options' values as defaults; SGD keeps a momentum buffer and clips.
// SGD-LABEL: func.func @train_step
// SGD-SAME: %[[LR:[a-z0-9]+]]: tensor<f64> {loom.default = 1.000000e-01 : f64, loom.hyperparam = "lr"}
// SGD-SAME: %[[WARM:[a-z0-9]+]]: tensor<f64> {loom.default = 3.000000e+00 : f64, loom.hyperparam = "warmup_steps"}
// SGD-SAME: %[[WD:[a-z0-9]+]]: tensor<f64> {loom.default = 0.000000e+00 : f64, loom.hyperparam = "weight_decay"}
// SGD-SAME: %[[CLIP:[a-z0-9]+]]: tensor<f64> {loom.default = 0.000000e+00 : f64, loom.hyperparam = "clip_norm"}
// SGD-SAME: %[[MU:[a-z0-9]+]]: tensor<f64> {loom.default = 0.000000e+00 : f64, loom.hyperparam = "momentum"}
// SGD-SAME: {loom.state = "w.momentum", loom.state_of = "w"}
// 1 / warmup-steps in f64, rounded once to f32.
// SGD: %[[ONE:.*]] = loom.constant dense<1.000000e+00> : tensor<f64>
// SGD: %[[INV:.*]] = loom.div %[[ONE]], %[[WARM]] : (tensor<f64>, tensor<f64>) -> tensor<f64>
// SGD: loom.cast %[[INV]] : tensor<f64> -> tensor<f32>
// A clip norm of 0 leaves the gradient as it is.
// SGD: %[[C:.*]] = loom.cast %[[CLIP]] : tensor<f64> -> tensor<f32>
// SGD: %[[ON:.*]] = loom.less %{{.*}}, %[[C]]
// SGD: loom.where %[[ON]]
// SGD: loom.cast %[[WD]] : tensor<f64> -> tensor<f32>
// SGD: loom.cast %[[MU]] : tensor<f64> -> tensor<f32>

// AdamW: 1 - beta1 and 1 - beta2 in f64; the cosine schedule's steps.
// ADAM-LABEL: func.func @train_step
// ADAM-SAME: loom.hyperparam = "lr"
// ADAM-SAME: loom.hyperparam = "warmup_steps"
// ADAM-SAME: loom.default = 1.000000e+01 : f64, loom.hyperparam = "total_steps"
// ADAM-SAME: loom.hyperparam = "min_lr"
// ADAM-SAME: loom.default = 1.000000e-02 : f64, loom.hyperparam = "weight_decay"
// ADAM-SAME: %[[B1:[a-z0-9]+]]: tensor<f64> {loom.default = 9.000000e-01 : f64, loom.hyperparam = "beta1"}
// ADAM-SAME: loom.hyperparam = "beta2"
// ADAM-SAME: loom.hyperparam = "epsilon"
// ADAM: loom.cos
// ADAM: loom.sub %{{.*}}, %[[B1]] : (tensor<f64>, tensor<f64>) -> tensor<f64>

// Compiled-in values fold to the f32 constants they always were.
// FIXED-LABEL: func.func @train_step
// FIXED-NOT: loom.hyperparam
// FIXED-NOT: tensor<f64>
// FIXED: return
func.func @f(%w: tensor<3xf32> {loom.param = "w", loom.init = dense<0.5> : tensor<3xf32>}) -> tensor<f32> {
  %0 = loom.reduce_sum %w {axes = array<i64>} : (tensor<3xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}
