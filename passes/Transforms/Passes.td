//===- Passes.td - Loom's graph-level passes ---------------*- tablegen -*-===//
//
// Passes over loom-dialect functions: analyses and (in later stages)
// autodiff, sharding, pipelining, mixture of experts, precision and
// rematerialization.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_TRANSFORMS_PASSES
#define LOOM_TRANSFORMS_PASSES

include "mlir/Pass/PassBase.td"

def LoomCostReportPass : Pass<"loom-cost-report", "::mlir::ModuleOp"> {
  let summary = "prints per-op FLOPs and bytes from the cost interface";
  let description = [{
    Sums `CostOpInterface` over every loom op of every function and prints,
    for each op name, how many there are, their FLOPs and the bytes they read
    and write, then the totals. The IR is not changed.

    Input:
    ```mlir
    func.func @f(%a: tensor<8x16xf32>, %b: tensor<16x4xf32>) -> tensor<8x4xf32> {
      %0 = loom.matmul %a, %b : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
      return %0 : tensor<8x4xf32>
    }
    ```
    Output (on stdout):
    ```
    loom cost report
      op                            count          flops     bytes read  bytes written
      loom.matmul                       1           1024            768            128
      total                             1           1024            768            128
    ```
  }];
}

#endif // LOOM_TRANSFORMS_PASSES
