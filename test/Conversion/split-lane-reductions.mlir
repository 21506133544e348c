// RUN: loom-opt %s --split-input-file --loom-split-lane-reductions | FileCheck %s

// Masked row maxima of attention scores ([B, H, T, T] -> [B, H, T, 1], the
// mask broadcast over B and H): the reduced dimension of 64 becomes [4, 16]
// in every input that indexes it, the op keeps 16 partial maxima per row in
// a new innermost parallel dimension, starting from -inf, and a second op
// combines them with the original init.

#mask = affine_map<(b, h, i, j) -> (0, 0, i, j)>
#scores = affine_map<(b, h, i, j) -> (b, h, i, j)>
#row = affine_map<(b, h, i, j) -> (b, h, i, 0)>

// CHECK-LABEL: func.func @masked_row_max
// CHECK-SAME: (%[[MASK:.*]]: tensor<1x1x8x64xf32>, %[[S:.*]]: tensor<2x3x8x64xf32>, %[[INIT:.*]]: tensor<2x3x8x1xf32>)
// CHECK: %[[M:.*]] = tensor.expand_shape %[[MASK]] {{\[}}[0], [1], [2], [3, 4]] output_shape [1, 1, 8, 4, 16]
// CHECK: %[[X:.*]] = tensor.expand_shape %[[S]] {{\[}}[0], [1], [2], [3, 4]] output_shape [2, 3, 8, 4, 16]
// CHECK: %[[NEGINF:.*]] = arith.constant 0xFF800000 : f32
// CHECK: %[[E:.*]] = tensor.empty() : tensor<2x3x8x1x16xf32>
// CHECK: %[[F:.*]] = linalg.fill ins(%[[NEGINF]] : f32) outs(%[[E]] :
// CHECK: %[[P:.*]] = linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "parallel", "parallel", "reduction", "parallel"]
// CHECK-SAME: ins(%[[M]], %[[X]] : tensor<1x1x8x4x16xf32>, tensor<2x3x8x4x16xf32>) outs(%[[F]] : tensor<2x3x8x1x16xf32>)
// CHECK: arith.select
// CHECK: arith.maximumf
// CHECK: %[[R:.*]] = linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]
// CHECK-SAME: ins(%[[P]] : tensor<2x3x8x1x16xf32>) outs(%[[INIT]] : tensor<2x3x8x1xf32>)
// CHECK: arith.maximumf
// CHECK: return %[[R]]
func.func @masked_row_max(%mask: tensor<1x1x8x64xf32>, %s: tensor<2x3x8x64xf32>,
                          %init: tensor<2x3x8x1xf32>) -> tensor<2x3x8x1xf32> {
  %zero = arith.constant 0.0 : f32
  %neginf = arith.constant 0xFF800000 : f32
  %r = linalg.generic {indexing_maps = [#mask, #scores, #row],
                       iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%mask, %s : tensor<1x1x8x64xf32>, tensor<2x3x8x64xf32>) outs(%init : tensor<2x3x8x1xf32>) {
  ^bb0(%m: f32, %x: f32, %acc: f32):
    %masked = arith.cmpf oeq, %m, %zero : f32
    %v = arith.select %masked, %neginf, %x : f32
    %max = arith.maximumf %acc, %v : f32
    linalg.yield %max : f32
  } -> tensor<2x3x8x1xf32>
  return %r : tensor<2x3x8x1xf32>
}

// -----

// A minimum splits too; the combining op takes minima.

#in = affine_map<(i, j) -> (i, j)>
#out = affine_map<(i, j) -> (i)>

// CHECK-LABEL: func.func @row_min
// CHECK: arith.constant 0x7F800000 : f32
// CHECK: tensor<4x2x16xf32>
// CHECK: arith.minimumf
// CHECK: linalg.generic
// CHECK: arith.minimumf
func.func @row_min(%x: tensor<4x32xf32>, %init: tensor<4xf32>) -> tensor<4xf32> {
  %r = linalg.generic {indexing_maps = [#in, #out], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x32xf32>) outs(%init : tensor<4xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %m = arith.minimumf %acc, %v : f32
    linalg.yield %m : f32
  } -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// A sum splits into 16 lanes from 0, combined in order with the init: the
// order of its additions no longer depends on the loop LLVM vectorizes.

#in = affine_map<(i, j) -> (i, j)>
#out = affine_map<(i, j) -> (i)>

// CHECK-LABEL: func.func @row_sum
// CHECK: tensor.expand_shape {{.*}} output_shape [4, 4, 16]
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: linalg.fill ins(%[[ZERO]] : f32) outs({{.*}} : tensor<4x16xf32>)
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "reduction", "parallel"]
// CHECK: arith.addf
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "reduction"]
// CHECK-SAME: outs(%arg1 : tensor<4xf32>)
// CHECK: arith.addf
func.func @row_sum(%x: tensor<4x64xf32>, %init: tensor<4xf32>) -> tensor<4xf32> {
  %r = linalg.generic {indexing_maps = [#in, #out], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x64xf32>) outs(%init : tensor<4xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %s = arith.addf %acc, %v : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// Left alone: a sum over 16 elements (fewer than 32), a maximum over 24
// elements (not a multiple of 16), and a maximum along the rows of its
// input (the innermost loop, but not the contiguous dimension).

#in = affine_map<(i, j) -> (i, j)>
#out = affine_map<(i, j) -> (i)>
#inT = affine_map<(j, i) -> (i, j)>
#outT = affine_map<(j, i) -> (j)>

// CHECK-LABEL: func.func @not_split
// CHECK-NOT: tensor.expand_shape
// CHECK-COUNT-3: linalg.generic
// CHECK-NOT: linalg.generic
func.func @not_split(%a: tensor<4x16xf32>, %b: tensor<4x24xf32>, %c: tensor<64x32xf32>,
                     %i4: tensor<4xf32>, %i32: tensor<32xf32>)
    -> (tensor<4xf32>, tensor<4xf32>, tensor<32xf32>) {
  %sum = linalg.generic {indexing_maps = [#in, #out], iterator_types = ["parallel", "reduction"]}
      ins(%a : tensor<4x16xf32>) outs(%i4 : tensor<4xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %s = arith.addf %acc, %v : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %short = linalg.generic {indexing_maps = [#in, #out], iterator_types = ["parallel", "reduction"]}
      ins(%b : tensor<4x24xf32>) outs(%i4 : tensor<4xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %m = arith.maximumf %acc, %v : f32
    linalg.yield %m : f32
  } -> tensor<4xf32>
  %outer = linalg.generic {indexing_maps = [#inT, #outT], iterator_types = ["parallel", "reduction"]}
      ins(%c : tensor<64x32xf32>) outs(%i32 : tensor<32xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %m = arith.maximumf %acc, %v : f32
    linalg.yield %m : f32
  } -> tensor<32xf32>
  return %sum, %short, %outer : tensor<4xf32>, tensor<4xf32>, tensor<32xf32>
}
