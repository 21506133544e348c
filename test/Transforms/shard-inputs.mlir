// RUN: loom-opt %s --split-input-file --verify-diagnostics --loom-shard-inputs="mesh=dp=2,tp=2" | FileCheck %s

// Data inputs are split along dimension 0 over the data axis; parameters,
// state and scalars stay replicated.

// CHECK: loom.mesh @mesh = <dp = 2, tp = 2>
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: %{{.*}}: tensor<8x4xf32> {loom.input = "x", loom.sharding = #loom.sharding<@mesh, [{dp}, {}]>}
// CHECK-SAME: %{{.*}}: tensor<4x2xf32> {loom.param = "w"}
// CHECK-SAME: %{{.*}}: tensor<8xi64> {loom.input = "labels", loom.sharding = #loom.sharding<@mesh, [{dp}]>}
// CHECK-SAME: %{{.*}}: tensor<i64> {loom.state = "step"}
func.func @train_step(%x: tensor<8x4xf32> {loom.input = "x"},
                      %w: tensor<4x2xf32> {loom.param = "w"},
                      %labels: tensor<8xi64> {loom.input = "labels"},
                      %step: tensor<i64> {loom.state = "step"}) -> tensor<8x2xf32> {
  %y = loom.matmul %x, %w : (tensor<8x4xf32>, tensor<4x2xf32>) -> tensor<8x2xf32>
  return %y : tensor<8x2xf32>
}

// -----

// A batch the data axis does not divide names the input.
func.func @odd_batch(
    // expected-error @+1 {{cannot split input "x" of @odd_batch over the data axis: mesh axis "dp" of size 2 does not divide dimension 0 (size 5)}}
    %x: tensor<5x4xf32> {loom.input = "x"}) -> tensor<5x4xf32> {
  return %x : tensor<5x4xf32>
}

