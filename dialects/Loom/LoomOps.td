//===- LoomOps.td - ops of the loom dialect ----------------*- tablegen -*-===//
//
// The ops ONNX models are imported into: what MLPs, CNNs, transformers,
// recurrent networks and mixture-of-experts layers need, plus the collectives
// distributed programs are made of. Every op works on ranked tensors with value
// semantics, verifies its invariants and (where its attributes determine it)
// infers its result type, so builders can omit result types.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_OPS
#define LOOM_OPS

include "dialects/Loom/LoomDialect.td"
include "dialects/Loom/LoomAttrs.td"
include "dialects/Loom/LoomInterfaces.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

/// Every loom op implements the cost interface; `cost` names the methods the op
/// defines itself instead of taking the interface's defaults. Sharding rules
/// live in LoomShardingRules.cpp, one function per op family.
class Loom_Op<string mnemonic, list<Trait> traits = [], list<string> cost = []>
    : Op<Loom_Dialect, mnemonic,
         !listconcat(traits, [DeclareOpInterfaceMethods<Loom_CostOpInterface, cost>,
                              Loom_ShardingRuleOpInterface])>;

def Loom_Tensor : RankedTensorOf<[AnyType]>;
def Loom_FloatTensor : RankedTensorOf<[AnyFloat]>;
def Loom_IntTensor : RankedTensorOf<[AnySignlessInteger]>;
def Loom_BoolTensor : RankedTensorOf<[I1]>;

//===----------------------------------------------------------------------===//
// Constants
//===----------------------------------------------------------------------===//

