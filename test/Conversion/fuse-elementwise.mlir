// RUN: loom-opt %s --split-input-file --loom-fuse-elementwise | FileCheck %s

// A producer over the same iteration space fuses into its consumer.

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0, 0)>

// CHECK-LABEL: func.func @same_space
// CHECK: linalg.generic
// CHECK: math.sqrt
// CHECK: arith.mulf
// CHECK-NOT: linalg.generic
func.func @same_space(%a: tensor<64x32xf32>, %b: tensor<64x32xf32>) -> tensor<64x32xf32> {
  %e = tensor.empty() : tensor<64x32xf32>
  %s = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<64x32xf32>) outs(%e : tensor<64x32xf32>) {
  ^bb0(%x: f32, %o: f32):
    %r = math.sqrt %x : f32
    linalg.yield %r : f32
  } -> tensor<64x32xf32>
  %m = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%s, %b : tensor<64x32xf32>, tensor<64x32xf32>) outs(%e : tensor<64x32xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %r = arith.mulf %x, %y : f32
    linalg.yield %r : f32
  } -> tensor<64x32xf32>
  return %m : tensor<64x32xf32>
}

// -----

// A per-row statistic with a square root and a division (layer norm's
// 1 / sqrt(var + eps)) is computed once per row, not once per element of the
// row it is broadcast over; a cheap per-row producer (one addition) fuses.

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0, 0)>
#rowid = affine_map<(d0, d1) -> (d0, d1)>

