// RUN: loom-opt %s --loom-memory-report -o /dev/null | FileCheck %s
// RUN: not loom-opt %s --loom-memory-report="entry=missing" -o /dev/null 2>&1 | FileCheck %s --check-prefix=MISSING

// Parameters and state are the arguments' bytes; the gradient (named by
// loom.gradient) counts at the size of its reduce_scatter block; peak
// activations add up the temporaries alive at once: at the reduce_scatter,
// the 32-byte gradient and its 16-byte block (the update comes after the
// gradient is dead: 16 + 16).

// CHECK: memory per rank of @train_step (mesh dp=2; 8 parameter elements on this rank)
// CHECK-NEXT: parameters 32 bytes
// CHECK-NEXT: gradients 16 bytes
// CHECK-NEXT: optimizer state 16 bytes
// CHECK-NEXT: peak activations 48 bytes
// MISSING: error: no function @missing to report on
loom.mesh @mesh = <dp = 2>
func.func @train_step(%w: tensor<4x2xf32> {loom.param = "w"},
                      %m: tensor<2x2xf32> {loom.state = "w.m"})
    -> tensor<2x2xf32> {
  %g = loom.neg %w {loom.gradient = "w"} : tensor<4x2xf32>
  %b = loom.reduce_scatter sum %g on @mesh ["dp"] {scatter_dim = 0 : i64} : tensor<4x2xf32> -> tensor<2x2xf32>
  %u = loom.add %m, %b : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  return %u : tensor<2x2xf32>
}
