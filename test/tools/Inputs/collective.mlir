loom.mesh @mesh = <dp = 2>
func.func @main(%x: tensor<2x4xf32> {loom.input = "x"}) -> (tensor<4x2xf32> {loom.output = "y"}) {
  %0 = loom.all_to_all %x on @mesh ["dp"] {split_dim = 1 : i64, concat_dim = 0 : i64} : tensor<2x4xf32> -> tensor<4x2xf32>
  return %0 : tensor<4x2xf32>
}
