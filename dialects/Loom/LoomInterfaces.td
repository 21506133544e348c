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

#endif // LOOM_INTERFACES
