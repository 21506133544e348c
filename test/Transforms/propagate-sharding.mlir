// RUN: loom-opt %s --split-input-file --verify-diagnostics --loom-propagate-sharding | FileCheck %s

// The batch split of %x reaches everything computed from it, through the
// matmul's parallel factor, the broadcast add and the reshape that merges the
// batch with the sequence (the batch is its leading factor). The parameter
// stays replicated, and so does the reduction over the batch.

loom.mesh @mesh = <dp = 2>
// CHECK-LABEL: func.func @forward_and_merge
func.func @forward_and_merge(
    %x: tensor<4x3x8xf32> {loom.sharding = #loom.sharding<@mesh, [{dp}, {}, {}]>},
    %w: tensor<8x5xf32>, %b: tensor<5xf32>) -> tensor<5xf32> {
  // CHECK: loom.matmul {{.*}}loom.sharding = [#loom.sharding<@mesh, [{dp}, {}, {}]>]
  %y = loom.matmul %x, %w : (tensor<4x3x8xf32>, tensor<8x5xf32>) -> tensor<4x3x5xf32>
  // CHECK: loom.add {{.*}}loom.sharding = [#loom.sharding<@mesh, [{dp}, {}, {}]>]
  %z = loom.add %y, %b : (tensor<4x3x5xf32>, tensor<5xf32>) -> tensor<4x3x5xf32>
  // CHECK: loom.reshape {{.*}}loom.sharding = [#loom.sharding<@mesh, [{dp}, {}]>]
  %r = loom.reshape %z : tensor<4x3x5xf32> -> tensor<12x5xf32>
  // CHECK: loom.transpose {{.*}}loom.sharding = [#loom.sharding<@mesh, [{}, {dp}]>]
  %t = loom.transpose %r {perm = array<i64: 1, 0>} : tensor<12x5xf32> -> tensor<5x12xf32>
  // CHECK: loom.reduce_sum
  // CHECK-NOT: loom.sharding
  // CHECK-SAME: -> tensor<5xf32>
  %s = loom.reduce_sum %t {axes = array<i64: 1>} : (tensor<5x12xf32>) -> tensor<5xf32>
  return %s : tensor<5xf32>
}

// -----

// Backwards: a splat constant combined with a split value is split too, so
// that partitioning can make a smaller constant instead of gathering.

loom.mesh @mesh = <dp = 2>
// CHECK-LABEL: func.func @backward_into_constant
func.func @backward_into_constant(
    %x: tensor<8x4xf32> {loom.sharding = #loom.sharding<@mesh, [{dp}, {}]>}) -> tensor<8x4xf32> {
  // CHECK: loom.constant {{.*}}loom.sharding = [#loom.sharding<@mesh, [{dp}, {}]>]
  %c = loom.constant dense<2.0> : tensor<8x4xf32>
  %y = loom.mul %c, %x : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
  return %y : tensor<8x4xf32>
}

// -----

// Softmax along the split dimension cannot be split: its result stays whole
// (partitioning gathers the input first).

loom.mesh @mesh = <dp = 2>
// CHECK-LABEL: func.func @opaque_axis
func.func @opaque_axis(
    %x: tensor<8x4xf32> {loom.sharding = #loom.sharding<@mesh, [{dp}, {}]>}) -> tensor<8x4xf32> {
  // CHECK: loom.softmax
  // CHECK-NOT: loom.sharding
  // CHECK-SAME: tensor<8x4xf32>
  %y = loom.softmax %x {axis = 0 : i64} : tensor<8x4xf32>
  return %y : tensor<8x4xf32>
}

// -----

// A mean cross-entropy with ignore_index divides by the number of kept
// labels, which differs between devices: it becomes a sum over a count.

loom.mesh @mesh = <dp = 2>
// CHECK-LABEL: func.func @mean_loss_with_ignore_index
func.func @mean_loss_with_ignore_index(
    %s: tensor<8x5xf32> {loom.sharding = #loom.sharding<@mesh, [{dp}, {}]>},
    %l: tensor<8xi64> {loom.sharding = #loom.sharding<@mesh, [{dp}]>}) -> tensor<f32> {
  // CHECK: %[[SUM:.*]], %{{.*}} = loom.softmax_cross_entropy sum
  // CHECK: %[[IGNORE:.*]] = loom.constant dense<-100> : tensor<i64>
  // CHECK: %[[EQ:.*]] = loom.equal %{{.*}}, %[[IGNORE]]
  // CHECK: %[[KEPT:.*]] = loom.not %[[EQ]]
  // CHECK: %[[F:.*]] = loom.cast %[[KEPT]]
  // CHECK: %[[COUNT:.*]] = loom.reduce_sum %[[F]]
  // CHECK: %[[MEAN:.*]] = loom.div %[[SUM]], %[[COUNT]]
  // CHECK: return %[[MEAN]]
  %loss, %lp = loom.softmax_cross_entropy mean %s, %l {ignore_index = -100 : i64} : (tensor<8x5xf32>, tensor<8xi64>) -> (tensor<f32>, tensor<8x5xf32>)
  return %loss : tensor<f32>
}

// -----

// A reshape that splits a batch of 8 into 2x4 keeps the leading 2 together;
// dp = 4 cannot split it, and the error points at the op (its ONNX node).

loom.mesh @mesh = <dp = 4>
func.func @reshape_does_not_divide(
    %x: tensor<8xf32> {loom.sharding = #loom.sharding<@mesh, [{dp}]>}) -> tensor<2x4xf32> {
  // expected-error @+1 {{mesh axis {dp} of size 4 does not divide the leading part (size 2) of dimension 0 (size 8) of operand #0}}
  %y = loom.reshape %x : tensor<8xf32> -> tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}

// -----

// expected-error @+1 {{sharding refers to @nowhere, which is not a loom.mesh}}
func.func @no_such_mesh(
    %x: tensor<8xf32> {loom.sharding = #loom.sharding<@nowhere, [{dp}]>}) -> tensor<8xf32> {
  return %x : tensor<8xf32>
}

// -----

// Conflicts are resolved by priority: a function argument's sharding (the
// user's) wins over an op result's, whatever the operand order; between
// results, what an operand holds wins over what a use suggested. Here tp
// cannot split both dimensions of the add, and %x's split of dimension 0
// wins over %n's of dimension 1 (which the old first-come order took).
loom.mesh @mesh = <tp = 2>
// CHECK-LABEL: func.func @argument_first
func.func @argument_first(
    %x: tensor<8x8xf32> {loom.sharding = #loom.sharding<@mesh, [{tp}, {}]>},
    %w: tensor<8x8xf32> {loom.sharding = #loom.sharding<@mesh, [{}, {tp}]>}) -> tensor<8x8xf32> {
  // CHECK: loom.neg {{.*}} {loom.sharding = [#loom.sharding<@mesh, [{}, {tp}]>]}
  %n = loom.neg %w : tensor<8x8xf32>
  // CHECK: loom.add {{.*}} {loom.sharding = [#loom.sharding<@mesh, [{tp}, {}]>]}
  %s = loom.add %n, %x : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  return %s : tensor<8x8xf32>
}

// -----

// A loom.shard annotation fixes its result's sharding like an argument's:
// what is computed from it follows, and its operand stays free.
loom.mesh @mesh = <tp = 2>
// CHECK-LABEL: func.func @annotation
func.func @annotation(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // CHECK: %[[E:.*]] = loom.exp %{{.*}} : tensor<4x8xf32>
  %e = loom.exp %x : tensor<4x8xf32>
  %s = loom.shard %e to <@mesh, [{}, {tp}]> : tensor<4x8xf32>
  // CHECK: loom.neg {{.*}} {loom.sharding = [#loom.sharding<@mesh, [{}, {tp}]>]}
  %n = loom.neg %s : tensor<4x8xf32>
  return %n : tensor<4x8xf32>
}
