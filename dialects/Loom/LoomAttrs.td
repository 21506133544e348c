//===- LoomAttrs.td - attributes of the loom dialect -------*- tablegen -*-===//
//
// Enums used by ops, the device mesh and tensor shardings. Mesh and sharding
// follow upstream MLIR's `shard` vocabulary (a named grid of axes, per-dimension
// lists of grid axes, partial sums) so an adapter to `shard` stays possible.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_ATTRS
#define LOOM_ATTRS

include "dialects/Loom/LoomDialect.td"
include "mlir/IR/EnumAttr.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def Loom_ReductionKind : I32EnumAttr<"ReductionKind",
    "how a collective combines the values of a group", [
      I32EnumAttrCase<"Sum", 0, "sum">, I32EnumAttrCase<"Prod", 1, "prod">,
      I32EnumAttrCase<"Max", 2, "max">, I32EnumAttrCase<"Min", 3, "min">,
      I32EnumAttrCase<"Avg", 4, "avg">]> {
  let cppNamespace = "::mlir::loom";
}

def Loom_LossReduction : I32EnumAttr<"LossReduction",
    "how a loss combines per-sample values", [
      I32EnumAttrCase<"None", 0, "none">, I32EnumAttrCase<"Sum", 1, "sum">,
      I32EnumAttrCase<"Mean", 2, "mean">]> {
  let cppNamespace = "::mlir::loom";
}

def Loom_ScatterReduction : I32EnumAttr<"ScatterReduction",
    "how scatter_elements combines an update with the existing value", [
      I32EnumAttrCase<"None", 0, "none">, I32EnumAttrCase<"Add", 1, "add">,
      I32EnumAttrCase<"Mul", 2, "mul">, I32EnumAttrCase<"Max", 3, "max">,
      I32EnumAttrCase<"Min", 4, "min">]> {
  let cppNamespace = "::mlir::loom";
}

def Loom_RnnDirection : I32EnumAttr<"RnnDirection",
    "direction of a recurrent layer", [
      I32EnumAttrCase<"Forward", 0, "forward">,
      I32EnumAttrCase<"Reverse", 1, "reverse">,
      I32EnumAttrCase<"Bidirectional", 2, "bidirectional">]> {
  let cppNamespace = "::mlir::loom";
}

def Loom_MoeRouting : I32EnumAttr<"MoeRouting",
    "how a mixture-of-experts layer assigns tokens to experts", [
      I32EnumAttrCase<"TopK", 0, "top_k">,
      I32EnumAttrCase<"TokenChoice", 1, "token_choice">,
      I32EnumAttrCase<"ExpertChoice", 2, "expert_choice">]> {
  let cppNamespace = "::mlir::loom";
}

def Loom_MoeActivation : I32EnumAttr<"MoeActivation",
    "the activation between an expert's two (or, gated, three) projections", [
      I32EnumAttrCase<"Relu", 0, "relu">, I32EnumAttrCase<"Gelu", 1, "gelu">,
      I32EnumAttrCase<"GeluTanh", 2, "gelu_tanh">,
      I32EnumAttrCase<"Silu", 3, "silu">,
      I32EnumAttrCase<"Identity", 4, "identity">]> {
  let cppNamespace = "::mlir::loom";
}

def Loom_PadMode : I32EnumAttr<"PadMode", "how pad fills the border", [
      I32EnumAttrCase<"Constant", 0, "constant">,
      I32EnumAttrCase<"Reflect", 1, "reflect">,
      I32EnumAttrCase<"Edge", 2, "edge">]> {
  let cppNamespace = "::mlir::loom";
}

//===----------------------------------------------------------------------===//
// Mesh and sharding
//===----------------------------------------------------------------------===//

def Loom_MeshAttr : Loom_Attr<"Mesh", "mesh"> {
  let summary = "a logical grid of devices with named axes";
  let description = [{
    `#loom.mesh<dp = 4, tp = 2>` is a 4x2 grid whose axes are called `dp` and
    `tp`. Axis names are unique and sizes positive; the device count is the
    product of the sizes.
  }];
  let parameters = (ins ArrayRefParameter<"::mlir::StringAttr">:$axisNames,
                        ArrayRefParameter<"int64_t">:$axisSizes);
  // Defined out of line, so that passes can build meshes and shardings.
  let skipDefaultBuilders = 1;
  let builders = [
    AttrBuilder<(ins "::llvm::ArrayRef<::mlir::StringAttr>":$axisNames,
                     "::llvm::ArrayRef<int64_t>":$axisSizes), [{
      return $_get($_ctxt, axisNames, axisSizes);
    }]>];
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Size of the axis called `name`, or std::nullopt if there is none.
    std::optional<int64_t> getAxisSize(::llvm::StringRef name) const;
    /// Number of devices in the mesh.
    int64_t getNumDevices() const;
  }];
}

def Loom_ShardingAttr : Loom_Attr<"Sharding", "sharding"> {
  let summary = "how a tensor is split across the axes of a mesh";
  let description = [{
    `#loom.sharding<@mesh, [{dp}, {}, {tp} ]>` splits dimension 0 over mesh
    axis `dp`, replicates dimension 1 and splits dimension 2 over `tp`. A
    dimension may be split over several axes (`{dp, tp}`, major to minor).
    `partial = {tp}` says the value on each device is a partial sum over `tp`
    that an `all_reduce` or `reduce_scatter` completes. An axis appears at
    most once in a sharding.
  }];
  let parameters = (ins "::mlir::FlatSymbolRefAttr":$mesh,
                        "::mlir::ArrayAttr":$dimAxes,
                        "::mlir::ArrayAttr":$partialAxes);
  let skipDefaultBuilders = 1;
  let builders = [
    AttrBuilder<(ins "::mlir::FlatSymbolRefAttr":$mesh,
                     "::mlir::ArrayAttr":$dimAxes,
                     "::mlir::ArrayAttr":$partialAxes), [{
      return $_get($_ctxt, mesh, dimAxes, partialAxes);
    }]>];
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Axis names splitting dimension `dim` (empty when replicated).
    ::llvm::SmallVector<::llvm::StringRef> getAxesOfDim(unsigned dim) const;
    /// Checks that the sharding fits `type` on `mesh`: rank, known axes, and
    /// every sharded dimension divisible by its axes' product.
    ::llvm::LogicalResult verifyFor(::mlir::RankedTensorType type, MeshAttr mesh,
        ::llvm::function_ref<::mlir::InFlightDiagnostic()> emitError) const;
  }];
}

#endif // LOOM_ATTRS
