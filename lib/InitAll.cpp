//===- InitAll.cpp - registration of Loom's dialects and passes -----------===//
//
// Registers what the Loom tools understand: the loom dialect and its passes,
// and all of upstream MLIR's dialects, extensions and passes, which Loom's
// lowerings go through and which users of loom-opt expect to find.
//
//===----------------------------------------------------------------------===//

#include "loom/InitAll.h"

#include "dialects/Loom/LoomOps.h"
#include "passes/Conversion/CollectivesToRuntime.h"
#include "passes/Passes.h"
#include "passes/Pipelines.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"

void mlir::loom::registerAllDialects(DialectRegistry &registry) {
  registry.insert<LoomDialect>();
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  // LLVM IR translations: the CUDA pipeline's gpu-module-to-binary
  // translates kernels (NVVM) to LLVM IR before compiling them to PTX.
  mlir::registerAllToLLVMIRTranslations(registry);
  registerCollectiveBufferizationModels(registry);
}

void mlir::loom::registerAllPasses() {
  mlir::registerAllPasses();
  registerLoomTransformsPasses();
  registerLoomConversionPasses();
  registerLoomPipelines();
}
