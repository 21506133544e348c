// loom-moe-routing sets each loom.moe layer's routing, capacity factor and
// auxiliary-loss coefficients, and with `report` prints the layers.
// RUN: loom-opt %s --loom-moe-routing="routing=token-choice aux-loss=0.01 z-loss=0.001 report=true" | FileCheck %s
// RUN: loom-opt %s --loom-moe-routing="routing=expert-choice" | FileCheck %s --check-prefix=EC
// RUN: loom-opt %s --loom-moe-routing | FileCheck %s --check-prefix=MODEL
// RUN: not loom-opt %s --loom-moe-routing="routing=sparse" 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not loom-opt %s --loom-moe-routing="routing=token-choice capacity-factor=-1" 2>&1 | FileCheck %s --check-prefix=NEGATIVE
// RUN: not loom-opt %s --loom-moe-routing="capacity-factor=2" 2>&1 | FileCheck %s --check-prefix=MODELCAP
// RUN: not loom-opt %s --loom-moe-routing="z-loss=-0.5" 2>&1 | FileCheck %s --check-prefix=LOSS

// CHECK: mixture of experts: 1 layer
// CHECK-NEXT: 'ffn': 4 experts, silu gated, 8 tokens, routing token_choice (capacity factor 1.25: 5 slots per expert, k = 2), load-balancing loss 0.01, z-loss 0.001, 240 parameter bytes per expert
// CHECK: loom.moe token_choice silu {{.*}} {aux_loss = 1.000000e-02 : f64, capacity_factor = 1.250000e+00 : f64, k = 2 : i64, z_loss = 1.000000e-03 : f64}
// EC: loom.moe expert_choice silu {{.*}} {capacity_factor = 2.000000e+00 : f64, k = 2 : i64}
// MODEL: loom.moe top_k silu {{.*}} {k = 2 : i64}
// UNKNOWN: error: unknown MoE routing 'sparse' (expected model, token-choice or expert-choice)
// NEGATIVE: error: the capacity factor must be positive
// MODELCAP: error: a capacity factor needs --moe-routing=token-choice or expert-choice
// LOSS: error: MoE loss coefficients must be non-negative

func.func @main(%x: tensor<8x4xf32>, %r: tensor<8x4xf32>, %w1: tensor<4x5x4xf32>, %w2: tensor<4x4x5xf32>, %w3: tensor<4x5x4xf32>) -> tensor<8x4xf32> {
  %0 = loom.moe top_k silu %x, %r experts(%w1, %w2) fc3 %w3 {k = 2 : i64} : (tensor<8x4xf32>, tensor<8x4xf32>, tensor<4x5x4xf32>, tensor<4x4x5xf32>, tensor<4x5x4xf32>) -> tensor<8x4xf32> loc("ffn")
  return %0 : tensor<8x4xf32>
}
