// Every gradient Loom defines, compiled and checked in float64 against
// central finite differences of the compiled forward function. Inputs are
// drawn from [0.2, 1.2); functions shift them where an op has a kink or a
// restricted domain. Each function weights its result by a fixed, uneven
// tensor before summing, so that symmetric errors cannot cancel.
//
// RUN: loom-opt %s --loom-differentiate -o %t.mlir
// RUN: loomc %t.mlir -o %t.loom
// RUN: gradcheck %t.loom | FileCheck %s --implicit-check-not=FAIL

#w43 = dense<[[0.3, -1.2, 0.7], [1.1, 0.2, -0.5], [-0.8, 0.9, 0.4], [0.6, -0.3, 1.3]]> : tensor<4x3xf64>

// CHECK-DAG: unary_math: ok
func.func @unary_math(%x: tensor<4x3xf64>) -> tensor<f64> {
  %w = loom.constant #w43
  %0 = loom.exp %x : tensor<4x3xf64>
  %1 = loom.log %x : tensor<4x3xf64>
  %2 = loom.sqrt %x : tensor<4x3xf64>
  %3 = loom.rsqrt %x : tensor<4x3xf64>
  %4 = loom.reciprocal %x : tensor<4x3xf64>
  %5 = loom.neg %x : tensor<4x3xf64>
  %a = loom.add %0, %1 : (tensor<4x3xf64>, tensor<4x3xf64>) -> tensor<4x3xf64>
  %b = loom.add %2, %3 : (tensor<4x3xf64>, tensor<4x3xf64>) -> tensor<4x3xf64>
  %c = loom.add %4, %5 : (tensor<4x3xf64>, tensor<4x3xf64>) -> tensor<4x3xf64>
  %d = loom.mul %a, %b : (tensor<4x3xf64>, tensor<4x3xf64>) -> tensor<4x3xf64>
  %e = loom.mul %d, %c : (tensor<4x3xf64>, tensor<4x3xf64>) -> tensor<4x3xf64>
  %f = loom.mul %e, %w : (tensor<4x3xf64>, tensor<4x3xf64>) -> tensor<4x3xf64>
  %r = loom.reduce_sum %f {axes = array<i64>} : (tensor<4x3xf64>) -> tensor<f64>
  return %r : tensor<f64>
}

// CHECK-DAG: activations: ok
func.func @activations(%x: tensor<4x3xf64>) -> tensor<f64> {
  %w = loom.constant #w43
  %half = loom.constant dense<0.71> : tensor<f64>
  %s = loom.sub %x, %half : (tensor<4x3xf64>, tensor<f64>) -> tensor<4x3xf64>
  %0 = loom.tanh %s : tensor<4x3xf64>
  %1 = loom.sigmoid %s : tensor<4x3xf64>
  %2 = loom.relu %s : tensor<4x3xf64>
  %3 = loom.leaky_relu %s {alpha = 0.1 : f64} : tensor<4x3xf64>
  %4 = loom.abs %s : tensor<4x3xf64>
  %5 = loom.erf %s : tensor<4x3xf64>
  %6 = loom.gelu %s : tensor<4x3xf64>
  %7 = loom.gelu %s {approximate} : tensor<4x3xf64>
  %8 = loom.softplus %s : tensor<4x3xf64>
  %9 = loom.sin %s : tensor<4x3xf64>
  %10 = loom.cos %s : tensor<4x3xf64>
  %11 = loom.clip %s {min = -0.3 : f64, max = 0.25 : f64} : tensor<4x3xf64>
  %a = loom.mul %0, %1 : (tensor<4x3xf64>, tensor<4x3xf64>) -> tensor<4x3xf64>
  %b = loom.add %2, %3 : (tensor<4x3xf64>, tensor<4x3xf64>) -> tensor<4x3xf64>
  %c = loom.mul %4, %5 : (tensor<4x3xf64>, tensor<4x3xf64>) -> tensor<4x3xf64>
  %d = loom.add %6, %7 : (tensor<4x3xf64>, tensor<4x3xf64>) -> tensor<4x3xf64>
  %e = loom.mul %8, %9 : (tensor<4x3xf64>, tensor<4x3xf64>) -> tensor<4x3xf64>
  %f = loom.add %10, %11 : (tensor<4x3xf64>, tensor<4x3xf64>) -> tensor<4x3xf64>
  %g = loom.add %a, %b : (tensor<4x3xf64>, tensor<4x3xf64>) -> tensor<4x3xf64>
  %h = loom.add %c, %d : (tensor<4x3xf64>, tensor<4x3xf64>) -> tensor<4x3xf64>
  %i = loom.mul %e, %f : (tensor<4x3xf64>, tensor<4x3xf64>) -> tensor<4x3xf64>
  %j = loom.add %g, %h : (tensor<4x3xf64>, tensor<4x3xf64>) -> tensor<4x3xf64>
  %k = loom.add %j, %i : (tensor<4x3xf64>, tensor<4x3xf64>) -> tensor<4x3xf64>
  %l = loom.mul %k, %w : (tensor<4x3xf64>, tensor<4x3xf64>) -> tensor<4x3xf64>
  %r = loom.reduce_sum %l {axes = array<i64>} : (tensor<4x3xf64>) -> tensor<f64>
  return %r : tensor<f64>
}

