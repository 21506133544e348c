// RUN: loom-opt %s --loom-bucket-all-reduces | FileCheck %s
// RUN: loom-opt %s --loom-bucket-all-reduces="bucket-bytes=32" | FileCheck %s --check-prefix=SMALL
// RUN: loom-opt %s --loom-bucket-all-reduces="overlap=true" | FileCheck %s --check-prefix=OVERLAP
// RUN: loom-opt %s --loom-bucket-all-reduces="overlap=true" | FileCheck %s --check-prefix=MIXED

// Three gradient all-reduces become one over their concatenation, issued
// where the last gradient is computed (each all-reduce first moves up to its
// operand). The reshape after the bias gradient is moved before its
// all-reduce so that it does not close the bucket. The all-reduce whose
// result is used at once (the loss count) and the average (another
// reduction) stay apart.

loom.mesh @mesh = <dp = 2>
// CHECK-LABEL: func.func @gradients
func.func @gradients(%x: tensor<4x2xf32>, %y: tensor<1x2xf32>, %z: tensor<3xf32>,
                     %count: tensor<f32>, %loss: tensor<f32>)
    -> (tensor<4x2xf32>, tensor<2xf32>, tensor<3xf32>, tensor<f32>, tensor<f32>, tensor<4x2xf32>) {
  // CHECK: %[[C:.*]] = loom.all_reduce sum %{{.*}} : tensor<f32>
  // CHECK: %[[D:.*]] = loom.div %[[C]], %[[C]]
  %c = loom.all_reduce sum %count on @mesh ["dp"] : tensor<f32>
  %d = loom.div %c, %c : (tensor<f32>, tensor<f32>) -> tensor<f32>
  // CHECK: %[[L:.*]] = loom.all_reduce avg
  %l = loom.all_reduce avg %loss on @mesh ["dp"] : tensor<f32>
  // CHECK: %[[GW:.*]] = loom.neg
  // CHECK: %[[GB:.*]] = loom.neg
  // CHECK: %[[GV:.*]] = loom.neg
  // CHECK: loom.exp
  // CHECK: %[[B:.*]] = loom.reshape %[[GB]] : tensor<1x2xf32> -> tensor<2xf32>
  // CHECK: %[[FW:.*]] = loom.reshape %[[GW]] : tensor<4x2xf32> -> tensor<8xf32>
  // CHECK: %[[FV:.*]] = loom.reshape %[[GV]] : tensor<3xf32> -> tensor<3xf32>
  // CHECK: %[[FB:.*]] = loom.reshape %[[B]] : tensor<2xf32> -> tensor<2xf32>
  // CHECK: %[[ALL:.*]] = loom.concat %[[FW]], %[[FV]], %[[FB]] {axis = 0 : i64} : (tensor<8xf32>, tensor<3xf32>, tensor<2xf32>) -> tensor<13xf32>
  // CHECK: %[[R:.*]] = loom.all_reduce sum %[[ALL]] on @mesh ["dp"] : tensor<13xf32>
  // CHECK: %[[P:.*]]:3 = loom.split %[[R]] {axis = 0 : i64, sizes = array<i64: 8, 3, 2>}
  // CHECK: %[[W:.*]] = loom.reshape %[[P]]#0 : tensor<8xf32> -> tensor<4x2xf32>
  // CHECK-NOT: loom.all_reduce
  // CHECK: return %[[W]]
  %gw = loom.neg %x : tensor<4x2xf32>
  %gb = loom.neg %y : tensor<1x2xf32>
  %gv = loom.neg %z : tensor<3xf32>
  %e = loom.exp %x : tensor<4x2xf32>
  %w = loom.all_reduce sum %gw on @mesh ["dp"] : tensor<4x2xf32>
  %b2 = loom.all_reduce sum %gb on @mesh ["dp"] : tensor<1x2xf32>
  %b = loom.reshape %b2 : tensor<1x2xf32> -> tensor<2xf32>
  %v = loom.all_reduce sum %gv on @mesh ["dp"] : tensor<3xf32>
  return %w, %b, %v, %d, %l, %e : tensor<4x2xf32>, tensor<2xf32>, tensor<3xf32>, tensor<f32>, tensor<f32>, tensor<4x2xf32>
}

// A bucket closes when it holds bucket-bytes: 32 bytes fit the weight
// gradient alone, then the vector and the bias share one.
// SMALL-LABEL: func.func @gradients
// SMALL: loom.all_reduce sum %{{.*}} : tensor<f32>
// SMALL: loom.all_reduce avg
// SMALL: loom.all_reduce sum %{{.*}} : tensor<4x2xf32>
// SMALL: loom.all_reduce sum %{{.*}} : tensor<5xf32>
// SMALL-NOT: loom.all_reduce

// With overlap, the count is started and awaited at once (the div needs it),
// the average is started at once and awaited at the return, and the bucket
// starts where its last gradient is computed and is awaited at the return
// (the average's bucket, of another kind, stays open beside it).
// OVERLAP-LABEL: func.func @gradients
// OVERLAP: %[[C:.*]] = loom.all_reduce_start sum %{{.*}} : tensor<1xf32>
// OVERLAP: loom.wait %[[C]] : tensor<1xf32>
// OVERLAP: loom.div
// OVERLAP: %[[L:.*]] = loom.all_reduce_start avg
// OVERLAP: %[[S:.*]] = loom.all_reduce_start sum %{{.*}} : tensor<13xf32>
// OVERLAP-DAG: loom.wait %[[L]]
// OVERLAP-DAG: loom.wait %[[S]] : tensor<13xf32>
// OVERLAP: return

// Gradients of two element types interleave (a bf16 product's weight, an
// fp32 bias): each type keeps its bucket open, one collective per type.
// CHECK-LABEL: func.func @mixed
// SMALL-LABEL: func.func @mixed
// OVERLAP-LABEL: func.func @mixed
// MIXED-LABEL: func.func @mixed
// MIXED: loom.all_reduce_start sum %{{.*}} : tensor<12xbf16>
// MIXED: loom.all_reduce_start sum %{{.*}} : tensor<5xf32>
// MIXED-NOT: loom.all_reduce_start
func.func @mixed(%w1: tensor<4xbf16>, %b1: tensor<2xf32>, %w2: tensor<8xbf16>, %b2: tensor<3xf32>) -> (tensor<4xbf16>, tensor<2xf32>, tensor<8xbf16>, tensor<3xf32>) {
  %0 = loom.all_reduce sum %w1 on @mesh ["dp"] : tensor<4xbf16>
  %1 = loom.all_reduce sum %b1 on @mesh ["dp"] : tensor<2xf32>
  %2 = loom.all_reduce sum %w2 on @mesh ["dp"] : tensor<8xbf16>
  %3 = loom.all_reduce sum %b2 on @mesh ["dp"] : tensor<3xf32>
  return %0, %1, %2, %3 : tensor<4xbf16>, tensor<2xf32>, tensor<8xbf16>, tensor<3xf32>
}
