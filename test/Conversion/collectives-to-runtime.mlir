// RUN: loom-opt %s --split-input-file --one-shot-bufferize="bufferize-function-boundaries" --verify-diagnostics | FileCheck %s

// One-shot bufferization turns an all-reduce into a call of the runtime on
// the operand's buffer and a fresh result buffer, with the reduction kind
// (3 = min) and the group: its axes in the high 32 bits, one nibble each
// holding the axis's index plus 1, lowest nibble first (dp then tp:
// 1 + 2 * 16 = 33), and its size in the low ones: 33 * 2^32 + 4 =
// 141733920772.
// CHECK: func.func private @loom_rt_all_reduce_f32(memref<*xf32>, memref<*xf32>, i64, i64) attributes {llvm.emit_c_interface}
// CHECK-LABEL: func @whole_mesh
// CHECK-SAME: (%[[X:.*]]: memref<4x8xf32
// CHECK: %[[OUT:.*]] = memref.alloc() {{.*}}: memref<4x8xf32>
// CHECK: %[[XS:.*]] = memref.cast %[[X]] : {{.*}} to memref<?x?xf32, strided<[?, ?], offset: ?>>
// CHECK: %[[IN:.*]] = memref.cast %[[XS]] : {{.*}} to memref<*xf32>
// CHECK: %[[OS:.*]] = memref.cast %[[OUT]] : memref<4x8xf32> to memref<?x?xf32, strided<[?, ?], offset: ?>>
// CHECK: %[[RES:.*]] = memref.cast %[[OS]] : {{.*}} to memref<*xf32>
// CHECK-DAG: %[[KIND:.*]] = arith.constant 3 : i64
// CHECK-DAG: %[[SIZE:.*]] = arith.constant 141733920772 : i64
// CHECK: call @loom_rt_all_reduce_f32(%[[IN]], %[[RES]], %[[KIND]], %[[SIZE]])
// CHECK: return %[[OUT]]
loom.mesh @mesh = <dp = 2, tp = 2>
func.func @whole_mesh(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = loom.all_reduce min %x on @mesh ["dp", "tp"] : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

loom.mesh @mesh = <dp = 2>
func.func @integers(%x: tensor<4xi64>) -> tensor<4xi64> {
  // expected-error @+2 {{'loom.all_reduce' op on 'i64' is not supported on the CPU yet (f32, bf16 and f16 are)}}
  // expected-error @+1 {{failed to bufferize op}}
  %0 = loom.all_reduce sum %x on @mesh ["dp"] : tensor<4xi64>
  return %0 : tensor<4xi64>
}

// -----

// All-gather passes its dimension, reduce-scatter its dimension and kind
// (4 = avg), each before the group (axis 0 of 1 of size 2: 2^32 + 2); the
// results get their own shapes.
// CHECK-LABEL: func @gather_and_scatter
// CHECK: memref.alloc() {{.*}}: memref<2x8xf32>
// CHECK: call @loom_rt_all_gather_f32(%{{.*}}, %{{.*}}, %c1{{.*}}, %c4294967298{{.*}})
// CHECK: memref.alloc() {{.*}}: memref<1x4xf32>
// CHECK: call @loom_rt_reduce_scatter_f32(%{{.*}}, %{{.*}}, %c0{{.*}}, %c4{{.*}}, %c4294967298{{.*}})
loom.mesh @mesh = <dp = 2>
func.func @gather_and_scatter(%x: tensor<2x4xf32>) -> (tensor<2x8xf32>, tensor<1x4xf32>) {
  %0 = loom.all_gather %x on @mesh ["dp"] {gather_dim = 1 : i64} : tensor<2x4xf32> -> tensor<2x8xf32>
  %1 = loom.reduce_scatter avg %x on @mesh ["dp"] {scatter_dim = 0 : i64} : tensor<2x4xf32> -> tensor<1x4xf32>
  return %0, %1 : tensor<2x8xf32>, tensor<1x4xf32>
}

// -----

// Part of a mesh: the second axis alone is 2, size 2 (2 * 2^32 + 2).
// CHECK-LABEL: func @second_axis
// CHECK: call @loom_rt_all_reduce_f32(%{{.*}}, %{{.*}}, %c0{{.*}}, %c8589934594{{.*}})
loom.mesh @mesh = <dp = 2, tp = 2>
func.func @second_axis(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = loom.all_reduce sum %x on @mesh ["tp"] : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Axes listed against the mesh's order (a dimension split over [tp, dp]
// numbers its blocks tp-major): tp then dp is 2 + 1 * 16 = 18, so
// 18 * 2^32 + 4 = 77309411332.
// CHECK-LABEL: func @axes_out_of_order
// CHECK: call @loom_rt_all_reduce_f32(%{{.*}}, %{{.*}}, %c0{{.*}}, %c77309411332{{.*}})
loom.mesh @mesh = <dp = 2, tp = 2>
func.func @axes_out_of_order(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = loom.all_reduce sum %x on @mesh ["tp", "dp"] : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Point-to-point messages call the runtime's send and receive for their
// element type (the declarations carry it), with the element's bytes, the
// group and the offset: a stage that sends bf16 activations and an f32 loss
// declares both.
// CHECK-DAG: func.func private @loom_rt_send_bf16(memref<*xbf16>, i64, i64, i64) attributes {llvm.emit_c_interface}
// CHECK-DAG: func.func private @loom_rt_send_f32(memref<*xf32>, i64, i64, i64) attributes {llvm.emit_c_interface}
// CHECK-DAG: func.func private @loom_rt_recv_i64(memref<*xi64>, i64, i64, i64) attributes {llvm.emit_c_interface}
// CHECK-LABEL: func @messages
// CHECK: call @loom_rt_send_bf16(%{{.*}}, %c2{{.*}}, %c4294967298{{.*}}, %c1{{.*}})
// CHECK: call @loom_rt_send_f32(%{{.*}}, %c4{{.*}}, %c4294967298{{.*}}, %c1{{.*}})
// CHECK: memref.alloc() {{.*}}: memref<3xi64>
// CHECK: call @loom_rt_recv_i64(%{{.*}}, %c8{{.*}}, %c4294967298{{.*}}, %c-1{{.*}})
loom.mesh @mesh = <pp = 2>
func.func @messages(%a: tensor<2x4xbf16>, %loss: tensor<f32>) -> tensor<3xi64> {
  loom.send %a on @mesh ["pp"] offset 1 : tensor<2x4xbf16>
  loom.send %loss on @mesh ["pp"] offset 1 : tensor<f32>
  %0 = loom.recv on @mesh ["pp"] offset -1 : tensor<3xi64>
  return %0 : tensor<3xi64>
}

// -----

loom.mesh @mesh = <pp = 2>
func.func @unsupported_message(%x: tensor<4xi16>) {
  // expected-error @+2 {{'loom.send' op of 'i16' is not supported}}
  // expected-error @+1 {{failed to bufferize op}}
  loom.send %x on @mesh ["pp"] offset 1 : tensor<4xi16>
  return
}
