//===- LoomOps.cpp - ops of the loom dialect ------------------------------===//
//
// Type inference, verifiers, folders and costs of the loom ops. Axes in loom
// ops are always normalized (0 <= axis < rank); the importer resolves ONNX's
// negative axes.
//
//===----------------------------------------------------------------------===//

#include "dialects/Loom/LoomOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallSet.h"
#include "llvm/ADT/StringSet.h"

#include <algorithm>
#include <cmath>
#include <sstream>

using namespace mlir;
using namespace mlir::loom;

//===----------------------------------------------------------------------===//
// Shared helpers
//===----------------------------------------------------------------------===//

/// Returns the ranked tensor type of `value`, or emits an error naming `what`.
static FailureOr<RankedTensorType> getRanked(std::optional<Location> loc,
                                             Value value, StringRef what) {
  if (auto type = dyn_cast_or_null<RankedTensorType>(value.getType()))
    return type;
  return emitOptionalError(loc, what, " must be a ranked tensor, got ",
                           value.getType());
}

static std::string shapeString(ArrayRef<int64_t> shape) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "[";
  llvm::interleaveComma(shape, os, [&](int64_t d) {
    if (ShapedType::isDynamic(d))
      os << "?";
    else
      os << d;
  });
  os << "]";
  return text;
}

/// True when two extents can be equal (one of them dynamic, or both the same).
static bool extentsAgree(int64_t a, int64_t b) {
  return ShapedType::isDynamic(a) || ShapedType::isDynamic(b) || a == b;
}

LogicalResult mlir::loom::detail::verifyAxis(Operation *op, int64_t axis,
                                             int64_t rank) {
  if (axis < 0 || axis >= rank)
    return op->emitOpError() << "axis " << axis << " is out of range for rank "
                             << rank;
  return success();
}

FailureOr<SmallVector<int64_t>>
mlir::loom::detail::broadcastShapes(ArrayRef<int64_t> a, ArrayRef<int64_t> b) {
  size_t rank = std::max(a.size(), b.size());
  SmallVector<int64_t> result(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t x = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t y = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (x == 1)
      result[i] = y;
    else if (y == 1)
      result[i] = x;
    else if (ShapedType::isDynamic(x))
      result[i] = y;
    else if (ShapedType::isDynamic(y) || x == y)
      result[i] = x;
    else
      return failure();
  }
  return result;
}

LogicalResult mlir::loom::detail::inferBroadcast(std::optional<Location> loc,
                                                 ValueRange operands,
                                                 bool boolResult,
                                                 SmallVectorImpl<Type> &types) {
  SmallVector<int64_t> shape;
  Type element;
  for (auto [i, operand] : llvm::enumerate(operands)) {
    FailureOr<RankedTensorType> type =
        getRanked(loc, operand, "operand #" + std::to_string(i));
    if (failed(type))
      return failure();
    if (!element)
      element = type->getElementType();
    else if (element != type->getElementType())
      return emitOptionalError(loc, "operands must have the same element type, "
                                    "got ",
                               element, " and ", type->getElementType());
    FailureOr<SmallVector<int64_t>> joined =
        detail::broadcastShapes(shape, type->getShape());
    if (failed(joined))
      return emitOptionalError(loc, "shapes ", shapeString(shape), " and ",
                               shapeString(type->getShape()),
                               " do not broadcast");
    shape = *joined;
  }
  if (boolResult)
    element = IntegerType::get(operands.front().getContext(), 1);
  types.push_back(RankedTensorType::get(shape, element));
  return success();
}

/// Checks that `axes` are distinct and within [0, rank).
static LogicalResult checkAxes(std::optional<Location> loc,
                               ArrayRef<int64_t> axes, int64_t rank) {
  llvm::SmallSet<int64_t, 4> seen;
  for (int64_t axis : axes) {
    if (axis < 0 || axis >= rank)
      return emitOptionalError(loc, "axis ", axis, " is out of range for rank ",
                               rank);
    if (!seen.insert(axis).second)
      return emitOptionalError(loc, "axis ", axis, " appears more than once");
  }
  return success();
}

LogicalResult mlir::loom::detail::inferReduce(std::optional<Location> loc,
                                              Value input,
                                              ArrayRef<int64_t> axes,
                                              bool keepdims, Type elementType,
                                              SmallVectorImpl<Type> &types) {
  FailureOr<RankedTensorType> type = getRanked(loc, input, "input");
  if (failed(type) || failed(checkAxes(loc, axes, type->getRank())))
    return failure();
  SmallVector<int64_t> shape;
  for (int64_t d = 0, e = type->getRank(); d < e; ++d) {
    bool reduced = axes.empty() || llvm::is_contained(axes, d);
    if (!reduced)
      shape.push_back(type->getDimSize(d));
    else if (keepdims)
      shape.push_back(1);
  }
  types.push_back(RankedTensorType::get(
      shape, elementType ? elementType : type->getElementType()));
  return success();
}

/// Output extent of a sliding window, or failure with a diagnostic.
static FailureOr<int64_t> windowExtent(std::optional<Location> loc,
                                       int64_t in, int64_t kernel,
                                       int64_t stride, int64_t padBegin,
                                       int64_t padEnd, int64_t dilation,
                                       bool ceilMode, unsigned dim) {
  if (ShapedType::isDynamic(in))
    return ShapedType::kDynamic;
  if (kernel <= 0 || stride <= 0 || dilation <= 0 || padBegin < 0 || padEnd < 0)
    return emitOptionalError(loc, "spatial dimension ", dim,
                             " has a non-positive kernel, stride or dilation, "
                             "or a negative pad");
  int64_t span = in + padBegin + padEnd - dilation * (kernel - 1) - 1;
  if (span < 0)
    return emitOptionalError(loc, "window of extent ",
                             dilation * (kernel - 1) + 1,
                             " does not fit spatial dimension ", dim,
                             " (size ", in, " with pads ", padBegin, "+",
                             padEnd, ")");
  int64_t out = span / stride + 1;
  if (ceilMode && span % stride != 0) {
    ++out;
    // The last window must start inside the input or its begin pad.
    if ((out - 1) * stride >= in + padBegin)
      --out;
  }
  return out;
}

