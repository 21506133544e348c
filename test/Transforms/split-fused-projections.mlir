// RUN: loom-opt %s --split-input-file --loom-split-fused-projections | FileCheck %s

// A fused QKV projection (PyTorch's layout, weight [3C, K] read transposed,
// the bias added first) becomes one product per part over slices of the
// weight viewed as [3, C, K] and the bias as [3, C]; the views keep the
// ONNX shapes for checkpoints and their initial values.
// CHECK-LABEL: func.func @qkv
// CHECK-SAME: %[[X:[^:]*]]: tensor<2x4xf32>
// CHECK-SAME: %[[W:[^:]*]]: tensor<3x4x4xf32> {loom.init = dense<{{.*}}> : tensor<3x4x4xf32>, loom.logical_shape = array<i64: 12, 4>, loom.param = "qkv.weight"}
// CHECK-SAME: %[[B:[^:]*]]: tensor<3x4xf32> {loom.init = dense<{{.*}}> : tensor<3x4xf32>, loom.logical_shape = array<i64: 12>, loom.param = "qkv.bias"}
// CHECK: %[[W0:.*]] = loom.slice %[[W]] {limits = array<i64: 1, 4, 4>, starts = array<i64: 0, 0, 0>, steps = array<i64: 1, 1, 1>}
// CHECK: %[[W0R:.*]] = loom.reshape %[[W0]] : tensor<1x4x4xf32> -> tensor<4x4xf32>
// CHECK: %[[Q:.*]] = loom.matmul %[[X]], %[[W0R]] {transpose_rhs} : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
// CHECK: %[[B0:.*]] = loom.slice %[[B]] {limits = array<i64: 1, 4>, starts = array<i64: 0, 0>
// CHECK: %[[B0R:.*]] = loom.reshape %[[B0]] : tensor<1x4xf32> -> tensor<4xf32>
// CHECK: %[[QB:.*]] = loom.add %[[B0R]], %[[Q]]
// CHECK: loom.slice %[[W]] {limits = array<i64: 2, 4, 4>, starts = array<i64: 1, 0, 0>
// CHECK: loom.slice %[[W]] {limits = array<i64: 3, 4, 4>, starts = array<i64: 2, 0, 0>
// CHECK-NOT: loom.split
// CHECK: return %[[QB]], %{{.*}}, %{{.*}} : tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>
func.func @qkv(%x: tensor<2x4xf32> {loom.input = "x"},
               %w: tensor<12x4xf32> {loom.param = "qkv.weight", loom.init = dense<0.5> : tensor<12x4xf32>},
               %b: tensor<12xf32> {loom.param = "qkv.bias", loom.init = dense<0.25> : tensor<12xf32>})
    -> (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>) {
  %y = loom.matmul %x, %w {transpose_rhs} : (tensor<2x4xf32>, tensor<12x4xf32>) -> tensor<2x12xf32>
  %z = loom.add %b, %y : (tensor<12xf32>, tensor<2x12xf32>) -> tensor<2x12xf32>
  %q, %k, %v = loom.split %z {axis = 1 : i64, sizes = array<i64: 4, 4, 4>} : (tensor<2x12xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>)
  return %q, %k, %v : tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>
}

// -----

// Without a bias, with the weight as [K, 2C] (not transposed): the view is
// [K, 2, C], sliced along its middle dimension.
// CHECK-LABEL: func.func @kv_plain
// CHECK-SAME: tensor<4x2x3xf32> {loom.init = dense<1.000000e+00> : tensor<4x2x3xf32>, loom.logical_shape = array<i64: 4, 6>, loom.param = "kv"}
// CHECK: loom.slice %{{.*}} {limits = array<i64: 4, 1, 3>, starts = array<i64: 0, 0, 0>
// CHECK: loom.reshape %{{.*}} : tensor<4x1x3xf32> -> tensor<4x3xf32>
// CHECK: loom.matmul %{{.*}}, %{{.*}} : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
// CHECK: loom.slice %{{.*}} {limits = array<i64: 4, 2, 3>, starts = array<i64: 0, 1, 0>
func.func @kv_plain(%x: tensor<2x4xf32> {loom.input = "x"},
                    %w: tensor<4x6xf32> {loom.param = "kv", loom.init = dense<1.0> : tensor<4x6xf32>})
    -> (tensor<2x3xf32>, tensor<2x3xf32>) {
  %y = loom.matmul %x, %w : (tensor<2x4xf32>, tensor<4x6xf32>) -> tensor<2x6xf32>
  %k, %v = loom.split %y {axis = 1 : i64, sizes = array<i64: 3, 3>} : (tensor<2x6xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>)
  return %k, %v : tensor<2x3xf32>, tensor<2x3xf32>
}

// -----

// Left alone: unequal parts, and a weight something else also reads.
// CHECK-LABEL: func.func @not_fused
// CHECK-COUNT-2: loom.split
func.func @not_fused(%x: tensor<2x4xf32> {loom.input = "x"},
                     %w: tensor<4x6xf32> {loom.param = "w", loom.init = dense<1.0> : tensor<4x6xf32>},
                     %u: tensor<4x6xf32> {loom.param = "u", loom.init = dense<1.0> : tensor<4x6xf32>})
    -> (tensor<2x2xf32>, tensor<2x4xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<4x6xf32>) {
  %y = loom.matmul %x, %w : (tensor<2x4xf32>, tensor<4x6xf32>) -> tensor<2x6xf32>
  %a, %b = loom.split %y {axis = 1 : i64, sizes = array<i64: 2, 4>} : (tensor<2x6xf32>) -> (tensor<2x2xf32>, tensor<2x4xf32>)
  %z = loom.matmul %x, %u : (tensor<2x4xf32>, tensor<4x6xf32>) -> tensor<2x6xf32>
  %c, %d = loom.split %z {axis = 1 : i64, sizes = array<i64: 3, 3>} : (tensor<2x6xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>)
  return %a, %b, %c, %d, %u : tensor<2x2xf32>, tensor<2x4xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<4x6xf32>
}
