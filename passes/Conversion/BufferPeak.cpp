//===- BufferPeak.cpp - the temporaries' peak, from bufferized code -------===//
//
// The compiler's prediction of how much memory a call of an entry point
// asks the runtime's allocator for at most: a simulation of the allocations
// and deallocations of the bufferized code in program order. See the pass
// description in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/Interfaces/DataLayoutInterfaces.h"
#include "llvm/ADT/StringMap.h"

namespace mlir::loom {
#define GEN_PASS_DEF_LOOMBUFFERPEAKPASS
#include "passes/Conversion/Passes.h.inc"
} // namespace mlir::loom

using namespace mlir;

namespace {

/// Bytes `alloc` asks the runtime's allocator for, as memref-to-LLVM lowers
/// it without aligned_alloc: the buffer plus its alignment (the lowering
/// over-allocates to align the pointer by hand). 0 when the shape is
/// dynamic.
int64_t requestedBytes(memref::AllocOp alloc, const DataLayout &layout) {
  MemRefType type = alloc.getType();
  if (!type.hasStaticShape())
    return 0;
  Type element = type.getElementType();
  int64_t elementBytes = layout.getTypeSize(element);
  int64_t bytes = type.getNumElements() * elementBytes;
  if (std::optional<uint64_t> alignment = alloc.getAlignment())
    bytes += *alignment;
  else if (!element.isSignlessIntOrIndexOrFloat())
    bytes += elementBytes;
  return bytes;
}

class Simulator {
public:
  explicit Simulator(ModuleOp module) : module(module), layout(module) {}

  /// The most bytes `func`'s allocations (and those of what it calls) hold
  /// at once, and what it leaves allocated (returned buffers).
  std::pair<int64_t, int64_t> peakOf(func::FuncOp func) {
    if (auto it = memo.find(func.getSymName()); it != memo.end())
      return it->second;
    memo[func.getSymName()] = {0, 0}; // recursion: count nothing twice
    int64_t live = 0, peak = 0;
    DenseMap<Value, int64_t> sizes;
    func.walk<WalkOrder::PreOrder>([&](Operation *op) {
      if (auto alloc = dyn_cast<memref::AllocOp>(op)) {
        int64_t bytes = requestedBytes(alloc, layout);
        sizes[alloc.getResult()] = bytes;
        live += bytes;
        peak = std::max(peak, live);
      } else if (auto dealloc = dyn_cast<memref::DeallocOp>(op)) {
        Value memref = dealloc.getMemref();
        while (Operation *def = memref.getDefiningOp()) {
          if (!isa<memref::CastOp, memref::ReinterpretCastOp,
                   memref::SubViewOp>(def))
            break;
          memref = def->getOperand(0);
        }
        live -= sizes.lookup(memref);
      } else if (auto call = dyn_cast<func::CallOp>(op)) {
        auto callee = module.lookupSymbol<func::FuncOp>(call.getCallee());
        if (callee && !callee.isExternal()) {
          auto [calleePeak, calleeLeft] = peakOf(callee);
          peak = std::max(peak, live + calleePeak);
          live += calleeLeft;
        }
      }
    });
    return memo[func.getSymName()] = {peak, live};
  }

private:
  ModuleOp module;
  DataLayout layout;
  llvm::StringMap<std::pair<int64_t, int64_t>> memo;
};

struct LoomBufferPeakPass
    : loom::impl::LoomBufferPeakPassBase<LoomBufferPeakPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    Simulator simulator(module);
    Builder b(&getContext());
    SmallVector<NamedAttribute> peaks;
    for (auto func : module.getOps<func::FuncOp>())
      if (func.isPublic() && !func.isExternal())
        peaks.push_back(b.getNamedAttr(
            func.getSymName(),
            b.getI64IntegerAttr(simulator.peakOf(func).first)));
    module->setAttr("loom.buffer_peak", b.getDictionaryAttr(peaks));
  }
};

} // namespace
