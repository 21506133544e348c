//===- RaiseMoe.cpp - dense mixture-of-experts exports as loom.moe --------===//
//
// PyTorch's usual mixture-of-experts modules export densely: the router's
// softmax and top-k, one small feed-forward network per expert (its own
// nn.Linear weights), and a combine that weights each expert's output by its
// gate where the token chose it, written with masks in a loop over experts,
// with one_hot masks (Mixtral), or with a gather of the stacked outputs.
// This pass finds such layers and replaces them with one `loom.moe` over the
// experts' weights stacked along a new leading dimension, so the routing
// pass, the capacity routings and expert parallelism apply to them.
//
// A layer is recognized in two steps:
//
// 1. Structure: a `loom.top_k` over the last axis of a `loom.softmax` of
//    router logits `[N, E]`, and E expert networks on one `[N, D]` input,
//    each `fc2(act(fc1 x + b1) [* (fc3 x + b3)]) + b2` over parameters, with
//    the same activation (relu, gelu, silu as `x * sigmoid(x)`, or erf's
//    exact gelu) and the same biases.
// 2. Meaning: the ops between the top-k results, the experts' outputs and
//    the layer's output are evaluated on random routing decisions and
//    random expert outputs (twice, after one probe per expert that finds
//    which expert each output is). The value that equals the sum over the
//    token's chosen experts of gate times output, with the top-k values as
//    gates or renormalized over the k, is the layer's output. Whatever
//    the ops are (masks, one_hot, gathers, transposes), only their result
//    counts.
//
// A top-k over softmax probabilities that fails either step stays as it is
// (dense, and correct); `report` says why.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialects/Loom/LoomDialect.h"
#include "dialects/Loom/LoomOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <random>

namespace mlir::loom {
#define GEN_PASS_DEF_LOOMRAISEMOEPASS
#include "passes/Transforms/Passes.h.inc"

namespace {

//===----------------------------------------------------------------------===//
// A small evaluator for the combine's ops (static shapes, values as double)
//===----------------------------------------------------------------------===//

struct Array {
  SmallVector<int64_t> shape;
  std::vector<double> data;

  int64_t size() const {
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    return n;
  }
};

SmallVector<int64_t> stridesOf(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> strides(shape.size(), 1);
  for (int64_t d = (int64_t)shape.size() - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * shape[d + 1];
  return strides;
}

/// Calls fn(linear, index) for every index of `shape` in row-major order.
template <typename Fn> void forEachIndex(ArrayRef<int64_t> shape, Fn &&fn) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  SmallVector<int64_t> index(shape.size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    fn(i, ArrayRef<int64_t>(index));
    for (int64_t d = (int64_t)shape.size() - 1; d >= 0; --d) {
      if (++index[d] < shape[d])
        break;
      index[d] = 0;
    }
  }
}

/// The element of `a` that numpy broadcasting pairs with `index` of a
/// result of rank `index.size()`.
double broadcastAt(const Array &a, ArrayRef<int64_t> index) {
  int64_t offset = (int64_t)index.size() - (int64_t)a.shape.size();
  int64_t at = 0;
  for (size_t d = 0; d < a.shape.size(); ++d)
    at = at * a.shape[d] + (a.shape[d] == 1 ? 0 : index[d + offset]);
  return a.data[at];
}

/// An index into a dimension of `size`, negative ones counting from the
/// end; none when out of range.
std::optional<int64_t> wrapIndex(double value, int64_t size) {
  int64_t i = (int64_t)value;
  if (i < 0)
    i += size;
  if (i < 0 || i >= size)
    return std::nullopt;
  return i;
}

class Evaluator {
public:
  /// Element-operations this evaluator may spend before giving up.
  static constexpr int64_t kBudget = int64_t(1) << 27;

  void set(Value v, Array a) { values[v] = std::move(a); }
  const Array *get(Value v) {
    auto it = values.find(v);
    return it == values.end() ? nullptr : &it->second;
  }
  bool overBudget() const { return spent > kBudget; }