def Loom_ConstantOp : Loom_Op<"constant", [ConstantLike, Pure,
    AllTypesMatch<["value", "result"]>], ["getFlops", "getBytesRead"]> {
  let summary = "a constant tensor";
  let description = [{
    ```mlir
    %c = loom.constant dense<[1.0, 2.0]> : tensor<2xf32>
    ```
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs Loom_Tensor:$result);
  let builders = [
    // A tensor of `type` with every element `value` (float or integer).
    OpBuilder<(ins "::mlir::RankedTensorType":$type, "double":$value)>
  ];
  let assemblyFormat = "attr-dict $value";
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

class Loom_UnaryOp<string mnemonic, Type type = Loom_Tensor,
                   list<Trait> traits = []>
    : Loom_Op<mnemonic, !listconcat(traits, [Pure, Elementwise,
                                              SameOperandsAndResultType])> {
  let summary = "elementwise " # mnemonic;
  let arguments = (ins type:$input);
  let results = (outs type:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def Loom_NegOp : Loom_UnaryOp<"neg">;
def Loom_AbsOp : Loom_UnaryOp<"abs">;
def Loom_SignOp : Loom_UnaryOp<"sign">;
def Loom_ExpOp : Loom_UnaryOp<"exp", Loom_FloatTensor>;
def Loom_LogOp : Loom_UnaryOp<"log", Loom_FloatTensor>;
def Loom_SqrtOp : Loom_UnaryOp<"sqrt", Loom_FloatTensor>;
def Loom_RsqrtOp : Loom_UnaryOp<"rsqrt", Loom_FloatTensor>;
def Loom_ReciprocalOp : Loom_UnaryOp<"reciprocal", Loom_FloatTensor>;
def Loom_TanhOp : Loom_UnaryOp<"tanh", Loom_FloatTensor>;
def Loom_SigmoidOp : Loom_UnaryOp<"sigmoid", Loom_FloatTensor>;
def Loom_ReluOp : Loom_UnaryOp<"relu">;
def Loom_ErfOp : Loom_UnaryOp<"erf", Loom_FloatTensor>;
def Loom_FloorOp : Loom_UnaryOp<"floor", Loom_FloatTensor>;
def Loom_CeilOp : Loom_UnaryOp<"ceil", Loom_FloatTensor>;
def Loom_RoundOp : Loom_UnaryOp<"round", Loom_FloatTensor> {
  let description = "Rounds half to even, as ONNX's Round.";
}
def Loom_SinOp : Loom_UnaryOp<"sin", Loom_FloatTensor>;
def Loom_CosOp : Loom_UnaryOp<"cos", Loom_FloatTensor>;
def Loom_SoftplusOp : Loom_UnaryOp<"softplus", Loom_FloatTensor>;
def Loom_SoftsignOp : Loom_UnaryOp<"softsign", Loom_FloatTensor>;
def Loom_NotOp : Loom_UnaryOp<"not", Loom_BoolTensor>;

def Loom_GeluOp : Loom_UnaryOp<"gelu", Loom_FloatTensor> {
  let description = [{
    `x * Φ(x)` with the exact normal CDF; with `approximate` set, the tanh
    approximation `0.5x(1 + tanh(√(2/π)(x + 0.044715x³)))`.
  }];
  let arguments = (ins Loom_FloatTensor:$input, UnitAttr:$approximate);
}

def Loom_LeakyReluOp : Loom_UnaryOp<"leaky_relu", Loom_FloatTensor> {
  let description = "`x` where `x >= 0`, else `alpha * x`.";
  let arguments = (ins Loom_FloatTensor:$input, F64Attr:$alpha);
}

def Loom_EluOp : Loom_UnaryOp<"elu", Loom_FloatTensor> {
  let description = "`x` where `x > 0`, else `alpha * (exp(x) - 1)`.";
  let arguments = (ins Loom_FloatTensor:$input, F64Attr:$alpha);
}

def Loom_HardSigmoidOp : Loom_UnaryOp<"hard_sigmoid", Loom_FloatTensor> {
  let description = "`max(0, min(1, alpha * x + beta))`.";
  let arguments = (ins Loom_FloatTensor:$input, F64Attr:$alpha, F64Attr:$beta);
}

def Loom_ClipOp : Loom_UnaryOp<"clip"> {
  let description = "Clamps to `[min, max]`; a missing bound is unbounded.";
  let arguments = (ins Loom_Tensor:$input, OptionalAttr<F64Attr>:$min,
                       OptionalAttr<F64Attr>:$max);
}

def Loom_CastOp : Loom_Op<"cast", [Pure, Elementwise, SameOperandsAndResultShape]> {
  let summary = "converts the element type";
  let description = [{
    Float to integer conversion truncates toward zero; anything to `i1` is
    `x != 0`, as ONNX's Cast.
  }];
  let arguments = (ins Loom_Tensor:$input);
  let results = (outs Loom_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasFolder = 1;
}

class Loom_BinaryOp<string mnemonic, Type type = Loom_Tensor,
                    list<Trait> traits = []>
    : Loom_Op<mnemonic, !listconcat(traits, [Pure, InferTypeOpAdaptor])> {
  let summary = "elementwise " # mnemonic # " with numpy broadcasting";
  let arguments = (ins type:$lhs, type:$rhs);
  let results = (outs type:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(::mlir::MLIRContext *,
        std::optional<::mlir::Location> loc, Adaptor adaptor,
        ::llvm::SmallVectorImpl<::mlir::Type> &types) {
      return ::mlir::loom::detail::inferBroadcast(loc, adaptor.getOperands(),
                                                  /*boolResult=*/false, types);
    }
  }];
}

def Loom_AddOp : Loom_BinaryOp<"add", Loom_Tensor, [Commutative]> {
  let hasFolder = 1;
}
def Loom_SubOp : Loom_BinaryOp<"sub"> {
  let hasFolder = 1;
}
def Loom_MulOp : Loom_BinaryOp<"mul", Loom_Tensor, [Commutative]> {
  let hasFolder = 1;
}
def Loom_DivOp : Loom_BinaryOp<"div"> {
  let description = "Integer division truncates toward zero.";
  let hasFolder = 1;
}
def Loom_PowOp : Loom_BinaryOp<"pow">;
def Loom_MaxOp : Loom_BinaryOp<"max", Loom_Tensor, [Commutative]>;
def Loom_MinOp : Loom_BinaryOp<"min", Loom_Tensor, [Commutative]>;
def Loom_ModOp : Loom_BinaryOp<"mod", Loom_IntTensor> {
  let description = [{
    Integers only; the remainder has the sign of the divisor (Python's `%`).
    (ONNX Mod on floats, C's fmod, is not imported.)
  }];
}
def Loom_AndOp : Loom_BinaryOp<"and", Loom_BoolTensor, [Commutative]>;
def Loom_OrOp : Loom_BinaryOp<"or", Loom_BoolTensor, [Commutative]>;
def Loom_XorOp : Loom_BinaryOp<"xor", Loom_BoolTensor, [Commutative]>;

class Loom_CompareOp<string mnemonic>
    : Loom_Op<mnemonic, [Pure, InferTypeOpAdaptor]> {
  let summary = "elementwise comparison `" # mnemonic # "` giving i1";
  let arguments = (ins Loom_Tensor:$lhs, Loom_Tensor:$rhs);
  let results = (outs Loom_BoolTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(::mlir::MLIRContext *,
        std::optional<::mlir::Location> loc, Adaptor adaptor,
        ::llvm::SmallVectorImpl<::mlir::Type> &types) {
      return ::mlir::loom::detail::inferBroadcast(loc, adaptor.getOperands(),
                                                  /*boolResult=*/true, types);
    }
  }];
}

def Loom_EqualOp : Loom_CompareOp<"equal"> {
  let hasFolder = 1;
}
def Loom_LessOp : Loom_CompareOp<"less">;
def Loom_LessEqualOp : Loom_CompareOp<"less_equal">;
def Loom_GreaterOp : Loom_CompareOp<"greater">;
def Loom_GreaterEqualOp : Loom_CompareOp<"greater_equal">;

def Loom_WhereOp : Loom_Op<"where", [Pure, InferTypeOpAdaptor]> {
  let summary = "selects `lhs` where `condition` holds, else `rhs` (broadcasting)";
  let arguments = (ins Loom_BoolTensor:$condition, Loom_Tensor:$lhs,
                       Loom_Tensor:$rhs);
  let results = (outs Loom_Tensor:$result);
  let assemblyFormat = "$condition `,` $lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Contractions, convolution and pooling
//===----------------------------------------------------------------------===//

def Loom_MatmulOp : Loom_Op<"matmul", [Pure, InferTypeOpAdaptorWithIsCompatible],
                             ["getFlops"]> {
  let summary = "batched matrix product";
  let description = [{
    Multiplies the last two dimensions of `lhs` (`[..., M, K]`, or `[..., K, M]`
    with `transpose_lhs`) and `rhs` (`[..., K, N]`, or `[..., N, K]` with
    `transpose_rhs`); leading batch dimensions broadcast as in numpy. Both
    operands have rank 2 or more and the same element type, which the result
    has too; bf16 and f16 products may instead return their f32 accumulator
    (mixed precision, `loom-autocast`).
    ```mlir
    %y = loom.matmul %x, %w {transpose_rhs} : (tensor<8x64xf32>, tensor<32x64xf32>) -> tensor<8x32xf32>
    ```
  }];
  let arguments = (ins Loom_Tensor:$lhs, Loom_Tensor:$rhs,
                       UnitAttr:$transpose_lhs, UnitAttr:$transpose_rhs);
  let results = (outs Loom_Tensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
  let hasCanonicalizer = 1;
}

def Loom_ConvOp : Loom_Op<"conv", [Pure, InferTypeOpAdaptorWithIsCompatible],
                           ["getFlops"]> {
  let summary = "N-d grouped convolution in NC[D]HW layout";
  let description = [{
    `input` is `[N, C, spatial...]`, `filter` `[F, C / groups, kernel...]`,
    the optional `bias` `[F]`. `pads` holds the begin pads of every spatial
    dimension, then the end pads (ONNX's order). Output size per dimension is
    `(in + pad_begin + pad_end - dilation * (k - 1) - 1) / stride + 1`.
    The result and the bias have the input's element type; a bf16 or f16
    convolution without bias may instead return its f32 accumulator.
  }];
  let arguments = (ins Loom_FloatTensor:$input, Loom_FloatTensor:$filter,
                       Optional<Loom_FloatTensor>:$bias,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                       DenseI64ArrayAttr:$dilations,
                       DefaultValuedAttr<I64Attr, "1">:$groups);
  let results = (outs Loom_FloatTensor:$result);
  let assemblyFormat = "$input `,` $filter (`,` $bias^)? attr-dict `:` functional-type(operands, results)";
}

class Loom_PoolOp<string mnemonic, Type type>
    : Loom_Op<mnemonic, [Pure, InferTypeOpAdaptor], ["getFlops"]> {
  let arguments = (ins type:$input,
                       DenseI64ArrayAttr:$kernel_shape, DenseI64ArrayAttr:$strides,
                       DenseI64ArrayAttr:$pads, DenseI64ArrayAttr:$dilations,
                       UnitAttr:$ceil_mode, UnitAttr:$count_include_pad);
  let results = (outs type:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(::mlir::MLIRContext *,
        std::optional<::mlir::Location> loc, Adaptor adaptor,
        ::llvm::SmallVectorImpl<::mlir::Type> &types) {
      return ::mlir::loom::detail::inferPool(loc, adaptor.getInput(),
          adaptor.getKernelShape(), adaptor.getStrides(), adaptor.getPads(),
          adaptor.getDilations(), adaptor.getCeilMode(), types);
    }
    int64_t $cppClass::getFlops() {
      int64_t window = 1;
      for (int64_t k : getKernelShape())
        window *= k;
      return ::mlir::loom::detail::defaultFlops(getOperation()) * window;
    }
  }];
}

def Loom_MaxPoolOp : Loom_PoolOp<"max_pool", Loom_Tensor> {
  let summary = "N-d max pooling in NC[D]HW layout";
  let description = [{
    Window maximum; padded positions never win. `pads` is ordered as in
    `loom.conv`; `ceil_mode` rounds the output size up. `count_include_pad`
    has no meaning here and must be absent.
  }];
}

def Loom_AvgPoolOp : Loom_PoolOp<"avg_pool", Loom_FloatTensor> {
  let summary = "N-d average pooling in NC[D]HW layout";
  let description = [{
    Window mean; with `count_include_pad` padded positions count in the
    divisor, otherwise only positions inside the input do.
  }];
}

//===----------------------------------------------------------------------===//
// Reductions and normalizations
//===----------------------------------------------------------------------===//

class Loom_ReduceOp<string mnemonic>
    : Loom_Op<mnemonic, [Pure, InferTypeOpAdaptor], ["getFlops"]> {
  let summary = mnemonic # " over `axes` (all axes when empty)";
  let arguments = (ins Loom_Tensor:$input, DenseI64ArrayAttr:$axes,
                       UnitAttr:$keepdims);
  let results = (outs Loom_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(::mlir::MLIRContext *,
        std::optional<::mlir::Location> loc, Adaptor adaptor,
        ::llvm::SmallVectorImpl<::mlir::Type> &types) {
      return ::mlir::loom::detail::inferReduce(loc, adaptor.getInput(),
          adaptor.getAxes(), adaptor.getKeepdims(), ::mlir::Type(), types);
    }
    int64_t $cppClass::getFlops() {
      return ::mlir::loom::detail::numElements(getInput().getType());
    }
  }];
}

def Loom_ReduceSumOp : Loom_ReduceOp<"reduce_sum">;
def Loom_ReduceMeanOp : Loom_ReduceOp<"reduce_mean">;
def Loom_ReduceMaxOp : Loom_ReduceOp<"reduce_max">;
def Loom_ReduceMinOp : Loom_ReduceOp<"reduce_min">;
def Loom_ReduceProdOp : Loom_ReduceOp<"reduce_prod">;

class Loom_ArgReduceOp<string mnemonic>
    : Loom_Op<mnemonic, [Pure, InferTypeOpAdaptor], ["getFlops"]> {
  let summary = "index of the " # mnemonic # " along `axis`, as i64";
  let description = [{
    Ties go to the first index, or the last with `select_last_index`.
  }];
  let arguments = (ins Loom_Tensor:$input, I64Attr:$axis, UnitAttr:$keepdims,
                       UnitAttr:$select_last_index);
  let results = (outs RankedTensorOf<[I64]>:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(::mlir::MLIRContext *ctx,
        std::optional<::mlir::Location> loc, Adaptor adaptor,
        ::llvm::SmallVectorImpl<::mlir::Type> &types) {
      int64_t axis = adaptor.getAxis();
      return ::mlir::loom::detail::inferReduce(loc, adaptor.getInput(),
          ::llvm::ArrayRef<int64_t>(axis), adaptor.getKeepdims(),
          ::mlir::IntegerType::get(ctx, 64), types);
    }
    int64_t $cppClass::getFlops() {
      return ::mlir::loom::detail::numElements(getInput().getType());
    }
  }];
}

def Loom_ArgMaxOp : Loom_ArgReduceOp<"argmax">;
def Loom_ArgMinOp : Loom_ArgReduceOp<"argmin">;

class Loom_SoftmaxBase<string mnemonic>
    : Loom_Op<mnemonic, [Pure, SameOperandsAndResultType], ["getFlops"]> {
  let arguments = (ins Loom_FloatTensor:$input, I64Attr:$axis);
  let results = (outs Loom_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::verify() {
      return ::mlir::loom::detail::verifyAxis(getOperation(), getAxis(),
          getInput().getType().getRank());
    }
    int64_t $cppClass::getFlops() {
      return 5 * ::mlir::loom::detail::defaultFlops(getOperation());
    }
  }];
}

def Loom_SoftmaxOp : Loom_SoftmaxBase<"softmax"> {
  let summary = "softmax along `axis`";
}
def Loom_LogSoftmaxOp : Loom_SoftmaxBase<"log_softmax"> {
  let summary = "log of softmax along `axis`, computed stably";
}

def Loom_LayerNormOp : Loom_Op<"layer_norm", [Pure, InferTypeOpAdaptor],
                               ["getFlops"]> {
  let summary = "layer normalization over the dimensions from `axis` on";
  let description = [{
    `y = (x - mean) * inv_std_dev * scale + bias` where mean and variance are
    taken over dimensions `axis..rank-1` and `inv_std_dev = 1/sqrt(var + epsilon)`.
    `scale` and `bias` broadcast to those dimensions. `mean` and `inv_std_dev`
    have the input's shape with the normalized dimensions set to 1 (what the
    gradient needs).
  }];
  let arguments = (ins Loom_FloatTensor:$input, Loom_FloatTensor:$scale,
                       Optional<Loom_FloatTensor>:$bias, I64Attr:$axis,
                       F64Attr:$epsilon);
  let results = (outs Loom_FloatTensor:$result, Loom_FloatTensor:$mean,
                      Loom_FloatTensor:$inv_std_dev);
  let assemblyFormat = "$input `,` $scale (`,` $bias^)? attr-dict `:` functional-type(operands, results)";
}

def Loom_BatchNormOp : Loom_Op<"batch_norm", [Pure, InferTypeOpAdaptor], ["getFlops"]> {
  let summary = "batch normalization with given statistics (inference form)";
  let description = [{
    `y = (x - mean) / sqrt(var + epsilon) * scale + bias` over channel
    dimension 1; `scale`, `bias`, `mean`, `var` are `[C]`.
  }];
  let arguments = (ins Loom_FloatTensor:$input, Loom_FloatTensor:$scale,
                       Loom_FloatTensor:$bias, Loom_FloatTensor:$mean,
                       Loom_FloatTensor:$var, F64Attr:$epsilon);
  let results = (outs Loom_FloatTensor:$result);
  let assemblyFormat = "$input `,` $scale `,` $bias `,` $mean `,` $var attr-dict `:` functional-type(operands, results)";
}

def Loom_BatchNormTrainOp : Loom_Op<"batch_norm_train",
    [Pure, InferTypeOpAdaptor], ["getFlops"]> {
  let summary = "batch normalization with batch statistics (training form)";
  let description = [{
    Normalizes with the mean and biased variance of the batch (all dimensions
    but 1) and updates the running statistics as ONNX and PyTorch do:
    `running = running * momentum + batch * (1 - momentum)`, where the running
    variance takes the unbiased batch variance (as PyTorch). Results: `y`, the
    new running mean and variance, and the batch mean and inverse standard
    deviation that the gradient needs.
  }];
  let arguments = (ins Loom_FloatTensor:$input, Loom_FloatTensor:$scale,
                       Loom_FloatTensor:$bias, Loom_FloatTensor:$running_mean,
                       Loom_FloatTensor:$running_var, F64Attr:$epsilon,
                       F64Attr:$momentum);
  let results = (outs Loom_FloatTensor:$result, Loom_FloatTensor:$new_running_mean,
                      Loom_FloatTensor:$new_running_var,
                      Loom_FloatTensor:$saved_mean,
                      Loom_FloatTensor:$saved_inv_std);
  let assemblyFormat = "$input `,` $scale `,` $bias `,` $running_mean `,` $running_var attr-dict `:` functional-type(operands, results)";
}

//===----------------------------------------------------------------------===//
// Shape and data movement
//===----------------------------------------------------------------------===//

def Loom_ReshapeOp : Loom_Op<"reshape", [Pure], ["getFlops", "getBytesRead",
                                                 "getBytesWritten"]> {
  let summary = "reinterprets the elements with the result's static shape";
  let arguments = (ins Loom_Tensor:$input);
  let results = (outs Loom_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

def Loom_TransposeOp : Loom_Op<"transpose", [Pure, InferTypeOpAdaptor],
                               ["getFlops"]> {
  let summary = "permutes dimensions: result dim i is input dim perm[i]";
  let arguments = (ins Loom_Tensor:$input, DenseI64ArrayAttr:$perm);
  let results = (outs Loom_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

def Loom_ExpandOp : Loom_Op<"expand", [Pure], ["getFlops"]> {
  let summary = "broadcasts the input to the result's shape";
  let description = [{
    Numpy broadcasting from `input` to the result type, whose shape must be the
    broadcast of the input's shape with itself (as ONNX's Expand with a
    static shape operand).
  }];
  let arguments = (ins Loom_Tensor:$input);
  let results = (outs Loom_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Loom_ConcatOp : Loom_Op<"concat", [Pure, InferTypeOpAdaptor], ["getFlops"]> {
  let summary = "joins tensors along `axis`";
  let arguments = (ins Variadic<Loom_Tensor>:$inputs, I64Attr:$axis);
  let results = (outs Loom_Tensor:$result);
  let assemblyFormat = "$inputs attr-dict `:` functional-type(operands, results)";
  let hasFolder = 1;
}

def Loom_SplitOp : Loom_Op<"split", [Pure, InferTypeOpAdaptor], ["getFlops"]> {
  let summary = "cuts a tensor along `axis` into pieces of `sizes`";
  let arguments = (ins Loom_Tensor:$input, I64Attr:$axis, DenseI64ArrayAttr:$sizes);
  let results = (outs Variadic<Loom_Tensor>:$results);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
}

def Loom_SliceOp : Loom_Op<"slice", [Pure, InferTypeOpAdaptor], ["getFlops"]> {
  let summary = "strided slice with one (start, limit, step) per dimension";
  let description = [{
    Starts and limits are already clamped and non-negative as ONNX's Slice
    normalizes them; a negative step walks backwards from `start` down to,
    but excluding, `limit` (which may then be -1).
  }];
  let arguments = (ins Loom_Tensor:$input, DenseI64ArrayAttr:$starts,
                       DenseI64ArrayAttr:$limits, DenseI64ArrayAttr:$steps);
  let results = (outs Loom_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasFolder = 1;
}

def Loom_PadOp : Loom_Op<"pad", [Pure, InferTypeOpAdaptor], ["getFlops"]> {
  let summary = "pads every dimension by `low` and `high` amounts";
  let description = [{
    With mode `constant` the border holds `value`; `reflect` mirrors without
    repeating the edge and `edge` repeats it. Negative amounts crop.
  }];
  let arguments = (ins Loom_Tensor:$input, DenseI64ArrayAttr:$low,
                       DenseI64ArrayAttr:$high, Loom_PadMode:$mode,
                       DefaultValuedAttr<F64Attr, "0.0">:$value);
  let results = (outs Loom_Tensor:$result);
  let assemblyFormat = "$input $mode attr-dict `:` type($input) `->` type($result)";
}

def Loom_TileOp : Loom_Op<"tile", [Pure, InferTypeOpAdaptor], ["getFlops"]> {
  let summary = "repeats the input `repeats[i]` times along dimension i";
  let arguments = (ins Loom_Tensor:$input, DenseI64ArrayAttr:$repeats);
  let results = (outs Loom_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
}

def Loom_GatherOp : Loom_Op<"gather", [Pure, InferTypeOpAdaptor], ["getFlops"]> {
  let summary = "takes slices of `input` along `axis` at `indices` (ONNX Gather)";
  let description = [{
    The result shape is `input.shape[:axis] + indices.shape + input.shape[axis+1:]`.
    Negative indices count from the end. An embedding lookup is a gather on
    axis 0.
  }];
  let arguments = (ins Loom_Tensor:$input, Loom_IntTensor:$indices, I64Attr:$axis);
  let results = (outs Loom_Tensor:$result);
  let assemblyFormat = "$input `,` $indices attr-dict `:` functional-type(operands, results)";
  let hasFolder = 1;
}

def Loom_GatherElementsOp : Loom_Op<"gather_elements", [Pure, InferTypeOpAdaptor],
                                    ["getFlops"]> {
  let summary = "elementwise gather along `axis`; result has the indices' shape";
  let arguments = (ins Loom_Tensor:$input, Loom_IntTensor:$indices, I64Attr:$axis);
  let results = (outs Loom_Tensor:$result);
  let assemblyFormat = "$input `,` $indices attr-dict `:` functional-type(operands, results)";
}

def Loom_ScatterElementsOp : Loom_Op<"scatter_elements",
    [Pure, InferTypeOpAdaptor], ["getFlops"]> {
  let summary = "writes `updates` into a copy of `input` at `indices` along `axis`";
  let arguments = (ins Loom_Tensor:$input, Loom_IntTensor:$indices,
                       Loom_Tensor:$updates, I64Attr:$axis,
                       Loom_ScatterReduction:$reduction);
  let results = (outs Loom_Tensor:$result);
  let assemblyFormat = "$input `,` $indices `,` $updates $reduction attr-dict `:` functional-type(operands, results)";
}

def Loom_TopKOp : Loom_Op<"top_k", [Pure, InferTypeOpAdaptor], ["getFlops"]> {
  let summary = "the `k` largest (or smallest) entries along `axis` and their indices";
  let description = [{
    Values are sorted (descending for `largest`, else ascending); ties keep
    the lower index first, as ONNX's TopK.
  }];
  let arguments = (ins Loom_Tensor:$input, I64Attr:$k, I64Attr:$axis,
                       UnitAttr:$largest);
  let results = (outs Loom_Tensor:$values, RankedTensorOf<[I64]>:$indices);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
}

def Loom_OneHotOp : Loom_Op<"one_hot", [Pure, InferTypeOpAdaptor], ["getFlops"]> {
  let summary = "one-hot encoding with `depth` classes inserted at `axis`";
  let description = [{
    `values` is `[off_value, on_value]`. Negative indices count from `depth`;
    indices outside `[-depth, depth)` give an all-off row.
  }];
  let arguments = (ins Loom_IntTensor:$indices, Loom_Tensor:$values,
                       I64Attr:$depth, I64Attr:$axis);
  let results = (outs Loom_Tensor:$result);
  let assemblyFormat = "$indices `,` $values attr-dict `:` functional-type(operands, results)";
}

def Loom_CumSumOp : Loom_Op<"cumsum", [Pure, SameOperandsAndResultType]> {
  let summary = "cumulative sum along `axis`";
  let arguments = (ins Loom_Tensor:$input, I64Attr:$axis, UnitAttr:$exclusive,
                       UnitAttr:$reverse);
  let results = (outs Loom_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Loom_TriluOp : Loom_Op<"trilu", [Pure, SameOperandsAndResultType], ["getFlops"]> {
  let summary = "keeps the upper (or lower) triangle of the last two dimensions";
  let description = [{
    With `upper`, keeps entries with `j - i >= k`, else those with `j - i <= k`;
    the rest become zero.
  }];
  let arguments = (ins Loom_Tensor:$input, I64Attr:$k, UnitAttr:$upper);
  let results = (outs Loom_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Loom_DropoutOp : Loom_Op<"dropout", [InferTypeOpAdaptor,
                                         AttrSizedOperandSegments]> {
  let summary = "zeroes entries with probability `ratio` and scales the rest";
  let description = [{
    Keeps each entry with probability `1 - ratio` and scales kept ones by
    `1 / (1 - ratio)`; `mask` says which were kept. With ratio 0 it is the
    identity.

    The mask is a pure function of `seed`, the optional `offset` (a rank-0
    i64 tensor, 0 when absent) and each entry's row-major index `i`, so that
    the backward pass regenerates the forward's mask and a resumed run draws
    the masks an uninterrupted one would. With `mix` the 64-bit finalizer of
    SplitMix64 (`z ^= z >> 30; z *= 0xBF58476D1CE4E5B9; z ^= z >> 27;
    z *= 0x94D049BB133111EB; z ^= z >> 31`), all arithmetic modulo 2^64:

        key = mix(seed + mix(offset + 0x9E3779B97F4A7C15))
        r_i = mix(key + (i + 1) * 0x9E3779B97F4A7C15)
        keep_i = (r_i >> 40) >= ceil(ratio * 2^24)

    `loom-build-train-step` passes the step counter as `offset`, so every
    step draws a fresh mask, and gives each dropout of the model its own
    `seed`. The op is not Pure, so that two dropouts of one tensor stay two
    draws until then.

    On one device's block of a split tensor (`loom-partition`), `i` is the
    entry's index in the whole tensor: `whole_shape` gives the whole
    tensor's shape and `index_base` (a rank-0 i64 tensor) the whole index of
    the block's first entry, so `i = index_base + sum_d idx_d * stride_d`
    with the whole tensor's row-major strides, and every device draws the
    masks one process would.
    ```mlir
    %y, %m = loom.dropout %x offset %step index_base %base {ratio = 0.1, whole_shape = array<i64: 8, 64>} : (tensor<8x32xf32>, tensor<i64>, tensor<i64>) -> (tensor<8x32xf32>, tensor<8x32xi1>)
    ```
  }];
  let arguments = (ins Loom_FloatTensor:$input,
                       Optional<0DTensorOf<[I64]>>:$offset,
                       Optional<0DTensorOf<[I64]>>:$index_base, F64Attr:$ratio,
                       DefaultValuedAttr<I64Attr, "0">:$seed,
                       OptionalAttr<DenseI64ArrayAttr>:$whole_shape);
  let results = (outs Loom_FloatTensor:$result, Loom_BoolTensor:$mask);
  let assemblyFormat = [{
    $input (`offset` $offset^)? (`index_base` $index_base^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Recurrent layers
//===----------------------------------------------------------------------===//

def Loom_LstmOp : Loom_Op<"lstm", [Pure, InferTypeOpAdaptor,
                                   AttrSizedOperandSegments], ["getFlops"]> {
  let summary = "an LSTM layer over a sequence (ONNX LSTM, layout 0)";
  let description = [{
    `input` is `[seq, batch, in]`; `w` `[dirs, 4H, in]`, `r` `[dirs, 4H, H]`,
    `b` `[dirs, 8H]`, gates in ONNX's i, o, f, c order with sigmoid/tanh
    activations. Results: all hidden states `[seq, dirs, batch, H]`, the last
    hidden state and the last cell state `[dirs, batch, H]`.
  }];
  let arguments = (ins Loom_FloatTensor:$input, Loom_FloatTensor:$w,
                       Loom_FloatTensor:$r, Optional<Loom_FloatTensor>:$b,
                       Optional<Loom_FloatTensor>:$initial_h,
                       Optional<Loom_FloatTensor>:$initial_c,
                       I64Attr:$hidden_size, Loom_RnnDirection:$direction);
  let results = (outs Loom_FloatTensor:$y, Loom_FloatTensor:$y_h,
                      Loom_FloatTensor:$y_c);
  let assemblyFormat = [{
    $direction $input `,` $w `,` $r (`bias` $b^)? (`initial_h` $initial_h^)?
    (`initial_c` $initial_c^)? attr-dict `:` functional-type(operands, results)
  }];
}

def Loom_GruOp : Loom_Op<"gru", [Pure, InferTypeOpAdaptor,
                                 AttrSizedOperandSegments], ["getFlops"]> {
  let summary = "a GRU layer over a sequence (ONNX GRU, layout 0)";
  let description = [{
    `input` is `[seq, batch, in]`; `w` `[dirs, 3H, in]`, `r` `[dirs, 3H, H]`,
    `b` `[dirs, 6H]`, gates in ONNX's z, r, h order. `linear_before_reset`
    applies the reset gate after the recurrent product (PyTorch's form).
    Results: all hidden states `[seq, dirs, batch, H]` and the last one.
  }];
  let arguments = (ins Loom_FloatTensor:$input, Loom_FloatTensor:$w,
                       Loom_FloatTensor:$r, Optional<Loom_FloatTensor>:$b,
                       Optional<Loom_FloatTensor>:$initial_h,
                       I64Attr:$hidden_size, Loom_RnnDirection:$direction,
                       UnitAttr:$linear_before_reset);
  let results = (outs Loom_FloatTensor:$y, Loom_FloatTensor:$y_h);
  let assemblyFormat = [{
    $direction $input `,` $w `,` $r (`bias` $b^)? (`initial_h` $initial_h^)?
    attr-dict `:` functional-type(operands, results)
  }];
}

//===----------------------------------------------------------------------===//
// Mixture of experts
//===----------------------------------------------------------------------===//

def Loom_MoeOp : Loom_Op<"moe", [Pure, AttrSizedOperandSegments,
                                 InferTypeOpAdaptor],
                         ["getFlops"]> {
  let summary = "a mixture-of-experts feed-forward layer (router, experts, combine)";
  let description = [{
    `input` is `[N, D]` (N tokens), `router_logits` `[N, E]` (E experts);
    expert `e` computes `fc2[e] · act(fc1[e] · x + b1[e]) + b2[e]`, with
    `fc1_weight` `[E, H, D]`, `fc2_weight` `[E, D, H]` (ONNX Runtime's
    `com.microsoft.MoE` layout: each expert's weight is a `[out, in]` matrix);
    with `fc3_weight` `[E, H, D]` the activation is gated,
    `act(fc1 x + b1) * (fc3 x + b3)` (Mixtral's SwiGLU with `silu`). The
    router probabilities are `softmax(router_logits)` over experts.

    `routing` chooses which experts see which tokens:
    * `top_k`: each token goes to its `k` most probable experts, weighted by
      their probabilities (renormalized over the `k` with `normalize`); no
      token is dropped. This is the model's own routing (ONNX Runtime's).
    * `token_choice` (GShard, Switch): as `top_k`, but each expert takes at
      most `ceil(capacity_factor * k * N / E)` tokens, first choices before
      second ones, in token order; assignments over capacity are dropped (the
      layer outputs zero for them; the model's residual carries the token).
    * `expert_choice` (Zhou et al., 2022): each expert takes the
      `ceil(capacity_factor * N / E)` tokens with the highest probability for
      it, weighted by that probability; a token may go to any number of
      experts. `k` is not used.

    With `groups` = G > 1 the capacity routings route each of G contiguous
    groups of N / G tokens on its own (GShard's groups): the capacity is
    that of a group's tokens, token choice counts positions within the
    group, and expert choice takes each expert's top tokens of the group.
    Expert parallelism with G equal to the ranks the batch is split over
    routes every rank's tokens where they are and moves only each rank's
    expert buffers (all-to-all); with G = 1 the routing is the whole
    batch's.

    `aux_loss` and `z_loss` are coefficients of Switch's load-balancing loss
    (`E * sum_e f_e * P_e`, `f_e` the share of top-k assignments to expert e,
    `P_e` its mean probability) and of the router z-loss (mean over tokens of
    `logsumexp(logits)^2`); the training step adds them to its loss. The op
    is differentiated, lowered and partitioned through its expansion into
    softmax, top_k, one_hot dispatch and combine products and batched expert
    products (`expandMoe`).
    ```mlir
    %y = loom.moe token_choice relu %x, %logits experts(%w1, %w2) {k = 2 : i64, capacity_factor = 1.25}
        : (tensor<64x16xf32>, tensor<64x4xf32>, tensor<4x32x16xf32>, tensor<4x16x32xf32>) -> tensor<64x16xf32>
    ```
  }];
  let arguments = (ins Loom_FloatTensor:$input, Loom_FloatTensor:$router_logits,
                       Loom_FloatTensor:$fc1_weight,
                       Loom_FloatTensor:$fc2_weight,
                       Optional<Loom_FloatTensor>:$fc1_bias,
                       Optional<Loom_FloatTensor>:$fc2_bias,
                       Optional<Loom_FloatTensor>:$fc3_weight,
                       Optional<Loom_FloatTensor>:$fc3_bias,
                       Loom_MoeRouting:$routing, Loom_MoeActivation:$activation,
                       I64Attr:$k, UnitAttr:$normalize,
                       DefaultValuedAttr<F64Attr, "0.0">:$capacity_factor,
                       DefaultValuedAttr<F64Attr, "0.0">:$aux_loss,
                       DefaultValuedAttr<F64Attr, "0.0">:$z_loss,
                       DefaultValuedAttr<I64Attr, "1">:$groups);
  let results = (outs Loom_FloatTensor:$result);
  let assemblyFormat = [{
    $routing $activation $input `,` $router_logits
    `experts` `(` $fc1_weight `,` $fc2_weight `)`
    (`fc1_bias` $fc1_bias^)? (`fc2_bias` $fc2_bias^)?
    (`fc3` $fc3_weight^)? (`fc3_bias` $fc3_bias^)?
    attr-dict `:` functional-type(operands, results)
  }];
  let extraClassDeclaration = [{
    int64_t getNumTokens() { return getInput().getType().getDimSize(0); }
    int64_t getNumExperts() {
      return getRouterLogits().getType().getDimSize(1);
    }
    int64_t getHiddenSize() { return getFc1Weight().getType().getDimSize(1); }
    /// Slots per expert (in each group): every token for `top_k`, else the
    /// capacity of a group's tokens.
    int64_t getCapacity();
    double getCapacityFactorValue() {
      return getCapacityFactor().convertToDouble();
    }
    double getAuxLossValue() { return getAuxLoss().convertToDouble(); }
    double getZLossValue() { return getZLoss().convertToDouble(); }
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

def Loom_SoftmaxCrossEntropyOp : Loom_Op<"softmax_cross_entropy",
    [Pure, InferTypeOpAdaptor], ["getFlops"]> {
  let summary = "cross-entropy of softmax(scores) against integer labels";
  let description = [{
    `scores` is `[N, C, d...]`, `labels` `[N, d...]`, optional `weight` `[C]`.
    Labels equal to `ignore_index` contribute nothing (and, with `mean`, do
    not count in the divisor). Results: the loss (scalar unless reduction is
    `none`, then `[N, d...]`) and the log-probabilities `[N, C, d...]`.
  }];
  let arguments = (ins Loom_FloatTensor:$scores, Loom_IntTensor:$labels,
                       Optional<Loom_FloatTensor>:$weight,
                       Loom_LossReduction:$reduction,
                       OptionalAttr<I64Attr>:$ignore_index);
  let results = (outs Loom_FloatTensor:$loss, Loom_FloatTensor:$log_prob);
  let assemblyFormat = "$reduction $scores `,` $labels (`,` $weight^)? attr-dict `:` functional-type(operands, results)";
}

def Loom_NllLossOp : Loom_Op<"nll_loss", [Pure, InferTypeOpAdaptor], ["getFlops"]> {
  let summary = "negative log-likelihood of log-probabilities at integer targets";
  let description = [{
    `input` is `[N, C, d...]`, `target` `[N, d...]`, optional `weight` `[C]`;
    reduction and `ignore_index` as in `loom.softmax_cross_entropy`.
  }];
  let arguments = (ins Loom_FloatTensor:$input, Loom_IntTensor:$target,
                       Optional<Loom_FloatTensor>:$weight,
                       Loom_LossReduction:$reduction,
                       OptionalAttr<I64Attr>:$ignore_index);
  let results = (outs Loom_FloatTensor:$loss);
  let assemblyFormat = "$reduction $input `,` $target (`,` $weight^)? attr-dict `:` functional-type(operands, results)";
}

//===----------------------------------------------------------------------===//
// Mesh, sharding and collectives
//===----------------------------------------------------------------------===//

def Loom_MeshOp : Loom_Op<"mesh", [Symbol]> {
  let summary = "declares a named device mesh";
  let description = [{
    ```mlir
    loom.mesh @mesh = <dp = 2, tp = 2>
    ```
    Shardings and collectives name it by symbol.
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, Loom_MeshAttr:$mesh);
  let assemblyFormat = "$sym_name `=` $mesh attr-dict";
}

def Loom_ShardOp : Loom_Op<"shard", [Pure, SameOperandsAndResultType,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>], ["getFlops", "getBytesRead",
                                                        "getBytesWritten"]> {
  let summary = "annotates a value with a sharding";
  let description = [{
    The result is the operand, constrained to be laid out as `sharding` says.
    Propagation starts from these annotations; partitioning removes them.
  }];
  let arguments = (ins Loom_Tensor:$input, Loom_ShardingAttr:$sharding);
  let results = (outs Loom_Tensor:$result);
  let assemblyFormat = "$input `to` $sharding attr-dict `:` type($input)";
}

def Loom_OptimizationBarrierOp : Loom_Op<"optimization_barrier",
    [SameOperandsAndResultType], ["getFlops", "getBytesRead",
                                  "getBytesWritten"]> {
  let summary = "the operand, as a value no pass may merge computations across";
  let description = [{
    The result is the operand. The op is not pure, so common-subexpression
    elimination keeps it, and computations that read its result stay
    distinct from the same computations on the operand: `loom-remat`
    recomputes forward activations in the backward pass from barriers of
    the values it keeps, which CSE would otherwise fold back into the
    forward pass's results (as `stablehlo.optimization_barrier`). It is
    sharded like its operand and bufferizes to the operand's buffer: no
    copy, no code.
    ```mlir
    %k = loom.optimization_barrier %h : tensor<4x16x32xf32>
    ```
  }];
  let arguments = (ins Loom_Tensor:$input);
  let results = (outs Loom_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

class Loom_CollectiveOp<string mnemonic, list<Trait> traits = [],
                        list<string> cost = []>
    : Loom_Op<mnemonic, !listconcat(traits,
        [DeclareOpInterfaceMethods<SymbolUserOpInterface>]), cost> {
}

def Loom_AllReduceOp : Loom_CollectiveOp<"all_reduce", [SameOperandsAndResultType]> {
  let summary = "combines the values of every device in the groups along `mesh_axes`";
  let arguments = (ins Loom_Tensor:$input, FlatSymbolRefAttr:$mesh,
                       StrArrayAttr:$mesh_axes, Loom_ReductionKind:$reduction);
  let results = (outs Loom_Tensor:$result);
  let assemblyFormat = "$reduction $input `on` $mesh $mesh_axes attr-dict `:` type($input)";
}

def Loom_AllReduceStartOp : Loom_CollectiveOp<"all_reduce_start",
                                               [SameOperandsAndResultType]> {
  let summary = "starts an all_reduce that completes at its loom.wait";
  let description = [{
    The asynchronous form of `loom.all_reduce`, for overlapping gradient
    communication with the rest of the backward pass: the result is in
    flight and may only be used by one `loom.wait`, which yields the reduced
    value. Ranks run collectives in the order they start them.
    ```mlir
    %f = loom.all_reduce_start sum %g on @mesh ["dp"] : tensor<1024xf32>
    ...
    %r = loom.wait %f : tensor<1024xf32>
    ```
  }];
  let arguments = (ins Loom_Tensor:$input, FlatSymbolRefAttr:$mesh,
                       StrArrayAttr:$mesh_axes, Loom_ReductionKind:$reduction);
  let results = (outs Loom_Tensor:$result);
  let assemblyFormat = "$reduction $input `on` $mesh $mesh_axes attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Loom_WaitOp : Loom_Op<"wait", [SameOperandsAndResultType]> {
  let summary = "the value of a started collective, once it has finished";
  let arguments = (ins Loom_Tensor:$input);
  let results = (outs Loom_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Loom_AllGatherOp : Loom_CollectiveOp<"all_gather"> {
  let summary = "concatenates the group's values along `gather_dim`";
  let arguments = (ins Loom_Tensor:$input, FlatSymbolRefAttr:$mesh,
                       StrArrayAttr:$mesh_axes, I64Attr:$gather_dim);
  let results = (outs Loom_Tensor:$result);
  let assemblyFormat = "$input `on` $mesh $mesh_axes attr-dict `:` type($input) `->` type($result)";
}

def Loom_ReduceScatterOp : Loom_CollectiveOp<"reduce_scatter"> {
  let summary = "combines the group's values and leaves each device one slice along `scatter_dim`";
  let arguments = (ins Loom_Tensor:$input, FlatSymbolRefAttr:$mesh,
                       StrArrayAttr:$mesh_axes, I64Attr:$scatter_dim,
                       Loom_ReductionKind:$reduction);
  let results = (outs Loom_Tensor:$result);
  let assemblyFormat = "$reduction $input `on` $mesh $mesh_axes attr-dict `:` type($input) `->` type($result)";
}

def Loom_LocalBlockOp : Loom_CollectiveOp<"local_block"> {
  let summary = "this device's block along `dim` of a value every device of the group holds whole";
  let description = [{
    The inverse of `all_gather`, without communication: of the group's equal
    blocks along `dim`, the result is the one whose index is this device's
    position in the group. Partitioning uses it where a replicated value must
    be split (ZeRO: the optimizer updates a slice of a replicated gradient).
    ```mlir
    %b = loom.local_block %g on @mesh ["dp"] {dim = 0 : i64} : tensor<64x32xf32> -> tensor<32x32xf32>
    ```
  }];
  let arguments = (ins Loom_Tensor:$input, FlatSymbolRefAttr:$mesh,
                       StrArrayAttr:$mesh_axes, I64Attr:$dim);
  let results = (outs Loom_Tensor:$result);
  let assemblyFormat = "$input `on` $mesh $mesh_axes attr-dict `:` type($input) `->` type($result)";
}

def Loom_BlockIndexOp : Loom_CollectiveOp<"block_index"> {
  let summary = "this device's block index along mesh axes";
  let description = [{
    The index of the block this device holds of a dimension split over
    `mesh_axes` (in the order listed, the first the major one), from 0 to the
    product of their sizes minus 1: what `loom.local_block` over the same
    axes takes. Partitioning uses it where a local op needs to know where
    its block lies (dropout on a split tensor draws the masks of the whole
    tensor's indices). No communication.
    ```mlir
    %i = loom.block_index on @mesh ["tp"] : tensor<i64>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$mesh, StrArrayAttr:$mesh_axes);
  let results = (outs 0DTensorOf<[I64]>:$result);
  let assemblyFormat = "`on` $mesh $mesh_axes attr-dict `:` type($result)";
}

def Loom_AllToAllOp : Loom_CollectiveOp<"all_to_all"> {
  let summary = "splits along `split_dim`, exchanges the pieces, joins along `concat_dim`";
  let arguments = (ins Loom_Tensor:$input, FlatSymbolRefAttr:$mesh,
                       StrArrayAttr:$mesh_axes, I64Attr:$split_dim,
                       I64Attr:$concat_dim);
  let results = (outs Loom_Tensor:$result);
  let assemblyFormat = "$input `on` $mesh $mesh_axes attr-dict `:` type($input) `->` type($result)";
}

def Loom_PipelineMarkOp : Loom_Op<"pipeline_mark", [], ["getFlops"]> {
  let summary = "marks where a pipeline schedule's action begins or ends";
  let description = [{
    `loom-pipeline` brackets each action of a stage's schedule (the forward,
    backward or weight-gradient pass of a microbatch, and the optimizer
    step) with a begin and an end mark. They lower to a call of libloomrt's
    `loom_rt_mark`, which records a timestamp when tracing is on (`loom-run
    train --trace`) and does nothing otherwise. `kind`: 0 forward, 1
    backward, 2 weight gradients, 3 optimizer.
    ```mlir
    loom.pipeline_mark begin forward 3
    ```
  }];
  let arguments = (ins I64Attr:$kind, I64Attr:$microbatch, UnitAttr:$end);
  let assemblyFormat = "attr-dict";
}

def Loom_SendOp : Loom_CollectiveOp<"send", [], ["getFlops"]> {
  let summary = "sends a value to the device `offset` steps along a mesh axis";
  let description = [{
    Pairs with a `loom.recv` of the same type, axis and `-offset` on the peer.
    Devices whose peer falls off the mesh send nothing.
  }];
  let arguments = (ins Loom_Tensor:$input, FlatSymbolRefAttr:$mesh,
                       StrArrayAttr:$mesh_axes, I64Attr:$offset);
  let assemblyFormat = "$input `on` $mesh $mesh_axes `offset` $offset attr-dict `:` type($input)";
}

def Loom_RecvOp : Loom_CollectiveOp<"recv", [], ["getFlops"]> {
  let summary = "receives a value from the device `offset` steps along a mesh axis";
  let arguments = (ins FlatSymbolRefAttr:$mesh, StrArrayAttr:$mesh_axes,
                       I64Attr:$offset);
  let results = (outs Loom_Tensor:$result);
  let assemblyFormat = "`on` $mesh $mesh_axes `offset` $offset attr-dict `:` type($result)";
}

#endif // LOOM_OPS
