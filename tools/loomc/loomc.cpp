//===- loomc.cpp - Loom's compiler driver ---------------------------------===//
//
// llc-style front end: `loomc MODEL.onnx|MODEL.mlir [--emit=PHASE] [-o OUT]`.
// Parses the command line and calls the compiler library.
//
//===----------------------------------------------------------------------===//

#include "loom/Compiler/Compiler.h"
#include "loom/Compiler/Plan.h"
#include "loom/InitAll.h"
#include "loom/Planner/Planner.h"
#include "loom/Support/Diagnostics.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/WithColor.h"

#include <cmath>

using namespace llvm;

static cl::OptionCategory loomcCategory("loomc options");

static cl::opt<std::string> inputPath(cl::Positional, cl::Optional,
                                      cl::desc("<model.onnx | model.mlir>"),
                                      cl::cat(loomcCategory));

static cl::opt<std::string> outputPath("o", cl::desc("Output file (default: stdout)"),
                                       cl::value_desc("file"), cl::init("-"),
                                       cl::cat(loomcCategory));

static cl::opt<mlir::loom::EmitPhase> emitPhase(
    "emit",
    cl::desc("Phase to stop after (default: bundle when -o ends in .loom, "
             "else loom)"),
    cl::values(clEnumValN(mlir::loom::EmitPhase::Loom, "loom",
                          "the loom dialect, as imported and simplified"),
               clEnumValN(mlir::loom::EmitPhase::Linalg, "linalg",
                          "linalg/tensor/arith/math on tensors"),
               clEnumValN(mlir::loom::EmitPhase::Gpu, "gpu",
                          "--target=cuda: host code launching kernels "
                          "(gpu.launch_func, one gpu.module)"),
               clEnumValN(mlir::loom::EmitPhase::Ptx, "ptx",
                          "--target=cuda: the kernels' PTX, one module per "
                          "--gpu-arch"),
               clEnumValN(mlir::loom::EmitPhase::LLVM, "llvm",
                          "the LLVM dialect (for CUDA: the host's, with the "
                          "kernels as fatbins)"),
               clEnumValN(mlir::loom::EmitPhase::Obj, "obj",
                          "a native object file for this CPU"),
               clEnumValN(mlir::loom::EmitPhase::Bundle, "bundle",
                          "a bundle directory for loom-run and libloomrt")),
    cl::cat(loomcCategory));

static cl::opt<std::string> target(
    "target",
    cl::desc("Device to compile for: cpu (default), or cuda (NVIDIA GPUs: "
             "kernels through NVVM, products through the CUDA engine's "
             "cuBLAS calls; bundles run on libloomrt_cuda), or cuda-emulated "
             "(a CPU bundle of what the CUDA target computes: its placement "
             "of loops in launches, each launch run as loops over its "
             "blocks and threads; checks the CUDA lowering without a GPU)"),
    cl::init("cpu"), cl::cat(loomcCategory));

static cl::list<std::string>
    gpuArchs("gpu-arch",
             cl::desc("--target=cuda: the GPU architectures to compile "
                      "kernels for, comma-separated (default: sm_80,sm_90)"),
             cl::CommaSeparated, cl::value_desc("sm_XY"),
             cl::cat(loomcCategory));

static cl::opt<std::string> precision(
    "precision",
    cl::desc("Arithmetic precision: fp32 (default), bf16 or fp16 (mixed: "
             "matrix products and convolutions, and their gradients, in "
             "bf16/fp16 accumulating in fp32; softmax, norms, losses, "
             "reductions, exp/log and the optimizer in fp32; parameters "
             "and optimizer state stay fp32), or bf16-pure (bf16's policy "
             "with the parameters and their gradients stored in bf16: half "
             "their bytes; the optimizer state stays fp32 and each update "
             "is computed in fp32 and rounded once)"),
    cl::init("fp32"), cl::cat(loomcCategory));

static cl::opt<char> optLevel("O",
                              cl::desc("Optimization level: -O0 keeps the "
                                       "imported IR as is, -O1..-O3 simplify "
                                       "(default -O2)"),
                              cl::Prefix, cl::init('2'), cl::cat(loomcCategory));

static cl::list<std::string>
    inputShapes("input-shape",
                cl::desc("Static shape for a dynamic ONNX input, e.g. "
                         "--input-shape x=4x32 (repeatable)"),
                cl::value_desc("NAME=DIMS"), cl::cat(loomcCategory));

static cl::OptionCategory trainCategory(
    "Training (--train builds train_step and eval_step)");

static cl::opt<bool> train("train",
                           cl::desc("Compile a training step (forward, "
                                    "backward, optimizer) and an eval step"),
                           cl::cat(trainCategory));
static cl::opt<std::string>
    loss("loss",
         cl::desc("Loss to attach to the model's first output (or "
                  "--loss-output): cross-entropy:LABELS or mse:TARGET, where "
                  "LABELS/TARGET names the new input. Default: the model's "
                  "scalar output is the loss"),
         cl::value_desc("KIND:INPUT"), cl::cat(trainCategory));
