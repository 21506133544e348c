//===- LoomInterfaces.td - op interfaces of the loom dialect -*- tablegen -*-===//
//
// Interfaces carrying what Loom's passes need from every op, implemented once
// per op rather than special-cased in the passes.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_INTERFACES
#define LOOM_INTERFACES

include "mlir/IR/OpBase.td"

def Loom_CostOpInterface : OpInterface<"CostOpInterface"> {
  let cppNamespace = "::mlir::loom";
  let description = [{
    The cost of one execution of an op: floating-point operations and bytes
    read and written, as counted on the op's (static) tensor types. Used by
    pipeline partitioning, rematerialization and the auto-parallel planner.

    A multiply-add counts as two FLOPs. Byte counts assume every operand is
    read once and every result written once, which is what a fused kernel
    achieves; ops that must do more override them.
  }];
  let methods = [
    InterfaceMethod<"floating-point operations of one execution",
      "int64_t", "getFlops", (ins), [{}], [{
        return ::mlir::loom::detail::defaultFlops($_op.getOperation());
      }]>,
    InterfaceMethod<"bytes read from memory",
      "int64_t", "getBytesRead", (ins), [{}], [{
        return ::mlir::loom::detail::operandBytes($_op.getOperation());
      }]>,
    InterfaceMethod<"bytes written to memory",
      "int64_t", "getBytesWritten", (ins), [{}], [{
        return ::mlir::loom::detail::resultBytes($_op.getOperation());
      }]>,
  ];
}

def Loom_GradientOpInterface : OpInterface<"GradientOpInterface"> {
  let cppNamespace = "::mlir::loom";
  let description = [{
    The vector-Jacobian product of an op, used by reverse-mode autodiff
    (`loom-build-train-step`, `loom-differentiate`).

    Given the gradient of the loss with respect to each result (a null value
    where no gradient reaches that result), `buildGradient` emits, at the
    builder's insertion point, ops computing the gradient with respect to each
    operand and stores them in `operandGrads` (one entry per operand; null for
    operands that are not differentiable, such as integer indices). Gradients
    have exactly the operand's type: broadcasting is summed back. Ops built
    for operands whose gradient is never used are removed later as dead code.

    Failure means the op cannot be differentiated in its present form (for
    example a strided slice); the implementation emits the error.
  }];
  let methods = [
    InterfaceMethod<"builds the operands' gradients from the results'",
      "::llvm::LogicalResult", "buildGradient",
      (ins "::mlir::OpBuilder &":$builder,
           "::llvm::ArrayRef<::mlir::Value>":$resultGrads,
           "::llvm::SmallVectorImpl<::mlir::Value> &":$operandGrads)>,
  ];
}

def Loom_ShardingRuleOpInterface : OpInterface<"ShardingRuleOpInterface"> {
  let cppNamespace = "::mlir::loom";
  let description = [{
    How the op's operand and result dimensions relate, as factors (see
    `ShardingRule.h`): which dimensions must be split alike, which factors
    are summed over (partial results) and which must stay whole. Sharding
    propagation (`loom-propagate-sharding`) and SPMD partitioning
    (`loom-partition`) are built on it alone.

    Failure means the op has no rule: every operand is gathered whole and the
    results are replicated, which is always correct.
  }];
  let methods = [
    InterfaceMethod<"the op's factors and how its dimensions are made of them",
      "::mlir::FailureOr<::mlir::loom::ShardingRule>", "getShardingRule", (ins),
      [{}], [{
        return ::mlir::loom::detail::shardingRuleOf($_op.getOperation());
      }]>,
  ];
}

#endif // LOOM_INTERFACES
