// RUN: loom-opt %s --loom-cpu-pipeline | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_libs,%loomrt | FileCheck %s
// RUN: loom-opt %s --loom-cpu-pipeline | mlir-translate --mlir-to-llvmir | opt -O3 -mtriple=x86_64-unknown-linux-gnu -mcpu=x86-64-v4 -S | FileCheck %s --check-prefix=VEC --implicit-check-not="load i1,"

// Boolean tensors that a function boundary keeps in memory (as a constant
// attention mask is kept between loops): stored and loaded as bytes by
// loom-byte-booleans, with the values
// worked out by hand in the comments. Then the loop that reads a stored mask
// vectorizes: LLVM's vectorizer loads its bytes as vectors (VEC) and has no
// i1 load left to assemble a byte at a time.

func.func private @printMemrefF32(tensor<*xf32>) attributes {llvm.emit_c_interface}

func.func @positive(%a: tensor<2x3xf32>) -> tensor<2x3xi1> {
  %zero = loom.constant dense<0.0> : tensor<f32>
  %m = loom.greater %a, %zero : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xi1>
  return %m : tensor<2x3xi1>
}

func.func @positive_row(%a: tensor<3xf32>) -> tensor<3xi1> {
  %zero = loom.constant dense<0.0> : tensor<f32>
  %m = loom.greater %a, %zero : (tensor<3xf32>, tensor<f32>) -> tensor<3xi1>
  return %m : tensor<3xi1>
}

func.func @pick(%m: tensor<2x3xi1>, %x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %m1 = loom.constant dense<-1.0> : tensor<f32>
  %0 = loom.where %m, %x, %m1 : (tensor<2x3xi1>, tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

func.func @pick_rows(%m: tensor<3xi1>, %x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %zero = loom.constant dense<0.0> : tensor<f32>
  %0 = loom.where %m, %x, %zero : (tensor<3xi1>, tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// VEC-LABEL: define {{.*}}@pick_large(
// VEC: load <{{[0-9]+}} x i8>
// VEC: select <{{[0-9]+}} x i1>
func.func @pick_large(%m: tensor<1x256xi1>, %x: tensor<64x256xf32>) -> tensor<64x256xf32> {
  %zero = loom.constant dense<0.0> : tensor<f32>
  %0 = loom.where %m, %x, %zero : (tensor<1x256xi1>, tensor<64x256xf32>, tensor<f32>) -> tensor<64x256xf32>
  return %0 : tensor<64x256xf32>
}

func.func @show(%t: tensor<2x3xf32>) {
  %c = bufferization.alloc_tensor() copy(%t) : tensor<2x3xf32>
  %u = tensor.cast %c : tensor<2x3xf32> to tensor<*xf32>
  call @printMemrefF32(%u) : (tensor<*xf32>) -> ()
  return
}

func.func @main() {
  %a = loom.constant dense<[[1.0, -2.0, 3.0], [-4.0, 5.0, -6.0]]> : tensor<2x3xf32>
  %row = loom.constant dense<[10.0, -20.0, 30.0]> : tensor<3xf32>

  // where(a > 0, a, -1), the mask stored by one function and read by another.
  // CHECK: data =
  // CHECK-NEXT: {{\[}}[1,   -1,   3],
  // CHECK-NEXT: [-1,   5,   -1]]
  %m = call @positive(%a) : (tensor<2x3xf32>) -> tensor<2x3xi1>
  %0 = call @pick(%m, %a) : (tensor<2x3xi1>, tensor<2x3xf32>) -> tensor<2x3xf32>
  call @show(%0) : (tensor<2x3xf32>) -> ()

  // where(row > 0, a, 0) with the mask [1, 0, 1] broadcast over a's rows.
  // CHECK: data =
  // CHECK-NEXT: {{\[}}[1,   0,   3],
  // CHECK-NEXT: [-4,   0,   -6]]
  %r = call @positive_row(%row) : (tensor<3xf32>) -> tensor<3xi1>
  %1 = call @pick_rows(%r, %a) : (tensor<3xi1>, tensor<2x3xf32>) -> tensor<2x3xf32>
  call @show(%1) : (tensor<2x3xf32>) -> ()
  return
}
