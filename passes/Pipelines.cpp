//===- Pipelines.cpp - Loom's named pass pipelines ------------------------===//
//
// The CPU pipeline: Loom's lowering to linalg (with, from -O2, fast-math
// flags on reductions: loom-reassociate-reductions), then MLIR's upstream
// bufferization and LLVM lowering. In mlir-opt terms the second half is
//   loom-split-lane-reductions (from -O2), loom-duplicate-fills,
//   loom-copy-repeated-results,
//   one-shot-bufferize{bufferize-function-boundaries
//     function-boundary-type-conversion=identity-layout-map
//     allow-return-allocs-from-loops},
//   buffer-results-to-out-params{modify-public-functions hoist-static-allocs},
//   loom-expose-entry-points, buffer-deallocation-pipeline,
//   loom-dealloc-at-last-use, loom-matmul-to-kernel, loom-buffer-peak, loom-memref-copy-to-linalg,
//   convert-linalg-to-loops (from -O2: loom-split-reductions,
//   convert-linalg-to-parallel-loops),
//   expand-strided-metadata, lower-affine,
//   loom-outline-parallel-loops (from -O2), convert-scf-to-cf,
//   arith-emulate-unsupported-floats{source-types=bf16,f16 target-type=f32},
//   math-extend-to-supported-types,
//   loom-approximate-math (from -O2), convert-math-to-funcs,
//   convert-math-to-llvm,
//   convert-math-to-libm, arith-expand{include-bf16},
//   finalize-memref-to-llvm{use-generic-functions}, convert-to-llvm,
//   reconcile-unrealized-casts.
//
//===----------------------------------------------------------------------===//

#include "passes/Pipelines.h"
#include "passes/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void loom::buildLoomToLinalgPipeline(OpPassManager &pm,
                                     const LoomCpuPipelineOptions &options) {
  pm.addPass(createConvertLoomToLinalgPass());
  pm.addPass(createCanonicalizerPass());
  if (options.optLevel > 0) {
    pm.addNestedPass<func::FuncOp>(createLoomFuseElementwisePass());
    pm.addPass(createCanonicalizerPass());
    pm.addPass(createCSEPass());
  }
  if (options.optLevel > 1)
    pm.addNestedPass<func::FuncOp>(createLoomReassociateReductionsPass());
}

static void addLoopsToLLVMPasses(OpPassManager &pm,
                                 const loom::LoomCpuPipelineOptions &options);
static void addHostToLLVMPasses(OpPassManager &pm, bool launches);

/// The bufferization both targets share: one-shot bufferization with the
/// results as caller-allocated arguments, temporaries freed at their last
/// use, products (and with `convolutions` convolutions) handed to the
/// runtime's kernels named `kernelPrefix`..., the peak of the temporaries,
/// and copies as linalg ops.
static void addBufferizePasses(OpPassManager &pm, StringRef kernelPrefix,
                               bool convolutions = true) {
  using namespace loom;
  // One fill per op that accumulates into it, not a shared fill and copies.
  pm.addNestedPass<func::FuncOp>(createLoomDuplicateFillsPass());
  // A tensor of its own for every result (each becomes an out-parameter).
  pm.addNestedPass<func::FuncOp>(createLoomCopyRepeatedResultsPass());
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  // Recurrent layers carry freshly computed states through scf.for.
  bufferize.allowReturnAllocsFromLoops = true;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  // Results become caller-allocated arguments: the runtime owns all memory.
  bufferization::BufferResultsToOutParamsPassOptions outParams;
  outParams.modifyPublicFunctions = true;
  outParams.hoistStaticAllocs = true;
  pm.addPass(bufferization::createBufferResultsToOutParamsPass(outParams));
  pm.addPass(createLoomExposeEntryPointsPass());
  bufferization::buildBufferDeallocationPipeline(pm);
  // Free temporaries at their last use, not at the end of the step.
  pm.addNestedPass<func::FuncOp>(createLoomDeallocAtLastUsePass());
  LoomMatmulToKernelPassOptions kernels;
  kernels.kernelPrefix = kernelPrefix.str();
  kernels.convolutions = convolutions;
  pm.addPass(createLoomMatmulToKernelPass(kernels));
  // What the temporaries of each entry point will hold at most.
  pm.addPass(createLoomBufferPeakPass());
  pm.addNestedPass<func::FuncOp>(createLoomMemrefCopyToLinalgPass());
}

void loom::buildLoomLinalgToLLVMPipeline(
    OpPassManager &pm, const LoomCpuPipelineOptions &options) {
  // Maxima and minima in vector lanes (softmax's row maxima), from -O2.
  if (options.optLevel > 1)
    pm.addNestedPass<func::FuncOp>(createLoomSplitLaneReductionsPass());
  addBufferizePasses(pm, "loom_kernel_");
  // From -O2, parallel dimensions become scf.parallel, and large nests run
  // on the runtime's threads.
  if (options.optLevel > 1) {
    pm.addNestedPass<func::FuncOp>(createLoomSplitReductionsPass());
    pm.addNestedPass<func::FuncOp>(createConvertLinalgToParallelLoopsPass());
  } else {
    pm.addNestedPass<func::FuncOp>(createConvertLinalgToLoopsPass());
  }
  // Strided-metadata expansion creates affine.apply; lower affine after it.
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  if (options.optLevel > 1)
    pm.addPass(createLoomOutlineParallelLoopsPass());
  addLoopsToLLVMPasses(pm, options);
}