LogicalResult mlir::loom::detail::inferPool(
    std::optional<Location> loc, Value input, ArrayRef<int64_t> kernel,
    ArrayRef<int64_t> strides, ArrayRef<int64_t> pads,
    ArrayRef<int64_t> dilations, bool ceilMode, SmallVectorImpl<Type> &types) {
  FailureOr<RankedTensorType> type = getRanked(loc, input, "input");
  if (failed(type))
    return failure();
  int64_t spatial = type->getRank() - 2;
  if (spatial < 1)
    return emitOptionalError(loc, "input must have rank 3 or more, got ",
                             type->getRank());
  if ((int64_t)kernel.size() != spatial || (int64_t)strides.size() != spatial ||
      (int64_t)dilations.size() != spatial || (int64_t)pads.size() != 2 * spatial)
    return emitOptionalError(
        loc, "expected ", spatial, " kernel sizes, strides and dilations and ",
        2 * spatial, " pads for ", spatial, " spatial dimensions, got ",
        kernel.size(), ", ", strides.size(), ", ", dilations.size(), " and ",
        pads.size());
  SmallVector<int64_t> shape(type->getShape().take_front(2));
  for (int64_t d = 0; d < spatial; ++d) {
    FailureOr<int64_t> out = windowExtent(
        loc, type->getDimSize(d + 2), kernel[d], strides[d], pads[d],
        pads[d + spatial], dilations[d], ceilMode, d);
    if (failed(out))
      return failure();
    shape.push_back(*out);
  }
  types.push_back(RankedTensorType::get(shape, type->getElementType()));
  return success();
}

/// Checks that `value` has type `[extents...]` with the element type of `like`.
static LogicalResult expectShape(std::optional<Location> loc, Value value,
                                 StringRef what, ArrayRef<int64_t> extents,
                                 Type element) {
  FailureOr<RankedTensorType> type = getRanked(loc, value, what);
  if (failed(type))
    return failure();
  bool ok = type->getRank() == (int64_t)extents.size();
  for (size_t i = 0; ok && i < extents.size(); ++i)
    ok = extentsAgree(type->getDimSize(i), extents[i]);
  if (!ok)
    return emitOptionalError(loc, what, " must have shape ",
                             shapeString(extents), ", got ",
                             shapeString(type->getShape()));
  if (element && type->getElementType() != element)
    return emitOptionalError(loc, what, " must have element type ", element,
                             ", got ", type->getElementType());
  return success();
}

//===----------------------------------------------------------------------===//
// ConstantOp
//===----------------------------------------------------------------------===//

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

// A constant is materialized once; it computes and reads nothing.
int64_t ConstantOp::getFlops() { return 0; }
int64_t ConstantOp::getBytesRead() { return 0; }

//===----------------------------------------------------------------------===//
// WhereOp, MatmulOp, ConvOp
//===----------------------------------------------------------------------===//

LogicalResult WhereOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &types) {
  SmallVector<Type> condType;
  if (failed(detail::inferBroadcast(loc, adaptor.getOperands().take_front(),
                                    /*boolResult=*/true, condType)) ||
      failed(detail::inferBroadcast(loc, adaptor.getOperands().drop_front(),
                                    /*boolResult=*/false, types)))
    return failure();
  auto values = cast<RankedTensorType>(types.back());
  FailureOr<SmallVector<int64_t>> shape = detail::broadcastShapes(
      cast<RankedTensorType>(condType.front()).getShape(), values.getShape());
  if (failed(shape))
    return emitOptionalError(loc, "condition shape does not broadcast with ",
                             shapeString(values.getShape()));
  types.back() = RankedTensorType::get(*shape, values.getElementType());
  return success();
}

LogicalResult MatmulOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  FailureOr<RankedTensorType> lhs = getRanked(loc, adaptor.getLhs(), "lhs");
  FailureOr<RankedTensorType> rhs = getRanked(loc, adaptor.getRhs(), "rhs");
  if (failed(lhs) || failed(rhs))
    return failure();
  if (lhs->getRank() < 2 || rhs->getRank() < 2)
    return emitOptionalError(loc, "operands must have rank 2 or more, got ",
                             lhs->getRank(), " and ", rhs->getRank());
  if (lhs->getElementType() != rhs->getElementType())
    return emitOptionalError(loc, "operands must have the same element type, "
                                  "got ",
                             lhs->getElementType(), " and ",
                             rhs->getElementType());
  ArrayRef<int64_t> a = lhs->getShape(), b = rhs->getShape();
  int64_t m = a[a.size() - (adaptor.getTransposeLhs() ? 1 : 2)];
  int64_t k = a[a.size() - (adaptor.getTransposeLhs() ? 2 : 1)];
  int64_t k2 = b[b.size() - (adaptor.getTransposeRhs() ? 1 : 2)];
  int64_t n = b[b.size() - (adaptor.getTransposeRhs() ? 2 : 1)];
  if (!extentsAgree(k, k2))
    return emitOptionalError(loc, "contracting dimensions differ: lhs ",
                             shapeString(a), " has ", k, ", rhs ",
                             shapeString(b), " has ", k2);
  FailureOr<SmallVector<int64_t>> batch =
      detail::broadcastShapes(a.drop_back(2), b.drop_back(2));
  if (failed(batch))
    return emitOptionalError(loc, "batch dimensions of ", shapeString(a),
                             " and ", shapeString(b), " do not broadcast");
  batch->append({m, n});
  types.push_back(RankedTensorType::get(*batch, lhs->getElementType()));
  return success();
}

/// Whether a product's result type `actual` fits the `inferred` one: the
/// same, or the f32 accumulator of bf16 or f16 factors.
static bool isProductResult(TypeRange inferred, TypeRange actual) {
  if (inferred.size() != 1 || actual.size() != 1)
    return false;
  auto i = dyn_cast<RankedTensorType>(inferred.front());
  auto a = dyn_cast<RankedTensorType>(actual.front());
  if (!i || !a || failed(verifyCompatibleShape(i, a)))
    return false;
  Type from = i.getElementType(), to = a.getElementType();
  return from == to || ((from.isBF16() || from.isF16()) && to.isF32());
}

bool MatmulOp::isCompatibleReturnTypes(TypeRange l, TypeRange r) {
  return isProductResult(l, r);
}

bool ConvOp::isCompatibleReturnTypes(TypeRange l, TypeRange r) {
  return isProductResult(l, r);
}

int64_t MatmulOp::getFlops() {
  auto lhs = cast<RankedTensorType>(getLhs().getType());
  int64_t k = lhs.getDimSize(lhs.getRank() - (getTransposeLhs() ? 2 : 1));
  return ShapedType::isDynamic(k) ? 0
                                  : 2 * k * detail::numElements(getType());
}

