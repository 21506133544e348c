// The model of repeated-results.test: one tensor returned as two outputs.
func.func @main(%x: tensor<2x3xf32> {loom.input = "x"})
    -> (tensor<2x3xf32> {loom.output = "a"}, tensor<2x3xf32> {loom.output = "b"}) {
  %0 = loom.add %x, %x : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0, %0 : tensor<2x3xf32>, tensor<2x3xf32>
}
