//===- GpuCodegen.cpp - placing bufferized loops on a GPU -----------------===//
//
// loom-map-to-gpu: after bufferization and convert-linalg-to-parallel-loops,
// every loop nest and memory access of a function moves into a gpu.launch.
// Parallel loops are linearized over blocks of threads; the remaining
// device work (reduction loops, scalar loads and stores) runs in launches of
// one thread, grouped into runs of consecutive ops; calls, allocations and
// views stay on the host, and every allocation moves to the device.
//
// loom-merge-gpu-modules: the kernels gpu-kernel-outlining put in modules of
// their own go into one, @loom_kernels.
//
// loom-merge-fatbins: a binary's fatbins for several architectures become
// one, from which the driver picks the device's cubin.
//
// loom-emulate-gpu-launches: launches as loops over their blocks and threads,
// so that the CPU can run what loom-map-to-gpu placed (tests).
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/RegionUtils.h"

#include "llvm/ADT/SetVector.h"

#include <functional>

namespace mlir::loom {
#define GEN_PASS_DEF_LOOMMAPTOGPUPASS
#define GEN_PASS_DEF_LOOMMERGEGPUMODULESPASS
#define GEN_PASS_DEF_LOOMEMULATEGPULAUNCHESPASS
#define GEN_PASS_DEF_LOOMMERGEFATBINSPASS
#include "passes/Conversion/Passes.h.inc"
} // namespace mlir::loom

using namespace mlir;

namespace {

/// Where an op of a function body runs.
enum class Place {
  /// On the host, where it is: calls, allocations, views, index arithmetic.
  Host,
  /// In a launch of one thread, with the ops around it that also do.
  Serial,
  /// In a launch of its own over its iterations (an scf.parallel).
  Parallel,
  /// On the host, with its regions placed op by op (a loop holding calls
  /// or parallel loops).
  HostControl,
};

/// Whether `op` calls a function the host runs: the runtime's (declared
/// here) or one of the module's that takes buffers (bufferization's
/// dealloc_helper). A function of the module on scalars only (integer
/// powers from convert-math-to-funcs) runs where its caller does.
bool isHostCall(Operation *op) {
  auto call = dyn_cast<CallOpInterface>(op);
  if (!call)
    return false;
  auto callee = dyn_cast_or_null<func::FuncOp>(call.resolveCallable());
  if (!callee || callee.isDeclaration())
    return true;
  auto scalar = [](Type type) { return type.isIntOrIndexOrFloat(); };
  return !llvm::all_of(callee.getArgumentTypes(), scalar) ||
         !llvm::all_of(callee.getResultTypes(), scalar);
}

/// Whether `op` or an op nested in it calls a host function, runs a parallel
/// loop or allocates or frees a buffer, which a launch of one thread should
/// not hold.
bool holdsHostWork(Operation *op) {
  return op
      ->walk([](Operation *nested) {
        return isHostCall(nested) ||
                       isa<scf::ParallelOp, memref::AllocOp, memref::DeallocOp>(
                           nested)
                   ? WalkResult::interrupt()
                   : WalkResult::advance();
      })
      .wasInterrupted();
}

void sinkPureOps(gpu::LaunchOp launch);

/// A buffer of `type` allocated where `func` starts and freed before each of
/// its returns: it dominates every use, also from inside loops.
Value functionScopedBuffer(func::FuncOp func, MemRefType type, Location loc) {
  auto b = OpBuilder::atBlockBegin(&func.getBody().front());
  Value buffer = memref::AllocOp::create(b, loc, type);
  func.walk([&](func::ReturnOp ret) {
    OpBuilder rb(ret);
    memref::DeallocOp::create(rb, loc, buffer);
  });
  return buffer;
}

class GpuPlacer {
public:
  GpuPlacer(int64_t blockSize) : blockSize(blockSize) {}

  LogicalResult placeFunction(func::FuncOp func) {
    if (func.isDeclaration())
      return success();
    findHostBuffers(func);
    for (Block &block : func.getBody())
      if (failed(placeBlock(block)))
        return failure();
    return success();
  }

