// RUN: loom-opt %s --split-input-file --loom-map-to-gpu --verify-diagnostics | FileCheck %s
// RUN: not loom-opt %s --split-input-file --loom-map-to-gpu=block-size=2048 2>&1 | FileCheck %s --check-prefix=SIZE

// SIZE: loom-map-to-gpu: block-size must be 1-1024 (got 2048)

// A parallel loop becomes one launch over its 40 iterations linearized: one
// block of 40 threads (fewer threads than a block when there are fewer
// iterations), each recovering (i, j) = (id / 10, id % 10), innermost
// fastest, so that neighbouring threads touch neighbouring elements.
// CHECK-LABEL: func.func @elementwise
// CHECK-SAME: (%[[A:.*]]: memref<4x10xf32>, %[[B:.*]]: memref<4x10xf32>)
// CHECK-DAG: %[[C40:.*]] = arith.constant 40 : index
// CHECK-DAG: %[[ONE:.*]] = arith.constant 1 : index
// CHECK: gpu.launch blocks(%[[BX:.*]], %{{.*}}, %{{.*}}) in ({{.*}} = %[[ONE]], {{.*}}) threads(%[[TX:.*]], %{{.*}}, %{{.*}}) in ({{.*}} = %[[C40]], {{.*}})
// CHECK: %[[BASE:.*]] = arith.muli %[[BX]], %{{.*}} : index
// CHECK: %[[ID:.*]] = arith.addi %[[BASE]], %[[TX]] : index
// CHECK-NOT: scf.if
// CHECK: %[[J:.*]] = arith.remui %[[ID]], %[[C10:.*]] : index
// CHECK: %[[I:.*]] = arith.divui %[[ID]], %[[C10]] : index
// CHECK: %[[X:.*]] = memref.load %[[A]][%[[I]], %[[J]]]
// CHECK: %[[Y:.*]] = arith.addf %[[X]], %[[X]]
// CHECK: memref.store %[[Y]], %[[B]][%[[I]], %[[J]]]
// CHECK: gpu.terminator
// CHECK-NOT: scf.parallel

func.func @elementwise(%a: memref<4x10xf32>, %b: memref<4x10xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c10 = arith.constant 10 : index
  scf.parallel (%i, %j) = (%c0, %c0) to (%c4, %c10) step (%c1, %c1) {
    %x = memref.load %a[%i, %j] : memref<4x10xf32>
    %y = arith.addf %x, %x : f32
    memref.store %y, %b[%i, %j] : memref<4x10xf32>
    scf.reduce
  }
  return
}

// -----

// 300 iterations need two blocks of 256 threads; the second block's last
// 212 threads are past the end and do nothing.
// CHECK-LABEL: func.func @partial_block
// CHECK-DAG: %[[C256:.*]] = arith.constant 256 : index
// CHECK-DAG: %[[C2:.*]] = arith.constant 2 : index
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %[[C2]], {{.*}}) threads({{.*}}) in ({{.*}} = %[[C256]], {{.*}})
// CHECK: %[[ID:.*]] = arith.addi
// CHECK: %[[IN:.*]] = arith.cmpi slt, %[[ID]], %{{.*}} : index
// CHECK: scf.if %[[IN]] {
// CHECK: memref.store

func.func @partial_block(%a: memref<3x100xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c100 = arith.constant 100 : index
  %cst = arith.constant 1.0 : f32
  scf.parallel (%i, %j) = (%c0, %c0) to (%c3, %c100) step (%c1, %c1) {
    memref.store %cst, %a[%i, %j] : memref<3x100xf32>
    scf.reduce
  }
  return
}

// -----

