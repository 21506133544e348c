//===- OnnxTensor.cpp - shape and data-movement ONNX ops ------------------===//
//
// Constants, shape queries (folded: every shape is static), reshapes,
// transposes, concatenation and splitting, slicing, gathers and scatters,
// padding, TopK, OneHot, CumSum and Trilu. ONNX's negative axes and
// out-of-range slice bounds are normalized here so loom ops see plain values.
//
//===----------------------------------------------------------------------===//

#include "OnnxNodes.h"

using namespace mlir;
using namespace mlir::loom;
using namespace mlir::loom::onnx_import;

namespace {

LogicalResult translateConstant(NodeContext &n, SmallVectorImpl<Value> &out) {
  if (n.proto.attribute_size() != 1)
    return n.error() << "expected exactly one value attribute, got "
                     << n.proto.attribute_size();
  const onnx::AttributeProto &a = n.proto.attribute(0);
  MLIRContext *ctx = n.b.getContext();
  DenseElementsAttr value;
  if (a.name() == "value") {
    FailureOr<DenseElementsAttr> t = tensorToAttr(ctx, a.t(), n.loc);
    if (failed(t))
      return failure();
    value = *t;
  } else if (a.name() == "value_float") {
    value = DenseElementsAttr::get(RankedTensorType::get({}, n.b.getF32Type()),
                                   a.f());
  } else if (a.name() == "value_floats") {
    SmallVector<float> v(a.floats().begin(), a.floats().end());
    value = DenseElementsAttr::get(
        RankedTensorType::get({(int64_t)v.size()}, n.b.getF32Type()),
        ArrayRef<float>(v));
  } else if (a.name() == "value_int") {
    value = DenseElementsAttr::get(RankedTensorType::get({}, n.b.getI64Type()),
                                   (int64_t)a.i());
  } else if (a.name() == "value_ints") {
    SmallVector<int64_t> v(a.ints().begin(), a.ints().end());
    value = DenseElementsAttr::get(
        RankedTensorType::get({(int64_t)v.size()}, n.b.getI64Type()),
        ArrayRef<int64_t>(v));
  } else {
    return n.error() << "attribute \"" << a.name() << "\" is not supported";
  }
  out.push_back(n.constant(value));
  return success();
}

Value int64Vector(NodeContext &n, ArrayRef<int64_t> values) {
  return n.constant(DenseElementsAttr::get(
      RankedTensorType::get({(int64_t)values.size()}, n.b.getI64Type()),
      values));
}

LogicalResult translateShape(NodeContext &n, SmallVectorImpl<Value> &out) {
  if (failed(n.requireInputs(1)) || failed(n.checkAttrs({"start", "end"})))
    return failure();
  ArrayRef<int64_t> shape = n.inputType(0).getShape();
  int64_t rank = shape.size();
  auto clampIndex = [&](int64_t i) {
    if (i < 0)
      i += rank;
    return std::clamp<int64_t>(i, 0, rank);
  };
  int64_t start = clampIndex(n.getInt("start", 0));
  int64_t end = clampIndex(n.getInt("end", rank));
  out.push_back(
      int64Vector(n, shape.slice(start, std::max<int64_t>(0, end - start))));
  return success();
}

LogicalResult translateSize(NodeContext &n, SmallVectorImpl<Value> &out) {
  if (failed(n.requireInputs(1)))
    return failure();
  out.push_back(n.scalar(n.b.getI64Type(), n.inputType(0).getNumElements()));
  return success();
}

LogicalResult translateConstantOfShape(NodeContext &n,
                                       SmallVectorImpl<Value> &out) {
  if (failed(n.requireInputs(1)) || failed(n.checkAttrs({"value"})))
    return failure();
  FailureOr<SmallVector<int64_t>> shape = n.intsInput(0, "shape");
  if (failed(shape))
    return failure();
  for (int64_t d : *shape)
    if (d < 0)
      return n.error() << "shape has a negative dimension " << d;
  Attribute fill = n.b.getF32FloatAttr(0.0f);
  if (const onnx::AttributeProto *a = n.attr("value")) {
    FailureOr<DenseElementsAttr> t =
        tensorToAttr(n.b.getContext(), a->t(), n.loc);
    if (failed(t))
      return failure();
    if (t->getNumElements() != 1)
      return n.error() << "value must hold one element, got "
                       << t->getNumElements();
    fill = *t->value_begin<Attribute>();
  }
  auto type = RankedTensorType::get(*shape, cast<TypedAttr>(fill).getType());
  out.push_back(n.constant(DenseElementsAttr::get(type, fill)));
  return success();
}

LogicalResult translateRange(NodeContext &n, SmallVectorImpl<Value> &out) {
  if (failed(n.requireInputs(3)))
    return failure();
  Type element = n.inputType(0).getElementType();
  FailureOr<double> start = n.floatInput(0, "start");
  FailureOr<double> limit = n.floatInput(1, "limit");
  FailureOr<double> delta = n.floatInput(2, "delta");
  if (failed(start) || failed(limit) || failed(delta))
    return failure();
  if (*delta == 0)
    return n.error() << "delta must not be zero";
  int64_t count = std::max<int64_t>(
      0, (int64_t)std::ceil((*limit - *start) / *delta));
  auto type = RankedTensorType::get({count}, element);
  if (isa<FloatType>(element)) {
    SmallVector<Attribute> values;
    for (int64_t i = 0; i < count; ++i)
      values.push_back(n.b.getFloatAttr(element, *start + i * *delta));
    out.push_back(n.constant(DenseElementsAttr::get(type, values)));
  } else {
    SmallVector<Attribute> values;
    for (int64_t i = 0; i < count; ++i)
      values.push_back(n.b.getIntegerAttr(
          element, (int64_t)*start + i * (int64_t)*delta));
    out.push_back(n.constant(DenseElementsAttr::get(type, values)));
  }
  return success();
}

/// Resolves ONNX Reshape's target shape (0 copies, -1 infers).
FailureOr<SmallVector<int64_t>> resolveReshape(NodeContext &n,
                                               ArrayRef<int64_t> input,
                                               ArrayRef<int64_t> target,
                                               bool allowZero) {
  SmallVector<int64_t> shape;
  int64_t known = 1, inferred = -1;
  for (auto [i, entry] : llvm::enumerate(target)) {
    int64_t d = entry;
    if (d == 0 && !allowZero) {
      if (i >= input.size())
        return n.error() << "shape entry " << i
                         << " is 0 but the input has rank " << input.size();
      d = input[i];
    }
    if (d == -1) {
      if (inferred >= 0)
        return n.error() << "shape has more than one -1";
      inferred = i;
      shape.push_back(1);
      continue;
    }
    if (d < 0)
      return n.error() << "shape has a negative dimension " << d;
    shape.push_back(d);
    known *= d;
  }
  int64_t total = 1;
  for (int64_t d : input)
    total *= d;
  if (inferred >= 0) {
    if (known == 0 || total % known != 0)
      return n.error() << "cannot infer the -1 dimension: " << total
                       << " elements do not divide by " << known;
    shape[inferred] = total / known;
  } else if (known != total) {
    return n.error() << "cannot reshape " << total << " elements into "
                     << known;
  }
  return shape;
}

LogicalResult translateReshape(NodeContext &n, SmallVectorImpl<Value> &out) {
  if (failed(n.requireInputs(2)) || failed(n.checkAttrs({"allowzero"})))
    return failure();
  SmallVector<int64_t> shape;
  if (n.constantInput(1)) {
    FailureOr<SmallVector<int64_t>> target = n.intsInput(1, "shape");
    if (failed(target))
      return failure();
    FailureOr<SmallVector<int64_t>> resolved =
        resolveReshape(n, n.inputType(0).getShape(), *target,
                       n.getInt("allowzero", 0) != 0);
    if (failed(resolved))
      return failure();
    shape = *resolved;
  } else if (RankedTensorType expected = n.expectedType(0)) {
    // A shape computed at run time whose result ONNX still knows statically.
    shape = SmallVector<int64_t>(expected.getShape());
  } else {
    return n.error() << "shape (input #1) must be a compile-time constant";
  }
  out.push_back(n.reshape(n.input(0), shape));
  return success();
}

LogicalResult translateFlatten(NodeContext &n, SmallVectorImpl<Value> &out) {
  if (failed(n.requireInputs(1)) || failed(n.checkAttrs({"axis"})))
    return failure();
  ArrayRef<int64_t> shape = n.inputType(0).getShape();
  int64_t rank = shape.size(), axis = n.getInt("axis", 1);
  if (axis < -rank || axis > rank)
    return n.error() << "axis " << axis << " is out of range for rank "
                     << rank;
  if (axis < 0)
    axis += rank;
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < rank; ++d)
    (d < axis ? outer : inner) *= shape[d];
  out.push_back(n.reshape(n.input(0), {outer, inner}));
  return success();
}

