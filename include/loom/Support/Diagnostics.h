//===- Diagnostics.h - how Loom's tools print diagnostics -------*- C++ -*-===//
//
// ONNX models have no line numbers: the importer locates every op at its ONNX
// node (a NameLoc around the model file). This handler prints such locations
// as `model.onnx: node "name": error: ...`, MLIR source locations as
// `file:line:col: error: ...`, and attached notes below their error.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_SUPPORT_DIAGNOSTICS_H
#define LOOM_SUPPORT_DIAGNOSTICS_H

#include "mlir/IR/Diagnostics.h"

namespace llvm {
class raw_ostream;
} // namespace llvm

namespace mlir::loom {

/// Prints diagnostics of `context` to `os` while alive (replacing the
/// context's default handler).
class ToolDiagnosticHandler : public ScopedDiagnosticHandler {
public:
  ToolDiagnosticHandler(MLIRContext *context, llvm::raw_ostream &os);
};

} // namespace mlir::loom

#endif // LOOM_SUPPORT_DIAGNOSTICS_H
