loom.mesh @mesh = <dp = 2>
func.func @main(%x: tensor<2x4xf32> {loom.input = "x"}) -> (tensor<2x4xf32> {loom.output = "y"}) {
  %0 = loom.shard %x to <@mesh, [{dp}, {}]> : tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}
