// RUN: loom-opt %s --split-input-file --verify-diagnostics

func.func @binary_shapes_do_not_broadcast(%a: tensor<2x3xf32>, %b: tensor<4xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{shapes [2, 3] and [4] do not broadcast}}
  %0 = loom.add %a, %b : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @binary_element_types_differ(%a: tensor<3xf32>, %b: tensor<3xf16>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{operands must have the same element type, got 'f32' and 'f16'}}
  %0 = loom.mul %a, %b : (tensor<3xf32>, tensor<3xf16>) -> tensor<3xf32>
  return
}

// -----

func.func @binary_wrong_result(%a: tensor<3xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'loom.add' op inferred type(s) 'tensor<3xf32>' are incompatible with return type(s) of operation 'tensor<4xf32>'}}
  %0 = loom.add %a, %a : (tensor<3xf32>, tensor<3xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @exp_of_integers(%a: tensor<3xi32>) {
  // expected-error @+1 {{'loom.exp' op operand #0 must be ranked tensor of floating-point values}}
  %0 = loom.exp %a : tensor<3xi32>
  return
}

// -----

func.func @where_condition_not_bool(%c: tensor<3xf32>, %a: tensor<3xf32>) {
  // expected-error @+1 {{'loom.where' op operand #0 must be ranked tensor of 1-bit signless integer values}}
  %0 = loom.where %c, %a, %a : (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return
}

// -----

func.func @where_condition_does_not_broadcast(%c: tensor<4xi1>, %a: tensor<3xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{condition shape does not broadcast with [3]}}
  %0 = loom.where %c, %a, %a : (tensor<4xi1>, tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return
}

// -----

func.func @cast_changes_shape(%a: tensor<3xf32>) {
  // expected-error @+1 {{'loom.cast' op all non-scalar operands/results must have the same shape and base type}}
  %0 = loom.cast %a : tensor<3xf32> -> tensor<4xi32>
  return
}

// -----

func.func @matmul_rank_one(%a: tensor<3xf32>, %b: tensor<3x4xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{operands must have rank 2 or more, got 1 and 2}}
  %0 = loom.matmul %a, %b : (tensor<3xf32>, tensor<3x4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @matmul_contracting_mismatch(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{contracting dimensions differ: lhs [2, 3] has 3, rhs [4, 5] has 4}}
  %0 = loom.matmul %a, %b : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<2x5xf32>
  return
}

// -----

func.func @matmul_element_types_differ(%a: tensor<2x3xf32>, %b: tensor<3x5xbf16>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{operands must have the same element type, got 'f32' and 'bf16'}}
  %0 = loom.matmul %a, %b : (tensor<2x3xf32>, tensor<3x5xbf16>) -> tensor<2x5xf32>
  return
}

// -----

func.func @matmul_batch_mismatch(%a: tensor<2x2x3xf32>, %b: tensor<3x3x5xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{batch dimensions of [2, 2, 3] and [3, 3, 5] do not broadcast}}
  %0 = loom.matmul %a, %b : (tensor<2x2x3xf32>, tensor<3x3x5xf32>) -> tensor<2x2x5xf32>
  return
}

// -----

func.func @conv_channels_mismatch(%x: tensor<1x3x8x8xf32>, %w: tensor<4x2x3x3xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{input has 3 channels but the filter expects 2 x 1 groups}}
  %0 = loom.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @conv_rank_mismatch(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{input and filter must have the same rank of 3 or more, got 4 and 3}}
  %0 = loom.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @conv_features_not_divisible_by_groups(%x: tensor<1x4x8x8xf32>, %w: tensor<3x2x3x3xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{filter count 3 is not divisible by groups 2}}
  %0 = loom.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 2 : i64} : (tensor<1x4x8x8xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x6x6xf32>
  return
}

// -----

func.func @conv_bias_shape(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<3xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{bias must have shape [4], got [3]}}
  %0 = loom.conv %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @conv_wrong_attribute_counts(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{expected 2 kernel sizes, strides and dilations and 4 pads for 2 spatial dimensions, got 2, 1, 2 and 4}}
  %0 = loom.conv %x, %w {strides = array<i64: 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @pool_window_too_large(%x: tensor<1x1x2x2xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{window of extent 3 does not fit spatial dimension 0 (size 2 with pads 0+0)}}
  %0 = loom.max_pool %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x1x2x2xf32>) -> tensor<1x1x1x1xf32>
  return
}

// -----

func.func @pool_zero_stride(%x: tensor<1x1x4x4xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{spatial dimension 0 has a non-positive kernel, stride or dilation, or a negative pad}}
  %0 = loom.avg_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 0, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xf32>
  return
}

// -----

