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
#include "llvm/Support/Format.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"

using namespace mlir;
using namespace mlir::loom;

std::string mlir::loom::readShardFile(StringRef path,
                                      std::vector<std::string> &specs) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return ("cannot read --shard-file \"" + path + "\": " +
            buffer.getError().message())
        .str();
  llvm::Expected<llvm::json::Value> json =
      llvm::json::parse((*buffer)->getBuffer());
  if (!json)
    return (path + ": not valid JSON: " + llvm::toString(json.takeError()))
        .str();
  const llvm::json::Array *entries = json->getAsArray();
  if (!entries)
    return (path + ": expected an array of {\"name\": GLOB, \"sharding\": "
                   "SPEC}")
        .str();
  for (auto [i, entry] : llvm::enumerate(*entries)) {
    std::string where = (path + ": entry " + Twine(i)).str();
    const llvm::json::Object *object = entry.getAsObject();
    std::optional<StringRef> name =
        object ? object->getString("name") : std::nullopt;
    const llvm::json::Value *sharding = object ? object->get("sharding") : nullptr;
    if (!name || !sharding)
      return where + ": expected {\"name\": GLOB, \"sharding\": SPEC}";
    std::string spec;
    if (std::optional<StringRef> text = sharding->getAsString()) {
      spec = text->str();
    } else if (const llvm::json::Array *dims = sharding->getAsArray()) {
      spec = "[";
      for (auto [d, dim] : llvm::enumerate(*dims)) {
        const llvm::json::Array *axes = dim.getAsArray();
        if (!axes)
          return where + ": each dimension's sharding must be an array of "
                         "mesh axis names";
        spec += d ? ", {" : "{";
        for (auto [a, axis] : llvm::enumerate(*axes)) {
          std::optional<StringRef> axisName = axis.getAsString();
          if (!axisName)
            return where + ": mesh axis names must be strings";
          spec += (a ? ", " : "") + axisName->str();
        }
        spec += "}";
      }
      spec += "]";
    } else {
      return where + ": \"sharding\" must be a string like \"[{tp}, {}]\" "
                     "or an array like [[\"tp\"], []]";
    }
    specs.push_back(name->str() + "=" + spec);
  }
  return "";
}

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

/// The memory one rank's process holds for the training step (or the first
/// entry point) once compiled: the tensors the runtime allocates for its
/// arguments and the most its temporaries take at once (loom-buffer-peak).
/// `loom-run train --memory-stats` measures the same quantities.
static void printCompiledMemory(ModuleOp llvmModule,
                                ArrayRef<EntrySignature> entries) {
  if (entries.empty())
    return;
  const EntrySignature *entry = &entries.front();
  for (const EntrySignature &e : entries)
    if (e.name == "train_step")
      entry = &e;
  int64_t bytes[4] = {0, 0, 0, 0};
  for (const EntryArgument &arg : entry->arguments)
    bytes[static_cast<int>(arg.kind)] += arg.bytes;
  int64_t temporaries = 0;
  if (auto peaks = llvmModule->getAttrOfType<DictionaryAttr>("loom.buffer_peak"))
    if (auto peak = peaks.getAs<IntegerAttr>(entry->name))
      temporaries = peak.getInt();
  llvm::raw_ostream &os = llvm::outs();
  os << "compiled @" << entry->name
     << " per rank (what loom-run train --memory-stats measures):\n";
  auto line = [&](StringRef what, int64_t value) {
    os << llvm::format("  %-18s %12lld bytes\n", what.str().c_str(),
                       static_cast<long long>(value));
  };
  using Kind = EntryArgument::Kind;
  line("parameters", bytes[static_cast<int>(Kind::Parameter)]);
  line("optimizer state", bytes[static_cast<int>(Kind::State)]);
  line("inputs", bytes[static_cast<int>(Kind::Input)]);
  line("outputs", bytes[static_cast<int>(Kind::Output)]);
  line("temporaries peak", temporaries);
  line("total", bytes[0] + bytes[1] + bytes[2] + bytes[3] + temporaries);
  os.flush();
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

  // Tensor parallelism splits fused projections by heads: each part gets a
  // product of its own (over a view of the weight) before the training
  // step is built from the forward function.
  if (options.tpPlan == "auto") {
    PassManager pm(module.get()->getName());
    if (failed(applyPassManagerCLOptions(pm)))
      return failure();
    // Transposes fold into the products first, so linear layers read
    // their weights directly.
    if (options.optLevel > 0) {
      pm.addPass(createCanonicalizerPass());
      pm.addPass(createCSEPass());
    }
    pm.addPass(createLoomSplitFusedProjectionsPass());
    if (failed(pm.run(*module)))
      return failure();
  }

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

  if (options.report && options.mesh.empty()) {
    PassManager pm(module.get()->getName());
    if (failed(applyPassManagerCLOptions(pm)))
      return failure();
    LoomMemoryReportPassOptions report;
    report.parameters = true;
    pm.addPass(createLoomMemoryReportPass(report));
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
    shard.shard.assign(options.shard.begin(), options.shard.end());
    shard.tpPlan = options.tpPlan;
    shard.tpAxis = options.tpAxis;
    shard.sequenceParallel = options.sequenceParallel;
    pm.addPass(createLoomShardInputsPass(shard));
    pm.addPass(createLoomPropagateShardingPass());
    LoomPartitionPassOptions partition;
    partition.reduceScatter = options.zero != 1;
    pm.addPass(createLoomPartitionPass(partition));
    if (options.report) {
      LoomMemoryReportPassOptions report;
      report.parameters = true;
      report.collectives = true;
      pm.addPass(createLoomMemoryReportPass(report));
    }
    LoomBucketAllReducesPassOptions buckets;
    buckets.bucketBytes = options.bucketBytes;
    buckets.overlap = options.overlap;
    if (options.bucketBytes > 0)
      pm.addPass(createLoomBucketAllReducesPass(buckets));
    if (failed(pm.run(*module)))
      return failure();
    if (!options.reportSvg.empty()) {
      StringRef entry = "train_step";
      if (!module->lookupSymbol(entry))
        for (auto func : module->getOps<func::FuncOp>())
          if (func.isPublic() && !func.isExternal()) {
            entry = func.getSymName();
            break;
          }
      if (failed(writeShardingSvg(*module, entry, options.reportSvg)))
        return failure();
    }
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

  if (options.report && phase >= EmitPhase::Obj)
    printCompiledMemory(*module, entries);

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
