//===- Remat.cpp - recompute layers' activations in the backward pass -----===//
//
// Gradient checkpointing at layer granularity: the activations a recomputed
// layer's backward pass reads are computed again from the layer's inputs
// right before their first use, so they do not stay alive from the forward
// pass to the backward pass. See the pass description in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "passes/Transforms/Remat.h"
#include "passes/Passes.h"

#include "dialects/Loom/LoomOps.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <limits>

namespace mlir::loom {
#define GEN_PASS_DEF_LOOMREMATPASS
#include "passes/Transforms/Passes.h.inc"
} // namespace mlir::loom

using namespace mlir;
using namespace mlir::loom;

namespace {


/// The parts of a node name's path, without the node's own name:
/// "/gpt/blocks.0/attn/MatMul" -> ["gpt", "blocks.0", "attn"].
SmallVector<StringRef> pathOf(StringRef node) {
  SmallVector<StringRef> parts;
  node.split(parts, '/', /*MaxSplit=*/-1, /*KeepEmpty=*/false);
  if (!parts.empty())
    parts.pop_back();
  return parts;
}

/// Whether a path part is a numbered member of a list ("blocks.0", "h.11",
/// "layers_3"), and if so the list's name.
std::optional<StringRef> listOf(StringRef part) {
  size_t digits = part.size();
  while (digits > 0 && isdigit(static_cast<unsigned char>(part[digits - 1])))
    --digits;
  if (digits == part.size() || digits < 2 ||
      (part[digits - 1] != '.' && part[digits - 1] != '_'))
    return std::nullopt;
  return part.take_front(digits - 1);
}

/// The forward pass of a training step: its ops up to the one computing the
/// loss, in order.
FailureOr<SmallVector<Operation *>> forwardOps(func::FuncOp func) {
  Block &body = func.getBody().front();
  Operation *ret = body.getTerminator();
  Operation *lossOp = nullptr;
  for (unsigned i = 0; i < func.getNumResults(); ++i)
    if (auto name = func.getResultAttrOfType<StringAttr>(i, "loom.output"))
      if (name.getValue() == "loss")
        lossOp = ret->getOperand(i).getDefiningOp();
  if (!lossOp)
    return func.emitError("@")
           << func.getSymName()
           << " has no result named \"loss\" computed in it; is it a "
              "training step built by loom-build-train-step?";
  SmallVector<Operation *> ops;
  for (Operation &op : body) {
    ops.push_back(&op);
    if (&op == lossOp)
      break;
  }
  return ops;
}

/// The layer of each forward op (empty: outside every layer), at the
/// shallowest level of the node names' paths where a list has two or more
/// numbered members.
class LayerMap {
public:
  explicit LayerMap(ArrayRef<Operation *> forward) {
    // Per depth, the lists seen there and their numbered members.
    std::vector<llvm::StringMap<llvm::StringSet<>>> lists;
    for (Operation *op : forward) {
      SmallVector<StringRef> path = pathOf(onnxNodeOf(op->getLoc()));
      for (auto [depth, part] : llvm::enumerate(path)) {
        if (lists.size() <= depth)
          lists.resize(depth + 1);
        if (std::optional<StringRef> list = listOf(part))
          lists[depth][*list].insert(part);
      }
    }
    for (auto [d, atDepth] : llvm::enumerate(lists))
      if (llvm::any_of(atDepth, [](auto &list) {
            return list.getValue().size() >= 2;
          })) {
        depth = d;
        break;
      }
    if (!depth)
      return;
    for (Operation *op : forward) {
      SmallVector<StringRef> path = pathOf(onnxNodeOf(op->getLoc()));
      if (path.size() <= *depth || !listOf(path[*depth]))
        continue;
      std::string name;
      for (StringRef part : ArrayRef(path).take_front(*depth + 1))
        name += "/" + part.str();
      layerOf[op] = name;
    }
  }