  /// Buffers that stay in host memory: those only the host reads and writes
  /// around calls, which are a runtime call's scalar result (the rank's
  /// block index) or the arguments of a host function of the module
  /// (bufferization's dealloc_helper, which compares buffers' addresses).
  llvm::SmallPtrSet<Value, 4> hostBuffers;

private:
  void findHostBuffers(func::FuncOp func) {
    auto module = func->getParentOfType<ModuleOp>();
    func.walk([&](memref::AllocOp alloc) {
      bool hostCallee = false, called = false;
      std::function<bool(Value)> hostOnly = [&](Value buffer) {
        return llvm::all_of(buffer.getUsers(), [&](Operation *user) {
          if (auto call = dyn_cast<func::CallOp>(user)) {
            auto callee = module.lookupSymbol<func::FuncOp>(call.getCallee());
            hostCallee |= callee && !callee.isDeclaration();
            return called = true;
          }
          if (auto cast = dyn_cast<memref::CastOp>(user))
            return hostOnly(cast.getResult());
          if (isa<memref::LoadOp, memref::StoreOp>(user))
            return user->getBlock() == alloc->getBlock();
          return isa<memref::DeallocOp>(user);
        });
      };
      if (hostOnly(alloc.getResult()) && called &&
          (hostCallee || alloc.getType().getRank() == 0))
        hostBuffers.insert(alloc.getResult());
    });
  }

  Place classify(Operation *op) {
    if (auto load = dyn_cast<memref::LoadOp>(op))
      if (hostBuffers.contains(load.getMemref()))
        return Place::Host;
    if (auto store = dyn_cast<memref::StoreOp>(op))
      if (hostBuffers.contains(store.getMemref()))
        return Place::Host;
    if (op->hasTrait<OpTrait::IsTerminator>() || isHostCall(op) ||
        isa<memref::AllocOp, memref::DeallocOp, memref::AllocaOp>(op) ||
        isa<gpu::GPUDialect>(op->getDialect()))
      return Place::Host;
    if (auto loop = dyn_cast<scf::ParallelOp>(op)) {
      bool hostBounds = llvm::all_of(op->getOperands(),
                                     [&](Value v) { return !deviceValue(v); });
      if (loop.getNumResults() == 0 && hostBounds)
        return Place::Parallel;
      return Place::Serial;
    }
    if (op->getNumRegions() > 0)
      return holdsHostWork(op) ? Place::HostControl : Place::Serial;
    // Pure ops of host values (constants, index arithmetic, views of
    // buffers) stay where they are; launches that read them get copies.
    if (isPure(op) && llvm::none_of(op->getOperands(),
                                    [&](Value v) { return deviceValue(v); }))
      return Place::Host;
    return Place::Serial;
  }

  /// Whether `value` is computed by an op of the run being gathered.
  bool deviceValue(Value value) const {
    Operation *def = value.getDefiningOp();
    return def && inRun.contains(def);
  }

  bool usesDeviceValue(Operation &op) const {
    return llvm::any_of(op.getOperands(),
                        [&](Value v) { return deviceValue(v); });
  }

  LogicalResult placeBlock(Block &block) {
    for (Operation &op : llvm::make_early_inc_range(block)) {
      switch (classify(&op)) {
      case Place::Serial:
        run.push_back(&op);
        inRun.insert(&op);
        continue;
      case Place::Host:
        if (usesDeviceValue(op))
          return op.emitOpError()
                 << "needs a value computed on the GPU on the host; the "
                    "CUDA target cannot place it";
        if (!run.empty() && isa<memref::DeallocOp>(op)) {
          deferred.push_back(&op);
          continue;
        }
        if (!run.empty() &&
            (isHostCall(&op) || op.hasTrait<OpTrait::IsTerminator>()))
          if (failed(closeRun()))
            return failure();
        continue;
      case Place::Parallel:
        if (failed(closeRun()))
          return failure();
        if (failed(launchParallel(cast<scf::ParallelOp>(op))))
          return failure();
        continue;
      case Place::HostControl:
        if (usesDeviceValue(op))
          return op.emitOpError()
                 << "holds calls or parallel loops but depends on a value "
                    "computed on the GPU; the CUDA target cannot place it";
        if (failed(closeRun()))
          return failure();
        for (Region &region : op.getRegions())
          for (Block &nested : region)
            if (failed(placeBlock(nested)))
              return failure();
        continue;
      }
    }
    return closeRun();
  }