func.func @pool_rank_two(%x: tensor<4x4xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{input must have rank 3 or more, got 2}}
  %0 = loom.max_pool %x {kernel_shape = array<i64>, strides = array<i64>, pads = array<i64>, dilations = array<i64>} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  return
}

// -----

func.func @reduce_axis_out_of_range(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %0 = loom.reduce_sum %x {axes = array<i64: 2>} : (tensor<2x3xf32>) -> tensor<2xf32>
  return
}

// -----

func.func @reduce_axis_repeated(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{axis 1 appears more than once}}
  %0 = loom.reduce_max %x {axes = array<i64: 1, 1>} : (tensor<2x3xf32>) -> tensor<2xf32>
  return
}

// -----

func.func @argmax_negative_axis(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{axis -1 is out of range for rank 2}}
  %0 = loom.argmax %x {axis = -1 : i64} : (tensor<2x3xf32>) -> tensor<2xi64>
  return
}

// -----

func.func @softmax_axis(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{'loom.softmax' op axis 2 is out of range for rank 2}}
  %0 = loom.softmax %x {axis = 2 : i64} : tensor<2x3xf32>
  return
}

// -----

func.func @layer_norm_scale_shape(%x: tensor<2x4xf32>, %s: tensor<3xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{scale and bias must broadcast to the normalized shape [4] with element type 'f32', got 'tensor<3xf32>'}}
  %0:3 = loom.layer_norm %x, %s {axis = 1 : i64, epsilon = 1.0e-5 : f64} : (tensor<2x4xf32>, tensor<3xf32>) -> (tensor<2x4xf32>, tensor<2x1xf32>, tensor<2x1xf32>)
  return
}

// -----

func.func @layer_norm_axis(%x: tensor<2x4xf32>, %s: tensor<4xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %0:3 = loom.layer_norm %x, %s {axis = 2 : i64, epsilon = 1.0e-5 : f64} : (tensor<2x4xf32>, tensor<4xf32>) -> (tensor<2x4xf32>, tensor<2x1xf32>, tensor<2x1xf32>)
  return
}

// -----

func.func @batch_norm_channels(%x: tensor<2x3x4x4xf32>, %c: tensor<4xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{scale, bias, mean and variance must have shape [3], got [4]}}
  %0 = loom.batch_norm %x, %c, %c, %c, %c {epsilon = 1.0e-5 : f64} : (tensor<2x3x4x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x3x4x4xf32>
  return
}

// -----

func.func @batch_norm_rank(%x: tensor<3xf32>, %c: tensor<3xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{input must have rank 2 or more, got 1}}
  %0:5 = loom.batch_norm_train %x, %c, %c, %c, %c {epsilon = 1.0e-5 : f64, momentum = 0.9 : f64} : (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>)
  return
}

// -----

func.func @reshape_element_count(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{'loom.reshape' op cannot reshape 6 elements [2, 3] into 8 elements [8]}}
  %0 = loom.reshape %x : tensor<2x3xf32> -> tensor<8xf32>
  return
}

// -----

func.func @reshape_element_type(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{'loom.reshape' op element type must not change, got 'f32' and 'i32'}}
  %0 = loom.reshape %x : tensor<2x3xf32> -> tensor<6xi32>
  return
}

// -----

func.func @transpose_not_a_permutation(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{perm must be a permutation of 0..1, got [0, 0]}}
  %0 = loom.transpose %x {perm = array<i64: 0, 0>} : tensor<2x3xf32> -> tensor<2x2xf32>
  return
}

// -----

func.func @expand_not_broadcastable(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{'loom.expand' op cannot broadcast [2, 3] to [4, 3]}}
  %0 = loom.expand %x : tensor<2x3xf32> -> tensor<4x3xf32>
  return
}

// -----

func.func @expand_element_type(%x: tensor<1x3xf32>) {
  // expected-error @+1 {{'loom.expand' op element type must not change, got 'f32' and 'f16'}}
  %0 = loom.expand %x : tensor<1x3xf32> -> tensor<4x3xf16>
  return
}

// -----

func.func @concat_mismatch(%a: tensor<2x3xf32>, %b: tensor<3x3xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{input #1 'tensor<3x3xf32>' does not match input #0 'tensor<2x3xf32>' outside axis 1}}
  %0 = loom.concat %a, %b {axis = 1 : i64} : (tensor<2x3xf32>, tensor<3x3xf32>) -> tensor<2x6xf32>
  return
}

// -----

func.func @concat_axis(%a: tensor<2x3xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %0 = loom.concat %a, %a {axis = 2 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x6xf32>
  return
}

// -----

func.func @concat_empty() {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{needs at least one input}}
  %0 = loom.concat {axis = 0 : i64} : () -> tensor<2xf32>
  return
}

// -----

func.func @split_sizes_do_not_add_up(%x: tensor<2x6xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{split sizes [2, 3] add up to 5, not to dimension 1 (size 6)}}
  %0:2 = loom.split %x {axis = 1 : i64, sizes = array<i64: 2, 3>} : (tensor<2x6xf32>) -> (tensor<2x2xf32>, tensor<2x3xf32>)
  return
}