  /// The layer `op` belongs to ("" for none).
  StringRef of(Operation *op) const {
    auto it = layerOf.find(op);
    return it == layerOf.end() ? StringRef() : StringRef(it->second);
  }

private:
  std::optional<size_t> depth;
  DenseMap<Operation *, std::string> layerOf;
};

int64_t flopsOf(Operation *op) {
  if (auto cost = dyn_cast<CostOpInterface>(op))
    return cost.getFlops();
  return 0;
}

/// The layers of `forward` in the order it first reaches them, with their
/// FLOPs.
std::vector<RematLayer> layersOf(ArrayRef<Operation *> forward,
                                 const LayerMap &layerMap) {
  std::vector<RematLayer> found;
  llvm::StringMap<size_t> index;
  for (Operation *op : forward) {
    StringRef layer = layerMap.of(op);
    if (layer.empty())
      continue;
    auto [it, added] = index.try_emplace(layer, found.size());
    if (added)
      found.push_back({layer.str(), 0});
    found[it->second].flops += flopsOf(op);
  }
  return found;
}

/// Bytes of a tensor value; unknown sizes count as very large, so the
/// minimum cut never prefers keeping them.
int64_t bytesOf(Value value) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (!type || !type.hasStaticShape())
    return int64_t{1} << 40;
  return type.getNumElements() *
         std::max<int64_t>(1, type.getElementTypeBitWidth() / 8);
}

/// Whether `value` is a function argument (a parameter, an input) seen
/// through views and collectives that only move it.
bool readsArgument(Value value) {
  while (Operation *def = value.getDefiningOp()) {
    if (!isa<ReshapeOp, TransposeOp, ExpandOp, CastOp, SliceOp, AllGatherOp,
             LocalBlockOp, WaitOp, OptimizationBarrierOp>(def))
      return false;
    value = def->getOperand(0);
  }
  return true;
}

/// Whether `value` is a boolean mask computed from the step's arguments
/// (readsArgument) and constants alone by side-effect-free ops (a causal
/// mask compared out of an input): a recomputed layer computes it again,
/// exactly, instead of reading it through a barrier, which would keep a
/// tensor of i1 alive across the step for the recomputation. (Such stored
/// masks were also slow to read, a byte per element, before
/// loom-byte-booleans; this was measured then at about 1 ms of a 44 ms fp32
/// step per layer on one thread.)
bool isArgumentMask(Value value) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  Operation *def = value.getDefiningOp();
  if (!def || !type || !type.getElementType().isInteger(1) ||
      def->getNumRegions() != 0 || !isMemoryEffectFree(def) ||
      def->hasTrait<OpTrait::ConstantLike>())
    return false;
  return llvm::all_of(def->getOperands(), [](Value operand) {
    Operation *producer = operand.getDefiningOp();
    return readsArgument(operand) ||
           producer->hasTrait<OpTrait::ConstantLike>() ||
           isArgumentMask(operand);
  });
}

/// Maximum flow (Dinic's algorithm) on a small graph, and the minimum cut
/// nearest the sink.
class MinCut {
public:
  static constexpr int64_t kInfinite = std::numeric_limits<int64_t>::max() / 4;

  explicit MinCut(int nodes) : edges(nodes) {}

  void addEdge(int from, int to, int64_t capacity) {
    edges[from].push_back({to, capacity, edges[to].size()});
    edges[to].push_back({from, 0, edges[from].size() - 1});
  }

  /// Runs the flow from `source` to `sink` and returns, for every node,
  /// whether it can still reach the sink through unsaturated edges (the
  /// sink's side of the cut nearest the sink).
  std::vector<bool> sinkSide(int source, int sink) {
    while (levelGraph(source, sink)) {
      std::vector<size_t> next(edges.size(), 0);
      while (push(source, sink, kInfinite, next) > 0) {
      }
    }
    std::vector<bool> side(edges.size(), false);
    std::vector<int> queue{sink};
    side[sink] = true;
    for (size_t i = 0; i < queue.size(); ++i)
      for (const Edge &back : edges[queue[i]]) {
        // `back` runs queue[i] -> back.to; its reverse is back.to -> queue[i].
        const Edge &forward = edges[back.to][back.reverse];
        if (!side[back.to] && forward.capacity > 0) {
          side[back.to] = true;
          queue.push_back(back.to);
        }
      }
    return side;
  }

private:
  struct Edge {
    int to;
    int64_t capacity;
    size_t reverse;
  };