// The other device work runs in launches of one thread, consecutive ops
// together: the fill, the reduction loop, and the scalar arithmetic after
// it; the free of the sum's buffer met on the way follows the launch. The
// mean, which the later parallel loop reads, leaves through a buffer of
// one element, allocated where the function starts. Runtime calls end a
// run and stay on the host; the rank's block index, a call's scalar result
// the host reads for a view's offset, stays in host memory; a global passed
// to a runtime kernel is copied to the device where the function starts,
// and one a kernel reads is sunk into it (outlining copies it into the
// kernel module). Every other buffer is allocated on the device.
// CHECK-LABEL: func.func @serial
// CHECK-SAME: (%[[A:.*]]: memref<64xf32>, %[[OUT:.*]]: memref<f32>, %[[W:.*]]: memref<4x4xf32>, %[[BIG:.*]]: memref<8x4xf32>)
// CHECK: %[[TABLE:.*]] = gpu.alloc () : memref<4x4xf32>
// CHECK: %[[HOSTTABLE:.*]] = memref.get_global @table
// CHECK: gpu.memcpy %[[TABLE]], %[[HOSTTABLE]]
// CHECK: %[[SPILL:.*]] = gpu.alloc () : memref<f32>
// CHECK: %[[SUM:.*]] = gpu.alloc () : memref<f32>
// CHECK: %[[ONE:.*]] = arith.constant 1 : index
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %[[ONE]], {{.*}} = %[[ONE]], {{.*}} = %[[ONE]]) threads({{.*}}) in ({{.*}} = %[[ONE]], {{.*}} = %[[ONE]], {{.*}} = %[[ONE]])
// CHECK: memref.store %{{.*}}, %[[SUM]][]
// CHECK: scf.for
// CHECK: }
// CHECK-NEXT: %[[TOTAL:.*]] = memref.load %[[SUM]][]
// CHECK: %[[MEAN:.*]] = arith.divf %[[TOTAL]], %[[TOTAL]]
// CHECK: memref.store %[[MEAN]], %[[OUT]][]
// CHECK: memref.store %[[MEAN]], %[[SPILL]][]
// CHECK: gpu.terminator
// CHECK: gpu.dealloc %[[SUM]]
// CHECK: %[[BLOCKIDX:.*]] = memref.alloc() : memref<i64>
// CHECK: call @loom_rt_block_index
// CHECK: %[[B:.*]] = memref.load %[[BLOCKIDX]][] : memref<i64>
// CHECK: memref.dealloc %[[BLOCKIDX]]
// CHECK: %[[C:.*]] = gpu.alloc () : memref<4x4xf32>
// CHECK: call @loom_cuda_matmul_f32(%[[TABLE]], %[[W]], %[[C]], %{{.*}})
// CHECK: gpu.launch
// CHECK: %[[BI:.*]] = arith.index_cast %[[B]] : i64 to index
// CHECK: %[[OFF:.*]] = arith.muli %[[BI]]
// CHECK: %[[VIEW:.*]] = memref.subview %[[BIG]][%[[OFF]], 0]
// CHECK: %[[KTABLE:.*]] = memref.get_global @table
// CHECK: memref.load %[[VIEW]]
// CHECK: memref.load %[[KTABLE]]
// CHECK: memref.load %[[SPILL]][]
// CHECK: memref.store %{{.*}}, %[[C]]
// CHECK: gpu.terminator
// CHECK: gpu.dealloc %[[C]]
// CHECK-DAG: gpu.dealloc %[[SPILL]]
// CHECK-DAG: gpu.dealloc %[[TABLE]]
// CHECK: return

func.func private @loom_rt_block_index(memref<*xi64>, i64)
func.func private @loom_cuda_matmul_f32(memref<4x4xf32>, memref<4x4xf32>, memref<4x4xf32>, i64)
memref.global "private" constant @table : memref<4x4xf32> = dense<1.0>

