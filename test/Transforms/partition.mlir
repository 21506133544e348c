// RUN: loom-opt %s --split-input-file --verify-diagnostics --loom-propagate-sharding --loom-partition | FileCheck %s

// Data parallelism on a linear layer: the forward runs on the local half of
// the batch; the weight gradient contracts over the split batch, so its
// partial sums are all-reduced before they meet the replicated weight in the
// update. The mean loss is an average of the per-device means.

loom.mesh @mesh = <dp = 2>
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: (%[[X:.*]]: tensor<4x3xf32> {loom.sharding = #loom.sharding<@mesh, [{dp}, {}]>}, %[[W:.*]]: tensor<3x2xf32>)
// CHECK-SAME: -> (tensor<f32>, tensor<3x2xf32>)
func.func @train_step(
    %x: tensor<8x3xf32> {loom.sharding = #loom.sharding<@mesh, [{dp}, {}]>},
    %w: tensor<3x2xf32>) -> (tensor<f32>, tensor<3x2xf32>) {
  // CHECK: %[[Y:.*]] = loom.matmul %[[X]], %[[W]] : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  %y = loom.matmul %x, %w : (tensor<8x3xf32>, tensor<3x2xf32>) -> tensor<8x2xf32>
  // CHECK: %[[L:.*]] = loom.reduce_mean %[[Y]] {{.*}} -> tensor<f32>
  // CHECK: %[[LOSS:.*]] = loom.all_reduce avg %[[L]] on @mesh ["dp"] : tensor<f32>
  %loss = loom.reduce_mean %y {axes = array<i64>} : (tensor<8x2xf32>) -> tensor<f32>
  // CHECK: %[[G:.*]] = loom.matmul %[[X]], %[[Y]] {transpose_lhs} : (tensor<4x3xf32>, tensor<4x2xf32>) -> tensor<3x2xf32>
  // CHECK: %[[GRAD:.*]] = loom.all_reduce sum %[[G]] on @mesh ["dp"] : tensor<3x2xf32>
  %g = loom.matmul %x, %y {transpose_lhs} : (tensor<8x3xf32>, tensor<8x2xf32>) -> tensor<3x2xf32>
  // CHECK: %[[NEW:.*]] = loom.sub %[[W]], %[[GRAD]]
  %new = loom.sub %w, %g : (tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<3x2xf32>
  // CHECK: return %[[LOSS]], %[[NEW]]
  return %loss, %new : tensor<f32>, tensor<3x2xf32>
}

// -----

// Splat constants shrink to the local block; a full-width slice keeps its
// limits in step with the local size; results that stay split say so.

loom.mesh @mesh = <dp = 2>
// CHECK-LABEL: func.func @local_shapes
// CHECK-SAME: -> (tensor<4x2xf32> {loom.sharding = #loom.sharding<@mesh, [{dp}, {}]>})
func.func @local_shapes(
    %x: tensor<8x4xf32> {loom.sharding = #loom.sharding<@mesh, [{dp}, {}]>}) -> tensor<8x2xf32> {
  // CHECK: %[[C:.*]] = loom.constant dense<2.000000e+00> : tensor<4x4xf32>
  %c = loom.constant dense<2.0> : tensor<8x4xf32>
  %y = loom.mul %c, %x : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
  // CHECK: loom.slice %{{.*}} {limits = array<i64: 4, 3>, starts = array<i64: 0, 1>, steps = array<i64: 1, 1>} : tensor<4x4xf32> -> tensor<4x2xf32>
  %s = loom.slice %y {starts = array<i64: 0, 1>, limits = array<i64: 8, 3>, steps = array<i64: 1, 1>} : tensor<8x4xf32> -> tensor<8x2xf32>
  return %s : tensor<8x2xf32>
}

// -----

// An op that needs the split dimension whole gets it gathered first.

loom.mesh @mesh = <dp = 2>
// CHECK-LABEL: func.func @gather_for_softmax
func.func @gather_for_softmax(
    %x: tensor<8x4xf32> {loom.sharding = #loom.sharding<@mesh, [{dp}, {}]>}) -> tensor<8x4xf32> {
  // CHECK: %[[E:.*]] = loom.exp %{{.*}} : tensor<4x4xf32>
  %e = loom.exp %x : tensor<8x4xf32>
  // CHECK: %[[ALL:.*]] = loom.all_gather %[[E]] on @mesh ["dp"] {gather_dim = 0 : i64} : tensor<4x4xf32> -> tensor<8x4xf32>
  // CHECK: loom.softmax %[[ALL]] {axis = 0 : i64} : tensor<8x4xf32>
  %y = loom.softmax %e {axis = 0 : i64} : tensor<8x4xf32>
  return %y : tensor<8x4xf32>
}

// -----

// Dropout has no sharding rule (its mask depends on the global element
// index), so it computes whole; using its output with a split value would
// need the device's index, which is an error.

loom.mesh @mesh = <dp = 2>
func.func @whole_meets_split(
    %x: tensor<8x4xf32> {loom.sharding = #loom.sharding<@mesh, [{dp}, {}]>},
    %r: tensor<8x4xf32>) -> tensor<8x4xf32> {
  // expected-note @+1 {{computed here}}
  %d, %mask = loom.dropout %r {ratio = 5.000000e-01 : f64} : (tensor<8x4xf32>) -> (tensor<8x4xf32>, tensor<8x4xi1>)
  // expected-error @+1 {{cannot partition: operand #1 must be split along dimension 0 over mesh axis {dp}, but it is computed whole}}
  %y = loom.add %x, %d : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
  return %y : tensor<8x4xf32>
}
