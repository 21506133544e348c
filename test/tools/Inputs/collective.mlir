loom.mesh @mesh = <dp = 2>
func.func @main(%x: tensor<4xf32> {loom.input = "x"}) -> (tensor<8xf32> {loom.output = "y"}) {
  %0 = loom.all_gather %x on @mesh ["dp"] {gather_dim = 0 : i64} : tensor<4xf32> -> tensor<8xf32>
  return %0 : tensor<8xf32>
}
