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
#include "passes/Transforms/Remat.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"

#include <map>

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

std::optional<int64_t>
mlir::loom::meshAxisSize(const CompilerOptions &options, StringRef axis) {
  for (StringRef part : llvm::split(StringRef(options.mesh), ',')) {
    auto [name, size] = part.split('=');
    int64_t value;
    if (name.trim() == axis && !size.trim().getAsInteger(10, value))
      return value;
  }
  return std::nullopt;
}

std::optional<int64_t>
mlir::loom::pipelineStages(const CompilerOptions &options) {
  return meshAxisSize(options, options.pipelineAxis);
}

/// The memory one rank's process holds for the training step (or the first
/// entry point) once compiled: the tensors the runtime allocates for its
/// arguments and the most its temporaries take at once (loom-buffer-peak).
/// `loom-run train --memory-stats` measures the same quantities.
struct CompiledMemory {
  std::string entry;
  /// Bytes of the arguments by kind (EntryArgument::Kind).
  int64_t arguments[4] = {0, 0, 0, 0};
  int64_t temporaries = 0;
  /// The temporaries alive at their peak, by ONNX node, largest first.
  std::vector<std::pair<int64_t, std::string>> atPeak;

  int64_t total() const {
    return arguments[0] + arguments[1] + arguments[2] + arguments[3] +
           temporaries;
  }
};

static CompiledMemory compiledMemoryOf(ModuleOp llvmModule,
                                       ArrayRef<EntrySignature> entries,
                                       StringRef name = "train_step") {
  CompiledMemory memory;
  if (entries.empty())
    return memory;
  const EntrySignature *entry = &entries.front();
  for (const EntrySignature &e : entries)
    if (e.name == name)
      entry = &e;
  memory.entry = entry->name;
  for (const EntryArgument &arg : entry->arguments) {
    // Run-time hyperparameters are scalars the caller sets, as inputs are.
    EntryArgument::Kind kind = arg.kind == EntryArgument::Kind::Hyperparameter
                                   ? EntryArgument::Kind::Input
                                   : arg.kind;
    memory.arguments[static_cast<int>(kind)] += arg.bytes;
  }
  if (auto peaks = llvmModule->getAttrOfType<DictionaryAttr>("loom.buffer_peak"))
    if (auto peak = peaks.getAs<IntegerAttr>(entry->name))
      memory.temporaries = peak.getInt();
  if (auto contents = llvmModule->getAttrOfType<DictionaryAttr>(
          "loom.buffer_peak_contents"))
    if (auto held = contents.getAs<ArrayAttr>(entry->name))
      for (auto pair : held.getAsRange<ArrayAttr>())
        memory.atPeak.push_back(
            {cast<IntegerAttr>(pair[0]).getInt(),
             cast<StringAttr>(pair[1]).getValue().str()});
  return memory;
}

static void printCompiledMemory(const CompiledMemory &memory) {
  if (memory.entry.empty())
    return;
  llvm::raw_ostream &os = llvm::outs();
  os << "compiled @" << memory.entry
     << " per rank (what loom-run train --memory-stats measures):\n";
  auto line = [&](StringRef what, int64_t value) {
    os << llvm::format("  %-18s %12lld bytes\n", what.str().c_str(),
                       static_cast<long long>(value));
  };
  using Kind = EntryArgument::Kind;
  line("parameters", memory.arguments[static_cast<int>(Kind::Parameter)]);
  line("optimizer state", memory.arguments[static_cast<int>(Kind::State)]);
  line("inputs", memory.arguments[static_cast<int>(Kind::Input)]);
  line("outputs", memory.arguments[static_cast<int>(Kind::Output)]);
  line("temporaries peak", memory.temporaries);
  line("total", memory.total());
  if (!memory.atPeak.empty()) {
    os << "temporaries alive at the peak, by ONNX node (largest "
       << std::min<size_t>(memory.atPeak.size(), 10) << " of "
       << memory.atPeak.size() << "):\n";
    for (auto &[bytes, node] : ArrayRef(memory.atPeak).take_front(10))
      os << llvm::format("  %12lld bytes  %s\n", static_cast<long long>(bytes),
                         node.c_str());
  }
  os.flush();
}