  /// Evaluates `op` if every operand is known (a constant is); returns
  /// false when it cannot.
  bool evaluate(Operation *op) {
    if (op->getNumResults() != 1)
      return false;
    auto type = dyn_cast<RankedTensorType>(op->getResult(0).getType());
    if (!type || !type.hasStaticShape())
      return false;
    if (auto constant = dyn_cast<ConstantOp>(op))
      return evaluateConstant(constant, type);
    // Every operand known or a constant, before any work.
    for (Value operand : op->getOperands())
      if (!get(operand) && !operand.getDefiningOp<ConstantOp>())
        return false;
    SmallVector<const Array *> in;
    for (Value operand : op->getOperands()) {
      const Array *a = get(operand);
      if (!a) {
        if (!evaluate(operand.getDefiningOp()))
          return false;
        a = get(operand);
      }
      in.push_back(a);
    }
    Array out;
    out.shape.assign(type.getShape().begin(), type.getShape().end());
    spent += out.size() + (in.empty() ? 0 : in[0]->size());
    if (overBudget())
      return false;
    out.data.assign(out.size(), 0.0);
    bool integer = !isa<FloatType>(type.getElementType());
    auto binary = [&](auto fn) {
      forEachIndex(out.shape, [&](int64_t i, ArrayRef<int64_t> index) {
        out.data[i] = fn(broadcastAt(*in[0], index), broadcastAt(*in[1], index));
      });
      return true;
    };
    bool ok =
        TypeSwitch<Operation *, bool>(op)
            .Case([&](AddOp) { return binary(std::plus<double>()); })
            .Case([&](SubOp) { return binary(std::minus<double>()); })
            .Case([&](MulOp) { return binary(std::multiplies<double>()); })
            .Case([&](DivOp) {
              return binary([&](double a, double b) {
                return integer ? std::trunc(a / b) : a / b;
              });
            })
            .Case([&](EqualOp) {
              return binary([](double a, double b) { return a == b ? 1.0 : 0.0; });
            })
            .Case([&](WhereOp) {
              forEachIndex(out.shape, [&](int64_t i, ArrayRef<int64_t> index) {
                out.data[i] = broadcastAt(*in[0], index) != 0
                                  ? broadcastAt(*in[1], index)
                                  : broadcastAt(*in[2], index);
              });
              return true;
            })
            .Case([&](NegOp) {
              for (int64_t i = 0; i < out.size(); ++i)
                out.data[i] = -in[0]->data[i];
              return true;
            })
            .Case([&](CastOp) {
              Type element = type.getElementType();
              for (int64_t i = 0; i < out.size(); ++i) {
                double v = in[0]->data[i];
                out.data[i] = element.isInteger(1) ? (v != 0 ? 1.0 : 0.0)
                              : integer            ? std::trunc(v)
                                                   : v;
              }
              return true;
            })
            .Case<ReshapeOp, ExpandOp>([&](Operation *) {
              if (isa<ReshapeOp>(op)) {
                out.data = in[0]->data;
                return true;
              }
              forEachIndex(out.shape, [&](int64_t i, ArrayRef<int64_t> index) {
                out.data[i] = broadcastAt(*in[0], index);
              });
              return true;
            })
            .Case([&](ReduceSumOp r) {
              ArrayRef<int64_t> axes = r.getAxes();
              const Array &a = *in[0];
              SmallVector<bool> reduced(a.shape.size(), axes.empty());
              for (int64_t axis : axes)
                reduced[axis < 0 ? axis + a.shape.size() : axis] = true;
              SmallVector<int64_t> kept;
              for (size_t d = 0; d < a.shape.size(); ++d)
                kept.push_back(reduced[d] ? 1 : a.shape[d]);
              SmallVector<int64_t> strides = stridesOf(kept);
              forEachIndex(a.shape, [&](int64_t i, ArrayRef<int64_t> index) {
                int64_t at = 0;
                for (size_t d = 0; d < index.size(); ++d)
                  at += (reduced[d] ? 0 : index[d]) * strides[d];
                out.data[at] += a.data[i];
              });
              return true;
            })
            .Case([&](TransposeOp t) {
              ArrayRef<int64_t> perm = t.getPerm();
              SmallVector<int64_t> strides = stridesOf(in[0]->shape);
              forEachIndex(out.shape, [&](int64_t i, ArrayRef<int64_t> index) {
                int64_t at = 0;
                for (size_t d = 0; d < index.size(); ++d)
                  at += index[d] * strides[perm[d]];
                out.data[i] = in[0]->data[at];
              });
              return true;
            })
            .Case([&](ConcatOp c) {
              int64_t axis = c.getAxis();
              int64_t offset = 0;
              SmallVector<int64_t> strides = stridesOf(out.shape);
              for (const Array *a : in) {
                forEachIndex(a->shape, [&](int64_t i, ArrayRef<int64_t> index) {
                  int64_t at = 0;
                  for (size_t d = 0; d < index.size(); ++d)
                    at += (index[d] + ((int64_t)d == axis ? offset : 0)) *
                          strides[d];
                  out.data[at] = a->data[i];
                });
                offset += a->shape[axis];
              }
              return true;
            })
            .Case([&](SliceOp s) {
              ArrayRef<int64_t> starts = s.getStarts(), steps = s.getSteps();
              SmallVector<int64_t> strides = stridesOf(in[0]->shape);
              forEachIndex(out.shape, [&](int64_t i, ArrayRef<int64_t> index) {
                int64_t at = 0;
                for (size_t d = 0; d < index.size(); ++d)
                  at += (starts[d] + index[d] * steps[d]) * strides[d];
                out.data[i] = in[0]->data[at];
              });
              return true;
            })
            .Case([&](GatherOp g) {
              // numpy.take(input, indices, axis).
              const Array &a = *in[0], &idx = *in[1];
              int64_t axis = g.getAxis(), rankIdx = idx.shape.size();
              SmallVector<int64_t> strides = stridesOf(a.shape);
              SmallVector<int64_t> idxStrides = stridesOf(idx.shape);
              bool bad = false;
              forEachIndex(out.shape, [&](int64_t i, ArrayRef<int64_t> index) {
                int64_t k = 0;
                for (int64_t d = 0; d < rankIdx; ++d)
                  k += index[axis + d] * idxStrides[d];
                std::optional<int64_t> pick = wrapIndex(idx.data[k], a.shape[axis]);
                if (!pick) {
                  bad = true;
                  return;
                }
                int64_t at = 0;
                for (int64_t d = 0; d < (int64_t)a.shape.size(); ++d) {
                  int64_t v = d < axis    ? index[d]
                              : d == axis ? *pick
                                          : index[d - 1 + rankIdx];
                  at += v * strides[d];
                }
                out.data[i] = a.data[at];
              });
              return !bad;
            })
            .Case([&](GatherElementsOp g) {
              const Array &a = *in[0], &idx = *in[1];
              int64_t axis = g.getAxis();
              SmallVector<int64_t> strides = stridesOf(a.shape);
              bool bad = false;
              forEachIndex(out.shape, [&](int64_t i, ArrayRef<int64_t> index) {
                std::optional<int64_t> pick = wrapIndex(idx.data[i], a.shape[axis]);
                if (!pick) {
                  bad = true;
                  return;
                }
                int64_t at = 0;
                for (size_t d = 0; d < index.size(); ++d)
                  at += ((int64_t)d == axis ? *pick : index[d]) * strides[d];
                out.data[i] = a.data[at];
              });
              return !bad;
            })
            .Case([&](OneHotOp h) {
              const Array &idx = *in[0], &onOff = *in[1];
              int64_t depth = h.getDepth(), axis = h.getAxis();
              forEachIndex(out.shape, [&](int64_t i, ArrayRef<int64_t> index) {
                SmallVector<int64_t> at(index.begin(), index.end());
                int64_t cls = at[axis];
                at.erase(at.begin() + axis);
                int64_t pos = 0;
                for (size_t d = 0; d < at.size(); ++d)
                  pos = pos * idx.shape[d] + at[d];
                int64_t v = (int64_t)idx.data[pos];
                if (v < 0)
                  v += depth;
                out.data[i] = onOff.data[v == cls ? 1 : 0];
              });
              return true;
            })
            .Default([](Operation *) { return false; });
    if (!ok)
      return false;
    values[op->getResult(0)] = std::move(out);
    return true;
  }

private:
  bool evaluateConstant(ConstantOp op, RankedTensorType type) {
    auto dense = dyn_cast<DenseElementsAttr>(op.getValue());
    spent += type.getNumElements();
    if (!dense || overBudget())
      return false;
    Array a;
    a.shape.assign(type.getShape().begin(), type.getShape().end());
    if (isa<FloatType>(type.getElementType())) {
      for (APFloat v : dense.getValues<APFloat>())
        a.data.push_back(v.convertToDouble());
    } else if (isa<IntegerType>(type.getElementType())) {
      bool boolean = type.getElementType().isInteger(1);
      for (APInt v : dense.getValues<APInt>())
        a.data.push_back(boolean ? (double)v.getBoolValue()
                                 : (double)v.getSExtValue());
    } else {
      return false;
    }
    values[op.getResult()] = std::move(a);
    return true;
  }