static cl::opt<std::string>
    lossOutput("loss-output",
               cl::desc("The model output that is the loss (or that --loss "
                        "applies to)"),
               cl::value_desc("NAME"), cl::cat(trainCategory));
static cl::opt<std::string> optimizer("optimizer",
                                      cl::desc("sgd, adam or adamw (default)"),
                                      cl::init("adamw"), cl::cat(trainCategory));
static cl::opt<double> lr("lr", cl::desc("Learning rate (default 1e-3)"),
                          cl::init(1e-3), cl::cat(trainCategory));
static cl::opt<double> momentum("momentum", cl::desc("SGD momentum"),
                                cl::init(0.0), cl::cat(trainCategory));
static cl::opt<bool> nesterov("nesterov", cl::desc("Nesterov momentum (SGD)"),
                              cl::cat(trainCategory));
static cl::opt<double>
    weightDecay("weight-decay",
                cl::desc("Weight decay: L2 for sgd/adam, decoupled for adamw "
                         "(default 0, adamw 0.01)"),
                cl::init(-1.0), cl::cat(trainCategory));
static cl::opt<double> beta1("beta1", cl::desc("Adam beta1 (default 0.9)"),
                             cl::init(0.9), cl::cat(trainCategory));
static cl::opt<double> beta2("beta2", cl::desc("Adam beta2 (default 0.999)"),
                             cl::init(0.999), cl::cat(trainCategory));
static cl::opt<double> adamEps("adam-eps",
                               cl::desc("Adam epsilon (default 1e-8)"),
                               cl::init(1e-8), cl::cat(trainCategory));
static cl::opt<std::string>
    schedule("lr-schedule",
             cl::desc("constant (default), warmup (linear warmup), or cosine "
                      "(warmup, then cosine decay to --min-lr at "
                      "--total-steps)"),
             cl::init("constant"), cl::cat(trainCategory));
static cl::opt<int64_t> warmupSteps("warmup-steps",
                                    cl::desc("Linear warmup steps"),
                                    cl::init(0), cl::cat(trainCategory));
static cl::opt<int64_t> totalSteps("total-steps",
                                   cl::desc("Length of the cosine schedule"),
                                   cl::init(0), cl::cat(trainCategory));
static cl::opt<double> minLr("min-lr",
                             cl::desc("Final learning rate of the cosine "
                                      "schedule"),
                             cl::init(0.0), cl::cat(trainCategory));
static cl::opt<double> clipNorm("clip-grad-norm",
                                cl::desc("Clip gradients to this global L2 "
                                         "norm (default: off)"),
                                cl::init(0.0), cl::cat(trainCategory));

static cl::opt<bool> runtimeHyperparams(
    "runtime-hyperparams",
    cl::desc("Make the learning rate, weight decay, clip norm, momentum, "
             "Adam's betas and epsilon, and the schedule's warmup steps, "
             "total steps and final rate values the training step takes at "
             "run time (loom-run train --lr ..., "
             "loom_session_set_hyperparameter) instead of constants, so one "
             "bundle serves every setting (the options above become its "
             "defaults); SGD then keeps a momentum buffer and clipping and "
             "weight decay are always computed"),
    cl::cat(trainCategory));

static cl::opt<int64_t>
    gradAccumulation("grad-accumulation",
                     cl::desc("Micro-batches per optimizer step: each run "
                              "adds its gradient, every N-th run updates "
                              "with their mean (default 1)"),
                     cl::init(1), cl::cat(trainCategory));

static cl::opt<std::string> lossScale(
    "loss-scale",
    cl::desc("Loss scaling: dynamic (the default with --precision=fp16: "
             "torch.amp.GradScaler's, the scale and its counters in the "
             "optimizer state) or none (the default otherwise)"),
    cl::init(""), cl::cat(trainCategory));
static cl::opt<double>
    lossScaleInit("loss-scale-init",
                  cl::desc("The first dynamic loss scale (default 65536)"),
                  cl::init(65536.0), cl::cat(trainCategory));
static cl::opt<int64_t> lossScaleGrowthInterval(
    "loss-scale-growth-interval",
    cl::desc("Clean steps in a row after which the dynamic loss scale "
             "doubles (default 2000); a step with an inf or NaN gradient is "
             "skipped and halves it"),
    cl::init(2000), cl::cat(trainCategory));

static cl::opt<std::string>
    remat("remat",
          cl::desc("Recompute activations in the backward pass instead of "
                   "keeping them, layer by layer (the layers are read from "
                   "the ONNX node names, such as /blocks.0/): none "
                   "(default), selective (keep each layer's products with "
                   "parameters, recompute the rest: attention scores, "
                   "softmax, dropout, elementwise ops) or full (keep only "
                   "each layer's input; gradient checkpointing)"),
          cl::init("none"), cl::cat(trainCategory));
