//===- Compiler.cpp - the library behind loomc ----------------------------===//
//
// Model loading and the phase pipeline of loomc.
//
//===----------------------------------------------------------------------===//

#include "loom/Compiler/Compiler.h"

#include "dialects/Loom/LoomOps.h"
#include "passes/Pipelines.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/SourceMgr.h"

using namespace mlir;
using namespace mlir::loom;

OwningOpRef<ModuleOp> mlir::loom::loadModel(MLIRContext &context,
                                            const CompilerOptions &options) {
  StringRef path = options.inputPath;
  if (path.ends_with(".mlir")) {
    if (!options.import.inputShapes.empty()) {
      emitError(UnknownLoc::get(&context))
          << "--input-shape applies to ONNX models, not to MLIR input";
      return nullptr;
    }
    llvm::SourceMgr sourceMgr;
    std::string error;
    auto buffer = llvm::MemoryBuffer::getFileOrSTDIN(path);
    if (!buffer) {
      emitError(FileLineColLoc::get(&context, path, 0, 0))
          << "cannot read \"" << path << "\": " << buffer.getError().message();
      return nullptr;
    }
    sourceMgr.AddNewSourceBuffer(std::move(*buffer), llvm::SMLoc());
    return parseSourceFile<ModuleOp>(sourceMgr, &context);
  }
  return importOnnxFile(&context, path, options.import);
}

LogicalResult mlir::loom::runPipeline(ModuleOp module,
                                      const CompilerOptions &options) {
  PassManager pm(module->getName());
  if (failed(applyPassManagerCLOptions(pm)))
    return failure();
  if (options.optLevel > 0) {
    pm.addPass(createCanonicalizerPass());
    pm.addPass(createCSEPass());
  }
  LoomCpuPipelineOptions cpu;
  cpu.optLevel = options.optLevel;
  if (options.emit >= EmitPhase::Linalg)
    buildLoomToLinalgPipeline(pm, cpu);
  if (options.emit >= EmitPhase::LLVM)
    buildLoomLinalgToLLVMPipeline(pm, cpu);
  return pm.run(module);
}
