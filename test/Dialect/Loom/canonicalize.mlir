// RUN: loom-opt %s --split-input-file --canonicalize | FileCheck %s

// CHECK-LABEL: func @transpose_of_transpose_cancels
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
func.func @transpose_of_transpose_cancels(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  // CHECK-NOT: loom.transpose
  // CHECK: return %[[X]]
  %0 = loom.transpose %x {perm = array<i64: 2, 0, 1>} : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
  %1 = loom.transpose %0 {perm = array<i64: 1, 2, 0>} : tensor<4x2x3xf32> -> tensor<2x3x4xf32>
  return %1 : tensor<2x3x4xf32>
}

// -----

// CHECK-LABEL: func @transposes_compose
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
func.func @transposes_compose(%x: tensor<2x3x4xf32>) -> tensor<3x2x4xf32> {
  // [2,3,4] -perm(1,2,0)-> [3,4,2] -perm(0,2,1)-> [3,2,4]: one transpose (1,0,2).
  // CHECK: %[[T:.*]] = loom.transpose %[[X]] {perm = array<i64: 1, 0, 2>}
  // CHECK-NOT: loom.transpose
  // CHECK: return %[[T]]
  %0 = loom.transpose %x {perm = array<i64: 1, 2, 0>} : tensor<2x3x4xf32> -> tensor<3x4x2xf32>
  %1 = loom.transpose %0 {perm = array<i64: 0, 2, 1>} : tensor<3x4x2xf32> -> tensor<3x2x4xf32>
  return %1 : tensor<3x2x4xf32>
}

// -----

// CHECK-LABEL: func @identity_transpose
func.func @identity_transpose(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // CHECK-NOT: loom.transpose
  %0 = loom.transpose %x {perm = array<i64: 0, 1>} : tensor<2x3xf32> -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func @reshape_of_reshape
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
func.func @reshape_of_reshape(%x: tensor<2x3x4xf32>) -> tensor<4x6xf32> {
  // CHECK: %[[R:.*]] = loom.reshape %[[X]] : tensor<2x3x4xf32> -> tensor<4x6xf32>
  // CHECK-NEXT: return %[[R]]
  %0 = loom.reshape %x : tensor<2x3x4xf32> -> tensor<24xf32>
  %1 = loom.reshape %0 : tensor<24xf32> -> tensor<4x6xf32>
  return %1 : tensor<4x6xf32>
}

// -----

// CHECK-LABEL: func @reshape_round_trip_vanishes
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>)
func.func @reshape_round_trip_vanishes(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // CHECK-NOT: loom.reshape
  // CHECK: return %[[X]]
  %0 = loom.reshape %x : tensor<2x3xf32> -> tensor<6xf32>
  %1 = loom.reshape %0 : tensor<6xf32> -> tensor<2x3xf32>
  return %1 : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func @identity_cast_and_expand
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>)
func.func @identity_cast_and_expand(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // CHECK-NOT: loom.cast
  // CHECK-NOT: loom.expand
  // CHECK: return %[[X]]
  %0 = loom.cast %x : tensor<2x3xf32> -> tensor<2x3xf32>
  %1 = loom.expand %0 : tensor<2x3xf32> -> tensor<2x3xf32>
  return %1 : tensor<2x3xf32>
}

// -----

// The shape computation ONNX exporters emit for `x.view(batch, -1)`:
// Shape -> Gather -> Unsqueeze -> Concat folds to a constant.
// CHECK-LABEL: func @shape_arithmetic_folds
func.func @shape_arithmetic_folds() -> tensor<2xi64> {
  // CHECK: %[[C:.*]] = loom.constant dense<[8, -1]> : tensor<2xi64>
  // CHECK-NEXT: return %[[C]]
  %shape = loom.constant dense<[8, 3, 4]> : tensor<3xi64>
  %idx = loom.constant dense<0> : tensor<i64>
  %batch = loom.gather %shape, %idx {axis = 0 : i64} : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
  %b1 = loom.reshape %batch : tensor<i64> -> tensor<1xi64>
  %minus = loom.constant dense<-1> : tensor<1xi64>
  %cat = loom.concat %b1, %minus {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>) -> tensor<2xi64>
  return %cat : tensor<2xi64>
}

// -----

// CHECK-LABEL: func @integer_arithmetic_folds
func.func @integer_arithmetic_folds() -> (tensor<2xi64>, tensor<2xi64>, tensor<2xi1>, tensor<2xf32>) {
  // (6 * 4 - 2) / 5 = 4 and (3 * 4 - 2) / 5 = 2, truncating toward zero;
  // [6, 3] + [6, 3] = [12, 6]; [4, 2] == 2 is [false, true].
  // CHECK-DAG: %[[Q:.*]] = loom.constant dense<[4, 2]> : tensor<2xi64>
  // CHECK-DAG: %[[S:.*]] = loom.constant dense<[12, 6]> : tensor<2xi64>
  // CHECK-DAG: %[[E:.*]] = loom.constant dense<[false, true]> : tensor<2xi1>
  // CHECK-DAG: %[[F:.*]] = loom.constant dense<[6.000000e+00, 3.000000e+00]> : tensor<2xf32>
  // CHECK: return %[[Q]], %[[S]], %[[E]], %[[F]]
  %a = loom.constant dense<[6, 3]> : tensor<2xi64>
  %four = loom.constant dense<4> : tensor<i64>
  %two = loom.constant dense<2> : tensor<i64>
  %five = loom.constant dense<5> : tensor<i64>
  %0 = loom.mul %a, %four : (tensor<2xi64>, tensor<i64>) -> tensor<2xi64>
  %1 = loom.sub %0, %two : (tensor<2xi64>, tensor<i64>) -> tensor<2xi64>
  %2 = loom.div %1, %five : (tensor<2xi64>, tensor<i64>) -> tensor<2xi64>
  %3 = loom.add %a, %a : (tensor<2xi64>, tensor<2xi64>) -> tensor<2xi64>
  %eq = loom.equal %2, %two : (tensor<2xi64>, tensor<i64>) -> tensor<2xi1>
  %f32 = loom.cast %a : tensor<2xi64> -> tensor<2xf32>
  return %2, %3, %eq, %f32 : tensor<2xi64>, tensor<2xi64>, tensor<2xi1>, tensor<2xf32>
}