LogicalResult ConvOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &types) {
  FailureOr<RankedTensorType> input = getRanked(loc, adaptor.getInput(), "input");
  FailureOr<RankedTensorType> filter =
      getRanked(loc, adaptor.getFilter(), "filter");
  if (failed(input) || failed(filter))
    return failure();
  int64_t rank = input->getRank();
  if (rank < 3 || filter->getRank() != rank)
    return emitOptionalError(loc, "input and filter must have the same rank "
                                  "of 3 or more, got ",
                             rank, " and ", filter->getRank());
  Type element = input->getElementType();
  if (filter->getElementType() != element)
    return emitOptionalError(loc, "filter element type ",
                             filter->getElementType(), " differs from input's ",
                             element);
  int64_t groups = adaptor.getGroups();
  int64_t channels = input->getDimSize(1), features = filter->getDimSize(0);
  if (groups <= 0)
    return emitOptionalError(loc, "groups must be positive, got ", groups);
  if (!ShapedType::isDynamic(channels) &&
      !extentsAgree(filter->getDimSize(1) * groups, channels))
    return emitOptionalError(loc, "input has ", channels,
                             " channels but the filter expects ",
                             filter->getDimSize(1), " x ", groups, " groups");
  if (!ShapedType::isDynamic(features) && features % groups != 0)
    return emitOptionalError(loc, "filter count ", features,
                             " is not divisible by groups ", groups);
  if (adaptor.getBias() &&
      failed(expectShape(loc, adaptor.getBias(), "bias", {features}, element)))
    return failure();
  SmallVector<Type> pooled;
  if (failed(detail::inferPool(loc, adaptor.getInput(),
                               filter->getShape().drop_front(2),
                               adaptor.getStrides(), adaptor.getPads(),
                               adaptor.getDilations(), /*ceilMode=*/false,
                               pooled)))
    return failure();
  SmallVector<int64_t> shape(cast<RankedTensorType>(pooled[0]).getShape());
  shape[1] = features;
  types.push_back(RankedTensorType::get(shape, element));
  return success();
}

int64_t ConvOp::getFlops() {
  auto filter = cast<RankedTensorType>(getFilter().getType());
  int64_t perOutput = detail::numElements(filter) / filter.getDimSize(0);
  int64_t outputs = detail::numElements(getType());
  return 2 * perOutput * outputs + (getBias() ? outputs : 0);
}

//===----------------------------------------------------------------------===//
// Normalizations
//===----------------------------------------------------------------------===//

LogicalResult LayerNormOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  FailureOr<RankedTensorType> input = getRanked(loc, adaptor.getInput(), "input");
  if (failed(input))
    return failure();
  int64_t axis = adaptor.getAxis(), rank = input->getRank();
  if (axis < 0 || axis >= rank)
    return emitOptionalError(loc, "axis ", axis, " is out of range for rank ",
                             rank);
  ArrayRef<int64_t> normalized = input->getShape().drop_front(axis);
  SmallVector<Value> params = {adaptor.getScale()};
  if (adaptor.getBias())
    params.push_back(adaptor.getBias());
  for (Value param : params) {
    FailureOr<RankedTensorType> type = getRanked(loc, param, "scale and bias");
    if (failed(type))
      return failure();
    FailureOr<SmallVector<int64_t>> joined =
        detail::broadcastShapes(normalized, type->getShape());
    if (failed(joined) || ArrayRef<int64_t>(*joined) != normalized ||
        type->getElementType() != input->getElementType())
      return emitOptionalError(loc, "scale and bias must broadcast to the "
                                    "normalized shape ",
                               shapeString(normalized), " with element type ",
                               input->getElementType(), ", got ", *type);
  }
  SmallVector<int64_t> statShape(input->getShape());
  for (int64_t d = axis; d < rank; ++d)
    statShape[d] = 1;
  auto stats = RankedTensorType::get(statShape, input->getElementType());
  types.append({*input, stats, stats});
  return success();
}

int64_t LayerNormOp::getFlops() {
  return 8 * detail::numElements(getInput().getType());
}

/// Checks the per-channel operands of batch normalization and returns C.
static LogicalResult checkChannelParams(std::optional<Location> loc,
                                        RankedTensorType input,
                                        ValueRange params) {
  if (input.getRank() < 2)
    return emitOptionalError(loc, "input must have rank 2 or more, got ",
                             input.getRank());
  for (Value param : params)
    if (failed(expectShape(loc, param, "scale, bias, mean and variance",
                           {input.getDimSize(1)}, input.getElementType())))
      return failure();
  return success();
}

LogicalResult BatchNormOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  FailureOr<RankedTensorType> input = getRanked(loc, adaptor.getInput(), "input");
  if (failed(input) ||
      failed(checkChannelParams(loc, *input, adaptor.getOperands().drop_front())))
    return failure();
  types.push_back(*input);
  return success();
}

int64_t BatchNormOp::getFlops() {
  return 4 * detail::numElements(getInput().getType());
}

LogicalResult BatchNormTrainOp::inferReturnTypes(MLIRContext *,
                                                 std::optional<Location> loc,
                                                 Adaptor adaptor,
                                                 SmallVectorImpl<Type> &types) {
  FailureOr<RankedTensorType> input = getRanked(loc, adaptor.getInput(), "input");
  if (failed(input) ||
      failed(checkChannelParams(loc, *input, adaptor.getOperands().drop_front())))
    return failure();
  Type channel = adaptor.getScale().getType();
  types.append({*input, channel, channel, channel, channel});
  return success();
}

int64_t BatchNormTrainOp::getFlops() {
  return 8 * detail::numElements(getInput().getType());
}

//===----------------------------------------------------------------------===//
// Shape and data movement
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::verify() {
  RankedTensorType in = getInput().getType(), out = getType();
  if (in.getElementType() != out.getElementType())
    return emitOpError() << "element type must not change, got "
                         << in.getElementType() << " and "
                         << out.getElementType();
  if (in.hasStaticShape() && out.hasStaticShape() &&
      in.getNumElements() != out.getNumElements())
    return emitOpError() << "cannot reshape " << in.getNumElements()
                         << " elements " << shapeString(in.getShape())
                         << " into " << out.getNumElements() << " elements "
                         << shapeString(out.getShape());
  return success();
}

OpFoldResult ReshapeOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType())
    return getInput();
  if (auto dense = dyn_cast_or_null<DenseElementsAttr>(adaptor.getInput()))
    return dense.reshape(getType());
  return {};
}

int64_t ReshapeOp::getFlops() { return 0; }
int64_t ReshapeOp::getBytesRead() { return 0; }
int64_t ReshapeOp::getBytesWritten() { return 0; }

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  FailureOr<RankedTensorType> input = getRanked(loc, adaptor.getInput(), "input");
  if (failed(input))
    return failure();
  ArrayRef<int64_t> perm = adaptor.getPerm();
  SmallVector<int64_t> sorted(perm);
  llvm::sort(sorted);
  if (!llvm::equal(sorted, llvm::seq<int64_t>(0, input->getRank())))
    return emitOptionalError(loc, "perm must be a permutation of 0..",
                             input->getRank() - 1, ", got ",
                             shapeString(perm));
  SmallVector<int64_t> shape;
  for (int64_t p : perm)
    shape.push_back(input->getDimSize(p));
  types.push_back(RankedTensorType::get(shape, input->getElementType()));
  return success();
}

OpFoldResult TransposeOp::fold(FoldAdaptor adaptor) {
  if (llvm::equal(getPerm(), llvm::seq<int64_t>(0, getPerm().size())))
    return getInput();
  if (auto dense = dyn_cast_or_null<DenseElementsAttr>(adaptor.getInput());
      dense && dense.isSplat())
    return dense.resizeSplat(getType());
  return {};
}