static cl::opt<std::string> memoryBudget(
    "memory-budget",
    cl::desc("Recompute as little as needed for the compiled training "
             "step to need at most this much memory per rank (parameters, "
             "optimizer state, inputs, outputs and the peak of "
             "temporaries, as --report prints them): layers selectively "
             "first, then fully, cheapest first, e.g. 64MiB, 1.5GB or a "
             "number of bytes"),
    cl::value_desc("SIZE"), cl::cat(trainCategory));

static cl::list<std::string> freezeGlobs(
    "freeze",
    cl::desc("Freeze the parameters whose ONNX name matches GLOB "
             "(repeatable): they keep their values, get no gradient code and "
             "no optimizer state (--report shows the bytes saved); for "
             "fine-tuning, with loom-run train --init-from"),
    cl::value_desc("GLOB"), cl::cat(trainCategory));

static cl::OptionCategory parallelCategory("Parallelism");
static cl::opt<std::string>
    mesh("mesh",
         cl::desc("Device mesh, e.g. dp=4, tp=4, dp=2,tp=2 or dp=2,ep=2: "
                  "the bundle is the program of one rank of a run on that "
                  "many processes (loom-run train --nproc); the batch is "
                  "split over the data axis (and the expert axis), the model "
                  "over the axes --shard and --tp-plan name, mixture-of-"
                  "experts layers' experts over the expert axis"),
         cl::value_desc("AXIS=SIZE,..."), cl::cat(parallelCategory));
static cl::opt<std::string>
    dataAxis("data-axis",
             cl::desc("Mesh axis the batch is split over (default dp)"),
             cl::init("dp"), cl::cat(parallelCategory));

static cl::list<std::string> shardSpecs(
    "shard",
    cl::desc("Shard parameters (or inputs) whose ONNX name matches GLOB: "
             "SPEC lists the mesh axes of every dimension, e.g. "
             "--shard 'h.*.mlp.fc1.weight=[{tp}, {}]' (repeatable; the first "
             "pattern that matches a name wins; the rest of the graph "
             "follows by sharding propagation)"),
    cl::value_desc("GLOB=SPEC"), cl::cat(parallelCategory));
static cl::opt<std::string> shardFile(
    "shard-file",
    cl::desc("A JSON file of shardings: [{\"name\": GLOB, \"sharding\": "
             "\"[{tp}, {}]\" or [[\"tp\"], []]}, ...], read after --shard"),
    cl::value_desc("FILE"), cl::cat(parallelCategory));
static cl::opt<std::string> tpPlan(
    "tp-plan",
    cl::desc("none (default), or auto: the compiler finds Megatron-LM's "
             "tensor-parallel layouts (column- then row-parallel linear "
             "layers, attention split by heads) for the parameters --shard "
             "leaves; --report says what it split and why the rest stays "
             "replicated"),
    cl::init("none"), cl::cat(parallelCategory));
static cl::opt<std::string> reportSvg(
    "report-svg",
    cl::desc("Draw every parameter as a grid of its blocks, each labelled "
             "with the ranks that hold it, to this SVG file"),
    cl::value_desc("FILE"), cl::cat(parallelCategory));
static cl::opt<bool> sequenceParallel(
    "sequence-parallel",
    cl::desc("Megatron-LM's sequence parallelism: the token inputs are also "
             "split along the sequence over the tp axis, so layer norms, "
             "dropout and residual adds run on sequence shards, with an "
             "all-gather before and a reduce-scatter after each "
             "tensor-parallel region instead of its all-reduce"),
    cl::cat(parallelCategory));
static cl::opt<std::string>
    tpAxis("tp-axis",
           cl::desc("Mesh axis tensor parallelism splits over (default tp)"),
           cl::init("tp"), cl::cat(parallelCategory));

static cl::opt<int64_t>
    bucketBytes("bucket-bytes",
                cl::desc("Fuse gradient all-reduces into buckets of up to "
                         "this many bytes (default 4 MiB; 0: one per "
                         "gradient)"),
                cl::init(4 << 20), cl::cat(parallelCategory));

static cl::opt<bool>
    overlap("overlap",
            cl::desc("Overlap gradient all-reduces with the backward pass: "
                     "each bucket starts where its last gradient is produced "
                     "and is awaited at its first use (default true; "
                     "--overlap=false waits at once)"),
            cl::init(true), cl::cat(parallelCategory));
static cl::opt<int64_t>
    zeroStage("zero",
              cl::desc("ZeRO stage over the data axis: 1 shards optimizer "
                       "state, 2 also gradients (reduce_scatter), 3 also "
                       "parameters (all_gather before use); default 0"),
              cl::init(0), cl::cat(parallelCategory));
