//===- OnnxNeural.cpp - neural-network ONNX ops ---------------------------===//
//
// Contractions (MatMul, Gemm), convolution and pooling, reductions,
// softmax, normalizations, dropout, recurrent layers and losses.
//
//===----------------------------------------------------------------------===//

#include "OnnxNodes.h"

#include "llvm/ADT/StringSwitch.h"

using namespace mlir;
using namespace mlir::loom;
using namespace mlir::loom::onnx_import;

namespace {

LogicalResult translateMatMul(NodeContext &n, SmallVectorImpl<Value> &out) {
  if (failed(n.requireInputs(2)) || failed(n.checkAttrs({})))
    return failure();
  Value lhs = n.input(0), rhs = n.input(1);
  RankedTensorType lhsType = n.inputType(0), rhsType = n.inputType(1);
  if (lhsType.getRank() == 0 || rhsType.getRank() == 0)
    return n.error() << "operands must have rank 1 or more";
  // numpy's rule for vectors: promote to a matrix, then drop that dimension.
  bool vecLhs = lhsType.getRank() == 1, vecRhs = rhsType.getRank() == 1;
  if (vecLhs)
    lhs = n.reshape(lhs, {1, lhsType.getDimSize(0)});
  if (vecRhs)
    rhs = n.reshape(rhs, {rhsType.getDimSize(0), 1});
  FailureOr<Value> product = n.build1<MatmulOp>(lhs, rhs, false, false);
  if (failed(product))
    return failure();
  Value result = *product;
  if (vecLhs || vecRhs) {
    auto shape = SmallVector<int64_t>(
        cast<RankedTensorType>(result.getType()).getShape());
    int64_t rank = shape.size();
    if (vecRhs)
      shape.erase(shape.begin() + rank - 1);
    if (vecLhs)
      shape.erase(shape.begin() + rank - 2);
    result = n.reshape(result, shape);
  }
  out.push_back(result);
  return success();
}

LogicalResult translateGemm(NodeContext &n, SmallVectorImpl<Value> &out) {
  if (failed(n.requireInputs(2)) ||
      failed(n.checkAttrs({"alpha", "beta", "transA", "transB"})))
    return failure();
  if (n.inputType(0).getRank() != 2 || n.inputType(1).getRank() != 2)
    return n.error() << "A and B must be matrices, got ranks "
                     << n.inputType(0).getRank() << " and "
                     << n.inputType(1).getRank();
  FailureOr<Value> product =
      n.build1<MatmulOp>(n.input(0), n.input(1), n.getInt("transA", 0) != 0,
                         n.getInt("transB", 0) != 0);
  if (failed(product))
    return failure();
  Value result = *product;
  Type element = n.inputType(0).getElementType();
  double alpha = n.getFloat("alpha", 1.0), beta = n.getFloat("beta", 1.0);
  if (alpha != 1.0) {
    FailureOr<Value> scaled = n.build1<MulOp>(result, n.scalar(element, alpha));
    if (failed(scaled))
      return failure();
    result = *scaled;
  }
  if (n.hasInput(2) && beta != 0.0) {
    Value c = n.input(2);
    if (beta != 1.0) {
      FailureOr<Value> scaled = n.build1<MulOp>(c, n.scalar(element, beta));
      if (failed(scaled))
        return failure();
      c = *scaled;
    }
    FailureOr<Value> sum = n.build1<AddOp>(result, c);
    if (failed(sum))
      return failure();
    if (*sum && cast<RankedTensorType>(sum->getType()) !=
                    cast<RankedTensorType>(result.getType()))
      return n.error() << "C of shape " << c.getType()
                       << " does not broadcast to the product "
                       << result.getType();
    result = *sum;
  }
  out.push_back(result);
  return success();
}

/// The window attributes shared by Conv and the pools, with ONNX's auto_pad
/// resolved into explicit pads.
struct Window {
  SmallVector<int64_t> kernel, strides, pads, dilations;
};

FailureOr<Window> windowAttrs(NodeContext &n, ArrayRef<int64_t> kernel) {
  RankedTensorType input = n.inputType(0);
  int64_t spatial = input.getRank() - 2;
  if (spatial < 1)
    return n.error() << "input must have rank 3 or more, got "
                     << input.getRank();
  if ((int64_t)kernel.size() != spatial)
    return n.error() << "kernel_shape has " << kernel.size()
                     << " entries for " << spatial << " spatial dimensions";
  Window w;
  w.kernel.assign(kernel.begin(), kernel.end());
  w.strides = n.getInts("strides", SmallVector<int64_t>(spatial, 1));
  w.dilations = n.getInts("dilations", SmallVector<int64_t>(spatial, 1));
  w.pads = n.getInts("pads", SmallVector<int64_t>(2 * spatial, 0));
  if ((int64_t)w.strides.size() != spatial ||
      (int64_t)w.dilations.size() != spatial ||
      (int64_t)w.pads.size() != 2 * spatial)
    return n.error() << "strides, dilations and pads must have " << spatial
                     << ", " << spatial << " and " << 2 * spatial
                     << " entries";
  std::string autoPad = n.getString("auto_pad", "NOTSET");
  if (autoPad == "NOTSET")
    return w;
  if (autoPad == "VALID") {
    w.pads.assign(2 * spatial, 0);
    return w;
  }
  if (autoPad != "SAME_UPPER" && autoPad != "SAME_LOWER")
    return n.error() << "auto_pad \"" << autoPad << "\" is not supported";
  for (int64_t d = 0; d < spatial; ++d) {
    int64_t in = input.getDimSize(d + 2), stride = w.strides[d];
    if (stride <= 0)
      return n.error() << "strides must be positive";
    int64_t outExtent = (in + stride - 1) / stride;
    int64_t total = std::max<int64_t>(
        0, (outExtent - 1) * stride + (kernel[d] - 1) * w.dilations[d] + 1 - in);
    int64_t small = total / 2, large = total - small;
    w.pads[d] = autoPad == "SAME_UPPER" ? small : large;
    w.pads[d + spatial] = autoPad == "SAME_UPPER" ? large : small;
  }
  return w;
}

LogicalResult translateConv(NodeContext &n, SmallVectorImpl<Value> &out) {
  if (failed(n.requireInputs(2)) ||
      failed(n.checkAttrs({"auto_pad", "dilations", "group", "kernel_shape",
                           "pads", "strides"})))
    return failure();
  if (n.inputType(1).getRank() != n.inputType(0).getRank())
    return n.error() << "weight rank " << n.inputType(1).getRank()
                     << " differs from input rank " << n.inputType(0).getRank();
  ArrayRef<int64_t> kernel = n.inputType(1).getShape().drop_front(2);
  if (n.hasAttr("kernel_shape") &&
      ArrayRef<int64_t>(n.getInts("kernel_shape")) != kernel)
    return n.error() << "kernel_shape disagrees with the weight's shape";
  FailureOr<Window> w = windowAttrs(n, kernel);
  if (failed(w))
    return failure();
  FailureOr<Value> result =
      n.build1<ConvOp>(n.input(0), n.input(1), n.input(2), w->strides, w->pads,
                       w->dilations, n.getInt("group", 1));
  if (failed(result))
    return failure();
  out.push_back(*result);
  return success();
}

template <typename OpTy>
LogicalResult translatePool(NodeContext &n, SmallVectorImpl<Value> &out,
                            bool isMax) {
  if (failed(n.requireInputs(1)))
    return failure();
  if (isMax ? failed(n.checkAttrs({"auto_pad", "ceil_mode", "dilations",
                                   "kernel_shape", "pads", "storage_order",
                                   "strides"}))
            : failed(n.checkAttrs({"auto_pad", "ceil_mode",
                                   "count_include_pad", "kernel_shape", "pads",
                                   "strides"})))
    return failure();
  if (!n.hasAttr("kernel_shape"))
    return n.error() << "attribute \"kernel_shape\" is required";
  if (n.wantsOutput(1))
    return n.error() << "the Indices output is not supported";
  FailureOr<Window> w = windowAttrs(n, n.getInts("kernel_shape"));
  if (failed(w))
    return failure();
  FailureOr<Value> result = n.build1<OpTy>(
      n.input(0), w->kernel, w->strides, w->pads, w->dilations,
      n.getInt("ceil_mode", 0) != 0, n.getInt("count_include_pad", 0) != 0);
  if (failed(result))
    return failure();
  out.push_back(*result);
  return success();
}

template <typename OpTy>
LogicalResult translateGlobalPool(NodeContext &n, SmallVectorImpl<Value> &out) {
  if (failed(n.requireInputs(1)) || failed(n.checkAttrs({})))
    return failure();
  SmallVector<int64_t> axes;
  for (int64_t d = 2; d < n.inputType(0).getRank(); ++d)
    axes.push_back(d);
  FailureOr<Value> result = n.build1<OpTy>(n.input(0), axes, true);
  if (failed(result))
    return failure();
  out.push_back(*result);
  return success();
}

/// Resolves a reduction's axes (attribute, or input #1 from `inputSince`) and
/// keepdims. Returns std::nullopt for a no-op reduction.
FailureOr<std::optional<SmallVector<int64_t>>>
reductionAxes(NodeContext &n, int64_t inputSince) {
  SmallVector<int64_t> raw;
  if (n.opset >= inputSince) {
    if (n.hasInput(1)) {
      FailureOr<SmallVector<int64_t>> a = n.intsInput(1, "axes");
      if (failed(a))
        return failure();
      raw = *a;
    }
  } else {
    raw = n.getInts("axes");
  }
  if (raw.empty() && n.getInt("noop_with_empty_axes", 0) != 0)
    return std::optional<SmallVector<int64_t>>();
  SmallVector<int64_t> axes;
  for (int64_t a : raw) {
    FailureOr<int64_t> axis = n.axis(a, n.inputType(0).getRank());
    if (failed(axis))
      return failure();
    axes.push_back(*axis);
  }
  llvm::sort(axes);
  return std::optional<SmallVector<int64_t>>(axes);
}

/// A reduction, optionally with a pre-map (x*x, |x|, exp x) and a post-map
/// (sqrt, log): covers ReduceSum/Mean/Max/Min/Prod and the L1, L2,
/// SumSquare, LogSum and LogSumExp forms.
enum class Pre { None, Square, Abs, Exp };
enum class Post { None, Sqrt, Log };

template <typename OpTy>
Translator reduction(int64_t axesInputSince, Pre pre = Pre::None,
                     Post post = Post::None) {
  return [=](NodeContext &n, SmallVectorImpl<Value> &out) -> LogicalResult {
    if (failed(n.requireInputs(1)) ||
        failed(n.checkAttrs({"axes", "keepdims", "noop_with_empty_axes"})))
      return failure();
    auto axes = reductionAxes(n, axesInputSince);
    if (failed(axes))
      return failure();
    Value x = n.input(0);
    if (!*axes) {
      out.push_back(x);
      return success();
    }
    if (pre == Pre::Square) {
      FailureOr<Value> sq = n.build1<MulOp>(x, x);
      if (failed(sq))
        return failure();
      x = *sq;
    } else if (pre == Pre::Abs) {
      x = AbsOp::create(n.b, n.loc, x);
    } else if (pre == Pre::Exp) {
      x = ExpOp::create(n.b, n.loc, x);
    }
    FailureOr<Value> result =
        n.build1<OpTy>(x, **axes, n.getInt("keepdims", 1) != 0);
    if (failed(result))
      return failure();
    Value r = *result;
    if (post == Post::Sqrt)
      r = SqrtOp::create(n.b, n.loc, r);
    else if (post == Post::Log)
      r = LogOp::create(n.b, n.loc, r);
    out.push_back(r);
    return success();
  };
}

template <typename OpTy>
LogicalResult translateArgReduce(NodeContext &n, SmallVectorImpl<Value> &out) {
  if (failed(n.requireInputs(1)) ||
      failed(n.checkAttrs({"axis", "keepdims", "select_last_index"})))
    return failure();
  FailureOr<int64_t> axis =
      n.axis(n.getInt("axis", 0), n.inputType(0).getRank());
  if (failed(axis))
    return failure();
  FailureOr<Value> result =
      n.build1<OpTy>(n.input(0), *axis, n.getInt("keepdims", 1) != 0,
                     n.getInt("select_last_index", 0) != 0);
  if (failed(result))
    return failure();
  out.push_back(*result);
  return success();
}

template <typename OpTy>
LogicalResult translateSoftmax(NodeContext &n, SmallVectorImpl<Value> &out) {
  if (failed(n.requireInputs(1)) || failed(n.checkAttrs({"axis"})))
    return failure();
  RankedTensorType type = n.inputType(0);
  int64_t rank = type.getRank();
  if (rank == 0)
    return n.error() << "input must have rank 1 or more";
  FailureOr<int64_t> axis =
      n.axis(n.getInt("axis", n.opset < 13 ? 1 : -1), rank);
  if (failed(axis))
    return failure();
  if (n.opset >= 13) {
    out.push_back(OpTy::create(n.b, n.loc, n.input(0), *axis));
    return success();
  }
  // Before opset 13 the input is viewed as a matrix [prod(:axis),
  // prod(axis:)] and normalized along its rows.
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < rank; ++d)
    (d < *axis ? outer : inner) *= type.getDimSize(d);
  Value flat = n.reshape(n.input(0), {outer, inner});
  Value result = OpTy::create(n.b, n.loc, flat, 1);
  out.push_back(n.reshape(result, type.getShape()));
  return success();
}

