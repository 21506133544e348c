// All-to-all over a 2-device mesh, in both directions: split columns and
// join rows, split rows and join columns.
loom.mesh @mesh = <dp = 2>
func.func @main(%x: tensor<2x4xf32> {loom.input = "x"})
    -> (tensor<4x2xf32> {loom.output = "cols_to_rows"},
        tensor<1x8xf32> {loom.output = "rows_to_cols"}) {
  %a = loom.all_to_all %x on @mesh ["dp"] {split_dim = 1 : i64, concat_dim = 0 : i64} : tensor<2x4xf32> -> tensor<4x2xf32>
  %b = loom.all_to_all %x on @mesh ["dp"] {split_dim = 0 : i64, concat_dim = 1 : i64} : tensor<2x4xf32> -> tensor<1x8xf32>
  return %a, %b : tensor<4x2xf32>, tensor<1x8xf32>
}
