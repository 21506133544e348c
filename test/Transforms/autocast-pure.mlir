// RUN: loom-opt %s --loom-autocast="precision=bf16-pure" --canonicalize | FileCheck %s

// bf16-pure: parameters become bf16 arguments, their initial values rounded
// once (to nearest, ties to even: 1 + 2^-8 rounds to 1), read through one
// widening cast; a product reads the bf16 parameter itself (the autocast's
// narrowing cast folds into the widening).
// CHECK-LABEL: func.func @f
// CHECK-SAME: %{{.*}}: tensor<4x8xf32> {loom.input = "x"}
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<8x2xbf16> {loom.init = dense<1.000980e-01> : tensor<8x2xbf16>, loom.param = "w"}
// CHECK-SAME: %[[G:[a-z0-9]+]]: tensor<2xbf16> {loom.init = dense<1.000000e+00> : tensor<2xbf16>, loom.param = "g"}
// CHECK: %[[G32:.*]] = loom.cast %[[G]] : tensor<2xbf16> -> tensor<2xf32>
// CHECK: %[[P:.*]] = loom.matmul %{{.*}}, %[[W]] : (tensor<4x8xbf16>, tensor<8x2xbf16>) -> tensor<4x2xf32>
// CHECK: loom.add %[[P]], %[[G32]]
func.func @f(%x: tensor<4x8xf32> {loom.input = "x"},
             %w: tensor<8x2xf32> {loom.param = "w", loom.init = dense<0.1> : tensor<8x2xf32>},
             %g: tensor<2xf32> {loom.param = "g", loom.init = dense<[1.0, 1.00390625]> : tensor<2xf32>}) -> tensor<4x2xf32> {
  %y = loom.matmul %x, %w : (tensor<4x8xf32>, tensor<8x2xf32>) -> tensor<4x2xf32>
  %z = loom.add %y, %g : (tensor<4x2xf32>, tensor<2xf32>) -> tensor<4x2xf32>
  return %z : tensor<4x2xf32>
}