  /// Moves the gathered run into a launch of one thread after its last op,
  /// and the deallocations met on the way after the launch.
  LogicalResult closeRun() {
    if (run.empty())
      return success();
    Operation *last = run.back();
    OpBuilder b(last->getContext());
    b.setInsertionPointAfter(last);
    Location loc = last->getLoc();
    auto func = last->getParentOfType<func::FuncOp>();
    // Scalars that later device work reads (a dropout seed, a step count)
    // leave the launch through a buffer of one element, reloaded by each
    // reader on the device.
    SmallVector<std::pair<Value, Value>> spilled;
    for (Operation *op : run)
      for (Value result : op->getResults()) {
        SmallVector<OpOperand *> outside;
        for (OpOperand &use : result.getUses()) {
          Operation *ancestor = use.getOwner();
          while (ancestor && !inRun.contains(ancestor))
            ancestor = ancestor->getParentOp();
          if (!ancestor)
            outside.push_back(&use);
        }
        if (outside.empty())
          continue;
        if (!result.getType().isIntOrIndexOrFloat()) {
          InFlightDiagnostic diag =
              outside.front()->getOwner()->emitOpError()
              << "reads a " << result.getType()
              << " computed on the GPU on the host; the CUDA target cannot "
                 "place it";
          diag.attachNote(op->getLoc())
              << "computed by this '" << op->getName() << "'";
          return diag;
        }
        Value buffer = functionScopedBuffer(
            func, MemRefType::get({}, result.getType()), loc);
        spilled.emplace_back(result, buffer);
        for (OpOperand *use : outside) {
          OpBuilder rb(use->getOwner());
          use->set(memref::LoadOp::create(rb, loc, buffer));
        }
      }
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    auto launch = gpu::LaunchOp::create(b, loc, one, one, one, one, one, one);
    Block &body = launch.getBody().front();
    b.setInsertionPointToEnd(&body);
    auto terminator = gpu::TerminatorOp::create(b, loc);
    for (Operation *op : run)
      op->moveBefore(terminator);
    b.setInsertionPoint(terminator);
    for (auto [value, buffer] : spilled)
      memref::StoreOp::create(b, loc, value, buffer);
    for (Operation *op : llvm::reverse(deferred))
      op->moveAfter(launch);
    launches.push_back(launch);
    run.clear();
    inRun.clear();
    deferred.clear();
    return success();
  }

