// RUN: loom-opt %s --loom-vectorize-inner-loops | FileCheck %s
// RUN: loom-opt %s --loom-cpu-pipeline | FileCheck %s --check-prefix=LLVM
// RUN: loom-opt %s --loom-cpu-pipeline | mlir-translate --mlir-to-llvmir | opt -O3 -mtriple=x86_64-unknown-linux-gnu -mcpu=x86-64-v4 -S | FileCheck %s --check-prefix=VEC

// loom-vectorize-inner-loops marks innermost loops of 16 or more iterations
// whose loads and stores all index a unit-stride innermost dimension with the
// induction variable; LLVM then vectorizes them instead of unrolling them
// into scalar copies (below, the transpose's 32-element rows move as vectors).
// CHECK-LABEL: func @marked
// CHECK: scf.for
// CHECK: } {llvm.loop_annotation = #[[ANN:.*]]}
// CHECK: } {llvm.loop_annotation = #[[ANN]]}
// CHECK-LABEL: func @unmarked
// CHECK-NOT: loop_annotation
// CHECK: return
func.func @marked(%a: memref<8x32xf32>, %b: memref<8x32xf32>, %c: memref<8x64xf32, strided<[128, 1]>>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  scf.for %i = %c0 to %c8 step %c1 {
    scf.for %j = %c0 to %c32 step %c1 {
      %v = memref.load %a[%i, %j] : memref<8x32xf32>
      %w = arith.negf %v : f32
      memref.store %w, %b[%i, %j] : memref<8x32xf32>
    }
  }
  scf.for %i = %c0 to %c8 step %c1 {
    scf.for %j = %c0 to %c64 step %c1 {
      %v = memref.load %c[%i, %j] : memref<8x64xf32, strided<[128, 1]>>
      memref.store %v, %c[%i, %j] : memref<8x64xf32, strided<[128, 1]>>
    }
  }
  return
}
// Not marked: a sum (its accumulator is not indexed by the loop), a loop of
// 8 iterations, a loop carrying a value, a column walk (stride 32), and a
// dimension of stride 2.
func.func @unmarked(%a: memref<32x32xf32>, %s: memref<32xf32>, %d: memref<32xf32, strided<[2]>>) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c32 = arith.constant 32 : index
  %zero = arith.constant 0.0 : f32
  scf.for %j = %c0 to %c32 step %c1 {
    %acc = memref.load %s[%c0] : memref<32xf32>
    %v = memref.load %a[%c0, %j] : memref<32x32xf32>
    %t = arith.addf %acc, %v : f32
    memref.store %t, %s[%c0] : memref<32xf32>
  }
  scf.for %j = %c0 to %c8 step %c1 {
    %v = memref.load %a[%c0, %j] : memref<32x32xf32>
    memref.store %v, %s[%j] : memref<32xf32>
  }
  %r = scf.for %j = %c0 to %c32 step %c1 iter_args(%acc = %zero) -> (f32) {
    %v = memref.load %a[%c0, %j] : memref<32x32xf32>
    %t = arith.addf %acc, %v : f32
    scf.yield %t : f32
  }
  scf.for %j = %c0 to %c32 step %c1 {
    %v = memref.load %a[%j, %c0] : memref<32x32xf32>
    memref.store %v, %s[%j] : memref<32xf32>
  }
  scf.for %j = %c0 to %c32 step %c1 {
    %v = memref.load %d[%j] : memref<32xf32, strided<[2]>>
    memref.store %v, %s[%j] : memref<32xf32>
  }
  return %r : f32
}

// The attention heads' split: [batch, sequence, heads, head size] to
// [batch, heads, sequence, head size], rows of 32 contiguous elements.
// LLVM: llvm.br {{.*}} {loop_annotation = #
// VEC-LABEL: define {{.*}}@transpose(
// VEC: load <{{[0-9]+}} x float>
// VEC: store <{{[0-9]+}} x float>
func.func @transpose(%x: tensor<2x64x4x32xf32>) -> tensor<2x4x64x32xf32> {
  %0 = tensor.empty() : tensor<2x4x64x32xf32>
  %t = linalg.transpose ins(%x : tensor<2x64x4x32xf32>) outs(%0 : tensor<2x4x64x32xf32>) permutation = [0, 2, 1, 3]
  return %t : tensor<2x4x64x32xf32>
}