LogicalResult translateLayerNorm(NodeContext &n, SmallVectorImpl<Value> &out) {
  if (failed(n.requireInputs(2)) ||
      failed(n.checkAttrs({"axis", "epsilon", "stash_type"})))
    return failure();
  if (n.getInt("stash_type", 1) != 1)
    return n.error() << "stash_type " << n.getInt("stash_type", 1)
                     << " is not supported (only 1, float32)";
  FailureOr<int64_t> axis =
      n.axis(n.getInt("axis", -1), n.inputType(0).getRank());
  if (failed(axis))
    return failure();
  FailureOr<SmallVector<Value>> results =
      n.build<LayerNormOp>(n.input(0), n.input(1), n.input(2),
                           n.b.getI64IntegerAttr(*axis),
                           n.b.getF64FloatAttr(n.getFloat("epsilon", 1e-5)));
  if (failed(results))
    return failure();
  out.append(results->begin(), results->end());
  return success();
}

LogicalResult translateBatchNorm(NodeContext &n, SmallVectorImpl<Value> &out) {
  if (failed(n.requireInputs(5)) ||
      failed(n.checkAttrs({"epsilon", "momentum", "training_mode"})))
    return failure();
  bool training = n.opset >= 14 ? n.getInt("training_mode", 0) != 0
                                : n.numOutputs() > 1;
  auto epsilon = n.b.getF64FloatAttr(n.getFloat("epsilon", 1e-5));
  if (!training) {
    FailureOr<Value> result =
        n.build1<BatchNormOp>(n.input(0), n.input(1), n.input(2), n.input(3),
                              n.input(4), epsilon);
    if (failed(result))
      return failure();
    out.push_back(*result);
    return success();
  }
  if (n.opset < 14)
    return n.error() << "the training form before opset 14 is not supported";
  FailureOr<SmallVector<Value>> results = n.build<BatchNormTrainOp>(
      n.input(0), n.input(1), n.input(2), n.input(3), n.input(4), epsilon,
      n.b.getF64FloatAttr(n.getFloat("momentum", 0.9)));
  if (failed(results))
    return failure();
  out.append(results->begin(), results->begin() + 3);
  return success();
}