/// Bufferized loops -> the LLVM dialect for CPUs.
static void addLoopsToLLVMPasses(OpPassManager &pm,
                                 const loom::LoomCpuPipelineOptions &options) {
  using namespace loom;
  // Innermost unit-stride loops vectorized even where they are short.
  if (options.optLevel > 1) {
    pm.addPass(createParallelForToNestedForsPass());
    pm.addPass(createLoomVectorizeInnerLoopsPass());
  }
  pm.addPass(createSCFToControlFlowPass());
  // bf16 and f16 arithmetic and math in f32, rounded back: CPUs compute
  // neither natively (loom-autocast's types; products go to the runtime's
  // kernels).
  arith::ArithEmulateUnsupportedFloatsOptions emulate;
  emulate.sourceTypeStrs = {"bf16", "f16"};
  pm.addPass(arith::createArithEmulateUnsupportedFloats(emulate));
  pm.addPass(math::createMathExtendToSupportedTypes());
  // f32 exp, log, tanh and erf as vectorizable polynomials; integer powers
  // get outlined implementations; the rest of math has no LLVM intrinsic,
  // and libm provides it.
  if (options.optLevel > 1)
    pm.addPass(createLoomApproximateMathPass());
  pm.addPass(createConvertMathToFuncs());
  // Ops with an LLVM intrinsic (fma, floor, ...) become that intrinsic
  // rather than a libm call.
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createConvertMathToLibmPass());
  addHostToLLVMPasses(pm, /*launches=*/false);
  // Stored booleans as bytes, so that loops reading them vectorize.
  pm.addPass(createLoomByteBooleansPass());
  pm.addPass(createLoomAttachLoopAnnotationsPass());
}