  /// Replaces `loop` with a launch of one thread per iteration.
  LogicalResult launchParallel(scf::ParallelOp loop) {
    OpBuilder b(loop);
    Location loc = loop.getLoc();
    SmallVector<Value> trips;
    Value total = arith::ConstantIndexOp::create(b, loc, 1);
    for (auto [lb, ub, step] : llvm::zip(
             loop.getLowerBound(), loop.getUpperBound(), loop.getStep())) {
      Value span = b.createOrFold<arith::SubIOp>(loc, ub, lb);
      Value trip = b.createOrFold<arith::CeilDivSIOp>(loc, span, step);
      trip = b.createOrFold<arith::MaxSIOp>(
          loc, trip, arith::ConstantIndexOp::create(b, loc, 0));
      trips.push_back(trip);
      total = b.createOrFold<arith::MulIOp>(loc, total, trip);
    }
    std::optional<int64_t> staticTotal = getConstantIntValue(total);
    if (staticTotal && *staticTotal == 0) {
      loop.erase();
      return success();
    }
    // Fewer threads than a block when there are fewer iterations.
    int64_t threads =
        staticTotal ? std::min(blockSize, *staticTotal) : blockSize;
    Value threadCount = arith::ConstantIndexOp::create(b, loc, threads);
    Value blocks = b.createOrFold<arith::CeilDivSIOp>(loc, total, threadCount);
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    // A loop with no iterations at run time launches nothing.
    if (!staticTotal) {
      Value zero = arith::ConstantIndexOp::create(b, loc, 0);
      Value any =
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sgt, total, zero);
      auto guard = scf::IfOp::create(b, loc, any, /*withElse=*/false);
      b.setInsertionPointToStart(&guard.getThenRegion().front());
    }
    auto launch =
        gpu::LaunchOp::create(b, loc, blocks, one, one, threadCount, one, one);
    Block &body = launch.getBody().front();
    b.setInsertionPointToEnd(&body);
    auto terminator = gpu::TerminatorOp::create(b, loc);
    b.setInsertionPoint(terminator);
    Value id = arith::AddIOp::create(
        b, loc,
        arith::MulIOp::create(b, loc, launch.getBlockIds().x, threadCount),
        launch.getThreadIds().x);
    // The last block's threads past the end do nothing.
    if (!staticTotal || *staticTotal % threads != 0) {
      Value inside =
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, id, total);
      auto guard = scf::IfOp::create(b, loc, inside, /*withElse=*/false);
      b.setInsertionPointToStart(&guard.getThenRegion().front());
    }
    IRMapping mapping;
    Value rest = id;
    for (int64_t d = loop.getNumLoops() - 1; d >= 0; --d) {
      Value index = rest;
      if (d > 0) {
        index = arith::RemUIOp::create(b, loc, rest, trips[d]);
        rest = arith::DivUIOp::create(b, loc, rest, trips[d]);
      }
      Value iv = b.createOrFold<arith::AddIOp>(
          loc, loop.getLowerBound()[d],
          b.createOrFold<arith::MulIOp>(loc, index, loop.getStep()[d]));
      mapping.map(loop.getInductionVars()[d], iv);
    }
    for (Operation &op : loop.getBody()->without_terminator())
      b.clone(op, mapping);
    loop.erase();
    launches.push_back(launch);
    return success();
  }

public:
  /// Copies constants, globals, views and index arithmetic that launches
  /// read into them (so kernels see device globals and fewer arguments).
  void sinkIntoLaunches() {
    for (gpu::LaunchOp launch : launches)
      sinkPureOps(launch);
  }

  SmallVector<gpu::LaunchOp> launches;

private:
  int64_t blockSize;
  SmallVector<Operation *> run;
  llvm::SmallPtrSet<Operation *, 16> inRun;
  SmallVector<Operation *> deferred;
};

/// Copies into `launch` the pure ops (constants, globals, views, index
/// arithmetic) whose results it reads, with the pure ops they read in turn;
/// what is left to capture (buffers, loop indices, scalars the host loaded)
/// becomes kernel arguments. Unlike upstream's sinking, an operand that is
/// not yet an argument does not stop an op from moving in: a view at a loop
/// index reaches the kernel as its buffer and the index, never as a memref
/// with a dynamic offset (which the kernels' bare-pointer arguments cannot
/// carry).
void sinkPureOps(gpu::LaunchOp launch) {
  Region &body = launch.getBody();
  auto sinkable = [](Operation *op) {
    return op && op->getNumRegions() == 0 && isPure(op);
  };
  llvm::SetVector<Operation *> order;
  std::function<void(Operation *)> visit = [&](Operation *op) {
    if (order.contains(op))
      return;
    for (Value operand : op->getOperands())
      if (sinkable(operand.getDefiningOp()))
        visit(operand.getDefiningOp());
    order.insert(op);
  };
  llvm::SetVector<Value> above;
  getUsedValuesDefinedAbove(body, above);
  for (Value value : above)
    if (sinkable(value.getDefiningOp()))
      visit(value.getDefiningOp());
  OpBuilder b = OpBuilder::atBlockBegin(&body.front());
  IRMapping mapping;
  for (Operation *op : order) {
    Operation *copy = b.clone(*op, mapping);
    for (auto [from, to] : llvm::zip(op->getResults(), copy->getResults()))
      replaceAllUsesInRegionWith(from, to, body);
  }
}