// -----

func.func @split_negative_size(%x: tensor<2x6xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{split sizes must be non-negative, got [7, -1]}}
  %0:2 = loom.split %x {axis = 1 : i64, sizes = array<i64: 7, -1>} : (tensor<2x6xf32>) -> (tensor<2x7xf32>, tensor<2x0xf32>)
  return
}

// -----

func.func @slice_out_of_range(%x: tensor<4xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{slice [1, 6) step 1 is out of range for dimension 0 (size 4)}}
  %0 = loom.slice %x {starts = array<i64: 1>, limits = array<i64: 6>, steps = array<i64: 1>} : tensor<4xf32> -> tensor<5xf32>
  return
}

// -----

func.func @slice_zero_step(%x: tensor<4xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{step of dimension 0 is zero}}
  %0 = loom.slice %x {starts = array<i64: 0>, limits = array<i64: 4>, steps = array<i64: 0>} : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @slice_wrong_counts(%x: tensor<4x4xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{expected 2 starts, limits and steps, got 1, 2 and 2}}
  %0 = loom.slice %x {starts = array<i64: 0>, limits = array<i64: 4, 4>, steps = array<i64: 1, 1>} : tensor<4x4xf32> -> tensor<4x4xf32>
  return
}

// -----

func.func @pad_counts(%x: tensor<4x4xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{expected 2 low and high pads, got 1 and 2}}
  %0 = loom.pad %x constant {low = array<i64: 1>, high = array<i64: 1, 1>} : tensor<4x4xf32> -> tensor<6x6xf32>
  return
}

// -----

func.func @pad_crops_below_zero(%x: tensor<4xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{pads crop dimension 0 (size 4) below zero}}
  %0 = loom.pad %x constant {low = array<i64: -3>, high = array<i64: -2>} : tensor<4xf32> -> tensor<0xf32>
  return
}

// -----

func.func @tile_counts(%x: tensor<4x4xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{expected 2 repeats, got 1}}
  %0 = loom.tile %x {repeats = array<i64: 2>} : tensor<4x4xf32> -> tensor<8x4xf32>
  return
}

// -----

func.func @tile_negative(%x: tensor<4xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{repeats must be non-negative, got [-1]}}
  %0 = loom.tile %x {repeats = array<i64: -1>} : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @gather_axis(%x: tensor<4x4xf32>, %i: tensor<2xi64>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %0 = loom.gather %x, %i {axis = 2 : i64} : (tensor<4x4xf32>, tensor<2xi64>) -> tensor<4x2xf32>
  return
}

// -----

func.func @gather_float_indices(%x: tensor<4x4xf32>, %i: tensor<2xf32>) {
  // expected-error @+1 {{'loom.gather' op operand #1 must be ranked tensor of signless integer values}}
  %0 = loom.gather %x, %i {axis = 0 : i64} : (tensor<4x4xf32>, tensor<2xf32>) -> tensor<2x4xf32>
  return
}

// -----

func.func @gather_elements_rank(%x: tensor<4x4xf32>, %i: tensor<2xi64>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{input and indices must have the same rank, got 2 and 1}}
  %0 = loom.gather_elements %x, %i {axis = 0 : i64} : (tensor<4x4xf32>, tensor<2xi64>) -> tensor<2xf32>
  return
}

// -----

func.func @scatter_updates_shape(%x: tensor<4x4xf32>, %i: tensor<2x4xi64>, %u: tensor<2x3xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{updates must have shape [2, 4], got [2, 3]}}
  %0 = loom.scatter_elements %x, %i, %u none {axis = 0 : i64} : (tensor<4x4xf32>, tensor<2x4xi64>, tensor<2x3xf32>) -> tensor<4x4xf32>
  return
}

// -----

func.func @top_k_too_large(%x: tensor<4x4xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{k = 5 is out of range for dimension 1 (size 4)}}
  %0:2 = loom.top_k %x {k = 5 : i64, axis = 1 : i64} : (tensor<4x4xf32>) -> (tensor<4x5xf32>, tensor<4x5xi64>)
  return
}

// -----

func.func @one_hot_values_shape(%i: tensor<4xi64>, %v: tensor<3xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{values must have shape [2], got [3]}}
  %0 = loom.one_hot %i, %v {depth = 5 : i64, axis = 1 : i64} : (tensor<4xi64>, tensor<3xf32>) -> tensor<4x5xf32>
  return
}

// -----

