//===- LoomFolders.cpp - constant folding of loom ops ---------------------===//
//
// Folds ops whose operands are small constants. ONNX exporters compute shapes
// at run time (Shape -> Gather -> Concat -> Reshape); with static shapes those
// chains fold away during import, so every later op sees constant shapes.
//
//===----------------------------------------------------------------------===//

#include "dialects/Loom/LoomOps.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/APSInt.h"

using namespace mlir;
using namespace mlir::loom;

/// Larger constants are left alone: folding is for shape arithmetic, not for
/// computing the model at compile time.
static constexpr int64_t kMaxFoldElements = 1 << 16;

namespace {

/// A constant operand unpacked into element attributes.
struct ConstOperand {
  SmallVector<Attribute> elements;
  SmallVector<int64_t> shape;
};

} // namespace

static std::optional<ConstOperand> unpack(Attribute attr) {
  auto dense = dyn_cast_or_null<DenseElementsAttr>(attr);
  if (!dense || dense.getNumElements() > kMaxFoldElements)
    return std::nullopt;
  ConstOperand c;
  c.elements.assign(dense.value_begin<Attribute>(),
                    dense.value_end<Attribute>());
  c.shape.assign(dense.getType().getShape().begin(),
                 dense.getType().getShape().end());
  return c;
}

