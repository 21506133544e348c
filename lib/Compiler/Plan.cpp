//===- Plan.cpp - loomc --plan: a layout for an ONNX model ----------------===//
//
// Candidates are compiled to the loom dialect from one import of the model
// per batch size, their per-rank programs simulated on the cluster profile,
// and the fastest compiled further for their memory. See Plan.h.
//
//===----------------------------------------------------------------------===//

#include "loom/Compiler/Plan.h"

#include "dialects/Loom/LoomOps.h"
#include "dialects/Loom/MoeExpansion.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <deque>
#include <map>
#include <memory>
#include <numeric>
#include <set>

using namespace mlir;
using namespace mlir::loom;
using plan::Cluster;

namespace {

//===----------------------------------------------------------------------===//
// Simulation of one step
//===----------------------------------------------------------------------===//

/// What a rank does, in program order.
struct Event {
  enum Kind { Compute, Start, Wait, Collective, Send, Recv } kind;
  double seconds = 0;
  /// Send and Recv: the peer program; Start and Wait: the started value.
  int64_t peer = 0;
  Value value;
};

/// One rank's program and where its simulation stands.
struct Program {
  int64_t stage = 0;
  std::vector<Event> events;
  double flops = 0;
  size_t next = 0;
  double time = 0, commFree = 0;
  double compute = 0, exposedComm = 0, waiting = 0;
  llvm::DenseMap<Value, double> finished;
};

class StepModel {
public:
  StepModel(const Cluster &cluster, MeshAttr mesh) : c(cluster), mesh(mesh) {}

  /// The events of `func`, the program of pipeline stage `stage` (0 without
  /// pipelining).
  Program program(func::FuncOp func, int64_t stage) {
    Program p;
    p.stage = stage;
    FusedLoops loops;
    loopBytes.clear();
    for (Operation &op : func.getBody().front())
      if (isFusible(&op))
        loopBytes[&op] = loops.bytesEndingAt(&op);
    for (Operation &op : func.getBody().front()) {
      if (auto send = dyn_cast<SendOp>(op)) {
        pipelineAxes = send.getMeshAxes();
        double bytes = tensorBytes(send.getInput().getType());
        p.events.push_back(
            {Event::Send, bytes, stage + int64_t(send.getOffset()), {}});
        continue;
      }
      if (auto recv = dyn_cast<RecvOp>(op)) {
        pipelineAxes = recv.getMeshAxes();
        p.events.push_back(
            {Event::Recv, 0, stage + int64_t(recv.getOffset()), {}});
        continue;
      }
      if (auto start = dyn_cast<AllReduceStartOp>(op)) {
        double bytes = tensorBytes(start.getInput().getType());
        p.events.push_back({Event::Start,
                            startedAllReduce(bytes, start.getMeshAxes()), 0,
                            start.getResult()});
        continue;
      }
      if (auto wait = dyn_cast<WaitOp>(op)) {
        p.events.push_back({Event::Wait, 0, 0, wait.getInput()});
        continue;
      }
      if (std::optional<double> t = collective(&op)) {
        p.events.push_back({Event::Collective, *t, 0, {}});
        continue;
      }
      double flops = 0;
      double t = compute(&op, flops);
      p.flops += flops;
      if (t > 0) {
        if (!p.events.empty() && p.events.back().kind == Event::Compute)
          p.events.back().seconds += t;
        else
          p.events.push_back({Event::Compute, t, 0, {}});
      }
    }
    return p;
  }

  /// Runs the programs together. As in libloomrt, a rank's collectives,
  /// sends and receives run one after another on its collective thread
  /// (started all-reduces while the rank computes, blocking ones while it
  /// waits), and a receive completes once its peer's send arrived. On a
  /// profile whose node time-shares its cores (Cluster::timeShared) the
  /// programs run in time order, the cores shared among the ranks computing
  /// at each moment (runShared); otherwise each program runs as far as its
  /// messages let it, in turn.
  LogicalResult run(std::vector<Program> &programs, Location loc) {
    std::set<int64_t> stages;
    for (Program &p : programs)
      stages.insert(p.stage);
    for (Program &p : programs)
      for (const Event &e : p.events)
        if (e.kind == Event::Recv && !stages.count(e.peer))
          return emitError(loc)
                 << "stage " << p.stage << " receives from stage " << e.peer
                 << ", which has no program";
    Arrivals arrivals;
    if (c.timeShared()) {
      runShared(programs, arrivals);
    } else {
      bool progress = true;
      while (progress) {
        progress = false;
        for (Program &p : programs)
          while (p.next < p.events.size() &&
                 apply(p, p.events[p.next], arrivals)) {
            ++p.next;
            progress = true;
          }
      }
    }
    for (Program &p : programs)
      if (p.next < p.events.size())
        return emitError(loc) << "the pipeline's sends and receives do not "
                                 "match (stage "
                              << p.stage << " waits forever)";
    return success();
  }

private:
  /// Messages on their way from one stage to another: arrival times.
  using Arrivals = std::map<std::pair<int64_t, int64_t>, std::deque<double>>;

