//===- Pipelines.h - Loom's named pass pipelines ----------------*- C++ -*-===//
//
// The pipelines loomc runs, registered under the same names in loom-opt so
// that anything loomc does can be reproduced step by step.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_PASSES_PIPELINES_H
#define LOOM_PASSES_PIPELINES_H

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

namespace mlir::loom {

struct LoomCpuPipelineOptions
    : public PassPipelineOptions<LoomCpuPipelineOptions> {
  PassOptions::Option<unsigned> optLevel{
      *this, "opt-level",
      llvm::cl::desc("0 lowers op by op; 1 and up also fuse elementwise ops; "
                     "2 and up also reassociate reductions, split max/min "
                     "reductions into vector lanes, run loops on threads and "
                     "approximate f32 exp, log, tanh and erf with "
                     "polynomials"),
      llvm::cl::init(2)};
};

/// loom dialect -> linalg/tensor/arith/math on tensors (`--emit=linalg`).
void buildLoomToLinalgPipeline(OpPassManager &pm,
                               const LoomCpuPipelineOptions &options);

/// linalg on tensors -> bufferized loops -> the LLVM dialect.
void buildLoomLinalgToLLVMPipeline(OpPassManager &pm,
                                   const LoomCpuPipelineOptions &options);

/// Both of the above: loom dialect -> LLVM dialect for CPUs.
void buildLoomCpuPipeline(OpPassManager &pm,
                          const LoomCpuPipelineOptions &options);

/// Registers `loom-to-linalg-pipeline`, `loom-linalg-to-llvm-pipeline` and
/// `loom-cpu-pipeline`.
void registerLoomPipelines();

} // namespace mlir::loom

#endif // LOOM_PASSES_PIPELINES_H
