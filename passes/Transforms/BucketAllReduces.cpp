//===- BucketAllReduces.cpp - fuse small all-reduces into buckets ---------===//
//
// Data parallelism all-reduces every gradient separately; most are small
// (biases, layer norms), and each costs a round trip between the ranks.
// This pass packs all-reduces of the same kind into buckets of up to
// `bucket-bytes` (one open bucket per kind, so that kinds may interleave):
// the inputs are flattened and concatenated, reduced with one collective,
// and split back. A bucket is closed (its collective
// emitted right after its last member, where that gradient is produced) as
// soon as something uses one of its results, so the order of everything
// else is unchanged; buckets of the backward pass are therefore issued while
// later gradients are still being computed, in the same order on every rank.
//
// Each all-reduce is first moved up to right after the op that computes its
// operand, so buckets follow the order gradients are produced. With `overlap`
// a bucket becomes `loom.all_reduce_start`, and its `loom.wait` goes right
// before the first use of a result: the collective runs on the runtime's
// collective thread while the backward pass goes on.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/Transforms/Sharding.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::loom {
#define GEN_PASS_DEF_LOOMBUCKETALLREDUCESPASS
#include "passes/Transforms/Passes.h.inc"

namespace {

/// What all-reduces must share to be fused.
struct Key {
  Attribute mesh, axes, reduction;
  Type element;
  bool operator==(const Key &other) const {
    return mesh == other.mesh && axes == other.axes &&
           reduction == other.reduction && element == other.element;
  }
};

Key keyOf(AllReduceOp op) {
  return {op.getMeshAttr(), op.getMeshAxes(), op.getReductionAttr(),
          op.getInput().getType().getElementType()};
}

class Bucketer {
public:
  Bucketer(int64_t capacity, bool overlap)
      : capacity(capacity), overlap(overlap) {}

  void run(Block &block) {
    sinkThroughReshapes(block);
    hoistToOperands(block);
    for (Operation &op : llvm::make_early_inc_range(block)) {
      // A bucket closes where a member's result is first used.
      for (Bucket &bucket : buckets)
        if (llvm::any_of(op.getOperands(), [&](Value v) {
              Operation *def = v.getDefiningOp();
              return def && llvm::is_contained(bucket.members, def);
            }))
          flush(bucket);
      auto reduce = dyn_cast<AllReduceOp>(&op);
      if (!reduce || !reduce.getInput().getType().hasStaticShape())
        continue;
      // One open bucket per kind: gradients of different element types (a
      // bf16 product's weight and its fp32 bias) interleave without
      // closing each other's bucket.
      Key key = keyOf(reduce);
      Bucket *bucket = llvm::find_if(
          buckets, [&](const Bucket &b) { return b.key == key; });
      if (bucket == buckets.end()) {
        buckets.push_back({key, {}, 0});
        bucket = &buckets.back();
      }
      bucket->members.push_back(reduce);
      bucket->bytes += detail::tensorBytes(reduce.getInput().getType());
      if (bucket->bytes >= capacity)
        flush(*bucket);
    }
    for (Bucket &bucket : buckets)
      flush(bucket);
  }

private:
  /// Moves every all-reduce of a computed value right after the op
  /// computing it, the earliest point it can be issued.
  static void hoistToOperands(Block &block) {
    for (auto reduce : llvm::make_early_inc_range(block.getOps<AllReduceOp>()))
      if (Operation *def = reduce.getInput().getDefiningOp())
        if (def->getBlock() == &block)
          reduce->moveAfter(def);
  }