LogicalResult translateDropout(NodeContext &n, SmallVectorImpl<Value> &out) {
  if (failed(n.requireInputs(1)) || failed(n.checkAttrs({"seed"})))
    return failure();
  double ratio = 0.5;
  if (n.hasInput(1)) {
    FailureOr<double> r = n.floatInput(1, "ratio");
    if (failed(r))
      return failure();
    ratio = *r;
  }
  bool training = false;
  if (n.hasInput(2)) {
    FailureOr<double> t = n.floatInput(2, "training_mode");
    if (failed(t))
      return failure();
    training = *t != 0;
  }
  RankedTensorType type = n.inputType(0);
  if (!training || ratio == 0.0) {
    // Inference: the identity, and a mask that keeps everything.
    out.push_back(n.input(0));
    out.push_back(n.constant(DenseElementsAttr::get(
        type.clone(n.b.getI1Type()), true)));
    return success();
  }
  if (ratio < 0.0 || ratio >= 1.0)
    return n.error() << "ratio must be in [0, 1), got " << ratio;
  FailureOr<SmallVector<Value>> results =
      n.build<DropoutOp>(n.input(0), Value(), Value(),
                         n.b.getF64FloatAttr(ratio),
                         n.b.getI64IntegerAttr(n.getInt("seed", 0)),
                         DenseI64ArrayAttr());
  if (failed(results))
    return failure();
  out.append(results->begin(), results->end());
  return success();
}

