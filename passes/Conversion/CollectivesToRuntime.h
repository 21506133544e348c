//===- CollectivesToRuntime.h - collectives as runtime calls ----*- C++ -*-===//

#ifndef LOOM_PASSES_CONVERSION_COLLECTIVESTORUNTIME_H
#define LOOM_PASSES_CONVERSION_COLLECTIVESTORUNTIME_H

#include "llvm/ADT/StringRef.h"

namespace mlir {
class DialectRegistry;
class Type;
namespace loom {

/// The suffix of libloomrt's kernels and collectives for tensors of
/// `element` ("f32", "bf16", "f16"), or empty for types they do not take.
llvm::StringRef runtimeTypeSuffix(Type element);

/// Lets one-shot bufferization turn loom collectives into calls of the
/// runtime's communicator (`loom_rt_all_reduce_f32`, ...).
void registerCollectiveBufferizationModels(DialectRegistry &registry);

} // namespace loom
} // namespace mlir

#endif // LOOM_PASSES_CONVERSION_COLLECTIVESTORUNTIME_H
