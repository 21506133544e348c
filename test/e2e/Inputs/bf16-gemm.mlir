// The model of bf16-gemm.test: bf16 products with f32 results, the CPU
// kernels' layouts (plain, either factor transposed, batched), shapes large
// enough for the kernels to split them over threads.
func.func @main(%a: tensor<160x272xf32> {loom.input = "a"},
                %b: tensor<272x144xf32> {loom.input = "b"},
                %bt: tensor<144x272xf32> {loom.input = "bt"},
                %at: tensor<272x160xf32> {loom.input = "at"},
                %x: tensor<4x96x80xf32> {loom.input = "x"},
                %y: tensor<4x80x112xf32> {loom.input = "y"})
    -> (tensor<160x144xf32> {loom.output = "ab"},
        tensor<160x144xf32> {loom.output = "abt"},
        tensor<160x144xf32> {loom.output = "atb"},
        tensor<4x96x112xf32> {loom.output = "xy"}) {
  %a16 = loom.cast %a : tensor<160x272xf32> -> tensor<160x272xbf16>
  %b16 = loom.cast %b : tensor<272x144xf32> -> tensor<272x144xbf16>
  %bt16 = loom.cast %bt : tensor<144x272xf32> -> tensor<144x272xbf16>
  %at16 = loom.cast %at : tensor<272x160xf32> -> tensor<272x160xbf16>
  %x16 = loom.cast %x : tensor<4x96x80xf32> -> tensor<4x96x80xbf16>
  %y16 = loom.cast %y : tensor<4x80x112xf32> -> tensor<4x80x112xbf16>
  %ab = loom.matmul %a16, %b16 : (tensor<160x272xbf16>, tensor<272x144xbf16>) -> tensor<160x144xf32>
  %abt = loom.matmul %a16, %bt16 {transpose_rhs} : (tensor<160x272xbf16>, tensor<144x272xbf16>) -> tensor<160x144xf32>
  %atb = loom.matmul %at16, %b16 {transpose_lhs} : (tensor<272x160xbf16>, tensor<272x144xbf16>) -> tensor<160x144xf32>
  %xy = loom.matmul %x16, %y16 : (tensor<4x96x80xbf16>, tensor<4x80x112xbf16>) -> tensor<4x96x112xf32>
  return %ab, %abt, %atb, %xy : tensor<160x144xf32>, tensor<160x144xf32>, tensor<160x144xf32>, tensor<4x96x112xf32>
}