// CHECK-DAG: broadcasting: ok
func.func @broadcasting(%x: tensor<4x3xf64>, %row: tensor<3xf64>, %col: tensor<4x1xf64>, %s: tensor<f64>) -> tensor<f64> {
  %w = loom.constant #w43
  %0 = loom.add %x, %row : (tensor<4x3xf64>, tensor<3xf64>) -> tensor<4x3xf64>
  %1 = loom.sub %col, %0 : (tensor<4x1xf64>, tensor<4x3xf64>) -> tensor<4x3xf64>
  %2 = loom.mul %1, %row : (tensor<4x3xf64>, tensor<3xf64>) -> tensor<4x3xf64>
  %3 = loom.div %2, %col : (tensor<4x3xf64>, tensor<4x1xf64>) -> tensor<4x3xf64>
  %4 = loom.div %s, %3 : (tensor<f64>, tensor<4x3xf64>) -> tensor<4x3xf64>
  %5 = loom.pow %x, %row : (tensor<4x3xf64>, tensor<3xf64>) -> tensor<4x3xf64>
  %6 = loom.max %x, %col : (tensor<4x3xf64>, tensor<4x1xf64>) -> tensor<4x3xf64>
  %7 = loom.min %x, %row : (tensor<4x3xf64>, tensor<3xf64>) -> tensor<4x3xf64>
  %a = loom.add %3, %4 : (tensor<4x3xf64>, tensor<4x3xf64>) -> tensor<4x3xf64>
  %b = loom.mul %5, %6 : (tensor<4x3xf64>, tensor<4x3xf64>) -> tensor<4x3xf64>
  %c = loom.add %a, %b : (tensor<4x3xf64>, tensor<4x3xf64>) -> tensor<4x3xf64>
  %d = loom.add %c, %7 : (tensor<4x3xf64>, tensor<4x3xf64>) -> tensor<4x3xf64>
  %e = loom.mul %d, %w : (tensor<4x3xf64>, tensor<4x3xf64>) -> tensor<4x3xf64>
  %r = loom.reduce_sum %e {axes = array<i64>} : (tensor<4x3xf64>) -> tensor<f64>
  return %r : tensor<f64>
}

// CHECK-DAG: where_mask: ok
func.func @where_mask(%x: tensor<4x3xf64>, %y: tensor<3xf64>) -> tensor<f64> {
  %w = loom.constant #w43
  %c = loom.constant dense<[[true, false, true], [false, false, true], [true, true, false], [false, true, true]]> : tensor<4x3xi1>
  %0 = loom.where %c, %x, %y : (tensor<4x3xi1>, tensor<4x3xf64>, tensor<3xf64>) -> tensor<4x3xf64>
  %1 = loom.mul %0, %0 : (tensor<4x3xf64>, tensor<4x3xf64>) -> tensor<4x3xf64>
  %2 = loom.mul %1, %w : (tensor<4x3xf64>, tensor<4x3xf64>) -> tensor<4x3xf64>
  %r = loom.reduce_sum %2 {axes = array<i64>} : (tensor<4x3xf64>) -> tensor<f64>
  return %r : tensor<f64>
}

// CHECK-DAG: matmuls: ok
func.func @matmuls(%a: tensor<4x3xf64>, %b: tensor<3x5xf64>, %at: tensor<3x4xf64>, %bt: tensor<5x3xf64>, %batch: tensor<2x4x3xf64>) -> tensor<f64> {
  %0 = loom.matmul %a, %b : (tensor<4x3xf64>, tensor<3x5xf64>) -> tensor<4x5xf64>
  %1 = loom.matmul %at, %b {transpose_lhs} : (tensor<3x4xf64>, tensor<3x5xf64>) -> tensor<4x5xf64>
  %2 = loom.matmul %a, %bt {transpose_rhs} : (tensor<4x3xf64>, tensor<5x3xf64>) -> tensor<4x5xf64>
  %3 = loom.matmul %at, %bt {transpose_lhs, transpose_rhs} : (tensor<3x4xf64>, tensor<5x3xf64>) -> tensor<4x5xf64>
  %4 = loom.matmul %batch, %b : (tensor<2x4x3xf64>, tensor<3x5xf64>) -> tensor<2x4x5xf64>
  %s0 = loom.mul %0, %1 : (tensor<4x5xf64>, tensor<4x5xf64>) -> tensor<4x5xf64>
  %s1 = loom.mul %2, %3 : (tensor<4x5xf64>, tensor<4x5xf64>) -> tensor<4x5xf64>
  %s2 = loom.add %s0, %s1 : (tensor<4x5xf64>, tensor<4x5xf64>) -> tensor<4x5xf64>
  %s3 = loom.mul %4, %s2 : (tensor<2x4x5xf64>, tensor<4x5xf64>) -> tensor<2x4x5xf64>
  %r = loom.reduce_sum %s3 {axes = array<i64>} : (tensor<2x4x5xf64>) -> tensor<f64>
  return %r : tensor<f64>
}

// CHECK-DAG: reductions: ok
func.func @reductions(%x: tensor<4x3xf64>) -> tensor<f64> {
  %w = loom.constant #w43
  %y = loom.mul %x, %w : (tensor<4x3xf64>, tensor<4x3xf64>) -> tensor<4x3xf64>
  %0 = loom.reduce_sum %y {axes = array<i64: 1>} : (tensor<4x3xf64>) -> tensor<4xf64>
  %1 = loom.reduce_mean %y {axes = array<i64: 0>, keepdims} : (tensor<4x3xf64>) -> tensor<1x3xf64>
  %2 = loom.reduce_max %y {axes = array<i64: 1>} : (tensor<4x3xf64>) -> tensor<4xf64>
  %3 = loom.reduce_min %y {axes = array<i64: 0>} : (tensor<4x3xf64>) -> tensor<3xf64>
  %a = loom.mul %0, %2 : (tensor<4xf64>, tensor<4xf64>) -> tensor<4xf64>
  %b = loom.mul %1, %3 : (tensor<1x3xf64>, tensor<3xf64>) -> tensor<1x3xf64>
  %c = loom.reduce_sum %a {axes = array<i64>} : (tensor<4xf64>) -> tensor<f64>
  %d = loom.reduce_sum %b {axes = array<i64>} : (tensor<1x3xf64>) -> tensor<f64>
  %r = loom.add %c, %d : (tensor<f64>, tensor<f64>) -> tensor<f64>
  return %r : tensor<f64>
}

