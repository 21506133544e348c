//===- LoomDialect.td - the loom dialect -------------------*- tablegen -*-===//
//
// The dialect Loom imports ONNX models into and runs its training passes on:
// value-semantic ops on builtin tensors, mesh and sharding attributes and the
// collective ops that distributed programs are made of.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_DIALECT
#define LOOM_DIALECT

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"

def Loom_Dialect : Dialect {
  let name = "loom";
  let summary = "Loom's tensor-level dialect for training programs";
  let description = [{
    Ops work on builtin ranked tensors with value semantics. A training step is a
    pure function `(params, optimizer_state, batch) -> (params', state', loss)`;
    parameters are function arguments carrying `loom.param = "<onnx name>"`.
  }];
  let cppNamespace = "::mlir::loom";
  let useDefaultAttributePrinterParser = 1;
  let hasConstantMaterializer = 1;
  let extraClassDeclaration = [{
    /// Registers the attributes; defined next to their storage classes.
    void registerAttributes();
  }];
}

class Loom_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<Loom_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

#endif // LOOM_DIALECT