LogicalResult mlir::loom::runPipeline(ModuleOp module, EmitPhase phase,
                                      unsigned optLevel, bool simplify,
                                      const CompilerOptions *options) {
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
  if (options && options->target == "cuda") {
    LoomCudaPipelineOptions cuda;
    cuda.optLevel = optLevel;
    cuda.gpuArchs = options->gpuArchs;
    // --emit=ptx keeps the kernels' PTX text; binaries need ptxas.
    cuda.format = phase == EmitPhase::Ptx ? "isa" : "fatbin";
    if (phase >= EmitPhase::Gpu)
      buildLoomLinalgToGpuPipeline(pm, cuda);
    if (phase >= EmitPhase::Ptx)
      buildLoomGpuToLLVMPipeline(pm, cuda);
  } else if (options && options->target == "cuda-emulated") {
    LoomCudaPipelineOptions cuda;
    cuda.optLevel = optLevel;
    if (phase >= EmitPhase::LLVM)
      buildLoomLinalgToGpuEmulationPipeline(pm, cuda);
  } else if (phase >= EmitPhase::LLVM) {
    buildLoomLinalgToLLVMPipeline(pm, cpu);
  }
  return pm.run(module);
}

/// Partitions `module` for the mesh (when there is one) and lowers it to
/// `phase`: the loom dialect simplified, linalg, or the LLVM dialect. From
/// EmitPhase::Obj, `entries` receives the entry points' signatures and
/// `training` the training configuration. `requested` is the compilation
/// the user asked for (not a --memory-budget candidate): it prints the
/// memory and sharding reports (--report) and draws --report-svg.
static LogicalResult partitionAndLower(ModuleOp module,
                                       const CompilerOptions &options,
                                       EmitPhase phase, bool requested,
                                       SmallVector<EntrySignature> &entries,
                                       DictionaryAttr &training) {
  bool report = requested && options.report;
  if (report && options.mesh.empty()) {
    PassManager pm(module->getName());
    if (failed(applyPassManagerCLOptions(pm)))
      return failure();
    LoomMemoryReportPassOptions report;
    report.parameters = true;
    pm.addPass(createLoomMemoryReportPass(report));
    if (failed(pm.run(module)))
      return failure();
  }

  if (!options.mesh.empty()) {
    PassManager pm(module->getName());
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
    shard.expertAxis = options.expertAxis;
    pm.addPass(createLoomShardInputsPass(shard));
    pm.addPass(createLoomPropagateShardingPass());
    LoomPartitionPassOptions partition;
    partition.reduceScatter = options.zero != 1;
    pm.addPass(createLoomPartitionPass(partition));
    if (options.gradReduceDtype != "fp32") {
      LoomNarrowReductionsPassOptions narrow;
      narrow.axis = options.dataAxis;
      narrow.dtype = options.gradReduceDtype;
      pm.addPass(createLoomNarrowReductionsPass(narrow));
    }
    std::optional<int64_t> stages = pipelineStages(options);
    if (report && !stages) {
      LoomMemoryReportPassOptions report;
      report.parameters = true;
      report.collectives = true;
      pm.addPass(createLoomMemoryReportPass(report));
    }
    if (stages && module.lookupSymbol("train_step")) {
      LoomPipelinePassOptions pipeline;
      pipeline.axis = options.pipelineAxis;
      pipeline.microbatches = options.microbatches;
      pipeline.schedule = options.pipelineSchedule;
      pipeline.virtualStages = options.virtualStages;
      pipeline.report = report;
      pm.addPass(createLoomPipelinePass(pipeline));
    }
    LoomBucketAllReducesPassOptions buckets;
    buckets.bucketBytes = options.bucketBytes;
    buckets.overlap = options.overlap;
    if (options.bucketBytes > 0)
      pm.addPass(createLoomBucketAllReducesPass(buckets));
    if (failed(pm.run(module)))
      return failure();
    if (requested && !options.reportSvg.empty()) {
      StringRef entry = "train_step";
      if (!module.lookupSymbol(entry))
        for (auto func : module.getOps<func::FuncOp>())
          if (func.isPublic() && !func.isExternal()) {
            entry = func.getSymName();
            break;
          }
      if (failed(writeShardingSvg(module, entry, options.reportSvg)))
        return failure();
    }
  }

  // Entry-point signatures (names, parameter values) are read from the loom
  // dialect, before lowering turns tensors into pointers.
  if (phase >= EmitPhase::Obj) {
    if (failed(runPipeline(module, EmitPhase::Loom, options.optLevel)))
      return failure();
    FailureOr<SmallVector<EntrySignature>> collected =
        collectEntrySignatures(module);
    if (failed(collected))
      return failure();
    entries = std::move(*collected);
  }
  // The training configuration goes to the manifest, not through lowering.
  training = module->getAttrOfType<DictionaryAttr>("loom.training");
  if (training && phase >= EmitPhase::Linalg)
    module->removeAttr("loom.training");
  // The loom-level simplification already ran when signatures were read.
  if (failed(runPipeline(module, std::min(phase, EmitPhase::LLVM),
                         options.optLevel,
                         /*simplify=*/phase < EmitPhase::Obj, &options)))
    return failure();
  return success();
}