/// Checks the attributes LSTM and GRU share and returns the direction.
FailureOr<RnnDirection> rnnDirection(NodeContext &n,
                                     ArrayRef<StringRef> defaultActivations) {
  if (n.hasAttr("clip"))
    return n.error() << "attribute \"clip\" is not supported";
  if (n.getInt("input_forget", 0) != 0)
    return n.error() << "input_forget = 1 is not supported";
  std::string name = n.getString("direction", "forward");
  std::optional<RnnDirection> direction = symbolizeRnnDirection(name);
  if (!direction)
    return n.error() << "direction \"" << name << "\" is not supported";
  if (const onnx::AttributeProto *acts = n.attr("activations")) {
    for (int i = 0; i < acts->strings_size(); ++i)
      if (acts->strings(i) !=
          defaultActivations[i % defaultActivations.size()])
        return n.error() << "activation \"" << acts->strings(i)
                         << "\" is not supported (only the defaults)";
  }
  // sequence_lens (input #4) is accepted when every sequence is full length.
  if (n.hasInput(4)) {
    FailureOr<SmallVector<int64_t>> lens = n.intsInput(4, "sequence_lens");
    if (failed(lens))
      return failure();
    int64_t seq = n.inputType(0).getDimSize(n.getInt("layout", 0) ? 1 : 0);
    for (int64_t len : *lens)
      if (len != seq)
        return n.error() << "sequence_lens shorter than the sequence ("
                         << len << " < " << seq << ") are not supported";
  }
  return *direction;
}

