// RUN: loom-opt %s --loom-build-train-step="loss=cross-entropy:labels optimizer=sgd lr=0.1" | FileCheck %s

// Training-mode batch norm: train_step returns the new running statistics as
// updates of their parameters (which get no gradient and no optimizer state);
// eval_step normalizes with the running statistics, as PyTorch's eval mode.

// CHECK-LABEL: func.func @train_step
// CHECK-SAME: loom.output = "mean.next", loom.update = "mean"
// CHECK-SAME: loom.output = "var.next", loom.update = "var"
// CHECK-NOT: mean.momentum
// CHECK-LABEL: func.func @eval_step
// CHECK-NOT: loom.batch_norm_train
// CHECK: loom.batch_norm %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}
// CHECK-NOT: loom.batch_norm_train
func.func @cnn(%x: tensor<4x3x2x2xf32> {loom.input = "x"},
               %scale: tensor<3xf32> {loom.param = "scale", loom.init = dense<1.0> : tensor<3xf32>},
               %bias: tensor<3xf32> {loom.param = "bias", loom.init = dense<0.0> : tensor<3xf32>},
               %mean: tensor<3xf32> {loom.param = "mean", loom.init = dense<0.0> : tensor<3xf32>},
               %var: tensor<3xf32> {loom.param = "var", loom.init = dense<1.0> : tensor<3xf32>})
    -> (tensor<4x3xf32> {loom.output = "logits"}) {
  %0:5 = loom.batch_norm_train %x, %scale, %bias, %mean, %var {epsilon = 1.0e-5 : f64, momentum = 0.9 : f64} : (tensor<4x3x2x2xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<4x3x2x2xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>)
  %1 = loom.reduce_mean %0#0 {axes = array<i64: 2, 3>} : (tensor<4x3x2x2xf32>) -> tensor<4x3xf32>
  return %1 : tensor<4x3xf32>
}