int64_t TransposeOp::getFlops() { return 0; }

LogicalResult ExpandOp::verify() {
  RankedTensorType in = getInput().getType(), out = getType();
  if (in.getElementType() != out.getElementType())
    return emitOpError() << "element type must not change, got "
                         << in.getElementType() << " and "
                         << out.getElementType();
  FailureOr<SmallVector<int64_t>> joined =
      detail::broadcastShapes(in.getShape(), out.getShape());
  if (failed(joined) || ArrayRef<int64_t>(*joined) != out.getShape())
    return emitOpError() << "cannot broadcast " << shapeString(in.getShape())
                         << " to " << shapeString(out.getShape());
  return success();
}

OpFoldResult ExpandOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType())
    return getInput();
  if (auto dense = dyn_cast_or_null<DenseElementsAttr>(adaptor.getInput());
      dense && dense.isSplat())
    return dense.resizeSplat(getType());
  return {};
}

int64_t ExpandOp::getFlops() { return 0; }

LogicalResult ConcatOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  if (adaptor.getInputs().empty())
    return emitOptionalError(loc, "needs at least one input");
  FailureOr<RankedTensorType> first =
      getRanked(loc, adaptor.getInputs().front(), "input #0");
  if (failed(first))
    return failure();
  int64_t axis = adaptor.getAxis(), rank = first->getRank();
  if (axis < 0 || axis >= rank)
    return emitOptionalError(loc, "axis ", axis, " is out of range for rank ",
                             rank);
  SmallVector<int64_t> shape(first->getShape());
  shape[axis] = 0;
  for (auto [i, input] : llvm::enumerate(adaptor.getInputs())) {
    FailureOr<RankedTensorType> type =
        getRanked(loc, input, "input #" + std::to_string(i));
    if (failed(type))
      return failure();
    bool ok = type->getRank() == rank &&
              type->getElementType() == first->getElementType();
    for (int64_t d = 0; ok && d < rank; ++d)
      ok = d == axis || extentsAgree(type->getDimSize(d), shape[d]);
    if (!ok)
      return emitOptionalError(loc, "input #", i, " ", *type,
                               " does not match input #0 ", *first,
                               " outside axis ", axis);
    if (ShapedType::isDynamic(type->getDimSize(axis)) ||
        ShapedType::isDynamic(shape[axis]))
      shape[axis] = ShapedType::kDynamic;
    else
      shape[axis] += type->getDimSize(axis);
  }
  types.push_back(RankedTensorType::get(shape, first->getElementType()));
  return success();
}

int64_t ConcatOp::getFlops() { return 0; }

LogicalResult SplitOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &types) {
  FailureOr<RankedTensorType> input = getRanked(loc, adaptor.getInput(), "input");
  if (failed(input))
    return failure();
  int64_t axis = adaptor.getAxis(), rank = input->getRank();
  if (axis < 0 || axis >= rank)
    return emitOptionalError(loc, "axis ", axis, " is out of range for rank ",
                             rank);
  int64_t total = 0;
  for (int64_t size : adaptor.getSizes()) {
    if (size < 0)
      return emitOptionalError(loc, "split sizes must be non-negative, got ",
                               shapeString(adaptor.getSizes()));
    total += size;
  }
  if (!extentsAgree(total, input->getDimSize(axis)))
    return emitOptionalError(loc, "split sizes ",
                             shapeString(adaptor.getSizes()), " add up to ",
                             total, ", not to dimension ", axis, " (size ",
                             input->getDimSize(axis), ")");
  for (int64_t size : adaptor.getSizes()) {
    SmallVector<int64_t> shape(input->getShape());
    shape[axis] = size;
    types.push_back(RankedTensorType::get(shape, input->getElementType()));
  }
  return success();
}

int64_t SplitOp::getFlops() { return 0; }

LogicalResult SliceOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &types) {
  FailureOr<RankedTensorType> input = getRanked(loc, adaptor.getInput(), "input");
  if (failed(input))
    return failure();
  ArrayRef<int64_t> starts = adaptor.getStarts(), limits = adaptor.getLimits(),
                    steps = adaptor.getSteps();
  int64_t rank = input->getRank();
  if ((int64_t)starts.size() != rank || (int64_t)limits.size() != rank ||
      (int64_t)steps.size() != rank)
    return emitOptionalError(loc, "expected ", rank,
                             " starts, limits and steps, got ", starts.size(),
                             ", ", limits.size(), " and ", steps.size());
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t extent = input->getDimSize(d), start = starts[d],
            limit = limits[d], step = steps[d];
    if (step == 0)
      return emitOptionalError(loc, "step of dimension ", d, " is zero");
    if (ShapedType::isDynamic(extent)) {
      shape.push_back(ShapedType::kDynamic);
      continue;
    }
    bool inRange = step > 0 ? (0 <= start && start <= limit && limit <= extent)
                            : (-1 <= limit && limit <= start && start < extent);
    if (!inRange && !(step < 0 && extent == 0))
      return emitOptionalError(loc, "slice [", start, ", ", limit, ") step ",
                               step, " is out of range for dimension ", d,
                               " (size ", extent, ")");
    int64_t span = step > 0 ? limit - start : start - limit;
    int64_t stride = step > 0 ? step : -step;
    shape.push_back(std::max<int64_t>(0, (span + stride - 1) / stride));
  }
  types.push_back(RankedTensorType::get(shape, input->getElementType()));
  return success();
}

int64_t SliceOp::getFlops() { return 0; }

LogicalResult PadOp::inferReturnTypes(MLIRContext *,
                                      std::optional<Location> loc,
                                      Adaptor adaptor,
                                      SmallVectorImpl<Type> &types) {
  FailureOr<RankedTensorType> input = getRanked(loc, adaptor.getInput(), "input");
  if (failed(input))
    return failure();
  int64_t rank = input->getRank();
  if ((int64_t)adaptor.getLow().size() != rank ||
      (int64_t)adaptor.getHigh().size() != rank)
    return emitOptionalError(loc, "expected ", rank, " low and high pads, got ",
                             adaptor.getLow().size(), " and ",
                             adaptor.getHigh().size());
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t extent = input->getDimSize(d);
    int64_t out = ShapedType::isDynamic(extent)
                      ? extent
                      : extent + adaptor.getLow()[d] + adaptor.getHigh()[d];
    if (out < 0 && !ShapedType::isDynamic(out))
      return emitOptionalError(loc, "pads crop dimension ", d, " (size ",
                               extent, ") below zero");
    shape.push_back(out);
  }
  types.push_back(RankedTensorType::get(shape, input->getElementType()));
  return success();
}

int64_t PadOp::getFlops() { return 0; }