  DenseMap<Value, Array> values;
  int64_t spent = 0;
};

//===----------------------------------------------------------------------===//
// Structure: the router and the experts
//===----------------------------------------------------------------------===//

/// `lhs · rhs` (`rhs` read transposed when it is `[out, in]`) over a
/// parameter, plus an optional bias parameter.
struct Linear {
  Value input;
  BlockArgument weight;
  bool transposed = false; // the weight is [out, in]
  BlockArgument bias;
};

bool isParameter(Value v) {
  auto arg = dyn_cast<BlockArgument>(v);
  if (!arg)
    return false;
  auto func = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
  return func && func.getArgAttr(arg.getArgNumber(), "loom.param");
}

std::optional<Linear> matchLinear(Value v) {
  Linear l;
  if (auto add = v.getDefiningOp<AddOp>()) {
    for (int i = 0; i < 2; ++i) {
      Value bias = add->getOperand(i), rest = add->getOperand(1 - i);
      auto biasType = dyn_cast<RankedTensorType>(bias.getType());
      auto restType = dyn_cast<RankedTensorType>(rest.getType());
      if (isParameter(bias) && biasType && biasType.getRank() == 1 &&
          restType && restType.getRank() == 2 &&
          biasType.getDimSize(0) == restType.getDimSize(1) &&
          rest.getDefiningOp<MatmulOp>()) {
        l.bias = cast<BlockArgument>(bias);
        v = rest;
        break;
      }
    }
    if (!l.bias)
      return std::nullopt;
  }
  auto matmul = v.getDefiningOp<MatmulOp>();
  if (!matmul || matmul.getTransposeLhs() ||
      cast<RankedTensorType>(matmul.getRhs().getType()).getRank() != 2 ||
      cast<RankedTensorType>(matmul.getLhs().getType()).getRank() != 2)
    return std::nullopt;
  // The weight, or its transpose (PyTorch exports a bias-free nn.Linear as
  // MatMul(x, Transpose(W))).
  Value weight = matmul.getRhs();
  l.transposed = matmul.getTransposeRhs();
  if (auto t = weight.getDefiningOp<TransposeOp>();
      t && t.getPerm() == ArrayRef<int64_t>{1, 0}) {
    weight = t.getInput();
    l.transposed = !l.transposed;
  }
  if (!isParameter(weight))
    return std::nullopt;
  l.input = matmul.getLhs();
  l.weight = cast<BlockArgument>(weight);
  return l;
}

bool isScalarConstant(Value v, double want) {
  auto constant = v.getDefiningOp<ConstantOp>();
  auto dense = constant ? dyn_cast<DenseElementsAttr>(constant.getValue())
                        : DenseElementsAttr();
  if (!dense || !dense.isSplat() || !isa<FloatType>(dense.getElementType()))
    return false;
  return std::abs(dense.getSplatValue<APFloat>().convertToDouble() - want) <
         1e-6 * std::max(1.0, std::abs(want));
}

/// The other operand of a commutative binary op whose one operand is
/// `known`-ish; null when neither matches.
template <typename Op>
Value otherOperand(Value v, function_ref<bool(Value)> matches) {
  auto op = v.getDefiningOp<Op>();
  if (!op)
    return {};
  if (matches(op->getOperand(0)))
    return op->getOperand(1);
  if (matches(op->getOperand(1)))
    return op->getOperand(0);
  return {};
}

/// The activation that makes `v` from `a`: relu, gelu (the op, or erf's
/// exact form `a * (erf(a / sqrt 2) + 1) * 0.5`), silu (`a * sigmoid(a)`).
std::optional<std::pair<MoeActivation, Value>> matchActivation(Value v) {
  if (auto relu = v.getDefiningOp<ReluOp>())
    return std::make_pair(MoeActivation::Relu, relu.getInput());
  if (auto gelu = v.getDefiningOp<GeluOp>())
    return std::make_pair(gelu.getApproximate() ? MoeActivation::GeluTanh
                                                : MoeActivation::Gelu,
                          gelu.getInput());
  if (auto mul = v.getDefiningOp<MulOp>()) {
    for (int i = 0; i < 2; ++i) {
      Value a = mul->getOperand(i), s = mul->getOperand(1 - i);
      if (auto sigmoid = s.getDefiningOp<SigmoidOp>();
          sigmoid && sigmoid.getInput() == a)
        return std::make_pair(MoeActivation::Silu, a);
    }
    // (a * (erf(a / sqrt2) + 1)) * 0.5
    Value inner = otherOperand<MulOp>(
        v, [](Value c) { return isScalarConstant(c, 0.5); });
    if (auto product = inner ? inner.getDefiningOp<MulOp>() : MulOp()) {
      for (int i = 0; i < 2; ++i) {
        Value a = product->getOperand(i), rest = product->getOperand(1 - i);
        Value erfValue = otherOperand<AddOp>(
            rest, [](Value c) { return isScalarConstant(c, 1.0); });
        auto erf = erfValue ? erfValue.getDefiningOp<ErfOp>() : ErfOp();
        auto div = erf ? erf.getInput().getDefiningOp<DivOp>() : DivOp();
        if (div && div.getLhs() == a &&
            isScalarConstant(div.getRhs(), std::sqrt(2.0)))
          return std::make_pair(MoeActivation::Gelu, a);
      }
    }
  }
  return std::nullopt;
}

/// One expert: `fc2(act(fc1 x) [* fc3 x])`.
struct Expert {
  Value output;
  Linear fc1, fc2;
  std::optional<Linear> fc3;
  MoeActivation activation;

