//===- Compiler.cpp - the library behind loomc ----------------------------===//
//
// Model loading, the phase pipeline of loomc and writing its output.
//
//===----------------------------------------------------------------------===//

#include "loom/Compiler/Compiler.h"
#include "loom/Target/Bundle.h"

#include "dialects/Loom/LoomOps.h"
#include "passes/Passes.h"
#include "passes/Pipelines.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"

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

LogicalResult mlir::loom::runPipeline(ModuleOp module, EmitPhase phase,
                                      unsigned optLevel, bool simplify) {
  PassManager pm(module->getName());
  if (failed(applyPassManagerCLOptions(pm)))
    return failure();
  if (simplify && optLevel > 0) {
    pm.addPass(createCanonicalizerPass());
    pm.addPass(createCSEPass());
  }
  LoomCpuPipelineOptions cpu;
  cpu.optLevel = optLevel;
  if (phase >= EmitPhase::Linalg)
    buildLoomToLinalgPipeline(pm, cpu);
  if (phase >= EmitPhase::LLVM)
    buildLoomLinalgToLLVMPipeline(pm, cpu);
  return pm.run(module);
}

LogicalResult mlir::loom::compile(MLIRContext &context,
                                  const CompilerOptions &options) {
  EmitPhase phase = options.emit.value_or(
      StringRef(options.outputPath).ends_with(".loom") ? EmitPhase::Bundle
                                                       : EmitPhase::Loom);
  Location cmdLoc = UnknownLoc::get(&context);
  if (phase >= EmitPhase::Obj && options.outputPath == "-")
    return emitError(cmdLoc)
           << (phase == EmitPhase::Bundle ? "--emit=bundle" : "--emit=obj")
           << " needs an output path (-o)";

  OwningOpRef<ModuleOp> module = loadModel(context, options);
  if (!module)
    return failure();

  if (options.train) {
    const TrainOptions &t = *options.train;
    LoomBuildTrainStepPassOptions pass;
    pass.entry = t.entry;
    pass.loss = t.loss;
    pass.lossOutput = t.lossOutput;
    pass.optimizer = t.optimizer;
    pass.lr = t.lr;
    pass.momentum = t.momentum;
    pass.nesterov = t.nesterov;
    pass.weightDecay = t.weightDecay;
    pass.beta1 = t.beta1;
    pass.beta2 = t.beta2;
    pass.epsilon = t.epsilon;
    pass.schedule = t.schedule;
    pass.warmupSteps = t.warmupSteps;
    pass.totalSteps = t.totalSteps;
    pass.minLr = t.minLr;
    pass.clipNorm = t.clipNorm;
    pass.accumulate = t.accumulate;
    PassManager pm(module.get()->getName());
    if (failed(applyPassManagerCLOptions(pm)))
      return failure();
    pm.addPass(createLoomBuildTrainStepPass(pass));
    if (failed(pm.run(*module)))
      return failure();
  }

  if (!options.mesh.empty()) {
    PassManager pm(module.get()->getName());
    if (failed(applyPassManagerCLOptions(pm)))
      return failure();
    LoomShardInputsPassOptions shard;
    shard.meshShape = options.mesh;
    shard.dataAxis = options.dataAxis;
    shard.zero = options.zero;
    pm.addPass(createLoomShardInputsPass(shard));
    pm.addPass(createLoomPropagateShardingPass());
    LoomPartitionPassOptions partition;
    partition.reduceScatter = options.zero != 1;
    pm.addPass(createLoomPartitionPass(partition));
    if (options.report)
      pm.addPass(createLoomMemoryReportPass());
    LoomBucketAllReducesPassOptions buckets;
    buckets.bucketBytes = options.bucketBytes;
    buckets.overlap = options.overlap;
    if (options.bucketBytes > 0)
      pm.addPass(createLoomBucketAllReducesPass(buckets));
    if (failed(pm.run(*module)))
      return failure();
  }

  // Entry-point signatures (names, parameter values) are read from the loom
  // dialect, before lowering turns tensors into pointers.
  SmallVector<EntrySignature> entries;
  if (phase >= EmitPhase::Obj) {
    if (failed(runPipeline(*module, EmitPhase::Loom, options.optLevel)))
      return failure();
    FailureOr<SmallVector<EntrySignature>> collected =
        collectEntrySignatures(*module);
    if (failed(collected))
      return failure();
    entries = std::move(*collected);
  }
  // The training configuration goes to the manifest, not through lowering.
  auto training = (*module)->getAttrOfType<DictionaryAttr>("loom.training");
  if (training && phase >= EmitPhase::Linalg)
    (*module)->removeAttr("loom.training");
  // The loom-level simplification already ran when signatures were read.
  if (failed(runPipeline(*module, std::min(phase, EmitPhase::LLVM),
                         options.optLevel,
                         /*simplify=*/phase < EmitPhase::Obj)))
    return failure();

  if (phase == EmitPhase::Bundle)
    return writeBundle(*module, entries, options.optLevel, options.outputPath,
                       training);

  std::string error;
  auto output = openOutputFile(options.outputPath, &error);
  if (!output)
    return emitError(cmdLoc) << error;
  if (phase == EmitPhase::Obj) {
    if (failed(emitObjectFile(*module, entries, options.optLevel,
                              output->os())))
      return failure();
  } else {
    module->print(output->os());
    output->os() << "\n";
  }
  output->keep();
  return success();
}