  /// Takes the event `e` of `p` at p.time; false for a receive whose
  /// message was not sent yet.
  bool apply(Program &p, const Event &e, Arrivals &arrivals) {
    double before = p.time;
    switch (e.kind) {
    case Event::Compute:
      p.time += e.seconds;
      p.compute += e.seconds;
      break;
    case Event::Start: {
      double begin = std::max(p.time, p.commFree);
      p.commFree = begin + e.seconds;
      p.finished[e.value] = p.commFree;
      break;
    }
    case Event::Wait: {
      auto it = p.finished.find(e.value);
      if (it != p.finished.end())
        p.time = std::max(p.time, it->second);
      p.exposedComm += p.time - before;
      break;
    }
    case Event::Collective:
      p.time = std::max(p.time, p.commFree) + e.seconds;
      p.commFree = p.time;
      p.exposedComm += p.time - before;
      break;
    case Event::Send: {
      // Copied out, then sent in its turn on the rank's collective thread
      // while the rank goes on.
      double copy = e.seconds / c.memoryBandwidth;
      p.time += copy;
      p.compute += copy;
      double begin = std::max(p.time, p.commFree);
      p.commFree = begin + message(e.seconds);
      arrivals[{p.stage, e.peer}].push_back(p.commFree);
      break;
    }
    case Event::Recv: {
      // Received in its turn on the collective thread, after what the rank
      // queued before it.
      std::deque<double> &queue = arrivals[{e.peer, p.stage}];
      if (queue.empty())
        return false;
      p.time = std::max({p.time, p.commFree, queue.front()});
      p.commFree = p.time;
      queue.pop_front();
      p.waiting += p.time - before;
      break;
    }
    }
    return true;
  }

  /// Where each program's (pipeline stage's) ranks compute: the ranks at
  /// each (node, CPU). A stage holds the ranks whose coordinate along the
  /// pipeline's axis is its number (all ranks without one); rank r sits on
  /// node r / devicesPerNode, on the CPU plan::pinRanks pins it to (the
  /// stages being the phases), or on CPU -1 (the node's cores, shared)
  /// where the node's ranks are not pinned.
  std::vector<std::map<std::pair<int64_t, int64_t>, int64_t>>
  placesOf(const std::vector<Program> &programs) const {
    int64_t ranks = 1;
    for (int64_t size : mesh.getAxisSizes())
      ranks *= size;
    auto [stages, stride] =
        pipelineAxes ? group(pipelineAxes) : std::pair<int64_t, int64_t>{1, 1};
    auto stageOf = [&](int64_t r) { return (r / stride) % stages; };
    int64_t perNode = std::max<int64_t>(1, c.devicesPerNode);
    std::vector<int64_t> cpuOf(ranks, -1);
    for (int64_t first = 0; first < ranks; first += perNode) {
      std::vector<int64_t> phases;
      for (int64_t r = first; r < std::min(ranks, first + perNode); ++r)
        phases.push_back(stageOf(r));
      std::vector<int64_t> pins =
          plan::pinRanks(phases, c.coresPerNode, c.threadsPerDevice);
      for (auto [i, cpu] : llvm::enumerate(pins))
        cpuOf[first + i] = cpu;
    }
    std::vector<std::map<std::pair<int64_t, int64_t>, int64_t>> out;
    for (const Program &p : programs) {
      std::map<std::pair<int64_t, int64_t>, int64_t> places;
      for (int64_t r = 0; r < ranks; ++r)
        if (stageOf(r) == p.stage)
          ++places[{r / perNode, cpuOf[r]}];
      out.push_back(std::move(places));
    }
    return out;
  }

  /// run() on a time-shared profile: advances every program to the next
  /// moment one starts or stops computing or wakes, each computing program
  /// at the speed of its slowest place: a CPU its ranks are pinned to runs
  /// each of the ranks computing there at 1 / their number (the profile's
  /// figures are a pinned rank's alone on its CPU), the shared cores of an
  /// unpinned node at Cluster::computeSpeed of the ranks computing there.
  void runShared(std::vector<Program> &programs, Arrivals &arrivals) {
    std::vector<std::map<std::pair<int64_t, int64_t>, int64_t>>
        placesOfProgram = placesOf(programs);
    // Profile seconds of computing left in each program's current event;
    // negative while it does not compute.
    std::vector<double> left(programs.size(), -1);
    double now = 0;
    while (true) {
      bool progress = true;
      while (progress) {
        progress = false;
        for (auto [i, p] : llvm::enumerate(programs))
          while (left[i] < 0 && p.next < p.events.size() && p.time <= now) {
            const Event &e = p.events[p.next];
            if (e.kind == Event::Compute) {
              left[i] = e.seconds;
              p.time = now;
              break;
            }
            if (!apply(p, e, arrivals))
              break;
            ++p.next;
            progress = true;
          }
      }
      std::map<std::pair<int64_t, int64_t>, int64_t> busy;
      for (auto [i, places] : llvm::enumerate(placesOfProgram))
        if (left[i] >= 0)
          for (auto [place, count] : places)
            busy[place] += count;
      std::vector<double> speed(programs.size(), 0);
      double next = std::numeric_limits<double>::infinity();
      for (auto [i, p] : llvm::enumerate(programs)) {
        if (left[i] >= 0) {
          speed[i] = std::numeric_limits<double>::infinity();
          for (auto [place, count] : placesOfProgram[i])
            speed[i] = std::min(speed[i], place.second < 0
                                              ? c.computeSpeed(busy[place])
                                              : 1.0 / double(busy[place]));
          next = std::min(next, now + left[i] / speed[i]);
        } else if (p.next < p.events.size() && p.time > now) {
          next = std::min(next, p.time);
        }
      }
      if (next == std::numeric_limits<double>::infinity())
        return; // every program finished or waits for a message
      for (auto [i, p] : llvm::enumerate(programs)) {
        if (left[i] < 0)
          continue;
        double end = now + left[i] / speed[i];
        p.compute += std::min(end, next) - now;
        if (end <= next * (1 + 1e-12)) {
          p.time = end;
          ++p.next;
          left[i] = -1;
        } else {
          left[i] -= (next - now) * speed[i];
        }
      }
      now = next;
    }
  }

