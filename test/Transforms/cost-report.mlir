// RUN: loom-opt %s --loom-cost-report -o /dev/null | FileCheck %s

// [8,16] x [16,4] is 8*4*16 multiply-adds = 1024 FLOPs, reading
// (128 + 64) * 4 bytes and writing 32 * 4 bytes; the add does one FLOP per
// element of its [8,4] result; constants cost nothing.
// CHECK: loom cost report
// CHECK-NEXT: op {{ *}}count {{ *}}flops {{ *}}bytes read {{ *}}bytes written
// CHECK-NEXT: loom.constant {{ *}}1 {{ *}}0 {{ *}}0 {{ *}}16
// CHECK-NEXT: loom.matmul {{ *}}2 {{ *}}2048 {{ *}}1536 {{ *}}256
// CHECK-NEXT: loom.add {{ *}}1 {{ *}}32 {{ *}}144 {{ *}}128
// CHECK-NEXT: total {{ *}}4 {{ *}}2080 {{ *}}1680 {{ *}}400
func.func @f(%a: tensor<8x16xf32>, %b: tensor<16x4xf32>) -> tensor<8x4xf32> {
  %bias = loom.constant dense<1.0> : tensor<4xf32>
  %0 = loom.matmul %a, %b : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
  %1 = loom.matmul %a, %b : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
  %2 = loom.add %0, %bias : (tensor<8x4xf32>, tensor<4xf32>) -> tensor<8x4xf32>
  return %2 : tensor<8x4xf32>
}