static cl::opt<std::string> gradReduceDtype(
    "grad-reduce-dtype",
    cl::desc("The format gradients are summed over the data axis in: fp32 "
             "(default), or bf16/fp16 (half the bytes on the wire, each "
             "partial sum rounded; the loss stays fp32)"),
    cl::init("fp32"), cl::cat(parallelCategory));
static cl::OptionCategory pipelineCategory("Pipeline parallelism");
static cl::opt<int64_t> microbatches(
    "microbatches",
    cl::desc("With a pp axis in --mesh: microbatches per step, each of the "
             "model's batch size (the step trains on that many times the "
             "batch, as --grad-accumulation does on one process); default "
             "the number of stages"),
    cl::init(0), cl::cat(pipelineCategory));
static cl::opt<std::string> pipelineSchedule(
    "pipeline-schedule",
    cl::desc("The order of each stage's forward and backward passes: 1f1b "
             "(default; PipeDream-flush, at most pp - stage microbatches in "
             "flight), gpipe (all forwards, then all backwards), "
             "interleaved-1f1b (Megatron-LM's: each stage runs "
             "--virtual-stages chunks of the model, which divides the bubble "
             "by their number; microbatches a multiple of pp) or "
             "zero-bubble (ZB-H1: 1F1B with each backward split into its "
             "input-gradient and weight-gradient parts, the latter filling "
             "the cool-down's waits)"),
    cl::init("1f1b"), cl::cat(pipelineCategory));
static cl::opt<int64_t> virtualStages(
    "virtual-stages",
    cl::desc("With --pipeline-schedule=interleaved-1f1b: model chunks per "
             "stage (default 2); the model is cut into pp x this many "
             "pieces and stage s runs pieces s, s + pp, ..."),
    cl::init(0), cl::cat(pipelineCategory));
static cl::opt<std::string> stagesOption(
    "stages",
    cl::desc("auto (default): cut the forward graph between layers, "
             "balancing the cost interface's FLOPs over the pp stages"),
    cl::init("auto"), cl::cat(pipelineCategory));
static cl::list<std::string> pipelineCuts(
    "pipeline-cuts",
    cl::desc("Cut the forward graph after these ONNX nodes (pp - 1 of them, "
             "comma-separated, in graph order) instead of --stages=auto"),
    cl::CommaSeparated, cl::value_desc("NODE,..."), cl::cat(pipelineCategory));
static cl::opt<std::string> schedulePng(
    "schedule-png",
    cl::desc("Draw the pipeline schedule as a Gantt chart: one row per rank, "
             "each microbatch's forward, backward (and zero-bubble's weight-"
             "gradient) passes in time, idle time grey"),
    cl::value_desc("FILE.png"), cl::cat(pipelineCategory));
static cl::opt<std::string>
    pipelineAxis("pipeline-axis",
                 cl::desc("Mesh axis of the pipeline stages (default pp)"),
                 cl::init("pp"), cl::cat(pipelineCategory));

static cl::OptionCategory moeCategory("Mixture of experts");
static cl::opt<std::string> moeRouting(
    "moe-routing",
    cl::desc("How mixture-of-experts layers (loom.moe) route tokens: model "
             "(default; the layer's own top-k, no token dropped), "
             "token-choice (top-k with a capacity per expert; assignments "
             "over it are dropped, the residual carries the token) or "
             "expert-choice (each expert takes its most probable tokens)"),
    cl::init("model"), cl::cat(moeCategory));
static cl::opt<double> capacityFactor(
    "capacity-factor",
    cl::desc("Slots per expert relative to an even share: "
             "ceil(factor * k * tokens / experts) for token-choice (default "
             "1.25), ceil(factor * tokens / experts) for expert-choice "
             "(default 2)"),
    cl::init(0.0), cl::cat(moeCategory));
static cl::opt<int64_t> moeGroups(
    "moe-groups",
    cl::desc("Route each of N contiguous groups of the batch's tokens on its "
             "own, with the capacity of a group (GShard's groups; default 1, "
             "the whole batch). With N equal to the ranks the batch is split "
             "over (dp x ep), each rank routes its own tokens and expert "
             "parallelism moves only expert buffers, by all-to-all"),
    cl::init(1), cl::cat(moeCategory));
static cl::opt<double> moeAuxLoss(
    "moe-aux-loss",
    cl::desc("Add Switch's load-balancing loss, times this coefficient, to "
             "the training loss (model and token-choice routing)"),
    cl::init(0.0), cl::cat(moeCategory));
static cl::opt<bool> raiseMoe(
    "raise-moe",
    cl::desc("Find mixture-of-experts layers exported densely (a router's "
             "softmax and top-k, one small network per expert, a gated "
             "combine written with masks or gathers) and compute them as "
             "loom.moe layers, so --moe-routing and expert parallelism apply "
             "(default true; --report lists what was raised and what stays "
             "dense, with why)"),
    cl::init(true), cl::cat(moeCategory));