LogicalResult TileOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &types) {
  FailureOr<RankedTensorType> input = getRanked(loc, adaptor.getInput(), "input");
  if (failed(input))
    return failure();
  ArrayRef<int64_t> repeats = adaptor.getRepeats();
  if ((int64_t)repeats.size() != input->getRank())
    return emitOptionalError(loc, "expected ", input->getRank(),
                             " repeats, got ", repeats.size());
  SmallVector<int64_t> shape;
  for (auto [extent, repeat] : llvm::zip(input->getShape(), repeats)) {
    if (repeat < 0)
      return emitOptionalError(loc, "repeats must be non-negative, got ",
                               shapeString(repeats));
    shape.push_back(ShapedType::isDynamic(extent) ? extent : extent * repeat);
  }
  types.push_back(RankedTensorType::get(shape, input->getElementType()));
  return success();
}

int64_t TileOp::getFlops() { return 0; }

LogicalResult GatherOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  FailureOr<RankedTensorType> input = getRanked(loc, adaptor.getInput(), "input");
  FailureOr<RankedTensorType> indices =
      getRanked(loc, adaptor.getIndices(), "indices");
  if (failed(input) || failed(indices))
    return failure();
  int64_t axis = adaptor.getAxis();
  if (axis < 0 || axis >= input->getRank())
    return emitOptionalError(loc, "axis ", axis, " is out of range for rank ",
                             input->getRank());
  SmallVector<int64_t> shape(input->getShape().take_front(axis));
  llvm::append_range(shape, indices->getShape());
  llvm::append_range(shape, input->getShape().drop_front(axis + 1));
  types.push_back(RankedTensorType::get(shape, input->getElementType()));
  return success();
}

int64_t GatherOp::getFlops() { return 0; }

LogicalResult GatherElementsOp::inferReturnTypes(MLIRContext *,
                                                 std::optional<Location> loc,
                                                 Adaptor adaptor,
                                                 SmallVectorImpl<Type> &types) {
  FailureOr<RankedTensorType> input = getRanked(loc, adaptor.getInput(), "input");
  FailureOr<RankedTensorType> indices =
      getRanked(loc, adaptor.getIndices(), "indices");
  if (failed(input) || failed(indices))
    return failure();
  if (input->getRank() != indices->getRank())
    return emitOptionalError(loc, "input and indices must have the same rank, "
                                  "got ",
                             input->getRank(), " and ", indices->getRank());
  if (int64_t axis = adaptor.getAxis(); axis < 0 || axis >= input->getRank())
    return emitOptionalError(loc, "axis ", axis,
                             " is out of range for rank ", input->getRank());
  types.push_back(
      RankedTensorType::get(indices->getShape(), input->getElementType()));
  return success();
}

int64_t GatherElementsOp::getFlops() { return 0; }

LogicalResult ScatterElementsOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &types) {
  FailureOr<RankedTensorType> input = getRanked(loc, adaptor.getInput(), "input");
  FailureOr<RankedTensorType> indices =
      getRanked(loc, adaptor.getIndices(), "indices");
  if (failed(input) || failed(indices))
    return failure();
  if (input->getRank() != indices->getRank())
    return emitOptionalError(loc, "input and indices must have the same rank, "
                                  "got ",
                             input->getRank(), " and ", indices->getRank());
  if (int64_t axis = adaptor.getAxis(); axis < 0 || axis >= input->getRank())
    return emitOptionalError(loc, "axis ", axis,
                             " is out of range for rank ", input->getRank());
  if (failed(expectShape(loc, adaptor.getUpdates(), "updates",
                         indices->getShape(), input->getElementType())))
    return failure();
  types.push_back(*input);
  return success();
}

int64_t ScatterElementsOp::getFlops() {
  return getReduction() == ScatterReduction::None
             ? 0
             : detail::numElements(getUpdates().getType());
}

LogicalResult TopKOp::inferReturnTypes(MLIRContext *ctx,
                                       std::optional<Location> loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &types) {
  FailureOr<RankedTensorType> input = getRanked(loc, adaptor.getInput(), "input");
  if (failed(input))
    return failure();
  int64_t axis = adaptor.getAxis(), k = adaptor.getK();
  if (axis < 0 || axis >= input->getRank())
    return emitOptionalError(loc, "axis ", axis, " is out of range for rank ",
                             input->getRank());
  int64_t extent = input->getDimSize(axis);
  if (k < 0 || (!ShapedType::isDynamic(extent) && k > extent))
    return emitOptionalError(loc, "k = ", k, " is out of range for dimension ",
                             axis, " (size ", extent, ")");
  SmallVector<int64_t> shape(input->getShape());
  shape[axis] = k;
  types.push_back(RankedTensorType::get(shape, input->getElementType()));
  types.push_back(RankedTensorType::get(shape, IntegerType::get(ctx, 64)));
  return success();
}

int64_t TopKOp::getFlops() {
  return detail::numElements(getInput().getType());
}

LogicalResult OneHotOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  FailureOr<RankedTensorType> indices =
      getRanked(loc, adaptor.getIndices(), "indices");
  FailureOr<RankedTensorType> values =
      getRanked(loc, adaptor.getValues(), "values");
  if (failed(indices) || failed(values) ||
      failed(expectShape(loc, adaptor.getValues(), "values", {2}, Type())))
    return failure();
  int64_t axis = adaptor.getAxis(), depth = adaptor.getDepth();
  if (axis < 0 || axis > indices->getRank())
    return emitOptionalError(loc, "axis ", axis, " is out of range for rank ",
                             indices->getRank() + 1);
  if (depth <= 0)
    return emitOptionalError(loc, "depth must be positive, got ", depth);
  SmallVector<int64_t> shape(indices->getShape());
  shape.insert(shape.begin() + axis, depth);
  types.push_back(RankedTensorType::get(shape, values->getElementType()));
  return success();
}

int64_t OneHotOp::getFlops() { return 0; }

LogicalResult CumSumOp::verify() {
  return detail::verifyAxis(*this, getAxis(), getInput().getType().getRank());
}

LogicalResult TriluOp::verify() {
  if (getInput().getType().getRank() < 2)
    return emitOpError() << "input must have rank 2 or more, got "
                         << getInput().getType().getRank();
  return success();
}

int64_t TriluOp::getFlops() { return 0; }

LogicalResult DropoutOp::inferReturnTypes(MLIRContext *ctx,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  FailureOr<RankedTensorType> input = getRanked(loc, adaptor.getInput(), "input");
  if (failed(input))
    return failure();
  types.push_back(*input);
  types.push_back(RankedTensorType::get(input->getShape(),
                                        IntegerType::get(ctx, 1)));
  return success();
}

