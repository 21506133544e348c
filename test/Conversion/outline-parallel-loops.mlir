// RUN: loom-opt %s --split-input-file --loom-outline-parallel-loops=min-work=64 | FileCheck %s

// A nest with enough work moves into a function over a range of its first
// dimension; the memref and the scalar it uses travel through a record on
// the caller's stack, the constants are cloned.

// CHECK: func.func private @loom_rt_parallel_for((!llvm.ptr, i64, i64) -> (), !llvm.ptr, i64)
// CHECK-LABEL: func.func private @scale_parallel0(
// CHECK-SAME: %[[CTX:.*]]: !llvm.ptr, %[[BEGIN:.*]]: i64, %[[END:.*]]: i64)
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[C1:.*]] = arith.constant 1 : index
// CHECK-DAG: %[[C16:.*]] = arith.constant 16 : index
// CHECK: %[[SLOT0:.*]] = llvm.getelementptr %[[CTX]][0, 0] : (!llvm.ptr) -> !llvm.ptr, !llvm.struct<(struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>, f32)>
// CHECK: %[[DESC:.*]] = llvm.load %[[SLOT0]] : !llvm.ptr -> !llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>
// CHECK: %[[BUF:.*]] = builtin.unrealized_conversion_cast %[[DESC]] : !llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)> to memref<32x16xf32>
// CHECK: %[[SLOT1:.*]] = llvm.getelementptr %[[CTX]][0, 1]
// CHECK: %[[F:.*]] = llvm.load %[[SLOT1]] : !llvm.ptr -> f32
// CHECK: %[[B:.*]] = arith.index_cast %[[BEGIN]] : i64 to index
// CHECK: %[[BM:.*]] = arith.muli %[[B]], %[[C1]]
// CHECK: %[[LO:.*]] = arith.addi %[[C0]], %[[BM]]
// CHECK: %[[E:.*]] = arith.index_cast %[[END]] : i64 to index
// CHECK: %[[EM:.*]] = arith.muli %[[E]], %[[C1]]
// CHECK: %[[HI:.*]] = arith.addi %[[C0]], %[[EM]]
// CHECK: scf.parallel (%[[I:.*]], %[[J:.*]]) = (%[[LO]], %[[C0]]) to (%[[HI]], %[[C16]]) step (%[[C1]], %[[C1]])
// CHECK: memref.load %[[BUF]][%[[I]], %[[J]]]
// CHECK: arith.mulf %{{.*}}, %[[F]]
// CHECK: memref.store %{{.*}}, %[[BUF]][%[[I]], %[[J]]]
// CHECK: return

// CHECK-LABEL: func.func @scale(
// CHECK-SAME: %[[M:.*]]: memref<32x16xf32>, %[[S:.*]]: f32)
// CHECK: %[[RECORD:.*]] = llvm.alloca %{{.*}} x !llvm.struct<(struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>, f32)>
// CHECK: %[[MD:.*]] = builtin.unrealized_conversion_cast %[[M]] : memref<32x16xf32> to !llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>
// CHECK: %[[P0:.*]] = llvm.getelementptr %[[RECORD]][0, 0]
// CHECK: llvm.store %[[MD]], %[[P0]]
// CHECK: %[[P1:.*]] = llvm.getelementptr %[[RECORD]][0, 1]
// CHECK: llvm.store %[[S]], %[[P1]] : f32, !llvm.ptr
// CHECK: %[[FN:.*]] = constant @scale_parallel0 : (!llvm.ptr, i64, i64) -> ()
// CHECK: %[[N:.*]] = arith.constant 32 : i64
// CHECK: call @loom_rt_parallel_for(%[[FN]], %[[RECORD]], %[[N]])
// CHECK-NOT: scf.parallel
func.func @scale(%m: memref<32x16xf32>, %s: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  scf.parallel (%i, %j) = (%c0, %c0) to (%c32, %c16) step (%c1, %c1) {
    %x = memref.load %m[%i, %j] : memref<32x16xf32>
    %y = arith.mulf %x, %s : f32
    memref.store %y, %m[%i, %j] : memref<32x16xf32>
    scf.reduce
  }
  return
}

// -----

// Work counts the inner loops too, and a bound that is not a constant counts
// as 1024 iterations; the first dimension starts at lb and moves by step.
// A nest inside a sequential loop keeps its record in the entry block.

// CHECK-LABEL: func.func private @nested_parallel0(
// CHECK: %[[C2:.*]] = arith.constant 2 : index
// CHECK: %[[C3:.*]] = arith.constant 3 : index
// CHECK: arith.muli %{{.*}}, %[[C3]]
// CHECK: arith.addi %[[C2]]
// CHECK: scf.parallel
// CHECK: scf.for
// CHECK-LABEL: func.func @nested(
// CHECK-NEXT: llvm.mlir.constant(1 : i64)
// CHECK-NEXT: llvm.alloca
// CHECK: scf.for
// CHECK: %[[N:.*]] = arith.constant 3 : i64
// CHECK-NEXT: call @loom_rt_parallel_for(%{{.*}}, %{{.*}}, %[[N]])
// CHECK-NOT: call @loom_rt_parallel_for
// CHECK: scf.parallel
// CHECK: return
func.func @nested(%m: memref<?x8xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c8 = arith.constant 8 : index
  %c10 = arith.constant 10 : index
  %zero = arith.constant 0.0 : f32
  scf.for %t = %c0 to %c2 step %c1 {
    // (10 - 2) / 3 = 3 iterations of i, each 1024 of k: outlined.
    scf.parallel (%i) = (%c2) to (%c10) step (%c3) {
      scf.for %k = %c0 to %n step %c1 {
        memref.store %zero, %m[%k, %c0] : memref<?x8xf32>
      }
      scf.reduce
    }
  }
  // 3 x 8 = 24 iterations: stays.
  scf.parallel (%i, %j) = (%c0, %c0) to (%c3, %c8) step (%c1, %c1) {
    memref.store %zero, %m[%i, %j] : memref<?x8xf32>
    scf.reduce
  }
  return
}

// -----

// Nests that call functions, allocate, or read a value that cannot travel
// to another thread (a tensor) stay on the calling thread; a nest whose
// first dimension has a single iteration too.

// CHECK-LABEL: func.func @stays
// CHECK-NOT: loom_rt_parallel_for
// CHECK-COUNT-4: scf.parallel
func.func private @callee(index)
func.func @stays(%m: memref<128x128xf32>, %t: tensor<128x128xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c128 = arith.constant 128 : index
  scf.parallel (%i, %j) = (%c0, %c0) to (%c128, %c128) step (%c1, %c1) {
    func.call @callee(%i) : (index) -> ()
    scf.reduce
  }
  scf.parallel (%i, %j) = (%c0, %c0) to (%c128, %c128) step (%c1, %c1) {
    %a = memref.alloc() : memref<4xf32>
    memref.dealloc %a : memref<4xf32>
    scf.reduce
  }
  scf.parallel (%i, %j) = (%c0, %c0) to (%c1, %c128) step (%c1, %c1) {
    %x = memref.load %m[%i, %j] : memref<128x128xf32>
    memref.store %x, %m[%j, %i] : memref<128x128xf32>
    scf.reduce
  }
  scf.parallel (%i, %j) = (%c0, %c0) to (%c128, %c128) step (%c1, %c1) {
    %x = tensor.extract %t[%i, %j] : tensor<128x128xf32>
    memref.store %x, %m[%i, %j] : memref<128x128xf32>
    scf.reduce
  }
  return
}