static SmallVector<int64_t> stridesOf(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> strides(shape.size(), 1);
  for (int64_t d = (int64_t)shape.size() - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * shape[d + 1];
  return strides;
}

/// Index into `operand` (right-aligned, broadcast) of the result element at
/// multi-index `index`.
static int64_t broadcastIndex(ArrayRef<int64_t> index, ArrayRef<int64_t> shape) {
  SmallVector<int64_t> strides = stridesOf(shape);
  size_t offset = index.size() - shape.size();
  int64_t flat = 0;
  for (size_t d = 0; d < shape.size(); ++d)
    flat += (shape[d] == 1 ? 0 : index[d + offset]) * strides[d];
  return flat;
}

static void unflatten(int64_t flat, ArrayRef<int64_t> shape,
                      SmallVectorImpl<int64_t> &index) {
  index.assign(shape.size(), 0);
  for (int64_t d = (int64_t)shape.size() - 1; d >= 0; --d) {
    index[d] = shape[d] ? flat % shape[d] : 0;
    flat = shape[d] ? flat / shape[d] : 0;
  }
}

/// Applies `fn` elementwise over broadcast constant operands; null when an
/// operand is not a small constant or `fn` declines an element.
static Attribute
foldElementwise(ArrayRef<Attribute> operands, Type resultType,
                function_ref<Attribute(ArrayRef<Attribute>)> fn) {
  auto type = dyn_cast<RankedTensorType>(resultType);
  if (!type || !type.hasStaticShape() ||
      type.getNumElements() > kMaxFoldElements)
    return {};
  SmallVector<ConstOperand> consts;
  for (Attribute operand : operands) {
    std::optional<ConstOperand> c = unpack(operand);
    if (!c)
      return {};
    consts.push_back(std::move(*c));
  }
  SmallVector<Attribute> results;
  SmallVector<int64_t> index;
  SmallVector<Attribute> args(consts.size());
  for (int64_t i = 0, e = type.getNumElements(); i < e; ++i) {
    unflatten(i, type.getShape(), index);
    for (auto [k, c] : llvm::enumerate(consts))
      args[k] = c.elements[broadcastIndex(index, c.shape)];
    Attribute r = fn(args);
    if (!r)
      return {};
    results.push_back(r);
  }
  return DenseElementsAttr::get(type, results);
}

/// Folds an arithmetic binary op on integers (`intFn`) or floats (`floatFn`).
static Attribute
foldArith(ArrayRef<Attribute> operands, Type resultType,
          function_ref<std::optional<APInt>(const APInt &, const APInt &)> intFn,
          function_ref<APFloat(const APFloat &, const APFloat &)> floatFn) {
  Type element = cast<RankedTensorType>(resultType).getElementType();
  return foldElementwise(operands, resultType, [&](ArrayRef<Attribute> a) {
    if (auto x = dyn_cast<IntegerAttr>(a[0])) {
      std::optional<APInt> r =
          intFn(x.getValue(), cast<IntegerAttr>(a[1]).getValue());
      return r ? IntegerAttr::get(element, *r) : Attribute();
    }
    if (auto x = dyn_cast<FloatAttr>(a[0]))
      return Attribute(FloatAttr::get(
          element, floatFn(x.getValue(), cast<FloatAttr>(a[1]).getValue())));
    return Attribute();
  });
}

OpFoldResult AddOp::fold(FoldAdaptor adaptor) {
  return foldArith(
      adaptor.getOperands(), getType(),
      [](const APInt &a, const APInt &b) -> std::optional<APInt> { return a + b; },
      [](const APFloat &a, const APFloat &b) { return a + b; });
}

OpFoldResult SubOp::fold(FoldAdaptor adaptor) {
  return foldArith(
      adaptor.getOperands(), getType(),
      [](const APInt &a, const APInt &b) -> std::optional<APInt> { return a - b; },
      [](const APFloat &a, const APFloat &b) { return a - b; });
}

OpFoldResult MulOp::fold(FoldAdaptor adaptor) {
  return foldArith(
      adaptor.getOperands(), getType(),
      [](const APInt &a, const APInt &b) -> std::optional<APInt> { return a * b; },
      [](const APFloat &a, const APFloat &b) { return a * b; });
}

OpFoldResult DivOp::fold(FoldAdaptor adaptor) {
  return foldArith(
      adaptor.getOperands(), getType(),
      [](const APInt &a, const APInt &b) -> std::optional<APInt> {
        if (b.isZero() || (a.isMinSignedValue() && b.isAllOnes()))
          return std::nullopt;
        return a.sdiv(b);
      },
      [](const APFloat &a, const APFloat &b) { return a / b; });
}

OpFoldResult EqualOp::fold(FoldAdaptor adaptor) {
  Type i1 = IntegerType::get(getContext(), 1);
  return foldElementwise(adaptor.getOperands(), getType(),
                         [&](ArrayRef<Attribute> a) -> Attribute {
                           return IntegerAttr::get(i1, a[0] == a[1]);
                         });
}

OpFoldResult WhereOp::fold(FoldAdaptor adaptor) {
  return foldElementwise(adaptor.getOperands(), getType(),
                         [](ArrayRef<Attribute> a) -> Attribute {
                           return cast<IntegerAttr>(a[0]).getValue().isZero()
                                      ? a[2]
                                      : a[1];
                         });
}

OpFoldResult CastOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType())
    return getInput();
  // A float widened and narrowed back is itself (bf16 -> f32 -> bf16): the
  // casts the precision pass inserts cancel where they meet.
  if (auto inner = getInput().getDefiningOp<CastOp>()) {
    auto from = dyn_cast<FloatType>(inner.getInput().getType().getElementType());
    auto mid = dyn_cast<FloatType>(inner.getType().getElementType());
    if (from && mid && inner.getInput().getType() == getType() &&
        APFloat::isRepresentableBy(from.getFloatSemantics(),
                                   mid.getFloatSemantics()))
      return inner.getInput();
  }
  Type to = getType().getElementType();
  return foldElementwise(
      adaptor.getOperands(), getType(), [&](ArrayRef<Attribute> a) -> Attribute {
        if (auto i = dyn_cast<IntegerAttr>(a[0])) {
          const APInt &v = i.getValue();
          if (to.isInteger(1))
            return IntegerAttr::get(to, !v.isZero());
          if (auto intTo = dyn_cast<IntegerType>(to))
            return IntegerAttr::get(
                to, i.getType().isInteger(1) ? v.zextOrTrunc(intTo.getWidth())
                                             : v.sextOrTrunc(intTo.getWidth()));
          APFloat f(cast<FloatType>(to).getFloatSemantics());
          f.convertFromAPInt(v, /*IsSigned=*/!i.getType().isInteger(1),
                             APFloat::rmNearestTiesToEven);
          return FloatAttr::get(to, f);
        }
        APFloat f = cast<FloatAttr>(a[0]).getValue();
        if (to.isInteger(1))
          return IntegerAttr::get(to, !f.isZero());
        if (auto intTo = dyn_cast<IntegerType>(to)) {
          // NaN and out-of-range values have no defined integer value.
          APSInt result(intTo.getWidth(), /*isUnsigned=*/false);
          bool exact;
          if (f.convertToInteger(result, APFloat::rmTowardZero, &exact) &
              APFloat::opInvalidOp)
            return {};
          return IntegerAttr::get(to, result);
        }
        bool lost;
        f.convert(cast<FloatType>(to).getFloatSemantics(),
                  APFloat::rmNearestTiesToEven, &lost);
        return FloatAttr::get(to, f);
      });
}