/// Every allocation outside launches but `hostBuffers` moves to the device;
/// a host global that the host passes on (to a runtime kernel) is copied to
/// a device buffer.
void moveBuffersToDevice(func::FuncOp func,
                         const llvm::SmallPtrSetImpl<Value> &hostBuffers) {
  auto outsideLaunch = [](Operation *op) {
    return !op->getParentOfType<gpu::LaunchOp>();
  };
  // A global the host passes on: one device copy, made where the function
  // starts (the global is constant).
  SmallVector<memref::GetGlobalOp> globals;
  func.walk([&](memref::GetGlobalOp global) {
    if (outsideLaunch(global) &&
        llvm::any_of(global->getUsers(), outsideLaunch))
      globals.push_back(global);
  });
  for (memref::GetGlobalOp global : globals) {
    Location loc = global.getLoc();
    Value copy = functionScopedBuffer(func, global.getType(), loc);
    OpBuilder b(copy.getContext());
    b.setInsertionPointAfterValue(copy);
    Value source = memref::GetGlobalOp::create(b, loc, global.getType(),
                                               global.getNameAttr());
    gpu::MemcpyOp::create(b, loc, Type(), ValueRange(), copy, source);
    global.getResult().replaceUsesWithIf(
        copy, [&](OpOperand &use) { return outsideLaunch(use.getOwner()); });
  }
  func.walk([&](memref::AllocOp alloc) {
    if (!outsideLaunch(alloc) || hostBuffers.contains(alloc.getResult()))
      return;
    OpBuilder b(alloc);
    auto device = gpu::AllocOp::create(
        b, alloc.getLoc(), alloc.getType(), /*asyncToken=*/Type(),
        /*asyncDependencies=*/ValueRange(), alloc.getDynamicSizes(),
        alloc.getSymbolOperands());
    alloc.replaceAllUsesWith(device.getMemref());
    alloc.erase();
  });
  func.walk([&](memref::DeallocOp dealloc) {
    if (!outsideLaunch(dealloc) || hostBuffers.contains(dealloc.getMemref()))
      return;
    OpBuilder b(dealloc);
    gpu::DeallocOp::create(b, dealloc.getLoc(), /*asyncToken=*/Type(),
                           ValueRange(), dealloc.getMemref());
    dealloc.erase();
  });
}

struct LoomMapToGpuPass
    : mlir::loom::impl::LoomMapToGpuPassBase<LoomMapToGpuPass> {
  using Base::Base;

  // Private functions are the host's helpers (dealloc_helper) and stay as
  // they are; the entry points are public.
  void runOnOperation() override {
    if (blockSize < 1 || blockSize > 1024) {
      getOperation().emitError()
          << "loom-map-to-gpu: block-size must be 1-1024 (got "
          << static_cast<int64_t>(blockSize) << ")";
      return signalPassFailure();
    }
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      if (func.isDeclaration() || func.isPrivate())
        continue;
      GpuPlacer placer(blockSize);
      if (failed(placer.placeFunction(func)))
        return signalPassFailure();
      placer.sinkIntoLaunches();
      moveBuffersToDevice(func, placer.hostBuffers);
      // Host copies of what the launches now compute themselves.
      IRRewriter rewriter(&getContext());
      (void)runRegionDCE(rewriter, func.getBody());
    }
    getOperation()->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                            UnitAttr::get(&getContext()));
  }
};

