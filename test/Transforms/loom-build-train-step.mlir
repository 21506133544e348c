// RUN: loom-opt %s --loom-build-train-step="optimizer=sgd lr=0.5 momentum=0.9" | FileCheck %s
// RUN: loom-opt %s --loom-build-train-step="optimizer=adamw lr=0.01" | FileCheck %s --check-prefix=ADAMW

// A model whose output is its loss. Only the parameter the loss depends on
// gets a gradient, optimizer state and an update; the integer index input
// and the unused parameter are left alone.

// CHECK-LABEL: func.func @model
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: %[[X:.*]]: tensor<4x3xf32> {loom.input = "x"}
// CHECK-SAME: %[[W:.*]]: tensor<3x2xf32> {loom.init = dense<{{.*}}> : tensor<3x2xf32>, loom.param = "w"}
// CHECK-SAME: %[[U:.*]]: tensor<2xf32> {loom.init = dense<{{.*}}> : tensor<2xf32>, loom.param = "unused"}
// CHECK-SAME: %[[STEP:.*]]: tensor<i64> {loom.state = "step"}
// CHECK-SAME: %[[BUF:.*]]: tensor<3x2xf32> {loom.state = "w.momentum", loom.state_of = "w"}
// CHECK-SAME: -> (tensor<f32> {loom.output = "loss"}, tensor<f32> {loom.output = "lr"}, tensor<3x2xf32> {loom.output = "w.next", loom.update = "w"}, tensor<3x2xf32> {loom.output = "w.momentum.next", loom.update = "w.momentum"}, tensor<i64> {loom.output = "step.next", loom.update = "step"})
// CHECK: loom.matmul %[[X]], %{{.*}} {loom.gradient = "w", transpose_lhs}
// CHECK-LABEL: func.func @eval_step
// CHECK-SAME: -> (tensor<f32> {loom.output = "loss"})

// ADAMW-LABEL: func.func @train_step
// ADAMW-SAME: {loom.state = "w.exp_avg", loom.state_of = "w"}
// ADAMW-SAME: {loom.state = "w.exp_avg_sq", loom.state_of = "w"}
// ADAMW: loom.pow
// ADAMW: loom.sqrt
module {
  func.func @model(%x: tensor<4x3xf32> {loom.input = "x"},
                   %w: tensor<3x2xf32> {loom.param = "w", loom.init = dense<0.5> : tensor<3x2xf32>},
                   %u: tensor<2xf32> {loom.param = "unused", loom.init = dense<1.0> : tensor<2xf32>})
      -> (tensor<f32> {loom.output = "loss"}, tensor<2xf32> {loom.output = "other"}) {
    %0 = loom.matmul %x, %w : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
    %1 = loom.tanh %0 : tensor<4x2xf32>
    %2 = loom.reduce_mean %1 {axes = array<i64>} : (tensor<4x2xf32>) -> tensor<f32>
    return %2, %u : tensor<f32>, tensor<2xf32>
  }
}