// CHECK-LABEL: func.func @broadcast_row
// CHECK: %[[RSTD:.*]] = linalg.generic
// CHECK: math.sqrt
// CHECK: arith.divf
// CHECK: linalg.generic
// CHECK-SAME: ins(%{{.*}}, %[[RSTD]], %{{.*}} :
// CHECK-NOT: math.sqrt
// CHECK: arith.addf
// CHECK: arith.mulf
// CHECK-NOT: linalg.generic
func.func @broadcast_row(%x: tensor<64x32xf32>, %var: tensor<64x1xf32>, %mean: tensor<64x1xf32>) -> tensor<64x32xf32> {
  %one = arith.constant 1.0 : f32
  %eps = arith.constant 1.0e-5 : f32
  %e1 = tensor.empty() : tensor<64x1xf32>
  %rstd = linalg.generic {indexing_maps = [#rowid, #rowid], iterator_types = ["parallel", "parallel"]}
      ins(%var : tensor<64x1xf32>) outs(%e1 : tensor<64x1xf32>) {
  ^bb0(%v: f32, %o: f32):
    %a = arith.addf %v, %eps : f32
    %s = math.sqrt %a : f32
    %r = arith.divf %one, %s : f32
    linalg.yield %r : f32
  } -> tensor<64x1xf32>
  %shift = linalg.generic {indexing_maps = [#rowid, #rowid], iterator_types = ["parallel", "parallel"]}
      ins(%mean : tensor<64x1xf32>) outs(%e1 : tensor<64x1xf32>) {
  ^bb0(%v: f32, %o: f32):
    %a = arith.addf %v, %one : f32
    linalg.yield %a : f32
  } -> tensor<64x1xf32>
  %e = tensor.empty() : tensor<64x32xf32>
  %n = linalg.generic {indexing_maps = [#id, #row, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %rstd, %shift : tensor<64x32xf32>, tensor<64x1xf32>, tensor<64x1xf32>) outs(%e : tensor<64x32xf32>) {
  ^bb0(%a: f32, %r: f32, %m: f32, %o: f32):
    %d = arith.subf %a, %m : f32
    %y = arith.mulf %d, %r : f32
    linalg.yield %y : f32
  } -> tensor<64x32xf32>
  return %n : tensor<64x32xf32>
}

// -----

// A gather (embedding lookup) fuses into its only consumer, but is not
// copied into each of two.

#id = affine_map<(d0, d1) -> (d0, d1)>
#ids = affine_map<(d0, d1) -> (d0)>

// CHECK-LABEL: func.func @gather_one_use
// CHECK: linalg.generic
// CHECK: tensor.extract
// CHECK: arith.mulf
// CHECK-NOT: linalg.generic
func.func @gather_one_use(%table: tensor<100x16xf32>, %ids: tensor<8xindex>, %w: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %e = tensor.empty() : tensor<8x16xf32>
  %g = linalg.generic {indexing_maps = [#ids, #id], iterator_types = ["parallel", "parallel"]}
      ins(%ids : tensor<8xindex>) outs(%e : tensor<8x16xf32>) {
  ^bb0(%i: index, %o: f32):
    %j = linalg.index 1 : index
    %v = tensor.extract %table[%i, %j] : tensor<100x16xf32>
    linalg.yield %v : f32
  } -> tensor<8x16xf32>
  %m = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%g, %w : tensor<8x16xf32>, tensor<8x16xf32>) outs(%e : tensor<8x16xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %r = arith.mulf %x, %y : f32
    linalg.yield %r : f32
  } -> tensor<8x16xf32>
  return %m : tensor<8x16xf32>
}

// CHECK-LABEL: func.func @gather_two_uses
// CHECK: %[[G:.*]] = linalg.generic
// CHECK: tensor.extract
// CHECK: linalg.generic
// CHECK-SAME: ins(%[[G]],
// CHECK-NOT: tensor.extract
// CHECK: linalg.generic
// CHECK-SAME: ins(%[[G]],
// CHECK-NOT: tensor.extract
// CHECK: return
func.func @gather_two_uses(%table: tensor<100x16xf32>, %ids: tensor<8xindex>, %w: tensor<8x16xf32>) -> (tensor<8x16xf32>, tensor<8x16xf32>) {
  %e = tensor.empty() : tensor<8x16xf32>
  %g = linalg.generic {indexing_maps = [#ids, #id], iterator_types = ["parallel", "parallel"]}
      ins(%ids : tensor<8xindex>) outs(%e : tensor<8x16xf32>) {
  ^bb0(%i: index, %o: f32):
    %j = linalg.index 1 : index
    %v = tensor.extract %table[%i, %j] : tensor<100x16xf32>
    linalg.yield %v : f32
  } -> tensor<8x16xf32>
  %m = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%g, %w : tensor<8x16xf32>, tensor<8x16xf32>) outs(%e : tensor<8x16xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %r = arith.mulf %x, %y : f32
    linalg.yield %r : f32
  } -> tensor<8x16xf32>
  %a = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%g, %w : tensor<8x16xf32>, tensor<8x16xf32>) outs(%e : tensor<8x16xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %r = arith.addf %x, %y : f32
    linalg.yield %r : f32
  } -> tensor<8x16xf32>
  return %m, %a : tensor<8x16xf32>, tensor<8x16xf32>
}

// -----

// An optimizer's new moment is a result of the step and an input of the
// update: the update's loop computes it once and yields it as well, instead
// of a loop of its own and a recomputation in the update.

#id = affine_map<(d0) -> (d0)>

// CHECK-LABEL: func.func @returned_producer
// CHECK: %[[F:.*]]:2 = linalg.generic
// CHECK-SAME: ins(%{{.*}}, %{{.*}}, %{{.*}} : tensor<64xf32>, tensor<64xf32>, tensor<64xf32>)
// CHECK: arith.addf
// CHECK: arith.subf
// CHECK-NOT: linalg.generic
// CHECK: return %[[F]]#1, %[[F]]#0
func.func @returned_producer(%m: tensor<64xf32>, %g: tensor<64xf32>, %p: tensor<64xf32>) -> (tensor<64xf32>, tensor<64xf32>) {
  %e = tensor.empty() : tensor<64xf32>
  %m2 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]} ins(%m, %g : tensor<64xf32>, tensor<64xf32>) outs(%e : tensor<64xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<64xf32>
  %p2 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]} ins(%p, %m2 : tensor<64xf32>, tensor<64xf32>) outs(%e : tensor<64xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.subf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<64xf32>
  return %p2, %m2 : tensor<64xf32>, tensor<64xf32>
}

// A producer also read by another op keeps its own loop (and is recomputed
// in the consumer, as upstream's fusion does).
// CHECK-LABEL: func.func @producer_read_elsewhere
// CHECK: %[[M:.*]] = linalg.generic
// CHECK: arith.addf
// CHECK: linalg.generic
// CHECK: arith.addf
// CHECK: arith.subf
// CHECK: tensor.extract %[[M]]
// CHECK: return %{{.*}}, %[[M]], %{{.*}}
func.func @producer_read_elsewhere(%m: tensor<64xf32>, %g: tensor<64xf32>, %p: tensor<64xf32>) -> (tensor<64xf32>, tensor<64xf32>, f32) {
  %e = tensor.empty() : tensor<64xf32>
  %m2 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]} ins(%m, %g : tensor<64xf32>, tensor<64xf32>) outs(%e : tensor<64xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<64xf32>
  %p2 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]} ins(%p, %m2 : tensor<64xf32>, tensor<64xf32>) outs(%e : tensor<64xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.subf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<64xf32>
  %i = arith.constant 3 : index
  %c = tensor.extract %m2[%i] : tensor<64xf32>
  return %p2, %m2, %c : tensor<64xf32>, tensor<64xf32>, f32
}

// A consumer that reads the returned producer twice (a squared moment) is
// left to upstream's fusion, which keeps the producer: fusing it here would
// make the fused op read its own result (and the driver never stopped).
// CHECK-LABEL: func.func @returned_producer_read_twice
// CHECK: %[[M:.*]] = linalg.generic
// CHECK: arith.addf
// CHECK: %[[SQ:.*]] = linalg.generic
// CHECK-NOT: ins(%[[M]]
// CHECK: arith.mulf
// CHECK: return %[[SQ]], %[[M]]
func.func @returned_producer_read_twice(%m: tensor<64xf32>, %g: tensor<64xf32>) -> (tensor<64xf32>, tensor<64xf32>) {
  %e = tensor.empty() : tensor<64xf32>
  %m2 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]} ins(%m, %g : tensor<64xf32>, tensor<64xf32>) outs(%e : tensor<64xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<64xf32>
  %sq = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]} ins(%m2, %m2 : tensor<64xf32>, tensor<64xf32>) outs(%e : tensor<64xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.mulf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<64xf32>
  return %sq, %m2 : tensor<64xf32>, tensor<64xf32>
}

