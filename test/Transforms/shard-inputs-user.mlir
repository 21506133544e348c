// RUN: loom-opt %s --loom-shard-inputs="mesh=dp=2,tp=2 zero=1 shard=w*=[{},{tp}],b=[{tp}]" | FileCheck %s --check-prefix=USER
// RUN: loom-opt %s --loom-shard-inputs="mesh=dp=2,tp=2 zero=3 shard=w=[{tp},{}]" | FileCheck %s --check-prefix=ZERO3

// The user's shardings (shard=GLOB=SPEC, the first matching pattern wins)
// apply to parameters and inputs by name; optimizer state takes its
// parameter's, and ZeRO-1 adds the data axis to its dimension 0 where the
// block divides (b's momentum, 3 elements per tp block, stays as b is).
// USER-LABEL: func.func @user_shardings
// USER-SAME: tensor<8x4xf32> {loom.input = "x", loom.sharding = #loom.sharding<@mesh, [{dp}, {}]>}
// USER-SAME: tensor<4x6xf32> {loom.param = "w", loom.sharding = #loom.sharding<@mesh, [{}, {tp}]>}
// USER-SAME: tensor<6xf32> {loom.param = "b", loom.sharding = #loom.sharding<@mesh, [{tp}]>}
// USER-SAME: tensor<4x6xf32> {loom.sharding = #loom.sharding<@mesh, [{dp}, {tp}]>, loom.state = "w.momentum", loom.state_of = "w"}
// USER-SAME: tensor<6xf32> {loom.sharding = #loom.sharding<@mesh, [{tp}]>, loom.state = "b.momentum", loom.state_of = "b"}
// USER-SAME: tensor<i64> {loom.state = "step"}

// On a dimension tp already splits, the data axis comes after it, so each
// tp block is split over dp ([tp, dp]); ZeRO-3 stores parameters that way
// and gathers them to their own split for use (whole for b).
// ZERO3-LABEL: func.func @user_shardings
// ZERO3-SAME: tensor<4x6xf32> {loom.gather_for_use = #loom.sharding<@mesh, [{tp}, {}]>, loom.param = "w", loom.sharding = #loom.sharding<@mesh, [{tp, dp}, {}]>}
// ZERO3-SAME: tensor<6xf32> {loom.gather_for_use, loom.param = "b", loom.sharding = #loom.sharding<@mesh, [{dp}]>}
// ZERO3-SAME: tensor<4x6xf32> {loom.sharding = #loom.sharding<@mesh, [{tp, dp}, {}]>, loom.state = "w.momentum", loom.state_of = "w"}
// ZERO3-SAME: tensor<6xf32> {loom.sharding = #loom.sharding<@mesh, [{dp}]>, loom.state = "b.momentum", loom.state_of = "b"}
func.func @user_shardings(%x: tensor<8x4xf32> {loom.input = "x"},
                          %w: tensor<4x6xf32> {loom.param = "w"},
                          %b: tensor<6xf32> {loom.param = "b"},
                          %m: tensor<4x6xf32> {loom.state = "w.momentum", loom.state_of = "w"},
                          %mb: tensor<6xf32> {loom.state = "b.momentum", loom.state_of = "b"},
                          %step: tensor<i64> {loom.state = "step"}) -> tensor<8x6xf32> {
  %y = loom.matmul %x, %w : (tensor<8x4xf32>, tensor<4x6xf32>) -> tensor<8x6xf32>
  return %y : tensor<8x6xf32>
}