static LogicalResult runRemat(ModuleOp module, LoomRematPassOptions options) {
  if (options.mode == "layers" && options.layers.empty() &&
      options.selectiveLayers.empty())
    options.mode = "none";
  PassManager pm(module->getName());
  if (failed(applyPassManagerCLOptions(pm)))
    return failure();
  pm.addPass(createLoomRematPass(options));
  return pm.run(module);
}

/// What to recompute so that the compiled training step fits
/// `options.memoryBudget` bytes per rank. The candidates, in order of
/// recomputed FLOPs: recompute the first k layers selectively (cheapest
/// layers first by the cost interface; selective recomputation keeps the
/// products with parameters and costs a few percent of a layer), then, with
/// every layer selective, the first k fully. Each candidate is measured by
/// compiling a copy of the module (loom-buffer-peak's figure, which the
/// runtime confirms), and the first that fits is found by bisection.
static FailureOr<LoomRematPassOptions>
chooseRecomputation(ModuleOp module, const CompilerOptions &options) {
  Location loc = module.getLoc();
  auto train = module.lookupSymbol<func::FuncOp>("train_step");
  assert(train && "called on a module with a training step");
  std::vector<RematLayer> layers = findRematLayers(train);
  std::stable_sort(layers.begin(), layers.end(),
                   [](const RematLayer &a, const RematLayer &b) {
                     return a.flops < b.flops;
                   });
  size_t count = layers.size(), candidates = 2 * count + 1;
  auto candidate = [&](size_t index) {
    LoomRematPassOptions remat;
    remat.mode = "layers";
    for (size_t i = 0; i < count; ++i) {
      if (index > count + i)
        remat.layers.push_back(layers[i].name);
      else if (index > i)
        remat.selectiveLayers.push_back(layers[i].name);
    }
    return remat;
  };
  std::map<size_t, int64_t> measured;
  auto bytesWith = [&](size_t index) -> FailureOr<int64_t> {
    if (auto it = measured.find(index); it != measured.end())
      return it->second;
    OwningOpRef<ModuleOp> copy = module.clone();
    SmallVector<EntrySignature> entries;
    DictionaryAttr training;
    if (failed(runRemat(*copy, candidate(index))) ||
        failed(partitionAndLower(*copy, options, EmitPhase::Bundle,
                                 /*requested=*/false, entries, training)))
      return failure();
    return measured[index] = compiledMemoryOf(*copy, entries).total();
  };
  int64_t budget = options.memoryBudget;
  FailureOr<int64_t> none = bytesWith(0);
  if (failed(none))
    return failure();
  auto say = [&](size_t index) {
    if (!options.report)
      return;
    size_t full = index > count ? index - count : 0;
    llvm::outs() << llvm::format(
        "memory budget %lld bytes per rank: recomputing %zu of %zu layers "
        "fully and %zu selectively gives %lld bytes (%lld without "
        "recomputation)\n",
        static_cast<long long>(budget), full, count,
        std::min(index, count) - full,
        static_cast<long long>(measured[index]),
        static_cast<long long>(*none));
  };
  if (*none <= budget) {
    say(0);
    return candidate(0);
  }
  if (layers.empty())
    return emitError(loc) << "the training step needs " << *none
                          << " bytes per rank, more than --memory-budget "
                          << budget
                          << ", and the ONNX node names show no layers to "
                             "recompute (numbered parts such as /blocks.0/)";
  FailureOr<int64_t> all = bytesWith(candidates - 1);
  if (failed(all))
    return failure();
  if (*all > budget) {
    // Name the least any candidate needs: every layer fully recomputed is
    // not always less than every layer selective.
    if (failed(bytesWith(count)))
      return failure();
    int64_t least = *none;
    for (auto [index, bytes] : measured)
      least = std::min(least, bytes);
    return emitError(loc) << "--memory-budget " << budget
                          << " is below what the training step needs per "
                             "rank: at least "
                          << least << " bytes, recomputing its " << count
                          << " layers (" << *none
                          << " without recomputation)";
  }
  // The first candidate that fits: `high` fits, `low` does not.
  size_t low = 0, high = candidates - 1;
  while (high - low > 1) {
    size_t mid = (low + high) / 2;
    FailureOr<int64_t> bytes = bytesWith(mid);
    if (failed(bytes))
      return failure();
    (*bytes <= budget ? high : low) = mid;
  }
  say(high);
  return candidate(high);
}