// CHECK-DAG: softmaxes: ok
func.func @softmaxes(%x: tensor<4x3xf64>) -> tensor<f64> {
  %w = loom.constant #w43
  %0 = loom.softmax %x {axis = 1 : i64} : tensor<4x3xf64>
  %1 = loom.log_softmax %x {axis = 0 : i64} : tensor<4x3xf64>
  %2 = loom.add %0, %1 : (tensor<4x3xf64>, tensor<4x3xf64>) -> tensor<4x3xf64>
  %3 = loom.mul %2, %w : (tensor<4x3xf64>, tensor<4x3xf64>) -> tensor<4x3xf64>
  %r = loom.reduce_sum %3 {axes = array<i64>} : (tensor<4x3xf64>) -> tensor<f64>
  return %r : tensor<f64>
}

// CHECK-DAG: layer_norm: ok
func.func @layer_norm(%x: tensor<4x3xf64>, %scale: tensor<3xf64>, %bias: tensor<3xf64>) -> tensor<f64> {
  %w = loom.constant #w43
  %0:3 = loom.layer_norm %x, %scale, %bias {axis = 1 : i64, epsilon = 1.0e-5 : f64} : (tensor<4x3xf64>, tensor<3xf64>, tensor<3xf64>) -> (tensor<4x3xf64>, tensor<4x1xf64>, tensor<4x1xf64>)
  %1 = loom.mul %0#0, %w : (tensor<4x3xf64>, tensor<4x3xf64>) -> tensor<4x3xf64>
  %2 = loom.mul %1, %0#0 : (tensor<4x3xf64>, tensor<4x3xf64>) -> tensor<4x3xf64>
  %r = loom.reduce_sum %2 {axes = array<i64>} : (tensor<4x3xf64>) -> tensor<f64>
  return %r : tensor<f64>
}

// CHECK-DAG: data_movement: ok
func.func @data_movement(%x: tensor<4x3xf64>, %row: tensor<1x3xf64>) -> tensor<f64> {
  %w = loom.constant #w43
  %0 = loom.reshape %x : tensor<4x3xf64> -> tensor<2x6xf64>
  %1 = loom.reshape %0 : tensor<2x6xf64> -> tensor<4x3xf64>
  %2 = loom.transpose %1 {perm = array<i64: 1, 0>} : tensor<4x3xf64> -> tensor<3x4xf64>
  %3 = loom.transpose %2 {perm = array<i64: 1, 0>} : tensor<3x4xf64> -> tensor<4x3xf64>
  %4 = loom.expand %row : tensor<1x3xf64> -> tensor<4x3xf64>
  %5 = loom.concat %3, %4 {axis = 0 : i64} : (tensor<4x3xf64>, tensor<4x3xf64>) -> tensor<8x3xf64>
  %6:2 = loom.split %5 {axis = 0 : i64, sizes = array<i64: 3, 5>} : (tensor<8x3xf64>) -> (tensor<3x3xf64>, tensor<5x3xf64>)
  %7 = loom.slice %6#1 {starts = array<i64: 1, 0>, limits = array<i64: 5, 3>, steps = array<i64: 1, 1>} : tensor<5x3xf64> -> tensor<4x3xf64>
  %8 = loom.pad %6#0 constant {low = array<i64: 1, 0>, high = array<i64: 0, 0>} : tensor<3x3xf64> -> tensor<4x3xf64>
  %9 = loom.mul %7, %8 : (tensor<4x3xf64>, tensor<4x3xf64>) -> tensor<4x3xf64>
  %10 = loom.mul %9, %w : (tensor<4x3xf64>, tensor<4x3xf64>) -> tensor<4x3xf64>
  %r = loom.reduce_sum %10 {axes = array<i64>} : (tensor<4x3xf64>) -> tensor<f64>
  return %r : tensor<f64>
}

// CHECK-DAG: embedding: ok
func.func @embedding(%table: tensor<5x3xf64>) -> tensor<f64> {
  %idx = loom.constant dense<[[1, 4, 1], [0, 1, 3]]> : tensor<2x3xi64>
  %c = loom.constant dense<[0.5, -1.5, 2.0]> : tensor<3xf64>
  %0 = loom.gather %table, %idx {axis = 0 : i64} : (tensor<5x3xf64>, tensor<2x3xi64>) -> tensor<2x3x3xf64>
  %1 = loom.mul %0, %0 : (tensor<2x3x3xf64>, tensor<2x3x3xf64>) -> tensor<2x3x3xf64>
  %2 = loom.mul %1, %c : (tensor<2x3x3xf64>, tensor<3xf64>) -> tensor<2x3x3xf64>
  %r = loom.reduce_sum %2 {axes = array<i64>} : (tensor<2x3x3xf64>) -> tensor<f64>
  return %r : tensor<f64>
}

// CHECK-DAG: cross_entropy: ok
func.func @cross_entropy(%scores: tensor<4x3xf64>, %weight: tensor<3xf64>) -> tensor<f64> {
  %labels = loom.constant dense<[2, 0, -100, 1]> : tensor<4xi64>
  %0:2 = loom.softmax_cross_entropy mean %scores, %labels, %weight {ignore_index = -100 : i64} : (tensor<4x3xf64>, tensor<4xi64>, tensor<3xf64>) -> (tensor<f64>, tensor<4x3xf64>)
  %1:2 = loom.softmax_cross_entropy sum %scores, %labels {ignore_index = -100 : i64} : (tensor<4x3xf64>, tensor<4xi64>) -> (tensor<f64>, tensor<4x3xf64>)
  %r = loom.add %0#0, %1#0 : (tensor<f64>, tensor<f64>) -> tensor<f64>
  return %r : tensor<f64>
}

