// RUN: loom-opt %s --split-input-file --loom-duplicate-fills | FileCheck %s
// RUN: loom-opt %s --split-input-file --loom-duplicate-fills \
// RUN:   --one-shot-bufferize="bufferize-function-boundaries" \
// RUN:   | FileCheck %s --check-prefix=BUF

// Two products accumulate into one CSE'd tensor of zeros. Each gets a fill
// of its own right before it, and bufferization then fills two buffers
// instead of filling one and copying it.

// CHECK-LABEL: func.func @shared_zeros
// CHECK: %[[E1:.*]] = tensor.empty() : tensor<4x8xf32>
// CHECK-NEXT: %[[Z1:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[E1]] :
// CHECK-NEXT: linalg.matmul ins(%arg0, %arg1 : {{.*}}) outs(%[[Z1]] :
// CHECK: %[[E2:.*]] = tensor.empty() : tensor<4x8xf32>
// CHECK-NEXT: %[[Z2:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[E2]] :
// CHECK-NEXT: linalg.matmul ins(%arg0, %arg2 : {{.*}}) outs(%[[Z2]] :
// CHECK-NOT: linalg.fill
// CHECK: return

// BUF-LABEL: func.func @shared_zeros
// BUF-NOT: memref.copy
// BUF-COUNT-2: linalg.fill
// BUF-NOT: memref.copy
// BUF: return
func.func @shared_zeros(%a: tensor<4x16xf32>, %b: tensor<16x8xf32>,
                        %c: tensor<16x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<4x8xf32>
  %zeros = linalg.fill ins(%zero : f32) outs(%empty : tensor<4x8xf32>) -> tensor<4x8xf32>
  %p = linalg.matmul ins(%a, %b : tensor<4x16xf32>, tensor<16x8xf32>) outs(%zeros : tensor<4x8xf32>) -> tensor<4x8xf32>
  %q = linalg.matmul ins(%a, %c : tensor<4x16xf32>, tensor<16x8xf32>) outs(%zeros : tensor<4x8xf32>) -> tensor<4x8xf32>
  return %p, %q : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// A filled tensor that is also read as an input keeps the original fill for
// that use; the accumulating op gets its own.

// CHECK-LABEL: func.func @read_and_accumulated
// CHECK: %[[Z:.*]] = linalg.fill
// CHECK: %[[OWN:.*]] = linalg.fill
// CHECK-NEXT: linalg.generic {{.*}} ins(%arg0, %[[Z]] : {{.*}}) outs(%[[OWN]] :
#id = affine_map<(i) -> (i)>
func.func @read_and_accumulated(%x: tensor<8xf32>) -> tensor<8xf32> {
  %one = arith.constant 1.0 : f32
  %empty = tensor.empty() : tensor<8xf32>
  %ones = linalg.fill ins(%one : f32) outs(%empty : tensor<8xf32>) -> tensor<8xf32>
  %r = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%x, %ones : tensor<8xf32>, tensor<8xf32>) outs(%ones : tensor<8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %s = arith.addf %a, %b : f32
    %t = arith.addf %s, %acc : f32
    linalg.yield %t : f32
  } -> tensor<8xf32>
  return %r : tensor<8xf32>
}

// -----

// A fill with a single use right before its user is left alone.

// CHECK-LABEL: func.func @single_use
// CHECK-COUNT-1: linalg.fill
// CHECK-NOT: linalg.fill
func.func @single_use(%a: tensor<4x16xf32>, %b: tensor<16x8xf32>) -> tensor<4x8xf32> {
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<4x8xf32>
  %zeros = linalg.fill ins(%zero : f32) outs(%empty : tensor<4x8xf32>) -> tensor<4x8xf32>
  %p = linalg.matmul ins(%a, %b : tensor<4x16xf32>, tensor<16x8xf32>) outs(%zeros : tensor<4x8xf32>) -> tensor<4x8xf32>
  return %p : tensor<4x8xf32>
}
