//===- CostReport.cpp - per-op FLOPs and bytes ----------------------------===//
//
// Prints what the cost interface says about a module: the numbers pipeline
// partitioning, rematerialization and the planner will work from.
//
//===----------------------------------------------------------------------===//

#include "dialects/Loom/LoomOps.h"
#include "passes/Passes.h"

#include "llvm/ADT/MapVector.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir::loom {
#define GEN_PASS_DEF_LOOMCOSTREPORTPASS
#include "passes/Transforms/Passes.h.inc"

namespace {

struct Totals {
  int64_t count = 0, flops = 0, bytesRead = 0, bytesWritten = 0;
  void add(const Totals &other) {
    count += other.count;
    flops += other.flops;
    bytesRead += other.bytesRead;
    bytesWritten += other.bytesWritten;
  }
};

struct LoomCostReportPass
    : impl::LoomCostReportPassBase<LoomCostReportPass> {
  void runOnOperation() override {
    llvm::MapVector<StringRef, Totals> byOp;
    getOperation().walk([&](CostOpInterface op) {
      Totals &t = byOp[op->getName().getStringRef()];
      t.count += 1;
      t.flops += op.getFlops();
      t.bytesRead += op.getBytesRead();
      t.bytesWritten += op.getBytesWritten();
    });
    llvm::raw_ostream &os = llvm::outs();
    os << "loom cost report\n";
    auto row = [&](StringRef name, const Totals &t) {
      os << "  " << llvm::left_justify(name, 28)
         << llvm::format("%7lld %14lld %14lld %14lld\n", (long long)t.count,
                         (long long)t.flops, (long long)t.bytesRead,
                         (long long)t.bytesWritten);
    };
    os << "  " << llvm::left_justify("op", 28)
       << llvm::format("%7s %14s %14s %14s\n", "count", "flops", "bytes read",
                       "bytes written");
    Totals total;
    for (auto &[name, t] : byOp) {
      row(name, t);
      total.add(t);
    }
    row("total", total);
    os.flush();
    markAllAnalysesPreserved();
  }
};

} // namespace
} // namespace mlir::loom
