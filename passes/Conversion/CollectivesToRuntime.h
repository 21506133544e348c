//===- CollectivesToRuntime.h - collectives as runtime calls ----*- C++ -*-===//

#ifndef LOOM_PASSES_CONVERSION_COLLECTIVESTORUNTIME_H
#define LOOM_PASSES_CONVERSION_COLLECTIVESTORUNTIME_H

namespace mlir {
class DialectRegistry;
namespace loom {

/// Lets one-shot bufferization turn loom collectives into calls of the
/// runtime's communicator (`loom_rt_all_reduce_f32`, ...).
void registerCollectiveBufferizationModels(DialectRegistry &registry);

} // namespace loom
} // namespace mlir

#endif // LOOM_PASSES_CONVERSION_COLLECTIVESTORUNTIME_H