// CHECK-DAG: nll: ok
func.func @nll(%x: tensor<4x3xf64>) -> tensor<f64> {
  %labels = loom.constant dense<[2, 0, 0, 1]> : tensor<4xi64>
  %c = loom.constant dense<[1.0, -2.0, 0.5, 3.0]> : tensor<4xf64>
  %0 = loom.log_softmax %x {axis = 1 : i64} : tensor<4x3xf64>
  %1 = loom.nll_loss none %0, %labels : (tensor<4x3xf64>, tensor<4xi64>) -> tensor<4xf64>
  %2 = loom.mul %1, %c : (tensor<4xf64>, tensor<4xf64>) -> tensor<4xf64>
  %r = loom.reduce_sum %2 {axes = array<i64>} : (tensor<4xf64>) -> tensor<f64>
  return %r : tensor<f64>
}

// CHECK-DAG: conv_strided: ok
func.func @conv_strided(%x: tensor<2x2x5x5xf64>, %w: tensor<3x2x3x3xf64>, %b: tensor<3xf64>) -> tensor<f64> {
  %c = loom.constant dense<[[[[0.5]], [[-1.0]], [[2.0]]]]> : tensor<1x3x1x1xf64>
  %0 = loom.conv %x, %w, %b {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<2x2x5x5xf64>, tensor<3x2x3x3xf64>, tensor<3xf64>) -> tensor<2x3x3x3xf64>
  %1 = loom.mul %0, %0 : (tensor<2x3x3x3xf64>, tensor<2x3x3x3xf64>) -> tensor<2x3x3x3xf64>
  %2 = loom.mul %1, %c : (tensor<2x3x3x3xf64>, tensor<1x3x1x1xf64>) -> tensor<2x3x3x3xf64>
  %r = loom.reduce_sum %2 {axes = array<i64>} : (tensor<2x3x3x3xf64>) -> tensor<f64>
  return %r : tensor<f64>
}

// CHECK-DAG: conv_dilated: ok
func.func @conv_dilated(%x: tensor<1x2x6x5xf64>, %w: tensor<2x2x2x3xf64>) -> tensor<f64> {
  %c = loom.constant dense<[[[[0.5]], [[-1.5]]]]> : tensor<1x2x1x1xf64>
  %0 = loom.conv %x, %w {strides = array<i64: 2, 1>, pads = array<i64: 0, 1, 2, 0>, dilations = array<i64: 2, 2>} : (tensor<1x2x6x5xf64>, tensor<2x2x2x3xf64>) -> tensor<1x2x3x2xf64>
  %1 = loom.mul %0, %0 : (tensor<1x2x3x2xf64>, tensor<1x2x3x2xf64>) -> tensor<1x2x3x2xf64>
  %2 = loom.mul %1, %c : (tensor<1x2x3x2xf64>, tensor<1x2x1x1xf64>) -> tensor<1x2x3x2xf64>
  %r = loom.reduce_sum %2 {axes = array<i64>} : (tensor<1x2x3x2xf64>) -> tensor<f64>
  return %r : tensor<f64>
}

// The mask is fixed by seed and offset, so the function is smooth in x.
// CHECK-DAG: dropout: ok
func.func @dropout(%x: tensor<4x3xf64>) -> tensor<f64> {
  %w = loom.constant #w43
  %off = loom.constant dense<3> : tensor<i64>
  %0:2 = loom.dropout %x offset %off {ratio = 0.4 : f64, seed = 11 : i64} : (tensor<4x3xf64>, tensor<i64>) -> (tensor<4x3xf64>, tensor<4x3xi1>)
  %1 = loom.mul %0#0, %x : (tensor<4x3xf64>, tensor<4x3xf64>) -> tensor<4x3xf64>
  %2 = loom.mul %1, %w : (tensor<4x3xf64>, tensor<4x3xf64>) -> tensor<4x3xf64>
  %r = loom.reduce_sum %2 {axes = array<i64>} : (tensor<4x3xf64>) -> tensor<f64>
  return %r : tensor<f64>
}

// CHECK-DAG: conv_grouped: ok
func.func @conv_grouped(%x: tensor<2x4x5x5xf64>, %w: tensor<6x2x3x3xf64>, %b: tensor<6xf64>) -> tensor<f64> {
  %c = loom.constant dense<[[[[0.5]], [[-1.0]], [[2.0]], [[0.75]], [[-0.25]], [[1.5]]]]> : tensor<1x6x1x1xf64>
  %0 = loom.conv %x, %w, %b {strides = array<i64: 2, 1>, pads = array<i64: 1, 0, 1, 1>, dilations = array<i64: 1, 1>, groups = 2 : i64} : (tensor<2x4x5x5xf64>, tensor<6x2x3x3xf64>, tensor<6xf64>) -> tensor<2x6x3x4xf64>
  %1 = loom.mul %0, %0 : (tensor<2x6x3x4xf64>, tensor<2x6x3x4xf64>) -> tensor<2x6x3x4xf64>
  %2 = loom.mul %1, %c : (tensor<2x6x3x4xf64>, tensor<1x6x1x1xf64>) -> tensor<2x6x3x4xf64>
  %r = loom.reduce_sum %2 {axes = array<i64>} : (tensor<2x6x3x4xf64>) -> tensor<f64>
  return %r : tensor<f64>
}