/// Everything loomc does to `module` before writing it: mixture-of-experts
/// routing, tensor-parallel projections, precision, pipeline stages, the
/// training step, recomputation, partitioning and lowering to `phase`.
/// `requested` as for partitionAndLower.
static LogicalResult transform(OwningOpRef<ModuleOp> &module,
                               const CompilerOptions &options, EmitPhase phase,
                               bool requested,
                               SmallVector<EntrySignature> &entries,
                               DictionaryAttr &training) {
  Location cmdLoc = UnknownLoc::get(module->getContext());

  // Mixture-of-experts layers get their routing before anything reads their
  // cost or builds their gradient.
  {
    PassManager pm(module.get()->getName());
    if (failed(applyPassManagerCLOptions(pm)))
      return failure();
    if (options.raiseMoe) {
      LoomRaiseMoePassOptions raise;
      raise.report = options.report;
      pm.addPass(createLoomRaiseMoePass(raise));
    }
    LoomMoeRoutingPassOptions routing;
    routing.routing = options.moeRouting;
    routing.capacityFactor = options.capacityFactor;
    routing.auxLoss = options.moeAuxLoss;
    routing.zLoss = options.moeZLoss;
    routing.groups = options.moeGroups;
    routing.report = options.report;
    routing.expertParallel =
        meshAxisSize(options, options.expertAxis).value_or(1);
    pm.addPass(createLoomMoeRoutingPass(routing));
    if (failed(pm.run(*module)))
      return failure();
  }

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

  // Mixed precision on the forward function, before its gradient exists:
  // the gradients of the casts bring parameters' gradients back to fp32.
  if (options.precision != "fp32") {
    PassManager pm(module.get()->getName());
    if (failed(applyPassManagerCLOptions(pm)))
      return failure();
    LoomAutocastPassOptions autocast;
    autocast.precision = options.precision;
    pm.addPass(createLoomAutocastPass(autocast));
    if (options.optLevel > 0)
      pm.addPass(createCanonicalizerPass());
    if (failed(pm.run(*module)))
      return failure();
  }

  // Pipeline parallelism: the forward ops are given their stages before
  // the training step is built, so that every gradient op inherits one.
  if (std::optional<int64_t> stages = pipelineStages(options)) {
    if (!options.train)
      return emitError(cmdLoc) << "pipeline parallelism needs --train";
    if (options.memoryBudget > 0)
      return emitError(cmdLoc)
             << "--memory-budget is not supported with pipeline parallelism "
                "yet; choose --remat yourself";
    PassManager pm(module.get()->getName());
    if (failed(applyPassManagerCLOptions(pm)))
      return failure();
    if (!options.schedulePng.empty() &&
        failed(writeSchedulePng(options.schedulePng, options.pipelineSchedule,
                                *stages, options.microbatches,
                                options.virtualStages, cmdLoc)))
      return failure();
    LoomPipelineStagesPassOptions cut;
    cut.entry = options.train->entry;
    // Interleaved 1F1B: each stage runs virtualStages chunks of the model.
    cut.stages = *stages * options.virtualStages;
    cut.cuts.assign(options.pipelineCuts.begin(), options.pipelineCuts.end());
    cut.report = options.report;
    pm.addPass(createLoomPipelineStagesPass(cut));
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
    pass.runtimeHyperparams = t.runtimeHyperparams;
    pass.accumulate = t.accumulate;
    pass.lossScale = t.lossScale;
    pass.lossScaleInit = t.lossScaleInit;
    pass.lossScaleGrowthInterval = t.lossScaleGrowthInterval;
    pass.freeze.assign(t.freeze.begin(), t.freeze.end());
    PassManager pm(module.get()->getName());
    if (failed(applyPassManagerCLOptions(pm)))
      return failure();
    pm.addPass(createLoomBuildTrainStepPass(pass));
    // bf16 products' gradients return their fp32 accumulators and sum in
    // fp32. Not fp16's: GradScaler's overflow check must see a gradient
    // that overflows fp16 as inf, as PyTorch's fp16 products return it
    // (loom-partition still sums them over ranks in fp32). Not
    // bf16-pure's: its parameters and their gradients are bf16.
    if (options.precision == "bf16")
      pm.addPass(createLoomWidenGradientsPass());
    if (failed(pm.run(*module)))
      return failure();
  }

  // Every training step goes through loom-remat, also without
  // recomputation: it makes layers read their inputs through barriers, so
  // that steps with and without recomputation compute the same bits.
  if (options.train) {
    LoomRematPassOptions remat;
    remat.mode = options.remat;
    remat.report = options.report;
    if (options.memoryBudget > 0) {
      FailureOr<LoomRematPassOptions> chosen =
          chooseRecomputation(*module, options);
      if (failed(chosen))
        return failure();
      remat.mode = "layers";
      remat.layers = chosen->layers;
      remat.selectiveLayers = chosen->selectiveLayers;
    }
    if (failed(runRemat(*module, remat)))
      return failure();
  }

  return partitionAndLower(*module, options, phase, requested, entries,
                           training);
}

