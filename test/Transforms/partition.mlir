// RUN: loom-opt %s --split-input-file --verify-diagnostics --loom-propagate-sharding --loom-partition | FileCheck %s

// Data parallelism on a linear layer: the forward runs on the local half of
// the batch; the weight gradient contracts over the split batch, so its
// partial sums are all-reduced where they meet the replicated weight in the
// update. The mean loss is an average of the per-device means, completed
// where it is returned.

loom.mesh @mesh = <dp = 2>
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: (%[[X:.*]]: tensor<4x3xf32> {loom.sharding = #loom.sharding<@mesh, [{dp}, {}]>}, %[[W:.*]]: tensor<3x2xf32>)
// CHECK-SAME: -> (tensor<f32>, tensor<3x2xf32>)
func.func @train_step(
    %x: tensor<8x3xf32> {loom.sharding = #loom.sharding<@mesh, [{dp}, {}]>},
    %w: tensor<3x2xf32>) -> (tensor<f32>, tensor<3x2xf32>) {
  // CHECK: %[[Y:.*]] = loom.matmul %[[X]], %[[W]] : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  %y = loom.matmul %x, %w : (tensor<8x3xf32>, tensor<3x2xf32>) -> tensor<8x2xf32>
  // CHECK: %[[L:.*]] = loom.reduce_mean %[[Y]] {{.*}} -> tensor<f32>
  %loss = loom.reduce_mean %y {axes = array<i64>} : (tensor<8x2xf32>) -> tensor<f32>
  // CHECK: %[[G:.*]] = loom.matmul %[[X]], %[[Y]] {transpose_lhs} : (tensor<4x3xf32>, tensor<4x2xf32>) -> tensor<3x2xf32>
  // CHECK: %[[GRAD:.*]] = loom.all_reduce sum %[[G]] on @mesh ["dp"] : tensor<3x2xf32>
  %g = loom.matmul %x, %y {transpose_lhs} : (tensor<8x3xf32>, tensor<8x2xf32>) -> tensor<3x2xf32>
  // CHECK: %[[NEW:.*]] = loom.sub %[[W]], %[[GRAD]]
  // CHECK: %[[LOSS:.*]] = loom.all_reduce avg %[[L]] on @mesh ["dp"] : tensor<f32>
  %new = loom.sub %w, %g : (tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<3x2xf32>
  // CHECK: return %[[LOSS]], %[[NEW]]
  return %loss, %new : tensor<f32>, tensor<3x2xf32>
}

// -----

// Splat constants shrink to the local block; a full-width slice keeps its
// limits in step with the local size; results that stay split say so.

loom.mesh @mesh = <dp = 2>
// CHECK-LABEL: func.func @local_shapes
// CHECK-SAME: -> (tensor<4x2xf32> {loom.sharding = #loom.sharding<@mesh, [{dp}, {}]>})
func.func @local_shapes(
    %x: tensor<8x4xf32> {loom.sharding = #loom.sharding<@mesh, [{dp}, {}]>}) -> tensor<8x2xf32> {
  // CHECK: %[[C:.*]] = loom.constant dense<2.000000e+00> : tensor<4x4xf32>
  %c = loom.constant dense<2.0> : tensor<8x4xf32>
  %y = loom.mul %c, %x : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
  // CHECK: loom.slice %{{.*}} {limits = array<i64: 4, 3>, starts = array<i64: 0, 1>, steps = array<i64: 1, 1>} : tensor<4x4xf32> -> tensor<4x2xf32>
  %s = loom.slice %y {starts = array<i64: 0, 1>, limits = array<i64: 8, 3>, steps = array<i64: 1, 1>} : tensor<8x4xf32> -> tensor<8x2xf32>
  return %s : tensor<8x2xf32>
}

// -----

// An op that needs the split dimension whole gets it gathered first.

loom.mesh @mesh = <dp = 2>
// CHECK-LABEL: func.func @gather_for_softmax
func.func @gather_for_softmax(
    %x: tensor<8x4xf32> {loom.sharding = #loom.sharding<@mesh, [{dp}, {}]>}) -> tensor<8x4xf32> {
  // CHECK: %[[E:.*]] = loom.exp %{{.*}} : tensor<4x4xf32>
  %e = loom.exp %x : tensor<8x4xf32>
  // CHECK: %[[ALL:.*]] = loom.all_gather %[[E]] on @mesh ["dp"] {gather_dim = 0 : i64} : tensor<4x4xf32> -> tensor<8x4xf32>
  // CHECK: loom.softmax %[[ALL]] {axis = 0 : i64} : tensor<8x4xf32>
  %y = loom.softmax %e {axis = 0 : i64} : tensor<8x4xf32>
  return %y : tensor<8x4xf32>
}

// -----

// A whole value meets a split one: the dropout of the replicated %r takes
// the add's split (propagated back), so %r's local block is taken (no
// communication) and the dropout runs on it, placed in the whole tensor.

loom.mesh @mesh = <dp = 2>
// CHECK-LABEL: func.func @whole_meets_split
func.func @whole_meets_split(
    %x: tensor<8x4xf32> {loom.sharding = #loom.sharding<@mesh, [{dp}, {}]>},
    %r: tensor<8x4xf32>) -> tensor<8x4xf32> {
  // CHECK: %[[B:.*]] = loom.local_block %{{.*}} on @mesh ["dp"] {dim = 0 : i64} : tensor<8x4xf32> -> tensor<4x4xf32>
  // CHECK: %[[D:.*]], %{{.*}} = loom.dropout %[[B]] index_base %{{.*}} {ratio = 5.000000e-01 : f64, whole_shape = array<i64: 8, 4>} : (tensor<4x4xf32>, tensor<i64>) -> (tensor<4x4xf32>, tensor<4x4xi1>)
  // CHECK: loom.add %{{.*}}, %[[D]] : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %d, %mask = loom.dropout %r {ratio = 5.000000e-01 : f64} : (tensor<8x4xf32>) -> (tensor<8x4xf32>, tensor<8x4xi1>)
  %y = loom.add %x, %d : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
  return %y : tensor<8x4xf32>
}

// -----

// ZeRO: optimizer state split along dimension 0, the parameter replicated.
// The gradient's partial sums meet the split state, so a reduce_scatter
// completes them (each device keeps its block); the updated block of the
// parameter is gathered whole again for the result that replaces it.

loom.mesh @mesh = <dp = 2>
// CHECK-LABEL: func.func @sharded_update
// CHECK-SAME: %[[M:[a-z0-9]+]]: tensor<2x2xf32> {loom.sharding = #loom.sharding<@mesh, [{dp}, {}]>, loom.state = "w.m"}
func.func @sharded_update(
    %x: tensor<8x4xf32> {loom.sharding = #loom.sharding<@mesh, [{dp}, {}]>},
    %w: tensor<4x2xf32> {loom.param = "w"},
    %m: tensor<4x2xf32> {loom.state = "w.m", loom.sharding = #loom.sharding<@mesh, [{dp}, {}]>},
    %y: tensor<8x2xf32> {loom.sharding = #loom.sharding<@mesh, [{dp}, {}]>})
    -> (tensor<4x2xf32> {loom.update = "w"}, tensor<4x2xf32> {loom.update = "w.m"}) {
  // CHECK: %[[G:.*]] = loom.matmul %{{.*}}, %{{.*}} {transpose_lhs} : (tensor<4x4xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
  // CHECK: %[[GB:.*]] = loom.reduce_scatter sum %[[G]] on @mesh ["dp"] {scatter_dim = 0 : i64} : tensor<4x2xf32> -> tensor<2x2xf32>
  // CHECK: %[[M2:.*]] = loom.add %[[M]], %[[GB]] : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  // CHECK: %[[WB:.*]] = loom.local_block %{{.*}} on @mesh ["dp"] {dim = 0 : i64} : tensor<4x2xf32> -> tensor<2x2xf32>
  // CHECK: %[[W2:.*]] = loom.sub %[[WB]], %[[M2]] : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  // CHECK: %[[WALL:.*]] = loom.all_gather %[[W2]] on @mesh ["dp"] {gather_dim = 0 : i64} : tensor<2x2xf32> -> tensor<4x2xf32>
  // CHECK: return %[[WALL]], %[[M2]]
  %g = loom.matmul %x, %y {transpose_lhs} : (tensor<8x4xf32>, tensor<8x2xf32>) -> tensor<4x2xf32>
  %m2 = loom.add %m, %g : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
  %w2 = loom.sub %w, %m2 : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
  return %w2, %m2 : tensor<4x2xf32>, tensor<4x2xf32>
}

// -----

// Tensor parallelism: two row-parallel products leave partial sums over tp;
// their sum is a partial sum too, completed by one all-reduce where it is
// returned, not one per product. A bias added to a partial sum would be
// added once per device, so the partial sum is completed before the add.
loom.mesh @mesh = <tp = 2>
// CHECK-LABEL: func.func @sum_of_partial_sums
func.func @sum_of_partial_sums(
    %x: tensor<4x8xf32> {loom.sharding = #loom.sharding<@mesh, [{}, {tp}]>},
    %w1: tensor<8x3xf32> {loom.sharding = #loom.sharding<@mesh, [{tp}, {}]>},
    %w2: tensor<8x3xf32> {loom.sharding = #loom.sharding<@mesh, [{tp}, {}]>},
    %b: tensor<3xf32>) -> (tensor<4x3xf32>, tensor<4x3xf32>) {
  // CHECK: %[[A:.*]] = loom.matmul {{.*}} -> tensor<4x3xf32>
  // CHECK: %[[B:.*]] = loom.matmul {{.*}} -> tensor<4x3xf32>
  // CHECK-NOT: loom.all_reduce
  // CHECK: %[[S:.*]] = loom.add %[[A]], %[[B]]
  // CHECK: %[[D:.*]] = loom.sub %[[S]], %[[A]]
  // CHECK: %[[AR:.*]] = loom.all_reduce sum %[[A]] on @mesh ["tp"]
  // CHECK: %[[BIASED:.*]] = loom.add %[[AR]], %{{.*}}
  // CHECK: %[[DR:.*]] = loom.all_reduce sum %[[D]] on @mesh ["tp"]
  // CHECK: return %[[BIASED]], %[[DR]]
  %a = loom.matmul %x, %w1 : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
  %c = loom.matmul %x, %w2 : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
  %s = loom.add %a, %c : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  %d = loom.sub %s, %a : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  %biased = loom.add %a, %b : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  return %biased, %d : tensor<4x3xf32>, tensor<4x3xf32>
}

// -----

// Dropout on a block draws the whole tensor's masks: the local op gets the
// whole shape and the whole index of its block's first entry, the block
// index along tp times the block's 8 columns (the whole tensor's column
// stride is 1), so each device's mask is its block of one process's mask.
loom.mesh @mesh = <tp = 2>
// CHECK-LABEL: func.func @dropout_block
// CHECK-SAME: %[[X:.*]]: tensor<4x8xf32>
func.func @dropout_block(
    %x: tensor<4x16xf32> {loom.sharding = #loom.sharding<@mesh, [{}, {tp}]>},
    %step: tensor<i64>) -> tensor<4x16xf32> {
  // CHECK: %[[I:.*]] = loom.block_index on @mesh ["tp"] : tensor<i64>
  // CHECK: %[[STEP:.*]] = loom.constant dense<8> : tensor<i64>
  // CHECK: %[[BASE:.*]] = loom.mul %[[I]], %[[STEP]]
  // CHECK: loom.dropout %[[X]] offset %{{.*}} index_base %[[BASE]] {ratio = 1.000000e-01 : f64, whole_shape = array<i64: 4, 16>} : (tensor<4x8xf32>, tensor<i64>, tensor<i64>) -> (tensor<4x8xf32>, tensor<4x8xi1>)
  %y, %m = loom.dropout %x offset %step {ratio = 0.1 : f64} : (tensor<4x16xf32>, tensor<i64>) -> (tensor<4x16xf32>, tensor<4x16xi1>)
  // CHECK: return %{{.*}} : tensor<4x8xf32>
  return %y : tensor<4x16xf32>
}

// -----

// Partitioning reshards a loom.shard's operand to the annotation (here the
// local block of a whole value) and removes the annotation.
loom.mesh @mesh = <tp = 2>
// CHECK-LABEL: func.func @annotation_block
func.func @annotation_block(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // CHECK: %[[E:.*]] = loom.exp %{{.*}} : tensor<4x8xf32>
  // CHECK: %[[B:.*]] = loom.local_block %[[E]] on @mesh ["tp"] {dim = 1 : i64} : tensor<4x8xf32> -> tensor<4x4xf32>
  // CHECK-NOT: loom.shard
  // CHECK: loom.neg %[[B]] : tensor<4x4xf32>
  %e = loom.exp %x : tensor<4x8xf32>
  %s = loom.shard %e to <@mesh, [{}, {tp}]> : tensor<4x8xf32>
  %n = loom.neg %s : tensor<4x8xf32>
  return %n : tensor<4x8xf32>
}

// -----

// A lookup into a table split by rows (a vocabulary-parallel embedding):
// each device shifts the ids into its block, looks up the ones inside it,
// zeros the others, and the partial sums are all-reduced where used.
loom.mesh @mesh = <tp = 2>
// CHECK-LABEL: func.func @vocabulary_lookup
// CHECK-SAME: %[[T:[a-z0-9]+]]: tensor<4x3xf32>
func.func @vocabulary_lookup(
    %table: tensor<8x3xf32> {loom.sharding = #loom.sharding<@mesh, [{tp}, {}]>},
    %ids: tensor<2x5xi64>) -> tensor<2x5x3xf32> {
  // CHECK: %[[I:.*]] = loom.block_index on @mesh ["tp"] : tensor<i64>
  // CHECK: %[[START:.*]] = loom.mul %[[I]], %{{.*}}
  // CHECK: %[[SHIFTED:.*]] = loom.sub %{{.*}}, %[[START]]
  // CHECK: %[[INSIDE:.*]] = loom.and
  // CHECK: %[[SAFE:.*]] = loom.where %[[INSIDE]], %[[SHIFTED]]
  // CHECK: %[[ROWS:.*]] = loom.gather %[[T]], %[[SAFE]] {axis = 0 : i64} : (tensor<4x3xf32>, tensor<2x5xi64>) -> tensor<2x5x3xf32>
  // CHECK: %[[MASK:.*]] = loom.reshape %[[INSIDE]] : tensor<2x5xi1> -> tensor<2x5x1xi1>
  // CHECK: %[[PART:.*]] = loom.where %[[MASK]], %[[ROWS]]
  // CHECK: %[[SUM:.*]] = loom.all_reduce sum %[[PART]] on @mesh ["tp"]
  // CHECK: return %[[SUM]]
  %e = loom.gather %table, %ids {axis = 0 : i64} : (tensor<8x3xf32>, tensor<2x5xi64>) -> tensor<2x5x3xf32>
  return %e : tensor<2x5x3xf32>
}

// -----

// Softmax cross-entropy over classes split across devices (Megatron-LM's
// vocabulary-parallel cross-entropy): the maximum, the sum of exponentials
// and each label's log-probability are completed by all-reduces; the
// log-probabilities stay split.
loom.mesh @mesh = <tp = 2>
// CHECK-LABEL: func.func @vocabulary_loss
func.func @vocabulary_loss(
    %scores: tensor<4x8xf32> {loom.sharding = #loom.sharding<@mesh, [{}, {tp}]>},
    %labels: tensor<4xi64>) -> (tensor<f32>, tensor<4x8xf32>) {
  // CHECK: %[[MAX:.*]] = loom.reduce_max %{{.*}} {axes = array<i64: 1>, keepdims} : (tensor<4x4xf32>) -> tensor<4x1xf32>
  // CHECK: loom.all_reduce max %[[MAX]] on @mesh ["tp"]
  // CHECK: %[[SUM:.*]] = loom.reduce_sum {{.*}} -> tensor<4x1xf32>
  // CHECK: loom.all_reduce sum %[[SUM]] on @mesh ["tp"]
  // CHECK: loom.one_hot %{{.*}} {axis = 1 : i64, depth = 4 : i64}
  // CHECK: %[[PICKED:.*]] = loom.reduce_sum {{.*}} -> tensor<4xf32>
  // CHECK: loom.all_reduce sum %[[PICKED]] on @mesh ["tp"]
  // CHECK-NOT: loom.all_gather
  // CHECK: return %{{.*}}, %{{.*}} : tensor<f32>, tensor<4x4xf32>
  %loss, %logp = loom.softmax_cross_entropy mean %scores, %labels : (tensor<4x8xf32>, tensor<4xi64>) -> (tensor<f32>, tensor<4x8xf32>)
  return %loss, %logp : tensor<f32>, tensor<4x8xf32>
}

// -----

// The embedding's gradient into a table split by rows: each device adds
// the updates whose id lies in its block (the others zeroed) into its block
// of zeros; a one-hot encoding of split classes encodes ids outside the
// block as all off.
loom.mesh @mesh = <tp = 2>
// CHECK-LABEL: func.func @vocabulary_gradient
func.func @vocabulary_gradient(
    %ids: tensor<6x3xi64>, %g: tensor<6x3xf32>, %labels: tensor<6xi64>,
    %w: tensor<8x3xf32> {loom.sharding = #loom.sharding<@mesh, [{tp}, {}]>},
    %c: tensor<6x8xf32> {loom.sharding = #loom.sharding<@mesh, [{}, {tp}]>})
    -> (tensor<8x3xf32>, tensor<6x8xf32>) {
  // CHECK: %[[UPD:.*]] = loom.where %{{.*}}, %{{.*}}, %{{.*}} : (tensor<6x3xi1>, tensor<6x3xf32>, tensor<f32>) -> tensor<6x3xf32>
  // CHECK: loom.scatter_elements %{{.*}}, %{{.*}}, %[[UPD]] add {axis = 0 : i64} : (tensor<4x3xf32>, tensor<6x3xi64>, tensor<6x3xf32>) -> tensor<4x3xf32>
  // CHECK: loom.one_hot %{{.*}}, %{{.*}} {axis = 1 : i64, depth = 4 : i64} : (tensor<6xi64>, tensor<2xf32>) -> tensor<6x4xf32>
  // CHECK-NOT: loom.all_gather
  %zeros = loom.constant dense<0.0> : tensor<8x3xf32>
  %s = loom.scatter_elements %zeros, %ids, %g add {axis = 0 : i64} : (tensor<8x3xf32>, tensor<6x3xi64>, tensor<6x3xf32>) -> tensor<8x3xf32>
  %u = loom.add %w, %s : (tensor<8x3xf32>, tensor<8x3xf32>) -> tensor<8x3xf32>
  %offon = loom.constant dense<[0.0, 1.0]> : tensor<2xf32>
  %h = loom.one_hot %labels, %offon {depth = 8 : i64, axis = 1 : i64} : (tensor<6xi64>, tensor<2xf32>) -> tensor<6x8xf32>
  %m = loom.mul %h, %c : (tensor<6x8xf32>, tensor<6x8xf32>) -> tensor<6x8xf32>
  return %u, %m : tensor<8x3xf32>, tensor<6x8xf32>
}

// -----

// Expert parallelism's dispatch: each rank's product over its tokens is a
// partial sum over dp and ep of the whole `[E, C, D]` buffer; the layout
// `loom.shard` asks for (experts over ep, slots over dp) is reached by a
// reduce-scatter over each axis, not an all-reduce and a local block.

loom.mesh @mesh = <dp = 2, ep = 2>
// CHECK-LABEL: func.func @dispatch
func.func @dispatch(
    %pick: tensor<8x16xf32>,
    %x: tensor<8x3xf32> {loom.sharding = #loom.sharding<@mesh, [{dp, ep}, {}]>})
    -> tensor<4x4x3xf32> {
  // CHECK: %[[R:.*]] = loom.local_block %{{.*}} on @mesh ["dp", "ep"] {dim = 0 : i64} : tensor<8x16xf32> -> tensor<2x16xf32>
  // CHECK: %[[P:.*]] = loom.matmul %[[R]], %{{.*}} {transpose_lhs} : (tensor<2x16xf32>, tensor<2x3xf32>) -> tensor<16x3xf32>
  %rows = loom.matmul %pick, %x {transpose_lhs} : (tensor<8x16xf32>, tensor<8x3xf32>) -> tensor<16x3xf32>
  // CHECK: %[[V:.*]] = loom.reshape %[[P]] : tensor<16x3xf32> -> tensor<4x4x3xf32>
  %view = loom.reshape %rows : tensor<16x3xf32> -> tensor<4x4x3xf32>
  // CHECK: %[[E:.*]] = loom.reduce_scatter sum %[[V]] on @mesh ["ep"] {scatter_dim = 0 : i64} : tensor<4x4x3xf32> -> tensor<2x4x3xf32>
  // CHECK: %[[S:.*]] = loom.reduce_scatter sum %[[E]] on @mesh ["dp"] {scatter_dim = 1 : i64} : tensor<2x4x3xf32> -> tensor<2x2x3xf32>
  %pinned = loom.shard %view to <@mesh, [{ep}, {dp}, {}]> : tensor<4x4x3xf32>
  // CHECK: return %[[S]] : tensor<2x2x3xf32>
  return %pinned : tensor<4x4x3xf32>
}

// -----

// The model's own routing under expert parallelism: the weighted sum over
// a rank's experts is partial over ep on the tokens of its dp block; the
// tokens' split over [dp, ep] takes the ep part by a reduce-scatter within
// the dp block.

loom.mesh @mesh = <dp = 2, ep = 2>
// CHECK-LABEL: func.func @combine
func.func @combine(
    %y: tensor<4x8x3xf32> {loom.sharding = #loom.sharding<@mesh, [{ep}, {dp}, {}]>})
    -> tensor<8x3xf32> {
  // CHECK: %[[SUM:.*]] = loom.reduce_sum %{{.*}} {{.*}} -> tensor<4x3xf32>
  %sum = loom.reduce_sum %y {axes = array<i64: 0>} : (tensor<4x8x3xf32>) -> tensor<8x3xf32>
  // CHECK: %[[S:.*]] = loom.reduce_scatter sum %[[SUM]] on @mesh ["ep"] {scatter_dim = 0 : i64} : tensor<4x3xf32> -> tensor<2x3xf32>
  %pinned = loom.shard %sum to <@mesh, [{dp, ep}, {}]> : tensor<8x3xf32>
  // CHECK: return %[[S]] : tensor<2x3xf32>
  return %pinned : tensor<8x3xf32>
}

// -----

// An axis that moves from one dimension to another does so with one
// all-to-all: the tokens split over [dp, ep] become split over dp, with
// the experts' dimension split over ep; dp is then gathered.

loom.mesh @mesh = <dp = 2, ep = 2>
// CHECK-LABEL: func.func @move
func.func @move(
    %x: tensor<8x4x3xf32> {loom.sharding = #loom.sharding<@mesh, [{dp, ep}, {}, {}]>})
    -> tensor<8x4x3xf32> {
  // CHECK: %[[A:.*]] = loom.all_to_all %{{.*}} on @mesh ["ep"] {concat_dim = 0 : i64, split_dim = 1 : i64} : tensor<2x4x3xf32> -> tensor<4x2x3xf32>
  // CHECK: %[[G:.*]] = loom.all_gather %[[A]] on @mesh ["dp"] {gather_dim = 0 : i64} : tensor<4x2x3xf32> -> tensor<8x2x3xf32>
  %pinned = loom.shard %x to <@mesh, [{}, {ep}, {}]> : tensor<8x4x3xf32>
  // CHECK: return %[[G]] : tensor<8x2x3xf32>
  return %pinned : tensor<8x4x3xf32>
}
