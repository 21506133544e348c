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

// CHECK-DAG: #[[LHS:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>
// CHECK-DAG: #[[RHS:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (0, d1, d4, d3)>
// CHECK-DAG: #[[OUT:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>
// CHECK-LABEL: func @batched_matmul_broadcasts
func.func @batched_matmul_broadcasts(%x: tensor<4x2x3x8xf32>, %y: tensor<1x2x8x5xf32>) -> tensor<4x2x3x5xf32> {
  // The right operand broadcasts over batch dimension 0; k is the reduction.
  // CHECK: %[[Z:.*]] = linalg.fill
  // CHECK: linalg.generic {indexing_maps = [#[[LHS]], #[[RHS]], #[[OUT]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
  // CHECK-SAME: outs(%[[Z]] : tensor<4x2x3x5xf32>)
  // CHECK: arith.mulf
  // CHECK: arith.addf
  %0 = loom.matmul %x, %y : (tensor<4x2x3x8xf32>, tensor<1x2x8x5xf32>) -> tensor<4x2x3x5xf32>
  return %0 : tensor<4x2x3x5xf32>
}

// -----

// CHECK-LABEL: func @matmul_with_weights_is_named
// CHECK-SAME: (%[[X:.*]]: tensor<4x2x8xf32>, %[[W:.*]]: tensor<16x8xf32>)
func.func @matmul_with_weights_is_named(%x: tensor<4x2x8xf32>, %w: tensor<16x8xf32>) -> tensor<4x2x16xf32> {
  // An f32 product with a matrix on the right: the batch folds into the rows
  // and one linalg.matmul (transposed weights through its indexing maps)
  // remains for the runtime's GEMM.
  // CHECK: %[[FLAT:.*]] = tensor.collapse_shape %[[X]] {{\[}}[0, 1], [2]] : tensor<4x2x8xf32> into tensor<8x8xf32>
  // CHECK: %[[MM:.*]] = linalg.matmul indexing_maps = [#{{.*}}, #{{.*}}, #{{.*}}] ins(%[[FLAT]], %[[W]] : tensor<8x8xf32>, tensor<16x8xf32>) outs(%{{.*}} : tensor<8x16xf32>)
  // CHECK: tensor.expand_shape %[[MM]] {{\[}}[0, 1], [2]] output_shape [4, 2, 16]
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

// ceil(0.3 * 2^24) = 5033165: the 24 high bits of each draw must reach it.
// CHECK-LABEL: func @dropout
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>, %[[STEP:.*]]: tensor<i64>)
func.func @dropout(%x: tensor<2x3xf32>, %step: tensor<i64>) -> (tensor<2x3xf32>, tensor<2x3xi1>) {
  // CHECK-DAG: %[[T:.*]] = arith.constant 5033165 : i64
  // CHECK-DAG: %[[SEED:.*]] = arith.constant 9 : i64
  // CHECK: tensor.extract %[[STEP]][] : tensor<i64>
  // CHECK: arith.addi %{{.*}}, %[[SEED]] : i64
  // CHECK: linalg.generic
  // CHECK-SAME: ins(%[[X]] : tensor<2x3xf32>) outs(%{{.*}}, %{{.*}} : tensor<2x3xf32>, tensor<2x3xi1>)
  // CHECK: linalg.index 0
  // CHECK: linalg.index 1
  // CHECK: arith.cmpi uge, %{{.*}}, %[[T]] : i64
  // CHECK: arith.select
  %0:2 = loom.dropout %x offset %step {ratio = 0.3 : f64, seed = 9 : i64} : (tensor<2x3xf32>, tensor<i64>) -> (tensor<2x3xf32>, tensor<2x3xi1>)
  return %0#0, %0#1 : tensor<2x3xf32>, tensor<2x3xi1>
}

// -----

// A sharding annotation left for partitioning has no code of its own.
loom.mesh @mesh = <dp = 2>
func.func @annotation_has_no_lowering(%x: tensor<2x4x4xf32>) -> tensor<2x4x4xf32> {
  // expected-error @+1 {{'loom.shard' op has no CPU lowering yet}}
  %0 = loom.shard %x to <@mesh, [{dp}, {}, {}]> : tensor<2x4x4xf32>
  return %0 : tensor<2x4x4xf32>
}

// -----