struct LoomMergeGpuModulesPass
    : mlir::loom::impl::LoomMergeGpuModulesPassBase<LoomMergeGpuModulesPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<gpu::GPUModuleOp> kernelModules(
        module.getOps<gpu::GPUModuleOp>());
    if (kernelModules.empty())
      return;
    MLIRContext *ctx = &getContext();
    constexpr StringLiteral kMerged = "loom_kernels";
    // After the host functions, as outlining puts its modules.
    auto b = OpBuilder::atBlockEnd(module.getBody());
    auto merged = gpu::GPUModuleOp::create(b, module.getLoc(), kMerged);
    SymbolTable mergedSymbols(merged);
    // Old kernel reference -> new one.
    DenseMap<Attribute, SymbolRefAttr> renamed;
    for (gpu::GPUModuleOp old : kernelModules) {
      for (Operation &op :
           llvm::make_early_inc_range(old.getBody()->getOperations())) {
        auto symbol = dyn_cast<SymbolOpInterface>(op);
        if (!symbol)
          continue;
        if (auto kernel = dyn_cast<gpu::GPUFuncOp>(op)) {
          SymbolRefAttr from = SymbolRefAttr::get(
              ctx, old.getName(), {FlatSymbolRefAttr::get(kernel)});
          kernel.setName(old.getName());
          op.remove();
          mergedSymbols.insert(&op);
          renamed[from] = SymbolRefAttr::get(
              ctx, kMerged, {FlatSymbolRefAttr::get(ctx, kernel.getName())});
          continue;
        }
        // Globals outlining copied into several modules are the same.
        if (mergedSymbols.lookup(symbol.getName()))
          continue;
        op.remove();
        mergedSymbols.insert(&op);
      }
      old.erase();
    }
    module.walk([&](gpu::LaunchFuncOp launch) {
      auto it = renamed.find(launch.getKernel());
      if (it != renamed.end())
        launch.setKernelAttr(it->second);
    });
  }
};

/// A fatbin: a 16-byte header (magic 0xBA55ED50, version, header size, then
/// the bytes of the entries that follow it) and entries (cubins, PTX), each
/// with its own header and padded payload.
constexpr uint32_t kFatbinMagic = 0xBA55ED50;

/// The entries of the fatbin `bytes`, or failure if it is not one.
FailureOr<StringRef> fatbinEntries(StringRef bytes) {
  if (bytes.size() < 16)
    return failure();
  auto read = [&](size_t at, size_t width) {
    uint64_t value = 0;
    for (size_t i = 0; i < width; ++i)
      value |= uint64_t(uint8_t(bytes[at + i])) << (8 * i);
    return value;
  };
  uint64_t headerSize = read(6, 2), entriesSize = read(8, 8);
  if (read(0, 4) != kFatbinMagic || headerSize < 16 ||
      headerSize + entriesSize > bytes.size())
    return failure();
  return bytes.substr(headerSize, entriesSize);
}