// CHECK-DAG: conv_depthwise: ok
func.func @conv_depthwise(%x: tensor<2x3x6x6xf64>, %w: tensor<3x1x2x2xf64>) -> tensor<f64> {
  %c = loom.constant dense<[[[[0.5]], [[-1.5]], [[1.25]]]]> : tensor<1x3x1x1xf64>
  %0 = loom.conv %x, %w {strides = array<i64: 2, 2>, pads = array<i64: 0, 1, 1, 0>, dilations = array<i64: 2, 1>, groups = 3 : i64} : (tensor<2x3x6x6xf64>, tensor<3x1x2x2xf64>) -> tensor<2x3x3x3xf64>
  %1 = loom.mul %0, %0 : (tensor<2x3x3x3xf64>, tensor<2x3x3x3xf64>) -> tensor<2x3x3x3xf64>
  %2 = loom.mul %1, %c : (tensor<2x3x3x3xf64>, tensor<1x3x1x1xf64>) -> tensor<2x3x3x3xf64>
  %r = loom.reduce_sum %2 {axes = array<i64>} : (tensor<2x3x3x3xf64>) -> tensor<f64>
  return %r : tensor<f64>
}

// CHECK-DAG: batch_norm_train: ok
func.func @batch_norm_train(%x: tensor<3x2x2x2xf64>, %scale: tensor<2xf64>, %bias: tensor<2xf64>) -> tensor<f64> {
  %rm = loom.constant dense<[0.1, -0.2]> : tensor<2xf64>
  %rv = loom.constant dense<[1.5, 0.5]> : tensor<2xf64>
  %c = loom.constant dense<[[[[0.5, -1.0], [2.0, 0.25]], [[-0.75, 1.5], [1.0, -2.0]]]]> : tensor<1x2x2x2xf64>
  %0:5 = loom.batch_norm_train %x, %scale, %bias, %rm, %rv {epsilon = 1.0e-5 : f64, momentum = 0.9 : f64} : (tensor<3x2x2x2xf64>, tensor<2xf64>, tensor<2xf64>, tensor<2xf64>, tensor<2xf64>) -> (tensor<3x2x2x2xf64>, tensor<2xf64>, tensor<2xf64>, tensor<2xf64>, tensor<2xf64>)
  %1 = loom.mul %0#0, %0#0 : (tensor<3x2x2x2xf64>, tensor<3x2x2x2xf64>) -> tensor<3x2x2x2xf64>
  %2 = loom.mul %1, %c : (tensor<3x2x2x2xf64>, tensor<1x2x2x2xf64>) -> tensor<3x2x2x2xf64>
  %r = loom.reduce_sum %2 {axes = array<i64>} : (tensor<3x2x2x2xf64>) -> tensor<f64>
  return %r : tensor<f64>
}

// CHECK-DAG: pooling: ok
func.func @pooling(%x: tensor<2x2x5x5xf64>) -> tensor<f64> {
  %c = loom.constant dense<[[[[0.5]], [[-1.5]]]]> : tensor<1x2x1x1xf64>
  %0 = loom.max_pool %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<2x2x5x5xf64>) -> tensor<2x2x3x3xf64>
  %1 = loom.avg_pool %x {kernel_shape = array<i64: 3, 2>, strides = array<i64: 2, 1>, pads = array<i64: 1, 0, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<2x2x5x5xf64>) -> tensor<2x2x3x5xf64>
  %2 = loom.avg_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 1, 1>, dilations = array<i64: 1, 1>, count_include_pad} : (tensor<2x2x5x5xf64>) -> tensor<2x2x3x3xf64>
  %3 = loom.mul %0, %0 : (tensor<2x2x3x3xf64>, tensor<2x2x3x3xf64>) -> tensor<2x2x3x3xf64>
  %4 = loom.mul %3, %2 : (tensor<2x2x3x3xf64>, tensor<2x2x3x3xf64>) -> tensor<2x2x3x3xf64>
  %5 = loom.mul %4, %c : (tensor<2x2x3x3xf64>, tensor<1x2x1x1xf64>) -> tensor<2x2x3x3xf64>
  %6 = loom.mul %1, %1 : (tensor<2x2x3x5xf64>, tensor<2x2x3x5xf64>) -> tensor<2x2x3x5xf64>
  %a = loom.reduce_sum %5 {axes = array<i64>} : (tensor<2x2x3x3xf64>) -> tensor<f64>
  %b = loom.reduce_sum %6 {axes = array<i64>} : (tensor<2x2x3x5xf64>) -> tensor<f64>
  %r = loom.add %a, %b : (tensor<f64>, tensor<f64>) -> tensor<f64>
  return %r : tensor<f64>
}

// CHECK-DAG: pooling_ceil: ok
func.func @pooling_ceil(%x: tensor<1x2x6x6xf64>) -> tensor<f64> {
  %0 = loom.max_pool %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode} : (tensor<1x2x6x6xf64>) -> tensor<1x2x3x3xf64>
  %1 = loom.avg_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x2x6x6xf64>) -> tensor<1x2x3x3xf64>
  %2 = loom.mul %0, %1 : (tensor<1x2x3x3xf64>, tensor<1x2x3x3xf64>) -> tensor<1x2x3x3xf64>
  %3 = loom.mul %2, %0 : (tensor<1x2x3x3xf64>, tensor<1x2x3x3xf64>) -> tensor<1x2x3x3xf64>
  %r = loom.reduce_sum %3 {axes = array<i64>} : (tensor<1x2x3x3xf64>) -> tensor<f64>
  return %r : tensor<f64>
}