/// Axes from the attribute (before `inputSince`) or from input #1.
FailureOr<SmallVector<int64_t>> axesOperand(NodeContext &n,
                                            int64_t inputSince) {
  if (n.opset < inputSince)
    return n.getInts("axes");
  if (!n.hasInput(1))
    return SmallVector<int64_t>();
  return n.intsInput(1, "axes");
}

LogicalResult translateSqueeze(NodeContext &n, SmallVectorImpl<Value> &out) {
  if (failed(n.requireInputs(1)) || failed(n.checkAttrs({"axes"})))
    return failure();
  FailureOr<SmallVector<int64_t>> axes = axesOperand(n, 13);
  if (failed(axes))
    return failure();
  ArrayRef<int64_t> shape = n.inputType(0).getShape();
  int64_t rank = shape.size();
  SmallVector<bool> drop(rank, false);
  if (axes->empty()) {
    for (int64_t d = 0; d < rank; ++d)
      drop[d] = shape[d] == 1;
  }
  for (int64_t a : *axes) {
    FailureOr<int64_t> axis = n.axis(a, rank);
    if (failed(axis))
      return failure();
    if (shape[*axis] != 1)
      return n.error() << "cannot squeeze dimension " << *axis << " of size "
                       << shape[*axis];
    drop[*axis] = true;
  }
  SmallVector<int64_t> result;
  for (int64_t d = 0; d < rank; ++d)
    if (!drop[d])
      result.push_back(shape[d]);
  out.push_back(n.reshape(n.input(0), result));
  return success();
}

