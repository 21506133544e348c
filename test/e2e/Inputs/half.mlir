// The model of half-io.test: a bf16 product and an fp16 sum.
func.func @main(%a: tensor<4xbf16> {loom.input = "a"}, %b: tensor<4xf16> {loom.input = "b"})
    -> (tensor<4xbf16> {loom.output = "aa"}, tensor<4xf16> {loom.output = "bb"}) {
  %0 = loom.mul %a, %a : (tensor<4xbf16>, tensor<4xbf16>) -> tensor<4xbf16>
  %1 = loom.add %b, %b : (tensor<4xf16>, tensor<4xf16>) -> tensor<4xf16>
  return %0, %1 : tensor<4xbf16>, tensor<4xf16>
}
