// RUN: loom-opt %s --split-input-file --loom-autocast | FileCheck %s
// RUN: loom-opt %s --split-input-file --loom-autocast="precision=fp16" | FileCheck %s --check-prefix=F16
// RUN: loom-opt %s --split-input-file --loom-autocast --canonicalize | FileCheck %s --check-prefix=CANON
// RUN: not loom-opt %s --split-input-file --loom-autocast="precision=fp8" 2>&1 | FileCheck %s --check-prefix=BAD

// A linear layer, a softmax and a second product that reads the same
// weight: the products run in bf16, the bias add in the wider of its
// operands (f32), the softmax in f32; the weight and the input are cast once
// each, whatever the number of their uses. Products whose only use widens
// them back return their f32 accumulator instead of a rounded bf16 value.
// CHECK-LABEL: func.func @mlp
// CHECK-SAME: %[[X:[^:]*]]: tensor<4x8xf32>{{.*}}%[[W:[^:]*]]: tensor<8x8xf32>{{.*}}%[[B:[^:]*]]: tensor<8xf32>
// CHECK-SAME: -> (tensor<4x8xf32>
// CHECK-DAG:  %[[WL:.*]] = loom.cast %[[W]] : tensor<8x8xf32> -> tensor<8x8xbf16>
// CHECK-DAG:  %[[XL:.*]] = loom.cast %[[X]] : tensor<4x8xf32> -> tensor<4x8xbf16>
// CHECK:      %[[Y:.*]] = loom.matmul %[[XL]], %[[WL]] : (tensor<4x8xbf16>, tensor<8x8xbf16>) -> tensor<4x8xf32>
// CHECK-NEXT: %[[Z:.*]] = loom.add %[[Y]], %[[B]] : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT: %[[S:.*]] = loom.softmax %[[Z]] {{.*}} : tensor<4x8xf32>
// CHECK-NEXT: %[[SL:.*]] = loom.cast %[[S]] : tensor<4x8xf32> -> tensor<4x8xbf16>
// CHECK-NEXT: %[[V:.*]] = loom.matmul %[[SL]], %[[WL]] : (tensor<4x8xbf16>, tensor<8x8xbf16>) -> tensor<4x8xf32>
// CHECK-NEXT: return %[[V]] : tensor<4x8xf32>
// CHECK-NOT:  loom.cast
// F16-LABEL: func.func @mlp
// F16: loom.matmul {{.*}} : (tensor<4x8xf16>, tensor<8x8xf16>) -> tensor<4x8xf32>
// BAD: loom-autocast: unknown precision 'fp8' (expected bf16, bf16-pure or fp16)

func.func @mlp(%x: tensor<4x8xf32> {loom.input = "x"},
               %w: tensor<8x8xf32> {loom.param = "w", loom.init = dense<0.5> : tensor<8x8xf32>},
               %b: tensor<8xf32> {loom.param = "b", loom.init = dense<0.0> : tensor<8xf32>})
    -> (tensor<4x8xf32> {loom.output = "logits"}) {
  %y = loom.matmul %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %z = loom.add %y, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %s = loom.softmax %z {axis = 1 : i64} : tensor<4x8xf32>
  %v = loom.matmul %s, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  return %v : tensor<4x8xf32>
}

// -----