// -----

// A costly producer (GELU's gradient: erf and exp) read by two consumers, a
// bias gradient and an elementwise op, is computed once and read by both
// instead of being copied into each; a cheap one (a multiplication) with two
// consumers fuses into both.

#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>

// CHECK-LABEL: func.func @costly_producer_two_uses
// CHECK: %[[G:.*]] = linalg.generic
// CHECK: math.erf
// CHECK: math.exp
// CHECK: linalg.generic {{.*}} ins(%[[G]] :
// CHECK-NOT: math.erf
// CHECK: linalg.generic {{.*}} ins(%[[G]], %{{.*}} :
// CHECK-NOT: math.erf
// CHECK: return
func.func @costly_producer_two_uses(%a: tensor<64x32xf32>, %b: tensor<64x32xf32>, %bias: tensor<32xf32>)
    -> (tensor<32xf32>, tensor<64x32xf32>) {
  %e = tensor.empty() : tensor<64x32xf32>
  %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<64x32xf32>) outs(%e : tensor<64x32xf32>) {
  ^bb0(%x: f32, %o: f32):
    %r = math.erf %x : f32
    %s = math.exp %r : f32
    linalg.yield %s : f32
  } -> tensor<64x32xf32>
  %db = linalg.generic {indexing_maps = [#id, #col], iterator_types = ["reduction", "parallel"]}
      ins(%g : tensor<64x32xf32>) outs(%bias : tensor<32xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %r = arith.addf %acc, %x : f32
    linalg.yield %r : f32
  } -> tensor<32xf32>
  %m = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%g, %b : tensor<64x32xf32>, tensor<64x32xf32>) outs(%e : tensor<64x32xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %r = arith.mulf %x, %y : f32
    linalg.yield %r : f32
  } -> tensor<64x32xf32>
  return %db, %m : tensor<32xf32>, tensor<64x32xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>

// CHECK-LABEL: func.func @cheap_producer_two_uses
// CHECK-COUNT-2: arith.mulf
// CHECK-NOT: linalg.generic {{.*}} ins(%{{.*}} : tensor<64x32xf32>) outs(%{{.*}} : tensor<64x32xf32>)
// CHECK: return
func.func @cheap_producer_two_uses(%a: tensor<64x32xf32>, %b: tensor<64x32xf32>, %bias: tensor<32xf32>)
    -> (tensor<32xf32>, tensor<64x32xf32>) {
  %e = tensor.empty() : tensor<64x32xf32>
  %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<64x32xf32>) outs(%e : tensor<64x32xf32>) {
  ^bb0(%x: f32, %o: f32):
    %r = arith.mulf %x, %x : f32
    linalg.yield %r : f32
  } -> tensor<64x32xf32>
  %db = linalg.generic {indexing_maps = [#id, #col], iterator_types = ["reduction", "parallel"]}
      ins(%g : tensor<64x32xf32>) outs(%bias : tensor<32xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %r = arith.addf %acc, %x : f32
    linalg.yield %r : f32
  } -> tensor<32xf32>
  %m = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%g, %b : tensor<64x32xf32>, tensor<64x32xf32>) outs(%e : tensor<64x32xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %r = arith.addf %x, %y : f32
    linalg.yield %r : f32
  } -> tensor<64x32xf32>
  return %db, %m : tensor<32xf32>, tensor<64x32xf32>
}