static cl::opt<std::string> expertAxis(
    "expert-axis",
    cl::desc("Mesh axis expert parallelism splits mixture-of-experts layers' "
             "experts over (default ep): with --mesh dp=2,ep=2 each rank "
             "holds half the experts, the batch is split over dp and ep, "
             "and tokens reach their experts' ranks by reduce-scatter"),
    cl::init("ep"), cl::cat(moeCategory));
static cl::opt<double> moeZLoss(
    "moe-z-loss",
    cl::desc("Add the router z-loss (mean squared logsumexp of the router "
             "logits), times this coefficient, to the training loss"),
    cl::init(0.0), cl::cat(moeCategory));

static cl::opt<bool>
    memoryReport("report",
                 cl::desc("Print the bytes one rank holds for train_step "
                          "(parameters, gradients, optimizer state, peak "
                          "activations), every parameter's sharding and "
                          "tensor-parallel plan, the collectives of one "
                          "step with their bytes, and, when compiling to a "
                          "bundle or object, the compiled step's memory: "
                          "its arguments and the peak of its temporaries, "
                          "which loom-run train --memory-stats measures"),
                 cl::cat(parallelCategory));

static cl::OptionCategory planCategory(
    "Planner (auto-parallel: mesh, ZeRO, microbatches, schedule, precision "
    "and recompute chosen from a cost model)");

static cl::opt<bool> planFlag(
    "plan",
    cl::desc("With --train and --cluster: choose the mesh (dp, tp, pp), ZeRO "
             "stage, microbatch size and count, pipeline schedule, precision "
             "and recomputation for the model by compiling every candidate "
             "and simulating its per-rank programs on the cluster profile "
             "(GEMM rates by shape, memory bandwidth, collective latency and "
             "bandwidth; loom-run calibrate measures this machine's); prints "
             "the best plans with predicted step time and memory per rank, "
             "then compiles the best"),
    cl::cat(planCategory));
static cl::opt<bool> planOnly(
    "plan-only",
    cl::desc("With --plan: print the table of plans and compile nothing"),
    cl::cat(planCategory));

static cl::opt<std::string> planSimulate(
    "plan-simulate",
    cl::desc("Plan a transformer described by its shape in this JSON file "
             "({\"layers\", \"hidden\", \"heads\", \"seq_len\", "
             "\"vocab\"}, optional \"ffn\", \"experts\", \"top_k\", "
             "\"moe_every\") on --cluster: prints the best plans with "
             "predicted step time, MFU and memory per device; no model "
             "file needed, nothing compiled"),
    cl::value_desc("model.json"), cl::cat(planCategory));

static cl::opt<std::string> clusterPath(
    "cluster",
    cl::desc("The cluster to plan for: devices (peak FLOP/s per precision, "
             "memory, bandwidth), devices per node, nodes and their links "
             "(see examples/clusters/)"),
    cl::value_desc("cluster.json"), cl::cat(planCategory));

static cl::opt<int64_t> globalBatch(
    "global-batch",
    cl::desc("Sequences (samples) per training step (with --plan: default "
             "the model's batch)"),
    cl::init(0), cl::cat(planCategory));

static cl::opt<int64_t> planDevices(
    "plan-devices",
    cl::desc("Devices to plan for (default: every device of the cluster)"),
    cl::init(0), cl::cat(planCategory));

static cl::opt<std::string> planFix(
    "plan-fix",
    cl::desc("Choices the planner must keep, key=value,...: dp, tp, pp, ep, "
             "microbatch (sequences), zero, schedule, precision, remat, "
             "sequence_parallel, overlap_grad_reduce, grad_reduce_dtype"),
    cl::value_desc("key=value,..."), cl::cat(planCategory));

static cl::opt<int64_t> planTop("plan-top",
                                cl::desc("Plans to print (default 10)"),
                                cl::init(10), cl::cat(planCategory));

static cl::opt<std::string>
    planJson("plan-json", cl::desc("Also write the printed plans as JSON"),
             cl::value_desc("file"), cl::cat(planCategory));