/// ONNX's layout = 1 puts batch first; loom's recurrent ops use layout 0.
Value toLayout0(NodeContext &n, Value v, ArrayRef<int64_t> perm) {
  if (!v || n.getInt("layout", 0) == 0 ||
      cast<RankedTensorType>(v.getType()).getRank() != (int64_t)perm.size())
    return v;
  FailureOr<Value> transposed = n.build1<TransposeOp>(v, perm);
  return succeeded(transposed) ? *transposed : v;
}

LogicalResult translateLstm(NodeContext &n, SmallVectorImpl<Value> &out) {
  if (failed(n.requireInputs(3)) ||
      failed(n.checkAttrs({"activation_alpha", "activation_beta",
                           "activations", "clip", "direction", "hidden_size",
                           "input_forget", "layout"})))
    return failure();
  if (n.hasInput(7))
    return n.error() << "peephole weights (input P) are not supported";
  FailureOr<RnnDirection> direction =
      rnnDirection(n, {"Sigmoid", "Tanh", "Tanh"});
  if (failed(direction))
    return failure();
  if (!n.hasAttr("hidden_size"))
    return n.error() << "attribute \"hidden_size\" is required";
  FailureOr<SmallVector<Value>> results = n.build<LstmOp>(
      toLayout0(n, n.input(0), {1, 0, 2}), n.input(1), n.input(2), n.input(3),
      toLayout0(n, n.input(5), {1, 0, 2}), toLayout0(n, n.input(6), {1, 0, 2}),
      n.getInt("hidden_size", 0), *direction);
  if (failed(results))
    return failure();
  out.push_back(toLayout0(n, (*results)[0], {2, 0, 1, 3}));
  out.push_back(toLayout0(n, (*results)[1], {1, 0, 2}));
  out.push_back(toLayout0(n, (*results)[2], {1, 0, 2}));
  return success();
}

