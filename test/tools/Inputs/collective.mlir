loom.mesh @mesh = <dp = 2>
func.func @main(%x: tensor<4xf32> {loom.input = "x"}) -> (tensor<4xf32> {loom.output = "y"}) {
  %0 = loom.all_reduce sum %x on @mesh ["dp"] : tensor<4xf32>
  return %0 : tensor<4xf32>
}