  /// What experts of one layer share: input, activation, the form and
  /// types of every weight and bias.
  std::tuple<Value, MoeActivation, SmallVector<Type>, SmallVector<bool>>
  key() const {
    auto typeOf = [](Value v) { return v ? v.getType() : Type(); };
    SmallVector<Type> types{typeOf(fc1.weight), typeOf(fc1.bias),
                            typeOf(fc2.weight), typeOf(fc2.bias),
                            fc3 ? typeOf(fc3->weight) : Type(),
                            fc3 ? typeOf(fc3->bias) : Type()};
    SmallVector<bool> forms{(bool)fc3, fc1.transposed, fc2.transposed,
                            fc3 && fc3->transposed};
    return {fc1.input, activation, types, forms};
  }
};

std::optional<Expert> matchExpert(Value v) {
  Expert e;
  e.output = v;
  std::optional<Linear> fc2 = matchLinear(v);
  if (!fc2)
    return std::nullopt;
  e.fc2 = *fc2;
  Value hidden = fc2->input;
  std::optional<std::pair<MoeActivation, Value>> act = matchActivation(hidden);
  if (!act) {
    // Gated: act(fc1 x) * fc3 x, either order.
    auto mul = hidden.getDefiningOp<MulOp>();
    if (!mul)
      return std::nullopt;
    for (int i = 0; i < 2 && !act; ++i) {
      act = matchActivation(mul->getOperand(i));
      if (act)
        e.fc3 = matchLinear(mul->getOperand(1 - i));
    }
    if (!act || !e.fc3)
      return std::nullopt;
  }
  e.activation = act->first;
  std::optional<Linear> fc1 = matchLinear(act->second);
  if (!fc1 || (e.fc3 && e.fc3->input != fc1->input))
    return std::nullopt;
  e.fc1 = *fc1;
  return e;
}

//===----------------------------------------------------------------------===//
// Meaning: the combine, by evaluation
//===----------------------------------------------------------------------===//

struct Combine {
  Value output;
  bool normalize = false;
  /// order[e] = the index in the experts list of expert e (the router's
  /// column e).
  SmallVector<unsigned> order;
};

class CombineCheck {
public:
  CombineCheck(TopKOp top, ArrayRef<Expert> experts)
      : top(top), experts(experts) {
    auto idxType = top.getIndices().getType();
    n = idxType.getDimSize(0);
    k = idxType.getDimSize(1);
    e = top.getInput().getType().getDimSize(1);
    outType = cast<RankedTensorType>(experts[0].output.getType());
    // The ops that may compute the combine: everything after the top-k in
    // its block, in order (the experts' own ops have unknown operands).
    for (Operation *op = top->getNextNode(); op; op = op->getNextNode())
      ops.push_back(op);
  }