/// ONNX Runtime's com.microsoft.MoE: `router_probs` holds the router's
/// logits (the kernel applies the softmax); gelu is the tanh approximation,
/// as ONNX Runtime's CPU kernel computes it.
LogicalResult translateMicrosoftMoe(NodeContext &n,
                                    SmallVectorImpl<Value> &out) {
  if (failed(n.requireInputs(5)) ||
      failed(n.checkAttrs({"k", "activation_type", "normalize_routing_weights",
                           "use_sparse_mixer", "activation_alpha",
                           "activation_beta", "swiglu_fusion", "swiglu_limit",
                           "swiglu_limit_after_activation"})))
    return failure();
  if (n.getInt("use_sparse_mixer", 0) != 0)
    return n.error() << "use_sparse_mixer is not supported";
  std::string kind = n.getString("activation_type", "relu");
  std::optional<MoeActivation> activation =
      llvm::StringSwitch<std::optional<MoeActivation>>(kind)
          .Case("relu", MoeActivation::Relu)
          .Case("gelu", MoeActivation::GeluTanh)
          .Case("silu", MoeActivation::Silu)
          .Case("identity", MoeActivation::Identity)
          .Default(std::nullopt);
  if (!activation)
    return n.error() << "activation_type \"" << kind
                     << "\" is not supported (relu, gelu, silu and identity "
                        "are; a gated expert is silu with fc3 weights)";
  if (n.getInt("swiglu_fusion", 0) != 0)
    return n.error() << "swiglu_fusion applies to swiglu only";
  Value x = n.input(0);
  RankedTensorType xType = n.inputType(0);
  if (xType.getRank() != 2 && xType.getRank() != 3)
    return n.error() << "input must be [tokens, hidden] or [batch, sequence, "
                        "hidden], got "
                     << xType;
  if (!xType.hasStaticShape() || !n.inputType(1).hasStaticShape())
    return n.error() << "needs static input and router_probs shapes";
  int64_t hidden = xType.getShape().back();
  int64_t experts = n.inputType(1).getShape().back();
  int64_t k = n.getInt("k", 1);
  if (k < 1 || k > experts)
    return n.error() << "k = " << k << " must be between 1 and the "
                     << experts << " experts";
  if (xType.getRank() == 3)
    x = n.reshape(x, {xType.getDimSize(0) * xType.getDimSize(1), hidden});
  FailureOr<Value> y = n.build1<MoeOp>(
      x, n.input(1), n.input(2), n.input(4), n.input(3), n.input(5),
      n.input(6), n.input(7), MoeRouting::TopK, *activation, (uint64_t)k,
      n.getInt("normalize_routing_weights", 0) != 0, llvm::APFloat(0.0),
      llvm::APFloat(0.0), llvm::APFloat(0.0));
  if (failed(y))
    return failure();
  out.push_back(xType.getRank() == 3 ? n.reshape(*y, xType.getShape()) : *y);
  return success();
}

LogicalResult translateGru(NodeContext &n, SmallVectorImpl<Value> &out) {
  if (failed(n.requireInputs(3)) ||
      failed(n.checkAttrs({"activation_alpha", "activation_beta",
                           "activations", "clip", "direction", "hidden_size",
                           "layout", "linear_before_reset"})))
    return failure();
  FailureOr<RnnDirection> direction = rnnDirection(n, {"Sigmoid", "Tanh"});
  if (failed(direction))
    return failure();
  if (!n.hasAttr("hidden_size"))
    return n.error() << "attribute \"hidden_size\" is required";
  FailureOr<SmallVector<Value>> results = n.build<GruOp>(
      toLayout0(n, n.input(0), {1, 0, 2}), n.input(1), n.input(2), n.input(3),
      toLayout0(n, n.input(5), {1, 0, 2}), n.getInt("hidden_size", 0),
      *direction, n.getInt("linear_before_reset", 0) != 0);
  if (failed(results))
    return failure();
  out.push_back(toLayout0(n, (*results)[0], {2, 0, 1, 3}));
  out.push_back(toLayout0(n, (*results)[1], {1, 0, 2}));
  return success();
}

FailureOr<LossReduction> lossReduction(NodeContext &n) {
  std::string name = n.getString("reduction", "mean");
  std::optional<LossReduction> reduction = symbolizeLossReduction(name);
  if (!reduction)
    return n.error() << "reduction \"" << name << "\" is not supported";
  return *reduction;
}

