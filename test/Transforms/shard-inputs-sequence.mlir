// RUN: loom-opt %s --loom-shard-inputs="mesh=dp=2,tp=2 sequence-parallel" | FileCheck %s
// RUN: not loom-opt %s --loom-shard-inputs="mesh=dp=2 sequence-parallel" 2>&1 | FileCheck %s --check-prefix=NOTP

// Sequence parallelism annotates the output of an embedding lookup (a
// gather of a parameter table at [batch, sequence] token ids) as split along
// the sequence over tp (and the batch over dp); the lookup of positions
// (constant indices) is left alone.
// CHECK-LABEL: func.func @embed
// CHECK: %[[T:.*]] = loom.gather %arg1, %arg0
// CHECK: %[[S:.*]] = loom.shard %[[T]] to <@mesh, [{dp}, {tp}, {}]> : tensor<4x8x16xf32>
// CHECK: loom.gather %arg2
// CHECK-NOT: loom.shard
// CHECK: loom.add %[[S]]
// NOTP: error: --sequence-parallel splits the sequence over the mesh axis "tp", which the mesh has not (its axes: dp=2)
func.func @embed(%tokens: tensor<4x8xi64> {loom.input = "tokens"},
                 %table: tensor<32x16xf32> {loom.param = "tok"},
                 %pos_table: tensor<8x16xf32> {loom.param = "pos"}) -> tensor<4x8x16xf32> {
  %t = loom.gather %table, %tokens {axis = 0 : i64} : (tensor<32x16xf32>, tensor<4x8xi64>) -> tensor<4x8x16xf32>
  %positions = loom.constant dense<[0, 1, 2, 3, 4, 5, 6, 7]> : tensor<8xi64>
  %p = loom.gather %pos_table, %positions {axis = 0 : i64} : (tensor<8x16xf32>, tensor<8xi64>) -> tensor<8x16xf32>
  %x = loom.add %t, %p : (tensor<4x8x16xf32>, tensor<8x16xf32>) -> tensor<4x8x16xf32>
  return %x : tensor<4x8x16xf32>
}