LogicalResult translateUnsqueeze(NodeContext &n, SmallVectorImpl<Value> &out) {
  if (failed(n.requireInputs(1)) || failed(n.checkAttrs({"axes"})))
    return failure();
  FailureOr<SmallVector<int64_t>> axes = axesOperand(n, 13);
  if (failed(axes))
    return failure();
  ArrayRef<int64_t> shape = n.inputType(0).getShape();
  int64_t rank = shape.size() + axes->size();
  SmallVector<bool> inserted(rank, false);
  for (int64_t a : *axes) {
    FailureOr<int64_t> axis = n.axis(a, rank);
    if (failed(axis))
      return failure();
    if (inserted[*axis])
      return n.error() << "axis " << a << " appears more than once";
    inserted[*axis] = true;
  }
  SmallVector<int64_t> result;
  const int64_t *next = shape.begin();
  for (int64_t d = 0; d < rank; ++d)
    result.push_back(inserted[d] ? 1 : *next++);
  out.push_back(n.reshape(n.input(0), result));
  return success();
}

LogicalResult translateTranspose(NodeContext &n, SmallVectorImpl<Value> &out) {
  if (failed(n.requireInputs(1)) || failed(n.checkAttrs({"perm"})))
    return failure();
  int64_t rank = n.inputType(0).getRank();
  SmallVector<int64_t> perm;
  for (int64_t d = rank - 1; d >= 0; --d)
    perm.push_back(d);
  perm = n.getInts("perm", perm);
  FailureOr<Value> result = n.build1<TransposeOp>(n.input(0), perm);
  if (failed(result))
    return failure();
  out.push_back(*result);
  return success();
}

LogicalResult translateConcat(NodeContext &n, SmallVectorImpl<Value> &out) {
  if (failed(n.requireInputs(1)) || failed(n.checkAttrs({"axis"})))
    return failure();
  if (!n.hasAttr("axis"))
    return n.error() << "attribute \"axis\" is required";
  FailureOr<int64_t> axis =
      n.axis(n.getInt("axis", 0), n.inputType(0).getRank());
  if (failed(axis))
    return failure();
  SmallVector<Value> inputs(n.inputs.begin(), n.inputs.end());
  FailureOr<Value> result = n.build1<ConcatOp>(inputs, *axis);
  if (failed(result))
    return failure();
  out.push_back(*result);
  return success();
}