func.func @one_hot_depth(%i: tensor<4xi64>, %v: tensor<2xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{depth must be positive, got 0}}
  %0 = loom.one_hot %i, %v {depth = 0 : i64, axis = 1 : i64} : (tensor<4xi64>, tensor<2xf32>) -> tensor<4x0xf32>
  return
}

// -----

func.func @one_hot_axis(%i: tensor<4xi64>, %v: tensor<2xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %0 = loom.one_hot %i, %v {depth = 3 : i64, axis = 2 : i64} : (tensor<4xi64>, tensor<2xf32>) -> tensor<4x3xf32>
  return
}

// -----

func.func @cumsum_axis(%x: tensor<4xf32>) {
  // expected-error @+1 {{'loom.cumsum' op axis 1 is out of range for rank 1}}
  %0 = loom.cumsum %x {axis = 1 : i64} : tensor<4xf32>
  return
}

// -----

func.func @trilu_rank(%x: tensor<4xf32>) {
  // expected-error @+1 {{'loom.trilu' op input must have rank 2 or more, got 1}}
  %0 = loom.trilu %x {k = 0 : i64} : tensor<4xf32>
  return
}

// -----

func.func @dropout_ratio(%x: tensor<4xf32>) {
  // expected-error @+1 {{'loom.dropout' op ratio must be in [0, 1), got 1}}
  %0:2 = loom.dropout %x {ratio = 1.0 : f64} : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xi1>)
  return
}

// -----

func.func @dropout_offset_type(%x: tensor<4xf32>, %o: tensor<1xi64>) {
  // expected-error @+1 {{'loom.dropout' op operand #1 must be 0D tensor of 64-bit signless integer values}}
  %0:2 = loom.dropout %x offset %o {ratio = 0.5 : f64} : (tensor<4xf32>, tensor<1xi64>) -> (tensor<4xf32>, tensor<4xi1>)
  return
}

// -----

func.func @dropout_whole_shape_alone(%x: tensor<4xf32>) {
  // expected-error @+1 {{'loom.dropout' op needs both whole_shape and index_base, or neither}}
  %0:2 = loom.dropout %x {ratio = 0.5 : f64, whole_shape = array<i64: 8>} : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xi1>)
  return
}

// -----

func.func @dropout_whole_shape_rank(%x: tensor<4xf32>, %b: tensor<i64>) {
  // expected-error @+1 {{'loom.dropout' op whole_shape has 2 dimensions but the input has 1}}
  %0:2 = loom.dropout %x index_base %b {ratio = 0.5 : f64, whole_shape = array<i64: 2, 8>} : (tensor<4xf32>, tensor<i64>) -> (tensor<4xf32>, tensor<4xi1>)
  return
}

// -----

func.func @dropout_whole_shape_small(%x: tensor<4xf32>, %b: tensor<i64>) {
  // expected-error @+1 {{'loom.dropout' op whole_shape dimension 0 (2) is smaller than the block's (4)}}
  %0:2 = loom.dropout %x index_base %b {ratio = 0.5 : f64, whole_shape = array<i64: 2>} : (tensor<4xf32>, tensor<i64>) -> (tensor<4xf32>, tensor<4xi1>)
  return
}

// -----

loom.mesh @mesh = <dp = 2>
func.func @block_index_axis() {
  // expected-error @+1 {{'loom.block_index' op}}
  %0 = loom.block_index on @mesh ["tp"] : tensor<i64>
  return
}

// -----

func.func @lstm_weight_shape(%x: tensor<5x2x3xf32>, %w: tensor<1x12x3xf32>, %r: tensor<1x16x4xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{w must have shape [1, 16, 3], got [1, 12, 3]}}
  %0:3 = loom.lstm forward %x, %w, %r {hidden_size = 4 : i64} : (tensor<5x2x3xf32>, tensor<1x12x3xf32>, tensor<1x16x4xf32>) -> (tensor<5x1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>)
  return
}

// -----

func.func @lstm_input_rank(%x: tensor<5x3xf32>, %w: tensor<1x16x3xf32>, %r: tensor<1x16x4xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{input must be [seq, batch, features], got 'tensor<5x3xf32>'}}
  %0:3 = loom.lstm forward %x, %w, %r {hidden_size = 4 : i64} : (tensor<5x3xf32>, tensor<1x16x3xf32>, tensor<1x16x4xf32>) -> (tensor<5x1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>)
  return
}

// -----

func.func @gru_hidden_size(%x: tensor<5x2x3xf32>, %w: tensor<1x12x3xf32>, %r: tensor<1x12x4xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{hidden_size must be positive, got 0}}
  %0:2 = loom.gru forward %x, %w, %r {hidden_size = 0 : i64} : (tensor<5x2x3xf32>, tensor<1x12x3xf32>, tensor<1x12x4xf32>) -> (tensor<5x1x2x4xf32>, tensor<1x2x4xf32>)
  return
}

