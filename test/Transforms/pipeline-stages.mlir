// RUN: loom-opt %s --loom-pipeline-stages="stages=2 cuts=/l1/Tanh" | FileCheck %s
// RUN: loom-opt %s --loom-pipeline-stages="stages=3" | FileCheck %s --check-prefix=AUTO
// RUN: loom-opt %s --loom-pipeline-stages="stages=3 report" | FileCheck %s --check-prefix=REPORT
// RUN: not loom-opt %s --loom-pipeline-stages="stages=2 cuts=/l9/Tanh" 2>&1 | FileCheck %s --check-prefix=NAME
// RUN: not loom-opt %s --loom-pipeline-stages="stages=3 cuts=/l1/Tanh" 2>&1 | FileCheck %s --check-prefix=COUNT
// RUN: not loom-opt %s --loom-pipeline-stages="stages=2 cuts=/l3/MatMul" 2>&1 | FileCheck %s --check-prefix=END
// RUN: not loom-opt %s --loom-pipeline-stages="stages=5" 2>&1 | FileCheck %s --check-prefix=MANY
// RUN: not loom-opt %s --loom-pipeline-stages="stages=3 cuts=/l2/MatMul,/l2/Tanh" 2>&1 | FileCheck %s --check-prefix=EMPTY

// Three layers. A cut after /l1/Tanh puts layer 1 in stage 0 and the rest
// in stage 1.
// CHECK: loom.matmul %arg0, %arg1 {loom.stage = 0 : i64}
// CHECK: loom.tanh %{{.*}} {loom.stage = 0 : i64}
// CHECK: loom.matmul %{{.*}}, %arg2 {loom.stage = 1 : i64}
// CHECK: loom.tanh %{{.*}} {loom.stage = 1 : i64}
// CHECK: loom.matmul %{{.*}}, %arg3 {loom.stage = 1 : i64}

// Without cuts, between layers (one activation crosses), each cut nearest
// its share of the FLOPs: layer 2 is twice as wide, so the three stages
// are layer 1, layer 2 and layer 3.
// AUTO: loom.matmul %arg0, %arg1 {loom.stage = 0 : i64}
// AUTO: loom.matmul %{{.*}}, %arg2 {loom.stage = 1 : i64}
// AUTO: loom.matmul %{{.*}}, %arg3 {loom.stage = 2 : i64}

// REPORT: pipeline stages of @forward:
// REPORT-NEXT: stage 0: {{ *}}1024 parameter bytes, {{.*}}% of the forward FLOPs, nodes '/l1/MatMul' .. '/l1/Tanh'
// REPORT-NEXT: stage 1: {{ *}}2048 parameter bytes, {{.*}}% of the forward FLOPs, nodes '/l2/MatMul' .. '/l2/Tanh'
// REPORT-NEXT: stage 2: {{ *}}512 parameter bytes, {{.*}}% of the forward FLOPs, nodes '/l3/MatMul' .. '/l3/MatMul'

// NAME: error: --pipeline-cuts names no ONNX node '/l9/Tanh' of @forward (its nodes are named like '/l1/MatMul', '/l1/Tanh', '/l2/MatMul', '/l2/Tanh')
// COUNT: error: 3 pipeline stages need 2 cuts, got 1
// END: error: loc("/l3/MatMul"): cutting after ONNX node '/l3/MatMul' does not separate the graph: nothing computed from the batch flows past it to a later stage
// MANY: error: cannot cut @forward into 5 pipeline stages: it has 2 places between layers (where only a layer's output crosses), fewer than the 4 cuts needed; use fewer stages or name the cuts with --pipeline-cuts
// EMPTY: error: pipeline stage 1 (ONNX nodes '/l2/Tanh' to '/l2/Tanh') has no parameters to train; move the cut
func.func @forward(%x: tensor<4x16xf32> {loom.input = "x"},
                   %w1: tensor<16x16xf32> {loom.param = "w1"},
                   %w2: tensor<16x32xf32> {loom.param = "w2"},
                   %w3: tensor<32x4xf32> {loom.param = "w3"}) -> tensor<4x4xf32> {
  %0 = loom.matmul %x, %w1 : (tensor<4x16xf32>, tensor<16x16xf32>) -> tensor<4x16xf32> loc("/l1/MatMul")
  %1 = loom.tanh %0 : tensor<4x16xf32> loc("/l1/Tanh")
  %2 = loom.matmul %1, %w2 : (tensor<4x16xf32>, tensor<16x32xf32>) -> tensor<4x32xf32> loc("/l2/MatMul")
  %3 = loom.tanh %2 : tensor<4x32xf32> loc("/l2/Tanh")
  %4 = loom.matmul %3, %w3 : (tensor<4x32xf32>, tensor<32x4xf32>) -> tensor<4x4xf32> loc("/l3/MatMul")
  return %4 : tensor<4x4xf32>
}