  /// Finds the combine's output, the gates' normalization and the experts'
  /// order; a message saying why not otherwise.
  FailureOr<Combine> run(std::string &why) {
    std::mt19937_64 rng(0x10e);
    if (n * k < e) {
      why = "the batch has too few tokens (" + std::to_string(n) + " x top-" +
            std::to_string(k) + ") to tell the " + std::to_string(e) +
            " experts apart";
      return failure();
    }
    Trial trial = randomTrial(rng, /*covering=*/true);
    // Probe a: expert a's output is all ones, the others' zero; the layer's
    // output is then, per token, the gate of the router column expert a is.
    // matches[v][normalize] = the column each probe found at v.
    DenseMap<Value, std::array<SmallVector<int64_t>, 2>> matches;
    SmallVector<Value> order;
    for (unsigned a = 0; a < experts.size(); ++a) {
      SmallVector<Array> outputs(experts.size(), constantArray(0.0));
      outputs[a] = constantArray(1.0);
      Evaluator ev;
      scan(ev, trial, outputs, [&](Value v, const Array &result) {
        for (bool normalize : {false, true}) {
          SmallVector<int64_t> &cols = matches[v][normalize];
          if (cols.size() != a)
            continue;
          for (int64_t col = 0; col < e; ++col)
            if (equalsProbe(result, trial, col, normalize)) {
              cols.push_back(col);
              break;
            }
        }
        if (a == 0 && matches.count(v) && llvm::find(order, v) == order.end())
          order.push_back(v);
      });
      if (ev.overBudget()) {
        why = "the layer is too large for the raising pass's check";
        return failure();
      }
    }
    // The first value where every probe found its own column.
    Combine found;
    for (Value v : order)
      for (bool normalize : {false, true}) {
        SmallVector<int64_t> cols = matches[v][normalize];
        if (found.output || (int64_t)cols.size() != (int64_t)experts.size())
          continue;
        SmallVector<int64_t> sorted = cols;
        llvm::sort(sorted);
        if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end())
          continue;
        found.output = v;
        found.normalize = normalize;
        found.order.assign(e, 0);
        for (auto [a, col] : llvm::enumerate(cols))
          found.order[col] = a;
      }
    if (!found.output) {
      why = "no value after the experts is their gated sum over the "
            "router's top-k choices";
      return failure();
    }
    // Two random checks of the whole sum.
    for (int t = 0; t < 2; ++t) {
      Trial check = randomTrial(rng);
      SmallVector<Array> outputs;
      std::normal_distribution<double> normal;
      for (size_t a = 0; a < experts.size(); ++a) {
        Array y = constantArray(0.0);
        for (double &v : y.data)
          v = normal(rng);
        outputs.push_back(std::move(y));
      }
      Evaluator ev;
      bool ok = false;
      scan(ev, check, outputs, [&](Value v, const Array &result) {
        if (v == found.output)
          ok = equalsSum(result, check, outputs, found);
      });
      if (!ok) {
        why = "the experts' combine is not their gated sum on random "
              "routing decisions";
        return failure();
      }
    }
    return found;
  }

private:
  struct Trial {
    Array values, indices;
  };