func.func @serial(%a: memref<64xf32>, %out: memref<f32>, %w: memref<4x4xf32>, %big: memref<8x4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c64 = arith.constant 64 : index
  %c5 = arith.constant 5 : i64
  %zero = arith.constant 0.0 : f32
  %sum = memref.alloc() : memref<f32>
  memref.store %zero, %sum[] : memref<f32>
  scf.for %i = %c0 to %c64 step %c1 {
    %x = memref.load %a[%i] : memref<64xf32>
    %s = memref.load %sum[] : memref<f32>
    %t = arith.addf %s, %x : f32
    memref.store %t, %sum[] : memref<f32>
  }
  %total = memref.load %sum[] : memref<f32>
  memref.dealloc %sum : memref<f32>
  %mean = arith.divf %total, %total : f32
  memref.store %mean, %out[] : memref<f32>
  %block = memref.alloc() : memref<i64>
  %cb = memref.cast %block : memref<i64> to memref<*xi64>
  call @loom_rt_block_index(%cb, %c5) : (memref<*xi64>, i64) -> ()
  %b = memref.load %block[] : memref<i64>
  memref.dealloc %block : memref<i64>
  %bi = arith.index_cast %b : i64 to index
  %off = arith.muli %bi, %c4 : index
  %view = memref.subview %big[%off, 0] [4, 4] [1, 1] : memref<8x4xf32> to memref<4x4xf32, strided<[4, 1], offset: ?>>
  %table = memref.get_global @table : memref<4x4xf32>
  %c = memref.alloc() : memref<4x4xf32>
  call @loom_cuda_matmul_f32(%table, %w, %c, %c5) : (memref<4x4xf32>, memref<4x4xf32>, memref<4x4xf32>, i64) -> ()
  scf.parallel (%i, %j) = (%c0, %c0) to (%c4, %c4) step (%c1, %c1) {
    %v = memref.load %view[%i, %j] : memref<4x4xf32, strided<[4, 1], offset: ?>>
    %u = memref.load %table[%i, %j] : memref<4x4xf32>
    %p = arith.mulf %v, %mean : f32
    %q = arith.addf %p, %u : f32
    memref.store %q, %c[%i, %j] : memref<4x4xf32>
    scf.reduce
  }
  memref.dealloc %c : memref<4x4xf32>
  return
}

// -----

// A loop holding calls or parallel loops (a recurrent layer's time steps)
// stays on the host and its body is placed op by op. The buffer of
// addresses the module's own helper reads (bufferization's
// dealloc_helper) stays in host memory, written by the host; private
// functions are the host's and keep their loops.
// CHECK-LABEL: func.func private @helper
// CHECK-NOT: gpu.launch
// CHECK: scf.for
// CHECK: return
// CHECK-LABEL: func.func @recurrent
// CHECK-SAME: (%[[W:.*]]: memref<4x4xf32>, %[[H:.*]]: memref<4x4xf32>)
// CHECK: scf.for
// CHECK: %[[TMP:.*]] = gpu.alloc () : memref<4x4xf32>
// CHECK: call @loom_cuda_matmul_f32(%[[H]], %[[W]], %[[TMP]], %{{.*}})
// CHECK: gpu.launch
// CHECK: math.tanh
// CHECK: gpu.terminator
// CHECK: gpu.dealloc %[[TMP]]
// CHECK: }
// CHECK: %[[PTRS:.*]] = memref.alloc() : memref<1xindex>
// CHECK: %[[P:.*]] = memref.extract_aligned_pointer_as_index %[[H]]
// CHECK: memref.store %[[P]], %[[PTRS]][
// CHECK: call @helper
// CHECK: memref.dealloc %[[PTRS]]
func.func private @loom_cuda_matmul_f32(memref<4x4xf32>, memref<4x4xf32>, memref<4x4xf32>, i64)

func.func private @helper(%ptrs: memref<?xindex>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %ptrs, %c0 : memref<?xindex>
  scf.for %i = %c0 to %n step %c1 {
    %p = memref.load %ptrs[%i] : memref<?xindex>
    %q = arith.addi %p, %c1 : index
    memref.store %q, %ptrs[%i] : memref<?xindex>
  }
  return
}

