// RUN: loom-opt %s --loom-merge-gpu-modules | FileCheck %s

// Outlining's modules of one kernel each become one module, @loom_kernels,
// after the host functions: kernels are named after their old modules, a
// global two kernels read is kept once, and the launches follow.
// CHECK-LABEL: func.func @host
// CHECK: gpu.launch_func @loom_kernels::@host_kernel blocks
// CHECK: gpu.launch_func @loom_kernels::@host_kernel_0 blocks
// CHECK: return
// CHECK: gpu.module @loom_kernels {
// CHECK-NEXT: memref.global "private" constant @table
// CHECK-NEXT: gpu.func @host_kernel(
// CHECK: memref.get_global @table
// CHECK-NOT: memref.global
// CHECK: gpu.func @host_kernel_0(
// CHECK: memref.get_global @table
// CHECK-NOT: gpu.module
module attributes {gpu.container_module} {
  memref.global "private" constant @table : memref<4xf32> = dense<1.0>
  func.func @host(%out: memref<4xf32>) {
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    gpu.launch_func @host_kernel::@host_kernel blocks in (%c1, %c1, %c1) threads in (%c4, %c1, %c1) args(%out : memref<4xf32>)
    gpu.launch_func @host_kernel_0::@host_kernel blocks in (%c1, %c1, %c1) threads in (%c4, %c1, %c1) args(%out : memref<4xf32>)
    return
  }
  gpu.module @host_kernel {
    memref.global "private" constant @table : memref<4xf32> = dense<1.0>
    gpu.func @host_kernel(%out: memref<4xf32>) kernel {
      %t = gpu.thread_id x
      %g = memref.get_global @table : memref<4xf32>
      %v = memref.load %g[%t] : memref<4xf32>
      memref.store %v, %out[%t] : memref<4xf32>
      gpu.return
    }
  }
  gpu.module @host_kernel_0 {
    memref.global "private" constant @table : memref<4xf32> = dense<1.0>
    gpu.func @host_kernel(%out: memref<4xf32>) kernel {
      %t = gpu.thread_id x
      %g = memref.get_global @table : memref<4xf32>
      %v = memref.load %g[%t] : memref<4xf32>
      %w = arith.addf %v, %v : f32
      memref.store %w, %out[%t] : memref<4xf32>
      gpu.return
    }
  }
}
