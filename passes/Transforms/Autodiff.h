//===- Autodiff.h - reverse-mode autodiff over loom ops ---------*- C++ -*-===//
//
// The reverse pass shared by `loom-build-train-step` and
// `loom-differentiate`: walks the ops between the differentiated values and
// the loss backwards, asking each op's GradientOpInterface for the
// vector-Jacobian product and summing gradients where values fan out.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_PASSES_TRANSFORMS_AUTODIFF_H
#define LOOM_PASSES_TRANSFORMS_AUTODIFF_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/Value.h"

namespace mlir::loom {

/// Emits, at the builder's insertion point (which must follow every op of
/// the block holding `loss`), the gradient of the one-element tensor `loss`
/// with respect to each value of `wrt`. An entry is null where the loss does
/// not depend on that value. Fails, with an error at the op, when an op on
/// the path has no gradient.
FailureOr<SmallVector<Value>> buildGradients(OpBuilder &builder, Value loss,
                                             ArrayRef<Value> wrt);

} // namespace mlir::loom

#endif // LOOM_PASSES_TRANSFORMS_AUTODIFF_H
