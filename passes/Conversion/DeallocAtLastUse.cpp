//===- DeallocAtLastUse.cpp - free buffers right after their last use -----===//
//
// Moves each memref.dealloc that ownership-based buffer deallocation put at
// the end of a block to right after the last use of its buffer (or of any
// value that may alias it) in that block. See the pass description in
// Passes.td.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::loom {
#define GEN_PASS_DEF_LOOMDEALLOCATLASTUSEPASS
#include "passes/Conversion/Passes.h.inc"
} // namespace mlir::loom

using namespace mlir;

namespace {

/// The last op of `block` that uses `buffer` or a value that may alias it,
/// or nullptr when some use lies outside `block` (then the dealloc stays).
/// `dealloc` itself does not count.
FailureOr<Operation *> lastUseInBlock(Value buffer, Block *block,
                                      Operation *dealloc) {
  llvm::SetVector<Value> aliases;
  aliases.insert(buffer);
  Operation *last = nullptr;
  for (size_t i = 0; i < aliases.size(); ++i) {
    for (OpOperand &use : aliases[i].getUses()) {
      Operation *user = use.getOwner();
      if (user == dealloc)
        continue;
      Operation *inBlock = block->findAncestorOpInBlock(*user);
      if (!inBlock)
        return failure();
      // Whatever an op reading the buffer returns as a memref may be a view
      // of it (a cast, a reshape, a loop carrying it): its uses count too.
      for (Operation *op = user; op; op = op->getParentOp()) {
        for (Value result : op->getResults())
          if (isa<BaseMemRefType>(result.getType()))
            aliases.insert(result);
        if (op == inBlock)
          break;
      }
      if (!last || last->isBeforeInBlock(inBlock))
        last = inBlock;
    }
  }
  return last;
}

struct LoomDeallocAtLastUsePass
    : loom::impl::LoomDeallocAtLastUsePassBase<LoomDeallocAtLastUsePass> {
  void runOnOperation() override {
    SmallVector<memref::DeallocOp> deallocs;
    getOperation().walk(
        [&](memref::DeallocOp dealloc) { deallocs.push_back(dealloc); });
    for (memref::DeallocOp dealloc : deallocs) {
      Block *block = dealloc->getBlock();
      FailureOr<Operation *> last =
          lastUseInBlock(dealloc.getMemref(), block, dealloc);
      if (failed(last))
        continue;
      if (!*last) {
        // Never used: free it right after it is defined (or at the start).
        if (Operation *def = dealloc.getMemref().getDefiningOp();
            def && def->getBlock() == block)
          dealloc->moveAfter(def);
        continue;
      }
      if ((*last)->isBeforeInBlock(dealloc))
        dealloc->moveAfter(*last);
    }
  }
};

} // namespace