LogicalResult DropoutOp::verify() {
  double ratio = getRatio().convertToDouble();
  if (!(ratio >= 0.0 && ratio < 1.0))
    return emitOpError() << "ratio must be in [0, 1), got " << ratio;
  if (bool(getWholeShape()) != bool(getIndexBase()))
    return emitOpError("needs both whole_shape and index_base, or neither");
  if (auto whole = getWholeShape()) {
    ArrayRef<int64_t> shape = getInput().getType().getShape();
    if (whole->size() != shape.size())
      return emitOpError() << "whole_shape has " << whole->size()
                           << " dimensions but the input has " << shape.size();
    for (auto [d, w] : llvm::enumerate(*whole))
      if (w < shape[d])
        return emitOpError() << "whole_shape dimension " << d << " (" << w
                             << ") is smaller than the block's ("
                             << shape[d] << ")";
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Recurrent layers
//===----------------------------------------------------------------------===//

/// Shared shape checks of LSTM (`gates` = 4, with a cell state) and GRU (3).
static LogicalResult inferRecurrent(std::optional<Location> loc, Value input,
                                    Value w, Value r, Value b, Value initialH,
                                    Value initialC, int64_t hidden,
                                    RnnDirection direction, int64_t gates,
                                    unsigned numResults,
                                    SmallVectorImpl<Type> &types) {
  FailureOr<RankedTensorType> x = getRanked(loc, input, "input");
  if (failed(x))
    return failure();
  if (x->getRank() != 3)
    return emitOptionalError(loc, "input must be [seq, batch, features], got ",
                             *x);
  if (hidden <= 0)
    return emitOptionalError(loc, "hidden_size must be positive, got ", hidden);
  int64_t dirs = direction == RnnDirection::Bidirectional ? 2 : 1;
  int64_t seq = x->getDimSize(0), batch = x->getDimSize(1),
          features = x->getDimSize(2);
  Type element = x->getElementType();
  if (failed(expectShape(loc, w, "w", {dirs, gates * hidden, features},
                         element)) ||
      failed(expectShape(loc, r, "r", {dirs, gates * hidden, hidden}, element)) ||
      (b && failed(expectShape(loc, b, "b", {dirs, 2 * gates * hidden},
                               element))) ||
      (initialH && failed(expectShape(loc, initialH, "initial_h",
                                      {dirs, batch, hidden}, element))) ||
      (initialC && failed(expectShape(loc, initialC, "initial_c",
                                      {dirs, batch, hidden}, element))))
    return failure();
  types.push_back(RankedTensorType::get({seq, dirs, batch, hidden}, element));
  auto state = RankedTensorType::get({dirs, batch, hidden}, element);
  for (unsigned i = 1; i < numResults; ++i)
    types.push_back(state);
  return success();
}

/// FLOPs of a recurrent layer: per step and direction, the input and recurrent
/// products (2 * batch * gates*H * (in + H)) plus about `pointwise` ops per
/// hidden unit for biases, activations and the state update.
static int64_t recurrentFlops(Value input, Value r, int64_t pointwise) {
  auto x = cast<RankedTensorType>(input.getType());
  auto rType = cast<RankedTensorType>(r.getType());
  if (!x.hasStaticShape() || !rType.hasStaticShape())
    return 0;
  int64_t seq = x.getDimSize(0), batch = x.getDimSize(1),
          features = x.getDimSize(2);
  int64_t dirs = rType.getDimSize(0), gateRows = rType.getDimSize(1),
          hidden = rType.getDimSize(2);
  return seq * dirs * batch *
         (2 * gateRows * (features + hidden) + pointwise * hidden);
}

LogicalResult LstmOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &types) {
  return inferRecurrent(loc, adaptor.getInput(), adaptor.getW(),
                        adaptor.getR(), adaptor.getB(), adaptor.getInitialH(),
                        adaptor.getInitialC(), adaptor.getHiddenSize(),
                        adaptor.getDirection(), 4, 3, types);
}

int64_t LstmOp::getFlops() { return recurrentFlops(getInput(), getR(), 17); }

LogicalResult GruOp::inferReturnTypes(MLIRContext *,
                                      std::optional<Location> loc,
                                      Adaptor adaptor,
                                      SmallVectorImpl<Type> &types) {
  return inferRecurrent(loc, adaptor.getInput(), adaptor.getW(),
                        adaptor.getR(), adaptor.getB(), adaptor.getInitialH(),
                        Value(), adaptor.getHiddenSize(),
                        adaptor.getDirection(), 3, 2, types);
}

int64_t GruOp::getFlops() { return recurrentFlops(getInput(), getR(), 15); }

//===----------------------------------------------------------------------===//
// Mixture of experts
//===----------------------------------------------------------------------===//

LogicalResult MoeOp::inferReturnTypes(MLIRContext *, std::optional<Location>,
                                      Adaptor adaptor,
                                      SmallVectorImpl<Type> &types) {
  types.push_back(adaptor.getInput().getType());
  return success();
}

LogicalResult MoeOp::verify() {
  RankedTensorType x = getInput().getType(), logits = getRouterLogits().getType();
  if (x.getRank() != 2 || logits.getRank() != 2)
    return emitOpError("needs input [tokens, model] and router_logits "
                       "[tokens, experts]; got ")
           << x << " and " << logits;
  if (!x.hasStaticShape() || !logits.hasStaticShape())
    return emitOpError("needs static shapes");
  int64_t n = x.getDimSize(0), d = x.getDimSize(1), e = logits.getDimSize(1);
  if (logits.getDimSize(0) != n)
    return emitOpError("router_logits has ")
           << logits.getDimSize(0) << " rows for " << n << " tokens";
  if (getResult().getType() != x)
    return emitOpError("result type ")
           << getResult().getType() << " differs from the input's " << x;
  int64_t h = getFc1Weight().getType().getRank() == 3
                  ? getFc1Weight().getType().getDimSize(1)
                  : -1;
  auto expect = [&](Value v, StringRef name,
                    ArrayRef<int64_t> shape) -> LogicalResult {
    if (!v)
      return success();
    auto type = cast<RankedTensorType>(v.getType());
    if (type.getShape() != shape || type.getElementType() != x.getElementType())
      return emitOpError() << name << " must be "
                           << RankedTensorType::get(shape, x.getElementType())
                           << ", got " << type;
    return success();
  };
  if (failed(expect(getFc1Weight(), "fc1_weight [experts, hidden, model]",
                    {e, h, d})) ||
      failed(expect(getFc2Weight(), "fc2_weight [experts, model, hidden]",
                    {e, d, h})) ||
      failed(expect(getFc1Bias(), "fc1_bias", {e, h})) ||
      failed(expect(getFc2Bias(), "fc2_bias", {e, d})) ||
      failed(expect(getFc3Weight(), "fc3_weight", {e, h, d})) ||
      failed(expect(getFc3Bias(), "fc3_bias", {e, h})))
    return failure();
  if (getFc3Bias() && !getFc3Weight())
    return emitOpError("has fc3_bias without fc3_weight");
  if (getK() < 1 || (int64_t)getK() > e)
    return emitOpError("k = ") << getK() << " must be between 1 and the "
                               << e << " experts";
  double c = getCapacityFactorValue();
  if (getRouting() == MoeRouting::TopK) {
    if (c != 0)
      return emitOpError("top_k routing keeps every token; a capacity factor "
                         "needs token_choice or expert_choice routing");
  } else if (!(c > 0)) {
    // `%g`-style, as the flag was written ("0", not "0.000000e+00").
    std::ostringstream factor;
    factor << c;
    return emitOpError("capacity factor ")
           << factor.str() << " must be positive for "
           << stringifyMoeRouting(getRouting()) << " routing";
  }
  if (!(getAuxLossValue() >= 0) || !(getZLossValue() >= 0))
    return emitOpError("loss coefficients must be non-negative");
  int64_t groups = getGroups();
  if (groups < 1 || n % groups != 0)
    return emitOpError("groups = ")
           << groups << " must be positive and divide the " << n << " tokens";
  if (groups > 1 && getRouting() == MoeRouting::TopK)
    return emitOpError("top_k routing keeps every token; routing groups "
                       "need token_choice or expert_choice routing");
  if (getAuxLossValue() > 0 && getRouting() == MoeRouting::ExpertChoice)
    return emitOpError("expert_choice routing balances load by construction "
                       "and takes no load-balancing loss");
  return success();
}

int64_t MoeOp::getCapacity() {
  int64_t n = getNumTokens() / std::max<int64_t>(1, getGroups()),
          e = getNumExperts();
  double c = getCapacityFactorValue();
  switch (getRouting()) {
  case MoeRouting::TopK:
    return n;
  case MoeRouting::TokenChoice:
    return std::clamp<int64_t>(
        (int64_t)std::ceil(c * (double)getK() * (double)n / (double)e), 1, n);
  case MoeRouting::ExpertChoice:
    return std::clamp<int64_t>((int64_t)std::ceil(c * (double)n / (double)e),
                               1, n);
  }
  llvm_unreachable("routing");
}

int64_t MoeOp::getFlops() {
  int64_t n = getNumTokens(), e = getNumExperts(), h = getHiddenSize(),
          d = getInput().getType().getDimSize(1);
  int64_t projections = getFc3Weight() ? 3 : 2;
  // Rows the experts run: every token for top_k (the dense form), else the
  // capacity slots, which one-hot products dispatch and combine.
  int64_t rows = e * getCapacity() *
                 (getRouting() == MoeRouting::TopK ? 1 : getGroups());
  // One-hot products over each group's tokens.
  int64_t moved = getRouting() == MoeRouting::TopK
                      ? 0
                      : 2 * 2 * (n / std::max<int64_t>(1, getGroups())) *
                            rows * d;
  return 6 * n * e + rows * (2 * projections * d * h + 4 * h) + moved;
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

/// Shared checks of the classification losses: `scores` [N, C, d...],
/// `labels` [N, d...], `weight` [C]. Pushes the loss type.
static LogicalResult inferClassLoss(std::optional<Location> loc, Value scores,
                                    Value labels, Value weight,
                                    LossReduction reduction,
                                    SmallVectorImpl<Type> &types) {
  FailureOr<RankedTensorType> s = getRanked(loc, scores, "scores");
  FailureOr<RankedTensorType> l = getRanked(loc, labels, "labels");
  if (failed(s) || failed(l))
    return failure();
  if (s->getRank() < 2)
    return emitOptionalError(loc, "scores must be [N, C, ...], got ", *s);
  SmallVector<int64_t> labelShape = {s->getDimSize(0)};
  llvm::append_range(labelShape, s->getShape().drop_front(2));
  if (failed(expectShape(loc, labels, "labels", labelShape, Type())) ||
      (weight && failed(expectShape(loc, weight, "weight", {s->getDimSize(1)},
                                    s->getElementType()))))
    return failure();
  if (reduction == LossReduction::None)
    types.push_back(RankedTensorType::get(labelShape, s->getElementType()));
  else
    types.push_back(RankedTensorType::get({}, s->getElementType()));
  return success();
}

LogicalResult SoftmaxCrossEntropyOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &types) {
  if (failed(inferClassLoss(loc, adaptor.getScores(), adaptor.getLabels(),
                            adaptor.getWeight(), adaptor.getReduction(),
                            types)))
    return failure();
  types.push_back(adaptor.getScores().getType());
  return success();
}

int64_t SoftmaxCrossEntropyOp::getFlops() {
  return 6 * detail::numElements(getScores().getType());
}

LogicalResult NllLossOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  return inferClassLoss(loc, adaptor.getInput(), adaptor.getTarget(),
                        adaptor.getWeight(), adaptor.getReduction(), types);
}