  bool levelGraph(int source, int sink) {
    level.assign(edges.size(), -1);
    level[source] = 0;
    std::vector<int> queue{source};
    for (size_t i = 0; i < queue.size(); ++i)
      for (const Edge &e : edges[queue[i]])
        if (e.capacity > 0 && level[e.to] < 0) {
          level[e.to] = level[queue[i]] + 1;
          queue.push_back(e.to);
        }
    return level[sink] >= 0;
  }

  int64_t push(int node, int sink, int64_t limit, std::vector<size_t> &next) {
    if (node == sink)
      return limit;
    for (size_t &i = next[node]; i < edges[node].size(); ++i) {
      Edge &e = edges[node][i];
      if (e.capacity <= 0 || level[e.to] != level[node] + 1)
        continue;
      if (int64_t pushed = push(e.to, sink, std::min(limit, e.capacity), next)) {
        e.capacity -= pushed;
        edges[e.to][e.reverse].capacity += pushed;
        return pushed;
      }
    }
    return 0;
  }

  std::vector<std::vector<Edge>> edges;
  std::vector<int> level;
};

/// The values of `layer` to keep from the forward pass to the backward pass
/// when its matrix products with a parameter stay kept (selective
/// recomputation): the set of fewest bytes from which the values the
/// backward pass reads can be recomputed, a minimum cut of the layer's
/// graph. Each value is an edge in -> out weighing its bytes; an op links
/// its operands' outs to its results' ins; what the layer reads from
/// outside is free (the source), as are values the rest of the forward
/// pass reads (they are kept anyway); values an op that is not recomputed
/// produces hang from the source (kept if needed); values the backward
/// pass reads lead to the sink.
DenseSet<Value> keptBySelective(ArrayRef<Operation *> layerOps,
                                const DenseSet<Operation *> &recomputable,
                                const DenseSet<Operation *> &forwardSet) {
  DenseMap<Value, int> ids;
  for (Operation *op : layerOps)
    for (Value result : op->getResults())
      ids.try_emplace(result, 2 + 2 * static_cast<int>(ids.size()));
  const int source = 0, sink = 1;
  MinCut graph(2 + 2 * static_cast<int>(ids.size()));
  DenseSet<Operation *> inLayer(layerOps.begin(), layerOps.end());
  for (Operation *op : layerOps) {
    bool kept = !recomputable.contains(op) ||
                (isa<MatmulOp, ConvOp>(op) &&
                 llvm::any_of(op->getOperands(), readsArgument));
    for (Value result : op->getResults()) {
      int in = ids.lookup(result), out = in + 1;
      graph.addEdge(in, out, bytesOf(result));
      if (kept)
        graph.addEdge(source, in, MinCut::kInfinite);
      for (Value operand : op->getOperands()) {
        auto it = ids.find(operand);
        graph.addEdge(it == ids.end() ? source : it->second + 1, in,
                      MinCut::kInfinite);
      }
      for (Operation *user : result.getUsers()) {
        if (!forwardSet.contains(user))
          graph.addEdge(out, sink, MinCut::kInfinite);
        else if (!inLayer.contains(user))
          graph.addEdge(source, out, MinCut::kInfinite);
      }
    }
  }
  std::vector<bool> side = graph.sinkSide(source, sink);
  DenseSet<Value> keep;
  for (auto [value, in] : ids)
    if (!side[in] && side[in + 1])
      keep.insert(value);
  return keep;
}

struct LoomRematPass : loom::impl::LoomRematPassBase<LoomRematPass> {
  using Base::Base;

