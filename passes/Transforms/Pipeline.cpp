//===- Pipeline.cpp - pipeline stages, microbatch schedules, send/recv ----===//
//
// `loom-pipeline`: turns the (partitioned) training step of one microbatch
// into one program per pipeline stage that trains on `microbatches` of them
// per step in the order of a schedule (GPipe, 1F1B, interleaved 1F1B over
// several model chunks per stage, or zero-bubble), moving activations and
// their gradients between stages with loom.send / loom.recv, summing the
// microbatches' gradients and running the optimizer once. Every emitted
// order of point-to-point operations is checked not to deadlock.
// `loom-check-p2p` runs the same check on hand-written stage programs.
// See Passes.td.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/Transforms/Pipeline.h"

#include "dialects/Loom/LoomDialect.h"
#include "dialects/Loom/LoomOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/Format.h"

#include <deque>
#include <map>
#include <tuple>

namespace mlir::loom {
#define GEN_PASS_DEF_LOOMPIPELINEPASS
#define GEN_PASS_DEF_LOOMCHECKP2PPASS
#include "passes/Transforms/Passes.h.inc"

std::set<int64_t>
stagesReading(Value param,
              function_ref<std::optional<int64_t>(Operation *)> stageOf,
              function_ref<bool(Operation *)> isView) {
  std::set<int64_t> stages;
  SmallVector<Value> work{param};
  llvm::DenseSet<Value> seen{param};
  while (!work.empty()) {
    Value v = work.pop_back_val();
    for (Operation *user : v.getUsers()) {
      if (isView(user)) {
        for (Value r : user->getResults())
          if (seen.insert(r).second)
            work.push_back(r);
      } else if (std::optional<int64_t> stage = stageOf(user)) {
        stages.insert(*stage);
      }
    }
  }
  return stages;
}

//===----------------------------------------------------------------------===//
// Schedules
//===----------------------------------------------------------------------===//

FailureOr<SmallVector<PipelineAction>>
pipelineSchedule(StringRef kind, int64_t stages, int64_t stage,
                 int64_t microbatches, int64_t chunks) {
  SmallVector<PipelineAction> actions;
  if (kind == "interleaved-1f1b") {
    // Megatron-LM's interleaved 1F1B (Narayanan et al., 2021): the stage
    // runs chunks c * stages + stage of the model. Its k-th forward pass
    // takes chunk (k / stages) % chunks of microbatch
    // (k / (stages * chunks)) * stages + k % stages, so each group of
    // `stages` microbatches goes through one chunk after the other; the
    // k-th backward pass takes the chunks in reverse. After a warmup of
    // forwards (all of them when there are as many microbatches as
    // stages), forwards and backwards alternate.
    if (chunks < 2 || microbatches % stages != 0)
      return failure();
    int64_t total = microbatches * chunks;
    auto pass = [&](PipelineAction::Kind k, int64_t n) {
      int64_t chunk = (n / stages) % chunks;
      if (k == PipelineAction::Backward)
        chunk = chunks - 1 - chunk;
      actions.push_back(
          {k, (n / (stages * chunks)) * stages + n % stages, chunk});
    };
    int64_t warmup =
        microbatches == stages
            ? total
            : std::min(total, (stages - stage - 1) * 2 + (chunks - 1) * stages);
    for (int64_t n = 0; n < warmup; ++n)
      pass(PipelineAction::Forward, n);
    for (int64_t n = 0; n < total - warmup; ++n) {
      pass(PipelineAction::Forward, warmup + n);
      pass(PipelineAction::Backward, n);
    }
    for (int64_t n = std::max<int64_t>(total - warmup, 0); n < total; ++n)
      pass(PipelineAction::Backward, n);
    return actions;
  }
  if (chunks != 1)
    return failure();
  auto forward = [&](int64_t i) {
    actions.push_back({PipelineAction::Forward, i});
  };
  auto backward = [&](int64_t i) {
    actions.push_back({PipelineAction::Backward, i});
  };
  if (kind == "gpipe") {
    for (int64_t i = 0; i < microbatches; ++i)
      forward(i);
    for (int64_t i = 0; i < microbatches; ++i)
      backward(i);
    return actions;
  }
  if (kind == "zero-bubble") {
    // ZB-H1 (Qi et al., 2023): each backward split into its input-gradient
    // part (B, which the stage before waits for) and its weight-gradient
    // part (W, which nobody waits for). The order comes from list
    // scheduling all stages with unit-time passes: a free stage runs a ready
    // B first, else a ready F while fewer than stages - stage microbatches
    // hold activations (1F1B's bound; a microbatch holds them until its W),
    // else its oldest pending W, so W passes fill the waits.
    SmallVector<int64_t> nextF(stages, 0), nextB(stages, 0), nextW(stages, 0);
    SmallVector<int64_t> freeAt(stages, 0);
    // When each stage finished each microbatch's F and B (-1: not yet).
    SmallVector<SmallVector<int64_t>> endF(stages,
                                           SmallVector<int64_t>(microbatches, -1));
    SmallVector<SmallVector<int64_t>> endB = endF;
    for (int64_t t = 0; nextW[stage] < microbatches; ++t) {
      if (t > 8 * stages * microbatches + 8)
        return failure();
      for (int64_t s = 0; s < stages; ++s) {
        if (freeAt[s] > t || nextW[s] == microbatches)
          continue;
        auto doneBy = [&](int64_t end) { return end >= 0 && end <= t; };
        int64_t j = nextB[s], i = nextF[s];
        PipelineAction::Kind chosen;
        if (j < nextF[s] && (s + 1 == stages ? doneBy(endF[s][j])
                                             : doneBy(endB[s + 1][j]))) {
          chosen = PipelineAction::Backward;
          endB[s][j] = t + 1;
          ++nextB[s];
        } else if (i < microbatches && i - nextW[s] < stages - s &&
                   (s == 0 || doneBy(endF[s - 1][i]))) {
          chosen = PipelineAction::Forward;
          endF[s][i] = t + 1;
          ++nextF[s];
        } else if (nextW[s] < nextB[s]) {
          chosen = PipelineAction::Weight;
          ++nextW[s];
        } else {
          continue;
        }
        freeAt[s] = t + 1;
        if (s == stage) {
          int64_t microbatch = chosen == PipelineAction::Backward ? j
                               : chosen == PipelineAction::Forward
                                   ? i
                                   : nextW[s] - 1;
          actions.push_back({chosen, microbatch});
        }
      }
    }
    return actions;
  }
  if (kind == "1f1b") {
    // PipeDream-flush: as many forwards as stages after this one, then one
    // forward and one backward in turn, then the remaining backwards.
    int64_t warmup = std::min(stages - stage - 1, microbatches);
    int64_t next = 0, done = 0;
    for (; next < warmup; ++next)
      forward(next);
    for (; next < microbatches; ++next, ++done) {
      forward(next);
      backward(done);
    }
    for (; done < microbatches; ++done)
      backward(done);
    return actions;
  }
  return failure();
}

FailureOr<SmallVector<SmallVector<TimedAction>>>
simulatePipeline(StringRef kind, int64_t stages, int64_t microbatches,
                 int64_t chunks) {
  SmallVector<SmallVector<PipelineAction>> orders;
  for (int64_t s = 0; s < stages; ++s) {
    FailureOr<SmallVector<PipelineAction>> order =
        pipelineSchedule(kind, stages, s, microbatches, chunks);
    if (failed(order))
      return failure();
    orders.push_back(*order);
  }
  bool split = kind == "zero-bubble";
  auto duration = [&](PipelineAction::Kind k) {
    return (k == PipelineAction::Forward ? 1.0 : split ? 1.0 : 2.0) /
           (double)chunks;
  };
  int64_t last = stages * chunks - 1;
  // End times by (virtual stage, kind, microbatch), once known.
  std::map<std::tuple<int64_t, int, int64_t>, double> done;
  SmallVector<SmallVector<TimedAction>> timeline(stages);
  SmallVector<size_t> next(stages, 0);
  SmallVector<double> free(stages, 0.0);
  for (bool progress = true; progress;) {
    progress = false;
    for (int64_t s = 0; s < stages; ++s) {
      while (next[s] < orders[s].size()) {
        PipelineAction a = orders[s][next[s]];
        int64_t v = a.chunk * stages + s;
        SmallVector<std::tuple<int64_t, int, int64_t>> needs;
        if (a.kind == PipelineAction::Forward && v > 0)
          needs.push_back({v - 1, PipelineAction::Forward, a.microbatch});
        if (a.kind == PipelineAction::Backward && v < last)
          needs.push_back({v + 1, PipelineAction::Backward, a.microbatch});
        if (a.kind == PipelineAction::Backward && v == last)
          needs.push_back({v, PipelineAction::Forward, a.microbatch});
        if (a.kind == PipelineAction::Weight)
          needs.push_back({v, PipelineAction::Backward, a.microbatch});
        double ready = free[s];
        bool blocked = false;
        for (auto &need : needs) {
          auto it = done.find(need);
          if (it == done.end()) {
            blocked = true;
            break;
          }
          ready = std::max(ready, it->second);
        }
        if (blocked)
          break;
        double end = ready + duration(a.kind);
        timeline[s].push_back({a, ready, end});
        done[{v, a.kind, a.microbatch}] = end;
        free[s] = end;
        ++next[s];
        progress = true;
      }
    }
  }
  for (int64_t s = 0; s < stages; ++s)
    if (next[s] < orders[s].size())
      return failure();
  return timeline;
}

double simulatedBubble(ArrayRef<SmallVector<TimedAction>> timeline) {
  double busy = 0, makespan = 0;
  for (const auto &stage : timeline)
    for (const TimedAction &t : stage) {
      busy += t.end - t.start;
      makespan = std::max(makespan, t.end);
    }
  return makespan > 0 ? 1.0 - busy / (makespan * timeline.size()) : 0.0;
}

//===----------------------------------------------------------------------===//
// The deadlock check
//===----------------------------------------------------------------------===//

namespace {
std::string describe(Operation *op) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "'" << op->getName() << "' of " << op->getOperand(0).getType();
  return text;
}
} // namespace

