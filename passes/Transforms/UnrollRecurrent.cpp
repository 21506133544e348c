//===- UnrollRecurrent.cpp - LSTM and GRU layers as per-step ops ----------===//
//
// Rewrites loom.lstm and loom.gru into their time steps (matmuls, gates,
// elementwise state updates), so that autodiff differentiates them through
// time with the gradients of ordinary ops. The sequence length is static, so
// the unrolled graph has one copy of the cell per step and direction.
//
//===----------------------------------------------------------------------===//

#include "passes/Transforms/UnrollRecurrent.h"

#include "dialects/Loom/LoomOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;
using namespace mlir::loom;

namespace {

struct Cell {
  OpBuilder &b;
  Location loc;
  Type element;

  Value slice(Value v, int64_t dim, int64_t start, int64_t size) {
    auto type = cast<RankedTensorType>(v.getType());
    SmallVector<int64_t> starts(type.getRank(), 0), limits(type.getShape()),
        steps(type.getRank(), 1);
    starts[dim] = start;
    limits[dim] = start + size;
    return SliceOp::create(b, loc, v, starts, limits, steps);
  }
  Value reshape(Value v, ArrayRef<int64_t> shape) {
    auto type = cast<RankedTensorType>(v.getType());
    return ReshapeOp::create(b, loc, type.clone(shape), v);
  }
  /// Row block `gate` (of `size` rows) of the direction-`d` slice of a
  /// `[dirs, G*H, n]` weight, as `[H, n]`.
  Value weight(Value w, int64_t d, int64_t gate, int64_t h) {
    auto type = cast<RankedTensorType>(w.getType());
    Value block = slice(slice(w, 0, d, 1), 1, gate * h, h);
    return reshape(block, {h, type.getDimSize(2)});
  }
  /// Bias block `index` (of `h` entries) of direction `d` of `[dirs, n*H]`.
  Value bias(Value bv, int64_t d, int64_t index, int64_t h) {
    return reshape(slice(slice(bv, 0, d, 1), 1, index * h, h), {h});
  }
  Value linear(Value x, Value w) { // x [B, n] times w [H, n] transposed
    return MatmulOp::create(b, loc, x, w, false, true);
  }
  Value add(Value x, Value y) { return AddOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return MulOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return SubOp::create(b, loc, x, y); }
  Value sigmoid(Value x) { return SigmoidOp::create(b, loc, x); }
  Value tanh(Value x) { return TanhOp::create(b, loc, x); }
  Value zeros(ArrayRef<int64_t> shape) {
    return ConstantOp::create(b, loc, RankedTensorType::get(shape, element),
                              0.0);
  }
  Value ones() {
    return ConstantOp::create(b, loc, RankedTensorType::get({}, element), 1.0);
  }
};

int64_t directions(RnnDirection direction) {
  return direction == RnnDirection::Bidirectional ? 2 : 1;
}
bool backwards(RnnDirection direction, int64_t d) {
  return direction == RnnDirection::Reverse ||
         (direction == RnnDirection::Bidirectional && d == 1);
}

/// Runs `step(d, t, state)` over the sequence for each direction, stacking
/// the hidden states (state[0]) into `[seq, dirs, batch, H]` and returning
/// it with the final states, each `[dirs, batch, H]`.
SmallVector<Value>
unroll(Cell &c, RnnDirection direction, int64_t seq, int64_t batch,
       int64_t hidden, SmallVector<SmallVector<Value>> initial,
       function_ref<SmallVector<Value>(int64_t, int64_t, ArrayRef<Value>)>
           step) {
  int64_t dirs = directions(direction);
  SmallVector<Value> perDirection;
  SmallVector<SmallVector<Value>> finals(initial[0].size());
  for (int64_t d = 0; d < dirs; ++d) {
    SmallVector<Value> state = initial[d];
    SmallVector<Value> outputs(seq);
    for (int64_t i = 0; i < seq; ++i) {
      int64_t t = backwards(direction, d) ? seq - 1 - i : i;
      state = step(d, t, state);
      outputs[t] = c.reshape(state[0], {1, 1, batch, hidden});
    }
    perDirection.push_back(
        seq == 1 ? outputs[0]
                 : ConcatOp::create(c.b, c.loc, outputs, (uint64_t)0)
                       .getResult());
    for (auto [k, s] : llvm::enumerate(state))
      finals[k].push_back(c.reshape(s, {1, batch, hidden}));
  }
  SmallVector<Value> results{
      dirs == 1 ? perDirection[0]
                : ConcatOp::create(c.b, c.loc, perDirection, (uint64_t)1)
                      .getResult()};
  for (auto &f : finals)
    results.push_back(dirs == 1 ? f[0]
                                : ConcatOp::create(c.b, c.loc, f, (uint64_t)0)
                                      .getResult());
  return results;
}

Value initialState(Cell &c, Value given, int64_t d, int64_t batch,
                   int64_t hidden) {
  if (!given)
    return c.zeros({batch, hidden});
  return c.reshape(c.slice(given, 0, d, 1), {batch, hidden});
}

void unrollLstm(LstmOp op) {
  OpBuilder b(op);
  auto inType = cast<RankedTensorType>(op.getInput().getType());
  Cell c{b, op.getLoc(), inType.getElementType()};
  int64_t seq = inType.getDimSize(0), batch = inType.getDimSize(1);
  int64_t in = inType.getDimSize(2), h = op.getHiddenSize();
  int64_t dirs = directions(op.getDirection());
  SmallVector<SmallVector<Value>> initial;
  for (int64_t d = 0; d < dirs; ++d)
    initial.push_back({initialState(c, op.getInitialH(), d, batch, h),
                       initialState(c, op.getInitialC(), d, batch, h)});
  SmallVector<Value> results = unroll(
      c, op.getDirection(), seq, batch, h, initial,
      [&](int64_t d, int64_t t, ArrayRef<Value> state) -> SmallVector<Value> {
        Value x = c.reshape(c.slice(op.getInput(), 0, t, 1), {batch, in});
        auto gate = [&](int64_t g) {
          Value v = c.add(c.linear(x, c.weight(op.getW(), d, g, h)),
                          c.linear(state[0], c.weight(op.getR(), d, g, h)));
          if (Value bias = op.getB())
            v = c.add(v, c.add(c.bias(bias, d, g, h),
                               c.bias(bias, d, 4 + g, h)));
          return v;
        };
        // ONNX order: input, output, forget, cell.
        Value i = c.sigmoid(gate(0)), o = c.sigmoid(gate(1));
        Value f = c.sigmoid(gate(2)), candidate = c.tanh(gate(3));
        Value cell = c.add(c.mul(f, state[1]), c.mul(i, candidate));
        return {c.mul(o, c.tanh(cell)), cell};
      });
  op.getY().replaceAllUsesWith(results[0]);
  op.getYH().replaceAllUsesWith(results[1]);
  op.getYC().replaceAllUsesWith(results[2]);
  op.erase();
}

void unrollGru(GruOp op) {
  OpBuilder b(op);
  auto inType = cast<RankedTensorType>(op.getInput().getType());
  Cell c{b, op.getLoc(), inType.getElementType()};
  int64_t seq = inType.getDimSize(0), batch = inType.getDimSize(1);
  int64_t in = inType.getDimSize(2), h = op.getHiddenSize();
  int64_t dirs = directions(op.getDirection());
  SmallVector<SmallVector<Value>> initial;
  for (int64_t d = 0; d < dirs; ++d)
    initial.push_back({initialState(c, op.getInitialH(), d, batch, h)});
  bool linearBeforeReset = op.getLinearBeforeReset();
  SmallVector<Value> results = unroll(
      c, op.getDirection(), seq, batch, h, initial,
      [&](int64_t d, int64_t t, ArrayRef<Value> state) -> SmallVector<Value> {
        Value x = c.reshape(c.slice(op.getInput(), 0, t, 1), {batch, in});
        Value prev = state[0];
        auto inputPart = [&](int64_t g) {
          Value v = c.linear(x, c.weight(op.getW(), d, g, h));
          return op.getB() ? c.add(v, c.bias(op.getB(), d, g, h)) : v;
        };
        auto recurrentPart = [&](Value hs, int64_t g) {
          Value v = c.linear(hs, c.weight(op.getR(), d, g, h));
          return op.getB() ? c.add(v, c.bias(op.getB(), d, 3 + g, h)) : v;
        };
        // ONNX order: update, reset, hidden.
        Value z = c.sigmoid(c.add(inputPart(0), recurrentPart(prev, 0)));
        Value r = c.sigmoid(c.add(inputPart(1), recurrentPart(prev, 1)));
        Value candidate =
            linearBeforeReset
                ? c.tanh(c.add(inputPart(2), c.mul(r, recurrentPart(prev, 2))))
                : c.tanh(c.add(inputPart(2),
                               recurrentPart(c.mul(r, prev), 2)));
        // h = (1 - z) * candidate + z * prev
        Value next = c.add(c.mul(c.sub(c.ones(), z), candidate),
                           c.mul(z, prev));
        return {next};
      });
  op.getY().replaceAllUsesWith(results[0]);
  op.getYH().replaceAllUsesWith(results[1]);
  op.erase();
}

} // namespace

void mlir::loom::unrollRecurrentLayers(Operation *root) {
  SmallVector<Operation *> layers;
  root->walk([&](Operation *op) {
    if (isa<LstmOp, GruOp>(op))
      layers.push_back(op);
  });
  for (Operation *op : layers) {
    if (auto lstm = dyn_cast<LstmOp>(op))
      unrollLstm(lstm);
    else
      unrollGru(cast<GruOp>(op));
  }
}
