// RUN: loom-opt %s --split-input-file --loom-matmul-to-kernel | FileCheck %s

// CHECK: func.func private @loom_kernel_matmul_f32(memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, i64) attributes {llvm.emit_c_interface}
// CHECK-LABEL: func @plain_and_transposed
func.func @plain_and_transposed(%a: memref<8x4xf32>, %b: memref<4x16xf32>, %bt: memref<16x4xf32>, %c: memref<8x16xf32>) {
  // CHECK: %[[A:.*]] = memref.cast %{{.*}} : memref<8x4xf32> to memref<?x?xf32, strided<[?, ?], offset: ?>>
  // CHECK: %[[NO:.*]] = arith.constant 0 : i64
  // CHECK: call @loom_kernel_matmul_f32(%[[A]], %{{.*}}, %{{.*}}, %[[NO]])
  linalg.matmul ins(%a, %b : memref<8x4xf32>, memref<4x16xf32>) outs(%c : memref<8x16xf32>)
  // CHECK: %[[YES:.*]] = arith.constant 1 : i64
  // CHECK: call @loom_kernel_matmul_f32(%{{.*}}, %{{.*}}, %{{.*}}, %[[YES]])
  // CHECK-NOT: linalg.matmul
  linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>]
    ins(%a, %bt : memref<8x4xf32>, memref<16x4xf32>) outs(%c : memref<8x16xf32>)
  return
}

// -----

// Other element types, tensors and transposed left operands stay as they are.
// CHECK-LABEL: func @left_alone
func.func @left_alone(%a: memref<8x4xf64>, %b: memref<4x16xf64>, %c: memref<8x16xf64>,
                      %t: tensor<4x8xf32>, %u: tensor<4x16xf32>, %v: tensor<8x16xf32>) -> tensor<8x16xf32> {
  // CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : memref<8x4xf64>, memref<4x16xf64>)
  linalg.matmul ins(%a, %b : memref<8x4xf64>, memref<4x16xf64>) outs(%c : memref<8x16xf64>)
  // CHECK: linalg.matmul indexing_maps
  // CHECK-NOT: call @loom_kernel_matmul_f32
  %r = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d2, d0)>, affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>]
    ins(%t, %u : tensor<4x8xf32>, tensor<4x16xf32>) outs(%v : tensor<8x16xf32>) -> tensor<8x16xf32>
  return %r : tensor<8x16xf32>
}

// -----

// Grouped 2-D convolutions call the runtime's im2col + GEMM kernel with their
// strides and dilations.
// CHECK: func.func private @loom_kernel_conv2d_f32(memref<?x?x?x?x?xf32, strided<[?, ?, ?, ?, ?], offset: ?>>, memref<?x?x?x?x?xf32, strided<[?, ?, ?, ?, ?], offset: ?>>, memref<?x?x?x?x?xf32, strided<[?, ?, ?, ?, ?], offset: ?>>, i64, i64, i64, i64) attributes {llvm.emit_c_interface}
// CHECK-LABEL: func @grouped_conv
func.func @grouped_conv(%in: memref<1x2x2x10x11xf32>, %w: memref<2x3x2x3x3xf32>, %out: memref<1x2x3x3x4xf32>) {
  // CHECK-DAG: %[[SH:.*]] = arith.constant 3 : i64
  // CHECK-DAG: %[[SW:.*]] = arith.constant 2 : i64
  // CHECK-DAG: %[[DH:.*]] = arith.constant 1 : i64
  // CHECK: call @loom_kernel_conv2d_f32(%{{.*}}, %{{.*}}, %{{.*}}, %[[SH]], %[[SW]], %[[DH]], %{{.*}})
  // CHECK-NOT: linalg.conv_2d_ngchw_gfchw
  linalg.conv_2d_ngchw_gfchw {dilations = dense<[1, 2]> : tensor<2xi64>, strides = dense<[3, 2]> : tensor<2xi64>}
    ins(%in, %w : memref<1x2x2x10x11xf32>, memref<2x3x2x3x3xf32>) outs(%out : memref<1x2x3x3x4xf32>)
  return
}

// -----

