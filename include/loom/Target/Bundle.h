//===- Bundle.h - compiled models as bundles --------------------*- C++ -*-===//
//
// A bundle is a directory holding what libloomrt needs to run a model:
//
//   model.loom/
//     manifest.json  entry points, their arguments (inputs, parameters,
//                    outputs) with dtypes and shapes, target, Loom version
//     model.so       the compiled entry points, `loom_entry_<name>(void **)`
//     params.bin     initial parameter values, at offsets the manifest gives
//
// Each entry point takes one memref descriptor pointer per argument, in the
// manifest's order: the function's arguments, then its outputs.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_TARGET_BUNDLE_H
#define LOOM_TARGET_BUNDLE_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

#include <string>
#include <vector>

namespace llvm {
class raw_pwrite_stream;
} // namespace llvm

namespace mlir::loom {

/// One argument of a compiled entry point.
struct EntryArgument {
  enum class Kind { Input, Parameter, Output };
  std::string name;
  Kind kind;
  /// numpy-style dtype name: float32, float64, float16, bfloat16, int64,
  /// int32, int16, int8, bool.
  std::string dtype;
  SmallVector<int64_t> shape;
  /// Initial value of a parameter (little-endian, dense), empty otherwise.
  std::vector<char> initialValue;
};

struct EntrySignature {
  std::string name;
  SmallVector<EntryArgument> arguments;
};

/// Reads the entry points of a module in the loom dialect (before lowering):
/// every public function with static tensor arguments and results. Names come
/// from `loom.input`/`loom.param`/`loom.output`, values from `loom.init`.
FailureOr<SmallVector<EntrySignature>> collectEntrySignatures(ModuleOp module);

/// Translates a module in the LLVM dialect to native code for this machine's
/// CPU, adding `loom_entry_<name>` wrappers, optimized at `optLevel`.
LogicalResult emitObjectFile(ModuleOp llvmModule,
                             ArrayRef<EntrySignature> entries,
                             unsigned optLevel, llvm::raw_pwrite_stream &os);

/// Writes a bundle directory at `path` (replacing an existing bundle only
/// once the new one is complete).
LogicalResult writeBundle(ModuleOp llvmModule,
                          ArrayRef<EntrySignature> entries, unsigned optLevel,
                          StringRef path);

} // namespace mlir::loom

#endif // LOOM_TARGET_BUNDLE_H