// -----

func.func @loss_label_shape(%s: tensor<6x10xf32>, %l: tensor<5xi64>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{labels must have shape [6], got [5]}}
  %0:2 = loom.softmax_cross_entropy mean %s, %l : (tensor<6x10xf32>, tensor<5xi64>) -> (tensor<f32>, tensor<6x10xf32>)
  return
}

// -----

func.func @loss_scores_rank(%s: tensor<6xf32>, %l: tensor<6xi64>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{scores must be [N, C, ...], got 'tensor<6xf32>'}}
  %0 = loom.nll_loss sum %s, %l : (tensor<6xf32>, tensor<6xi64>) -> tensor<f32>
  return
}

// -----

func.func @loss_weight_shape(%s: tensor<6x10xf32>, %l: tensor<6xi64>, %w: tensor<6xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{weight must have shape [10], got [6]}}
  %0 = loom.nll_loss sum %s, %l, %w : (tensor<6x10xf32>, tensor<6xi64>, tensor<6xf32>) -> tensor<f32>
  return
}

// -----

// expected-error @+1 {{mesh must have at least one axis}}
loom.mesh @empty = <>

// -----

// expected-error @+1 {{mesh axis "dp" appears more than once}}
loom.mesh @twice = <dp = 2, dp = 2>

// -----

// expected-error @+1 {{mesh axis "dp" must have a positive size, got 0}}
loom.mesh @zero = <dp = 0>

// -----

loom.mesh @mesh = <dp = 2, tp = 3>

func.func @sharding_does_not_divide(%x: tensor<8x1024xf32>) {
  // expected-error @+1 {{'loom.shard' op mesh axis "tp" of size 3 does not divide dimension 1 (size 1024)}}
  %0 = loom.shard %x to <@mesh, [{}, {tp}]> : tensor<8x1024xf32>
  return
}

// -----

loom.mesh @mesh = <dp = 2, tp = 4>

func.func @sharding_divides_one_axis_not_both(%x: tensor<4x16xf32>) {
  // expected-error @+1 {{mesh axis "tp" of size 4 does not divide dimension 0 (size 4) after the axes before it}}
  %0 = loom.shard %x to <@mesh, [{dp, tp}, {}]> : tensor<4x16xf32>
  return
}

// -----

loom.mesh @mesh = <dp = 2>

func.func @sharding_unknown_axis(%x: tensor<8xf32>) {
  // expected-error @+1 {{mesh @mesh has no axis "tp"}}
  %0 = loom.shard %x to <@mesh, [{tp}]> : tensor<8xf32>
  return
}

// -----

loom.mesh @mesh = <dp = 2>

func.func @sharding_rank(%x: tensor<8x2xf32>) {
  // expected-error @+1 {{sharding has 1 dimensions but the tensor has rank 2}}
  %0 = loom.shard %x to <@mesh, [{dp}]> : tensor<8x2xf32>
  return
}

// -----

loom.mesh @mesh = <dp = 2>

func.func @sharding_axis_twice(%x: tensor<8x2xf32>) {
  // expected-error @+1 {{mesh axis "dp" is used more than once in a sharding}}
  %0 = loom.shard %x to <@mesh, [{dp}, {dp}]> : tensor<8x2xf32>
  return
}

// -----

func.func @sharding_unknown_mesh(%x: tensor<8xf32>) {
  // expected-error @+1 {{'loom.shard' op refers to @nowhere, which is not a loom.mesh}}
  %0 = loom.shard %x to <@nowhere, [{dp}]> : tensor<8xf32>
  return
}

// -----

loom.mesh @mesh = <dp = 2>

func.func @all_reduce_unknown_axis(%x: tensor<8xf32>) {
  // expected-error @+1 {{'loom.all_reduce' op mesh @mesh has no axis "tp"}}
  %0 = loom.all_reduce sum %x on @mesh ["tp"] : tensor<8xf32>
  return
}

// -----

loom.mesh @mesh = <dp = 2>

func.func @all_reduce_no_axes(%x: tensor<8xf32>) {
  // expected-error @+1 {{'loom.all_reduce' op must name at least one mesh axis}}
  %0 = loom.all_reduce sum %x on @mesh [] : tensor<8xf32>
  return
}

// -----

loom.mesh @mesh = <dp = 2>

func.func @all_reduce_axis_twice(%x: tensor<8xf32>) {
  // expected-error @+1 {{'loom.all_reduce' op mesh axis "dp" is named more than once}}
  %0 = loom.all_reduce max %x on @mesh ["dp", "dp"] : tensor<8xf32>
  return
}

// -----