struct LoomMergeFatbinsPass
    : mlir::loom::impl::LoomMergeFatbinsPassBase<LoomMergeFatbinsPass> {
  void runOnOperation() override {
    WalkResult result = getOperation().walk([&](gpu::BinaryOp binary) {
      ArrayRef<Attribute> objects = binary.getObjects().getValue();
      if (objects.size() < 2)
        return WalkResult::advance();
      std::string entries;
      for (Attribute attr : objects) {
        auto object = cast<gpu::ObjectAttr>(attr);
        FailureOr<StringRef> part = failure();
        if (object.getFormat() == gpu::CompilationTarget::Fatbin)
          part = fatbinEntries(object.getObject().getValue());
        if (failed(part)) {
          binary.emitOpError()
              << "has an object for " << object.getTarget()
              << " that is not a fatbin; loom-merge-fatbins merges fatbins";
          return WalkResult::interrupt();
        }
        entries += *part;
      }
      std::string merged(16, '\0');
      auto write = [&](size_t at, size_t width, uint64_t value) {
        for (size_t i = 0; i < width; ++i)
          merged[at + i] = char((value >> (8 * i)) & 0xff);
      };
      StringRef first =
          cast<gpu::ObjectAttr>(objects.front()).getObject().getValue();
      merged.replace(0, 8, first.substr(0, 8)); // Magic, version, size.
      write(6, 2, 16);
      write(8, 8, entries.size());
      merged += entries;
      auto object = gpu::ObjectAttr::get(
          &getContext(), cast<gpu::ObjectAttr>(objects.front()).getTarget(),
          gpu::CompilationTarget::Fatbin,
          StringAttr::get(&getContext(), merged), nullptr, nullptr);
      binary.setObjectsAttr(ArrayAttr::get(&getContext(), {object}));
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }
};

struct LoomEmulateGpuLaunchesPass
    : mlir::loom::impl::LoomEmulateGpuLaunchesPassBase<
          LoomEmulateGpuLaunchesPass> {
  void runOnOperation() override {
    SmallVector<gpu::LaunchOp> launches;
    getOperation().walk(
        [&](gpu::LaunchOp launch) { launches.push_back(launch); });
    for (gpu::LaunchOp launch : launches) {
      if (launch.getAsyncToken() || !launch.getAsyncDependencies().empty()) {
        launch.emitOpError() << "is asynchronous; emulate launches before "
                                "gpu-async-region";
        return signalPassFailure();
      }
      OpBuilder b(launch);
      Location loc = launch.getLoc();
      Value zero = arith::ConstantIndexOp::create(b, loc, 0);
      Value one = arith::ConstantIndexOp::create(b, loc, 1);
      gpu::KernelDim3 grid = launch.getGridSizeOperandValues();
      gpu::KernelDim3 block = launch.getBlockSizeOperandValues();
      SmallVector<Value> ids;
      for (Value size : {grid.x, grid.y, grid.z, block.x, block.y, block.z}) {
        auto loop = scf::ForOp::create(b, loc, zero, size, one);
        ids.push_back(loop.getInductionVar());
        b.setInsertionPoint(loop.getBody()->getTerminator());
      }
      IRMapping mapping;
      gpu::KernelDim3 blockIds = launch.getBlockIds(),
                      threadIds = launch.getThreadIds(),
                      gridSize = launch.getGridSize(),
                      blockSize = launch.getBlockSize();
      mapping.map(blockIds.x, ids[0]);
      mapping.map(blockIds.y, ids[1]);
      mapping.map(blockIds.z, ids[2]);
      mapping.map(threadIds.x, ids[3]);
      mapping.map(threadIds.y, ids[4]);
      mapping.map(threadIds.z, ids[5]);
      mapping.map(gridSize.x, grid.x);
      mapping.map(gridSize.y, grid.y);
      mapping.map(gridSize.z, grid.z);
      mapping.map(blockSize.x, block.x);
      mapping.map(blockSize.y, block.y);
      mapping.map(blockSize.z, block.z);
      Region &body = launch.getBody();
      if (!body.hasOneBlock()) {
        launch.emitOpError() << "has control flow between blocks; emulate "
                                "launches before convert-scf-to-cf";
        return signalPassFailure();
      }
      for (Operation &op : body.front().without_terminator())
        b.clone(op, mapping);
      launch.erase();
    }
    getOperation().walk([&](Operation *op) {
      OpBuilder b(op);
      if (auto alloc = dyn_cast<gpu::AllocOp>(op)) {
        Value buffer = memref::AllocOp::create(
            b, alloc.getLoc(), alloc.getType(), alloc.getDynamicSizes());
        alloc.getMemref().replaceAllUsesWith(buffer);
        alloc.erase();
      } else if (auto dealloc = dyn_cast<gpu::DeallocOp>(op)) {
        memref::DeallocOp::create(b, dealloc.getLoc(), dealloc.getMemref());
        dealloc.erase();
      } else if (auto copy = dyn_cast<gpu::MemcpyOp>(op)) {
        memref::CopyOp::create(b, copy.getLoc(), copy.getSrc(), copy.getDst());
        copy.erase();
      }
    });
    getOperation()->removeAttr(gpu::GPUDialect::getContainerModuleAttrName());
  }
};

} // namespace