// CHECK-DAG: batch_norm_inference: ok
func.func @batch_norm_inference(%x: tensor<3x2x2x2xf64>, %scale: tensor<2xf64>, %bias: tensor<2xf64>) -> tensor<f64> {
  %rm = loom.constant dense<[0.1, -0.2]> : tensor<2xf64>
  %rv = loom.constant dense<[1.5, 0.5]> : tensor<2xf64>
  %0 = loom.batch_norm %x, %scale, %bias, %rm, %rv {epsilon = 1.0e-5 : f64} : (tensor<3x2x2x2xf64>, tensor<2xf64>, tensor<2xf64>, tensor<2xf64>, tensor<2xf64>) -> tensor<3x2x2x2xf64>
  %1 = loom.mul %0, %0 : (tensor<3x2x2x2xf64>, tensor<3x2x2x2xf64>) -> tensor<3x2x2x2xf64>
  %r = loom.reduce_sum %1 {axes = array<i64>} : (tensor<3x2x2x2xf64>) -> tensor<f64>
  return %r : tensor<f64>
}

// CHECK-DAG: more_activations: ok
func.func @more_activations(%x: tensor<4x3xf64>) -> tensor<f64> {
  %w = loom.constant #w43
  %half = loom.constant dense<0.71> : tensor<f64>
  %s = loom.sub %x, %half : (tensor<4x3xf64>, tensor<f64>) -> tensor<4x3xf64>
  %0 = loom.elu %s {alpha = 1.3 : f64} : tensor<4x3xf64>
  %1 = loom.softsign %s : tensor<4x3xf64>
  %2 = loom.hard_sigmoid %s {alpha = 0.5 : f64, beta = 0.1 : f64} : tensor<4x3xf64>
  %a = loom.mul %0, %1 : (tensor<4x3xf64>, tensor<4x3xf64>) -> tensor<4x3xf64>
  %b = loom.add %a, %2 : (tensor<4x3xf64>, tensor<4x3xf64>) -> tensor<4x3xf64>
  %c = loom.add %b, %1 : (tensor<4x3xf64>, tensor<4x3xf64>) -> tensor<4x3xf64>
  %d = loom.mul %c, %w : (tensor<4x3xf64>, tensor<4x3xf64>) -> tensor<4x3xf64>
  %r = loom.reduce_sum %d {axes = array<i64>} : (tensor<4x3xf64>) -> tensor<f64>
  return %r : tensor<f64>
}

// The product with a zero column is 0 whatever x is, so its gradient is 0
// (not a division by zero).
// CHECK-DAG: reduce_prod: ok
func.func @reduce_prod(%x: tensor<4x3xf64>) -> tensor<f64> {
  %w = loom.constant dense<[[0.3], [-1.2], [0.7], [1.1]]> : tensor<4x1xf64>
  %z = loom.constant dense<0.0> : tensor<4x1xf64>
  %0 = loom.reduce_prod %x {axes = array<i64: 1>, keepdims} : (tensor<4x3xf64>) -> tensor<4x1xf64>
  %1 = loom.mul %0, %w : (tensor<4x1xf64>, tensor<4x1xf64>) -> tensor<4x1xf64>
  %2 = loom.reduce_prod %x {axes = array<i64>} : (tensor<4x3xf64>) -> tensor<f64>
  %3 = loom.concat %x, %z {axis = 1 : i64} : (tensor<4x3xf64>, tensor<4x1xf64>) -> tensor<4x4xf64>
  %4 = loom.reduce_prod %3 {axes = array<i64: 1>} : (tensor<4x4xf64>) -> tensor<4xf64>
  %a = loom.reduce_sum %1 {axes = array<i64>} : (tensor<4x1xf64>) -> tensor<f64>
  %b = loom.reduce_sum %4 {axes = array<i64>} : (tensor<4xf64>) -> tensor<f64>
  %c = loom.add %a, %2 : (tensor<f64>, tensor<f64>) -> tensor<f64>
  %r = loom.add %c, %b : (tensor<f64>, tensor<f64>) -> tensor<f64>
  return %r : tensor<f64>
}

// CHECK-DAG: tile_cumsum_trilu: ok
func.func @tile_cumsum_trilu(%x: tensor<4x3xf64>) -> tensor<f64> {
  %w = loom.constant #w43
  %w2 = loom.constant dense<[0.5, -1.0, 2.0, 0.25, 1.5, -0.5, 0.75, 1.0]> : tensor<8xf64>
  %0 = loom.tile %x {repeats = array<i64: 2, 1>} : tensor<4x3xf64> -> tensor<8x3xf64>
  %1 = loom.mul %0, %0 : (tensor<8x3xf64>, tensor<8x3xf64>) -> tensor<8x3xf64>
  %2 = loom.reduce_sum %1 {axes = array<i64: 1>} : (tensor<8x3xf64>) -> tensor<8xf64>
  %3 = loom.mul %2, %w2 : (tensor<8xf64>, tensor<8xf64>) -> tensor<8xf64>
  %4 = loom.cumsum %x {axis = 0 : i64} : tensor<4x3xf64>
  %5 = loom.cumsum %x {axis = 1 : i64, exclusive, reverse} : tensor<4x3xf64>
  %6 = loom.trilu %x {k = 0 : i64, upper} : tensor<4x3xf64>
  %7 = loom.mul %4, %5 : (tensor<4x3xf64>, tensor<4x3xf64>) -> tensor<4x3xf64>
  %8 = loom.add %7, %6 : (tensor<4x3xf64>, tensor<4x3xf64>) -> tensor<4x3xf64>
  %9 = loom.mul %8, %w : (tensor<4x3xf64>, tensor<4x3xf64>) -> tensor<4x3xf64>
  %a = loom.reduce_sum %3 {axes = array<i64>} : (tensor<8xf64>) -> tensor<f64>
  %b = loom.reduce_sum %9 {axes = array<i64>} : (tensor<4x3xf64>) -> tensor<f64>
  %r = loom.add %a, %b : (tensor<f64>, tensor<f64>) -> tensor<f64>
  return %r : tensor<f64>
}