loom.mesh @mesh = <dp = 4>

func.func @all_gather_result(%x: tensor<8x2xf32>) {
  // expected-error @+1 {{'loom.all_gather' op expected result shape [32, 2], got [16, 2]}}
  %0 = loom.all_gather %x on @mesh ["dp"] {gather_dim = 0 : i64} : tensor<8x2xf32> -> tensor<16x2xf32>
  return
}

// -----

loom.mesh @mesh = <dp = 4>

func.func @all_gather_dim(%x: tensor<8x2xf32>) {
  // expected-error @+1 {{'loom.all_gather' op gather_dim 2 is out of range for rank 2}}
  %0 = loom.all_gather %x on @mesh ["dp"] {gather_dim = 2 : i64} : tensor<8x2xf32> -> tensor<8x2xf32>
  return
}

// -----

loom.mesh @mesh = <dp = 4>

func.func @all_gather_element_type(%x: tensor<8x2xf32>) {
  // expected-error @+1 {{'loom.all_gather' op result 'tensor<32x2xf16>' must have the input's rank and element type}}
  %0 = loom.all_gather %x on @mesh ["dp"] {gather_dim = 0 : i64} : tensor<8x2xf32> -> tensor<32x2xf16>
  return
}

// -----

loom.mesh @mesh = <dp = 3>

func.func @reduce_scatter_does_not_divide(%x: tensor<8x2xf32>) {
  // expected-error @+1 {{'loom.reduce_scatter' op group of 3 devices does not divide scatter_dim 0 (size 8)}}
  %0 = loom.reduce_scatter sum %x on @mesh ["dp"] {scatter_dim = 0 : i64} : tensor<8x2xf32> -> tensor<2x2xf32>
  return
}

// -----

loom.mesh @mesh = <tp = 4>

func.func @all_to_all_result(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{'loom.all_to_all' op expected result shape [32, 4], got [8, 16]}}
  %0 = loom.all_to_all %x on @mesh ["tp"] {split_dim = 1 : i64, concat_dim = 0 : i64} : tensor<8x16xf32> -> tensor<8x16xf32>
  return
}

// -----

loom.mesh @mesh = <tp = 4>

func.func @all_to_all_does_not_divide(%x: tensor<8x6xf32>) {
  // expected-error @+1 {{'loom.all_to_all' op group of 4 devices does not divide split_dim 1 (size 6)}}
  %0 = loom.all_to_all %x on @mesh ["tp"] {split_dim = 1 : i64, concat_dim = 0 : i64} : tensor<8x6xf32> -> tensor<32x1xf32>
  return
}

// -----

loom.mesh @mesh = <tp = 4>

func.func @all_to_all_dims(%x: tensor<8x8xf32>) {
  // expected-error @+1 {{'loom.all_to_all' op split_dim 2 and concat_dim 0 must be in [0, 2)}}
  %0 = loom.all_to_all %x on @mesh ["tp"] {split_dim = 2 : i64, concat_dim = 0 : i64} : tensor<8x8xf32> -> tensor<8x8xf32>
  return
}

// -----

loom.mesh @mesh = <pp = 4, dp = 2>

func.func @send_two_axes(%x: tensor<8xf32>) {
  // expected-error @+1 {{'loom.send' op must name exactly one mesh axis, got 2}}
  loom.send %x on @mesh ["pp", "dp"] offset 1 : tensor<8xf32>
  return
}

// -----

loom.mesh @mesh = <pp = 4>

func.func @recv_offset(%x: tensor<8xf32>) {
  // expected-error @+1 {{'loom.recv' op offset 4 must be non-zero and smaller in magnitude than the axis size 4}}
  %0 = loom.recv on @mesh ["pp"] offset 4 : tensor<8xf32>
  return
}

// -----

func.func @conv_groups_not_positive(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x3x3xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{groups must be positive, got 0}}
  %0 = loom.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 0 : i64} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @conv_filter_element_type(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x3x3xbf16>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{filter element type 'bf16' differs from input's 'f32'}}
  %0 = loom.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xbf16>) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @transpose_wrong_length(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{perm must be a permutation of 0..1, got [0]}}
  %0 = loom.transpose %x {perm = array<i64: 0>} : tensor<2x3xf32> -> tensor<2xf32>
  return
}

// -----

func.func @split_axis(%x: tensor<2x6xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %0:2 = loom.split %x {axis = 2 : i64, sizes = array<i64: 3, 3>} : (tensor<2x6xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>)
  return
}

// -----

func.func @scatter_rank(%x: tensor<4x4xf32>, %i: tensor<4xi64>, %u: tensor<4xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{input and indices must have the same rank, got 2 and 1}}
  %0 = loom.scatter_elements %x, %i, %u none {axis = 0 : i64} : (tensor<4x4xf32>, tensor<4xi64>, tensor<4xf32>) -> tensor<4x4xf32>
  return
}