  static double tensorBytes(Type type) { return loom::detail::tensorBytes(type); }

  /// The mesh axes the stages' messages travel along (none without stages).
  ArrayAttr pipelineAxes;

  /// Ranks in the group of `axes`, and the distance between neighbours
  /// (the mesh's last axis is the innermost).
  std::pair<int64_t, int64_t> group(ArrayAttr axes) const {
    int64_t size = 1, stride = std::numeric_limits<int64_t>::max();
    ArrayRef<StringAttr> names = mesh.getAxisNames();
    ArrayRef<int64_t> sizes = mesh.getAxisSizes();
    for (Attribute a : axes) {
      StringRef name = cast<StringAttr>(a).getValue();
      int64_t inner = 1;
      for (size_t i = names.size(); i-- > 0;) {
        if (names[i].getValue() == name) {
          size *= sizes[i];
          stride = std::min(stride, inner);
          break;
        }
        inner *= sizes[i];
      }
    }
    return {size, stride == std::numeric_limits<int64_t>::max() ? 1 : stride};
  }

  /// The figures for a collective over a group spanning `span` ranks: the
  /// profile's fit (`measured`) within a node, else the link's.
  plan::Link
  link(int64_t span,
       const std::optional<plan::MeasuredCollective> &measured) const {
    bool inside = span <= c.devicesPerNode;
    if (inside && measured)
      return *measured;
    plan::Link l = inside ? c.intraNode : c.interNode;
    l.bandwidth *= c.linkEfficiency;
    return l;
  }

  /// A ring over the group of `axes` moving `bytes`: within a node, the
  /// time the profile measured at that size when it measured a group of
  /// this many ranks; else `passes` (n - 1) latencies and passes (n - 1) / n
  /// of the bytes over the bandwidth (2 passes for all-reduce, 1 for
  /// all-gather and all-to-all). A started all-reduce is timed as on an
  /// idle link (Cluster::allReduceStarted): calibrate's all-reduce while
  /// computing overstated the measured exposed time of overlapped gradient
  /// buckets (bench/plan.py).
  double ring(double bytes, ArrayAttr axes, double passes,
              const std::optional<plan::MeasuredCollective> &measured) const {
    auto [size, stride] = group(axes);
    if (size <= 1)
      return 0;
    if (measured && size * stride <= c.devicesPerNode &&
        measured->ranks == size)
      if (std::optional<double> t = measured->timeFor(bytes))
        return *t;
    plan::Link l = link(size * stride, measured);
    double g = size;
    return passes * ((g - 1) * l.latency + (g - 1) / g * bytes / l.bandwidth);
  }
  double allReduce(double bytes, ArrayAttr axes) const {
    return ring(bytes, axes, 2, c.allReduce);
  }
  double startedAllReduce(double bytes, ArrayAttr axes) const {
    return ring(bytes, axes, 2,
                c.allReduceStarted ? c.allReduceStarted : c.allReduce);
  }
  double allGather(double bytes, ArrayAttr axes) const {
    return ring(bytes, axes, 1, c.allGather);
  }

  /// One message of `bytes` between neighbouring pipeline stages: the
  /// profile's times by size, else latency + bytes / bandwidth.
  double message(double bytes) const {
    if (c.p2p && 2 <= c.devicesPerNode)
      if (std::optional<double> t = c.p2p->timeFor(bytes))
        return *t;
    plan::Link l = link(2, c.p2p);
    return l.latency + bytes / l.bandwidth;
  }

  std::optional<double> collective(Operation *op) const {
    if (auto ar = dyn_cast<AllReduceOp>(op))
      return allReduce(tensorBytes(ar.getType()), ar.getMeshAxes());
    if (auto ag = dyn_cast<AllGatherOp>(op))
      return allGather(tensorBytes(ag.getType()), ag.getMeshAxes());
    // libloomrt reduces the whole input and keeps its block.
    if (auto rs = dyn_cast<ReduceScatterOp>(op))
      return allReduce(tensorBytes(rs.getInput().getType()), rs.getMeshAxes());
    if (auto a2a = dyn_cast<AllToAllOp>(op))
      return allGather(tensorBytes(a2a.getInput().getType()),
                       a2a.getMeshAxes());
    return std::nullopt;
  }

  static StringRef precisionOf(Type element) {
    if (element.isBF16())
      return "bf16";
    if (element.isF16())
      return "fp16";
    return "fp32";
  }

