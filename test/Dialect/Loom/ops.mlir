// RUN: loom-opt %s --split-input-file --allow-unregistered-dialect | loom-opt --split-input-file --allow-unregistered-dialect | FileCheck %s

// Every loom op parses, verifies, prints and parses back.

// CHECK-LABEL: func @elementwise
func.func @elementwise(%a: tensor<2x3xf32>, %b: tensor<3xf32>, %c: tensor<2x3xi1>, %i: tensor<2x3xi64>) {
  // CHECK: loom.neg %{{.*}} : tensor<2x3xf32>
  %0 = loom.neg %a : tensor<2x3xf32>
  %1 = loom.abs %a : tensor<2x3xf32>
  %2 = loom.sign %a : tensor<2x3xf32>
  %3 = loom.exp %a : tensor<2x3xf32>
  %4 = loom.log %a : tensor<2x3xf32>
  %5 = loom.sqrt %a : tensor<2x3xf32>
  %6 = loom.rsqrt %a : tensor<2x3xf32>
  %7 = loom.reciprocal %a : tensor<2x3xf32>
  %8 = loom.tanh %a : tensor<2x3xf32>
  %9 = loom.sigmoid %a : tensor<2x3xf32>
  %10 = loom.relu %a : tensor<2x3xf32>
  %11 = loom.erf %a : tensor<2x3xf32>
  %12 = loom.floor %a : tensor<2x3xf32>
  %13 = loom.ceil %a : tensor<2x3xf32>
  %14 = loom.round %a : tensor<2x3xf32>
  %15 = loom.sin %a : tensor<2x3xf32>
  %16 = loom.cos %a : tensor<2x3xf32>
  %17 = loom.softplus %a : tensor<2x3xf32>
  %18 = loom.softsign %a : tensor<2x3xf32>
  %19 = loom.not %c : tensor<2x3xi1>
  // CHECK: loom.gelu %{{.*}} {approximate} : tensor<2x3xf32>
  %20 = loom.gelu %a {approximate} : tensor<2x3xf32>
  // CHECK: loom.leaky_relu %{{.*}} {alpha = 1.000000e-01 : f64}
  %21 = loom.leaky_relu %a {alpha = 0.1 : f64} : tensor<2x3xf32>
  %22 = loom.elu %a {alpha = 1.0 : f64} : tensor<2x3xf32>
  %23 = loom.hard_sigmoid %a {alpha = 0.2 : f64, beta = 0.5 : f64} : tensor<2x3xf32>
  // CHECK: loom.clip %{{.*}} {max = 6.000000e+00 : f64, min = 0.000000e+00 : f64}
  %24 = loom.clip %a {min = 0.0 : f64, max = 6.0 : f64} : tensor<2x3xf32>
  // CHECK: loom.cast %{{.*}} : tensor<2x3xf32> -> tensor<2x3xbf16>
  %25 = loom.cast %a : tensor<2x3xf32> -> tensor<2x3xbf16>
  // CHECK: loom.add %{{.*}}, %{{.*}} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %26 = loom.add %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %27 = loom.sub %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %28 = loom.mul %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %29 = loom.div %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %30 = loom.pow %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %31 = loom.max %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %32 = loom.min %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %33 = loom.mod %i, %i : (tensor<2x3xi64>, tensor<2x3xi64>) -> tensor<2x3xi64>
  %34 = loom.and %c, %c : (tensor<2x3xi1>, tensor<2x3xi1>) -> tensor<2x3xi1>
  %35 = loom.or %c, %c : (tensor<2x3xi1>, tensor<2x3xi1>) -> tensor<2x3xi1>
  %36 = loom.xor %c, %c : (tensor<2x3xi1>, tensor<2x3xi1>) -> tensor<2x3xi1>
  // CHECK: loom.equal %{{.*}}, %{{.*}} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  %37 = loom.equal %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  %38 = loom.less %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  %39 = loom.less_equal %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  %40 = loom.greater %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  %41 = loom.greater_equal %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  // CHECK: loom.where %{{.*}}, %{{.*}}, %{{.*}} : (tensor<2x3xi1>, tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %42 = loom.where %c, %a, %b : (tensor<2x3xi1>, tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  // CHECK: loom.constant dense<1.000000e+00> : tensor<2xf32>
  %43 = loom.constant dense<1.0> : tensor<2xf32>
  return
}

