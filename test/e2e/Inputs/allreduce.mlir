// One all-reduce of each kind over the two devices of a data-parallel mesh.
loom.mesh @mesh = <dp = 2>
func.func @main(%x: tensor<2x3xf32> {loom.input = "x"})
    -> (tensor<2x3xf32> {loom.output = "sum"}, tensor<2x3xf32> {loom.output = "max"},
        tensor<2x3xf32> {loom.output = "avg"}) {
  %s = loom.all_reduce sum %x on @mesh ["dp"] : tensor<2x3xf32>
  %m = loom.all_reduce max %x on @mesh ["dp"] : tensor<2x3xf32>
  %a = loom.all_reduce avg %x on @mesh ["dp"] : tensor<2x3xf32>
  return %s, %m, %a : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>
}