// -----

func.func @top_k_axis(%x: tensor<4x4xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %0:2 = loom.top_k %x {k = 1 : i64, axis = 2 : i64} : (tensor<4x4xf32>) -> (tensor<4x1xf32>, tensor<4x1xi64>)
  return
}

// -----

func.func @layer_norm_bias_type(%x: tensor<2x4xf32>, %s: tensor<4xf32>, %b: tensor<4xf16>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{scale and bias must broadcast to the normalized shape [4] with element type 'f32', got 'tensor<4xf16>'}}
  %0:3 = loom.layer_norm %x, %s, %b {axis = 1 : i64, epsilon = 1.0e-5 : f64} : (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf16>) -> (tensor<2x4xf32>, tensor<2x1xf32>, tensor<2x1xf32>)
  return
}

// -----

func.func @gru_initial_h_shape(%x: tensor<5x2x3xf32>, %w: tensor<1x12x3xf32>, %r: tensor<1x12x4xf32>, %h: tensor<1x3x4xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{initial_h must have shape [1, 2, 4], got [1, 3, 4]}}
  %0:2 = loom.gru forward %x, %w, %r initial_h %h {hidden_size = 4 : i64} : (tensor<5x2x3xf32>, tensor<1x12x3xf32>, tensor<1x12x4xf32>, tensor<1x3x4xf32>) -> (tensor<5x1x2x4xf32>, tensor<1x2x4xf32>)
  return
}

// -----

loom.mesh @mesh = <dp = 4>

func.func @reduce_scatter_dim(%x: tensor<8x2xf32>) {
  // expected-error @+1 {{'loom.reduce_scatter' op scatter_dim 3 is out of range for rank 2}}
  %0 = loom.reduce_scatter sum %x on @mesh ["dp"] {scatter_dim = 3 : i64} : tensor<8x2xf32> -> tensor<2x2xf32>
  return
}

// -----

loom.mesh @mesh = <dp = 4>

func.func @recv_unknown_mesh() {
  // expected-error @+1 {{'loom.recv' op refers to @other, which is not a loom.mesh}}
  %0 = loom.recv on @other ["dp"] offset 1 : tensor<8xf32>
  return
}

// -----

loom.mesh @mesh = <dp = 2>
func.func @local_block_result(%x: tensor<8x2xf32>) {
  // expected-error @+1 {{'loom.local_block' op expected result shape [4, 2], got [8, 2]}}
  %0 = loom.local_block %x on @mesh ["dp"] {dim = 0 : i64} : tensor<8x2xf32> -> tensor<8x2xf32>
  return
}

// -----

loom.mesh @mesh = <dp = 2>
func.func @started_but_not_awaited(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'loom.all_reduce_start' op result must be used by exactly one loom.wait}}
  %0 = loom.all_reduce_start sum %x on @mesh ["dp"] : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @wait_for_nothing(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'loom.wait' op waits for a value that no loom.all_reduce_start produces}}
  %0 = loom.wait %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @moe_k_exceeds_experts(%x: tensor<8x4xf32>, %r: tensor<8x2xf32>, %w1: tensor<2x6x4xf32>, %w2: tensor<2x4x6xf32>) {
  // expected-error @+1 {{k = 3 must be between 1 and the 2 experts}}
  %0 = loom.moe top_k relu %x, %r experts(%w1, %w2) {k = 3 : i64} : (tensor<8x4xf32>, tensor<8x2xf32>, tensor<2x6x4xf32>, tensor<2x4x6xf32>) -> tensor<8x4xf32>
  return
}

// -----

func.func @moe_capacity_needs_positive_factor(%x: tensor<8x4xf32>, %r: tensor<8x2xf32>, %w1: tensor<2x6x4xf32>, %w2: tensor<2x4x6xf32>) {
  // expected-error @+1 {{capacity factor 0 must be positive for token_choice routing}}
  %0 = loom.moe token_choice relu %x, %r experts(%w1, %w2) {k = 1 : i64} : (tensor<8x4xf32>, tensor<8x2xf32>, tensor<2x6x4xf32>, tensor<2x4x6xf32>) -> tensor<8x4xf32>
  return
}

// -----

func.func @moe_expert_weight_shape(%x: tensor<8x4xf32>, %r: tensor<8x2xf32>, %w1: tensor<2x6x4xf32>, %w2: tensor<2x6x4xf32>) {
  // expected-error @+1 {{fc2_weight [experts, model, hidden] must be 'tensor<2x4x6xf32>', got 'tensor<2x6x4xf32>'}}
  %0 = loom.moe top_k relu %x, %r experts(%w1, %w2) {k = 1 : i64} : (tensor<8x4xf32>, tensor<8x2xf32>, tensor<2x6x4xf32>, tensor<2x6x4xf32>) -> tensor<8x4xf32>
  return
}

