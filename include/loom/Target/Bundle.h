//===- Bundle.h - compiled models as bundles --------------------*- C++ -*-===//
//
// A bundle is a directory holding what libloomrt needs to run a model:
//
//   model.loom/
//     manifest.json  entry points, their arguments (inputs, parameters,
//                    optimizer state, outputs) with dtypes and shapes; for
//                    training, which outputs replace which parameters or
//                    state after a step and the optimizer's settings;
//                    target, Loom version
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

#include <optional>
#include <string>
#include <vector>

namespace llvm {
class raw_pwrite_stream;
} // namespace llvm

namespace mlir::loom {

/// One argument of a compiled entry point.
struct EntryArgument {
  /// Parameters start from their initial value; state (optimizer moments,
  /// step counters) starts at zero; hyperparameters (rank-0 f64 values of
  /// the optimizer and the schedule, `loom.hyperparam`) start at their
  /// default and are set by the runtime's user.
  enum class Kind { Input, Parameter, State, Output, Hyperparameter };
  std::string name;
  Kind kind;
  /// numpy-style dtype name: float32, float64, float16, bfloat16, int64,
  /// int32, int16, int8, bool.
  std::string dtype;
  SmallVector<int64_t> shape;
  /// Bytes of the tensor (of one rank's block when it is split).
  int64_t bytes = 0;
  /// Initial value of a parameter (little-endian, dense), empty otherwise.
  std::vector<char> initialValue;
  /// A hyperparameter's default value.
  double defaultValue = 0;
  /// For an output: the parameter or state it replaces after each run
  /// (`loom.update`), empty otherwise.
  std::string updates;
  /// For an integer input used as indices (a gather's rows, a loss's class
  /// labels): the values it may hold, [indexMin, indexMax), plus
  /// `ignoreIndex`; the runtime refuses others, which would read out of
  /// bounds. `indexMeaning` says what the indices select.
  std::optional<int64_t> indexMin, indexMax, ignoreIndex;
  std::string indexMeaning;
  /// How the tensor is split over the mesh (`loom.sharding`): the mesh axes
  /// of every dimension, major to minor; empty when replicated. `shape` is
  /// then one rank's block.
  std::vector<std::vector<std::string>> sharding;
  /// The shape the model gives the tensor (its ONNX initializer's), when
  /// the bundle views the same data in another shape
  /// (`loom-split-fused-projections`); empty otherwise. Checkpoints hold
  /// this shape.
  SmallVector<int64_t> logicalShape;
};

struct EntrySignature {
  std::string name;
  std::vector<EntryArgument> arguments;
  /// The device mesh the entry point was partitioned for (axis names and
  /// sizes), empty for a single device.
  std::vector<std::pair<std::string, int64_t>> mesh;
};

/// Reads the entry points of a module in the loom dialect (before lowering):
/// every public function with static tensor arguments and results. Names come
/// from `loom.input`/`loom.param`/`loom.state`/`loom.output`, values from
/// `loom.init`, updates from `loom.update`.
FailureOr<SmallVector<EntrySignature>> collectEntrySignatures(ModuleOp module);

/// Translates a module in the LLVM dialect to native code for this machine's
/// CPU, adding `loom_entry_<name>` wrappers, optimized at `optLevel`.
LogicalResult emitObjectFile(ModuleOp llvmModule,
                             ArrayRef<EntrySignature> entries,
                             unsigned optLevel, llvm::raw_pwrite_stream &os);

/// Writes a bundle directory at `path` (replacing an existing bundle only
/// once the new one is complete). `training` (may be null) is the optimizer's
/// configuration, a dictionary stored as the manifest's "training" object.
/// `target` is the manifest's target kind: "cpu", "cuda" (the host code
/// launches kernels of its embedded fatbins through libloomrt_cuda) or
/// "cuda-emulated".
LogicalResult writeBundle(ModuleOp llvmModule,
                          ArrayRef<EntrySignature> entries, unsigned optLevel,
                          StringRef path, DictionaryAttr training = {},
                          StringRef target = "cpu");

} // namespace mlir::loom

#endif // LOOM_TARGET_BUNDLE_H
