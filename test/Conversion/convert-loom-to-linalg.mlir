// RUN: loom-opt %s --split-input-file --loom-convert-loom-to-linalg --verify-diagnostics | FileCheck %s

// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[ROW:.*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-DAG: #[[COL:.*]] = affine_map<(d0, d1) -> (d0, 0)>
// CHECK-LABEL: func @broadcasting_add
// CHECK-SAME: (%[[A:.*]]: tensor<2x3xf32>, %[[B:.*]]: tensor<3xf32>, %[[C:.*]]: tensor<2x1xf32>)
func.func @broadcasting_add(%a: tensor<2x3xf32>, %b: tensor<3xf32>, %c: tensor<2x1xf32>) -> tensor<2x3xf32> {
  // CHECK: %[[E:.*]] = tensor.empty() : tensor<2x3xf32>
  // CHECK: linalg.generic {indexing_maps = [#[[ID]], #[[ROW]], #[[ID]]], iterator_types = ["parallel", "parallel"]}
  // CHECK-SAME: ins(%[[A]], %[[B]] : tensor<2x3xf32>, tensor<3xf32>) outs(%[[E]] : tensor<2x3xf32>)
  // CHECK: arith.addf
  // CHECK: linalg.generic {indexing_maps = [#[[ID]], #[[COL]], #[[ID]]]
  // CHECK-NOT: loom.
  %0 = loom.add %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %1 = loom.add %0, %c : (tensor<2x3xf32>, tensor<2x1xf32>) -> tensor<2x3xf32>
  return %1 : tensor<2x3xf32>
}

// -----

// CHECK-DAG: #[[LHS:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
// CHECK-DAG: #[[RHS:.*]] = affine_map<(d0, d1, d2, d3) -> (d2, d3)>
// CHECK-DAG: #[[OUT:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
// CHECK-LABEL: func @batched_matmul_transposed_weights
func.func @batched_matmul_transposed_weights(%x: tensor<4x2x8xf32>, %w: tensor<16x8xf32>) -> tensor<4x2x16xf32> {
  // The weight broadcasts over the batch; k is the reduction dimension.
  // CHECK: %[[Z:.*]] = linalg.fill
  // CHECK: linalg.generic {indexing_maps = [#[[LHS]], #[[RHS]], #[[OUT]]], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
  // CHECK-SAME: outs(%[[Z]] : tensor<4x2x16xf32>)
  // CHECK: arith.mulf
  // CHECK: arith.addf
  %0 = loom.matmul %x, %w {transpose_rhs} : (tensor<4x2x8xf32>, tensor<16x8xf32>) -> tensor<4x2x16xf32>
  return %0 : tensor<4x2x16xf32>
}

// -----

// CHECK-LABEL: func @layout_ops
func.func @layout_ops(%x: tensor<2x3x4xf32>) -> (tensor<4x2x3xf32>, tensor<6x4xf32>, tensor<2x1x4xf32>) {
  // CHECK: linalg.transpose ins(%{{.*}} : tensor<2x3x4xf32>) outs(%{{.*}} : tensor<4x2x3xf32>) permutation = [2, 0, 1]
  %0 = loom.transpose %x {perm = array<i64: 2, 0, 1>} : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
  // CHECK: tensor.collapse_shape %{{.*}} {{\[}}[0, 1, 2]] : tensor<2x3x4xf32> into tensor<24xf32>
  // CHECK: tensor.expand_shape %{{.*}} {{\[}}[0, 1]] output_shape [6, 4] : tensor<24xf32> into tensor<6x4xf32>
  %1 = loom.reshape %x : tensor<2x3x4xf32> -> tensor<6x4xf32>
  // CHECK: tensor.extract_slice %{{.*}}[0, 2, 0] [2, 1, 4] [1, 1, 1]
  %2:2 = loom.split %x {axis = 1 : i64, sizes = array<i64: 2, 1>} : (tensor<2x3x4xf32>) -> (tensor<2x2x4xf32>, tensor<2x1x4xf32>)
  return %0, %1, %2#1 : tensor<4x2x3xf32>, tensor<6x4xf32>, tensor<2x1x4xf32>
}

// -----

func.func @conv_has_no_lowering_yet(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32> {
  // expected-error @+1 {{'loom.conv' op has no CPU lowering yet}}
  %0 = loom.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  return %0 : tensor<1x4x6x6xf32>
}
