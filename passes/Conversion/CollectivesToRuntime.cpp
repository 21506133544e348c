//===- CollectivesToRuntime.cpp - collectives as runtime calls ------------===//
//
// Collectives are not generated code: they stay loom ops through the lowering
// to linalg, and one-shot bufferization turns each into a call of the
// runtime, which runs it through the session's communicator (Gloo). This file
// implements BufferizableOpInterface for them: the operand's buffer is read,
// a fresh buffer receives the result.
//
//   loom.all_reduce sum %x on @mesh ["dp"] : tensor<...xf32>
//     ==> %out = memref.alloc()
//         call @loom_rt_all_reduce_f32(%in, %out, reduction, group)
//
// and likewise all_gather (`loom_rt_all_gather_f32(in, out, gather_dim,
// group)`), reduce_scatter (`loom_rt_reduce_scatter_f32(in, out,
// scatter_dim, reduction, group)`), all_to_all (`loom_rt_all_to_all_f32(in,
// out, split_dim, concat_dim, group)`) and all_reduce_start; wait becomes
// `loom_rt_wait_f32(buffer)`. bf16 and f16 tensors call the `_bf16` and
// `_f16` functions. An optimization barrier becomes its operand's buffer
// (no code), and block_index (a rank's block number along
// mesh axes, no communication) `loom_rt_block_index(out, group)`.
// local_block is a slice at that block index, lowered with the loom ops.
//
// `group` names the mesh axes the collective spans (their indices in the high
// 32 bits, in the order listed) and the number of devices (the low ones); the
// runtime runs a
// collective over part of the mesh on a communicator split off the run's for
// this rank's group.
//
//===----------------------------------------------------------------------===//

#include "passes/Conversion/CollectivesToRuntime.h"

#include "dialects/Loom/LoomOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/SymbolTable.h"

using namespace mlir;
using namespace mlir::loom;
using namespace mlir::bufferization;

