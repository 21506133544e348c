//===- onnx-import-fuzzer.cpp - libFuzzer target for the ONNX importer ----===//
//
// Feeds arbitrary bytes to the importer, as a binary model or (when the
// input starts with '<') as ONNX text. Any outcome but a module or a clean
// error (a crash, a sanitizer report, an abort) is a bug.
//
//===----------------------------------------------------------------------===//

#include "loom/Import/OnnxImporter.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mlir::MLIRContext context(mlir::MLIRContext::Threading::DISABLED);
  mlir::ScopedDiagnosticHandler quiet(
      &context, [](mlir::Diagnostic &) { return mlir::success(); });
  llvm::StringRef bytes(reinterpret_cast<const char *>(data), size);
  bool text = !bytes.empty() && bytes.front() == '<';
  mlir::loom::importOnnxBuffer(&context, bytes, "fuzz-input", text);
  return 0;
}