// Gathered and scattered entries, with a repeated index (row 0 of column 0
// twice) where the op allows it: gathering it twice accumulates, adding or
// multiplying twice combines.
// CHECK-DAG: gather_scatter_elements: ok
func.func @gather_scatter_elements(%x: tensor<4x3xf64>, %u: tensor<2x3xf64>) -> tensor<f64> {
  %w = loom.constant #w43
  %w23 = loom.constant dense<[[0.4, -0.9, 1.3], [0.8, 0.6, -0.7]]> : tensor<2x3xf64>
  %dup = loom.constant dense<[[0, 3, 1], [0, 2, 1]]> : tensor<2x3xi64>
  %uniq = loom.constant dense<[[1, 0, 3], [2, 3, 0]]> : tensor<2x3xi64>
  %0 = loom.gather_elements %x, %dup {axis = 0 : i64} : (tensor<4x3xf64>, tensor<2x3xi64>) -> tensor<2x3xf64>
  %1 = loom.mul %0, %0 : (tensor<2x3xf64>, tensor<2x3xf64>) -> tensor<2x3xf64>
  %2 = loom.mul %1, %w23 : (tensor<2x3xf64>, tensor<2x3xf64>) -> tensor<2x3xf64>
  %3 = loom.scatter_elements %x, %uniq, %u none {axis = 0 : i64} : (tensor<4x3xf64>, tensor<2x3xi64>, tensor<2x3xf64>) -> tensor<4x3xf64>
  %4 = loom.scatter_elements %x, %dup, %u add {axis = 0 : i64} : (tensor<4x3xf64>, tensor<2x3xi64>, tensor<2x3xf64>) -> tensor<4x3xf64>
  %5 = loom.scatter_elements %x, %uniq, %u max {axis = 0 : i64} : (tensor<4x3xf64>, tensor<2x3xi64>, tensor<2x3xf64>) -> tensor<4x3xf64>
  %6 = loom.scatter_elements %x, %uniq, %u min {axis = 0 : i64} : (tensor<4x3xf64>, tensor<2x3xi64>, tensor<2x3xf64>) -> tensor<4x3xf64>
  %7 = loom.scatter_elements %x, %dup, %u mul {axis = 0 : i64} : (tensor<4x3xf64>, tensor<2x3xi64>, tensor<2x3xf64>) -> tensor<4x3xf64>
  %8 = loom.mul %3, %4 : (tensor<4x3xf64>, tensor<4x3xf64>) -> tensor<4x3xf64>
  %9 = loom.mul %5, %6 : (tensor<4x3xf64>, tensor<4x3xf64>) -> tensor<4x3xf64>
  %10 = loom.add %8, %9 : (tensor<4x3xf64>, tensor<4x3xf64>) -> tensor<4x3xf64>
  %11 = loom.mul %7, %7 : (tensor<4x3xf64>, tensor<4x3xf64>) -> tensor<4x3xf64>
  %12 = loom.add %10, %11 : (tensor<4x3xf64>, tensor<4x3xf64>) -> tensor<4x3xf64>
  %13 = loom.mul %12, %w : (tensor<4x3xf64>, tensor<4x3xf64>) -> tensor<4x3xf64>
  %a = loom.reduce_sum %2 {axes = array<i64>} : (tensor<2x3xf64>) -> tensor<f64>
  %b = loom.reduce_sum %13 {axes = array<i64>} : (tensor<4x3xf64>) -> tensor<f64>
  %r = loom.add %a, %b : (tensor<f64>, tensor<f64>) -> tensor<f64>
  return %r : tensor<f64>
}

// CHECK-DAG: top_k_one_hot: ok
func.func @top_k_one_hot(%x: tensor<4x3xf64>, %v: tensor<2xf64>) -> tensor<f64> {
  %w = loom.constant dense<[[0.3, -1.2], [1.1, 0.2], [-0.8, 0.9], [0.6, -0.3]]> : tensor<4x2xf64>
  %w53 = loom.constant dense<[[0.3, -1.2, 0.7], [1.1, 0.2, -0.5], [-0.8, 0.9, 0.4], [0.6, -0.3, 1.3], [0.5, 0.5, -1.0]]> : tensor<5x3xf64>
  %labels = loom.constant dense<[2, 0, 1, 1, 2]> : tensor<5xi64>
  %0:2 = loom.top_k %x {k = 2 : i64, axis = 1 : i64, largest} : (tensor<4x3xf64>) -> (tensor<4x2xf64>, tensor<4x2xi64>)
  %1 = loom.mul %0#0, %0#0 : (tensor<4x2xf64>, tensor<4x2xf64>) -> tensor<4x2xf64>
  %2 = loom.mul %1, %w : (tensor<4x2xf64>, tensor<4x2xf64>) -> tensor<4x2xf64>
  %3:2 = loom.top_k %x {k = 1 : i64, axis = 0 : i64} : (tensor<4x3xf64>) -> (tensor<1x3xf64>, tensor<1x3xi64>)
  %4 = loom.one_hot %labels, %v {depth = 3 : i64, axis = 1 : i64} : (tensor<5xi64>, tensor<2xf64>) -> tensor<5x3xf64>
  %5 = loom.mul %4, %4 : (tensor<5x3xf64>, tensor<5x3xf64>) -> tensor<5x3xf64>
  %6 = loom.mul %5, %w53 : (tensor<5x3xf64>, tensor<5x3xf64>) -> tensor<5x3xf64>
  %a = loom.reduce_sum %2 {axes = array<i64>} : (tensor<4x2xf64>) -> tensor<f64>
  %b = loom.reduce_sum %3#0 {axes = array<i64>} : (tensor<1x3xf64>) -> tensor<f64>
  %c = loom.reduce_sum %6 {axes = array<i64>} : (tensor<5x3xf64>) -> tensor<f64>
  %d = loom.add %a, %b : (tensor<f64>, tensor<f64>) -> tensor<f64>
  %r = loom.add %d, %c : (tensor<f64>, tensor<f64>) -> tensor<f64>
  return %r : tensor<f64>
}