namespace {

/// The group a collective runs over, as the runtime reads it: the axes of
/// `mesh` it spans in the high 32 bits, in the order listed (major first),
/// one 4-bit nibble each holding the axis's index plus 1, lowest nibble
/// first; the number of devices in the low 32 bits. The runtime numbers a
/// group's ranks by their coordinates on those axes in that order, which is
/// how a dimension split over [tp, dp] numbers its blocks.
FailureOr<int64_t> groupSize(Operation *op, StringRef meshName,
                             ArrayAttr axes) {
  auto mesh = SymbolTable::lookupNearestSymbolFrom<MeshOp>(
      op, StringAttr::get(op->getContext(), meshName));
  if (!mesh)
    return op->emitOpError("names no mesh @") << meshName;
  MeshAttr shape = mesh.getMesh();
  if (axes.size() > 8)
    return op->emitOpError("spans ") << axes.size()
                                     << " mesh axes; the runtime takes up to 8";
  int64_t size = 1, code = 0;
  for (auto [k, axis] : llvm::enumerate(axes)) {
    auto name = cast<StringAttr>(axis);
    auto it = llvm::find(shape.getAxisNames(), name);
    if (it == shape.getAxisNames().end())
      return op->emitOpError("names no axis \"")
             << name.getValue() << "\" of mesh @" << meshName;
    int64_t index = it - shape.getAxisNames().begin();
    if (index >= 15)
      return op->emitOpError("names mesh axis #")
             << index << "; the runtime takes the first 15";
    code |= (index + 1) << (4 * k);
    size *= shape.getAxisSizes()[index];
  }
  return (code << 32) | size;
}

/// The runtime function a collective calls (less its element type's suffix)
/// and its i64 arguments after the two buffers (the group size follows
/// them).
struct KernelCall {
  StringRef name;
  SmallVector<int64_t> args;
};
KernelCall kernelFor(AllReduceOp op) {
  return {"loom_rt_all_reduce", {(int64_t)op.getReduction()}};
}
KernelCall kernelFor(AllGatherOp op) {
  return {"loom_rt_all_gather", {(int64_t)op.getGatherDim()}};
}
KernelCall kernelFor(ReduceScatterOp op) {
  return {"loom_rt_reduce_scatter",
          {(int64_t)op.getScatterDim(), (int64_t)op.getReduction()}};
}

KernelCall kernelFor(AllToAllOp op) {
  return {"loom_rt_all_to_all",
          {(int64_t)op.getSplitDim(), (int64_t)op.getConcatDim()}};
}

KernelCall kernelFor(AllReduceStartOp op) {
  return {"loom_rt_all_reduce_start", {(int64_t)op.getReduction()}};
}

/// `buffer` as a memref of any rank and layout, which the runtime reads
/// sizes and strides from.
Value toUnranked(RewriterBase &rewriter, Location loc, Value buffer) {
  auto type = cast<MemRefType>(buffer.getType());
  int64_t dyn = ShapedType::kDynamic;
  SmallVector<int64_t> dims(type.getRank(), dyn);
  auto anyLayout =
      MemRefType::get(dims, type.getElementType(),
                      StridedLayoutAttr::get(rewriter.getContext(), dyn, dims));
  Value strided = memref::CastOp::create(rewriter, loc, anyLayout, buffer);
  return memref::CastOp::create(
      rewriter, loc, UnrankedMemRefType::get(type.getElementType(), 0),
      strided);
}

/// Calls the runtime function `name` (declared on first use, with MLIR's C
/// interface) with `args`.
void callRuntime(RewriterBase &rewriter, Operation *op, StringRef name,
                 ValueRange args) {
  auto module = op->getParentOfType<ModuleOp>();
  auto callee = module.lookupSymbol<func::FuncOp>(name);
  Location loc = op->getLoc();
  if (!callee) {
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPointToStart(module.getBody());
    callee = func::FuncOp::create(rewriter, loc, name,
                                  rewriter.getFunctionType(args.getTypes(), {}));
    callee.setPrivate();
    callee->setAttr("llvm.emit_c_interface", rewriter.getUnitAttr());
  }
  func::CallOp::create(rewriter, loc, callee, args);
}

/// Bufferizes a collective into a call of the runtime: the operand's buffer
/// is read, a fresh buffer of the result's shape is written.
template <typename OpTy>
struct CollectiveBufferization
    : BufferizableOpInterface::ExternalModel<CollectiveBufferization<OpTy>,
                                             OpTy> {
  bool bufferizesToMemoryRead(Operation *, OpOperand &,
                              const AnalysisState &) const {
    return true;
  }
  bool bufferizesToMemoryWrite(Operation *, OpOperand &,
                               const AnalysisState &) const {
    return false;
  }
  AliasingValueList getAliasingValues(Operation *, OpOperand &,
                                      const AnalysisState &) const {
    return {};
  }
  bool bufferizesToAllocation(Operation *, Value) const { return true; }

  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    auto collective = cast<OpTy>(op);
    auto type = cast<RankedTensorType>(collective.getType());
    StringRef suffix = runtimeTypeSuffix(type.getElementType());
    if (suffix.empty())
      return op->emitOpError("on ")
             << type.getElementType()
             << " is not supported on the CPU yet (f32, bf16 and f16 are)";
    FailureOr<int64_t> size =
        groupSize(op, collective.getMesh(), collective.getMeshAxes());
    if (failed(size))
      return failure();
    FailureOr<Value> input =
        getBuffer(rewriter, collective.getInput(), options, state);
    if (failed(input))
      return failure();
    Location loc = op->getLoc();
    auto bufferType = MemRefType::get(type.getShape(), type.getElementType());
    FailureOr<Value> output =
        options.createAlloc(rewriter, loc, bufferType, ValueRange{});
    if (failed(output))
      return failure();

    SmallVector<Value> args{toUnranked(rewriter, loc, *input),
                            toUnranked(rewriter, loc, *output)};
    KernelCall call = kernelFor(collective);
    call.args.push_back(*size);
    for (int64_t value : call.args)
      args.push_back(arith::ConstantOp::create(
          rewriter, loc, rewriter.getI64IntegerAttr(value)));
    callRuntime(rewriter, op, (call.name + "_" + suffix).str(), args);
    replaceOpWithBufferizedValues(rewriter, op, *output);
    return success();
  }
};