/// The compiled memory of each program a training step runs: one per
/// pipeline stage (train_step_stage<k>), else the step's (or first entry's).
static SmallVector<CompiledMemory>
stepMemories(ModuleOp module, ArrayRef<EntrySignature> entries) {
  SmallVector<CompiledMemory> memories;
  for (const EntrySignature &entry : entries)
    if (StringRef(entry.name).starts_with("train_step_stage"))
      memories.push_back(compiledMemoryOf(module, entries, entry.name));
  if (memories.empty())
    memories.push_back(compiledMemoryOf(module, entries));
  return memories;
}

OwningOpRef<ModuleOp> mlir::loom::buildModule(OwningOpRef<ModuleOp> module,
                                              const CompilerOptions &options,
                                              EmitPhase phase,
                                              int64_t *compiledBytes) {
  SmallVector<EntrySignature> entries;
  DictionaryAttr training;
  if (failed(transform(module, options, phase, /*requested=*/false, entries,
                       training)))
    return {};
  if (compiledBytes) {
    // The largest program of the step (each pipeline stage has its own).
    *compiledBytes = 0;
    for (const CompiledMemory &memory : stepMemories(*module, entries))
      *compiledBytes = std::max(*compiledBytes, memory.total());
  }
  return module;
}

OwningOpRef<ModuleOp> mlir::loom::buildModule(MLIRContext &context,
                                              const CompilerOptions &options,
                                              EmitPhase phase,
                                              int64_t *compiledBytes) {
  OwningOpRef<ModuleOp> module = loadModel(context, options);
  if (!module)
    return {};
  return buildModule(std::move(module), options, phase, compiledBytes);
}

LogicalResult mlir::loom::compile(MLIRContext &context,
                                  const CompilerOptions &options) {
  EmitPhase phase = options.emit.value_or(
      StringRef(options.outputPath).ends_with(".loom") ? EmitPhase::Bundle
                                                       : EmitPhase::Loom);
  Location cmdLoc = UnknownLoc::get(&context);
  if (options.target != "cuda" &&
      (phase == EmitPhase::Gpu || phase == EmitPhase::Ptx))
    return emitError(cmdLoc)
           << (phase == EmitPhase::Gpu ? "--emit=gpu" : "--emit=ptx")
           << " needs --target=cuda";
  if (phase >= EmitPhase::Obj && options.outputPath == "-")
    return emitError(cmdLoc)
           << (phase == EmitPhase::Bundle ? "--emit=bundle" : "--emit=obj")
           << " needs an output path (-o)";

  OwningOpRef<ModuleOp> module = loadModel(context, options);
  if (!module)
    return failure();
  SmallVector<EntrySignature> entries;
  DictionaryAttr training;
  if (failed(transform(module, options, phase, /*requested=*/true, entries,
                       training)))
    return failure();

  // With pipeline parallelism, each stage's program.
  if (options.report && phase >= EmitPhase::Obj)
    for (const CompiledMemory &memory : stepMemories(*module, entries))
      printCompiledMemory(memory);

  if (phase == EmitPhase::Bundle)
    return writeBundle(*module, entries, options.optLevel, options.outputPath,
                       training, options.target);

  std::string error;
  auto output = openOutputFile(options.outputPath, &error);
  if (!output)
    return emitError(cmdLoc) << error;
  if (phase == EmitPhase::Obj) {
    if (failed(emitObjectFile(*module, entries, options.optLevel,
                              output->os())))
      return failure();
  } else if (phase == EmitPhase::Ptx) {
    // One PTX text per architecture, each a module ptxas accepts alone.
    module->walk([&](gpu::BinaryOp binary) {
      for (Attribute attr : binary.getObjects()) {
        auto object = cast<gpu::ObjectAttr>(attr);
        std::string chip = "?";
        if (auto nvvm = dyn_cast<NVVM::NVVMTargetAttr>(object.getTarget()))
          chip = nvvm.getChip().str();
        output->os() << "// loomc --emit=ptx: " << binary.getName() << ", "
                     << chip << "\n"
                     << object.getObject().getValue() << "\n";
      }
    });
  } else {
    module->print(output->os());
    output->os() << "\n";
  }
  output->keep();
  return success();
}