// Training-mode batch norm is decomposed into loom reductions and
// elementwise ops, which lower in turn.
// CHECK-LABEL: func.func @batch_norm_train
// CHECK-NOT: loom.
// CHECK: linalg.generic
func.func @batch_norm_train(%x: tensor<2x3x4xf32>, %c: tensor<3xf32>) -> (tensor<2x3x4xf32>, tensor<3xf32>) {
  %0:5 = loom.batch_norm_train %x, %c, %c, %c, %c {epsilon = 1.0e-5 : f64, momentum = 0.9 : f64} : (tensor<2x3x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<2x3x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>)
  return %0#0, %0#2 : tensor<2x3x4xf32>, tensor<3xf32>
}

// -----

// An LSTM becomes a loop over time: the input projection for every step is
// one matmul before the loop; each step does the recurrent matmul.
// CHECK-LABEL: func @lstm_unrolls_over_time
func.func @lstm_unrolls_over_time(%x: tensor<5x2x3xf32>, %w: tensor<1x16x3xf32>, %r: tensor<1x16x4xf32>) -> tensor<5x1x2x4xf32> {
  // CHECK: linalg.matmul
  // CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(
  // CHECK: tensor.extract_slice
  // CHECK: tensor.insert_slice
  // CHECK: scf.yield
  // CHECK-NOT: loom.
  %0:3 = loom.lstm forward %x, %w, %r {hidden_size = 4 : i64} : (tensor<5x2x3xf32>, tensor<1x16x3xf32>, tensor<1x16x4xf32>) -> (tensor<5x1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>)
  return %0#0 : tensor<5x1x2x4xf32>
}

// -----

// Other than f32 2-D convolutions: one generic with the group arithmetic in
// its input map.
// CHECK-DAG: #[[IN:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, (d1 floordiv 2) * 2 + d4, d2 * 2 + d5, d3 * 2 + d6)>
// CHECK-DAG: #[[W:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d1, d4, d5, d6)>
// CHECK-LABEL: func @grouped_strided_conv_f64
func.func @grouped_strided_conv_f64(%x: tensor<1x4x8x8xf64>, %w: tensor<4x2x3x3xf64>) -> tensor<1x4x4x4xf64> {
  // Groups of 2 input channels per 2 filters; padding 1 becomes a tensor.pad.
  // CHECK: tensor.pad %{{.*}} low[0, 0, 1, 1] high[0, 0, 1, 1]
  // CHECK: linalg.generic {indexing_maps = [#[[IN]], #[[W]], #{{.*}}], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
  %0 = loom.conv %x, %w {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 2 : i64} : (tensor<1x4x8x8xf64>, tensor<4x2x3x3xf64>) -> tensor<1x4x4x4xf64>
  return %0 : tensor<1x4x4x4xf64>
}

// -----

// f32 2-D convolutions become the named grouped convolution (the runtime's
// im2col + GEMM kernel after bufferization) between reshapes.
// CHECK-LABEL: func @grouped_strided_conv
func.func @grouped_strided_conv(%x: tensor<1x4x8x8xf32>, %w: tensor<4x2x3x3xf32>) -> tensor<1x4x4x4xf32> {
  // CHECK: %[[P:.*]] = tensor.pad %{{.*}} low[0, 0, 1, 1] high[0, 0, 1, 1]
  // CHECK: %[[I:.*]] = tensor.expand_shape %[[P]] {{\[\[}}0], [1, 2], [3], [4]] output_shape [1, 2, 2, 10, 10]
  // CHECK: %[[F:.*]] = tensor.expand_shape %{{.*}} {{\[\[}}0, 1], [2], [3], [4]] output_shape [2, 2, 2, 3, 3]
  // CHECK: %[[C:.*]] = linalg.conv_2d_ngchw_gfchw {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>} ins(%[[I]], %[[F]] : tensor<1x2x2x10x10xf32>, tensor<2x2x2x3x3xf32>)
  // CHECK: tensor.collapse_shape %[[C]] {{\[\[}}0], [1, 2], [3], [4]] : tensor<1x2x2x4x4xf32> into tensor<1x4x4x4xf32>
  %0 = loom.conv %x, %w {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 2 : i64} : (tensor<1x4x8x8xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x4x4xf32>
  return %0 : tensor<1x4x4x4xf32>
}