int64_t NllLossOp::getFlops() {
  return 2 * detail::numElements(getTarget().getType());
}

//===----------------------------------------------------------------------===//
// Sharding and collectives
//===----------------------------------------------------------------------===//

/// Resolves `mesh` from `op` and checks `axes` against it; returns the mesh
/// and the product of the axes' sizes (the group size).
static FailureOr<std::pair<MeshAttr, int64_t>>
resolveMesh(Operation *op, SymbolTableCollection &symbols,
            FlatSymbolRefAttr meshRef, ArrayAttr axes) {
  auto meshOp = symbols.lookupNearestSymbolFrom<MeshOp>(op, meshRef);
  if (!meshOp)
    return op->emitOpError() << "refers to " << meshRef
                             << ", which is not a loom.mesh";
  MeshAttr mesh = meshOp.getMesh();
  int64_t group = 1;
  if (!axes)
    return std::make_pair(mesh, group);
  if (axes.empty())
    return op->emitOpError() << "must name at least one mesh axis";
  llvm::StringSet<> seen;
  for (Attribute axis : axes) {
    StringRef name = cast<StringAttr>(axis).getValue();
    std::optional<int64_t> size = mesh.getAxisSize(name);
    if (!size)
      return op->emitOpError() << "mesh " << meshRef << " has no axis \""
                               << name << "\"";
    if (!seen.insert(name).second)
      return op->emitOpError() << "mesh axis \"" << name
                               << "\" is named more than once";
    group *= *size;
  }
  return std::make_pair(mesh, group);
}

LogicalResult ShardOp::verifySymbolUses(SymbolTableCollection &symbols) {
  FailureOr<std::pair<MeshAttr, int64_t>> mesh = resolveMesh(
      *this, symbols, getSharding().getMesh(), /*axes=*/nullptr);
  if (failed(mesh))
    return failure();
  return getSharding().verifyFor(getInput().getType(), mesh->first,
                                 [&] { return emitOpError(); });
}

int64_t ShardOp::getFlops() { return 0; }
int64_t ShardOp::getBytesRead() { return 0; }
int64_t ShardOp::getBytesWritten() { return 0; }