OpFoldResult GatherOp::fold(FoldAdaptor adaptor) {
  std::optional<ConstOperand> input = unpack(adaptor.getInput());
  std::optional<ConstOperand> indices = unpack(adaptor.getIndices());
  RankedTensorType type = getType();
  if (!input || !indices || !type.hasStaticShape() ||
      type.getNumElements() > kMaxFoldElements)
    return {};
  int64_t axis = getAxis(), extent = input->shape[axis];
  size_t indexRank = indices->shape.size();
  SmallVector<int64_t> inputStrides = stridesOf(input->shape);
  SmallVector<int64_t> indexStrides = stridesOf(indices->shape);
  SmallVector<Attribute> results;
  SmallVector<int64_t> index;
  for (int64_t i = 0, e = type.getNumElements(); i < e; ++i) {
    unflatten(i, type.getShape(), index);
    int64_t at = 0;
    for (size_t d = 0; d < indexRank; ++d)
      at += index[axis + d] * indexStrides[d];
    int64_t k = cast<IntegerAttr>(indices->elements[at]).getInt();
    if (k < 0)
      k += extent;
    if (k < 0 || k >= extent)
      return {};
    int64_t flat = 0;
    for (int64_t d = 0; d < (int64_t)input->shape.size(); ++d) {
      int64_t coord = d < axis    ? index[d]
                      : d == axis ? k
                                  : index[d - 1 + indexRank];
      flat += coord * inputStrides[d];
    }
    results.push_back(input->elements[flat]);
  }
  return DenseElementsAttr::get(type, results);
}

OpFoldResult ConcatOp::fold(FoldAdaptor adaptor) {
  if (getInputs().size() == 1)
    return getInputs().front();
  RankedTensorType type = getType();
  if (!type.hasStaticShape() || type.getNumElements() > kMaxFoldElements)
    return {};
  SmallVector<ConstOperand> inputs;
  for (Attribute attr : adaptor.getInputs()) {
    std::optional<ConstOperand> c = unpack(attr);
    if (!c)
      return {};
    inputs.push_back(std::move(*c));
  }
  int64_t axis = getAxis();
  SmallVector<Attribute> results;
  SmallVector<int64_t> index;
  for (int64_t i = 0, e = type.getNumElements(); i < e; ++i) {
    unflatten(i, type.getShape(), index);
    int64_t coord = index[axis];
    for (ConstOperand &input : inputs) {
      if (coord < input.shape[axis]) {
        SmallVector<int64_t> local(index);
        local[axis] = coord;
        SmallVector<int64_t> strides = stridesOf(input.shape);
        int64_t flat = 0;
        for (size_t d = 0; d < local.size(); ++d)
          flat += local[d] * strides[d];
        results.push_back(input.elements[flat]);
        break;
      }
      coord -= input.shape[axis];
    }
  }
  return DenseElementsAttr::get(type, results);
}

OpFoldResult SliceOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType() &&
      llvm::all_of(getSteps(), [](int64_t s) { return s == 1; }))
    return getInput();
  std::optional<ConstOperand> input = unpack(adaptor.getInput());
  RankedTensorType type = getType();
  if (!input || !type.hasStaticShape())
    return {};
  SmallVector<int64_t> strides = stridesOf(input->shape);
  SmallVector<Attribute> results;
  SmallVector<int64_t> index;
  for (int64_t i = 0, e = type.getNumElements(); i < e; ++i) {
    unflatten(i, type.getShape(), index);
    int64_t flat = 0;
    for (size_t d = 0; d < index.size(); ++d)
      flat += (getStarts()[d] + index[d] * getSteps()[d]) * strides[d];
    results.push_back(input->elements[flat]);
  }
  return DenseElementsAttr::get(type, results);
}