// -----

// CHECK-LABEL: func @contractions
func.func @contractions(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>, %bx: tensor<2x5x4x8xf32>,
                        %img: tensor<1x3x8x8xf32>, %f: tensor<6x3x3x3xf32>, %fb: tensor<6xf32>) {
  // CHECK: loom.matmul %{{.*}}, %{{.*}} {transpose_rhs} : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  %0 = loom.matmul %x, %w {transpose_rhs} : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  // CHECK: -> tensor<2x5x4x16xf32>
  %1 = loom.matmul %bx, %w {transpose_rhs} : (tensor<2x5x4x8xf32>, tensor<16x8xf32>) -> tensor<2x5x4x16xf32>
  // CHECK: loom.conv %{{.*}}, %{{.*}}, %{{.*}} {dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>}
  %2 = loom.conv %img, %f, %fb {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<1x3x8x8xf32>, tensor<6x3x3x3xf32>, tensor<6xf32>) -> tensor<1x6x4x4xf32>
  // CHECK: loom.max_pool {{.*}} -> tensor<1x3x4x4xf32>
  %3 = loom.max_pool %img {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32>
  // CHECK: loom.avg_pool {{.*}}ceil_mode{{.*}} -> tensor<1x3x3x3xf32>
  %4 = loom.avg_pool %img {kernel_shape = array<i64: 3, 3>, strides = array<i64: 3, 3>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode, count_include_pad} : (tensor<1x3x8x8xf32>) -> tensor<1x3x3x3xf32>
  return
}

// -----

// CHECK-LABEL: func @reductions_and_norms
func.func @reductions_and_norms(%x: tensor<2x3x4xf32>, %s: tensor<4xf32>, %img: tensor<2x3x5x5xf32>, %c: tensor<3xf32>) {
  // CHECK: loom.reduce_sum %{{.*}} {axes = array<i64: 1, 2>} : (tensor<2x3x4xf32>) -> tensor<2xf32>
  %0 = loom.reduce_sum %x {axes = array<i64: 1, 2>} : (tensor<2x3x4xf32>) -> tensor<2xf32>
  // CHECK: -> tensor<2x1x4xf32>
  %1 = loom.reduce_mean %x {axes = array<i64: 1>, keepdims} : (tensor<2x3x4xf32>) -> tensor<2x1x4xf32>
  %2 = loom.reduce_max %x {axes = array<i64>} : (tensor<2x3x4xf32>) -> tensor<f32>
  %3 = loom.reduce_min %x {axes = array<i64: 0>} : (tensor<2x3x4xf32>) -> tensor<3x4xf32>
  %4 = loom.reduce_prod %x {axes = array<i64: 2>} : (tensor<2x3x4xf32>) -> tensor<2x3xf32>
  // CHECK: loom.argmax {{.*}} -> tensor<2x4xi64>
  %5 = loom.argmax %x {axis = 1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x4xi64>
  %6 = loom.argmin %x {axis = 2 : i64, keepdims, select_last_index} : (tensor<2x3x4xf32>) -> tensor<2x3x1xi64>
  // CHECK: loom.softmax %{{.*}} {axis = 2 : i64} : tensor<2x3x4xf32>
  %7 = loom.softmax %x {axis = 2 : i64} : tensor<2x3x4xf32>
  %8 = loom.log_softmax %x {axis = 0 : i64} : tensor<2x3x4xf32>
  // CHECK: loom.layer_norm {{.*}} -> (tensor<2x3x4xf32>, tensor<2x3x1xf32>, tensor<2x3x1xf32>)
  %9:3 = loom.layer_norm %x, %s, %s {axis = 2 : i64, epsilon = 1.0e-5 : f64} : (tensor<2x3x4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x3x4xf32>, tensor<2x3x1xf32>, tensor<2x3x1xf32>)
  %10 = loom.batch_norm %img, %c, %c, %c, %c {epsilon = 1.0e-5 : f64} : (tensor<2x3x5x5xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3x5x5xf32>
  // CHECK: loom.batch_norm_train {{.*}} momentum = 9.000000e-01 : f64
  %11:5 = loom.batch_norm_train %img, %c, %c, %c, %c {epsilon = 1.0e-5 : f64, momentum = 0.9 : f64} : (tensor<2x3x5x5xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<2x3x5x5xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>)
  return
}

// -----

// CHECK-LABEL: func @data_movement
func.func @data_movement(%x: tensor<2x3x4xf32>, %idx: tensor<5xi64>, %eidx: tensor<2x3x4xi64>, %row: tensor<1x4xf32>, %labels: tensor<6xi64>, %onoff: tensor<2xf32>) {
  // CHECK: loom.reshape %{{.*}} : tensor<2x3x4xf32> -> tensor<6x4xf32>
  %0 = loom.reshape %x : tensor<2x3x4xf32> -> tensor<6x4xf32>
  // CHECK: loom.transpose %{{.*}} {perm = array<i64: 2, 0, 1>} : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
  %1 = loom.transpose %x {perm = array<i64: 2, 0, 1>} : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
  %2 = loom.expand %row : tensor<1x4xf32> -> tensor<3x4xf32>
  %3 = loom.concat %x, %x {axis = 1 : i64} : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x6x4xf32>
  // CHECK: loom.split {{.*}} -> (tensor<2x1x4xf32>, tensor<2x2x4xf32>)
  %4:2 = loom.split %x {axis = 1 : i64, sizes = array<i64: 1, 2>} : (tensor<2x3x4xf32>) -> (tensor<2x1x4xf32>, tensor<2x2x4xf32>)
  %5 = loom.slice %x {starts = array<i64: 0, 1, 3>, limits = array<i64: 2, 3, -1>, steps = array<i64: 1, 1, -2>} : tensor<2x3x4xf32> -> tensor<2x2x2xf32>
  // CHECK: loom.pad %{{.*}} reflect
  %6 = loom.pad %x reflect {low = array<i64: 0, 1, 1>, high = array<i64: 0, 1, 2>} : tensor<2x3x4xf32> -> tensor<2x5x7xf32>
  %7 = loom.tile %x {repeats = array<i64: 1, 2, 3>} : tensor<2x3x4xf32> -> tensor<2x6x12xf32>
  // CHECK: loom.gather {{.*}} -> tensor<2x5x4xf32>
  %8 = loom.gather %x, %idx {axis = 1 : i64} : (tensor<2x3x4xf32>, tensor<5xi64>) -> tensor<2x5x4xf32>
  %9 = loom.gather_elements %x, %eidx {axis = 2 : i64} : (tensor<2x3x4xf32>, tensor<2x3x4xi64>) -> tensor<2x3x4xf32>
  // CHECK: loom.scatter_elements {{.*}} add
  %10 = loom.scatter_elements %x, %eidx, %x add {axis = 0 : i64} : (tensor<2x3x4xf32>, tensor<2x3x4xi64>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  // CHECK: loom.top_k {{.*}} -> (tensor<2x3x2xf32>, tensor<2x3x2xi64>)
  %11:2 = loom.top_k %x {k = 2 : i64, axis = 2 : i64, largest} : (tensor<2x3x4xf32>) -> (tensor<2x3x2xf32>, tensor<2x3x2xi64>)
  %12 = loom.one_hot %labels, %onoff {depth = 10 : i64, axis = 1 : i64} : (tensor<6xi64>, tensor<2xf32>) -> tensor<6x10xf32>
  %13 = loom.cumsum %x {axis = 1 : i64, exclusive, reverse} : tensor<2x3x4xf32>
  %14 = loom.trilu %x {k = 1 : i64, upper} : tensor<2x3x4xf32>
  // CHECK: loom.dropout {{.*}} -> (tensor<2x3x4xf32>, tensor<2x3x4xi1>)
  %15:2 = loom.dropout %x {ratio = 0.1 : f64, seed = 7 : i64} : (tensor<2x3x4xf32>) -> (tensor<2x3x4xf32>, tensor<2x3x4xi1>)
  return
}

// -----

// CHECK-LABEL: func @recurrent_and_losses
func.func @recurrent_and_losses(%x: tensor<5x2x3xf32>, %w: tensor<2x16x3xf32>, %r: tensor<2x16x4xf32>, %b: tensor<2x32xf32>,
                                %h: tensor<2x2x4xf32>, %gw: tensor<1x12x3xf32>, %gr: tensor<1x12x4xf32>,
                                %scores: tensor<6x10xf32>, %labels: tensor<6xi64>, %weight: tensor<10xf32>) {
  // CHECK: loom.lstm bidirectional {{.*}} bias {{.*}} initial_h {{.*}} initial_c
  %0:3 = loom.lstm bidirectional %x, %w, %r bias %b initial_h %h initial_c %h {hidden_size = 4 : i64} : (tensor<5x2x3xf32>, tensor<2x16x3xf32>, tensor<2x16x4xf32>, tensor<2x32xf32>, tensor<2x2x4xf32>, tensor<2x2x4xf32>) -> (tensor<5x2x2x4xf32>, tensor<2x2x4xf32>, tensor<2x2x4xf32>)
  // CHECK: loom.gru reverse {{.*}} {hidden_size = 4 : i64, linear_before_reset}
  %1:2 = loom.gru reverse %x, %gw, %gr {hidden_size = 4 : i64, linear_before_reset} : (tensor<5x2x3xf32>, tensor<1x12x3xf32>, tensor<1x12x4xf32>) -> (tensor<5x1x2x4xf32>, tensor<1x2x4xf32>)
  // CHECK: loom.softmax_cross_entropy mean {{.*}} {ignore_index = -100 : i64}
  %2:2 = loom.softmax_cross_entropy mean %scores, %labels, %weight {ignore_index = -100 : i64} : (tensor<6x10xf32>, tensor<6xi64>, tensor<10xf32>) -> (tensor<f32>, tensor<6x10xf32>)
  // CHECK: loom.nll_loss none {{.*}} -> tensor<6xf32>
  %3 = loom.nll_loss none %scores, %labels : (tensor<6x10xf32>, tensor<6xi64>) -> tensor<6xf32>
  return
}

// -----

// CHECK-LABEL: func @dropout_offset
func.func @dropout_offset(%x: tensor<8xf32>, %step: tensor<i64>) -> tensor<8xf32> {
  // CHECK: loom.dropout %{{.*}} offset %{{.*}} {ratio = 2.500000e-01 : f64} : (tensor<8xf32>, tensor<i64>) -> (tensor<8xf32>, tensor<8xi1>)
  %0:2 = loom.dropout %x offset %step {ratio = 0.25 : f64} : (tensor<8xf32>, tensor<i64>) -> (tensor<8xf32>, tensor<8xi1>)
  // A block of a split tensor: its place in the whole tensor.
  // CHECK: loom.dropout %{{.*}} offset %{{.*}} index_base %{{.*}} {ratio = 2.500000e-01 : f64, whole_shape = array<i64: 16>} : (tensor<8xf32>, tensor<i64>, tensor<i64>) -> (tensor<8xf32>, tensor<8xi1>)
  %b:2 = loom.dropout %x offset %step index_base %step {ratio = 0.25 : f64, whole_shape = array<i64: 16>} : (tensor<8xf32>, tensor<i64>, tensor<i64>) -> (tensor<8xf32>, tensor<8xi1>)
  return %0#0 : tensor<8xf32>
}

// CHECK: loom.mesh @mesh = <dp = 2, tp = 4>
loom.mesh @mesh = <dp = 2, tp = 4>

// CHECK-LABEL: func @collectives
func.func @collectives(%x: tensor<8x16xf32>) {
  // CHECK: loom.shard %{{.*}} to <@mesh, [{dp}, {tp}]> : tensor<8x16xf32>
  %0 = loom.shard %x to <@mesh, [{dp}, {tp}]> : tensor<8x16xf32>
  // CHECK: loom.shard %{{.*}} to <@mesh, [{dp}, {}], partial = {tp}> : tensor<8x16xf32>
  %p = loom.shard %x to <@mesh, [{dp}, {}], partial = {tp}> : tensor<8x16xf32>
  // CHECK: loom.shard %{{.*}} to <@mesh, [{dp, tp}, {}]> : tensor<8x16xf32>
  %q = loom.shard %x to <@mesh, [{dp, tp}, {}]> : tensor<8x16xf32>
  // CHECK: "test.use"() {sharding = #loom.sharding<@mesh, [{}, {tp}]>} : () -> ()
  "test.use"() {sharding = #loom.sharding<@mesh, [{}, {"tp"}]>} : () -> ()
  // CHECK: loom.all_reduce sum %{{.*}} on @mesh ["dp", "tp"] : tensor<8x16xf32>
  %1 = loom.all_reduce sum %x on @mesh ["dp", "tp"] : tensor<8x16xf32>
  // CHECK: loom.all_gather %{{.*}} on @mesh ["tp"] {gather_dim = 1 : i64} : tensor<8x16xf32> -> tensor<8x64xf32>
  %2 = loom.all_gather %x on @mesh ["tp"] {gather_dim = 1 : i64} : tensor<8x16xf32> -> tensor<8x64xf32>
  // CHECK: loom.reduce_scatter avg
  %3 = loom.reduce_scatter avg %x on @mesh ["dp"] {scatter_dim = 0 : i64} : tensor<8x16xf32> -> tensor<4x16xf32>
  // CHECK: loom.all_to_all {{.*}} -> tensor<32x4xf32>
  %4 = loom.all_to_all %x on @mesh ["tp"] {split_dim = 1 : i64, concat_dim = 0 : i64} : tensor<8x16xf32> -> tensor<32x4xf32>
  // CHECK: loom.send %{{.*}} on @mesh ["dp"] offset 1 : tensor<8x16xf32>
  loom.send %x on @mesh ["dp"] offset 1 : tensor<8x16xf32>
  // CHECK: loom.recv on @mesh ["dp"] offset -1 : tensor<8x16xf32>
  %5 = loom.recv on @mesh ["dp"] offset -1 : tensor<8x16xf32>
  // CHECK: loom.block_index on @mesh ["tp", "dp"] : tensor<i64>
  %6 = loom.block_index on @mesh ["tp", "dp"] : tensor<i64>
  return
}

// -----

// CHECK-LABEL: func.func @moe
func.func @moe(%x: tensor<8x4xf32>, %r: tensor<8x2xf32>, %w1: tensor<2x6x4xf32>, %w2: tensor<2x4x6xf32>, %b1: tensor<2x6xf32>, %b2: tensor<2x4xf32>) -> (tensor<8x4xf32>, tensor<8x4xf32>) {
  // CHECK: loom.moe top_k silu %{{.*}}, %{{.*}} experts(%{{.*}}, %{{.*}}) fc1_bias %{{.*}} fc2_bias %{{.*}} fc3 %{{.*}} {k = 2 : i64, normalize}
  %0 = loom.moe top_k silu %x, %r experts(%w1, %w2) fc1_bias %b1 fc2_bias %b2 fc3 %w1 {k = 2 : i64, normalize} : (tensor<8x4xf32>, tensor<8x2xf32>, tensor<2x6x4xf32>, tensor<2x4x6xf32>, tensor<2x6xf32>, tensor<2x4xf32>, tensor<2x6x4xf32>) -> tensor<8x4xf32>
  // CHECK: loom.moe token_choice gelu_tanh {{.*}} {aux_loss = 1.000000e-02 : f64, capacity_factor = 1.250000e+00 : f64, k = 1 : i64}
  %1 = loom.moe token_choice gelu_tanh %x, %r experts(%w1, %w2) {k = 1 : i64, capacity_factor = 1.25 : f64, aux_loss = 0.01 : f64} : (tensor<8x4xf32>, tensor<8x2xf32>, tensor<2x6x4xf32>, tensor<2x4x6xf32>) -> tensor<8x4xf32>
  return %0, %1 : tensor<8x4xf32>, tensor<8x4xf32>
}
