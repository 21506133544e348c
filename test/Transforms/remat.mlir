// RUN: loom-opt %s --loom-build-train-step="loss=cross-entropy:labels optimizer=sgd lr=0.1" --loom-remat="mode=none" | FileCheck %s --check-prefix=NONE
// RUN: loom-opt %s --loom-build-train-step="loss=cross-entropy:labels optimizer=sgd lr=0.1" --loom-remat="mode=full report=true" | FileCheck %s --check-prefix=FULL
// RUN: loom-opt %s --loom-build-train-step="loss=cross-entropy:labels optimizer=sgd lr=0.1" --loom-remat="mode=selective report=true" | FileCheck %s --check-prefix=SEL
// RUN: loom-opt %s --loom-build-train-step="loss=cross-entropy:labels optimizer=sgd lr=0.1" --loom-remat="mode=layers layers=/net/layers.1 selective-layers=/net/layers.0 report=true" | FileCheck %s --check-prefix=MIXED
// RUN: not loom-opt %s --loom-build-train-step="loss=cross-entropy:labels optimizer=sgd lr=0.1" --loom-remat="mode=layers layers=/net/blocks.1" 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not loom-opt %s --loom-build-train-step="loss=cross-entropy:labels optimizer=sgd lr=0.1" --loom-remat="mode=some" 2>&1 | FileCheck %s --check-prefix=MODE
// RUN: not loom-opt %s --loom-remat="mode=full" 2>&1 | FileCheck %s --check-prefix=NOSTEP
// RUN: not loom-opt %s --loom-remat="entry=net mode=full" 2>&1 | FileCheck %s --check-prefix=NOLOSS

// Two layers, read from the node names (/net/layers.0/, /net/layers.1/):
// h = x W, t = tanh(h), u = exp(t), out = u * x. The backward pass reads t
// (tanh's gradient) and u (exp's and the product's), not h.

// Without recomputation, layer 1 reads layer 0's output through a barrier
// (as a recomputed copy would) and the backward pass reads the forward
// pass's values.
// NONE-LABEL: func.func @train_step
// NONE:      %[[H0:.*]] = loom.matmul %arg0, %arg1
// NONE-NEXT: %[[T0:.*]] = loom.tanh %[[H0]]
// NONE-NEXT: %[[U0:.*]] = loom.exp %[[T0]]
// NONE-NEXT: %[[O0:.*]] = loom.mul %[[U0]], %arg0
// NONE-NEXT: %[[IN1:.*]] = loom.optimization_barrier %[[O0]]
// NONE-NEXT: %[[H1:.*]] = loom.matmul %[[IN1]], %arg2
// NONE-NEXT: %[[T1:.*]] = loom.tanh %[[H1]]
// NONE-NEXT: %[[U1:.*]] = loom.exp %[[T1]]
// NONE-NEXT: loom.mul %[[U1]], %[[IN1]]
// NONE:      loom.softmax_cross_entropy
// NONE-NOT:  loom.optimization_barrier
// NONE:      loom.mul %{{.*}}, %[[U1]]
// NONE-NOT:  loom.optimization_barrier
// NONE:      loom.mul %[[T1]], %[[T1]]
// NONE-NOT:  loom.optimization_barrier
// NONE:      loom.mul %[[T0]], %[[T0]]
// NONE-LABEL: func.func @eval_step
// NONE-NOT:  loom.optimization_barrier

// Full recomputation: each layer's matmul, tanh and exp are computed again
// from its input and weight right before its backward pass (layer 1's
// first), through barriers; the backward pass reads the copies.
// FULL: recomputation in @train_step: 2 of 2 layers (/net/layers.0, /net/layers.1), 6 ops, 192 FLOPs per step (66.7% of the forward pass's 288)
// FULL-LABEL: func.func @train_step
// FULL:      %[[O0:.*]] = loom.mul %{{.*}}, %arg0
// FULL:      loom.softmax_cross_entropy
// FULL:      %[[IN1:.*]] = loom.optimization_barrier %[[O0]]
// FULL-NEXT: %[[W1:.*]] = loom.optimization_barrier %arg2
// FULL-NEXT: %[[H1:.*]] = loom.matmul %[[IN1]], %[[W1]]
// FULL-NEXT: %[[T1:.*]] = loom.tanh %[[H1]]
// FULL-NEXT: %[[U1:.*]] = loom.exp %[[T1]]
// FULL-NEXT: loom.mul %{{.*}}, %[[U1]]
// FULL:      loom.mul %[[T1]], %[[T1]]
// FULL:      %[[X:.*]] = loom.optimization_barrier %arg0
// FULL-NEXT: %[[W0:.*]] = loom.optimization_barrier %arg1
// FULL-NEXT: %[[H0:.*]] = loom.matmul %[[X]], %[[W0]]
// FULL-NEXT: %[[T0:.*]] = loom.tanh %[[H0]]
// FULL-NEXT: %[[U0:.*]] = loom.exp %[[T0]]
// FULL-NEXT: loom.mul %{{.*}}, %[[U0]]
// FULL:      loom.mul %[[T0]], %[[T0]]

