// Attaching a loss: cross-entropy adds an integer labels input.
// RUN: loom-opt %s --loom-build-train-step="loss=cross-entropy:labels" | FileCheck %s --check-prefix=CE
// CE-LABEL: func.func @train_step
// CE-SAME: %{{.*}}: tensor<4xi64> {loom.input = "labels"}
// CE: loom.softmax_cross_entropy mean
module {
  func.func @logits(%x: tensor<4x3xf32> {loom.input = "x"},
                    %w: tensor<3x5xf32> {loom.param = "w", loom.init = dense<0.5> : tensor<3x5xf32>})
      -> (tensor<4x5xf32> {loom.output = "logits"}) {
    %0 = loom.matmul %x, %w : (tensor<4x3xf32>, tensor<3x5xf32>) -> tensor<4x5xf32>
    return %0 : tensor<4x5xf32>
  }
}
