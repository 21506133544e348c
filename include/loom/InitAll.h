//===- InitAll.h - registration of Loom's dialects and passes ---*- C++ -*-===//
//
// One place that knows every dialect and pass a Loom tool needs, so that
// loom-opt and loomc accept the same IR and pipelines.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_INITALL_H
#define LOOM_INITALL_H

namespace mlir {
class DialectRegistry;
namespace loom {

/// Adds the loom dialect and the upstream dialects Loom lowers through (func,
/// arith, math, tensor, linalg, scf, bufferization, memref, llvm, gpu, nvvm)
/// with their interface extensions.
void registerAllDialects(DialectRegistry &registry);

/// Registers Loom's passes and pipelines and the upstream passes.
void registerAllPasses();

} // namespace loom
} // namespace mlir

#endif // LOOM_INITALL_H