/// Bufferizes loom.block_index into a call of the runtime that writes this
/// rank's position in the group to a fresh rank-0 buffer.
struct BlockIndexBufferization
    : BufferizableOpInterface::ExternalModel<BlockIndexBufferization,
                                             BlockIndexOp> {
  bool bufferizesToAllocation(Operation *, Value) const { return true; }

  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    auto blockIndex = cast<BlockIndexOp>(op);
    FailureOr<int64_t> size =
        groupSize(op, blockIndex.getMesh(), blockIndex.getMeshAxes());
    if (failed(size))
      return failure();
    Location loc = op->getLoc();
    auto bufferType = MemRefType::get({}, rewriter.getI64Type());
    FailureOr<Value> output =
        options.createAlloc(rewriter, loc, bufferType, ValueRange{});
    if (failed(output))
      return failure();
    Value group = arith::ConstantOp::create(rewriter, loc,
                                            rewriter.getI64IntegerAttr(*size));
    callRuntime(rewriter, op, "loom_rt_block_index",
                {toUnranked(rewriter, loc, *output), group});
    replaceOpWithBufferizedValues(rewriter, op, *output);
    return success();
  }
};

/// The byte width of a tensor's elements, as the runtime's point-to-point
/// calls take it.
int64_t elementBytes(Type element) {
  return std::max<int64_t>(1, (element.getIntOrFloatBitWidth() + 7) / 8);
}

/// The suffix of the runtime's send and receive for `element` (their
/// declarations carry the buffer's element type, so a module that sends
/// bf16 activations and an f32 loss calls two of them), or "" if none.
StringRef pointToPointSuffix(Type element) {
  StringRef floating = runtimeTypeSuffix(element);
  if (!floating.empty())
    return floating;
  if (element.isF64())
    return "f64";
  if (element.isInteger(64))
    return "i64";
  if (element.isInteger(32))
    return "i32";
  if (element.isInteger(8))
    return "i8";
  if (element.isInteger(1))
    return "i1";
  return {};
}

/// Bufferizes loom.send into `loom_rt_send_<type>(in, element bytes,
/// group, offset)`, which copies the buffer and queues it for the peer.
struct SendBufferization
    : BufferizableOpInterface::ExternalModel<SendBufferization, SendOp> {
  bool bufferizesToMemoryRead(Operation *, OpOperand &,
                              const AnalysisState &) const {
    return true;
  }
  bool bufferizesToMemoryWrite(Operation *, OpOperand &,
                               const AnalysisState &) const {
    return false;
  }
  AliasingValueList getAliasingValues(Operation *, OpOperand &,
                                      const AnalysisState &) const {
    return {};
  }

  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    auto send = cast<SendOp>(op);
    FailureOr<int64_t> group =
        groupSize(op, send.getMesh(), send.getMeshAxes());
    if (failed(group))
      return failure();
    FailureOr<Value> input =
        getBuffer(rewriter, send.getInput(), options, state);
    if (failed(input))
      return failure();
    Location loc = op->getLoc();
    auto i64 = [&](int64_t v) -> Value {
      return arith::ConstantOp::create(rewriter, loc,
                                       rewriter.getI64IntegerAttr(v));
    };
    Type element = send.getInput().getType().getElementType();
    StringRef suffix = pointToPointSuffix(element);
    if (suffix.empty())
      return op->emitOpError("of ") << element << " is not supported";
    callRuntime(rewriter, op, ("loom_rt_send_" + suffix).str(),
                {toUnranked(rewriter, loc, *input), i64(elementBytes(element)),
                 i64(*group), i64(send.getOffset())});
    rewriter.eraseOp(op);
    return success();
  }
};

/// Bufferizes loom.recv into a fresh buffer that `loom_rt_recv_<type>(out,
/// element bytes, group, offset)` fills with the peer's next message.
struct RecvBufferization
    : BufferizableOpInterface::ExternalModel<RecvBufferization, RecvOp> {
  bool bufferizesToAllocation(Operation *, Value) const { return true; }

  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    auto recv = cast<RecvOp>(op);
    FailureOr<int64_t> group =
        groupSize(op, recv.getMesh(), recv.getMeshAxes());
    if (failed(group))
      return failure();
    Location loc = op->getLoc();
    auto type = cast<RankedTensorType>(recv.getType());
    FailureOr<Value> output = options.createAlloc(
        rewriter, loc, MemRefType::get(type.getShape(), type.getElementType()),
        ValueRange{});
    if (failed(output))
      return failure();
    auto i64 = [&](int64_t v) -> Value {
      return arith::ConstantOp::create(rewriter, loc,
                                       rewriter.getI64IntegerAttr(v));
    };
    StringRef suffix = pointToPointSuffix(type.getElementType());
    if (suffix.empty())
      return op->emitOpError("of ") << type.getElementType()
                                    << " is not supported";
    callRuntime(rewriter, op, ("loom_rt_recv_" + suffix).str(),
                {toUnranked(rewriter, loc, *output),
                 i64(elementBytes(type.getElementType())), i64(*group),
                 i64(recv.getOffset())});
    replaceOpWithBufferizedValues(rewriter, op, *output);
    return success();
  }
};

