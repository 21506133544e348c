// RUN: loom-opt %s --split-input-file --loom-reassociate-reductions | FileCheck %s --check-prefix=REASSOC
// RUN: loom-opt %s --split-input-file --loom-approximate-math | FileCheck %s --check-prefix=APPROX

// Sums keep their order (no fast-math flags: a reassociated sum rounds as
// the vectorizer decides for the loop around it); products and maxima get
// reassoc and contract (below); elementwise generics keep strict arithmetic.
// REASSOC-LABEL: func @sum_rows
// REASSOC: arith.mulf %{{.*}}, %{{.*}} : f32
// REASSOC-NOT: fastmath
// REASSOC: arith.addf %{{.*}}, %{{.*}} : f32
// REASSOC-NOT: fastmath
// REASSOC-LABEL: func @scale
// REASSOC-NOT: fastmath
// REASSOC: return
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @sum_rows(%x: tensor<4x8xf32>, %init: tensor<4xf32>) -> tensor<4xf32> {
  %0 = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x8xf32>) outs(%init : tensor<4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %sq = arith.mulf %a, %a : f32
    %s = arith.addf %acc, %sq : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
func.func @scale(%x: tensor<4x8xf32>, %out: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %c = arith.constant 2.0 : f32
  %0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x8xf32>) outs(%out : tensor<4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.mulf %a, %c : f32
    linalg.yield %m : f32
  } -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// Only the accumulation is relaxed: a normalization fused into a max pool
// keeps strict arithmetic, so that the same values computed elsewhere (the
// pool's gradient compares them with its result) are bit-identical.
// REASSOC-LABEL: func @fused_producer_stays_strict
// REASSOC: %[[D:.*]] = arith.subf %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} : f32
// REASSOC: %[[S:.*]] = arith.mulf %[[D]], %{{[a-z0-9_]+}} : f32
// REASSOC: %[[N:.*]] = arith.addf %[[S]], %{{[a-z0-9_]+}} : f32
// REASSOC: arith.maximumf %{{[a-z0-9_]+}}, %[[N]] fastmath<reassoc,contract> : f32
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#row2 = affine_map<(d0, d1) -> (d0)>
func.func @fused_producer_stays_strict(%x: tensor<4x8xf32>, %init: tensor<4xf32>) -> tensor<4xf32> {
  %m = arith.constant 0.5 : f32
  %s = arith.constant 2.0 : f32
  %b = arith.constant 0.25 : f32
  %0 = linalg.generic {indexing_maps = [#id2, #row2], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x8xf32>) outs(%init : tensor<4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %d = arith.subf %a, %m : f32
    %sc = arith.mulf %d, %s : f32
    %n = arith.addf %sc, %b : f32
    %r = arith.maximumf %acc, %n : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// f32 exp, log, tanh and erf become arithmetic; f64 keeps its libm call, and
// so do functions without an approximation here (sin).
// APPROX-LABEL: func @math
// APPROX-NOT: math.exp %{{.*}} : f32
// APPROX-NOT: math.log %{{.*}} : f32
// APPROX-NOT: math.tanh %{{.*}} : f32
// APPROX-NOT: math.erf %{{.*}} : f32
// APPROX: math.fma
// APPROX-DAG: math.erf %{{.*}} : f64
// APPROX-DAG: math.sin %{{.*}} : f32
func.func @math(%x: f32, %y: f64) -> (f32, f32, f32, f32, f64, f32) {
  %0 = math.exp %x : f32
  %1 = math.log %x : f32
  %2 = math.tanh %x : f32
  %3 = math.erf %x : f32
  %4 = math.erf %y : f64
  %5 = math.sin %x : f32
  return %0, %1, %2, %3, %4, %5 : f32, f32, f32, f32, f64, f32
}

// -----

// A product reduction is reassociated, with the products feeding it.
// REASSOC-LABEL: func @prod_rows
// REASSOC: arith.mulf %{{.*}}, %{{.*}} fastmath<reassoc,contract> : f32
#id3 = affine_map<(d0, d1) -> (d0, d1)>
#row3 = affine_map<(d0, d1) -> (d0)>
func.func @prod_rows(%x: tensor<4x8xf32>, %init: tensor<4xf32>) -> tensor<4xf32> {
  %0 = linalg.generic {indexing_maps = [#id3, #row3], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x8xf32>) outs(%init : tensor<4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %p = arith.mulf %acc, %a : f32
    linalg.yield %p : f32
  } -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
