//===- ShardingRule.h - how an op's dimensions relate -----------*- C++ -*-===//
//
// The sharding rule of an op, in Shardy's vocabulary: the op's iteration space
// is a list of factors; every operand and result dimension is made of some of
// them (major to minor). A factor that is split over mesh axes splits every
// dimension it appears in the same way, so propagation carries a sharding from
// one value to the others, and partitioning knows which dimensions of each
// operand must be split for the op to run on local pieces.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_DIALECTS_LOOM_SHARDINGRULE_H
#define LOOM_DIALECTS_LOOM_SHARDINGRULE_H

#include "mlir/Support/LLVM.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdint>

namespace mlir::loom {

/// What splitting a factor over devices means for the op.
enum class FactorKind {
  /// Appears in a result: every device computes its own block of it.
  Parallel,
  /// Summed over (a contraction, reduce_sum, a gather's indexed dimension,
  /// whose lookups outside a device's block read zeros): every device
  /// computes a partial sum that an all_reduce completes.
  Reduction,
  /// Cannot be split (softmax's axis, a reshape that mixes dimensions, the
  /// indexed axis of gather_elements): it must be whole on every device.
  Opaque,
};

struct ShardingRule {
  struct Factor {
    int64_t size;
    FactorKind kind;
  };
  /// For each dimension of a value, the factors it is made of, major to
  /// minor. A dimension with no factor (size 1, or broadcast) is never split.
  using ValueFactors = SmallVector<SmallVector<int64_t, 1>>;

  SmallVector<Factor> factors;
  SmallVector<ValueFactors> operands;
  SmallVector<ValueFactors> results;
  /// The results are means, not sums, over the reduction factors: partial
  /// results combine with an average (equal shards make that exact).
  bool meanOverReductions = false;

  int64_t addFactor(int64_t size, FactorKind kind) {
    factors.push_back({size, kind});
    return static_cast<int64_t>(factors.size()) - 1;
  }
};

} // namespace mlir::loom

#endif // LOOM_DIALECTS_LOOM_SHARDINGRULE_H