LogicalResult translateSplit(NodeContext &n, SmallVectorImpl<Value> &out) {
  if (failed(n.requireInputs(1)) ||
      failed(n.checkAttrs({"axis", "split", "num_outputs"})))
    return failure();
  FailureOr<int64_t> axis =
      n.axis(n.getInt("axis", 0), n.inputType(0).getRank());
  if (failed(axis))
    return failure();
  int64_t extent = n.inputType(0).getDimSize(*axis);
  SmallVector<int64_t> sizes;
  if (n.opset < 13 && n.hasAttr("split")) {
    sizes = n.getInts("split");
  } else if (n.opset >= 13 && n.hasInput(1)) {
    FailureOr<SmallVector<int64_t>> split = n.intsInput(1, "split");
    if (failed(split))
      return failure();
    sizes = *split;
  } else {
    int64_t parts = n.numOutputs();
    if (extent % parts != 0)
      return n.error() << "dimension " << *axis << " (size " << extent
                       << ") does not split evenly into " << parts
                       << " outputs";
    sizes.assign(parts, extent / parts);
  }
  if ((int64_t)sizes.size() != n.numOutputs())
    return n.error() << "split has " << sizes.size() << " sizes for "
                     << n.numOutputs() << " outputs";
  FailureOr<SmallVector<Value>> results =
      n.build<SplitOp>(n.input(0), *axis, sizes);
  if (failed(results))
    return failure();
  out.append(results->begin(), results->end());
  return success();
}

LogicalResult translateSlice(NodeContext &n, SmallVectorImpl<Value> &out) {
  if (failed(n.requireInputs(3)) || failed(n.checkAttrs({})))
    return failure();
  ArrayRef<int64_t> shape = n.inputType(0).getShape();
  int64_t rank = shape.size();
  FailureOr<SmallVector<int64_t>> starts = n.intsInput(1, "starts");
  FailureOr<SmallVector<int64_t>> ends = n.intsInput(2, "ends");
  if (failed(starts) || failed(ends))
    return failure();
  SmallVector<int64_t> axes, steps(starts->size(), 1);
  if (n.hasInput(3)) {
    FailureOr<SmallVector<int64_t>> a = n.intsInput(3, "axes");
    if (failed(a))
      return failure();
    axes = *a;
  } else {
    for (int64_t i = 0; i < (int64_t)starts->size(); ++i)
      axes.push_back(i);
  }
  if (n.hasInput(4)) {
    FailureOr<SmallVector<int64_t>> s = n.intsInput(4, "steps");
    if (failed(s))
      return failure();
    steps = *s;
  }
  if (ends->size() != starts->size() || axes.size() != starts->size() ||
      steps.size() != starts->size())
    return n.error() << "starts, ends, axes and steps must have the same "
                        "length";
  SmallVector<int64_t> lo(rank, 0), hi(shape), st(rank, 1);
  SmallVector<bool> seen(rank, false);
  for (size_t i = 0; i < axes.size(); ++i) {
    FailureOr<int64_t> axis = n.axis(axes[i], rank);
    if (failed(axis))
      return failure();
    if (seen[*axis])
      return n.error() << "axis " << axes[i] << " appears more than once";
    seen[*axis] = true;
    int64_t dim = shape[*axis], step = steps[i];
    if (step == 0)
      return n.error() << "step of axis " << axes[i] << " is zero";
    int64_t start = (*starts)[i], end = (*ends)[i];
    if (start < 0)
      start += dim;
    if (end < 0)
      end += dim;
    if (step > 0) {
      start = std::clamp<int64_t>(start, 0, dim);
      end = std::clamp<int64_t>(end, start, dim);
    } else {
      start = std::clamp<int64_t>(start, 0, dim - 1);
      end = std::clamp<int64_t>(end, -1, start);
    }
    lo[*axis] = start;
    hi[*axis] = end;
    st[*axis] = step;
  }
  FailureOr<Value> result = n.build1<SliceOp>(n.input(0), lo, hi, st);
  if (failed(result))
    return failure();
  out.push_back(*result);
  return success();
}

LogicalResult translateGather(NodeContext &n, SmallVectorImpl<Value> &out) {
  if (failed(n.requireInputs(2)) || failed(n.checkAttrs({"axis"})))
    return failure();
  FailureOr<int64_t> axis =
      n.axis(n.getInt("axis", 0), n.inputType(0).getRank());
  if (failed(axis))
    return failure();
  FailureOr<Value> result = n.build1<GatherOp>(n.input(0), n.input(1), *axis);
  if (failed(result))
    return failure();
  out.push_back(*result);
  return success();
}

