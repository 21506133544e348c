// RUN: loom-opt %s --split-input-file --loom-raise-moe=report | FileCheck %s

// Two relu experts on four tokens, top-1, combined with masks: each expert's
// output times (its top-k value where the token chose it, else zero).

// CHECK: raised a mixture-of-experts layer at (no ONNX node): 2 experts (relu, biases), top-1
// CHECK-LABEL: func.func @masks
// CHECK: %[[L:.*]] = loom.matmul %arg0, %arg1 {transpose_rhs}
// CHECK-DAG: %[[A1:.*]] = loom.reshape %arg2 : tensor<3x2xf32> -> tensor<1x3x2xf32>
// CHECK-DAG: %[[B1:.*]] = loom.reshape %arg5 : tensor<3x2xf32> -> tensor<1x3x2xf32>
// CHECK-DAG: %[[FC1:.*]] = loom.concat %[[A1]], %[[B1]] {axis = 0 : i64}
// CHECK-DAG: %[[A2:.*]] = loom.reshape %arg4 : tensor<2x3xf32> -> tensor<1x2x3xf32>
// CHECK-DAG: %[[B2:.*]] = loom.reshape %arg7 : tensor<2x3xf32> -> tensor<1x2x3xf32>
// CHECK-DAG: %[[FC2:.*]] = loom.concat %[[A2]], %[[B2]] {axis = 0 : i64}
// CHECK-DAG: %[[BIAS:.*]] = loom.concat %{{.*}}, %{{.*}} {axis = 0 : i64} : (tensor<1x3xf32>, tensor<1x3xf32>) -> tensor<2x3xf32>
// CHECK: %[[Y:.*]] = loom.moe top_k relu %arg0, %[[L]] experts(%[[FC1]], %[[FC2]]) fc1_bias %[[BIAS]] {k = 1 : i64}
// CHECK-NOT: loom.top_k
// CHECK-NOT: loom.equal
// CHECK: return %[[Y]]
func.func @masks(%x: tensor<4x2xf32>,
    %router: tensor<2x2xf32> {loom.param = "router"},
    %w1a: tensor<3x2xf32> {loom.param = "e0.w1"}, %b1a: tensor<3xf32> {loom.param = "e0.b1"},
    %w2a: tensor<2x3xf32> {loom.param = "e0.w2"},
    %w1b: tensor<3x2xf32> {loom.param = "e1.w1"}, %b1b: tensor<3xf32> {loom.param = "e1.b1"},
    %w2b: tensor<2x3xf32> {loom.param = "e1.w2"}) -> tensor<4x2xf32> {
  %logits = loom.matmul %x, %router {transpose_rhs} : (tensor<4x2xf32>, tensor<2x2xf32>) -> tensor<4x2xf32>
  %probs = loom.softmax %logits {axis = 1 : i64} : tensor<4x2xf32>
  %vals, %idx = loom.top_k %probs {axis = 1 : i64, k = 1 : i64, largest} : (tensor<4x2xf32>) -> (tensor<4x1xf32>, tensor<4x1xi64>)
  %c0 = loom.constant dense<0> : tensor<i64>
  %c1 = loom.constant dense<1> : tensor<i64>
  // expert 0
  %h0 = loom.matmul %x, %w1a {transpose_rhs} : (tensor<4x2xf32>, tensor<3x2xf32>) -> tensor<4x3xf32>
  %h0b = loom.add %h0, %b1a : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  %a0 = loom.relu %h0b : tensor<4x3xf32>
  %y0 = loom.matmul %a0, %w2a {transpose_rhs} : (tensor<4x3xf32>, tensor<2x3xf32>) -> tensor<4x2xf32>
  %m0 = loom.equal %idx, %c0 : (tensor<4x1xi64>, tensor<i64>) -> tensor<4x1xi1>
  %f0 = loom.cast %m0 : tensor<4x1xi1> -> tensor<4x1xf32>
  %g0 = loom.mul %vals, %f0 : (tensor<4x1xf32>, tensor<4x1xf32>) -> tensor<4x1xf32>
  %w0 = loom.reduce_sum %g0 {axes = array<i64: 1>, keepdims} : (tensor<4x1xf32>) -> tensor<4x1xf32>
  %o0 = loom.mul %w0, %y0 : (tensor<4x1xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
  // expert 1
  %h1 = loom.matmul %x, %w1b {transpose_rhs} : (tensor<4x2xf32>, tensor<3x2xf32>) -> tensor<4x3xf32>
  %h1b = loom.add %h1, %b1b : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  %a1 = loom.relu %h1b : tensor<4x3xf32>
  %y1 = loom.matmul %a1, %w2b {transpose_rhs} : (tensor<4x3xf32>, tensor<2x3xf32>) -> tensor<4x2xf32>
  %m1 = loom.equal %idx, %c1 : (tensor<4x1xi64>, tensor<i64>) -> tensor<4x1xi1>
  %f1 = loom.cast %m1 : tensor<4x1xi1> -> tensor<4x1xf32>
  %g1 = loom.mul %vals, %f1 : (tensor<4x1xf32>, tensor<4x1xf32>) -> tensor<4x1xf32>
  %w1 = loom.reduce_sum %g1 {axes = array<i64: 1>, keepdims} : (tensor<4x1xf32>) -> tensor<4x1xf32>
  %o1 = loom.mul %w1, %y1 : (tensor<4x1xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
  %y = loom.add %o0, %o1 : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
  return %y : tensor<4x2xf32>
}

// -----

// Both experts' outputs weighted by the top value whether or not the token
// chose them: not a mixture of experts, so it stays dense.

// CHECK: top-k of router probabilities at (no ONNX node) stays dense: no value after the experts is their gated sum over the router's top-k choices
// CHECK-LABEL: func.func @swapped
// CHECK: loom.top_k
// CHECK-NOT: loom.moe
func.func @swapped(%x: tensor<4x2xf32>,
    %router: tensor<2x2xf32> {loom.param = "router"},
    %w1a: tensor<3x2xf32> {loom.param = "e0.w1"}, %w2a: tensor<2x3xf32> {loom.param = "e0.w2"},
    %w1b: tensor<3x2xf32> {loom.param = "e1.w1"}, %w2b: tensor<2x3xf32> {loom.param = "e1.w2"}) -> tensor<4x2xf32> {
  %logits = loom.matmul %x, %router {transpose_rhs} : (tensor<4x2xf32>, tensor<2x2xf32>) -> tensor<4x2xf32>
  %probs = loom.softmax %logits {axis = 1 : i64} : tensor<4x2xf32>
  %vals, %idx = loom.top_k %probs {axis = 1 : i64, k = 1 : i64, largest} : (tensor<4x2xf32>) -> (tensor<4x1xf32>, tensor<4x1xi64>)
  %c0 = loom.constant dense<0> : tensor<i64>
  %h0 = loom.matmul %x, %w1a {transpose_rhs} : (tensor<4x2xf32>, tensor<3x2xf32>) -> tensor<4x3xf32>
  %a0 = loom.relu %h0 : tensor<4x3xf32>
  %y0 = loom.matmul %a0, %w2a {transpose_rhs} : (tensor<4x3xf32>, tensor<2x3xf32>) -> tensor<4x2xf32>
  %h1 = loom.matmul %x, %w1b {transpose_rhs} : (tensor<4x2xf32>, tensor<3x2xf32>) -> tensor<4x3xf32>
  %a1 = loom.relu %h1 : tensor<4x3xf32>
  %y1 = loom.matmul %a1, %w2b {transpose_rhs} : (tensor<4x3xf32>, tensor<2x3xf32>) -> tensor<4x2xf32>
  // Both outputs weighted by the top value whatever was chosen.
  %o0 = loom.mul %vals, %y0 : (tensor<4x1xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
  %o1 = loom.mul %vals, %y1 : (tensor<4x1xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
  %y = loom.add %o0, %o1 : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
  return %y : tensor<4x2xf32>
}

// -----

// Two layers of the same form, the second on the first's output: each is
// raised with its own experts.

// CHECK: raised a mixture-of-experts layer at (no ONNX node): 2 experts (relu, biases), top-1
// CHECK: raised a mixture-of-experts layer at (no ONNX node): 2 experts (relu, biases), top-1
// CHECK-LABEL: func.func @two_layers
// CHECK: %[[Y:.*]] = loom.moe top_k relu %arg0
// CHECK: %[[Z:.*]] = loom.moe top_k relu %[[Y]]
// CHECK: return %[[Z]]
func.func @two_layers(%x: tensor<4x2xf32>,
    %router: tensor<2x2xf32> {loom.param = "router"},
    %w1a: tensor<3x2xf32> {loom.param = "e0.w1"}, %b1a: tensor<3xf32> {loom.param = "e0.b1"},
    %w2a: tensor<2x3xf32> {loom.param = "e0.w2"},
    %w1b: tensor<3x2xf32> {loom.param = "e1.w1"}, %b1b: tensor<3xf32> {loom.param = "e1.b1"},
    %w2b: tensor<2x3xf32> {loom.param = "e1.w2"}) -> tensor<4x2xf32> {
  %logits = loom.matmul %x, %router {transpose_rhs} : (tensor<4x2xf32>, tensor<2x2xf32>) -> tensor<4x2xf32>
  %probs = loom.softmax %logits {axis = 1 : i64} : tensor<4x2xf32>
  %vals, %idx = loom.top_k %probs {axis = 1 : i64, k = 1 : i64, largest} : (tensor<4x2xf32>) -> (tensor<4x1xf32>, tensor<4x1xi64>)
  %c0 = loom.constant dense<0> : tensor<i64>
  %c1 = loom.constant dense<1> : tensor<i64>
  // expert 0
  %h0 = loom.matmul %x, %w1a {transpose_rhs} : (tensor<4x2xf32>, tensor<3x2xf32>) -> tensor<4x3xf32>
  %h0b = loom.add %h0, %b1a : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  %a0 = loom.relu %h0b : tensor<4x3xf32>
  %y0 = loom.matmul %a0, %w2a {transpose_rhs} : (tensor<4x3xf32>, tensor<2x3xf32>) -> tensor<4x2xf32>
  %m0 = loom.equal %idx, %c0 : (tensor<4x1xi64>, tensor<i64>) -> tensor<4x1xi1>
  %f0 = loom.cast %m0 : tensor<4x1xi1> -> tensor<4x1xf32>
  %g0 = loom.mul %vals, %f0 : (tensor<4x1xf32>, tensor<4x1xf32>) -> tensor<4x1xf32>
  %w0 = loom.reduce_sum %g0 {axes = array<i64: 1>, keepdims} : (tensor<4x1xf32>) -> tensor<4x1xf32>
  %o0 = loom.mul %w0, %y0 : (tensor<4x1xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
  // expert 1
  %h1 = loom.matmul %x, %w1b {transpose_rhs} : (tensor<4x2xf32>, tensor<3x2xf32>) -> tensor<4x3xf32>
  %h1b = loom.add %h1, %b1b : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  %a1 = loom.relu %h1b : tensor<4x3xf32>
  %y1 = loom.matmul %a1, %w2b {transpose_rhs} : (tensor<4x3xf32>, tensor<2x3xf32>) -> tensor<4x2xf32>
  %m1 = loom.equal %idx, %c1 : (tensor<4x1xi64>, tensor<i64>) -> tensor<4x1xi1>
  %f1 = loom.cast %m1 : tensor<4x1xi1> -> tensor<4x1xf32>
  %g1 = loom.mul %vals, %f1 : (tensor<4x1xf32>, tensor<4x1xf32>) -> tensor<4x1xf32>
  %w1 = loom.reduce_sum %g1 {axes = array<i64: 1>, keepdims} : (tensor<4x1xf32>) -> tensor<4x1xf32>
  %o1 = loom.mul %w1, %y1 : (tensor<4x1xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
  %y = loom.add %o0, %o1 : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
  %L2logits = loom.matmul %y, %router {transpose_rhs} : (tensor<4x2xf32>, tensor<2x2xf32>) -> tensor<4x2xf32>
  %L2probs = loom.softmax %L2logits {axis = 1 : i64} : tensor<4x2xf32>
  %L2vals, %L2idx = loom.top_k %L2probs {axis = 1 : i64, k = 1 : i64, largest} : (tensor<4x2xf32>) -> (tensor<4x1xf32>, tensor<4x1xi64>)
  %L2c0 = loom.constant dense<0> : tensor<i64>
  %L2c1 = loom.constant dense<1> : tensor<i64>
  // expert 0
  %L2h0 = loom.matmul %y, %w1a {transpose_rhs} : (tensor<4x2xf32>, tensor<3x2xf32>) -> tensor<4x3xf32>
  %L2h0b = loom.add %L2h0, %b1a : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  %L2a0 = loom.relu %L2h0b : tensor<4x3xf32>
  %z0 = loom.matmul %L2a0, %w2a {transpose_rhs} : (tensor<4x3xf32>, tensor<2x3xf32>) -> tensor<4x2xf32>
  %L2m0 = loom.equal %L2idx, %L2c0 : (tensor<4x1xi64>, tensor<i64>) -> tensor<4x1xi1>
  %L2f0 = loom.cast %L2m0 : tensor<4x1xi1> -> tensor<4x1xf32>
  %L2g0 = loom.mul %L2vals, %L2f0 : (tensor<4x1xf32>, tensor<4x1xf32>) -> tensor<4x1xf32>
  %L2w0 = loom.reduce_sum %L2g0 {axes = array<i64: 1>, keepdims} : (tensor<4x1xf32>) -> tensor<4x1xf32>
  %L2o0 = loom.mul %L2w0, %z0 : (tensor<4x1xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
  // expert 1
  %L2h1 = loom.matmul %y, %w1b {transpose_rhs} : (tensor<4x2xf32>, tensor<3x2xf32>) -> tensor<4x3xf32>
  %L2h1b = loom.add %L2h1, %b1b : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  %L2a1 = loom.relu %L2h1b : tensor<4x3xf32>
  %z1 = loom.matmul %L2a1, %w2b {transpose_rhs} : (tensor<4x3xf32>, tensor<2x3xf32>) -> tensor<4x2xf32>
  %L2m1 = loom.equal %L2idx, %L2c1 : (tensor<4x1xi64>, tensor<i64>) -> tensor<4x1xi1>
  %L2f1 = loom.cast %L2m1 : tensor<4x1xi1> -> tensor<4x1xf32>
  %L2g1 = loom.mul %L2vals, %L2f1 : (tensor<4x1xf32>, tensor<4x1xf32>) -> tensor<4x1xf32>
  %L2w1 = loom.reduce_sum %L2g1 {axes = array<i64: 1>, keepdims} : (tensor<4x1xf32>) -> tensor<4x1xf32>
  %L2o1 = loom.mul %L2w1, %z1 : (tensor<4x1xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
  %z = loom.add %L2o0, %L2o1 : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
  return %z : tensor<4x2xf32>
}