/// Bufferizes loom.wait in place: its buffer is the started collective's
/// output, which `loom_rt_wait_<type>` blocks on until it is written.
struct WaitBufferization
    : BufferizableOpInterface::ExternalModel<WaitBufferization, WaitOp> {
  bool bufferizesToMemoryRead(Operation *, OpOperand &,
                              const AnalysisState &) const {
    return true;
  }
  bool bufferizesToMemoryWrite(Operation *, OpOperand &,
                               const AnalysisState &) const {
    return true;
  }
  AliasingValueList getAliasingValues(Operation *op, OpOperand &,
                                      const AnalysisState &) const {
    return {{op->getResult(0), BufferRelation::Equivalent}};
  }

  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    auto wait = cast<WaitOp>(op);
    FailureOr<Value> buffer =
        getBuffer(rewriter, wait.getInput(), options, state);
    if (failed(buffer))
      return failure();
    auto type = cast<MemRefType>(buffer->getType());
    StringRef suffix = runtimeTypeSuffix(type.getElementType());
    if (suffix.empty())
      return op->emitOpError("on ") << type.getElementType()
                                    << " is not supported on the CPU yet";
    callRuntime(rewriter, op, ("loom_rt_wait_" + suffix).str(),
                toUnranked(rewriter, op->getLoc(), *buffer));
    replaceOpWithBufferizedValues(rewriter, op, *buffer);
    return success();
  }
};

/// Bufferizes loom.optimization_barrier to its operand's buffer: the
/// barrier has done its work (keeping recomputed ops distinct from the
/// forward ones through CSE) and costs nothing at run time.
struct OptimizationBarrierBufferization
    : BufferizableOpInterface::ExternalModel<OptimizationBarrierBufferization,
                                             OptimizationBarrierOp> {
  bool bufferizesToMemoryRead(Operation *, OpOperand &,
                              const AnalysisState &) const {
    return false;
  }
  bool bufferizesToMemoryWrite(Operation *, OpOperand &,
                               const AnalysisState &) const {
    return false;
  }
  AliasingValueList getAliasingValues(Operation *op, OpOperand &,
                                      const AnalysisState &) const {
    return {{op->getResult(0), BufferRelation::Equivalent}};
  }

  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    FailureOr<Value> buffer = getBuffer(
        rewriter, cast<OptimizationBarrierOp>(op).getInput(), options, state);
    if (failed(buffer))
      return failure();
    replaceOpWithBufferizedValues(rewriter, op, *buffer);
    return success();
  }
};

} // namespace

StringRef mlir::loom::runtimeTypeSuffix(Type element) {
  if (element.isF32())
    return "f32";
  if (element.isBF16())
    return "bf16";
  if (element.isF16())
    return "f16";
  return {};
}

void mlir::loom::registerCollectiveBufferizationModels(
    DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *context, LoomDialect *) {
    AllReduceOp::attachInterface<CollectiveBufferization<AllReduceOp>>(
        *context);
    OptimizationBarrierOp::attachInterface<OptimizationBarrierBufferization>(
        *context);
    AllGatherOp::attachInterface<CollectiveBufferization<AllGatherOp>>(
        *context);
    ReduceScatterOp::attachInterface<
        CollectiveBufferization<ReduceScatterOp>>(*context);
    AllToAllOp::attachInterface<CollectiveBufferization<AllToAllOp>>(*context);
    AllReduceStartOp::attachInterface<
        CollectiveBufferization<AllReduceStartOp>>(*context);
    WaitOp::attachInterface<WaitBufferization>(*context);
    BlockIndexOp::attachInterface<BlockIndexBufferization>(*context);
    SendOp::attachInterface<SendBufferization>(*context);
    RecvOp::attachInterface<RecvBufferization>(*context);
  });
}