  Array constantArray(double v) {
    Array a;
    a.shape.assign(outType.getShape().begin(), outType.getShape().end());
    a.data.assign(a.size(), v);
    return a;
  }

  /// Random gates in (0.05, 1) and k distinct experts per token: random
  /// ones, or with `covering` experts (i * k + j) mod E for token i in a
  /// random order, so that every expert is chosen by some token and each
  /// probe's column is told apart from the others (none is all zeros).
  Trial randomTrial(std::mt19937_64 &rng, bool covering = false) {
    Trial t;
    t.values.shape = {n, k};
    t.indices.shape = {n, k};
    std::uniform_real_distribution<double> gate(0.05, 1.0);
    for (int64_t i = 0; i < n; ++i) {
      SmallVector<int64_t> cols;
      for (int64_t c = 0; c < (covering ? k : e); ++c)
        cols.push_back(covering ? (i * k + c) % e : c);
      std::shuffle(cols.begin(), cols.end(), rng);
      for (int64_t j = 0; j < k; ++j) {
        t.values.data.push_back(gate(rng));
        t.indices.data.push_back((double)cols[j]);
      }
    }
    return t;
  }

  double gateOf(const Trial &t, int64_t token, int64_t j, bool normalize) {
    double g = t.values.data[token * k + j];
    if (!normalize)
      return g;
    double sum = 0;
    for (int64_t i = 0; i < k; ++i)
      sum += t.values.data[token * k + i];
    return g / sum;
  }

  static bool close(double a, double b) {
    return std::abs(a - b) <= 1e-9 + 1e-9 * std::abs(b);
  }

  bool equalsProbe(const Array &result, const Trial &t, int64_t col,
                   bool normalize) {
    int64_t width = result.size() / n;
    for (int64_t token = 0; token < n; ++token) {
      double want = 0;
      for (int64_t j = 0; j < k; ++j)
        if ((int64_t)t.indices.data[token * k + j] == col)
          want += gateOf(t, token, j, normalize);
      for (int64_t c = 0; c < width; ++c)
        if (!close(result.data[token * width + c], want))
          return false;
    }
    return true;
  }

  bool equalsSum(const Array &result, const Trial &t,
                 ArrayRef<Array> outputs, const Combine &c) {
    int64_t width = result.size() / n;
    for (int64_t token = 0; token < n; ++token)
      for (int64_t col = 0; col < width; ++col) {
        double want = 0;
        for (int64_t j = 0; j < k; ++j) {
          int64_t chosen = (int64_t)t.indices.data[token * k + j];
          want += gateOf(t, token, j, c.normalize) *
                  outputs[c.order[chosen]].data[token * width + col];
        }
        if (std::abs(result.data[token * width + col] - want) >
            1e-9 * (1 + std::abs(want)))
          return false;
      }
    return true;
  }