  /// Seconds of a local op; `flops` receives a product's FLOPs.
  double compute(Operation *op, double &flops) const {
    if (isa<ConstantOp, ReshapeOp, ShardOp, OptimizationBarrierOp,
            PipelineMarkOp, BlockIndexOp>(op))
      return 0;
    if (auto mm = dyn_cast<MatmulOp>(op)) {
      auto lhs = cast<RankedTensorType>(mm.getLhs().getType());
      auto rhs = cast<RankedTensorType>(mm.getRhs().getType());
      auto result = cast<RankedTensorType>(mm.getType());
      int64_t rank = result.getRank();
      double m = result.getDimSize(rank - 2), n = result.getDimSize(rank - 1);
      double k = lhs.getDimSize(mm.getTransposeLhs() ? lhs.getRank() - 2
                                                     : lhs.getRank() - 1);
      double batch = 1;
      for (int64_t i = 0; i < rank - 2; ++i)
        batch *= result.getDimSize(i);
      // A stack of rows times one matrix is one product of all the rows.
      if (rhs.getRank() == 2 && !mm.getTransposeLhs())
        m *= batch, batch = 1;
      flops = 2 * m * n * k * batch;
      double rate =
          c.gemmRate(m, n, k, precisionOf(lhs.getElementType()));
      return flops / rate + c.kernelOverhead * batch;
    }
    if (auto conv = dyn_cast<ConvOp>(op)) {
      flops = conv.getFlops();
      auto input = cast<RankedTensorType>(conv.getOperand(0).getType());
      return flops / c.gemmRate(1024, 1024, 1024,
                                precisionOf(input.getElementType())) +
             c.kernelOverhead;
    }
    double bandwidth = c.memoryBandwidth * c.memoryEfficiency;
    if (isFusible(op))
      return loopBytes.lookup(op) / bandwidth;
    auto cost = dyn_cast<CostOpInterface>(op);
    if (!cost)
      return 0;
    double bytes = double(cost.getBytesRead()) + cost.getBytesWritten();
    return bytes / bandwidth + c.kernelOverhead;
  }

  /// The loops loom-fuse-elementwise makes of a function's elementwise ops,
  /// after its rules: a producer is computed inside the loop of each
  /// elementwise consumer that does not broadcast it, except one that
  /// divides or calls a transcendental function and has several uses, which
  /// is computed once and read by each. A loop ends at an op none of whose
  /// results another loop computes, or whose result a non-elementwise op
  /// reads (a producer is then computed in its own loop and again in its
  /// elementwise consumers'). It reads each value from outside once (splat
  /// constants are folded into it) and writes the results used outside; a
  /// result that is only returned besides (the moments AdamW updates) is
  /// written by its consumer's loop, so AdamW's update of a parameter reads
  /// four tensors and writes three. Reductions are their own loops here,
  /// reading their whole input.
  class FusedLoops {
  public:
    double bytesEndingAt(Operation *op) {
      double bytes = 0;
      bool fusedSomewhere = false, readByOther = false, escapes = false;
      for (Value result : op->getResults())
        for (Operation *user : result.getUsers()) {
          if (fusedInto(result, user)) {
            fusedSomewhere = true;
            continue;
          }
          escapes = true;
          if (!isa<func::ReturnOp>(user))
            readByOther = true;
        }
      if (escapes)
        for (Value result : op->getResults())
          bytes += tensorBytes(result.getType());
      if (fusedSomewhere && !readByOther)
        return bytes; // computed in its consumers' loops
      // The loop's inputs: the values its ops read from outside it.
      llvm::DenseSet<Value> inputs;
      llvm::DenseSet<Operation *> seen;
      SmallVector<Operation *> stack = {op};
      while (!stack.empty()) {
        Operation *inner = stack.pop_back_val();
        if (!seen.insert(inner).second)
          continue;
        for (Value operand : inner->getOperands()) {
          if (fusedInto(operand, inner)) {
            stack.push_back(operand.getDefiningOp());
            continue;
          }
          DenseElementsAttr splat;
          bool folded =
              matchPattern(operand, m_Constant(&splat)) && splat.isSplat();
          if (!folded && inputs.insert(operand).second)
            bytes += tensorBytes(operand.getType());
        }
      }
      return bytes;
    }

  private:
    /// Whether `v` is computed inside the loop of `user` instead of read.
    bool fusedInto(Value v, Operation *user) {
      Operation *producer = v.getDefiningOp();
      if (!producer || !isFusible(producer) || !isFusible(user))
        return false;
      auto type = dyn_cast<RankedTensorType>(v.getType());
      auto result = dyn_cast<RankedTensorType>(user->getResult(0).getType());
      if (!(type && result && type.hasStaticShape() &&
            result.hasStaticShape() &&
            type.getNumElements() == result.getNumElements()))
        return false; // broadcast by `user`
      return v.hasOneUse() || !costly(producer);
    }

    /// Whether the loop computing `op` divides or calls a transcendental
    /// function.
    bool costly(Operation *op) {
      auto known = isCostly.find(op);
      if (known != isCostly.end())
        return known->second;
      bool result = isa<DivOp, PowOp, ExpOp, LogOp, SqrtOp, RsqrtOp,
                        ReciprocalOp, TanhOp, SigmoidOp, ErfOp, SinOp, CosOp,
                        SoftplusOp, SoftsignOp, GeluOp, EluOp>(op);
      for (Value operand : op->getOperands())
        if (!result && fusedInto(operand, op))
          result = costly(operand.getDefiningOp());
      return isCostly[op] = result;
    }