/// The host code's last steps to the LLVM dialect, on both targets, with
/// `launches` the CUDA target's launches and device allocations.
static void addHostToLLVMPasses(OpPassManager &pm, bool launches) {
  // bf16 conversions as integer arithmetic (no __truncsfbf2 in libgcc 12).
  arith::ArithExpandOpsPassOptions expand;
  expand.includeBf16 = true;
  pm.addPass(arith::createArithExpandOpsPass(expand));
  // Heap temporaries through MLIR's generic allocation functions, which
  // libloomrt implements with a cache of freed blocks.
  FinalizeMemRefToLLVMConversionPassOptions memrefToLLVM;
  memrefToLLVM.useGenericFunctions = true;
  pm.addPass(createFinalizeMemRefToLLVMConversionPass(memrefToLLVM));
  if (launches) {
    // Kernels take their buffers as bare pointers (see the NVVM side).
    GpuToLLVMConversionPassOptions gpu;
    gpu.kernelBarePtrCallConv = true;
    pm.addPass(createGpuToLLVMConversionPass(gpu));
  }
  pm.addPass(createConvertToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

SmallVector<std::string> loom::LoomCudaPipelineOptions::archs() const {
  if (gpuArchs.empty())
    return {"sm_80", "sm_90"};
  return SmallVector<std::string>(gpuArchs.begin(), gpuArchs.end());
}

/// Bufferization with products as calls of the kernels named
/// `kernelPrefix`..., and every loop nest placed in a gpu.launch: what the
/// CUDA pipeline and its CPU emulation share.
static void addGpuPlacementPasses(OpPassManager &pm,
                                  const loom::LoomCudaPipelineOptions &options,
                                  StringRef kernelPrefix) {
  using namespace loom;
  // The CUDA engine has no convolutions yet: they become kernels of loops.
  addBufferizePasses(pm, kernelPrefix, /*convolutions=*/false);
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToParallelLoopsPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  // Integer powers as functions of the module, which outlining copies into
  // the kernels' module (NVVM has no instruction for them).
  pm.addPass(createConvertMathToFuncs());
  LoomMapToGpuPassOptions map;
  map.blockSize = options.blockSize;
  pm.addPass(createLoomMapToGpuPass(map));
}

void loom::buildLoomLinalgToGpuPipeline(
    OpPassManager &pm, const LoomCudaPipelineOptions &options) {
  // Products go to the CUDA engine's kernels (cuBLAS).
  addGpuPlacementPasses(pm, options, "loom_cuda_");
  pm.addPass(createGpuKernelOutliningPass());
  pm.addPass(createLoomMergeGpuModulesPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  // Allocations, launches and frees are queued on streams; the host waits
  // for them before anything else with side effects (runtime calls).
  pm.addNestedPass<func::FuncOp>(createGpuAsyncRegionPass());
}

void loom::buildLoomGpuToLLVMPipeline(OpPassManager &pm,
                                      const LoomCudaPipelineOptions &options) {
  pm.addPass(createSCFToControlFlowPass());
  // libdevice has no bf16 or f16 functions: their math runs in f32.
  pm.addPass(math::createMathExtendToSupportedTypes());
  for (const std::string &arch : options.archs()) {
    GpuNVVMAttachTargetOptions target;
    target.chip = arch;
    target.features = options.ptxFeatures;
    target.optLevel = 3;
    pm.addPass(createGpuNVVMAttachTarget(target));
  }
  OpPassManager &kernels = pm.nest<gpu::GPUModuleOp>();
  ConvertGpuOpsToNVVMOpsOptions nvvm;
  nvvm.indexBitwidth = 64;
  // Buffers (all of static shape) reach kernels as bare pointers: 8 bytes
  // of kernel parameters each instead of a descriptor's 24 + 16 * rank
  // (a fused chain can read dozens; PTX allows 4 KiB).
  nvvm.useBarePtrCallConv = true;
  kernels.addPass(createConvertGpuOpsToNVVMOps(nvvm));
  kernels.addPass(createCanonicalizerPass());
  kernels.addPass(createCSEPass());
  kernels.addPass(createReconcileUnrealizedCastsPass());
  // The host: views, allocations on the device and launches.
  pm.addPass(createConvertMathToLLVMPass());
  addHostToLLVMPasses(pm, /*launches=*/true);
  GpuModuleToBinaryPassOptions binary;
  binary.compilationTarget = options.format;
  pm.addPass(createGpuModuleToBinaryPass(binary));
  // One fatbin for all architectures: the driver picks the device's cubin.
  if (options.format == "fatbin")
    pm.addPass(createLoomMergeFatbinsPass());
}

void loom::buildLoomGpuEmulationPipeline(
    OpPassManager &pm, const LoomCudaPipelineOptions &options) {
  LoomCpuPipelineOptions cpu;
  cpu.optLevel = options.optLevel;
  buildLoomToLinalgPipeline(pm, cpu);
  buildLoomLinalgToGpuEmulationPipeline(pm, options);
}

void loom::buildLoomLinalgToGpuEmulationPipeline(
    OpPassManager &pm, const LoomCudaPipelineOptions &options) {
  LoomCpuPipelineOptions cpu;
  cpu.optLevel = options.optLevel;
  // The CUDA pipeline's placement with the CPU's kernels (same arguments).
  addGpuPlacementPasses(pm, options, "loom_kernel_");
  pm.addPass(createLoomEmulateGpuLaunchesPass());
  addLoopsToLLVMPasses(pm, cpu);
}

void loom::buildLoomCudaPipeline(OpPassManager &pm,
                                 const LoomCudaPipelineOptions &options) {
  LoomCpuPipelineOptions linalg;
  linalg.optLevel = options.optLevel;
  buildLoomToLinalgPipeline(pm, linalg);
  buildLoomLinalgToGpuPipeline(pm, options);
  buildLoomGpuToLLVMPipeline(pm, options);
}

void loom::buildLoomCpuPipeline(OpPassManager &pm,
                                const LoomCpuPipelineOptions &options) {
  buildLoomToLinalgPipeline(pm, options);
  buildLoomLinalgToLLVMPipeline(pm, options);
}

void loom::registerLoomPipelines() {
  PassPipelineRegistration<LoomCpuPipelineOptions>(
      "loom-to-linalg-pipeline",
      "lowers the loom dialect to linalg on tensors (loomc --emit=linalg)",
      buildLoomToLinalgPipeline);
  PassPipelineRegistration<LoomCpuPipelineOptions>(
      "loom-linalg-to-llvm-pipeline",
      "bufferizes linalg on tensors and lowers it to the LLVM dialect",
      buildLoomLinalgToLLVMPipeline);
  PassPipelineRegistration<LoomCpuPipelineOptions>(
      "loom-cpu-pipeline",
      "lowers the loom dialect to the LLVM dialect for CPUs "
      "(loomc --emit=llvm)",
      buildLoomCpuPipeline);
  PassPipelineRegistration<LoomCudaPipelineOptions>(
      "loom-linalg-to-gpu-pipeline",
      "bufferizes linalg on tensors and places its loops in kernels, one "
      "gpu.module of them (loomc --target=cuda --emit=gpu)",
      buildLoomLinalgToGpuPipeline);
  PassPipelineRegistration<LoomCudaPipelineOptions>(
      "loom-gpu-to-llvm-pipeline",
      "lowers kernels to NVVM and binaries, and the host code to the LLVM "
      "dialect",
      buildLoomGpuToLLVMPipeline);
  PassPipelineRegistration<LoomCudaPipelineOptions>(
      "loom-gpu-emulation-pipeline",
      "the CUDA pipeline's placement of loops in launches, run on the CPU: "
      "launches become loops over their blocks and threads (tests)",
      buildLoomGpuEmulationPipeline);
  PassPipelineRegistration<LoomCudaPipelineOptions>(
      "loom-cuda-pipeline",
      "lowers the loom dialect to the LLVM dialect and kernel binaries for "
      "CUDA (loomc --target=cuda --emit=llvm)",
      buildLoomCudaPipeline);
}