  /// `reshape(all_reduce(x))` is `all_reduce(reshape(x))`, and likewise for
  /// transposes: moving the collective after the reshape that follows a bias
  /// gradient, or the transpose that follows a weight gradient, keeps them
  /// from closing the bucket.
  static void sinkThroughReshapes(Block &block) {
    for (bool changed = true; changed;) {
      changed = false;
      for (auto reduce : llvm::make_early_inc_range(block.getOps<AllReduceOp>())) {
        if (!reduce->hasOneUse())
          continue;
        Operation *user = *reduce->getUsers().begin();
        if (!isa<ReshapeOp, TransposeOp>(user))
          continue;
        OpBuilder b(user);
        Operation *moved = b.clone(*user);
        moved->setOperand(0, reduce.getInput());
        auto after = AllReduceOp::create(b, reduce.getLoc(),
                                         moved->getResult(0),
                                         reduce.getMeshAttr(),
                                         reduce.getMeshAxes(),
                                         reduce.getReductionAttr());
        user->getResult(0).replaceAllUsesWith(after.getResult());
        user->erase();
        reduce.erase();
        changed = true;
      }
    }
  }

  struct Bucket {
    Key key;
    SmallVector<AllReduceOp> members;
    int64_t bytes = 0;
  };

  void flush(Bucket &bucket) {
    if (bucket.members.size() > 1 || (overlap && !bucket.members.empty()))
      emit(bucket.members);
    bucket.members.clear();
    bucket.bytes = 0;
  }

  /// One collective for every member, right after the last one.
  void emit(SmallVector<AllReduceOp> &members) {
    AllReduceOp last = members.back();
    OpBuilder b(last);
    Location loc = b.getFusedLoc(llvm::map_to_vector(
        members, [](AllReduceOp op) { return op.getLoc(); }));
    SmallVector<Value> flat;
    SmallVector<int64_t> sizes;
    int64_t total = 0;
    for (AllReduceOp op : members) {
      RankedTensorType type = op.getInput().getType();
      int64_t n = type.getNumElements();
      flat.push_back(ReshapeOp::create(b, loc, type.clone({n}), op.getInput()));
      sizes.push_back(n);
      total += n;
    }
    auto element = cast<RankedTensorType>(flat.front().getType())
                       .getElementType();
    Value joined = ConcatOp::create(
        b, loc, RankedTensorType::get({total}, element), flat, 0);
    Value reduced;
    if (overlap) {
      // Started here, awaited before the first use of any member.
      Operation *firstUse = nullptr;
      for (Operation *op = last->getNextNode(); op && !firstUse;
           op = op->getNextNode())
        if (llvm::any_of(op->getOperands(), [&](Value v) {
              return llvm::is_contained(members, v.getDefiningOp());
            }))
          firstUse = op;
      Value started = AllReduceStartOp::create(b, loc, joined,
                                               last.getMeshAttr(),
                                               last.getMeshAxes(),
                                               last.getReductionAttr());
      if (firstUse)
        b.setInsertionPoint(firstUse);
      else
        b.setInsertionPoint(last->getBlock()->getTerminator());
      reduced = WaitOp::create(b, loc, started);
    } else {
      reduced = AllReduceOp::create(b, loc, joined, last.getMeshAttr(),
                                    last.getMeshAxes(),
                                    last.getReductionAttr());
    }
    SmallVector<Type> pieceTypes;
    for (int64_t n : sizes)
      pieceTypes.push_back(RankedTensorType::get({n}, element));
    auto pieces = SplitOp::create(b, loc, TypeRange(pieceTypes), reduced,
                                  b.getI64IntegerAttr(0),
                                  b.getDenseI64ArrayAttr(sizes));
    for (auto [op, piece] : llvm::zip(members, pieces.getResults())) {
      Value shaped = ReshapeOp::create(b, loc, op.getType(), piece);
      op.getResult().replaceAllUsesWith(shaped);
    }
    for (AllReduceOp op : members)
      op.erase();
  }

  int64_t capacity;
  bool overlap;
  SmallVector<Bucket> buckets;
};

struct LoomBucketAllReducesPass
    : impl::LoomBucketAllReducesPassBase<LoomBucketAllReducesPass> {
  using Base::Base;

  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      if (func.isExternal())
        continue;
      for (Block &block : func.getBody()) {
        Bucketer bucketer(bucketBytes, overlap);
        bucketer.run(block);
      }
    }
  }
};

} // namespace
} // namespace mlir::loom