IntegerAttr ignoreIndex(NodeContext &n) {
  return n.hasAttr("ignore_index")
             ? n.b.getI64IntegerAttr(n.getInt("ignore_index", 0))
             : IntegerAttr();
}

LogicalResult translateSoftmaxCrossEntropy(NodeContext &n,
                                           SmallVectorImpl<Value> &out) {
  if (failed(n.requireInputs(2)) ||
      failed(n.checkAttrs({"ignore_index", "reduction"})))
    return failure();
  FailureOr<LossReduction> reduction = lossReduction(n);
  if (failed(reduction))
    return failure();
  FailureOr<SmallVector<Value>> results = n.build<SoftmaxCrossEntropyOp>(
      n.input(0), n.input(1), n.input(2), *reduction, ignoreIndex(n));
  if (failed(results))
    return failure();
  out.append(results->begin(), results->end());
  return success();
}

LogicalResult translateNllLoss(NodeContext &n, SmallVectorImpl<Value> &out) {
  if (failed(n.requireInputs(2)) ||
      failed(n.checkAttrs({"ignore_index", "reduction"})))
    return failure();
  FailureOr<LossReduction> reduction = lossReduction(n);
  if (failed(reduction))
    return failure();
  FailureOr<Value> result = n.build1<NllLossOp>(
      n.input(0), n.input(1), n.input(2), *reduction, ignoreIndex(n));
  if (failed(result))
    return failure();
  out.push_back(*result);
  return success();
}

} // namespace

void mlir::loom::onnx_import::addNeuralTranslators(TranslatorTable &t) {
  t["MatMul"] = translateMatMul;
  t["Gemm"] = translateGemm;
  t["Conv"] = translateConv;
  t["MaxPool"] = [](NodeContext &n, SmallVectorImpl<Value> &out) {
    return translatePool<MaxPoolOp>(n, out, /*isMax=*/true);
  };
  t["AveragePool"] = [](NodeContext &n, SmallVectorImpl<Value> &out) {
    return translatePool<AvgPoolOp>(n, out, /*isMax=*/false);
  };
  t["GlobalAveragePool"] = translateGlobalPool<ReduceMeanOp>;
  t["GlobalMaxPool"] = translateGlobalPool<ReduceMaxOp>;
  // ReduceSum takes its axes as an input from opset 13, the others from 18.
  t["ReduceSum"] = reduction<ReduceSumOp>(13);
  t["ReduceMean"] = reduction<ReduceMeanOp>(18);
  t["ReduceMax"] = reduction<ReduceMaxOp>(18);
  t["ReduceMin"] = reduction<ReduceMinOp>(18);
  t["ReduceProd"] = reduction<ReduceProdOp>(18);
  t["ReduceSumSquare"] = reduction<ReduceSumOp>(18, Pre::Square);
  t["ReduceL1"] = reduction<ReduceSumOp>(18, Pre::Abs);
  t["ReduceL2"] = reduction<ReduceSumOp>(18, Pre::Square, Post::Sqrt);
  t["ReduceLogSum"] = reduction<ReduceSumOp>(18, Pre::None, Post::Log);
  t["ReduceLogSumExp"] = reduction<ReduceSumOp>(18, Pre::Exp, Post::Log);
  t["ArgMax"] = translateArgReduce<ArgMaxOp>;
  t["ArgMin"] = translateArgReduce<ArgMinOp>;
  t["Softmax"] = translateSoftmax<SoftmaxOp>;
  t["LogSoftmax"] = translateSoftmax<LogSoftmaxOp>;
  t["LayerNormalization"] = translateLayerNorm;
  t["BatchNormalization"] = translateBatchNorm;
  t["Dropout"] = translateDropout;
  t["LSTM"] = translateLstm;
  t["GRU"] = translateGru;
  t["com.microsoft.MoE"] = translateMicrosoftMoe;
  t["SoftmaxCrossEntropyLoss"] = translateSoftmaxCrossEntropy;
  t["NegativeLogLikelihoodLoss"] = translateNllLoss;
}
