//===- ParallelLoops.cpp - parallel loop nests on the runtime's threads ---===//
//
// loom-split-reductions: linalg ops whose outer loops are reductions get an
// outer parallel loop over tiles of a parallel dimension.
//
// loom-outline-parallel-loops: each outermost scf.parallel nest with enough
// work moves into a function `(ctx, begin, end)` that runs part of its first
// dimension, and the nest becomes a call of the runtime's thread pool,
// `loom_rt_parallel_for(fn, ctx, iterations)`. The values the nest uses from
// outside travel through a record on the caller's stack; memrefs are stored
// as the LLVM descriptors they become, so the record's layout is the one
// the LLVM lowering gives them.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/RegionUtils.h"

#include "llvm/ADT/SetVector.h"

namespace mlir::loom {
#define GEN_PASS_DEF_LOOMOUTLINEPARALLELLOOPSPASS
#define GEN_PASS_DEF_LOOMSPLITREDUCTIONSPASS
#include "passes/Conversion/Passes.h.inc"
} // namespace mlir::loom

using namespace mlir;

namespace {

constexpr llvm::StringLiteral kParallelFor = "loom_rt_parallel_for";

/// The static trip count of `lb` to `ub` by `step`, if the three are
/// constants.
std::optional<int64_t> tripCount(Value lb, Value ub, Value step) {
  std::optional<int64_t> l = getConstantIntValue(lb),
                         u = getConstantIntValue(ub),
                         s = getConstantIntValue(step);
  if (!l || !u || !s || *s <= 0)
    return std::nullopt;
  return *u > *l ? (*u - *l + *s - 1) / *s : 0;
}

/// a * b for non-negative counts, saturating at 2^62.
int64_t times(int64_t a, int64_t b) {
  constexpr int64_t kMax = int64_t(1) << 62;
  return a > 0 && b > kMax / a ? kMax : std::min(a * b, kMax);
}

int64_t work(Region &region);

/// Innermost iterations of `op`: its own iterations (a loop whose bounds are
/// not constants counts as 1024) times the most of any of its regions.
int64_t iterations(Operation &op) {
  int64_t trips = 1;
  if (auto loop = dyn_cast<scf::ForOp>(op)) {
    trips =
        tripCount(loop.getLowerBound(), loop.getUpperBound(), loop.getStep())
            .value_or(1024);
  } else if (auto loop = dyn_cast<scf::ParallelOp>(op)) {
    for (auto [lb, ub, step] :
         llvm::zip(loop.getLowerBound(), loop.getUpperBound(), loop.getStep()))
      trips = times(trips, tripCount(lb, ub, step).value_or(1024));
  }
  int64_t inner = 1;
  for (Region &nested : op.getRegions())
    inner = std::max(inner, work(nested));
  return times(trips, inner);
}

/// Innermost iterations of the ops in `region`, summed, saturating.
int64_t work(Region &region) {
  int64_t total = 0;
  for (Block &block : region)
    for (Operation &op : block)
      total = std::min(total + iterations(op), int64_t(1) << 62);
  return total;
}

/// The type in which `value` travels to another thread, or null if it cannot
/// (a tensor, say): index as i64, memrefs as their LLVM descriptors.
Type fieldType(Value value, const LLVMTypeConverter &converter) {
  Type type = value.getType();
  if (type.isIndex())
    return IntegerType::get(type.getContext(), 64);
  Type field = converter.convertType(type);
  return field && LLVM::isCompatibleType(field) ? field : Type();
}

/// Whether `value` is better cloned into the outlined function than passed.
bool isClonable(Value value) {
  Operation *def = value.getDefiningOp();
  return def && (def->hasTrait<OpTrait::ConstantLike>() ||
                 isa<memref::GetGlobalOp>(def));
}

/// The values from outside that the nest reads: the bounds and steps of its
/// dimensions other than the first, that one's lower bound and step, and
/// what its body uses.
llvm::SetVector<Value> capturedBy(scf::ParallelOp loop) {
  llvm::SetVector<Value> used;
  getUsedValuesDefinedAbove(loop.getRegion(), used);
  for (unsigned i = 1, e = loop.getNumLoops(); i < e; ++i)
    used.insert_range(ValueRange{loop.getLowerBound()[i],
                                 loop.getUpperBound()[i], loop.getStep()[i]});
  used.insert_range(ValueRange{loop.getLowerBound()[0], loop.getStep()[0]});
  return used;
}

/// Whether the nest may run on another thread: no calls (the runtime's
/// functions are not all thread-safe), no allocations, and nothing read from
/// outside that cannot travel there.
bool isOutlinable(scf::ParallelOp loop, const LLVMTypeConverter &converter) {
  if (loop.getNumResults() != 0)
    return false;
  for (Value value : capturedBy(loop))
    if (!isClonable(value) && !fieldType(value, converter))
      return false;
  WalkResult result = loop.getRegion().walk([](Operation *op) {
    if (isa<CallOpInterface>(op) || hasEffect<MemoryEffects::Allocate>(op) ||
        hasEffect<MemoryEffects::Free>(op))
      return WalkResult::interrupt();
    return WalkResult::advance();
  });
  return !result.wasInterrupted();
}

/// Tile sizes that split the first parallel dimension of `op` into up to 8
/// tiles, or nothing when the op does not start with a reduction, is too
/// small, or has no parallel dimension that splits well.
std::optional<SmallVector<int64_t>> reductionSplit(linalg::LinalgOp op,
                                                   int64_t minWork) {
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (iterators.empty() || iterators.front() != utils::IteratorType::reduction)
    return std::nullopt;
  int64_t total = 1;
  for (int64_t range : ranges) {
    if (ShapedType::isDynamic(range))
      return std::nullopt;
    total = times(total, range);
  }
  if (total < minWork)
    return std::nullopt;
  auto parallel = llvm::find(iterators, utils::IteratorType::parallel);
  if (parallel == iterators.end())
    return std::nullopt;
  unsigned dim = parallel - iterators.begin();
  int64_t extent = ranges[dim];
  int64_t tile = 0;
  if (dim + 1 == ranges.size()) {
    // The innermost dimension: tiles of a multiple of 16 that divide it.
    for (int64_t parts : {8, 4, 2})
      if (extent % (parts * 16) == 0) {
        tile = extent / parts;
        break;
      }
  } else if (extent >= 2) {
    tile = (extent + 7) / 8;
  }
  if (tile == 0)
    return std::nullopt;
  SmallVector<int64_t> sizes(ranges.size(), 0);
  sizes[dim] = tile;
  return sizes;
}

struct LoomSplitReductionsPass
    : loom::impl::LoomSplitReductionsPassBase<LoomSplitReductionsPass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<std::pair<linalg::LinalgOp, SmallVector<int64_t>>> splits;
    getOperation().walk([&](linalg::LinalgOp op) {
      if (!op.hasPureBufferSemantics())
        return;
      if (std::optional<SmallVector<int64_t>> sizes =
              reductionSplit(op, minWork))
        splits.emplace_back(op, *sizes);
    });
    IRRewriter rewriter(&getContext());
    for (auto &[op, sizes] : splits) {
      rewriter.setInsertionPoint(op);
      linalg::LinalgTilingOptions options;
      options.setTileSizes(sizes).setLoopType(
          linalg::LinalgTilingLoopType::ParallelLoops);
      // An op the tiler declines stays whole: it only runs on one thread.
      if (succeeded(linalg::tileLinalgOp(rewriter, op, options)))
        rewriter.eraseOp(op);
    }
  }
};