// Mixture-of-experts layers, through their expansion (routing, one-hot
// dispatch and combine, batched experts): token choice with capacity (some
// assignments dropped), gated silu experts with biases, and expert choice;
// both also with routing groups.
#w64 = dense<[[0.3, -1.2, 0.7, 0.5], [1.1, 0.2, -0.5, -0.9], [-0.8, 0.9, 0.4, 0.1], [0.6, -0.3, 1.3, -0.4], [0.2, 0.8, -1.1, 0.7], [-0.6, 0.4, 0.9, 1.2]]> : tensor<6x4xf64>

// CHECK-DAG: moe_token_choice: ok
func.func @moe_token_choice(%x: tensor<6x4xf64>, %r: tensor<6x3xf64>, %w1: tensor<3x5x4xf64>, %w2: tensor<3x4x5xf64>, %w3: tensor<3x5x4xf64>, %b1: tensor<3x5xf64>, %b2: tensor<3x4xf64>) -> tensor<f64> {
  %w = loom.constant #w64
  %0 = loom.moe token_choice silu %x, %r experts(%w1, %w2) fc1_bias %b1 fc2_bias %b2 fc3 %w3 {k = 2 : i64, normalize, capacity_factor = 0.75 : f64} : (tensor<6x4xf64>, tensor<6x3xf64>, tensor<3x5x4xf64>, tensor<3x4x5xf64>, tensor<3x5xf64>, tensor<3x4xf64>, tensor<3x5x4xf64>) -> tensor<6x4xf64>
  %f = loom.mul %0, %w : (tensor<6x4xf64>, tensor<6x4xf64>) -> tensor<6x4xf64>
  %s = loom.reduce_sum %f {axes = array<i64>} : (tensor<6x4xf64>) -> tensor<f64>
  return %s : tensor<f64>
}

// Both routings with two groups of three tokens, each routed on its own.
// CHECK-DAG: moe_token_choice_groups: ok
func.func @moe_token_choice_groups(%x: tensor<6x4xf64>, %r: tensor<6x3xf64>, %w1: tensor<3x5x4xf64>, %w2: tensor<3x4x5xf64>, %b1: tensor<3x5xf64>) -> tensor<f64> {
  %w = loom.constant #w64
  %0 = loom.moe token_choice relu %x, %r experts(%w1, %w2) fc1_bias %b1 {k = 2 : i64, capacity_factor = 1.0 : f64, groups = 2 : i64} : (tensor<6x4xf64>, tensor<6x3xf64>, tensor<3x5x4xf64>, tensor<3x4x5xf64>, tensor<3x5xf64>) -> tensor<6x4xf64>
  %f = loom.mul %0, %w : (tensor<6x4xf64>, tensor<6x4xf64>) -> tensor<6x4xf64>
  %s = loom.reduce_sum %f {axes = array<i64>} : (tensor<6x4xf64>) -> tensor<f64>
  return %s : tensor<f64>
}

// CHECK-DAG: moe_expert_choice_groups: ok
func.func @moe_expert_choice_groups(%x: tensor<6x4xf64>, %r: tensor<6x3xf64>, %w1: tensor<3x5x4xf64>, %w2: tensor<3x4x5xf64>) -> tensor<f64> {
  %w = loom.constant #w64
  %0 = loom.moe expert_choice silu %x, %r experts(%w1, %w2) {k = 1 : i64, capacity_factor = 2.0 : f64, groups = 2 : i64} : (tensor<6x4xf64>, tensor<6x3xf64>, tensor<3x5x4xf64>, tensor<3x4x5xf64>) -> tensor<6x4xf64>
  %f = loom.mul %0, %w : (tensor<6x4xf64>, tensor<6x4xf64>) -> tensor<6x4xf64>
  %s = loom.reduce_sum %f {axes = array<i64>} : (tensor<6x4xf64>) -> tensor<f64>
  return %s : tensor<f64>
}

// CHECK-DAG: moe_expert_choice: ok
func.func @moe_expert_choice(%x: tensor<6x4xf64>, %r: tensor<6x3xf64>, %w1: tensor<3x5x4xf64>, %w2: tensor<3x4x5xf64>) -> tensor<f64> {
  %w = loom.constant #w64
  %0 = loom.moe expert_choice gelu %x, %r experts(%w1, %w2) {k = 1 : i64, capacity_factor = 1.0 : f64} : (tensor<6x4xf64>, tensor<6x3xf64>, tensor<3x5x4xf64>, tensor<3x4x5xf64>) -> tensor<6x4xf64>
  %f = loom.mul %0, %w : (tensor<6x4xf64>, tensor<6x4xf64>) -> tensor<6x4xf64>
  %s = loom.reduce_sum %f {axes = array<i64>} : (tensor<6x4xf64>) -> tensor<f64>
  return %s : tensor<f64>
}

// CHECK: 30 functions checked, 0 failed
