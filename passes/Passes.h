//===- Passes.h - Loom's passes ---------------------------------*- C++ -*-===//
//
// Declarations and registration of Loom's passes, generated from the
// Passes.td of each group.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_PASSES_PASSES_H
#define LOOM_PASSES_PASSES_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

#include <memory>

namespace mlir::loom {

#define GEN_PASS_DECL
#include "passes/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Transforms/Passes.h.inc"

#define GEN_PASS_DECL
#include "passes/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Conversion/Passes.h.inc"

} // namespace mlir::loom

#endif // LOOM_PASSES_PASSES_H
