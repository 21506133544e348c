// RUN: loom-opt %s --loom-linalg-to-llvm-pipeline | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_libs,%loomrt | FileCheck %s
// RUN: loom-opt %s --loom-linalg-to-llvm-pipeline=opt-level=1 | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_libs,%loomrt | FileCheck %s
// RUN: loom-opt %s --loom-split-lane-reductions | FileCheck %s --check-prefix=IR

// Masked row maxima over 64 columns, computed in 16 lanes (opt-level 2, the
// default) and in one scalar loop (opt-level 1): both print the same values.
// x[i, j] is j for row 0, -(j + 1) for row 1, and j with a NaN at column 37
// for row 2; columns 48 and up are masked to -inf. Row 0's maximum is 47
// (the last unmasked column, in lane 15), row 1's is -1 (column 0, lane 0),
// row 2's is NaN (maximumf propagates it).

// IR: tensor<3x1x16xf32>

// CHECK: data =
// CHECK-NEXT: {{\[}}[47],
// CHECK-NEXT: [-1],
// CHECK-NEXT: [nan]]

#ij = affine_map<(i, j) -> (i, j)>
#j = affine_map<(i, j) -> (j)>
#i0 = affine_map<(i, j) -> (i, 0)>

func.func private @printMemrefF32(tensor<*xf32>) attributes {llvm.emit_c_interface}

func.func @main() {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %nan = arith.constant 0x7FC00000 : f32
  %neginf = arith.constant 0xFF800000 : f32
  %c37 = arith.constant 37 : index
  %c48 = arith.constant 48 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %e = tensor.empty() : tensor<3x64xf32>
  %x = linalg.generic {indexing_maps = [#ij], iterator_types = ["parallel", "parallel"]}
      outs(%e : tensor<3x64xf32>) {
  ^bb0(%o: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %ji = arith.index_cast %j : index to i64
    %jf = arith.sitofp %ji : i64 to f32
    %neg = arith.addf %jf, %one : f32
    %down = arith.negf %neg : f32
    %isRow1 = arith.cmpi eq, %i, %c1 : index
    %isRow2 = arith.cmpi eq, %i, %c2 : index
    %is37 = arith.cmpi eq, %j, %c37 : index
    %hole = arith.andi %isRow2, %is37 : i1
    %v1 = arith.select %isRow1, %down, %jf : f32
    %v = arith.select %hole, %nan, %v1 : f32
    linalg.yield %v : f32
  } -> tensor<3x64xf32>
  %em = tensor.empty() : tensor<64xf32>
  %mask = linalg.generic {indexing_maps = [affine_map<(j) -> (j)>], iterator_types = ["parallel"]}
      outs(%em : tensor<64xf32>) {
  ^bb0(%o: f32):
    %j = linalg.index 0 : index
    %keep = arith.cmpi ult, %j, %c48 : index
    %m = arith.select %keep, %one, %zero : f32
    linalg.yield %m : f32
  } -> tensor<64xf32>
  %er = tensor.empty() : tensor<3x1xf32>
  %init = linalg.fill ins(%neginf : f32) outs(%er : tensor<3x1xf32>) -> tensor<3x1xf32>
  %r = linalg.generic {indexing_maps = [#ij, #j, #i0], iterator_types = ["parallel", "reduction"]}
      ins(%x, %mask : tensor<3x64xf32>, tensor<64xf32>) outs(%init : tensor<3x1xf32>) {
  ^bb0(%v: f32, %m: f32, %acc: f32):
    %masked = arith.cmpf oeq, %m, %zero : f32
    %w = arith.select %masked, %neginf, %v : f32
    %max = arith.maximumf %acc, %w : f32
    linalg.yield %max : f32
  } -> tensor<3x1xf32>
  %u = tensor.cast %r : tensor<3x1xf32> to tensor<*xf32>
  call @printMemrefF32(%u) : (tensor<*xf32>) -> ()
  return
}
