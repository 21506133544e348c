// RUN: loom-opt %s --loom-dealloc-at-last-use | FileCheck %s

// Each free moves to right after the last use of its buffer in its block,
// views of it included; a buffer used in a nested region is freed after
// the op holding the region.

// CHECK-LABEL: func.func @frees
// CHECK:      %[[A:.*]] = memref.alloc() : memref<16xf32>
// CHECK-NEXT: %[[B:.*]] = memref.alloc() : memref<16xf32>
// CHECK-NEXT: linalg.fill ins(%{{.*}} : f32) outs(%[[A]] : memref<16xf32>)
// CHECK-NEXT: linalg.copy ins(%[[A]] : memref<16xf32>) outs(%[[B]] : memref<16xf32>)
// CHECK-NEXT: memref.dealloc %[[A]]
// CHECK-NEXT: %[[C:.*]] = memref.alloc() : memref<16xf32>
// CHECK-NEXT: %[[V:.*]] = memref.subview %[[B]][0] [8] [1]
// CHECK-NEXT: %[[W:.*]] = memref.subview %[[C]][0] [8] [1]
// CHECK-NEXT: scf.for
// CHECK:        memref.load %[[V]]
// CHECK:        memref.store %{{.*}}, %[[W]]
// CHECK:      }
// CHECK-NEXT: memref.dealloc %[[B]]
// CHECK-NEXT: linalg.copy ins(%[[C]] : memref<16xf32>) outs(%arg0 : memref<16xf32>)
// CHECK-NEXT: memref.dealloc %[[C]]
// CHECK-NEXT: %[[D:.*]] = memref.alloc() : memref<16xf32>
// CHECK-NEXT: memref.dealloc %[[D]]
// CHECK-NEXT: return
func.func @frees(%out: memref<16xf32>) {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %a = memref.alloc() : memref<16xf32>
  %b = memref.alloc() : memref<16xf32>
  linalg.fill ins(%zero : f32) outs(%a : memref<16xf32>)
  linalg.copy ins(%a : memref<16xf32>) outs(%b : memref<16xf32>)
  %c = memref.alloc() : memref<16xf32>
  %v = memref.subview %b[0] [8] [1] : memref<16xf32> to memref<8xf32, strided<[1]>>
  %w = memref.subview %c[0] [8] [1] : memref<16xf32> to memref<8xf32, strided<[1]>>
  scf.for %i = %c0 to %c8 step %c1 {
    %x = memref.load %v[%i] : memref<8xf32, strided<[1]>>
    memref.store %x, %w[%i] : memref<8xf32, strided<[1]>>
  }
  linalg.copy ins(%c : memref<16xf32>) outs(%out : memref<16xf32>)
  %d = memref.alloc() : memref<16xf32>
  memref.dealloc %a : memref<16xf32>
  memref.dealloc %b : memref<16xf32>
  memref.dealloc %c : memref<16xf32>
  memref.dealloc %d : memref<16xf32>
  return
}

// A buffer freed inside a region but used outside it stays where it is.
// CHECK-LABEL: func.func @stays
// CHECK:      scf.if
// CHECK-NEXT:   memref.load
// CHECK-NEXT:   memref.dealloc
// CHECK:      memref.load
func.func @stays(%p: i1) -> f32 {
  %c0 = arith.constant 0 : index
  %a = memref.alloc() : memref<4xf32>
  %r = scf.if %p -> f32 {
    %x = memref.load %a[%c0] : memref<4xf32>
    memref.dealloc %a : memref<4xf32>
    scf.yield %x : f32
  } else {
    %y = memref.load %a[%c0] : memref<4xf32>
    scf.yield %y : f32
  }
  return %r : f32
}
