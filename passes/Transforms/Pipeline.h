//===- Pipeline.h - pipeline schedules and their deadlock check -*- C++ -*-===//
//
// What loom-pipeline builds its stage programs from, shared with the
// deadlock check of hand-written programs (loom-check-p2p) and the
// schedule reports.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_PASSES_TRANSFORMS_PIPELINE_H
#define LOOM_PASSES_TRANSFORMS_PIPELINE_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <optional>
#include <set>

namespace mlir::loom {

/// The stages of the ops that read `param`, directly or through ops for
/// which `isView` holds (batch-independent views of it, such as a
/// transpose); `stageOf` gives an op's stage, or nothing for ops outside
/// the stages.
std::set<int64_t>
stagesReading(Value param,
              function_ref<std::optional<int64_t>(Operation *)> stageOf,
              function_ref<bool(Operation *)> isView);

/// One step of a stage's schedule: the forward or the backward pass of a
/// microbatch, or (zero-bubble) the weight-gradient part of its backward;
/// with the interleaved schedule, of one of the rank's model chunks (the
/// virtual stage chunk * stages + stage).
struct PipelineAction {
  enum Kind { Forward, Backward, Weight } kind;
  int64_t microbatch;
  int64_t chunk = 0;
};

/// The order in which `stage` (of `stages`) runs the forward and backward
/// passes of `microbatches` microbatches under schedule `kind` ("gpipe":
/// all forwards, then all backwards; "1f1b": PipeDream-flush;
/// "zero-bubble": ZB-H1, backward passes split into input and weight
/// gradients; "interleaved-1f1b": Megatron-LM's 1F1B over `chunks` model
/// chunks per stage, which needs at least 2 chunks and microbatches in
/// groups of `stages`). Fails for an unknown kind or unsupported counts.
FailureOr<SmallVector<PipelineAction>>
pipelineSchedule(StringRef kind, int64_t stages, int64_t stage,
                 int64_t microbatches, int64_t chunks = 1);

/// An action of a schedule placed in time: forward passes take 1, backward
/// passes 2 (1 for the input-gradient part and 1 for the weight-gradient
/// part with the zero-bubble schedule), messages nothing.
struct TimedAction {
  PipelineAction action;
  double start, end;
};

/// Every stage's actions of schedule `kind` placed in time as above, each
/// as early as its stage and its dependencies (the previous stage's forward
/// of the microbatch, the next stage's backward) allow; with `chunks` model
/// chunks per stage each pass of a chunk takes 1/chunks of that time.
/// Fails for an unknown kind or a schedule that cannot finish.
FailureOr<SmallVector<SmallVector<TimedAction>>>
simulatePipeline(StringRef kind, int64_t stages, int64_t microbatches,
                 int64_t chunks = 1);

/// The share of stage-time a simulated schedule leaves idle.
double simulatedBubble(ArrayRef<SmallVector<TimedAction>> timeline);

/// Checks that the loom.send / loom.recv ops of `programs` (program i runs
/// on stage i; an op's offset names its peer stage) match up and cannot
/// deadlock: sends never block, a receive waits for its peer's next
/// message to it, which must have its type. Emits an error naming the
/// stages and the operation otherwise.
LogicalResult checkPointToPoint(ArrayRef<func::FuncOp> programs);

} // namespace mlir::loom

#endif // LOOM_PASSES_TRANSFORMS_PIPELINE_H