    llvm::DenseMap<Operation *, bool> isCostly;
  };

  /// Elementwise ops, with broadcasting: what loom-fuse-elementwise puts in
  /// one loop with its producers and consumers.
  static bool isFusible(Operation *op) {
    return op->hasTrait<OpTrait::Elementwise>() ||
           isa<AddOp, SubOp, MulOp, DivOp, PowOp, MaxOp, MinOp, WhereOp,
               CastOp, EqualOp, LessOp, LessEqualOp, GreaterOp,
               GreaterEqualOp>(op);
  }

  const Cluster &c;
  MeshAttr mesh;
  /// The bytes of the loop each elementwise op of the function being read
  /// ends (FusedLoops::bytesEndingAt).
  llvm::DenseMap<Operation *, double> loopBytes;
};

} // namespace

FailureOr<StepPrediction> mlir::loom::predictStep(ModuleOp module,
                                                  const Cluster &cluster) {
  Location loc = module.getLoc();
  MeshAttr mesh;
  for (auto meshOp : module.getOps<MeshOp>())
    mesh = meshOp.getMesh();
  if (!mesh)
    mesh = MeshAttr::get(module.getContext(), {}, {});
  std::vector<std::pair<int64_t, func::FuncOp>> funcs;
  for (auto func : module.getOps<func::FuncOp>()) {
    StringRef name = func.getSymName();
    int64_t stage;
    if (name.consume_front("train_step_stage") && !name.getAsInteger(10, stage))
      funcs.push_back({stage, func});
  }
  if (funcs.empty())
    if (auto func = module.lookupSymbol<func::FuncOp>("train_step"))
      funcs.push_back({0, func});
  if (funcs.empty())
    return emitError(loc) << "the module has no training step to time";
  StepModel model(cluster, mesh);
  std::vector<Program> programs;
  for (auto [stage, func] : funcs)
    programs.push_back(model.program(func, stage));
  if (failed(model.run(programs, loc)))
    return failure();
  StepPrediction out;
  for (const Program &p : programs)
    if (p.time >= out.step) {
      out.step = p.time;
      out.compute = p.compute;
      out.exposedComm = p.exposedComm;
      out.waiting = std::max(0.0, p.time - p.compute - p.exposedComm);
      out.flops = p.flops;
    }
  return out;
}

//===----------------------------------------------------------------------===//
// The search
//===----------------------------------------------------------------------===//

namespace {

struct Candidate {
  plan::Plan plan;
  CompilerOptions options;
  StepPrediction prediction;
  double step = 0;
  std::optional<int64_t> bytes;
  /// --input-shape flags giving the model the plan's microbatch.
  std::string shapeFlags;

  std::string flags() const {
    std::string out = plan.flags();
    if (!shapeFlags.empty())
      out += (out.empty() ? "" : " ") + shapeFlags;
    return out;
  }
};

/// Collects the first error a candidate's compilation reports instead of
/// printing it.
class QuietDiagnostics {
public:
  explicit QuietDiagnostics(MLIRContext *context)
      : handler(context, [this](Diagnostic &d) {
          if (d.getSeverity() == DiagnosticSeverity::Error && first.empty())
            first = d.str();
          return success();
        }) {}
  std::string take() {
    std::string out = first.empty() ? "the compilation failed" : first;
    first.clear();
    return out;
  }

private:
  std::string first;
  ScopedDiagnosticHandler handler;
};

/// The model's data inputs with a batch dimension: name and shape.
struct DataInput {
  std::string name;
  SmallVector<int64_t> shape;
};

std::string shapeText(ArrayRef<int64_t> shape) {
  std::string out;
  for (int64_t d : shape)
    out += (out.empty() ? "" : "x") + std::to_string(d);
  return out;
}

LogicalResult readInputs(MLIRContext &context, const CompilerOptions &base,
                         std::vector<DataInput> &inputs, int64_t &batch) {
  OwningOpRef<ModuleOp> module = loadModel(context, base);
  if (!module)
    return failure();
  func::FuncOp entry;
  for (auto func : module->getOps<func::FuncOp>())
    if (func.isPublic() && !func.isExternal()) {
      entry = func;
      break;
    }
  if (!entry)
    return emitError(module->getLoc()) << "the model has no function";
  batch = 0;
  for (auto [index, type] : llvm::enumerate(entry.getArgumentTypes())) {
    auto name = entry.getArgAttrOfType<StringAttr>(index, "loom.input");
    auto tensor = dyn_cast<RankedTensorType>(type);
    if (!name || !tensor || tensor.getRank() == 0)
      continue;
    if (!batch)
      batch = tensor.getDimSize(0);
    if (tensor.getDimSize(0) == batch)
      inputs.push_back({name.getValue().str(),
                        SmallVector<int64_t>(tensor.getShape())});
  }
  if (!batch)
    return emitError(module->getLoc())
           << "the model has no input with a batch dimension to plan for";
  return success();
}

std::vector<std::array<int64_t, 3>> meshes(int64_t devices) {
  std::vector<std::array<int64_t, 3>> out;
  for (int64_t dp = 1; dp <= devices; ++dp)
    for (int64_t tp = 1; dp * tp <= devices; ++tp)
      if (devices % (dp * tp) == 0)
        out.push_back({dp, tp, devices / (dp * tp)});
  return out;
}

double available(const Cluster &c) {
  return c.memoryBytes * (1 - c.memoryMargin) - c.reservedBytes;
}

std::string mib(double bytes) {
  return llvm::formatv("{0:F1} MiB", bytes / (1024.0 * 1024)).str();
}

} // namespace

