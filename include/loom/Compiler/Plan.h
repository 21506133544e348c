//===- Plan.h - loomc --plan: a layout for an ONNX model ---------*- C++ -*-===//
//
// The planner for models loomc compiles: every candidate layout (mesh,
// ZeRO stage, microbatches and schedule, precision, recomputation) is
// compiled to the loom dialect, partitioned as loomc would partition it,
// and its per-rank programs are timed by a simulation built on the ops' cost
// interface and a cluster profile: products at the GEMM rates the profile
// measured for their shapes, other ops by their bytes over the memory
// bandwidth, collectives by the ring formulas over the link, started
// all-reduces overlapping the work until their wait, and pipeline stages
// exchanging their sends and receives in program order (so bubbles come
// out of the simulation, not from a formula). Plans are ranked by the
// predicted step time; the best are compiled further for their memory
// (the compiled step's arguments and temporaries peak, which the runtime
// confirms) and dropped when they do not fit.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_COMPILER_PLAN_H
#define LOOM_COMPILER_PLAN_H

#include "loom/Compiler/Compiler.h"
#include "loom/Planner/Planner.h"

#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace mlir::loom {

/// What `loomc MODEL.onnx --train --plan` asks for (the global batch
/// defaults to the model's batch).
struct PlanOptions : plan::PlanRequest {
  /// Print the table only; compile nothing.
  bool planOnly = false;
};

/// The predicted time of one optimizer step of a partitioned module at the
/// loom level (one call of train_step, or of every pipeline stage's
/// program), and its parts on the slowest rank.
struct StepPrediction {
  double step = 0;
  /// Compute of the slowest program, collectives it waits for (not hidden
  /// behind compute), and time it waits for its pipeline peers.
  double compute = 0, exposedComm = 0, waiting = 0;
  /// Matrix-product FLOPs of the slowest program.
  double flops = 0;
};

/// Simulates one call of the module's training step (train_step, or
/// train_step_stage<k> for each pipeline stage) on `cluster`.
FailureOr<StepPrediction> predictStep(ModuleOp module,
                                      const plan::Cluster &cluster);

/// Searches the layouts of `base`'s model, prints the best, and unless
/// `plan.planOnly` compiles the best one as `base` asks (output path, emit
/// phase). `base` must be a training compilation without a mesh or the
/// choices the planner makes (loomc refuses such flags next to --plan).
LogicalResult planAndCompile(MLIRContext &context,
                             const CompilerOptions &base,
                             const PlanOptions &plan);

} // namespace mlir::loom

#endif // LOOM_COMPILER_PLAN_H