// -----

func.func @moe_expert_choice_takes_no_balance_loss(%x: tensor<8x4xf32>, %r: tensor<8x2xf32>, %w1: tensor<2x6x4xf32>, %w2: tensor<2x4x6xf32>) {
  // expected-error @+1 {{expert_choice routing balances load by construction}}
  %0 = loom.moe expert_choice relu %x, %r experts(%w1, %w2) {k = 1 : i64, capacity_factor = 2.0 : f64, aux_loss = 0.01 : f64} : (tensor<8x4xf32>, tensor<8x2xf32>, tensor<2x6x4xf32>, tensor<2x4x6xf32>) -> tensor<8x4xf32>
  return
}

// -----

func.func @moe_router_rows(%x: tensor<8x4xf32>, %r: tensor<6x2xf32>, %w1: tensor<2x6x4xf32>, %w2: tensor<2x4x6xf32>) {
  // expected-error @+1 {{router_logits has 6 rows for 8 tokens}}
  %0 = loom.moe top_k relu %x, %r experts(%w1, %w2) {k = 1 : i64} : (tensor<8x4xf32>, tensor<6x2xf32>, tensor<2x6x4xf32>, tensor<2x4x6xf32>) -> tensor<8x4xf32>
  return
}

// -----

func.func @moe_fc3_bias_alone(%x: tensor<8x4xf32>, %r: tensor<8x2xf32>, %w1: tensor<2x6x4xf32>, %w2: tensor<2x4x6xf32>, %b3: tensor<2x6xf32>) {
  // expected-error @+1 {{has fc3_bias without fc3_weight}}
  %0 = loom.moe top_k relu %x, %r experts(%w1, %w2) fc3_bias %b3 {k = 1 : i64} : (tensor<8x4xf32>, tensor<8x2xf32>, tensor<2x6x4xf32>, tensor<2x4x6xf32>, tensor<2x6xf32>) -> tensor<8x4xf32>
  return
}

// -----

func.func @moe_top_k_has_no_capacity(%x: tensor<8x4xf32>, %r: tensor<8x2xf32>, %w1: tensor<2x6x4xf32>, %w2: tensor<2x4x6xf32>) {
  // expected-error @+1 {{top_k routing keeps every token; a capacity factor needs token_choice or expert_choice routing}}
  %0 = loom.moe top_k relu %x, %r experts(%w1, %w2) {k = 1 : i64, capacity_factor = 1.0 : f64} : (tensor<8x4xf32>, tensor<8x2xf32>, tensor<2x6x4xf32>, tensor<2x4x6xf32>) -> tensor<8x4xf32>
  return
}

// -----

func.func @moe_negative_loss(%x: tensor<8x4xf32>, %r: tensor<8x2xf32>, %w1: tensor<2x6x4xf32>, %w2: tensor<2x4x6xf32>) {
  // expected-error @+1 {{loss coefficients must be non-negative}}
  %0 = loom.moe top_k relu %x, %r experts(%w1, %w2) {k = 1 : i64, z_loss = -1.0 : f64} : (tensor<8x4xf32>, tensor<8x2xf32>, tensor<2x6x4xf32>, tensor<2x4x6xf32>) -> tensor<8x4xf32>
  return
}

// -----

func.func @moe_groups_divide_tokens(%x: tensor<8x4xf32>, %r: tensor<8x2xf32>, %w1: tensor<2x6x4xf32>, %w2: tensor<2x4x6xf32>) {
  // expected-error @+1 {{groups = 3 must be positive and divide the 8 tokens}}
  %0 = loom.moe token_choice relu %x, %r experts(%w1, %w2) {k = 1 : i64, capacity_factor = 1.0 : f64, groups = 3 : i64} : (tensor<8x4xf32>, tensor<8x2xf32>, tensor<2x6x4xf32>, tensor<2x4x6xf32>) -> tensor<8x4xf32>
  return
}

// -----

func.func @moe_groups_need_capacity(%x: tensor<8x4xf32>, %r: tensor<8x2xf32>, %w1: tensor<2x6x4xf32>, %w2: tensor<2x4x6xf32>) {
  // expected-error @+1 {{top_k routing keeps every token; routing groups need token_choice or expert_choice routing}}
  %0 = loom.moe top_k relu %x, %r experts(%w1, %w2) {k = 1 : i64, groups = 2 : i64} : (tensor<8x4xf32>, tensor<8x2xf32>, tensor<2x6x4xf32>, tensor<2x4x6xf32>) -> tensor<8x4xf32>
  return
}