/// A size in bytes: a positive number with an optional unit, B, KB, MB,
/// GB (powers of 1000) or KiB, MiB, GiB (powers of 1024).
static std::optional<int64_t> parseByteSize(llvm::StringRef text) {
  llvm::StringRef number = text.take_while(
      [](char c) { return llvm::isDigit(c) || c == '.'; });
  llvm::StringRef unit = text.drop_front(number.size()).trim();
  double value;
  if (number.empty() || number.getAsDouble(value) || value <= 0)
    return std::nullopt;
  static const std::pair<const char *, double> units[] = {
      {"", 1},          {"b", 1},
      {"kb", 1e3},      {"mb", 1e6},
      {"gb", 1e9},      {"kib", 1024.0},
      {"mib", 1048576.0}, {"gib", 1073741824.0}};
  for (auto [name, scale] : units)
    if (unit.equals_insensitive(name))
      return static_cast<int64_t>(std::llround(value * scale));
  return std::nullopt;
}

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  mlir::registerAsmPrinterCLOptions();
  mlir::registerMLIRContextCLOptions();
  mlir::registerPassManagerCLOptions();
  cl::ParseCommandLineOptions(argc, argv,
                              "loomc: compiles ONNX models for training with "
                              "Loom\n");

  // The planner's options both planning commands take.
  auto planRequest = [](mlir::loom::plan::PlanRequest &request) {
    request.clusterPath = clusterPath;
    request.fix = planFix;
    request.globalBatch = globalBatch;
    request.devices = planDevices;
    request.top = planTop;
    request.jsonPath = planJson;
  };
  if (planFlag && !planSimulate.empty()) {
    WithColor::error(errs(), "loomc")
        << "--plan plans an ONNX model and --plan-simulate a described "
           "transformer: give one of them\n";
    return 1;
  }
  if (!planSimulate.empty()) {
    mlir::loom::plan::SimulateOptions plan;
    planRequest(plan);
    plan.modelPath = planSimulate;
    if (clusterPath.empty()) {
      WithColor::error(errs(), "loomc") << "--plan-simulate needs --cluster\n";
      return 1;
    }
    if (llvm::Error e = mlir::loom::plan::simulate(plan, outs())) {
      outs().flush();
      WithColor::error(errs(), "loomc") << toString(std::move(e)) << "\n";
      return 1;
    }
    return 0;
  }
  if (planOnly && !planFlag) {
    WithColor::error(errs(), "loomc") << "--plan-only needs --plan\n";
    return 1;
  }
  if (planFlag) {
    if (!train || clusterPath.empty()) {
      WithColor::error(errs(), "loomc")
          << "--plan chooses the layout of a training step for a cluster: "
             "it needs --train and --cluster\n";
      return 1;
    }
    // What the planner chooses may not also be given; --plan-fix keeps a
    // choice.
    for (cl::Option *chosen :
         std::initializer_list<cl::Option *>{
             &mesh, &zeroStage, &tpPlan, &precision, &remat, &microbatches,
             &pipelineSchedule, &virtualStages, &gradAccumulation,
             &sequenceParallel, &memoryBudget})
      if (chosen->getNumOccurrences()) {
        WithColor::error(errs(), "loomc")
            << "--plan chooses --" << chosen->ArgStr
            << "; leave it out (or keep a choice with --plan-fix, e.g. "
               "--plan-fix tp=2,precision=fp32)\n";
        return 1;
      }
  }
  if (inputPath.empty()) {
    WithColor::error(errs(), "loomc")
        << "no model given (loomc MODEL.onnx|MODEL.mlir, or --plan-simulate "
           "MODEL.json --cluster CLUSTER.json)\n";
    return 1;
  }

  mlir::loom::CompilerOptions options;
  options.inputPath = inputPath;
  options.outputPath = outputPath;
  if (emitPhase.getNumOccurrences())
    options.emit = emitPhase;
  if (optLevel < '0' || optLevel > '3') {
    WithColor::error(errs(), "loomc") << "invalid optimization level -O"
                                      << optLevel << " (expected 0-3)\n";
    return 1;
  }
  options.optLevel = optLevel - '0';
  if (target != "cpu" && target != "cuda" && target != "cuda-emulated") {
    WithColor::error(errs(), "loomc")
        << "target \"" << target
        << "\" is not supported (supported: cpu, cuda, cuda-emulated)\n";
    return 1;
  }
  options.target = target;
  if (!gpuArchs.empty() && target != "cuda") {
    WithColor::error(errs(), "loomc") << "--gpu-arch needs --target=cuda\n";
    return 1;
  }
  for (const std::string &arch : gpuArchs) {
    unsigned version = 0;
    if (!StringRef(arch).starts_with("sm_") ||
        StringRef(arch).drop_front(3).getAsInteger(10, version) ||
        version < 70) {
      WithColor::error(errs(), "loomc")
          << "--gpu-arch: \"" << arch
          << "\" is not a CUDA architecture Loom compiles for (sm_70 and "
             "up, as sm_80 or sm_90)\n";
      return 1;
    }
    options.gpuArchs.push_back(arch);
  }
  for (const std::string &spec : inputShapes) {
    std::string error = mlir::loom::parseInputShapeOption(spec, options.import);
    if (!error.empty()) {
      WithColor::error(errs(), "loomc") << error << "\n";
      return 1;
    }
  }

  bool trainingFlag = false;
  for (auto &entry : cl::getRegisteredOptions()) {
    cl::Option *opt = entry.second;
    if (opt != &train && opt->getNumOccurrences() > 0 &&
        llvm::is_contained(opt->Categories, &trainCategory))
      trainingFlag = true;
  }
  if (trainingFlag && !train) {
    WithColor::error(errs(), "loomc")
        << "training options need --train\n";
    return 1;
  }
  if (train) {
    mlir::loom::TrainOptions t;
    t.loss = loss;
    t.lossOutput = lossOutput;
    t.optimizer = optimizer;
    t.lr = lr;
    t.momentum = momentum;
    t.nesterov = nesterov;
    t.weightDecay = weightDecay;
    t.beta1 = beta1;
    t.beta2 = beta2;
    t.epsilon = adamEps;
    t.schedule = schedule;
    t.warmupSteps = warmupSteps;
    t.freeze.assign(freezeGlobs.begin(), freezeGlobs.end());
    t.totalSteps = totalSteps;
    t.minLr = minLr;
    t.clipNorm = clipNorm;
    t.runtimeHyperparams = runtimeHyperparams;
    t.accumulate = gradAccumulation;
    t.lossScale = !lossScale.empty() ? std::string(lossScale)
                  : precision == "fp16" ? "dynamic"
                                        : "none";
    if (t.lossScale != "none" && t.lossScale != "dynamic") {
      WithColor::error(errs(), "loomc")
          << "--loss-scale must be dynamic or none, got \"" << lossScale
          << "\"\n";
      return 1;
    }
    t.lossScaleInit = lossScaleInit;
    t.lossScaleGrowthInterval = lossScaleGrowthInterval;
    options.train = t;
  }
  if (remat != "none" && remat != "selective" && remat != "full") {
    WithColor::error(errs(), "loomc")
        << "--remat must be none, selective or full, got \"" << remat
        << "\"\n";
    return 1;
  }
  if (remat != "none" && !memoryBudget.empty()) {
    WithColor::error(errs(), "loomc")
        << "--remat and --memory-budget exclude each other: the budget "
           "chooses what to recompute\n";
    return 1;
  }
  options.remat = remat;
  if (precision != "fp32" && precision != "bf16" && precision != "fp16" &&
      precision != "bf16-pure") {
    WithColor::error(errs(), "loomc")
        << "--precision must be fp32, bf16, bf16-pure or fp16, got \""
        << precision << "\"\n";
    return 1;
  }
  options.precision = precision;
  if (!memoryBudget.empty()) {
    std::optional<int64_t> bytes = parseByteSize(memoryBudget);
    if (!bytes) {
      WithColor::error(errs(), "loomc")
          << "--memory-budget takes a size such as 64MiB, 1.5GB or 1000000, "
             "got \""
          << memoryBudget << "\"\n";
      return 1;
    }
    options.memoryBudget = *bytes;
  }

  options.mesh = mesh;
  options.shard.assign(shardSpecs.begin(), shardSpecs.end());
  if (!shardFile.empty()) {
    std::string error = mlir::loom::readShardFile(shardFile, options.shard);
    if (!error.empty()) {
      WithColor::error(errs(), "loomc") << error << "\n";
      return 1;
    }
  }
  if (tpPlan != "none" && tpPlan != "auto") {
    WithColor::error(errs(), "loomc")
        << "--tp-plan must be none or auto, got \"" << tpPlan << "\"\n";
    return 1;
  }
  options.tpPlan = tpPlan;
  options.tpAxis = tpAxis;
  options.reportSvg = reportSvg;
  options.sequenceParallel = sequenceParallel;
  if (sequenceParallel && mesh.empty()) {
    WithColor::error(errs(), "loomc") << "--sequence-parallel needs --mesh\n";
    return 1;
  }
  if (!reportSvg.empty() && mesh.empty()) {
    WithColor::error(errs(), "loomc") << "--report-svg needs --mesh\n";
    return 1;
  }
  if ((!options.shard.empty() || tpPlan == "auto") && mesh.empty()) {
    WithColor::error(errs(), "loomc")
        << (tpPlan == "auto" ? "--tp-plan" : "--shard")
        << " needs --mesh (e.g. --mesh tp=2)\n";
    return 1;
  }
  options.dataAxis = dataAxis;
  options.expertAxis = expertAxis;
  options.raiseMoe = raiseMoe;
  if (std::optional<int64_t> ep =
          mlir::loom::meshAxisSize(options, expertAxis)) {
    if (!train) {
      WithColor::error(errs(), "loomc")
          << "expert parallelism (--mesh " << expertAxis.getValue()
          << "=N) splits the experts of the training step; add --train\n";
      return 1;
    }
    if (mlir::loom::meshAxisSize(options, pipelineAxis)) {
      WithColor::error(errs(), "loomc")
          << "expert parallelism does not combine with pipeline stages yet "
             "(--mesh has both " << expertAxis.getValue() << " and "
          << pipelineAxis.getValue() << ")\n";
      return 1;
    }
  }
  options.bucketBytes = bucketBytes;
  options.zero = zeroStage;
  options.overlap = overlap;
  options.report = memoryReport;
  if (zeroStage && mesh.empty()) {
    WithColor::error(errs(), "loomc") << "--zero needs --mesh\n";
    return 1;
  }
  if (gradReduceDtype != "fp32" && gradReduceDtype != "bf16" &&
      gradReduceDtype != "fp16") {
    WithColor::error(errs(), "loomc")
        << "--grad-reduce-dtype must be fp32, bf16 or fp16, got \""
        << gradReduceDtype << "\"\n";
    return 1;
  }
  if (gradReduceDtype != "fp32" && mesh.empty() && !planFlag) {
    WithColor::error(errs(), "loomc") << "--grad-reduce-dtype needs --mesh\n";
    return 1;
  }
  options.gradReduceDtype = gradReduceDtype;
  {
    // Pipeline parallelism when the mesh has the pipeline axis.
    options.pipelineAxis = pipelineAxis;
    std::optional<int64_t> stages = mlir::loom::pipelineStages(options);
    bool pipelineFlags = microbatches != 0 || !pipelineCuts.empty() ||
                         !schedulePng.empty() ||
                         pipelineSchedule.getNumOccurrences() ||
                         virtualStages.getNumOccurrences() ||
                         stagesOption.getNumOccurrences();
    if (pipelineFlags && !stages) {
      WithColor::error(errs(), "loomc")
          << "--microbatches, --pipeline-schedule, --virtual-stages, "
             "--stages, --pipeline-cuts and --schedule-png need a pipeline "
             "axis in --mesh (e.g. --mesh "
          << pipelineAxis.getValue() << "=2)\n";
      return 1;
    }
    if (stages && !train) {
      WithColor::error(errs(), "loomc")
          << "pipeline parallelism (--mesh " << pipelineAxis.getValue()
          << "=N) pipelines the training step; add --train\n";
      return 1;
    }
    if (stages && gradAccumulation > 1) {
      WithColor::error(errs(), "loomc")
          << "with pipeline parallelism, the step accumulates the gradients "
             "of its microbatches: use --microbatches instead of "
             "--grad-accumulation\n";
      return 1;
    }
    if (stagesOption != "auto") {
      WithColor::error(errs(), "loomc")
          << "--stages must be auto (or name the cuts with --pipeline-cuts), "
             "got \"" << stagesOption.getValue() << "\"\n";
      return 1;
    }
    if (pipelineSchedule != "1f1b" && pipelineSchedule != "gpipe" &&
        pipelineSchedule != "zero-bubble" &&
        pipelineSchedule != "interleaved-1f1b") {
      WithColor::error(errs(), "loomc")
          << "--pipeline-schedule must be 1f1b, gpipe, interleaved-1f1b or "
             "zero-bubble, got \""
          << pipelineSchedule.getValue() << "\"\n";
      return 1;
    }
    bool interleaved = pipelineSchedule == "interleaved-1f1b";
    if (virtualStages.getNumOccurrences() &&
        (!interleaved || virtualStages < 2)) {
      WithColor::error(errs(), "loomc")
          << (interleaved ? "--virtual-stages must be at least 2, got " +
                                std::to_string(virtualStages)
                          : std::string("--virtual-stages needs "
                                        "--pipeline-schedule=interleaved-1f1b"))
          << "\n";
      return 1;
    }
    options.virtualStages =
        interleaved ? (virtualStages > 0 ? (int64_t)virtualStages : 2) : 1;
    if (microbatches < 0) {
      WithColor::error(errs(), "loomc")
          << "--microbatches must be positive, got " << microbatches << "\n";
      return 1;
    }
    options.pipelineSchedule = pipelineSchedule;
    options.pipelineCuts.assign(pipelineCuts.begin(), pipelineCuts.end());
    options.schedulePng = schedulePng;
    options.microbatches =
        microbatches > 0 ? (int64_t)microbatches : stages.value_or(1);
  }

  if (capacityFactor.getNumOccurrences() && !(capacityFactor > 0)) {
    WithColor::error(errs(), "loomc")
        << "--capacity-factor must be positive, got " << capacityFactor
        << "\n";
    return 1;
  }
  options.moeRouting = moeRouting;
  options.moeGroups = moeGroups;
  options.capacityFactor = capacityFactor;
  options.moeAuxLoss = moeAuxLoss;
  options.moeZLoss = moeZLoss;

  mlir::DialectRegistry registry;
  mlir::loom::registerAllDialects(registry);
  mlir::MLIRContext context(registry);
  context.loadAllAvailableDialects();
  // Errors name the ONNX node; a dump of the op adds noise, not information.
  context.printOpOnDiagnostic(false);
  mlir::loom::ToolDiagnosticHandler diagnostics(&context, errs());

  if (planFlag) {
    mlir::loom::PlanOptions plan;
    planRequest(plan);
    plan.planOnly = planOnly;
    if (failed(mlir::loom::planAndCompile(context, options, plan)))
      return 1;
    return 0;
  }
  if (failed(mlir::loom::compile(context, options)))
    return 1;
  return 0;
}
