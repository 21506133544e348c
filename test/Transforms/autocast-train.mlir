// RUN: loom-opt %s --loom-autocast --loom-build-train-step="loss=cross-entropy:labels optimizer=sgd lr=0.1" | FileCheck %s
// RUN: loom-opt %s --loom-autocast --loom-build-train-step="loss=cross-entropy:labels optimizer=sgd lr=0.1" --loom-widen-gradients | FileCheck %s --check-prefix=WIDE

// The training step differentiates through the casts: the weight's
// gradient is a bf16 product cast back to f32 before the update, and the
// parameters, their gradients and the loss stay f32.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: -> (tensor<f32> {loom.output = "loss"}, tensor<f32> {loom.output = "lr"}, tensor<8x8xf32> {{.*}}, tensor<8xf32>
// CHECK: loom.softmax_cross_entropy mean {{.*}} : (tensor<4x8xf32>, tensor<4xi64>) -> (tensor<f32>, tensor<4x8xf32>)
// CHECK: loom.matmul {{.*}} {transpose_lhs} : (tensor<4x8xbf16>, tensor<4x8xbf16>) -> tensor<8x8xbf16>
// CHECK: loom.cast {{.*}} {loom.gradient = "w"} : tensor<8x8xbf16> -> tensor<8x8xf32>

// loom-widen-gradients (as loomc runs it): each of the weight's two gradient
// products returns its f32 accumulator and their sum, the parameter's
// gradient, is f32.
// WIDE-LABEL: func.func @train_step
// WIDE: %[[D1:.*]] = loom.matmul {{.*}} {transpose_lhs} : (tensor<4x8xbf16>, tensor<4x8xbf16>) -> tensor<8x8xf32>
// WIDE: %[[D2:.*]] = loom.matmul {{.*}} {transpose_lhs} : (tensor<4x8xbf16>, tensor<4x8xbf16>) -> tensor<8x8xf32>
// WIDE-NEXT: loom.add %[[D1]], %[[D2]] {loom.gradient = "w"} : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
func.func @mlp(%x: tensor<4x8xf32> {loom.input = "x"},
               %w: tensor<8x8xf32> {loom.param = "w", loom.init = dense<0.5> : tensor<8x8xf32>},
               %b: tensor<8xf32> {loom.param = "b", loom.init = dense<0.0> : tensor<8xf32>})
    -> (tensor<4x8xf32> {loom.output = "logits"}) {
  %y = loom.matmul %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %z = loom.add %y, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %s = loom.softmax %z {axis = 1 : i64} : tensor<4x8xf32>
  %v = loom.matmul %s, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  return %v : tensor<4x8xf32>
}