// Selective recomputation keeps the products with parameters; the minimum
// cut keeps t (12 floats) rather than h (12 floats, but then tanh is
// recomputed too) and recomputes u = exp(t).
// SEL: recomputation in @train_step: 2 of 2 layers (/net/layers.0 selectively, /net/layers.1 selectively), 2 ops, 24 FLOPs per step (8.3% of the forward pass's 288)
// SEL-LABEL: func.func @train_step
// SEL:      %[[T0:.*]] = loom.tanh
// SEL:      %[[T1:.*]] = loom.tanh
// SEL:      loom.softmax_cross_entropy
// SEL-NOT:  loom.matmul %{{[a-z0-9]+}}, %{{[a-z0-9]+}} :
// SEL:      %[[T1K:.*]] = loom.optimization_barrier %[[T1]]
// SEL-NEXT: %[[U1:.*]] = loom.exp %[[T1K]]
// SEL-NEXT: loom.mul %{{.*}}, %[[U1]]
// SEL:      loom.mul %[[T1]], %[[T1]]
// SEL-NOT:  loom.matmul %{{[a-z0-9]+}}, %{{[a-z0-9]+}} :
// SEL:      %[[T0K:.*]] = loom.optimization_barrier %[[T0]]
// SEL-NEXT: %[[U0:.*]] = loom.exp %[[T0K]]
// SEL-NEXT: loom.mul %{{.*}}, %[[U0]]
// SEL:      loom.mul %[[T0]], %[[T0]]

// MIXED: recomputation in @train_step: 2 of 2 layers (/net/layers.0 selectively, /net/layers.1), 4 ops, 108 FLOPs per step (37.5% of the forward pass's 288)
// UNKNOWN: error: no layer "/net/blocks.1" to recompute (the layers are /net/layers.0, /net/layers.1)
// MODE: error: remat mode must be none, selective, full or layers, got "some"
// NOSTEP: error: no function @train_step to recompute in
// NOLOSS: error: @net has no result named "loss" computed in it; is it a training step built by loom-build-train-step?

func.func @net(%x: tensor<4x3xf32> {loom.input = "x"},
               %w0: tensor<3x3xf32> {loom.param = "w0", loom.init = dense<0.5> : tensor<3x3xf32>},
               %w1: tensor<3x3xf32> {loom.param = "w1", loom.init = dense<0.25> : tensor<3x3xf32>})
    -> (tensor<4x3xf32> {loom.output = "logits"}) {
  %h0 = loom.matmul %x, %w0 : (tensor<4x3xf32>, tensor<3x3xf32>) -> tensor<4x3xf32> loc("/net/layers.0/fc/MatMul")
  %t0 = loom.tanh %h0 : tensor<4x3xf32> loc("/net/layers.0/Tanh")
  %u0 = loom.exp %t0 : tensor<4x3xf32> loc("/net/layers.0/Exp")
  %o0 = loom.mul %u0, %x : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32> loc("/net/layers.0/Mul")
  %h1 = loom.matmul %o0, %w1 : (tensor<4x3xf32>, tensor<3x3xf32>) -> tensor<4x3xf32> loc("/net/layers.1/fc/MatMul")
  %t1 = loom.tanh %h1 : tensor<4x3xf32> loc("/net/layers.1/Tanh")
  %u1 = loom.exp %t1 : tensor<4x3xf32> loc("/net/layers.1/Exp")
  %o1 = loom.mul %u1, %o0 : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32> loc("/net/layers.1/Mul")
  return %o1 : tensor<4x3xf32>
}
