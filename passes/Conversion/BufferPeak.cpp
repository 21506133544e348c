//===- BufferPeak.cpp - the temporaries' peak, from bufferized code -------===//
//
// The compiler's prediction of how much memory a call of an entry point
// asks the runtime's allocator for at most: a simulation of the allocations
// and deallocations of the bufferized code in program order. See the pass
// description in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialects/Loom/LoomDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/Interfaces/DataLayoutInterfaces.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringMap.h"

namespace mlir::loom {
#define GEN_PASS_DEF_LOOMBUFFERPEAKPASS
#include "passes/Conversion/Passes.h.inc"
} // namespace mlir::loom

using namespace mlir;
using mlir::loom::onnxNodeOf;

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

/// The ONNX node of the op that first uses a buffer after its allocation
/// (the op computing into it): allocations themselves often carry the
/// location of a `tensor.empty` that CSE shared among many layers.
StringRef writerOf(memref::AllocOp alloc) {
  for (Operation *op = alloc->getNextNode(); op; op = op->getNextNode()) {
    bool uses = false;
    op->walk([&](Operation *inner) {
      uses |= llvm::is_contained(inner->getOperands(), alloc.getResult());
    });
    if (!uses)
      continue;
    if (StringRef node = onnxNodeOf(op->getLoc()); !node.empty())
      return node;
    break;
  }
  return onnxNodeOf(alloc->getLoc());
}

class Simulator {
public:
  explicit Simulator(ModuleOp module) : module(module), layout(module) {}

  /// A buffer alive at a function's peak: its bytes and what allocated it
  /// (the ONNX node, or the function called).
  using Held = std::pair<int64_t, std::string>;

  /// The most bytes `func`'s allocations (and those of what it calls) hold
  /// at once, and what it leaves allocated (returned buffers). With
  /// `atPeak`, also the buffers alive at that point.
  std::pair<int64_t, int64_t> peakOf(func::FuncOp func,
                                     std::vector<Held> *atPeak = nullptr) {
    if (!atPeak)
      if (auto it = memo.find(func.getSymName()); it != memo.end())
        return it->second;
    memo[func.getSymName()] = {0, 0}; // recursion: count nothing twice
    int64_t live = 0, peak = 0;
    DenseMap<Value, int64_t> sizes;
    // What holds memory now, in allocation order (for `atPeak`).
    llvm::MapVector<Operation *, Held> holders;
    auto snapshot = [&] {
      if (!atPeak)
        return;
      atPeak->clear();
      for (auto &[op, held] : holders)
        atPeak->push_back(held);
    };
    func.walk<WalkOrder::PreOrder>([&](Operation *op) {
      if (auto alloc = dyn_cast<memref::AllocOp>(op)) {
        int64_t bytes = requestedBytes(alloc, layout);
        sizes[alloc.getResult()] = bytes;
        live += bytes;
        if (atPeak)
          holders[op] = {bytes, writerOf(alloc).str()};
        if (live > peak) {
          peak = live;
          snapshot();
        }
      } else if (auto dealloc = dyn_cast<memref::DeallocOp>(op)) {
        Value memref = dealloc.getMemref();
        while (Operation *def = memref.getDefiningOp()) {
          if (!isa<memref::CastOp, memref::ReinterpretCastOp,
                   memref::SubViewOp>(def))
            break;
          memref = def->getOperand(0);
        }
        live -= sizes.lookup(memref);
        if (atPeak)
          holders.erase(memref.getDefiningOp());
      } else if (auto call = dyn_cast<func::CallOp>(op)) {
        auto callee = module.lookupSymbol<func::FuncOp>(call.getCallee());
        if (callee && !callee.isExternal()) {
          auto [calleePeak, calleeLeft] = peakOf(callee);
          if (live + calleePeak > peak) {
            peak = live + calleePeak;
            snapshot();
            if (atPeak)
              atPeak->push_back({calleePeak, "@" + callee.getSymName().str()});
          }
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
    SmallVector<NamedAttribute> peaks, contents;
    for (auto func : module.getOps<func::FuncOp>()) {
      if (!func.isPublic() || func.isExternal())
        continue;
      std::vector<Simulator::Held> atPeak;
      int64_t peak = simulator.peakOf(func, &atPeak).first;
      peaks.push_back(
          b.getNamedAttr(func.getSymName(), b.getI64IntegerAttr(peak)));
      // The largest buffers alive at the peak, by ONNX node, largest first.
      llvm::StringMap<int64_t> byNode;
      for (auto &[bytes, node] : atPeak)
        byNode[node.empty() ? "(no ONNX node)" : node] += bytes;
      std::vector<std::pair<int64_t, std::string>> sorted;
      for (auto &entry : byNode)
        sorted.push_back({entry.getValue(), entry.getKey().str()});
      llvm::stable_sort(sorted, [](auto &x, auto &y) {
        return x.first != y.first ? x.first > y.first : x.second < y.second;
      });
      SmallVector<Attribute> listed;
      for (auto &[bytes, node] : sorted)
        listed.push_back(b.getArrayAttr(
            {b.getI64IntegerAttr(bytes), b.getStringAttr(node)}));
      contents.push_back(
          b.getNamedAttr(func.getSymName(), b.getArrayAttr(listed)));
    }
    module->setAttr("loom.buffer_peak", b.getDictionaryAttr(peaks));
    module->setAttr("loom.buffer_peak_contents",
                    b.getDictionaryAttr(contents));
  }
};

} // namespace