LogicalResult translateGatherElements(NodeContext &n,
                                      SmallVectorImpl<Value> &out) {
  if (failed(n.requireInputs(2)) || failed(n.checkAttrs({"axis"})))
    return failure();
  FailureOr<int64_t> axis =
      n.axis(n.getInt("axis", 0), n.inputType(0).getRank());
  if (failed(axis))
    return failure();
  FailureOr<Value> result =
      n.build1<GatherElementsOp>(n.input(0), n.input(1), *axis);
  if (failed(result))
    return failure();
  out.push_back(*result);
  return success();
}

LogicalResult translateScatterElements(NodeContext &n,
                                       SmallVectorImpl<Value> &out) {
  if (failed(n.requireInputs(3)) ||
      failed(n.checkAttrs({"axis", "reduction"})))
    return failure();
  FailureOr<int64_t> axis =
      n.axis(n.getInt("axis", 0), n.inputType(0).getRank());
  if (failed(axis))
    return failure();
  std::string name = n.getString("reduction", "none");
  std::optional<ScatterReduction> reduction =
      symbolizeScatterReduction(name);
  if (!reduction)
    return n.error() << "reduction \"" << name << "\" is not supported";
  FailureOr<Value> result = n.build1<ScatterElementsOp>(
      n.input(0), n.input(1), n.input(2), *axis, *reduction);
  if (failed(result))
    return failure();
  out.push_back(*result);
  return success();
}

LogicalResult translateExpand(NodeContext &n, SmallVectorImpl<Value> &out) {
  if (failed(n.requireInputs(2)) || failed(n.checkAttrs({})))
    return failure();
  FailureOr<SmallVector<int64_t>> target = n.intsInput(1, "shape");
  if (failed(target))
    return failure();
  RankedTensorType type = n.inputType(0);
  FailureOr<SmallVector<int64_t>> shape =
      mlir::loom::detail::broadcastShapes(type.getShape(), *target);
  if (failed(shape))
    return n.error() << "input shape does not broadcast to the target shape";
  auto resultType = type.clone(*shape);
  if (resultType == type) {
    out.push_back(n.input(0));
    return success();
  }
  out.push_back(
      n.foldOrKeep(ExpandOp::create(n.b, n.loc, resultType, n.input(0)))
          .front());
  return success();
}

LogicalResult translateTile(NodeContext &n, SmallVectorImpl<Value> &out) {
  if (failed(n.requireInputs(2)) || failed(n.checkAttrs({})))
    return failure();
  FailureOr<SmallVector<int64_t>> repeats = n.intsInput(1, "repeats");
  if (failed(repeats))
    return failure();
  FailureOr<Value> result = n.build1<TileOp>(n.input(0), *repeats);
  if (failed(result))
    return failure();
  out.push_back(*result);
  return success();
}

LogicalResult translatePad(NodeContext &n, SmallVectorImpl<Value> &out) {
  if (failed(n.requireInputs(2)) || failed(n.checkAttrs({"mode"})))
    return failure();
  std::string modeName = n.getString("mode", "constant");
  std::optional<PadMode> mode = symbolizePadMode(modeName);
  if (!mode)
    return n.error() << "mode \"" << modeName << "\" is not supported";
  FailureOr<SmallVector<int64_t>> pads = n.intsInput(1, "pads");
  if (failed(pads))
    return failure();
  int64_t rank = n.inputType(0).getRank();
  if ((int64_t)pads->size() != 2 * rank)
    return n.error() << "expected " << 2 * rank << " pads, got "
                     << pads->size();
  double value = 0.0;
  if (n.hasInput(2)) {
    FailureOr<double> v = n.floatInput(2, "constant_value");
    if (failed(v))
      return failure();
    value = *v;
  }
  if (n.hasInput(3))
    return n.error() << "the axes input is not supported";
  SmallVector<int64_t> low(pads->begin(), pads->begin() + rank),
      high(pads->begin() + rank, pads->end());
  FailureOr<Value> result = n.build1<PadOp>(
      n.input(0), n.b.getDenseI64ArrayAttr(low), n.b.getDenseI64ArrayAttr(high),
      PadModeAttr::get(n.b.getContext(), *mode), n.b.getF64FloatAttr(value));
  if (failed(result))
    return failure();
  out.push_back(*result);
  return success();
}

