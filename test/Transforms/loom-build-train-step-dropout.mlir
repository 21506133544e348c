// RUN: loom-opt %s --loom-build-train-step="loss=cross-entropy:labels optimizer=sgd lr=0.1" | FileCheck %s
// RUN: loom-opt %s --loom-build-train-step="loss=cross-entropy:labels optimizer=sgd lr=0.1 accumulate=2" | FileCheck %s --check-prefix=ACCUM

// Dropout in the training step: each dropout draws its own stream (seed plus
// its ordinal times 2^32) at the step counter's position, and its gradient is
// the same dropout of the incoming gradient; eval_step has no dropout.

// CHECK-LABEL: func.func @train_step
// CHECK-SAME: %[[STEP:[a-z0-9]+]]: tensor<i64> {loom.state = "step"}
// CHECK-DAG: loom.dropout %{{.*}} offset %[[STEP]] {ratio = 5.000000e-01 : f64, seed = 7 : i64}
// CHECK-DAG: loom.dropout %{{.*}} offset %[[STEP]] {ratio = 2.500000e-01 : f64, seed = 4294967296 : i64}
// The backward pass: the second dropout's, then the first's, same streams.
// CHECK: loom.dropout %{{.*}} offset %[[STEP]] {ratio = 2.500000e-01 : f64, seed = 4294967296 : i64}
// CHECK: loom.dropout %{{.*}} offset %[[STEP]] {ratio = 5.000000e-01 : f64, seed = 7 : i64}
// CHECK-LABEL: func.func @eval_step
// CHECK-NOT: loom.dropout
// CHECK: return

// With two micro-batches per step, micro-batch m of step s draws at 2s + m.
// ACCUM-LABEL: func.func @train_step
// ACCUM-SAME: %[[STEP:[a-z0-9]+]]: tensor<i64> {loom.state = "step"}, %[[MICRO:[a-z0-9]+]]: tensor<i64> {loom.state = "micro_step"}
// ACCUM: %[[TWO:.*]] = loom.constant dense<2> : tensor<i64>
// ACCUM: %[[SCALED:.*]] = loom.mul %[[STEP]], %[[TWO]]
// ACCUM: %[[POS:.*]] = loom.add %[[SCALED]], %[[MICRO]]
// ACCUM: loom.dropout %{{.*}} offset %[[POS]]
func.func @mlp(%x: tensor<4x3xf32> {loom.input = "x"},
               %w1: tensor<3x3xf32> {loom.param = "w1", loom.init = dense<0.5> : tensor<3x3xf32>},
               %w2: tensor<3x3xf32> {loom.param = "w2", loom.init = dense<0.25> : tensor<3x3xf32>})
    -> (tensor<4x3xf32> {loom.output = "logits"}) {
  %0 = loom.matmul %x, %w1 : (tensor<4x3xf32>, tensor<3x3xf32>) -> tensor<4x3xf32>
  %1:2 = loom.dropout %0 {ratio = 0.5 : f64, seed = 7 : i64} : (tensor<4x3xf32>) -> (tensor<4x3xf32>, tensor<4x3xi1>)
  %2 = loom.matmul %1#0, %w2 : (tensor<4x3xf32>, tensor<3x3xf32>) -> tensor<4x3xf32>
  %3:2 = loom.dropout %2 {ratio = 0.25 : f64} : (tensor<4x3xf32>) -> (tensor<4x3xf32>, tensor<4x3xi1>)
  return %3#0 : tensor<4x3xf32>
}
