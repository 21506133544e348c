// RUN: loom-opt %s --split-input-file --loom-split-reductions=min-work=1024 | FileCheck %s

// A bias gradient, [8, 16, 128] -> [128]: its loops run b and t (reductions)
// around d (parallel). d splits into 8 tiles of 16 under an outer parallel
// loop, each tile reducing over all of b and t for its 16 results.

#in = affine_map<(b, t, d) -> (b, t, d)>
#out = affine_map<(b, t, d) -> (d)>

// CHECK-LABEL: func.func @bias_gradient
// CHECK: scf.parallel (%[[D:.*]]) = (%{{.*}}) to (%{{c128.*}}) step (%{{c16.*}})
// CHECK: %[[IN:.*]] = memref.subview %{{.*}}[0, 0, %[[D]]] [8, 16, 16] [1, 1, 1]
// CHECK: %[[OUT:.*]] = memref.subview %{{.*}}[%[[D]]] [16] [1]
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["reduction", "reduction", "parallel"]
// CHECK-SAME: ins(%[[IN]] :
// CHECK-SAME: outs(%[[OUT]] :
func.func @bias_gradient(%g: memref<8x16x128xf32>, %acc: memref<128xf32>) {
  linalg.generic {indexing_maps = [#in, #out], iterator_types = ["reduction", "reduction", "parallel"]}
      ins(%g : memref<8x16x128xf32>) outs(%acc : memref<128xf32>) {
  ^bb0(%x: f32, %a: f32):
    %s = arith.addf %a, %x : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A parallel dimension that is not innermost splits into 8 tiles of any
// size (here 3 of 20 rows, the last tile shorter).

#in = affine_map<(b, m, n) -> (b, m, n)>
#out = affine_map<(b, m, n) -> (m, n)>

// CHECK-LABEL: func.func @batch_sum
// CHECK: scf.parallel (%{{.*}}) = (%{{.*}}) to (%{{c20.*}}) step (%{{c3.*}})
// CHECK: affine.min
// CHECK: linalg.generic
func.func @batch_sum(%g: memref<64x20x32xf32>, %acc: memref<20x32xf32>) {
  linalg.generic {indexing_maps = [#in, #out], iterator_types = ["reduction", "parallel", "parallel"]}
      ins(%g : memref<64x20x32xf32>) outs(%acc : memref<20x32xf32>) {
  ^bb0(%x: f32, %a: f32):
    %s = arith.addf %a, %x : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Left whole: ops that start with a parallel loop (already split by the
// outlining), ops below min-work, and an innermost dimension that does not
// split into multiples of 16.

// CHECK-LABEL: func.func @left_whole
// CHECK-NOT: scf.parallel
// CHECK-COUNT-3: linalg.generic
// CHECK-NOT: scf.parallel
func.func @left_whole(%rows: memref<64x128xf32>, %r: memref<64xf32>, %small: memref<4x8x16xf32>, %s: memref<16xf32>, %odd: memref<64x40xf32>, %o: memref<40xf32>) {
  linalg.generic {indexing_maps = [affine_map<(m, k) -> (m, k)>, affine_map<(m, k) -> (m)>], iterator_types = ["parallel", "reduction"]}
      ins(%rows : memref<64x128xf32>) outs(%r : memref<64xf32>) {
  ^bb0(%x: f32, %a: f32):
    %v = arith.addf %a, %x : f32
    linalg.yield %v : f32
  }
  linalg.generic {indexing_maps = [affine_map<(b, t, d) -> (b, t, d)>, affine_map<(b, t, d) -> (d)>], iterator_types = ["reduction", "reduction", "parallel"]}
      ins(%small : memref<4x8x16xf32>) outs(%s : memref<16xf32>) {
  ^bb0(%x: f32, %a: f32):
    %v = arith.addf %a, %x : f32
    linalg.yield %v : f32
  }
  linalg.generic {indexing_maps = [affine_map<(b, d) -> (b, d)>, affine_map<(b, d) -> (d)>], iterator_types = ["reduction", "parallel"]}
      ins(%odd : memref<64x40xf32>) outs(%o : memref<40xf32>) {
  ^bb0(%x: f32, %a: f32):
    %v = arith.addf %a, %x : f32
    linalg.yield %v : f32
  }
  return
}
