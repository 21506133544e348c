//===- Compiler.h - the library behind loomc --------------------*- C++ -*-===//
//
// Loads a model (ONNX, or MLIR in the loom dialect), runs the compilation
// pipeline up to the requested phase and writes the result. loomc is a thin
// command-line front end over this.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_COMPILER_COMPILER_H
#define LOOM_COMPILER_COMPILER_H

#include "loom/Import/OnnxImporter.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Support/LLVM.h"

#include <optional>
#include <string>

namespace mlir::loom {

/// The phases `--emit` can stop after, in pipeline order.
enum class EmitPhase {
  /// The imported (and, from -O1, canonicalized) loom dialect.
  Loom,
  /// linalg, tensor, arith and math on tensors (loom-to-linalg-pipeline).
  Linalg,
  /// CUDA only: bufferized host code launching kernels of one gpu.module
  /// (loom-linalg-to-gpu-pipeline).
  Gpu,
  /// CUDA only: the kernels' PTX, one text per architecture.
  Ptx,
  /// The LLVM dialect for CPUs (loom-cpu-pipeline), or for CUDA the host's
  /// with the kernels' binaries (loom-cuda-pipeline).
  LLVM,
  /// A native object file for this machine's CPU.
  Obj,
  /// A bundle directory: shared library, parameters, manifest.
  Bundle,
};

/// What `loomc --train` passes to `loom-build-train-step` (see its
/// description for the semantics of each field).
struct TrainOptions {
  std::string entry;
  std::string loss;
  std::string lossOutput;
  std::string optimizer = "adamw";
  double lr = 1e-3;
  double momentum = 0.0;
  bool nesterov = false;
  /// Negative: the optimizer's default (0 for sgd/adam, 0.01 for adamw).
  double weightDecay = -1.0;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double epsilon = 1e-8;
  std::string schedule = "constant";
  int64_t warmupSteps = 0;
  int64_t totalSteps = 0;
  double minLr = 0.0;
  double clipNorm = 0.0;
  /// The optimizer's and schedule's values as inputs the runtime sets.
  bool runtimeHyperparams = false;
  int64_t accumulate = 1;
  /// "none" or "dynamic" (torch.amp.GradScaler's loss scaling).
  std::string lossScale = "none";
  double lossScaleInit = 65536.0;
  int64_t lossScaleGrowthInterval = 2000;
  /// Parameters matching these globs are frozen: no gradient code, no
  /// optimizer state.
  std::vector<std::string> freeze;
};

struct CompilerOptions {
  std::string inputPath;
  /// "-" for stdout (text phases only).
  std::string outputPath = "-";
  /// When unset: a bundle if the output path ends in `.loom`, else the loom
  /// dialect.
  std::optional<EmitPhase> emit;
  /// 0 keeps the imported IR as is and lowers op by op; 1 and above
  /// canonicalize, fuse and optimize.
  unsigned optLevel = 2;
  /// "cpu", or "cuda": kernels for NVIDIA GPUs, launched by the host code.
  std::string target = "cpu";
  /// The CUDA target's architectures (empty: sm_80 and sm_90).
  std::vector<std::string> gpuArchs;
  OnnxImportOptions import;
  /// Set: build `train_step` and `eval_step` from the forward function.
  std::optional<TrainOptions> train;
  /// The device mesh ("dp=4", "dp=2,tp=2", "tp=4"; empty: one device) and
  /// the axis the batch of every data input is split over (when the mesh
  /// has it).
  std::string mesh;
  std::string dataAxis = "dp";
  /// Shardings of parameters and inputs, `NAME_GLOB=[{axes}, ...]` each
  /// (loom-shard-inputs' `shard`).
  std::vector<std::string> shard;
  /// "auto": Megatron's tensor-parallel layouts over `tpAxis` for the
  /// parameters `shard` leaves; "none": only `shard`'s.
  std::string tpPlan = "none";
  std::string tpAxis = "tp";
  /// Megatron-LM's sequence parallelism: token inputs also split along the
  /// sequence over `tpAxis`.
  bool sequenceParallel = false;
  /// Gradient all-reduces are fused into buckets of up to this many bytes
  /// (0: one collective per gradient).
  int64_t bucketBytes = 4 << 20;
  /// Start each bucket where its last gradient is produced and wait for it
  /// at its first use, overlapping communication with the backward pass.
  bool overlap = true;
  /// ZeRO stage (0-3) over the data axis.
  int64_t zero = 0;
  /// "fp32", or "bf16"/"fp16": sums over the data axis in that format
  /// (loom-narrow-reductions).
  std::string gradReduceDtype = "fp32";
  /// "fp32", or "bf16"/"fp16": mixed precision by loom-autocast's op policy
  /// (products in the low precision, parameters and optimizer in fp32).
  std::string precision = "fp32";
  /// Recompute layers' activations in the backward pass (loom-remat) of a
  /// training step: "none", "selective" or "full" (every layer).
  std::string remat = "none";
  /// When positive, with `train`: recompute as little as makes the compiled
  /// training step need at most this many bytes per rank (arguments and
  /// temporaries' peak, as `report` prints them).
  int64_t memoryBudget = 0;
  /// Print per-rank memory (parameters, gradients, optimizer state, peak
  /// activations) of the training step, every parameter's sharding and the
  /// collectives of one step; from EmitPhase::Obj, also the compiled step's
  /// arguments and the peak of its temporaries (loom-buffer-peak).
  bool report = false;
  /// Draw every parameter's blocks and the ranks holding them to this SVG
  /// file (empty: none).
  std::string reportSvg;
  /// Pipeline parallelism over the mesh axis `pipelineAxis` (when the mesh
  /// has it): `microbatches` per step in the order of `pipelineSchedule`
  /// (gpipe, 1f1b, interleaved-1f1b with `virtualStages` model chunks per
  /// stage, zero-bubble), the forward graph cut after the ONNX nodes
  /// `pipelineCuts` or, without them, balanced by the cost interface.
  std::string pipelineAxis = "pp";
  int64_t microbatches = 1;
  std::string pipelineSchedule = "1f1b";
  int64_t virtualStages = 1;
  std::vector<std::string> pipelineCuts;
  /// Draw the schedule as a Gantt chart to this PNG file (empty: none).
  std::string schedulePng;
  /// Mixture-of-experts layers (loom-moe-routing): "model", "token-choice"
  /// or "expert-choice"; capacity factor (0: the routing's default); the
  /// coefficients of the load-balancing loss and the router z-loss.
  std::string moeRouting = "model";
  /// Turn dense mixture-of-experts exports into loom.moe (loom-raise-moe).
  bool raiseMoe = true;
  /// Expert parallelism over this mesh axis (when the mesh has it): each
  /// rank holds experts / size of every layer's experts, and the batch is
  /// split over it as over the data axis.
  std::string expertAxis = "ep";
  double capacityFactor = 0;
  /// Routing groups of the capacity routings (1: the whole batch).
  int64_t moeGroups = 1;
  double moeAuxLoss = 0;
  double moeZLoss = 0;
};

/// Writes an SVG picture of how `entry`'s parameters are split over the
/// module's mesh: a grid of blocks per parameter, each labelled with the
/// ranks that hold it (`loomc --report-svg`).
LogicalResult writeShardingSvg(ModuleOp module, llvm::StringRef entry,
                               llvm::StringRef path);

/// Reads a `--shard-file`: a JSON array of {"name": GLOB, "sharding": SPEC},
/// where SPEC is "[{tp}, {}]" or [["tp"], []], appending `GLOB=SPEC` to
/// `specs` in order. Returns an error message naming the file and entry, or
/// "" on success.
/// The size of mesh axis `axis` in `options.mesh`, if the mesh has it.
std::optional<int64_t> meshAxisSize(const CompilerOptions &options,
                                    llvm::StringRef axis);

/// The number of pipeline stages: the size of `options.pipelineAxis` in
/// `options.mesh`, if the mesh has that axis.
std::optional<int64_t> pipelineStages(const CompilerOptions &options);

/// Draws `kind`'s schedule of `microbatches` on `stages` stages as a Gantt
/// chart (one row per rank, forward, backward and weight-gradient passes
/// by microbatch, idle time grey) to the PNG file `path`.
LogicalResult writeSchedulePng(llvm::StringRef path, llvm::StringRef kind,
                               int64_t stages, int64_t microbatches,
                               int64_t chunks, Location loc);

std::string readShardFile(llvm::StringRef path, std::vector<std::string> &specs);

/// Loads `options.inputPath`: `.mlir` files are parsed, anything else is
/// imported as ONNX. Diagnostics go to the context's handler.
OwningOpRef<ModuleOp> loadModel(MLIRContext &context,
                                const CompilerOptions &options);

/// Runs the pipeline for `phase` on `module` (with the pass-manager options
/// given on the command line, such as --mlir-print-ir-after-all). With
/// `simplify` (and -O1 and up) the loom dialect is canonicalized first.
/// `options` (when given) chooses the target: past linalg, CUDA's pipeline
/// when its target is "cuda".
LogicalResult runPipeline(ModuleOp module, EmitPhase phase, unsigned optLevel,
                          bool simplify = true,
                          const CompilerOptions *options = nullptr);

/// Compiles a loaded model (loadModel's result, or a clone of it) to
/// `phase` as loomc would, without its reports (for the planner, which
/// compiles candidates). From EmitPhase::Obj on, `compiledBytes` (when
/// given) receives what the compiled step needs per rank: its arguments and
/// the peak of its temporaries (the largest stage's, with pipeline stages),
/// as `--report` prints it. Returns null after reporting an error.
OwningOpRef<ModuleOp> buildModule(OwningOpRef<ModuleOp> module,
                                  const CompilerOptions &options,
                                  EmitPhase phase,
                                  int64_t *compiledBytes = nullptr);
/// The same, loading the model first.
OwningOpRef<ModuleOp> buildModule(MLIRContext &context,
                                  const CompilerOptions &options,
                                  EmitPhase phase,
                                  int64_t *compiledBytes = nullptr);

/// The whole of loomc: load, lower to the requested phase, write the output.
LogicalResult compile(MLIRContext &context, const CompilerOptions &options);

} // namespace mlir::loom

#endif // LOOM_COMPILER_COMPILER_H
