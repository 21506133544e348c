// RUN: loom-opt %s --loom-narrow-reductions | FileCheck %s
// RUN: loom-opt %s --loom-narrow-reductions="dtype=fp16" | FileCheck %s --check-prefix=F16
// RUN: not loom-opt %s --loom-narrow-reductions="dtype=fp8" 2>&1 | FileCheck %s --check-prefix=BAD

// Gradient sums over the data axis travel in bf16: the operand is narrowed,
// the collective sums bf16, the result is widened back. The loss (a
// scalar), a maximum and a sum over the tensor-parallel axis keep f32.
// CHECK-LABEL: func.func @step
// CHECK:      %[[N:.*]] = loom.cast %arg0 : tensor<64xf32> -> tensor<64xbf16>
// CHECK-NEXT: %[[S:.*]] = loom.all_reduce sum %[[N]] on @mesh ["dp"] : tensor<64xbf16>
// CHECK-NEXT: %[[W:.*]] = loom.cast %[[S]] : tensor<64xbf16> -> tensor<64xf32>
// CHECK:      %[[M:.*]] = loom.cast %arg1 : tensor<8x4xf32> -> tensor<8x4xbf16>
// CHECK-NEXT: loom.reduce_scatter avg %[[M]] on @mesh ["dp"] {scatter_dim = 0 : i64} : tensor<8x4xbf16> -> tensor<4x4xbf16>
// CHECK:      loom.all_reduce sum %arg2 on @mesh ["dp"] : tensor<f32>
// CHECK:      loom.all_reduce max %arg0 on @mesh ["dp"] : tensor<64xf32>
// CHECK:      loom.all_reduce sum %arg0 on @mesh ["tp"] : tensor<64xf32>
// F16: loom.all_reduce sum %{{.*}} on @mesh ["dp"] : tensor<64xf16>
// BAD: loom-narrow-reductions: unknown dtype 'fp8' (expected bf16 or fp16)
loom.mesh @mesh = <dp = 2, tp = 2>
func.func @step(%g: tensor<64xf32>, %h: tensor<8x4xf32>, %loss: tensor<f32>)
    -> (tensor<64xf32>, tensor<4x4xf32>, tensor<f32>, tensor<64xf32>, tensor<64xf32>) {
  %0 = loom.all_reduce sum %g on @mesh ["dp"] : tensor<64xf32>
  %1 = loom.reduce_scatter avg %h on @mesh ["dp"] {scatter_dim = 0 : i64} : tensor<8x4xf32> -> tensor<4x4xf32>
  %2 = loom.all_reduce sum %loss on @mesh ["dp"] : tensor<f32>
  %3 = loom.all_reduce max %g on @mesh ["dp"] : tensor<64xf32>
  %4 = loom.all_reduce sum %g on @mesh ["tp"] : tensor<64xf32>
  return %0, %1, %2, %3, %4 : tensor<64xf32>, tensor<4x4xf32>, tensor<f32>, tensor<64xf32>, tensor<64xf32>
}