// Attention scores: a scalar (a splat constant) takes the bf16 type of the
// scores instead of widening them, as scalars do in PyTorch's type
// promotion; the mask, a whole tensor, widens them to f32; the softmax runs
// in f32 and the second product in bf16 (the scores stay bf16: a bf16 op
// uses them).
// CHECK-LABEL: func.func @attention
// CHECK:      %[[S:.*]] = loom.matmul {{.*}} {transpose_rhs} : (tensor<2x4x8xbf16>, tensor<2x4x8xbf16>) -> tensor<2x4x4xbf16>
// CHECK-NEXT: %[[C:.*]] = loom.constant dense<1.250000e-01> : tensor<f32>
// CHECK-NEXT: %[[SCALE:.*]] = loom.cast %[[C]] : tensor<f32> -> tensor<bf16>
// CHECK-NEXT: %[[M:.*]] = loom.mul %[[S]], %[[SCALE]] : (tensor<2x4x4xbf16>, tensor<bf16>) -> tensor<2x4x4xbf16>
// CHECK-NEXT: %[[MF:.*]] = loom.cast %[[M]] : tensor<2x4x4xbf16> -> tensor<2x4x4xf32>
// CHECK-NEXT: %[[A:.*]] = loom.add %[[MF]], %{{.*}} : (tensor<2x4x4xf32>, tensor<4x4xf32>) -> tensor<2x4x4xf32>
// CHECK-NEXT: loom.softmax %[[A]]
// CHECK:      loom.matmul {{.*}} : (tensor<2x4x4xbf16>, tensor<2x4x8xbf16>) -> tensor<2x4x8xf32>
// The cast of the constant folds into a bf16 constant.
// CANON-LABEL: func.func @attention
// CANON: loom.constant dense<1.250000e-01> : tensor<bf16>
func.func @attention(%q: tensor<2x4x8xf32>, %k: tensor<2x4x8xf32>,
                     %v: tensor<2x4x8xf32>, %mask: tensor<4x4xf32>)
    -> tensor<2x4x8xf32> {
  %s = loom.matmul %q, %k {transpose_rhs} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x4xf32>
  %c = loom.constant dense<0.125> : tensor<f32>
  %m = loom.mul %s, %c : (tensor<2x4x4xf32>, tensor<f32>) -> tensor<2x4x4xf32>
  %a = loom.add %m, %mask : (tensor<2x4x4xf32>, tensor<4x4xf32>) -> tensor<2x4x4xf32>
  %p = loom.softmax %a {axis = 2 : i64} : tensor<2x4x4xf32>
  %o = loom.matmul %p, %v : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %o : tensor<2x4x8xf32>
}

// -----

// Casts cancel where they meet: a bf16 value widened and narrowed back is
// the value itself (a narrowing and widening is not: it rounds).
// CANON-LABEL: func.func @cancel
// CANON-SAME: (%[[A:.*]]: tensor<4xbf16>, %[[B:.*]]: tensor<4xf32>)
// CANON-NEXT: %[[R:.*]] = loom.cast %[[B]] : tensor<4xf32> -> tensor<4xbf16>
// CANON-NEXT: %[[W:.*]] = loom.cast %[[R]] : tensor<4xbf16> -> tensor<4xf32>
// CANON-NEXT: return %[[A]], %[[W]]
func.func @cancel(%a: tensor<4xbf16>, %b: tensor<4xf32>) -> (tensor<4xbf16>, tensor<4xf32>) {
  %0 = loom.cast %a : tensor<4xbf16> -> tensor<4xf32>
  %1 = loom.cast %0 : tensor<4xf32> -> tensor<4xbf16>
  %2 = loom.cast %b : tensor<4xf32> -> tensor<4xbf16>
  %3 = loom.cast %2 : tensor<4xbf16> -> tensor<4xf32>
  return %1, %3 : tensor<4xbf16>, tensor<4xf32>
}

// -----

// A linear layer's bias add runs in f32 on the product's accumulator and is
// rounded once to bf16 for the ReLU and the next product, as PyTorch's
// autocast rounds addmm; the last layer's sum feeds only the result, so it
// stays f32.
// CHECK-LABEL: func.func @linear_relu_linear
// CHECK:      %[[Y:.*]] = loom.matmul {{.*}} -> tensor<4x8xf32>
// CHECK-NEXT: %[[Z:.*]] = loom.add %[[Y]], %{{.*}} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT: %[[ZL:.*]] = loom.cast %[[Z]] : tensor<4x8xf32> -> tensor<4x8xbf16>
// CHECK-NEXT: %[[R:.*]] = loom.relu %[[ZL]] : tensor<4x8xbf16>
// CHECK-NEXT: %[[V:.*]] = loom.matmul %[[R]], %{{.*}} : (tensor<4x8xbf16>, tensor<8x8xbf16>) -> tensor<4x8xf32>
// CHECK-NEXT: %[[O:.*]] = loom.add %[[V]], %{{.*}} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT: return %[[O]] : tensor<4x8xf32>
func.func @linear_relu_linear(%x: tensor<4x8xf32>, %w1: tensor<8x8xf32>, %b1: tensor<8xf32>,
                              %w2: tensor<8x8xf32>, %b2: tensor<8xf32>) -> tensor<4x8xf32> {
  %y = loom.matmul %x, %w1 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %z = loom.add %y, %b1 : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %r = loom.relu %z : tensor<4x8xf32>
  %v = loom.matmul %r, %w2 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %o = loom.add %v, %b2 : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return %o : tensor<4x8xf32>
}
