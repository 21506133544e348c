// RUN: loom-opt %s --split-input-file --loom-widen-gradients | FileCheck %s

// Two bf16 products summed, reshaped and transposed, and only then widened:
// the widening moves up through the data movement and the sum, and both
// products return their f32 accumulator. The marks of the widening
// (loom.gradient) go to the op that now defines the f32 value; the casts
// the pass inserts on the way take the marks of the op they feed
// (loom.stage), not its gradient mark.
// CHECK-LABEL: func.func @sum_of_products
// CHECK-NEXT: %[[P:.*]] = loom.matmul %arg0, %arg1 {loom.stage = 1 : i64} : (tensor<4x8xbf16>, tensor<8x8xbf16>) -> tensor<4x8xf32>
// CHECK-NEXT: %[[Q:.*]] = loom.matmul %arg0, %arg1 {loom.stage = 1 : i64, transpose_rhs} : (tensor<4x8xbf16>, tensor<8x8xbf16>) -> tensor<4x8xf32>
// CHECK-NEXT: %[[S:.*]] = loom.add %[[P]], %[[Q]] {loom.stage = 1 : i64} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT: %[[R:.*]] = loom.reshape %[[S]] {loom.stage = 1 : i64} : tensor<4x8xf32> -> tensor<8x4xf32>
// CHECK-NEXT: %[[T:.*]] = loom.transpose %[[R]] {loom.gradient = "w", loom.stage = 1 : i64, perm = array<i64: 1, 0>} : tensor<8x4xf32> -> tensor<4x8xf32>
// CHECK-NEXT: return %[[T]]
func.func @sum_of_products(%x: tensor<4x8xbf16>, %w: tensor<8x8xbf16>) -> tensor<4x8xf32> {
  %p = loom.matmul %x, %w {loom.stage = 1 : i64} : (tensor<4x8xbf16>, tensor<8x8xbf16>) -> tensor<4x8xbf16>
  %q = loom.matmul %x, %w {loom.stage = 1 : i64, transpose_rhs} : (tensor<4x8xbf16>, tensor<8x8xbf16>) -> tensor<4x8xbf16>
  %s = loom.add %p, %q {loom.stage = 1 : i64} : (tensor<4x8xbf16>, tensor<4x8xbf16>) -> tensor<4x8xbf16>
  %r = loom.reshape %s {loom.stage = 1 : i64} : tensor<4x8xbf16> -> tensor<8x4xbf16>
  %t = loom.transpose %r {loom.stage = 1 : i64, perm = array<i64: 1, 0>} : tensor<8x4xbf16> -> tensor<4x8xbf16>
  %w32 = loom.cast %t {loom.gradient = "w", loom.stage = 1 : i64} : tensor<4x8xbf16> -> tensor<4x8xf32>
  return %w32 : tensor<4x8xf32>
}

// -----

// A product that something also reads in bf16 stays rounded (the bf16
// reader sees what it saw), and so does a sum with one bf16 reader: only
// values whose every use widens them change.
// CHECK-LABEL: func.func @other_uses
// CHECK: loom.matmul {{.*}} -> tensor<4x8xbf16>
// CHECK: loom.relu {{.*}} : tensor<4x8xbf16>
// CHECK: loom.cast {{.*}} : tensor<4x8xbf16> -> tensor<4x8xf32>
func.func @other_uses(%x: tensor<4x8xbf16>, %w: tensor<8x8xbf16>) -> (tensor<4x8xf32>, tensor<4x8xbf16>) {
  %p = loom.matmul %x, %w : (tensor<4x8xbf16>, tensor<8x8xbf16>) -> tensor<4x8xbf16>
  %r = loom.relu %p : tensor<4x8xbf16>
  %c = loom.cast %p : tensor<4x8xbf16> -> tensor<4x8xf32>
  return %c, %r : tensor<4x8xf32>, tensor<4x8xbf16>
}

// -----

// A bf16 value that is not a product or a sum (an activation) keeps its
// widening cast; a narrowing and a widening do not cancel (the rounding is
// the point).
// CHECK-LABEL: func.func @not_a_product
// CHECK-NEXT: %[[N:.*]] = loom.cast %arg0 : tensor<4x8xf32> -> tensor<4x8xbf16>
// CHECK-NEXT: %[[R:.*]] = loom.relu %[[N]] : tensor<4x8xbf16>
// CHECK-NEXT: %[[W:.*]] = loom.cast %[[R]] : tensor<4x8xbf16> -> tensor<4x8xf32>
// CHECK-NEXT: return %[[W]]
func.func @not_a_product(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %n = loom.cast %x : tensor<4x8xf32> -> tensor<4x8xbf16>
  %r = loom.relu %n : tensor<4x8xbf16>
  %w = loom.cast %r : tensor<4x8xbf16> -> tensor<4x8xf32>
  return %w : tensor<4x8xf32>
}