LogicalResult mlir::loom::planAndCompile(MLIRContext &context,
                                         const CompilerOptions &base,
                                         const PlanOptions &options) {
  Location loc = UnknownLoc::get(&context);
  assert(base.train && base.mesh.empty() &&
         "a training compilation without a mesh (loomc checks the flags)");
  llvm::Expected<Cluster> loaded = plan::loadCluster(options.clusterPath);
  if (!loaded)
    return emitError(loc) << llvm::toString(loaded.takeError());
  const Cluster &cluster = *loaded;
  plan::SearchSpace fixed;
  if (!options.fix.empty()) {
    llvm::Expected<llvm::json::Object> fix = plan::parseFixList(options.fix);
    if (!fix)
      return emitError(loc) << "--plan-fix: " << llvm::toString(fix.takeError());
    if (llvm::Error e = plan::parseConstraints(*fix, fixed))
      return emitError(loc) << "--plan-fix: " << llvm::toString(std::move(e));
  }
  // --plan-simulate's other choices have no counterpart here yet: refused
  // rather than ignored.
  if (fixed.overlapGradReduce || fixed.gradReduceDtype)
    return emitError(loc)
           << "--plan-fix: overlap_grad_reduce and grad_reduce_dtype are "
              "--plan-simulate's; for an ONNX model give --overlap or "
              "--grad-reduce-dtype to loomc instead";
  int64_t devices = options.devices ? options.devices : cluster.devices();
  if (devices > cluster.devices())
    return emitError(loc) << "--plan-devices " << devices << " is more than "
                          << cluster.name << "'s " << cluster.devices()
                          << " devices";

  std::vector<DataInput> inputs;
  int64_t modelBatch = 0;
  if (failed(readInputs(context, base, inputs, modelBatch)))
    return failure();
  int64_t globalBatch = options.globalBatch ? options.globalBatch : modelBatch;

  auto quietHandler = std::make_unique<QuietDiagnostics>(&context);
  QuietDiagnostics &quiet = *quietHandler;
  // Samples per run of the compiled step: the model's batch, and halvings
  // of the global batch that the model accepts (a model whose reshapes fix
  // its batch takes only its own).
  // Up to 4 microbatches per device (enough to fill a pipeline of them
  // all) and at least 8.
  int64_t mostRuns = std::max<int64_t>(8, 4 * devices);
  std::vector<int64_t> microbatchSizes;
  for (int64_t b = globalBatch; b >= 1 && globalBatch / b <= mostRuns;
       b /= 2) {
    if (globalBatch % b)
      break;
    if (fixed.microbatch && *fixed.microbatch != b)
      continue;
    microbatchSizes.push_back(b);
    if (b % 2)
      break;
  }
  if (globalBatch % modelBatch == 0 &&
      !llvm::is_contained(microbatchSizes, modelBatch) &&
      (!fixed.microbatch || *fixed.microbatch == modelBatch))
    microbatchSizes.push_back(modelBatch);

  // Experts per mixture-of-experts layer (-1: the model has none; 0: not
  // known yet).
  int64_t experts = 0;
  std::vector<Candidate> candidates;
  /// Why candidates (or, without an example, whole batch sizes) could not
  /// be compiled: how many, and the first's flags.
  std::map<std::string, std::pair<int64_t, std::string>> failures;
  int64_t invalid = 0, considered = 0;
  auto note = [&](StringRef why, std::string example = "") {
    if (!example.empty())
      ++invalid;
    auto &entry = failures[why.str()];
    if (!entry.first++)
      entry.second = std::move(example);
  };

  std::vector<std::string> precisions;
  for (StringRef p : {"fp32", "bf16", "fp16"})
    if (cluster.peakFor(p) > 0 && (!fixed.precision || *fixed.precision == p))
      precisions.push_back(p.str());
  if (fixed.precision && precisions.empty())
    return emitError(loc) << "--plan-fix: " << cluster.name
                          << " has no figures for precision "
                          << *fixed.precision;
  std::vector<std::string> remats = {"none", "selective", "full"};
  if (fixed.remat)
    remats = {*fixed.remat};

  for (int64_t b : microbatchSizes) {
    CompilerOptions shaped = base;
    shaped.report = false;
    shaped.reportSvg.clear();
    shaped.schedulePng.clear();
    std::string shapeFlags;
    if (b != modelBatch)
      for (const DataInput &input : inputs) {
        SmallVector<int64_t> shape = input.shape;
        shape[0] = b;
        std::string spec = input.name + "=" + shapeText(shape);
        parseInputShapeOption(spec, shaped.import);
        shapeFlags += (shapeFlags.empty() ? "" : " ") +
                      std::string("--input-shape=") + spec;
      }
    // Imported once per batch size; every layout compiles a copy.
    OwningOpRef<ModuleOp> imported = loadModel(context, shaped);
    if (!imported) {
      note("the model does not take batches of " + std::to_string(b) + ": " +
           quiet.take());
      continue;
    }
    // The experts of the model's mixture-of-experts layers (the leading
    // dimension their stacked weights share), from one compilation: expert
    // parallelism splits them.
    if (!experts) {
      OwningOpRef<ModuleOp> probe = buildModule(
          OwningOpRef<ModuleOp>(imported->clone()), shaped, EmitPhase::Loom);
      experts = -1;
      if (auto step = probe ? probe->lookupSymbol<func::FuncOp>("train_step")
                            : func::FuncOp())
        for (unsigned i = 0; i < step.getNumArguments(); ++i)
          if (step.getArgAttr(i, kMoeExpertParamAttr))
            if (auto type = dyn_cast<RankedTensorType>(
                    step.getArgument(i).getType());
                type && type.getRank() > 0)
              experts = experts < 0 ? type.getDimSize(0)
                                    : std::gcd(experts, type.getDimSize(0));
      (void)quiet.take();
      if (fixed.ep && *fixed.ep > 1 && experts < 0) {
        quietHandler.reset();
        return emitError(loc) << "--plan-fix: ep=" << *fixed.ep
                              << " splits the experts of mixture-of-experts "
                                 "layers, and the model has none";
      }
    }
    int64_t runs = globalBatch / b;
    // Each mesh's data-parallel ranks, or some of them, may form an
    // expert-parallel axis instead (it splits the batch too).
    std::vector<std::array<int64_t, 4>> layouts;
    for (auto [dpAll, tp, pp] : meshes(devices))
      for (int64_t ep = 1; ep <= dpAll; ++ep)
        if (dpAll % ep == 0 &&
            (ep == 1 || (experts > 0 && experts % ep == 0 && pp == 1)))
          layouts.push_back({dpAll / ep, tp, pp, ep});
    for (auto [dp, tp, pp, ep] : layouts) {
      if ((fixed.dp && *fixed.dp != dp) || (fixed.tp && *fixed.tp != tp) ||
          (fixed.pp && *fixed.pp != pp) || (fixed.ep && *fixed.ep != ep))
        continue;
      if (tp > cluster.devicesPerNode)
        continue;
      if (b % (dp * ep)) {
        note("batches of " + std::to_string(b) + " do not divide over " +
             (ep > 1 ? "dp x ep=" + std::to_string(dp * ep)
                     : "dp=" + std::to_string(dp)));
        continue;
      }
      std::vector<int64_t> zeros;
      for (int64_t z = 0; z <= (dp > 1 ? (pp > 1 ? 1 : 3) : 0); ++z)
        if (!fixed.zero || *fixed.zero == z)
          zeros.push_back(z);
      std::vector<std::pair<std::string, int64_t>> schedules = {{"1f1b", 1}};
      if (pp > 1) {
        schedules = {{"1f1b", 1}, {"gpipe", 1}, {"zero-bubble", 1}};
        if (runs % pp == 0)
          schedules.push_back({"interleaved-1f1b", 2});
      } else if (runs > 1) {
        // Without pipeline stages a step is one run of the whole global
        // batch (the planner does not choose gradient accumulation).
        continue;
      }
      std::vector<bool> sequence = {false};
      if (tp > 1)
        sequence.push_back(true);
      if (fixed.sequenceParallel)
        sequence = {*fixed.sequenceParallel};
      for (auto &[schedule, virtualStages] : schedules) {
        if (!fixed.schedules.empty() &&
            !llvm::is_contained(fixed.schedules, schedule))
          continue;
        for (int64_t zero : zeros)
          for (const std::string &precision : precisions)
            for (const std::string &remat : remats)
              for (bool sp : sequence) {
                Candidate cand;
                cand.shapeFlags = shapeFlags;
                plan::Plan &p = cand.plan;
                p.dp = dp, p.tp = tp, p.pp = pp, p.ep = ep, p.zero = zero;
                p.microbatch = b, p.microbatches = pp > 1 ? runs : 1;
                p.schedule = pp > 1 ? schedule : "1f1b";
                p.virtualStages = virtualStages;
                p.precision = precision, p.remat = remat;
                p.sequenceParallel = sp;
                // Given to loomc, not chosen: shown where it applies.
                p.gradReduceDtype = dp > 1 ? base.gradReduceDtype : "fp32";
                CompilerOptions &o = cand.options;
                o = shaped;
                o.mesh = devices > 1 ? p.mesh() : "";
                o.tpPlan = tp > 1 ? "auto" : "none";
                o.sequenceParallel = sp;
                o.zero = zero;
                o.precision = precision;
                o.remat = remat;
                if (pp > 1) {
                  o.microbatches = runs;
                  o.pipelineSchedule = schedule;
                  o.virtualStages = virtualStages;
                }
                if (precision == "fp16")
                  o.train->lossScale = "dynamic";
                ++considered;
                OwningOpRef<ModuleOp> module = buildModule(
                    OwningOpRef<ModuleOp>(imported->clone()), o,
                    EmitPhase::Loom);
                std::string example = "--mesh " + p.mesh() + " " + cand.flags();
                if (!module) {
                  note(quiet.take(), example);
                  continue;
                }
                // A layout that splits nothing has every rank compute the
                // whole step (a tensor-parallel plan that found no layers).
                bool communicates = false;
                module->walk([&](Operation *op) {
                  if (isa<AllReduceOp, AllReduceStartOp, AllGatherOp,
                          ReduceScatterOp, AllToAllOp, SendOp>(op))
                    communicates = true;
                });
                if (devices > 1 && !communicates) {
                  note("the layout splits nothing over the devices: every "
                       "rank would compute the whole step",
                       example);
                  continue;
                }
                FailureOr<StepPrediction> step =
                    predictStep(*module, cluster);
                if (failed(step)) {
                  note(quiet.take(), example);
                  continue;
                }
                cand.prediction = *step;
                cand.step = step->step;
                candidates.push_back(std::move(cand));
              }
      }
    }
  }
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const Candidate &a, const Candidate &b) {
                     return a.step < b.step;
                   });

  // Memory of the fastest, compiled as far as the buffer plan, until `top`
  // fit.
  double room = available(cluster);
  std::vector<Candidate *> shown;
  int64_t outOfMemory = 0, timed = candidates.size();
  for (Candidate &cand : candidates) {
    if (int64_t(shown.size()) >= options.top)
      break;
    int64_t bytes = 0;
    if (!buildModule(context, cand.options, EmitPhase::Obj, &bytes)) {
      // Timed, but its lowering failed: counted with those that cannot be
      // compiled.
      --timed;
      note(quiet.take(), "--mesh " + cand.plan.mesh() + " " + cand.flags());
      continue;
    }
    cand.bytes = bytes;
    if (bytes > room) {
      ++outOfMemory;
      continue;
    }
    shown.push_back(&cand);
  }

  // From here on, errors are the user's to see.
  quietHandler.reset();
  llvm::raw_ostream &os = llvm::outs();
  os << "plans for " << base.inputPath << " on " << devices << " of "
     << cluster.name << "'s devices (" << cluster.device << "), "
     << globalBatch << " samples per step:\n";
  int width = 5;
  for (Candidate *cand : shown)
    width = std::max<int>(width, cand->flags().size());
  if (!shown.empty())
    os << llvm::format("  %-3s %-14s %-*s %10s %9s %9s %9s %11s\n", "#",
                       "mesh", width, "flags", "step", "compute", "comm",
                       "wait", "memory");
  for (auto [index, cand] : llvm::enumerate(shown)) {
    const StepPrediction &s = cand->prediction;
    os << llvm::format("  %-3zu %-14s %-*s %7.2f ms %6.2f ms %6.2f ms "
                       "%6.2f ms %11s\n",
                       index + 1, cand->plan.mesh().c_str(), width,
                       cand->flags().c_str(), cand->step * 1e3,
                       s.compute * 1e3, s.exposedComm * 1e3, s.waiting * 1e3,
                       mib(*cand->bytes).c_str());
  }
  os << considered << " candidates: " << timed << " timed, " << outOfMemory << " of the fastest over the "
     << mib(room) << " a device offers, " << invalid
     << " that cannot be compiled";
  os << (failures.empty() ? "\n" : ":\n");
  for (auto &[why, entry] : failures) {
    os << "  " << entry.first << " x " << why;
    if (!entry.second.empty())
      os << " (" << (entry.first > 1 ? "first: " : "") << entry.second << ")";
    os << "\n";
  }
  os.flush();

  if (!options.jsonPath.empty()) {
    llvm::json::Array rows;
    for (Candidate *cand : shown) {
      const plan::Plan &p = cand->plan;
      rows.push_back(llvm::json::Object{
          {"mesh", p.mesh()},
          {"flags", cand->flags()},
          {"dp", p.dp},
          {"tp", p.tp},
          {"pp", p.pp},
          {"ep", p.ep},
          {"zero", p.zero},
          {"microbatch", p.microbatch},
          {"microbatches", p.microbatches},
          {"schedule", p.schedule},
          {"precision", p.precision},
          {"remat", p.remat},
          {"sequence_parallel", p.sequenceParallel},
          {"step_ms", cand->step * 1e3},
          {"compute_ms", cand->prediction.compute * 1e3},
          {"exposed_comm_ms", cand->prediction.exposedComm * 1e3},
          {"wait_ms", cand->prediction.waiting * 1e3},
          {"gemm_flops_per_rank", cand->prediction.flops},
          {"memory_bytes", *cand->bytes},
      });
    }
    std::error_code ec;
    llvm::raw_fd_ostream out(options.jsonPath, ec);
    if (ec)
      return emitError(loc) << "cannot write " << options.jsonPath << ": "
                            << ec.message();
    out << llvm::formatv("{0:2}", llvm::json::Value(std::move(rows))) << "\n";
  }

  if (shown.empty())
    return emitError(loc) << "no plan fits " << devices << " devices of "
                          << cluster.name;
  if (options.planOnly)
    return success();
  Candidate &best = *shown.front();
  CompilerOptions chosen = best.options;
  chosen.report = base.report;
  chosen.reportSvg = base.reportSvg;
  chosen.schedulePng = base.schedulePng;
  os << "compiling plan 1: --mesh " << best.plan.mesh() << " "
     << best.flags() << "\n";
  os.flush();
  return compile(context, chosen);
}
