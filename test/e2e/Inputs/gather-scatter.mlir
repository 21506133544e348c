// All-gather and reduce-scatter along either dimension over a 2-device mesh.
loom.mesh @mesh = <dp = 2>
func.func @main(%x: tensor<2x4xf32> {loom.input = "x"})
    -> (tensor<4x4xf32> {loom.output = "rows"}, tensor<2x8xf32> {loom.output = "cols"},
        tensor<2x2xf32> {loom.output = "scatter_cols"}, tensor<1x4xf32> {loom.output = "scatter_rows_avg"}) {
  %r = loom.all_gather %x on @mesh ["dp"] {gather_dim = 0 : i64} : tensor<2x4xf32> -> tensor<4x4xf32>
  %c = loom.all_gather %x on @mesh ["dp"] {gather_dim = 1 : i64} : tensor<2x4xf32> -> tensor<2x8xf32>
  %s = loom.reduce_scatter sum %x on @mesh ["dp"] {scatter_dim = 1 : i64} : tensor<2x4xf32> -> tensor<2x2xf32>
  %a = loom.reduce_scatter avg %x on @mesh ["dp"] {scatter_dim = 0 : i64} : tensor<2x4xf32> -> tensor<1x4xf32>
  return %r, %c, %s, %a : tensor<4x4xf32>, tensor<2x8xf32>, tensor<2x2xf32>, tensor<1x4xf32>
}
