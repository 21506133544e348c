// RUN: loom-opt %s --loom-build-train-step="loss=cross-entropy:labels optimizer=sgd lr=0.1" --loom-remat="mode=none" | FileCheck %s --check-prefix=NONE --implicit-check-not='optimization_barrier {{.*}}xi1>'
// RUN: loom-opt %s --loom-build-train-step="loss=cross-entropy:labels optimizer=sgd lr=0.1" --loom-remat="mode=full" | FileCheck %s --check-prefix=FULL --implicit-check-not='optimization_barrier {{.*}}xi1>'
// RUN: loom-opt %s --loom-build-train-step="loss=cross-entropy:labels optimizer=sgd lr=0.1" --loom-remat="mode=selective" | FileCheck %s --check-prefix=SEL --implicit-check-not='optimization_barrier {{.*}}xi1>'

// A boolean mask computed from an input (as a causal mask is compared out
// of one) in layer 0 and read by both layers. It is never read through a
// barrier, which would store it as a tensor of i1 that the loops reading
// it load one byte per element: layer 1's forward pass reads it as it is
// (the layer-input fence skips it), and a recomputed copy computes it
// again from the input.

// NONE-LABEL: func.func @train_step
// NONE:      %[[M:.*]] = loom.greater %arg0, %{{.*}} : (tensor<4x3xf32>, tensor<f32>) -> tensor<4x3xi1>
// NONE:      loom.where %[[M]],
// NONE:      %[[IN1:.*]] = loom.optimization_barrier
// NONE:      loom.matmul %[[IN1]], %arg2
// NONE-NEXT: loom.where %[[M]],

// Full recomputation: layer 1's copy computes the mask again from the
// input (through its barrier, as the copy reads every input).
// FULL-LABEL: func.func @train_step
// FULL:      loom.softmax_cross_entropy
// FULL:      %[[X:.*]] = loom.optimization_barrier %arg0 : tensor<4x3xf32>
// FULL-NEXT: %[[M1:.*]] = loom.greater %[[X]], %{{.*}} : (tensor<4x3xf32>, tensor<f32>) -> tensor<4x3xi1>
// FULL:      loom.where %[[M1]],

// SEL-LABEL: func.func @train_step
// SEL:       loom.softmax_cross_entropy

func.func @net(%x: tensor<4x3xf32> {loom.input = "x"},
               %w0: tensor<3x3xf32> {loom.param = "w0", loom.init = dense<0.5> : tensor<3x3xf32>},
               %w1: tensor<3x3xf32> {loom.param = "w1", loom.init = dense<0.25> : tensor<3x3xf32>})
    -> (tensor<4x3xf32> {loom.output = "logits"}) {
  %zero = loom.constant dense<0.0> : tensor<f32>
  %h0 = loom.matmul %x, %w0 : (tensor<4x3xf32>, tensor<3x3xf32>) -> tensor<4x3xf32> loc("/net/layers.0/fc/MatMul")
  %m0 = loom.greater %x, %zero : (tensor<4x3xf32>, tensor<f32>) -> tensor<4x3xi1> loc("/net/layers.0/Greater")
  %a0 = loom.where %m0, %h0, %zero : (tensor<4x3xi1>, tensor<4x3xf32>, tensor<f32>) -> tensor<4x3xf32> loc("/net/layers.0/Where")
  %t0 = loom.tanh %a0 : tensor<4x3xf32> loc("/net/layers.0/Tanh")
  %o0 = loom.mul %t0, %a0 : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32> loc("/net/layers.0/Mul")
  %h1 = loom.matmul %o0, %w1 : (tensor<4x3xf32>, tensor<3x3xf32>) -> tensor<4x3xf32> loc("/net/layers.1/fc/MatMul")
  %a1 = loom.where %m0, %h1, %zero : (tensor<4x3xi1>, tensor<4x3xf32>, tensor<f32>) -> tensor<4x3xf32> loc("/net/layers.1/Where")
  %t1 = loom.tanh %a1 : tensor<4x3xf32> loc("/net/layers.1/Tanh")
  %o1 = loom.mul %t1, %a1 : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32> loc("/net/layers.1/Mul")
  return %o1 : tensor<4x3xf32>
}
