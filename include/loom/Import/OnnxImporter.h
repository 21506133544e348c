//===- OnnxImporter.h - ONNX models to the loom dialect ---------*- C++ -*-===//
//
// Public entry point of Loom's ONNX importer: reads a model with ONNX's own
// parser, checker and shape inference, and builds a module holding one
// `func.func` of loom ops per graph. Graph inputs become arguments; float
// initializers become arguments marked `loom.param = "<name>"` whose initial
// value is kept in `loom.init`; graph outputs become results.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_IMPORT_ONNXIMPORTER_H
#define LOOM_IMPORT_ONNXIMPORTER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"

#include <string>

namespace mlir::loom {

/// Options of the ONNX importer.
struct OnnxImportOptions {
  /// Static shapes for graph inputs whose shapes are dynamic, by input name.
  llvm::StringMap<llvm::SmallVector<int64_t>> inputShapes;
  /// Name of the function the main graph becomes.
  std::string functionName = "main";
};

/// Oldest and newest default-domain opsets the importer accepts.
constexpr int64_t kMinOnnxOpset = 11;
constexpr int64_t kMaxOnnxOpset = 17;

/// Imports the model in `path`: binary protobuf, or ONNX's textual syntax when
/// the name ends in `.onnxtxt`. Errors are reported through the context's
/// diagnostic handler, located at the offending ONNX node; returns null then.
OwningOpRef<ModuleOp> importOnnxFile(MLIRContext *context, llvm::StringRef path,
                                     const OnnxImportOptions &options = {});

/// Imports a model held in memory (`text` selects ONNX's textual syntax).
/// `bufferName` names the model in diagnostics.
OwningOpRef<ModuleOp> importOnnxBuffer(MLIRContext *context,
                                       llvm::StringRef bytes,
                                       llvm::StringRef bufferName, bool text,
                                       const OnnxImportOptions &options = {});

/// True when the importer has a translator for ONNX op `opType` (default
/// domain). Supported ops may still reject some attribute values.
bool isOnnxOpSupported(llvm::StringRef opType);

/// Parses `NAME=4x32` (dimensions joined by `x`; a scalar is `NAME=`) into
/// `options`. Returns an error message, empty on success.
std::string parseInputShapeOption(llvm::StringRef spec,
                                  OnnxImportOptions &options);

} // namespace mlir::loom

#endif // LOOM_IMPORT_ONNXIMPORTER_H