func.func @recurrent(%w: memref<4x4xf32>, %h: memref<4x4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c5 = arith.constant 5 : i64
  scf.for %t = %c0 to %c3 step %c1 {
    %tmp = memref.alloc() : memref<4x4xf32>
    func.call @loom_cuda_matmul_f32(%h, %w, %tmp, %c5) : (memref<4x4xf32>, memref<4x4xf32>, memref<4x4xf32>, i64) -> ()
    scf.parallel (%i, %j) = (%c0, %c0) to (%c4, %c4) step (%c1, %c1) {
      %x = memref.load %tmp[%i, %j] : memref<4x4xf32>
      %y = math.tanh %x : f32
      memref.store %y, %h[%i, %j] : memref<4x4xf32>
      scf.reduce
    }
    memref.dealloc %tmp : memref<4x4xf32>
  }
  %ptrs = memref.alloc() : memref<1xindex>
  %p = memref.extract_aligned_pointer_as_index %h : memref<4x4xf32> -> index
  memref.store %p, %ptrs[%c0] : memref<1xindex>
  %cast = memref.cast %ptrs : memref<1xindex> to memref<?xindex>
  call @helper(%cast) : (memref<?xindex>) -> ()
  memref.dealloc %ptrs : memref<1xindex>
  return
}

// -----

// Inside a host loop (it holds a call), a scalar a later launch of the same
// iteration reads still leaves through a buffer allocated where the function
// starts and freed at its return, which every iteration's uses see.
// CHECK-LABEL: func.func @spill_in_loop
// CHECK-NEXT: %[[SPILL:.*]] = gpu.alloc () : memref<f32>
// CHECK: scf.for
// CHECK: gpu.launch
// CHECK: memref.store %{{.*}}, %[[SPILL]][]
// CHECK: call @loom_cuda_matmul_f32
// CHECK: gpu.launch
// CHECK: memref.load %[[SPILL]][]
// CHECK: gpu.dealloc %[[SPILL]]
// CHECK-NEXT: return
func.func private @loom_cuda_matmul_f32(memref<4x4xf32>, memref<4x4xf32>, memref<4x4xf32>, i64)

func.func @spill_in_loop(%w: memref<4x4xf32>, %h: memref<4x4xf32>, %s: memref<f32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c5 = arith.constant 5 : i64
  scf.for %t = %c0 to %c3 step %c1 {
    %scale = memref.load %s[] : memref<f32>
    %twice = arith.addf %scale, %scale : f32
    func.call @loom_cuda_matmul_f32(%h, %w, %h, %c5) : (memref<4x4xf32>, memref<4x4xf32>, memref<4x4xf32>, i64) -> ()
    scf.parallel (%i, %j) = (%c0, %c0) to (%c4, %c4) step (%c1, %c1) {
      %x = memref.load %h[%i, %j] : memref<4x4xf32>
      %y = arith.mulf %x, %twice : f32
      memref.store %y, %h[%i, %j] : memref<4x4xf32>
      scf.reduce
    }
  }
  return
}

// -----

// A buffer only the host and a runtime call touch stays in host memory, so a
// value computed on the device cannot be stored into it.
func.func private @loom_rt_take(memref<*xf32>)

func.func @device_value_into_host_buffer(%a: memref<f32>) {
  %v = memref.load %a[] : memref<f32>
  %w = arith.addf %v, %v : f32
  %hb = memref.alloc() : memref<f32>
  // expected-error @+1 {{needs a value computed on the GPU on the host}}
  memref.store %w, %hb[] : memref<f32>
  %cast = memref.cast %hb : memref<f32> to memref<*xf32>
  func.call @loom_rt_take(%cast) : (memref<*xf32>) -> ()
  memref.dealloc %hb : memref<f32>
  return
}

// -----

// A size the host needs for an allocation cannot come from the device.

func.func @host_needs_device_value(%a: memref<index>) {
  %n = memref.load %a[] : memref<index>
  // expected-error @+1 {{needs a value computed on the GPU on the host}}
  %b = memref.alloc(%n) : memref<?xf32>
  memref.dealloc %b : memref<?xf32>
  return
}
