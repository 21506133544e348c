// RUN: loom-opt %s --pass-pipeline='builtin.module(loom-pipeline-stages{stages=2 cuts=/l1/Tanh},loom-build-train-step{loss=mse:target optimizer=sgd lr=0.1},loom-shard-inputs{mesh=pp=2},loom-propagate-sharding,loom-partition,loom-pipeline{microbatches=2 schedule=gpipe})' | FileCheck %s --check-prefix=GPIPE
// RUN: loom-opt %s --pass-pipeline='builtin.module(loom-pipeline-stages{stages=2 cuts=/l1/Tanh},loom-build-train-step{loss=mse:target optimizer=sgd lr=0.1},loom-shard-inputs{mesh=pp=2},loom-propagate-sharding,loom-partition,loom-pipeline{microbatches=2 schedule=1f1b})' | FileCheck %s --check-prefix=1F1B
// RUN: not loom-opt %s --pass-pipeline='builtin.module(loom-pipeline-stages{stages=2 cuts=/l1/Tanh},loom-build-train-step{loss=mse:target optimizer=sgd lr=0.1 clip-norm=1},loom-shard-inputs{mesh=pp=2},loom-propagate-sharding,loom-partition,loom-pipeline{microbatches=2})' 2>&1 | FileCheck %s --check-prefix=CLIP
// RUN: not loom-opt %s --pass-pipeline='builtin.module(loom-pipeline-stages{stages=2 cuts=/l1/Tanh},loom-build-train-step{loss=mse:target optimizer=sgd lr=0.1},loom-shard-inputs{mesh=pp=2},loom-propagate-sharding,loom-partition,loom-pipeline{microbatches=2 schedule=zigzag})' 2>&1 | FileCheck %s --check-prefix=KIND

// Two stages, two microbatches. Each program takes its stage's parameters
// and both microbatches of every input (stacked), slices microbatch i as
// rows [4i, 4i + 4), sends the activation forward and receives its
// gradient back; stage 1 sends the mean loss to stage 0.
// GPIPE-LABEL: func.func @train_step_stage0(%arg0: tensor<8x16xf32> {loom.input = "x"}, %arg1: tensor<16x16xf32> {loom.param = "w1"}, %arg2: tensor<8x4xf32> {loom.input = "target"}
// GPIPE-SAME: loom.pipeline_stage = 0
// GPIPE: loom.slice %arg0 {limits = array<i64: 4, 16>, starts = array<i64: 0, 0>
// GPIPE: loom.send %{{.*}} on @mesh ["pp"] offset 1 : tensor<4x16xf32>
// GPIPE: loom.slice %arg0 {limits = array<i64: 8, 16>, starts = array<i64: 4, 0>
// GPIPE: loom.send %{{.*}} on @mesh ["pp"] offset 1 : tensor<4x16xf32>
// GPIPE: loom.recv on @mesh ["pp"] offset 1 : tensor<4x16xf32>
// GPIPE: loom.matmul {{.*}}loom.gradient = "w1"
// GPIPE: loom.recv on @mesh ["pp"] offset 1 : tensor<4x16xf32>
// GPIPE: loom.matmul {{.*}}loom.gradient = "w1"
// GPIPE: %[[LOSS:.*]] = loom.recv on @mesh ["pp"] offset 1 : tensor<f32>
// GPIPE: return %[[LOSS]]
// GPIPE-LABEL: func.func @train_step_stage1(
// GPIPE-SAME: loom.param = "w2"
// GPIPE-SAME: loom.param = "w3"
// GPIPE: loom.recv on @mesh ["pp"] offset -1 : tensor<4x16xf32>
// GPIPE: loom.recv on @mesh ["pp"] offset -1 : tensor<4x16xf32>
// GPIPE: loom.send %{{.*}} on @mesh ["pp"] offset -1 : tensor<4x16xf32>
// GPIPE: loom.send %{{.*}} on @mesh ["pp"] offset -1 : tensor<4x16xf32>
// GPIPE: loom.send %{{.*}} on @mesh ["pp"] offset -1 : tensor<f32>

// With 1f1b, the last stage runs each microbatch's backward right after its
// forward; the first runs both forwards (one warm-up), then the backwards.
// 1F1B-LABEL: func.func @train_step_stage0(
// 1F1B: loom.send
// 1F1B: loom.send
// 1F1B: loom.recv
// 1F1B: loom.recv
// 1F1B-LABEL: func.func @train_step_stage1(
// 1F1B: loom.recv on @mesh ["pp"] offset -1 : tensor<4x16xf32>
// 1F1B: loom.send %{{.*}} on @mesh ["pp"] offset -1 : tensor<4x16xf32>
// 1F1B: loom.recv on @mesh ["pp"] offset -1 : tensor<4x16xf32>
// 1F1B: loom.send %{{.*}} on @mesh ["pp"] offset -1 : tensor<4x16xf32>

// CLIP: error: pipelining: this op combines values of stages 0 and 1 (a global gradient norm or loss-scale check over all parameters is not supported with pipeline parallelism yet)
// KIND: error: unknown pipeline schedule 'zigzag' (expected gpipe, 1f1b, interleaved-1f1b or zero-bubble)
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
