// RUN: loom-opt %s --convert-linalg-to-loops --loom-outline-parallel-loops=min-work=1 --expand-strided-metadata --lower-affine --convert-scf-to-cf --finalize-memref-to-llvm --convert-to-llvm --reconcile-unrealized-casts \
// RUN:   | env LOOM_NUM_THREADS=3 mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_libs,%loomrt | FileCheck %s
// RUN: loom-opt %s --loom-outline-parallel-loops=min-work=1 | FileCheck %s --check-prefix=IR

// IR-LABEL: func.func @fill(
// IR-NOT: scf.parallel
// IR: call @loom_rt_parallel_for(

// An outlined nest run by libloomrt's pool of 3 threads (rows 0-1, 2-3 and
// 4-6 of the view): it writes through a strided view (descriptor with an
// offset) and reads a float and a dynamic bound from its record.
// big[1 + i, 2 + j] = 10 i + j + 0.5 for i < 7, j < 5; the border stays 0.

// CHECK:      [0,   0,   0,   0,   0,   0,   0,   0],
// CHECK-NEXT: [0,   0,   0.5,   1.5,   2.5,   3.5,   4.5,   0],
// CHECK-NEXT: [0,   0,   10.5,   11.5,   12.5,   13.5,   14.5,   0],
// CHECK-NEXT: [0,   0,   20.5,   21.5,   22.5,   23.5,   24.5,   0],
// CHECK-NEXT: [0,   0,   30.5,   31.5,   32.5,   33.5,   34.5,   0],
// CHECK-NEXT: [0,   0,   40.5,   41.5,   42.5,   43.5,   44.5,   0],
// CHECK-NEXT: [0,   0,   50.5,   51.5,   52.5,   53.5,   54.5,   0],
// CHECK-NEXT: [0,   0,   60.5,   61.5,   62.5,   63.5,   64.5,   0],
// CHECK-NEXT: [0,   0,   0,   0,   0,   0,   0,   0]]

func.func private @printMemrefF32(memref<*xf32>) attributes {llvm.emit_c_interface}

func.func @fill(%big: memref<9x8xf32>, %s: f32, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c7 = arith.constant 7 : index
  %ten = arith.constant 10.0 : f32
  %view = memref.subview %big[1, 2] [7, 5] [1, 1] : memref<9x8xf32> to memref<7x5xf32, strided<[8, 1], offset: 10>>
  scf.parallel (%i, %j) = (%c0, %c0) to (%c7, %n) step (%c1, %c1) {
    %ii = arith.index_cast %i : index to i32
    %jj = arith.index_cast %j : index to i32
    %fi = arith.sitofp %ii : i32 to f32
    %fj = arith.sitofp %jj : i32 to f32
    %a = arith.mulf %fi, %ten : f32
    %b = arith.addf %a, %fj : f32
    %c = arith.addf %b, %s : f32
    memref.store %c, %view[%i, %j] : memref<7x5xf32, strided<[8, 1], offset: 10>>
    scf.reduce
  }
  return
}

func.func @main() {
  %big = memref.alloc() : memref<9x8xf32>
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%big : memref<9x8xf32>)
  %s = arith.constant 0.5 : f32
  %n = arith.constant 5 : index
  call @fill(%big, %s, %n) : (memref<9x8xf32>, f32, index) -> ()
  %u = memref.cast %big : memref<9x8xf32> to memref<*xf32>
  call @printMemrefF32(%u) : (memref<*xf32>) -> ()
  memref.dealloc %big : memref<9x8xf32>
  return
}
