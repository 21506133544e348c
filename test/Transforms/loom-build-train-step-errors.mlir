// RUN: loom-opt %s --split-input-file --verify-diagnostics --loom-build-train-step

// expected-error @+1 {{the model has no scalar floating-point output to use as the loss; attach one with --loss=cross-entropy:LABELS or --loss=mse:TARGET}}
func.func @no_loss(%w: tensor<3xf32> {loom.param = "w", loom.init = dense<0.5> : tensor<3xf32>}) -> tensor<3xf32> {
  %0 = loom.tanh %w : tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// expected-error @+1 {{the model has several scalar outputs ('a', 'b'); choose the loss with --loss-output}}
func.func @two_losses(%w: tensor<3xf32> {loom.param = "w", loom.init = dense<0.5> : tensor<3xf32>}) -> (tensor<f32> {loom.output = "a"}, tensor<f32> {loom.output = "b"}) {
  %0 = loom.reduce_sum %w {axes = array<i64>} : (tensor<3xf32>) -> tensor<f32>
  return %0, %0 : tensor<f32>, tensor<f32>
}

// -----

// expected-error @+1 {{the loss depends on no floating-point parameter; there is nothing to train}}
func.func @nothing(%x: tensor<3xf32> {loom.input = "x"}) -> tensor<f32> {
  %0 = loom.reduce_sum %x {axes = array<i64>} : (tensor<3xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// Every float op the importer produces has a gradient; a collective, which
// partitioning inserts after differentiation, does not.
loom.mesh @mesh = <dp = 2>
func.func @no_gradient(%w: tensor<2x3xf32> {loom.param = "w", loom.init = dense<0.5> : tensor<2x3xf32>}) -> tensor<f32> {
  // expected-error @+1 {{cannot differentiate 'loom.all_reduce': it has no gradient (the loss depends on a parameter through it)}}
  %0 = loom.all_reduce sum %w on @mesh ["dp"] : tensor<2x3xf32>
  %1 = loom.reduce_sum %0 {axes = array<i64>} : (tensor<2x3xf32>) -> tensor<f32>
  return %1 : tensor<f32>
}

// -----

func.func @strided(%w: tensor<4xf32> {loom.param = "w", loom.init = dense<0.5> : tensor<4xf32>}) -> tensor<f32> {
  // expected-error @+1 {{'loom.slice' op cannot differentiate a slice with step 2 yet}}
  %0 = loom.slice %w {starts = array<i64: 0>, limits = array<i64: 4>, steps = array<i64: 2>} : tensor<4xf32> -> tensor<2xf32>
  %1 = loom.reduce_sum %0 {axes = array<i64>} : (tensor<2xf32>) -> tensor<f32>
  return %1 : tensor<f32>
}