// A result zeroed just before the product (by a fill with +0.0, or by a copy
// from a buffer that only such a fill writes) is overwritten by the kernel
// (flag 4) instead of being zeroed and read; the buffer of zeros goes once
// nothing copies from it.
// CHECK-LABEL: func @zeroed_results
func.func @zeroed_results(%a: memref<8x4xf32>, %b: memref<4x16xf32>, %c: memref<8x16xf32>, %d: memref<8x16xf32>) {
  %zero = arith.constant 0.0 : f32
  // CHECK-NOT: memref.alloc
  // CHECK-NOT: linalg.fill
  // CHECK-NOT: memref.copy
  // CHECK: %[[OVERWRITE:.*]] = arith.constant 4 : i64
  // CHECK: call @loom_kernel_matmul_f32(%{{.*}}, %{{.*}}, %{{.*}}, %[[OVERWRITE]])
  linalg.fill ins(%zero : f32) outs(%c : memref<8x16xf32>)
  linalg.matmul ins(%a, %b : memref<8x4xf32>, memref<4x16xf32>) outs(%c : memref<8x16xf32>)
  // CHECK-NOT: memref.alloc
  // CHECK-NOT: linalg.fill
  // CHECK-NOT: memref.copy
  %zeros = memref.alloc() : memref<8x16xf32>
  linalg.fill ins(%zero : f32) outs(%zeros : memref<8x16xf32>)
  memref.copy %zeros, %d : memref<8x16xf32> to memref<8x16xf32>
  // CHECK: %[[OVERWRITE2:.*]] = arith.constant 4 : i64
  // CHECK: call @loom_kernel_matmul_f32(%{{.*}}, %{{.*}}, %{{.*}}, %[[OVERWRITE2]])
  // CHECK-NOT: memref.dealloc
  linalg.matmul ins(%a, %b : memref<8x4xf32>, memref<4x16xf32>) outs(%d : memref<8x16xf32>)
  memref.dealloc %zeros : memref<8x16xf32>
  return
}

// -----

// Results that hold something else, or are touched between the zeroing and
// the product, still accumulate (flag 0), and their zeroing stays.
// CHECK-LABEL: func @accumulated_results
func.func @accumulated_results(%a: memref<8x4xf32>, %b: memref<4x16xf32>, %c: memref<8x16xf32>, %d: memref<8x16xf32>, %e: memref<8x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %negzero = arith.constant -0.0 : f32
  %one = arith.constant 1.0 : f32
  %c0 = arith.constant 0 : index
  // CHECK: linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : memref<8x16xf32>)
  // CHECK: %[[ACC1:.*]] = arith.constant 0 : i64
  // CHECK: call @loom_kernel_matmul_f32(%{{.*}}, %{{.*}}, %{{.*}}, %[[ACC1]])
  linalg.fill ins(%one : f32) outs(%c : memref<8x16xf32>)
  linalg.matmul ins(%a, %b : memref<8x4xf32>, memref<4x16xf32>) outs(%c : memref<8x16xf32>)
  // Only +0.0 counts: accumulating into -0.0 keeps the sign of a -0.0
  // product, which overwriting would not.
  // CHECK: linalg.fill
  // CHECK: %[[ACC2:.*]] = arith.constant 0 : i64
  // CHECK: call @loom_kernel_matmul_f32(%{{.*}}, %{{.*}}, %{{.*}}, %[[ACC2]])
  linalg.fill ins(%negzero : f32) outs(%d : memref<8x16xf32>)
  linalg.matmul ins(%a, %b : memref<8x4xf32>, memref<4x16xf32>) outs(%d : memref<8x16xf32>)
  // A buffer of zeros that is also written elsewhere.
  %zeros = memref.alloc() : memref<8x16xf32>
  linalg.fill ins(%zero : f32) outs(%zeros : memref<8x16xf32>)
  memref.store %one, %zeros[%c0, %c0] : memref<8x16xf32>
  memref.copy %zeros, %e : memref<8x16xf32> to memref<8x16xf32>
  // CHECK: memref.copy
  // CHECK: %[[ACC3:.*]] = arith.constant 0 : i64
  // CHECK: call @loom_kernel_matmul_f32(%{{.*}}, %{{.*}}, %{{.*}}, %[[ACC3]])
  linalg.matmul ins(%a, %b : memref<8x4xf32>, memref<4x16xf32>) outs(%e : memref<8x16xf32>)
  // The result read between its zeroing and the product.
  // CHECK: linalg.fill
  // CHECK: memref.load
  // CHECK: %[[ACC4:.*]] = arith.constant 0 : i64
  // CHECK: call @loom_kernel_matmul_f32(%{{.*}}, %{{.*}}, %{{.*}}, %[[ACC4]])
  linalg.fill ins(%zero : f32) outs(%c : memref<8x16xf32>)
  %x = memref.load %c[%c0, %c0] : memref<8x16xf32>
  linalg.matmul ins(%a, %b : memref<8x4xf32>, memref<4x16xf32>) outs(%c : memref<8x16xf32>)
  memref.dealloc %zeros : memref<8x16xf32>
  return
}