LogicalResult translateTopK(NodeContext &n, SmallVectorImpl<Value> &out) {
  if (failed(n.requireInputs(2)) ||
      failed(n.checkAttrs({"axis", "largest", "sorted"})))
    return failure();
  FailureOr<SmallVector<int64_t>> k = n.intsInput(1, "k");
  if (failed(k))
    return failure();
  if (k->size() != 1)
    return n.error() << "k must hold one value, got " << k->size();
  FailureOr<int64_t> axis =
      n.axis(n.getInt("axis", -1), n.inputType(0).getRank());
  if (failed(axis))
    return failure();
  // sorted = 0 leaves the order unspecified, so sorted output is valid too.
  FailureOr<SmallVector<Value>> results = n.build<TopKOp>(
      n.input(0), k->front(), *axis, n.getInt("largest", 1) != 0);
  if (failed(results))
    return failure();
  out.append(results->begin(), results->end());
  return success();
}

LogicalResult translateOneHot(NodeContext &n, SmallVectorImpl<Value> &out) {
  if (failed(n.requireInputs(3)) || failed(n.checkAttrs({"axis"})))
    return failure();
  FailureOr<double> depth = n.floatInput(1, "depth");
  if (failed(depth))
    return failure();
  int64_t rank = n.inputType(0).getRank() + 1;
  FailureOr<int64_t> axis = n.axis(n.getInt("axis", -1), rank);
  if (failed(axis))
    return failure();
  Value indices = n.input(0);
  if (!n.inputType(0).getElementType().isInteger())
    indices = n.castTo(indices, n.b.getI64Type());
  FailureOr<Value> result =
      n.build1<OneHotOp>(indices, n.input(2), (int64_t)*depth, *axis);
  if (failed(result))
    return failure();
  out.push_back(*result);
  return success();
}

LogicalResult translateCumSum(NodeContext &n, SmallVectorImpl<Value> &out) {
  if (failed(n.requireInputs(2)) ||
      failed(n.checkAttrs({"exclusive", "reverse"})))
    return failure();
  FailureOr<double> axisValue = n.floatInput(1, "axis");
  if (failed(axisValue))
    return failure();
  FailureOr<int64_t> axis =
      n.axis((int64_t)*axisValue, n.inputType(0).getRank());
  if (failed(axis))
    return failure();
  out.push_back(CumSumOp::create(n.b, n.loc, n.input(0), *axis,
                                 n.getInt("exclusive", 0) != 0,
                                 n.getInt("reverse", 0) != 0));
  return success();
}

LogicalResult translateTrilu(NodeContext &n, SmallVectorImpl<Value> &out) {
  if (failed(n.requireInputs(1)) || failed(n.checkAttrs({"upper"})))
    return failure();
  int64_t k = 0;
  if (n.hasInput(1)) {
    FailureOr<double> v = n.floatInput(1, "k");
    if (failed(v))
      return failure();
    k = (int64_t)*v;
  }
  if (n.inputType(0).getRank() < 2)
    return n.error() << "input must have rank 2 or more";
  out.push_back(TriluOp::create(n.b, n.loc, n.input(0), k,
                                n.getInt("upper", 1) != 0));
  return success();
}

} // namespace

void mlir::loom::onnx_import::addTensorTranslators(TranslatorTable &t) {
  t["Constant"] = translateConstant;
  t["Shape"] = translateShape;
  t["Size"] = translateSize;
  t["ConstantOfShape"] = translateConstantOfShape;
  t["Range"] = translateRange;
  t["Reshape"] = translateReshape;
  t["Flatten"] = translateFlatten;
  t["Squeeze"] = translateSqueeze;
  t["Unsqueeze"] = translateUnsqueeze;
  t["Transpose"] = translateTranspose;
  t["Concat"] = translateConcat;
  t["Split"] = translateSplit;
  t["Slice"] = translateSlice;
  t["Gather"] = translateGather;
  t["GatherElements"] = translateGatherElements;
  t["ScatterElements"] = translateScatterElements;
  t["Expand"] = translateExpand;
  t["Tile"] = translateTile;
  t["Pad"] = translatePad;
  t["TopK"] = translateTopK;
  t["OneHot"] = translateOneHot;
  t["CumSum"] = translateCumSum;
  t["Trilu"] = translateTrilu;
}
