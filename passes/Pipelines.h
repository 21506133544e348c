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

struct LoomCudaPipelineOptions
    : public PassPipelineOptions<LoomCudaPipelineOptions> {
  PassOptions::Option<unsigned> optLevel{
      *this, "opt-level",
      llvm::cl::desc("0 lowers op by op; 1 and up also fuse elementwise ops "
                     "(into one kernel each chain)"),
      llvm::cl::init(2)};
  PassOptions::ListOption<std::string> gpuArchs{
      *this, "gpu-archs",
      llvm::cl::desc("the architectures kernels are compiled for (default: "
                     "sm_80,sm_90)")};
  PassOptions::Option<std::string> ptxFeatures{
      *this, "ptx-features",
      llvm::cl::desc("the PTX version of the kernels, as an NVPTX feature"),
      llvm::cl::init("+ptx80")};
  PassOptions::Option<std::string> format{
      *this, "format",
      llvm::cl::desc("what gpu-module-to-binary makes of the kernels: isa "
                     "(PTX text), bin (cubin) or fatbin"),
      llvm::cl::init("fatbin")};
  PassOptions::Option<int64_t> blockSize{
      *this, "block-size",
      llvm::cl::desc("threads per block of a parallel loop's launch"),
      llvm::cl::init(256)};

  /// gpuArchs, or the default architectures when it is empty.
  SmallVector<std::string> archs() const;
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

/// linalg on tensors -> bufferized loops in gpu.launch ops, outlined into
/// one gpu.module of kernels (`loomc --target=cuda --emit=gpu`).
void buildLoomLinalgToGpuPipeline(OpPassManager &pm,
                                  const LoomCudaPipelineOptions &options);

/// The kernels -> NVVM -> a binary per architecture (gpu.binary); the host
/// code -> the LLVM dialect, launching them through MLIR's GPU runtime
/// calls (`mgpuLaunchKernel`, ...).
void buildLoomGpuToLLVMPipeline(OpPassManager &pm,
                                const LoomCudaPipelineOptions &options);

/// For tests on machines without a GPU: the loom dialect through the CUDA
/// pipeline's placement (loom-map-to-gpu, with the CPU's kernels), the
/// launches as loops over blocks and threads, then the CPU's lowering to the
/// LLVM dialect.
void buildLoomGpuEmulationPipeline(OpPassManager &pm,
                                   const LoomCudaPipelineOptions &options);
/// The same from linalg on tensors (`loomc --target=cuda-emulated`).
void buildLoomLinalgToGpuEmulationPipeline(
    OpPassManager &pm, const LoomCudaPipelineOptions &options);

/// All three: loom dialect -> LLVM dialect and kernel binaries for CUDA.
void buildLoomCudaPipeline(OpPassManager &pm,
                           const LoomCudaPipelineOptions &options);

/// Registers `loom-to-linalg-pipeline`, `loom-linalg-to-llvm-pipeline`,
/// `loom-cpu-pipeline`, and the CUDA target's `loom-linalg-to-gpu-pipeline`,
/// `loom-gpu-to-llvm-pipeline`, `loom-cuda-pipeline` and the test pipeline
/// `loom-gpu-emulation-pipeline`.
void registerLoomPipelines();

} // namespace mlir::loom

#endif // LOOM_PASSES_PIPELINES_H