struct LoomOutlineParallelLoopsPass
    : loom::impl::LoomOutlineParallelLoopsPassBase<
          LoomOutlineParallelLoopsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    LowerToLLVMOptions options(&getContext());
    LLVMTypeConverter converter(&getContext(), options);
    SmallVector<scf::ParallelOp> nests;
    module.walk<WalkOrder::PreOrder>([&](scf::ParallelOp loop) {
      std::optional<int64_t> trips = tripCount(
          loop.getLowerBound()[0], loop.getUpperBound()[0], loop.getStep()[0]);
      if (!trips || *trips < 2 || iterations(*loop) < minWork ||
          !isOutlinable(loop, converter))
        return WalkResult::advance();
      nests.push_back(loop);
      return WalkResult::skip();
    });
    if (nests.empty())
      return;

    func::FuncOp runtime = declareRuntime(module);
    llvm::StringMap<unsigned> counters;
    for (scf::ParallelOp loop : nests) {
      auto parent = loop->getParentOfType<func::FuncOp>();
      std::string name = (parent.getSymName() + "_parallel" +
                          Twine(counters[parent.getSymName()]++))
                             .str();
      outline(loop, name, runtime, converter);
    }
  }

  /// `loom_rt_parallel_for(fn, ctx, iterations)`, declared once.
  func::FuncOp declareRuntime(ModuleOp module) {
    if (auto existing = module.lookupSymbol<func::FuncOp>(kParallelFor))
      return existing;
    MLIRContext *ctx = module.getContext();
    OpBuilder b(module.getBodyRegion());
    auto ptr = LLVM::LLVMPointerType::get(ctx);
    auto i64 = IntegerType::get(ctx, 64);
    auto body = FunctionType::get(ctx, {ptr, i64, i64}, {});
    auto decl =
        func::FuncOp::create(b, module.getLoc(), kParallelFor,
                             FunctionType::get(ctx, {body, ptr, i64}, {}));
    decl.setPrivate();
    return decl;
  }

  /// Moves `loop` (isOutlinable) into @`name` and calls it through the
  /// runtime.
  void outline(scf::ParallelOp loop, StringRef name, func::FuncOp runtime,
               const LLVMTypeConverter &converter) {
    MLIRContext *ctx = loop.getContext();
    Location loc = loop.getLoc();
    auto ptr = LLVM::LLVMPointerType::get(ctx);
    auto i64 = IntegerType::get(ctx, 64);

    // What the nest reads from outside: passed through the record, or
    // cloned.
    SmallVector<Value> passed, cloned;
    SmallVector<Type> fields;
    for (Value value : capturedBy(loop)) {
      if (isClonable(value)) {
        cloned.push_back(value);
        continue;
      }
      passed.push_back(value);
      fields.push_back(fieldType(value, converter));
    }
    auto record = LLVM::LLVMStructType::getLiteral(ctx, fields);

    // The outlined function: read the record, then run the nest over
    // [begin, end) of its first dimension.
    auto parent = loop->getParentOfType<func::FuncOp>();
    OpBuilder mb(parent);
    auto fn = func::FuncOp::create(mb, loc, name,
                                   FunctionType::get(ctx, {ptr, i64, i64}, {}));
    fn.setPrivate();
    Block *entry = fn.addEntryBlock();
    OpBuilder b = OpBuilder::atBlockBegin(entry);
    IRMapping mapping;
    for (Value value : cloned)
      mapping.map(value, b.clone(*value.getDefiningOp())->getResult(0));
    for (auto [index, value] : llvm::enumerate(passed)) {
      Value slot = LLVM::GEPOp::create(
          b, loc, ptr, record, entry->getArgument(0),
          ArrayRef<LLVM::GEPArg>{0, static_cast<int32_t>(index)});
      Value field = LLVM::LoadOp::create(b, loc, fields[index], slot);
      Type type = value.getType();
      Value local =
          type.isIndex()
              ? arith::IndexCastOp::create(b, loc, type, field).getResult()
          : isa<MemRefType>(type)
              ? UnrealizedConversionCastOp::create(b, loc, type, field)
                    .getResult(0)
              : field;
      mapping.map(value, local);
    }
    // Iteration i of the first dimension is lb + i * step.
    Value lb = mapping.lookup(loop.getLowerBound()[0]);
    Value step = mapping.lookup(loop.getStep()[0]);
    auto iv = [&](Value iteration) {
      Value i = arith::IndexCastOp::create(b, loc, b.getIndexType(), iteration);
      return arith::AddIOp::create(
          b, loc, lb, arith::MulIOp::create(b, loc, i, step).getResult());
    };
    SmallVector<Value> lbs{iv(entry->getArgument(1))},
        ubs{iv(entry->getArgument(2))}, steps{step};
    for (unsigned i = 1, e = loop.getNumLoops(); i < e; ++i) {
      lbs.push_back(mapping.lookup(loop.getLowerBound()[i]));
      ubs.push_back(mapping.lookup(loop.getUpperBound()[i]));
      steps.push_back(mapping.lookup(loop.getStep()[i]));
    }
    auto nest = scf::ParallelOp::create(b, loc, lbs, ubs, steps);
    nest.getRegion().getBlocks().clear();
    loop.getRegion().cloneInto(&nest.getRegion(), mapping);
    func::ReturnOp::create(b, loc);

    // The call site: fill the record and hand the function to the pool.
    // The record lives in the entry block, so a nest inside a loop does not
    // grow the stack.
    OpBuilder entryBuilder = OpBuilder::atBlockBegin(&parent.getBody().front());
    Value one = LLVM::ConstantOp::create(entryBuilder, loc, i64,
                                         entryBuilder.getI64IntegerAttr(1));
    Value slots = LLVM::AllocaOp::create(entryBuilder, loc, ptr, record, one);
    OpBuilder cb(loop);
    for (auto [index, value] : llvm::enumerate(passed)) {
      Type type = value.getType();
      Value field =
          type.isIndex()
              ? arith::IndexCastOp::create(cb, loc, i64, value).getResult()
          : isa<MemRefType>(type) ? UnrealizedConversionCastOp::create(
                                        cb, loc, fields[index], value)
                                        .getResult(0)
                                  : value;
      Value slot = LLVM::GEPOp::create(
          cb, loc, ptr, record, slots,
          ArrayRef<LLVM::GEPArg>{0, static_cast<int32_t>(index)});
      LLVM::StoreOp::create(cb, loc, field, slot);
    }
    int64_t trips = *tripCount(loop.getLowerBound()[0], loop.getUpperBound()[0],
                               loop.getStep()[0]);
    Value callee = func::ConstantOp::create(cb, loc, fn.getFunctionType(),
                                            SymbolRefAttr::get(fn));
    Value count =
        arith::ConstantOp::create(cb, loc, cb.getI64IntegerAttr(trips));
    func::CallOp::create(cb, loc, runtime, ValueRange{callee, slots, count});
    loop.erase();
  }
};

} // namespace