  /// Makes each layer of the forward pass read the values it takes from
  /// outside (other layers' outputs, embeddings) through one barrier per
  /// layer, as its recomputed copy reads them. Fusion then cannot pull the
  /// ops that computed an input (a residual stream's additions) into the
  /// layer's reductions in the forward pass alone, which would make the
  /// code generator sum in another order there than in the copy
  /// (loom-reassociate-reductions): with the barriers, a recomputed value
  /// equals the forward pass's bit for bit. Done in every mode, so that
  /// steps with and without recomputation compute the same. Boolean masks
  /// of the step's arguments are read as they are (isArgumentMask): they
  /// are exact, and a copy computes them again.
  void fence(ArrayRef<Operation *> forward, const LayerMap &layerMap) {
    OpBuilder b(&getContext());
    DenseMap<std::pair<Value, StringRef>, Value> fences;
    for (Operation *op : forward) {
      StringRef layer = layerMap.of(op);
      if (layer.empty())
        continue;
      for (OpOperand &operand : op->getOpOperands()) {
        Operation *def = operand.get().getDefiningOp();
        if (!def || def->hasTrait<OpTrait::ConstantLike>() ||
            layerMap.of(def) == layer || isArgumentMask(operand.get()))
          continue;
        Value &fenced = fences[{operand.get(), layer}];
        if (!fenced) {
          b.setInsertionPoint(op);
          fenced = OptimizationBarrierOp::create(b, operand.get().getLoc(),
                                                 operand.get());
          // With pipeline stages, the barrier runs in the layer's stage.
          if (Attribute stage = op->getAttr(kStageAttr))
            fenced.getDefiningOp()->setAttr(kStageAttr, stage);
        }
        operand.set(fenced);
      }
    }
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (mode != "none" && mode != "full" && mode != "selective" && mode != "layers") {
      module.emitError("remat mode must be none, selective, full or layers, "
                       "got \"")
          << mode << "\"";
      return signalPassFailure();
    }
    auto func = module.lookupSymbol<func::FuncOp>(entry);
    if (!func || func.isExternal()) {
      module.emitError() << "no function @" << entry << " to recompute in";
      return signalPassFailure();
    }
    if (mode == "none" && !fenceLayerInputs)
      return;
    FailureOr<SmallVector<Operation *>> forward = forwardOps(func);
    if (failed(forward))
      return signalPassFailure();
    LayerMap layerMap(*forward);
    if (mode == "none")
      return fence(*forward, layerMap);
    std::vector<RematLayer> found = layersOf(*forward, layerMap);
    if (found.empty()) {
      func.emitError("recomputation works layer by layer, and the ONNX node "
                     "names show no layers (numbered parts such as "
                     "/blocks.0/ or /h.3/ in the names' paths)");
      return signalPassFailure();
    }
    // Each chosen layer and whether it is recomputed selectively.
    llvm::StringMap<bool> chosen;
    if (mode != "layers") {
      for (const RematLayer &layer : found)
        chosen[layer.name] = mode == "selective";
    } else {
      for (auto [names, selective] :
           {std::pair(&layers, false), std::pair(&selectiveLayers, true)})
        for (const std::string &name : *names) {
          if (llvm::none_of(found, [&](const RematLayer &layer) {
                return layer.name == name;
              })) {
            std::string known;
            for (const RematLayer &layer : found)
              known += (known.empty() ? "" : ", ") + layer.name;
            func.emitError("no layer \"") << name << "\" to recompute (the "
                                          << "layers are " << known << ")";
            return signalPassFailure();
          }
          chosen[name] = selective;
        }
    }

    // The ops to recompute: forward ops of the chosen layers without
    // regions or side effects, and dropout (its masks are a function of
    // seed, step and index, so a copy draws the same ones).
    DenseSet<Operation *> recomputable;
    int64_t forwardFlops = 0;
    for (Operation *op : *forward) {
      forwardFlops += flopsOf(op);
      if (chosen.contains(layerMap.of(op)) && op->getNumRegions() == 0 &&
          (isMemoryEffectFree(op) || isa<DropoutOp>(op)) &&
          !op->hasTrait<OpTrait::ConstantLike>())
        recomputable.insert(op);
    }
    DenseSet<Operation *> forwardSet(forward->begin(), forward->end());
    SmallVector<Operation *> backward;
    for (Operation &op : func.getBody().front())
      if (!forwardSet.contains(&op))
        backward.push_back(&op);

    // A layer's outputs (the values later forward ops read) are kept: they
    // are alive until the next layer's backward pass anyway, which reads
    // them as they are. Selective layers also keep the minimum cut of their
    // graph.
    DenseSet<Value> kept;
    for (Operation *op : recomputable)
      for (Value result : op->getResults())
        if (llvm::any_of(result.getUsers(), [&](Operation *user) {
              return forwardSet.contains(user) &&
                     layerMap.of(user) != layerMap.of(op);
            }))
          kept.insert(result);
    for (const RematLayer &layer : found) {
      auto it = chosen.find(layer.name);
      if (it == chosen.end() || !it->second)
        continue;
      SmallVector<Operation *> layerOps;
      for (Operation *op : *forward)
        if (layerMap.of(op) == layer.name)
          layerOps.push_back(op);
      for (Value value :
           keptBySelective(layerOps, recomputable, forwardSet))
        kept.insert(value);
    }

    // Copies made before their first use in the backward pass, shared by
    // later uses; values read from outside go through barriers.
    OpBuilder b(&getContext());
    DenseMap<Value, Value> copies;
    DenseMap<std::pair<Value, Attribute>, Value> barriers, maskCopies;
    int64_t recomputedOps = 0, recomputedFlops = 0;
    // A layer's copies start from its inputs as the forward pass computed
    // them (the checkpoints): a value of another layer is kept, not
    // recomputed, so recomputing one layer never recomputes the layers
    // before it.
    // A barrier runs in the pipeline stage (`stage`, null without stages)
    // of the copy that reads it: a layer's recomputation reads the value
    // another stage sent it in the forward pass, and nothing is sent again.
    std::function<Value(Value, StringRef, Attribute)> copyOf =
        [&](Value v, StringRef layer, Attribute stage) -> Value {
      if (Value copy = copies.lookup(v))
        return copy;
      Operation *def = v.getDefiningOp();
      if (isArgumentMask(v)) {
        // Computed in the stage of the copy that reads it, once per stage.
        Value &mask = maskCopies[{v, stage}];
        if (!mask) {
          IRMapping mapping;
          for (Value operand : def->getOperands())
            mapping.map(operand, copyOf(operand, layer, stage));
          Operation *copy = b.clone(*def, mapping);
          if (stage)
            copy->setAttr(kStageAttr, stage);
          else
            copy->removeAttr(kStageAttr);
          ++recomputedOps;
          mask = copy->getResult(cast<OpResult>(v).getResultNumber());
        }
        return mask;
      }
      if (!def || !recomputable.contains(def) || layerMap.of(def) != layer ||
          kept.contains(v)) {
        if (def && def->hasTrait<OpTrait::ConstantLike>())
          return v;
        Value &barrier = barriers[{v, stage}];
        if (!barrier) {
          barrier = OptimizationBarrierOp::create(b, v.getLoc(), v);
          if (stage)
            barrier.getDefiningOp()->setAttr(kStageAttr, stage);
        }
        return barrier;
      }
      IRMapping mapping;
      for (Value operand : def->getOperands())
        mapping.map(operand, copyOf(operand, layer, def->getAttr(kStageAttr)));
      Operation *copy = b.clone(*def, mapping);
      ++recomputedOps;
      recomputedFlops += flopsOf(def);
      for (auto [result, copied] :
           llvm::zip(def->getResults(), copy->getResults()))
        copies[result] = copied;
      return copies.lookup(v);
    };
    for (Operation *op : backward)
      for (OpOperand &operand : op->getOpOperands()) {
        Operation *def = operand.get().getDefiningOp();
        if (!def || !recomputable.contains(def) || kept.contains(operand.get()))
          continue;
        b.setInsertionPoint(op);
        operand.set(copyOf(operand.get(), layerMap.of(def),
                           op->getAttr(kStageAttr)));
      }

    if (fenceLayerInputs)
      fence(*forward, layerMap);

    if (report) {
      llvm::raw_ostream &os = llvm::outs();
      os << "recomputation in @" << entry << ": " << chosen.size() << " of "
         << found.size() << " layers (";
      bool first = true;
      for (const RematLayer &layer : found)
        if (auto it = chosen.find(layer.name); it != chosen.end()) {
          os << (first ? "" : ", ") << layer.name
             << (it->second ? " selectively" : "");
          first = false;
        }
      os << "), " << recomputedOps << " ops, "
         << llvm::format("%lld FLOPs per step (%.1f%% of the forward "
                         "pass's %lld)\n",
                         static_cast<long long>(recomputedFlops),
                         forwardFlops ? 100.0 * recomputedFlops / forwardFlops
                                      : 0.0,
                         static_cast<long long>(forwardFlops));
      os.flush();
    }
  }
};

} // namespace

std::vector<RematLayer> mlir::loom::findRematLayers(func::FuncOp func) {
  FailureOr<SmallVector<Operation *>> forward = forwardOps(func);
  if (failed(forward))
    return {};
  return layersOf(*forward, LayerMap(*forward));
}