  /// Evaluates the ops after the top-k in order, from the trial's top-k
  /// results and `outputs` as the experts' outputs, and calls
  /// visit(value, array) on every value of the experts' output type.
  void scan(Evaluator &ev, const Trial &t, ArrayRef<Array> outputs,
            function_ref<void(Value, const Array &)> visit) {
    ev.set(top.getValues(), t.values);
    ev.set(top.getIndices(), t.indices);
    for (auto [i, x] : llvm::enumerate(experts))
      ev.set(x.output, outputs[i]);
    for (Operation *op : ops) {
      if (isa<ConstantOp>(op) || op->getNumResults() != 1 ||
          ev.get(op->getResult(0)) || !ev.evaluate(op)) {
        if (ev.overBudget())
          return;
        continue;
      }
      Value result = op->getResult(0);
      if (result.getType() == outType)
        visit(result, *ev.get(result));
    }
  }

  TopKOp top;
  ArrayRef<Expert> experts;
  SmallVector<Operation *> ops;
  int64_t n = 0, k = 0, e = 0;
  RankedTensorType outType;
};

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

std::string nodeName(Operation *op) {
  StringRef node = onnxNodeOf(op->getLoc());
  return node.empty() ? std::string("(no ONNX node)") : "'" + node.str() + "'";
}

struct LoomRaiseMoePass : impl::LoomRaiseMoePassBase<LoomRaiseMoePass> {
  using Base::Base;

  /// `experts` stacked along a new leading dimension, each as `[rows,
  /// cols]` (`transpose`d from how it is stored when needed).
  Value stack(OpBuilder &b, Location loc, ArrayRef<Value> parts,
              bool transpose) {
    SmallVector<Value> rows;
    for (Value part : parts) {
      auto type = cast<RankedTensorType>(part.getType());
      if (transpose && type.getRank() == 2) {
        part = TransposeOp::create(b, loc, part, ArrayRef<int64_t>{1, 0});
        type = cast<RankedTensorType>(part.getType());
      }
      SmallVector<int64_t> shape{1};
      shape.append(type.getShape().begin(), type.getShape().end());
      rows.push_back(ReshapeOp::create(b, loc, type.clone(shape), part));
    }
    return ConcatOp::create(b, loc, rows, (uint64_t)0);
  }