int64_t OptimizationBarrierOp::getFlops() { return 0; }
int64_t OptimizationBarrierOp::getBytesRead() { return 0; }
int64_t OptimizationBarrierOp::getBytesWritten() { return 0; }

LogicalResult AllReduceOp::verifySymbolUses(SymbolTableCollection &symbols) {
  return resolveMesh(*this, symbols, getMeshAttr(), getMeshAxes());
}

/// Checks that `result` is `input` with dimension `dim` scaled: multiplied by
/// `group` when `grow`, else divided by it (which must divide evenly).
static LogicalResult verifyScaledDim(Operation *op, RankedTensorType input,
                                     RankedTensorType result, int64_t dim,
                                     int64_t group, bool grow,
                                     StringRef dimName) {
  if (dim < 0 || dim >= input.getRank())
    return op->emitOpError() << dimName << " " << dim
                             << " is out of range for rank " << input.getRank();
  if (input.getElementType() != result.getElementType() ||
      input.getRank() != result.getRank())
    return op->emitOpError() << "result " << result
                             << " must have the input's rank and element type";
  SmallVector<int64_t> expected(input.getShape());
  int64_t extent = expected[dim];
  if (!ShapedType::isDynamic(extent)) {
    if (!grow && extent % group != 0)
      return op->emitOpError()
             << "group of " << group << " devices does not divide " << dimName
             << " " << dim << " (size " << extent << ")";
    expected[dim] = grow ? extent * group : extent / group;
  }
  for (int64_t d = 0; d < input.getRank(); ++d)
    if (!extentsAgree(expected[d], result.getDimSize(d)))
      return op->emitOpError() << "expected result shape "
                               << shapeString(expected) << ", got "
                               << shapeString(result.getShape());
  return success();
}

LogicalResult AllGatherOp::verifySymbolUses(SymbolTableCollection &symbols) {
  auto mesh = resolveMesh(*this, symbols, getMeshAttr(), getMeshAxes());
  if (failed(mesh))
    return failure();
  return verifyScaledDim(*this, getInput().getType(), getType(), getGatherDim(),
                         mesh->second, /*grow=*/true, "gather_dim");
}

LogicalResult
ReduceScatterOp::verifySymbolUses(SymbolTableCollection &symbols) {
  auto mesh = resolveMesh(*this, symbols, getMeshAttr(), getMeshAxes());
  if (failed(mesh))
    return failure();
  return verifyScaledDim(*this, getInput().getType(), getType(),
                         getScatterDim(), mesh->second, /*grow=*/false,
                         "scatter_dim");
}

LogicalResult
AllReduceStartOp::verifySymbolUses(SymbolTableCollection &symbols) {
  return resolveMesh(*this, symbols, getMeshAttr(), getMeshAxes());
}

LogicalResult AllReduceStartOp::verify() {
  if (!getResult().hasOneUse() || !isa<WaitOp>(*getResult().getUsers().begin()))
    return emitOpError("result must be used by exactly one loom.wait");
  return success();
}

LogicalResult WaitOp::verify() {
  if (!getInput().getDefiningOp<AllReduceStartOp>())
    return emitOpError("waits for a value that no loom.all_reduce_start "
                       "produces");
  return success();
}

LogicalResult
LocalBlockOp::verifySymbolUses(SymbolTableCollection &symbols) {
  auto mesh = resolveMesh(*this, symbols, getMeshAttr(), getMeshAxes());
  if (failed(mesh))
    return failure();
  return verifyScaledDim(*this, getInput().getType(), getType(), getDim(),
                         mesh->second, /*grow=*/false, "dim");
}

LogicalResult
BlockIndexOp::verifySymbolUses(SymbolTableCollection &symbols) {
  return resolveMesh(*this, symbols, getMeshAttr(), getMeshAxes());
}

LogicalResult AllToAllOp::verifySymbolUses(SymbolTableCollection &symbols) {
  auto mesh = resolveMesh(*this, symbols, getMeshAttr(), getMeshAxes());
  if (failed(mesh))
    return failure();
  RankedTensorType input = getInput().getType(), result = getType();
  int64_t splitDim = getSplitDim(), concatDim = getConcatDim();
  int64_t rank = input.getRank(), group = mesh->second;
  if (splitDim < 0 || splitDim >= rank || concatDim < 0 || concatDim >= rank)
    return emitOpError() << "split_dim " << splitDim << " and concat_dim "
                         << concatDim << " must be in [0, " << rank << ")";
  if (input.getElementType() != result.getElementType() ||
      rank != result.getRank())
    return emitOpError() << "result " << result
                         << " must have the input's rank and element type";
  // Each device splits dimension split_dim into `group` pieces, sends piece
  // i to device i and concatenates what it receives along concat_dim.
  SmallVector<int64_t> expected(input.getShape());
  if (!ShapedType::isDynamic(expected[splitDim])) {
    if (expected[splitDim] % group != 0)
      return emitOpError() << "group of " << group
                           << " devices does not divide split_dim "
                           << splitDim << " (size " << expected[splitDim]
                           << ")";
    expected[splitDim] /= group;
  }
  if (!ShapedType::isDynamic(expected[concatDim]))
    expected[concatDim] *= group;
  for (int64_t d = 0; d < rank; ++d)
    if (!extentsAgree(expected[d], result.getDimSize(d)))
      return emitOpError() << "expected result shape "
                           << shapeString(expected) << ", got "
                           << shapeString(result.getShape());
  return success();
}

/// Point-to-point ops name exactly one axis and a non-zero offset along it.
static LogicalResult verifyPeer(Operation *op, SymbolTableCollection &symbols,
                                FlatSymbolRefAttr meshRef, ArrayAttr axes,
                                int64_t offset) {
  auto mesh = resolveMesh(op, symbols, meshRef, axes);
  if (failed(mesh))
    return failure();
  if (axes.size() != 1)
    return op->emitOpError() << "must name exactly one mesh axis, got "
                             << axes.size();
  if (offset == 0 || std::abs(offset) >= mesh->second)
    return op->emitOpError() << "offset " << offset
                             << " must be non-zero and smaller in magnitude "
                                "than the axis size "
                             << mesh->second;
  return success();
}

LogicalResult SendOp::verifySymbolUses(SymbolTableCollection &symbols) {
  return verifyPeer(*this, symbols, getMeshAttr(), getMeshAxes(), getOffset());
}

LogicalResult RecvOp::verifySymbolUses(SymbolTableCollection &symbols) {
  return verifyPeer(*this, symbols, getMeshAttr(), getMeshAxes(), getOffset());
}

int64_t SendOp::getFlops() { return 0; }
int64_t PipelineMarkOp::getFlops() { return 0; }
int64_t RecvOp::getFlops() { return 0; }

#define GET_OP_CLASSES
#include "dialects/Loom/LoomOps.cpp.inc"