LogicalResult checkPointToPoint(ArrayRef<func::FuncOp> programs) {
  // Each program's sends and receives in order; a send never blocks (the
  // runtime copies what it sends and lets it go), a receive waits for the
  // oldest message from its peer, which must be of its type.
  struct Event {
    Operation *op;
    bool send;
    int64_t peer;
    Type type;
  };
  int64_t ranks = programs.size();
  std::vector<std::vector<Event>> events(ranks);
  for (auto [rank, program] : llvm::enumerate(programs)) {
    func::FuncOp f = program;
    WalkResult walk = f.walk([&](Operation *op) -> WalkResult {
      int64_t offset = 0;
      Type type;
      bool send = false;
      if (auto s = dyn_cast<SendOp>(op)) {
        offset = s.getOffset();
        type = s.getInput().getType();
        send = true;
      } else if (auto r = dyn_cast<RecvOp>(op)) {
        offset = r.getOffset();
        type = r.getType();
      } else {
        return WalkResult::advance();
      }
      int64_t peer = (int64_t)rank + offset;
      if (offset == 0 || peer < 0 || peer >= ranks)
        return op->emitOpError("on stage ")
               << rank << " names stage " << peer << " (offset " << offset
               << "), which is not another of the " << ranks << " stages";
      events[rank].push_back({op, send, peer, type});
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return failure();
  }
  std::vector<size_t> at(ranks, 0);
  std::map<std::pair<int64_t, int64_t>, std::deque<const Event *>> inFlight;
  while (true) {
    bool progress = false, finished = true;
    for (int64_t r = 0; r < ranks; ++r) {
      while (at[r] < events[r].size()) {
        const Event &e = events[r][at[r]];
        if (e.send) {
          inFlight[{r, e.peer}].push_back(&e);
        } else {
          auto &queue = inFlight[{e.peer, r}];
          if (queue.empty())
            break;
          const Event *sent = queue.front();
          if (sent->type != e.type)
            return emitError(e.op->getLoc())
                   << "stage " << r << " receives " << e.type
                   << " from stage " << e.peer << ", whose next message to it "
                   << "is " << describe(sent->op)
                   << ": the two orders of point-to-point operations do not "
                      "match";
          queue.pop_front();
        }
        ++at[r];
        progress = true;
      }
      finished &= at[r] == events[r].size();
    }
    if (finished)
      break;
    if (progress)
      continue;
    // Every unfinished rank waits for a message that is never sent: name the
    // first and the rank it waits for.
    for (int64_t r = 0; r < ranks; ++r) {
      if (at[r] == events[r].size())
        continue;
      const Event &e = events[r][at[r]];
      InFlightDiagnostic diag = emitError(e.op->getLoc());
      diag << "the pipeline schedule deadlocks: stage " << r << " waits in '"
           << e.op->getName() << "' of " << e.type << " from stage " << e.peer;
      if (at[e.peer] < events[e.peer].size()) {
        const Event &other = events[e.peer][at[e.peer]];
        diag << ", which waits in '" << other.op->getName() << "' of "
             << other.type << " from stage " << other.peer;
      } else {
        diag << ", which has finished without sending it";
      }
      return diag;
    }
  }
  for (auto &[pair, queue] : inFlight)
    if (!queue.empty())
      return emitError(queue.front()->op->getLoc())
             << "stage " << pair.first << " sends " << queue.size()
             << " message(s) that stage " << pair.second << " never receives";
  return success();
}

namespace {

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

constexpr int64_t kEveryStage = -1;

struct LoomPipelinePass : impl::LoomPipelinePassBase<LoomPipelinePass> {
  using Base::Base;

  void runOnOperation() override;
};

/// Where the ops of the training step go.
enum class Kind {
  Micro,  ///< depends on the batch: runs once per microbatch on its stage
  Invariant, ///< needed by Micro ops, independent of the batch: once per step
  Update, ///< the rest: the optimizer, once per step after all microbatches
};

void LoomPipelinePass::runOnOperation() {
  ModuleOp module = getOperation();
  MLIRContext *context = &getContext();
  auto train = module.lookupSymbol<func::FuncOp>(entry);
  if (!train) {
    module.emitError("no training step @") << entry << " to pipeline";
    return signalPassFailure();
  }
  auto meshOp = module.lookupSymbol<MeshOp>("mesh");
  std::optional<int64_t> axisSize =
      meshOp ? meshOp.getMesh().getAxisSize(axis) : std::nullopt;
  if (!axisSize) {
    module.emitError("pipelining runs over the mesh axis \"")
        << axis << "\", which the module has no mesh with";
    return signalPassFailure();
  }
  // `ranks` programs, one per coordinate of the axis; `stages` virtual
  // stages, `chunks` per rank (interleaved 1F1B), virtual stage v on rank
  // v % ranks.
  int64_t ranks = *axisSize, chunks = virtualStages, m = microbatches;
  if (m < 1) {
    module.emitError("microbatches must be at least 1, got ") << m;
    return signalPassFailure();
  }
  if (schedule != "gpipe" && schedule != "1f1b" && schedule != "zero-bubble" &&
      schedule != "interleaved-1f1b") {
    module.emitError("unknown pipeline schedule '")
        << schedule
        << "' (expected gpipe, 1f1b, interleaved-1f1b or zero-bubble)";
    return signalPassFailure();
  }
  if (schedule == "interleaved-1f1b" ? chunks < 2 : chunks != 1) {
    module.emitError("virtual stages (")
        << chunks
        << ") need the interleaved-1f1b schedule, which needs at least 2";
    return signalPassFailure();
  }
  if (schedule == "interleaved-1f1b" && m % ranks != 0) {
    module.emitError("the interleaved-1f1b schedule takes the microbatches "
                     "in groups of the ")
        << ranks << " stages; " << m << " microbatches are not a multiple";
    return signalPassFailure();
  }
  int64_t stages = ranks * chunks;
  auto rankOf = [&](int64_t stage) { return stage % ranks; };

  Block &body = train.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  // Dead ops (autodiff leaves some) would only be classified for nothing.
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(body)))
    if (isOpTriviallyDead(&op))
      op.erase();
  SmallVector<Operation *> ops;
  for (Operation &op : body.without_terminator())
    ops.push_back(&op);

  // The loss and the gradients of the microbatch.
  int lossIndex = -1;
  for (unsigned i = 0; i < train.getNumResults(); ++i)
    if (auto name = train.getResultAttrOfType<StringAttr>(i, "loom.output"))
      if (name.getValue() == "loss")
        lossIndex = i;
  if (lossIndex < 0) {
    train.emitError("the training step has no \"loss\" output");
    return signalPassFailure();
  }
  Value loss = ret.getOperand(lossIndex);
  SmallVector<Value> gradients;
  llvm::DenseSet<Value> isGradient;
  llvm::StringMap<Operation *> gradientOf; // by parameter name
  for (Operation *op : ops)
    if (auto of = op->getAttrOfType<StringAttr>("loom.gradient")) {
      gradientOf[of.getValue()] = op;
      for (Value r : op->getResults())
        if (isGradient.insert(r).second)
          gradients.push_back(r);
    }

  // Values that depend on the batch.
  llvm::DenseSet<Value> batched;
  for (BlockArgument arg : train.getArguments())
    if (train.getArgAttr(arg.getArgNumber(), "loom.input"))
      batched.insert(arg);
  // (The microbatches' gradients and losses are summed: what the optimizer
  // computes from the sums depends on the step, not the microbatch.)
  auto perMicrobatch = [&](Value v) {
    return batched.contains(v) && !isGradient.contains(v) && v != loss;
  };
  for (Operation *op : ops)
    if (llvm::any_of(op->getOperands(), perMicrobatch))
      for (Value r : op->getResults())
        batched.insert(r);

  // Ancestors of the loss and of the gradients, and of the loss alone
  // (the forward pass).
  auto ancestors = [&](ArrayRef<Value> roots) {
    llvm::DenseSet<Operation *> set;
    SmallVector<Value> work(roots.begin(), roots.end());
    while (!work.empty()) {
      Operation *def = work.pop_back_val().getDefiningOp();
      if (!def || def->getBlock() != &body || !set.insert(def).second)
        continue;
      for (Value v : def->getOperands())
        work.push_back(v);
    }
    return set;
  };
  SmallVector<Value> roots(gradients);
  roots.push_back(loss);
  llvm::DenseSet<Operation *> needed = ancestors(roots);
  llvm::DenseSet<Operation *> forwardOps = ancestors({loss});

  llvm::DenseMap<Operation *, Kind> kind;
  for (Operation *op : ops) {
    bool isBatched = llvm::any_of(op->getOperands(), perMicrobatch);
    if (needed.contains(op))
      kind[op] = isBatched ? Kind::Micro : Kind::Invariant;
    else
      kind[op] = Kind::Update;
    if (kind[op] == Kind::Update && isBatched) {
      op->emitError("pipelining: '")
          << op->getName()
          << "' depends on the microbatch but feeds neither the loss nor "
             "a gradient, which pipelining does not support yet";
      return signalPassFailure();
    }
  }
  for (auto [i, result] : llvm::enumerate(ret.getOperands()))
    if (perMicrobatch(result)) {
      auto name = train.getResultAttrOfType<StringAttr>(i, "loom.output");
      train.emitError("pipelining: output '")
          << (name ? name.getValue() : StringRef("?"))
          << "' of the training step depends on the microbatch (batch "
             "normalization's running statistics are not supported with "
             "pipeline parallelism yet)";
      return signalPassFailure();
    }

  // Stages of the microbatch ops: their `loom.stage`, or for ops that
  // partitioning added, the latest stage of their operands (else the
  // earliest of their users).
  llvm::DenseMap<Operation *, int64_t> stageOf;
  for (Operation *op : ops) {
    if (kind[op] != Kind::Micro)
      continue;
    if (auto attr = op->getAttrOfType<IntegerAttr>(kStageAttr)) {
      stageOf[op] = attr.getInt();
      continue;
    }
    for (Value v : op->getOperands())
      if (Operation *def = v.getDefiningOp(); def && stageOf.count(def))
        stageOf[op] = std::max(stageOf.lookup(def), stageOf[op]);
  }
  for (Operation *op : llvm::reverse(ops)) {
    if (kind[op] != Kind::Micro || stageOf.count(op))
      continue;
    int64_t stage = stages - 1;
    for (Operation *user : op->getUsers())
      if (stageOf.count(user))
        stage = std::min(stage, stageOf[user]);
    stageOf[op] = stage;
  }
  for (auto [op, stage] : stageOf)
    if (stage < 0 || stage >= stages) {
      op->emitError("pipelining: the op is in stage ")
          << stage << ", but the mesh axis \"" << axis << "\" has " << ranks
          << (chunks > 1 ? " stages of " + std::to_string(chunks) +
                               " virtual stages each"
                         : std::string(" stages"));
      return signalPassFailure();
    }

  // Stages of parameters (those of the microbatch ops reading them, through
  // batch-independent views), of optimizer state (its parameter's) and of
  // everything else: kEveryStage for values all stages compute alike (the
  // learning rate from the step counter).
  llvm::DenseMap<Value, int64_t> valueStage;
  llvm::StringMap<int64_t> paramStage;
  // Tied weights: the other stages that read them.
  llvm::DenseMap<Value, SmallVector<int64_t>> tiedTo;
  for (BlockArgument arg : train.getArguments()) {
    auto name = train.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                                   "loom.param");
    if (!name)
      continue;
    std::set<int64_t> users = stagesReading(
        arg,
        [&](Operation *user) -> std::optional<int64_t> {
          if (stageOf.count(user))
            return stageOf[user];
          return std::nullopt;
        },
        [&](Operation *user) {
          return user->getBlock() == &body && kind[user] == Kind::Invariant;
        });
    // A trained weight several stages read (an embedding tied to the output
    // layer): the stage that sums its gradient (the contributions of the
    // others arrive with the backward pass) updates it and sends the new
    // value to the others.
    Operation *gradient = gradientOf.lookup(name.getValue());
    if (users.size() > 1 && gradient) {
      int64_t owner =
          stageOf.count(gradient) ? stageOf[gradient] : *users.begin();
      paramStage[name.getValue()] = owner;
      valueStage[arg] = owner;
      users.erase(owner);
      tiedTo[arg].assign(users.begin(), users.end());
      continue;
    }
    // A buffer several stages read (an attention mask) is on every stage.
    int64_t stage = users.size() > 1 ? kEveryStage
                    : users.empty()  ? 0
                                     : *users.begin();
    paramStage[name.getValue()] = stage == kEveryStage ? 0 : stage;
    valueStage[arg] = stage;
  }
  // Optimizer state follows its parameter; step counters and run-time
  // hyperparameters are on every stage.
  for (BlockArgument arg : train.getArguments()) {
    unsigned i = arg.getArgNumber();
    if (!train.getArgAttr(i, "loom.state") &&
        !train.getArgAttr(i, "loom.hyperparam"))
      continue;
    auto of = train.getArgAttrOfType<StringAttr>(i, "loom.state_of");
    valueStage[arg] = of && paramStage.count(of.getValue())
                          ? paramStage[of.getValue()]
                          : kEveryStage;
  }
  for (Operation *op : ops) {
    if (kind[op] == Kind::Micro) {
      for (Value r : op->getResults())
        valueStage[r] = stageOf[op];
      continue;
    }
    int64_t stage = kEveryStage;
    for (Value v : op->getOperands()) {
      int64_t s = valueStage.lookup(v);
      if (s == kEveryStage || s == stage)
        continue;
      if (stage != kEveryStage) {
        op->emitError("pipelining: this op combines values of stages ")
            << stage << " and " << s
            << " (a global gradient norm or loss-scale check over all "
               "parameters is not supported with pipeline parallelism yet)";
        return signalPassFailure();
      }
      stage = s;
    }
    for (Value r : op->getResults())
      valueStage[r] = stage;
  }
  int64_t lossStage = valueStage.lookup(loss);
  if (Operation *def = loss.getDefiningOp(); !def || !stageOf.count(def)) {
    train.emitError("pipelining: the loss does not depend on the batch");
    return signalPassFailure();
  }

  // Which values move between stages: a microbatch value goes to every other
  // stage whose microbatch ops read it, received in that stage's forward
  // when it flows forward, else in its backward.
  llvm::DenseMap<Value, SmallVector<int64_t>> consumers;
  SmallVector<Value> moved; // in block order
  for (Operation *op : ops) {
    if (kind[op] != Kind::Micro)
      continue;
    for (Value r : op->getResults()) {
      std::set<int64_t> to;
      for (Operation *user : r.getUsers()) {
        Operation *top = body.findAncestorOpInBlock(*user);
        if (top && stageOf.count(top) && stageOf[top] != stageOf[op])
          to.insert(stageOf[top]);
      }
      if (to.empty())
        continue;
      consumers[r].assign(to.begin(), to.end());
      moved.push_back(r);
    }
  }
  // With the zero-bubble schedule, a stage's backward ops that the
  // gradients it sends back do not need (the weight gradients) form a pass
  // of their own.
  llvm::DenseSet<Operation *> inputGradient;
  if (schedule == "zero-bubble") {
    SmallVector<Operation *> work;
    for (Value v : moved)
      if (Operation *def = v.getDefiningOp(); !forwardOps.contains(def))
        work.push_back(def);
    while (!work.empty()) {
      Operation *op = work.pop_back_val();
      if (!inputGradient.insert(op).second)
        continue;
      for (Value v : op->getOperands())
        if (Operation *def = v.getDefiningOp();
            def && kind.lookup(def) == Kind::Micro &&
            !forwardOps.contains(def) && stageOf[def] == stageOf[op])
          work.push_back(def);
    }
  }
  auto phaseOf = [&](Operation *op) {
    if (forwardOps.contains(op))
      return PipelineAction::Forward;
    if (schedule == "zero-bubble" && !inputGradient.contains(op))
      return PipelineAction::Weight;
    return PipelineAction::Backward;
  };
  auto receivedIn = [&](Value v, int64_t at) {
    Operation *def = v.getDefiningOp();
    return phaseOf(def) == PipelineAction::Forward && stageOf[def] < at
               ? PipelineAction::Forward
               : PipelineAction::Backward;
  };

  // The results that are a tied weight's new value, with the weight.
  llvm::DenseMap<unsigned, BlockArgument> tiedResults;
  for (unsigned i = 0; i < train.getNumResults(); ++i)
    if (auto updates = train.getResultAttrOfType<StringAttr>(i, "loom.update"))
      for (auto &[arg, stagesTied] : tiedTo) {
        auto param = cast<BlockArgument>(arg);
        if (train.getArgAttrOfType<StringAttr>(param.getArgNumber(),
                                               "loom.param") == updates)
          tiedResults[i] = param;
      }
  auto tiedUpdate = [&](unsigned i) { return tiedResults.lookup(i); };

  // Dropout draws its masks at the step counter's position; microbatch i of
  // step t draws at t * microbatches + i, as --grad-accumulation's calls do.
  Value stepArg;
  for (BlockArgument arg : train.getArguments())
    if (auto state = train.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                                        "loom.state"))
      if (state.getValue() == "step")
        stepArg = arg;

  // What each rank sends to each other rank, in the order its program sends
  // it: by action of its schedule, op of the action (in block order),
  // result and consuming stage. A rank receives from each peer in that
  // order, receiving early what a later pass of its own reads, so that
  // messages sharing a pair of ranks (with interleaved chunks, activations
  // one way and gradients the other) cannot be taken for one another.
  struct Message {
    Value value;
    int64_t microbatch, stage;
  };
  std::vector<std::vector<SmallVector<Message>>> messages(
      ranks, std::vector<SmallVector<Message>>(ranks));
  SmallVector<SmallVector<PipelineAction>> orders;
  for (int64_t r = 0; r < ranks; ++r) {
    FailureOr<SmallVector<PipelineAction>> order =
        pipelineSchedule(schedule, ranks, r, m, chunks);
    if (failed(order)) {
      module.emitError("pipelining: cannot order the ")
          << schedule << " schedule of stage " << r;
      return signalPassFailure();
    }
    orders.push_back(std::move(*order));
    for (PipelineAction action : orders.back()) {
      int64_t v = action.chunk * ranks + r;
      for (Operation *op : ops) {
        if (kind[op] != Kind::Micro || stageOf[op] != v ||
            phaseOf(op) != action.kind)
          continue;
        for (Value result : op->getResults()) {
          auto to = consumers.find(result);
          if (to == consumers.end())
            continue;
          for (int64_t dest : to->second)
            if (rankOf(dest) != r)
              messages[r][rankOf(dest)].push_back(
                  {result, action.microbatch, dest});
        }
      }
    }
  }
  auto owns = [&](int64_t r, int64_t stage) {
    return stage != kEveryStage && rankOf(stage) == r;
  };
  auto ownsAny = [&](int64_t r, ArrayRef<int64_t> stagesList) {
    return llvm::any_of(stagesList,
                        [&](int64_t t) { return owns(r, t); });
  };

  // The programs.
  OpBuilder mb(context);
  mb.setInsertionPointAfter(train);
  auto meshRef = FlatSymbolRefAttr::get(context, "mesh");
  ArrayAttr axes = mb.getStrArrayAttr({axis});
  SmallVector<func::FuncOp> programs;
  Type f32 = mb.getF32Type();
  for (int64_t s = 0; s < ranks; ++s) {
    SmallVector<Type> argTypes;
    SmallVector<DictionaryAttr> argAttrs;
    IRMapping shared;
    SmallVector<std::pair<BlockArgument, unsigned>> kept;
    for (BlockArgument arg : train.getArguments()) {
      unsigned i = arg.getArgNumber();
      bool input = (bool)train.getArgAttr(i, "loom.input");
      int64_t stage = valueStage.lookup(arg);
      if (!input && !owns(s, stage) && stage != kEveryStage &&
          !ownsAny(s, tiedTo.lookup(arg)))
        continue;
      Type type = arg.getType();
      if (input) {
        auto ranked = cast<RankedTensorType>(type);
        if (ranked.getRank() == 0) {
          train.emitError("pipelining: input #")
              << i << " has no batch dimension to take microbatches from";
          return signalPassFailure();
        }
        SmallVector<int64_t> shape(ranked.getShape());
        shape[0] *= m;
        type = ranked.clone(shape);
      }
      argTypes.push_back(type);
      argAttrs.push_back(train.getArgAttrDict(i)
                             ? train.getArgAttrDict(i)
                             : mb.getDictionaryAttr({}));
      kept.push_back({arg, (unsigned)argTypes.size() - 1});
    }
    SmallVector<unsigned> resultIndices;
    for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
      int64_t stage = valueStage.lookup(v);
      BlockArgument tied = tiedUpdate(i);
      if ((int)i == lossIndex || owns(s, stage) || stage == kEveryStage ||
          (tied && ownsAny(s, tiedTo.lookup(tied))))
        resultIndices.push_back(i);
    }
    SmallVector<Type> resultTypes;
    SmallVector<DictionaryAttr> resultAttrs;
    for (unsigned i : resultIndices) {
      resultTypes.push_back(ret.getOperand(i).getType());
      resultAttrs.push_back(train.getResultAttrDict(i)
                                ? train.getResultAttrDict(i)
                                : mb.getDictionaryAttr({}));
    }
    std::string name = (entry + "_stage" + Twine(s)).str();
    auto program = func::FuncOp::create(
        mb, train.getLoc(), name, mb.getFunctionType(argTypes, resultTypes));
    program.setAllArgAttrs(argAttrs);
    program.setAllResultAttrs(resultAttrs);
    program->setAttr("loom.pipeline_stage", mb.getI64IntegerAttr(s));
    Block *block = program.addEntryBlock();
    for (auto [arg, index] : kept)
      shared.map(arg, block->getArgument(index));

    OpBuilder b = OpBuilder::atBlockEnd(block);
    // Step-invariant values are computed once, before the schedule.
    Location loc = train.getLoc();
    Operation *scheduleStart = ConstantOp::create(
        b, loc, RankedTensorType::get({}, f32), 0.0);
    OpBuilder prologue(scheduleStart);
    std::vector<IRMapping> maps(m);

    std::function<FailureOr<Value>(Value, int64_t)> lookup;
    std::function<FailureOr<Value>(Value)> invariant =
        [&](Value v) -> FailureOr<Value> {
      if (Value mapped = shared.lookupOrNull(v))
        return mapped;
      Operation *def = v.getDefiningOp();
      if (!def)
        return (LogicalResult)(train.emitError(
            "pipelining: internal error: an argument of the training step "
            "is not an argument of stage ")
                               << s);
      if (kind.lookup(def) != Kind::Invariant &&
          valueStage.lookup(v) != kEveryStage)
        return (LogicalResult)(def->emitError(
            "pipelining: internal error: this op is needed on stage ")
                               << s << " before it is computed");
      for (Value operand : def->getOperands())
        if (failed(invariant(operand)))
          return failure();
      prologue.clone(*def, shared);
      return shared.lookup(v);
    };
    lookup = [&](Value v, int64_t i) -> FailureOr<Value> {
      if (Value mapped = maps[i].lookupOrNull(v))
        return mapped;
      if (auto arg = dyn_cast<BlockArgument>(v);
          arg && train.getArgAttr(arg.getArgNumber(), "loom.input")) {
        // Microbatch i: rows [i*n, (i+1)*n) of this rank's inputs.
        auto type = cast<RankedTensorType>(v.getType());
        Value whole = shared.lookup(v);
        int64_t rows = type.getDimSize(0);
        SmallVector<int64_t> starts(type.getRank(), 0),
            limits(type.getShape()), steps(type.getRank(), 1);
        starts[0] = i * rows;
        limits[0] = (i + 1) * rows;
        Value slice = SliceOp::create(b, loc, type, whole, starts, limits,
                                      steps);
        maps[i].map(v, slice);
        return slice;
      }
      Operation *def = v.getDefiningOp();
      if (def && kind.lookup(def) == Kind::Micro)
        return (LogicalResult)(def->emitError(
            "pipelining: internal error: a value of stage ")
                               << stageOf[def] << " is not available on stage "
                               << s);
      FailureOr<Value> once = invariant(v);
      if (succeeded(once))
        maps[i].map(v, *once);
      return once;
    };

    // Sums over the microbatches, in their order.
    llvm::DenseMap<Value, Value> sums;
    auto accumulate = [&](Value v, Value mapped) {
      Value &sum = sums[v];
      sum = sum ? AddOp::create(b, loc, sum, mapped).getResult() : mapped;
    };

    ArrayRef<PipelineAction> actions = orders[s];
    // How many of each peer's messages to this rank have been received.
    SmallVector<size_t> taken(ranks, 0);
    auto mark = [&](int64_t kind, int64_t microbatch, bool end) {
      PipelineMarkOp::create(b, loc, b.getI64IntegerAttr(kind),
                             b.getI64IntegerAttr(microbatch),
                             end ? b.getUnitAttr() : UnitAttr());
    };
    for (PipelineAction action : actions) {
      int64_t i = action.microbatch;
      int64_t here = action.chunk * ranks + s;
      // Receive what this action reads from other ranks: from each, every
      // message up to the last one this action reads, in its order.
      for (int64_t from = 0; from < ranks; ++from) {
        if (from == s)
          continue;
        ArrayRef<Message> list = messages[from][s];
        size_t upTo = taken[from];
        for (size_t k = taken[from]; k < list.size(); ++k)
          if (list[k].stage == here && list[k].microbatch == i &&
              receivedIn(list[k].value, here) == action.kind)
            upTo = k + 1;
        for (; taken[from] < upTo; ++taken[from]) {
          const Message &msg = list[taken[from]];
          Value got = RecvOp::create(b, loc, msg.value.getType(), meshRef,
                                     axes, b.getI64IntegerAttr(from - s));
          maps[msg.microbatch].map(msg.value, got);
        }
      }
      // The action's work starts once its inputs have arrived.
      mark(action.kind, i, false);
      for (Operation *op : ops) {
        if (kind[op] != Kind::Micro || stageOf[op] != here ||
            phaseOf(op) != action.kind)
          continue;
        for (Value operand : op->getOperands())
          if (failed(lookup(operand, i)))
            return signalPassFailure();
        Operation *copy = b.clone(*op, maps[i]);
        copy->removeAttr(kStageAttr);
        if (auto dropout = dyn_cast<DropoutOp>(copy);
            dropout && stepArg && m > 1 &&
            cast<DropoutOp>(op).getOffset() == stepArg) {
          OpBuilder at(copy);
          auto i64 = RankedTensorType::get({}, at.getI64Type());
          Value position = AddOp::create(
              at, loc,
              MulOp::create(at, loc, dropout.getOffset(),
                            ConstantOp::create(at, loc, i64, (double)m)),
              ConstantOp::create(at, loc, i64, (double)i));
          dropout.getOffsetMutable().assign(position);
        }
        for (Value r : op->getResults()) {
          if (isGradient.contains(r) || r == loss)
            accumulate(r, maps[i].lookup(r));
          auto to = consumers.find(r);
          if (to == consumers.end())
            continue;
          for (int64_t dest : to->second)
            if (rankOf(dest) != s)
              SendOp::create(b, loc, maps[i].lookup(r), meshRef, axes,
                             b.getI64IntegerAttr(rankOf(dest) - s));
        }
      }
      mark(action.kind, i, true);
    }
    for (int64_t from = 0; from < ranks; ++from)
      if (from != s && taken[from] != messages[from][s].size()) {
        train.emitError("pipelining: internal error: stage ")
            << s << " does not receive every message of stage " << from;
        return signalPassFailure();
      }

    // The mean gradient and loss over the microbatches, and the optimizer.
    mark(3, 0, false);
    auto meanOf = [&](Value sum) -> Value {
      if (m == 1)
        return sum;
      auto type = cast<RankedTensorType>(sum.getType());
      Value scale = ConstantOp::create(
          b, loc, RankedTensorType::get({}, type.getElementType()),
          1.0 / (double)m);
      return MulOp::create(b, loc, sum, scale);
    };
    for (Value g : gradients) {
      if (!owns(s, valueStage.lookup(g)))
        continue;
      if (Value sum = sums.lookup(g))
        shared.map(g, meanOf(sum));
      else if (failed(invariant(g)))
        return signalPassFailure();
    }
    Value lossValue;
    if (owns(s, lossStage)) {
      lossValue = meanOf(sums.lookup(loss));
      for (int64_t t = 0; t < ranks; ++t)
        if (t != s)
          SendOp::create(b, loc, lossValue, meshRef, axes,
                         b.getI64IntegerAttr(t - s));
    } else {
      lossValue =
          RecvOp::create(b, loc, loss.getType(), meshRef, axes,
                         b.getI64IntegerAttr(rankOf(lossStage) - s));
    }

    // The optimizer, once.
    for (Operation *op : ops) {
      if (kind[op] != Kind::Update || op->getNumResults() == 0 ||
          !owns(s, valueStage.lookup(op->getResult(0))))
        continue;
      for (Value operand : op->getOperands())
        if (!shared.contains(operand) && failed(invariant(operand)))
          return signalPassFailure();
      b.clone(*op, shared);
    }
    mark(3, 0, true);
    SmallVector<Value> results;
    for (unsigned i : resultIndices) {
      Value v = ret.getOperand(i);
      if ((int)i == lossIndex) {
        results.push_back(lossValue);
        continue;
      }
      if (BlockArgument tied = tiedUpdate(i)) {
        int64_t owner = valueStage.lookup(tied);
        if (!owns(s, owner)) {
          results.push_back(
              RecvOp::create(b, loc, v.getType(), meshRef, axes,
                             b.getI64IntegerAttr(rankOf(owner) - s)));
          continue;
        }
        FailureOr<Value> mapped = invariant(v);
        if (failed(mapped))
          return signalPassFailure();
        std::set<int64_t> readers;
        for (int64_t t : tiedTo.lookup(tied))
          if (rankOf(t) != s)
            readers.insert(rankOf(t));
        for (int64_t t : readers)
          SendOp::create(b, loc, *mapped, meshRef, axes,
                         b.getI64IntegerAttr(t - s));
        results.push_back(*mapped);
        continue;
      }
      FailureOr<Value> mapped = invariant(v);
      if (failed(mapped))
        return signalPassFailure();
      results.push_back(*mapped);
    }
    func::ReturnOp::create(b, loc, results);
    scheduleStart->erase();
    WalkResult foreign = program.walk([&](Operation *op) {
      for (Value v : op->getOperands())
        if (v.getParentRegion() != &program.getBody()) {
          op->emitError("pipelining: internal error: stage ")
              << s << " reads a value of the training step";
          return WalkResult::interrupt();
        }
      return WalkResult::advance();
    });
    if (foreign.wasInterrupted())
      return signalPassFailure();
    programs.push_back(program);
  }

  if (failed(checkPointToPoint(programs)))
    return signalPassFailure();

  if (report) {
    llvm::raw_ostream &os = llvm::outs();
    os << "pipeline: " << ranks << " stages over mesh axis \"" << axis
       << "\", " << m << " microbatches per step, schedule " << schedule;
    if (chunks > 1)
      os << ", " << chunks << " virtual stages per stage";
    os << "\n";
    if (chunks > 1)
      os << llvm::format("  bubble fraction (p-1)/(m+p-1)/v = %.3f",
                         (double)(ranks - 1) / (double)(m + ranks - 1) /
                             (double)chunks);
    else
      os << llvm::format("  bubble fraction (p-1)/(m+p-1) = %.3f",
                         (double)(ranks - 1) / (double)(m + ranks - 1));
    if (schedule == "zero-bubble")
      os << " for 1F1B; weight-gradient passes fill part of it";
    os << "\n";
    if (auto timeline = simulatePipeline(schedule, ranks, m, chunks);
        succeeded(timeline))
      os << llvm::format("  simulated bubble %.3f (forward passes 1, backward "
                         "2 or, split, 1 + 1; free messages)\n",
                         simulatedBubble(*timeline));
    for (auto [s, program] : llvm::enumerate(programs)) {
      using detail::tensorBytes;
      int64_t paramBytes = 0, sent = 0, received = 0;
      for (unsigned i = 0; i < program.getNumArguments(); ++i)
        if (program.getArgAttr(i, "loom.param"))
          paramBytes += tensorBytes(program.getArgument(i).getType());
      program.walk(
          [&](SendOp op) { sent += tensorBytes(op.getInput().getType()); });
      program.walk([&](RecvOp op) { received += tensorBytes(op.getType()); });
      int64_t inFlight = 0, most = 0;
      for (PipelineAction a : orders[s]) {
        // A microbatch's activations live until its last pass.
        bool last = a.kind == (schedule == "zero-bubble"
                                   ? PipelineAction::Weight
                                   : PipelineAction::Backward);
        inFlight += a.kind == PipelineAction::Forward ? 1 : last ? -1 : 0;
        most = std::max(most, inFlight);
      }
      os << llvm::format("  stage %zu: %lld parameter bytes per rank, sends "
                         "%lld and receives %lld bytes per step, at most "
                         "%lld %s activations alive\n",
                         s, (long long)paramBytes, (long long)sent,
                         (long long)received, (long long)most,
                         chunks > 1 ? "chunk passes'" : "microbatches'");
    }
    os.flush();
  }

  // The programs replace the step; evaluation is not pipelined yet.
  train.erase();
  if (auto eval = module.lookupSymbol<func::FuncOp>("eval_step"))
    eval.erase();
  SmallVector<NamedAttribute> config;
  if (auto training = module->getAttrOfType<DictionaryAttr>("loom.training"))
    for (NamedAttribute attr : training)
      if (attr.getName() != "eval_entry")
        config.push_back(attr);
  Builder attrs(context);
  config.push_back(attrs.getNamedAttr("pipeline_axis", attrs.getStringAttr(axis)));
  config.push_back(
      attrs.getNamedAttr("pipeline_stages", attrs.getI64IntegerAttr(ranks)));
  if (chunks > 1)
    config.push_back(attrs.getNamedAttr("virtual_stages",
                                        attrs.getI64IntegerAttr(chunks)));
  config.push_back(
      attrs.getNamedAttr("microbatches", attrs.getI64IntegerAttr(m)));
  config.push_back(attrs.getNamedAttr("pipeline_schedule",
                                      attrs.getStringAttr(schedule)));
  module->setAttr("loom.training", attrs.getDictionaryAttr(config));
}

struct LoomCheckP2PPass : impl::LoomCheckP2PPassBase<LoomCheckP2PPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::map<int64_t, func::FuncOp> byStage;
    for (auto func : module.getOps<func::FuncOp>())
      if (auto stage = func->getAttrOfType<IntegerAttr>("loom.pipeline_stage"))
        byStage[stage.getInt()] = func;
    SmallVector<func::FuncOp> programs;
    for (auto [stage, func] : byStage) {
      if (stage != (int64_t)programs.size()) {
        module.emitError("no program for pipeline stage ") << programs.size();
        return signalPassFailure();
      }
      programs.push_back(func);
    }
    if (failed(checkPointToPoint(programs)))
      signalPassFailure();
  }
};

} // namespace
} // namespace mlir::loom