  /// Raises the layer around `top`; returns a message saying why not.
  std::optional<std::string> raise(TopKOp top, func::FuncOp func) {
    auto softmax = top.getInput().getDefiningOp<SoftmaxOp>();
    auto probsType = top.getInput().getType();
    if (!softmax || probsType.getRank() != 2 || top.getAxis() != 1 ||
        softmax.getAxis() != 1 || !top.getLargest())
      return std::string("the top-k is not of the largest of [tokens, "
                         "experts] probabilities along the experts");
    if (!probsType.hasStaticShape())
      return std::string("the router's probabilities have a dynamic shape");
    Value logits = softmax.getInput();
    int64_t n = probsType.getDimSize(0), e = probsType.getDimSize(1);
    // The experts: networks over parameters on one [N, D] input.
    SmallVector<Expert> found;
    func.walk([&](Operation *op) {
      if (op->getNumResults() != 1 || !isa<AddOp, MatmulOp>(op))
        return;
      auto type = dyn_cast<RankedTensorType>(op->getResult(0).getType());
      if (!type || type.getRank() != 2 || !type.hasStaticShape() ||
          type.getDimSize(0) != n)
        return;
      if (std::optional<Expert> x = matchExpert(op->getResult(0)))
        if (cast<RankedTensorType>(x->fc1.input.getType()) == type)
          found.push_back(*x);
    });
    // Matmul results that a bias add completes are not experts of their own.
    llvm::erase_if(found, [&](const Expert &x) {
      return x.output.getDefiningOp<MatmulOp>() &&
             llvm::any_of(found, [&](const Expert &y) {
               auto add = y.output.getDefiningOp<AddOp>();
               return add && llvm::is_contained(add->getOperands(), x.output);
             });
    });
    if (found.empty())
      return "no expert networks (linear, activation, linear over "
             "parameters) on the tokens";
    // Groups of experts of one form (one input, one set of shapes), one
    // per router column; each is tried (a model with several layers has a
    // group per layer).
    SmallVector<SmallVector<Expert>> groups;
    for (const Expert &x : found) {
      auto it = llvm::find_if(groups, [&](const SmallVector<Expert> &g) {
        return g.front().key() == x.key();
      });
      if (it == groups.end())
        groups.push_back({x});
      else
        it->push_back(x);
    }
    std::string why;
    SmallVector<Expert> experts;
    FailureOr<Combine> combine = failure();
    for (SmallVector<Expert> &group : groups) {
      if ((int64_t)group.size() != e)
        continue;
      CombineCheck check(top, group);
      combine = check.run(why);
      if (succeeded(combine)) {
        experts = group;
        break;
      }
    }
    if (failed(combine)) {
      if (!why.empty())
        return why;
      size_t largest = 0;
      for (const SmallVector<Expert> &g : groups)
        largest = std::max(largest, g.size());
      return "found " + std::to_string(largest) +
             " expert networks of one form on the tokens, but the router "
             "has " +
             std::to_string(e) + " experts";
    }

    // Build the layer before its output's op.
    Operation *at = combine->output.getDefiningOp();
    OpBuilder b(at);
    Location loc = top.getLoc();
    auto collect = [&](auto get) {
      SmallVector<Value> parts;
      for (unsigned i : combine->order)
        parts.push_back(get(experts[i]));
      return parts;
    };
    const Expert &first = experts.front();
    Value fc1 = stack(b, loc, collect([](const Expert &x) -> Value {
                        return x.fc1.weight;
                      }),
                      !first.fc1.transposed);
    Value fc2 = stack(b, loc, collect([](const Expert &x) -> Value {
                        return x.fc2.weight;
                      }),
                      !first.fc2.transposed);
    Value fc1Bias, fc2Bias, fc3, fc3Bias;
    if (first.fc1.bias)
      fc1Bias = stack(b, loc, collect([](const Expert &x) -> Value {
                        return x.fc1.bias;
                      }),
                      false);
    if (first.fc2.bias)
      fc2Bias = stack(b, loc, collect([](const Expert &x) -> Value {
                        return x.fc2.bias;
                      }),
                      false);
    if (first.fc3) {
      fc3 = stack(b, loc, collect([](const Expert &x) -> Value {
                    return x.fc3->weight;
                  }),
                  !first.fc3->transposed);
      if (first.fc3->bias)
        fc3Bias = stack(b, loc, collect([](const Expert &x) -> Value {
                          return x.fc3->bias;
                        }),
                        false);
    }
    auto moe = MoeOp::create(
        b, loc, combine->output.getType(), first.fc1.input, logits, fc1, fc2,
        fc1Bias, fc2Bias, fc3, fc3Bias, MoeRouting::TopK, first.activation,
        (uint64_t)top.getK(), combine->normalize, llvm::APFloat(0.0),
        llvm::APFloat(0.0), llvm::APFloat(0.0));
    LogicalResult verified = success();
    {
      ScopedDiagnosticHandler quiet(moe.getContext(),
                                    [](Diagnostic &) { return success(); });
      verified = moe.verify();
    }
    if (failed(verified)) {
      // The op and the stacked weights built for it go.
      Operation *op = moe;
      while (op) {
        Operation *prev = op->getPrevNode();
        bool built = op == moe.getOperation() || op->use_empty();
        if (!built || !isa<MoeOp, ReshapeOp, ConcatOp, TransposeOp>(op))
          break;
        op->erase();
        op = prev;
      }
      return "the layer found does not verify as loom.moe";
    }
    combine->output.replaceAllUsesWith(moe.getResult());
    if (report)
      llvm::outs() << "raised a mixture-of-experts layer at "
                   << nodeName(top) << ": " << e << " experts ("
                   << stringifyMoeActivation(first.activation)
                   << (first.fc3 ? ", gated" : "")
                   << (first.fc1.bias ? ", biases" : "") << "), top-"
                   << top.getK()
                   << (combine->normalize ? " renormalized" : "") << "\n";
    return std::nullopt;
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    for (auto func : module.getOps<func::FuncOp>()) {
      SmallVector<TopKOp> tops;
      func.walk([&](TopKOp top) {
        if (top.getInput().getDefiningOp<SoftmaxOp>())
          tops.push_back(top);
      });
      bool raised = false;
      for (TopKOp top : tops) {
        std::optional<std::string> why = raise(top, func);
        if (!why) {
          raised = true;
          continue;
        }
        if (report)
          llvm::outs() << "top-k of router probabilities at " << nodeName(top)
                       << " stays dense: " << *why << "\n";
      }
      if (raised) {
        // The dense layers' ops are dead now.
        IRRewriter rewriter(func.getContext());
        (void)runRegionDCE(rewriter, func.getBody());
      }
    }
  }
};

} // namespace
} // namespace mlir::loom