// -----

// Division by zero is left for run time, not folded.
// CHECK-LABEL: func @division_by_zero_not_folded
func.func @division_by_zero_not_folded() -> tensor<i64> {
  // CHECK: loom.div
  %a = loom.constant dense<6> : tensor<i64>
  %z = loom.constant dense<0> : tensor<i64>
  %0 = loom.div %a, %z : (tensor<i64>, tensor<i64>) -> tensor<i64>
  return %0 : tensor<i64>
}

// -----

// x @ W^T with the weight transposed by an op of its own: the product reads
// W transposed instead.
// CHECK-LABEL: func @transposed_weight_folds_into_matmul
// CHECK-SAME: (%[[X:.*]]: tensor<8x4x16xf32>, %[[W:.*]]: tensor<32x16xf32>)
func.func @transposed_weight_folds_into_matmul(%x: tensor<8x4x16xf32>, %w: tensor<32x16xf32>) -> tensor<8x4x32xf32> {
  // CHECK-NOT: loom.transpose
  // CHECK: loom.matmul %[[X]], %[[W]] {transpose_rhs}
  %t = loom.transpose %w {perm = array<i64: 1, 0>} : tensor<32x16xf32> -> tensor<16x32xf32>
  %y = loom.matmul %x, %t : (tensor<8x4x16xf32>, tensor<16x32xf32>) -> tensor<8x4x32xf32>
  return %y : tensor<8x4x32xf32>
}

// -----

// Transposing an operand that the product already reads transposed cancels,
// on batched operands too.
// CHECK-LABEL: func @transpose_cancels_flag
// CHECK-SAME: (%[[A:.*]]: tensor<3x8x16xf32>, %[[B:.*]]: tensor<3x16x4xf32>)
func.func @transpose_cancels_flag(%a: tensor<3x8x16xf32>, %b: tensor<3x16x4xf32>) -> tensor<3x8x4xf32> {
  // CHECK-NOT: loom.transpose
  // CHECK: loom.matmul %[[A]], %[[B]] :
  %t = loom.transpose %a {perm = array<i64: 0, 2, 1>} : tensor<3x8x16xf32> -> tensor<3x16x8xf32>
  %y = loom.matmul %t, %b {transpose_lhs} : (tensor<3x16x8xf32>, tensor<3x16x4xf32>) -> tensor<3x8x4xf32>
  return %y : tensor<3x8x4xf32>
}

// -----

// A transpose that moves a batch dimension stays.
// CHECK-LABEL: func @batch_transpose_stays
func.func @batch_transpose_stays(%a: tensor<8x3x16xf32>, %b: tensor<3x16x4xf32>) -> tensor<3x8x4xf32> {
  // CHECK: loom.transpose
  // CHECK: loom.matmul
  %t = loom.transpose %a {perm = array<i64: 1, 0, 2>} : tensor<8x3x16xf32> -> tensor<3x8x16xf32>
  %y = loom.matmul %t, %b : (tensor<3x8x16xf32>, tensor<3x16x4xf32>) -> tensor<3x8x4xf32>
  return %y : tensor<3x8x4xf32>
}

// -----

// (A^T G)^T = G^T A: the gradient of a transposed weight comes out in the
// weight's layout.
// CHECK-LABEL: func @transposed_product_swaps_operands
// CHECK-SAME: (%[[A:.*]]: tensor<64x16xf32>, %[[G:.*]]: tensor<64x32xf32>)
func.func @transposed_product_swaps_operands(%a: tensor<64x16xf32>, %g: tensor<64x32xf32>) -> tensor<32x16xf32> {
  // CHECK-NOT: loom.transpose
  // CHECK: loom.matmul %[[G]], %[[A]] {transpose_lhs} : (tensor<64x32xf32>, tensor<64x16xf32>) -> tensor<32x16xf32>
  %p = loom.matmul %a, %g {transpose_lhs} : (tensor<64x16xf32>, tensor<64x32xf32>) -> tensor<16x32xf32>
  %t = loom.transpose %p {perm = array<i64: 1, 0>} : tensor<16x32xf32> -> tensor<32x16xf32>
  return %t : tensor<32x16xf32>
}

// -----

// A product with another use is not recomputed in the other order.
// CHECK-LABEL: func @shared_product_keeps_transpose
func.func @shared_product_keeps_transpose(%a: tensor<4x8xf32>, %b: tensor<8x6xf32>) -> (tensor<4x6xf32>, tensor<6x4xf32>) {
  // CHECK-COUNT-1: loom.matmul
  // CHECK: loom.transpose
  %p = loom.matmul %a, %b : (tensor<4x8xf32>, tensor<8x6xf32>) -> tensor<4x6xf32>
  %t = loom.transpose %p {perm = array<i64: 1, 0>} : tensor<4x6xf32> -> tensor<6x4xf32>
  return %p, %t : tensor<4x6xf32>, tensor<6x4xf32>
}
