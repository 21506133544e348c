//===- Passes.td - Loom's graph-level passes ---------------*- tablegen -*-===//
//
// Passes over loom-dialect functions: analyses and (in later stages)
// autodiff, sharding, pipelining, mixture of experts, precision and
// rematerialization.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_TRANSFORMS_PASSES
#define LOOM_TRANSFORMS_PASSES

include "mlir/Pass/PassBase.td"

def LoomCostReportPass : Pass<"loom-cost-report", "::mlir::ModuleOp"> {
  let summary = "prints per-op FLOPs and bytes from the cost interface";
  let description = [{
    Sums `CostOpInterface` over every loom op of every function and prints,
    for each op name, how many there are, their FLOPs and the bytes they read
    and write, then the totals. The IR is not changed.

    Input:
    ```mlir
    func.func @f(%a: tensor<8x16xf32>, %b: tensor<16x4xf32>) -> tensor<8x4xf32> {
      %0 = loom.matmul %a, %b : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
      return %0 : tensor<8x4xf32>
    }
    ```
    Output (on stdout):
    ```
    loom cost report
      op                            count          flops     bytes read  bytes written
      loom.matmul                       1           1024            768            128
      total                             1           1024            768            128
    ```
  }];
}

def LoomDifferentiatePass : Pass<"loom-differentiate", "::mlir::ModuleOp"> {
  let summary = "adds a gradient function next to each scalar-valued function";
  let description = [{
    For every public function `@f` whose only result is a floating-point
    scalar, adds a public `@f_grad` with the same arguments that returns the
    gradient of `@f` with respect to each floating-point argument (in order),
    built by reverse-mode autodiff through `GradientOpInterface`. Used to check
    gradients against finite differences; training uses
    `loom-build-train-step`, which shares the same autodiff.
  }];
}

def LoomBuildTrainStepPass : Pass<"loom-build-train-step", "::mlir::ModuleOp"> {
  let summary = "builds the training and evaluation steps from a forward function";
  let description = [{
    Turns the module's forward function (its single public function, or the
    one named by `entry`) into a pure training step

      `train_step(params, optimizer state, step, batch) ->
          (loss, params', optimizer state', step + 1)`

    and an `eval_step(params, batch) -> loss`:

    1. The loss is the forward function's scalar output named by
       `loss-output` (default: its only scalar floating-point output), or a
       loss attached to its first output by `loss`:
       `cross-entropy:LABELS` (mean softmax cross-entropy against a new
       integer input `LABELS` of the logits' shape without the class
       dimension) or `mse:TARGET` (mean squared error against a new input of
       the output's shape).
    2. Reverse-mode autodiff through `GradientOpInterface` gives the gradient
       of every floating-point parameter (`loom.param`) the loss depends on.
       Parameters it does not depend on are left alone.
    3. Gradients are optionally clipped to a global L2 norm (`clip-norm`, as
       `torch.nn.utils.clip_grad_norm_`).
    4. The optimizer updates each parameter with PyTorch's semantics: `sgd`
       (momentum, dampening 0, Nesterov, L2 weight decay), `adam` (L2 weight
       decay) or `adamw` (decoupled weight decay). Its state tensors are new
       arguments marked `loom.state` (zero-initialized); the step counter is
       the `int64` state `step`.
    5. The learning rate at step `s` (0-based) follows `schedule`: `constant`;
       `warmup` (linear from `lr/warmup-steps` up to `lr` over `warmup-steps`
       steps, then constant); `cosine` (the same warmup, then cosine decay to
       `min-lr` at `total-steps`).

    6. With `accumulate` = K > 1, each call is one micro-batch: its gradient
       is added to an accumulator (state `<param>.grad_accumulator`, counter
       `micro_step`), and every K-th call the optimizer steps with the mean of
       the K gradients (clipped as a whole) and the accumulators reset; the
       other calls leave parameters, optimizer state and `step` unchanged.
       With mean losses and equal micro-batches this is one step on their
       union.

    7. With `loss-scale=dynamic` (for fp16 training), torch.amp.GradScaler's
       dynamic loss scaling: the gradients are those of `loss * scale`,
       divided by the scale before clipping, accumulation or the optimizer
       see them. A step whose gradients hold an inf or NaN leaves the
       parameters and optimizer state unchanged (Adam's bias correction
       does not count it) and halves the scale; after
       `loss-scale-growth-interval` clean steps in a row the scale doubles.
       The scale is `loss-scale-init * 2^e`; `e`, the clean-step count and
       the count of skipped steps are optimizer state
       (`loss_scale.exponent`, `loss_scale.growth_tracker`,
       `loss_scale.skipped_steps`, starting at 0), so checkpoints carry
       them; the step's scale is the output `loss_scale`.

    Batch normalization in training mode also updates its running
    statistics (parameters without a gradient) each step.

    Results that replace a parameter or state tensor after the step carry
    `loom.update = "<name>"`; the runtime swaps them in.

    With `runtime-hyperparams`, the optimizer's and the schedule's
    hyperparameters are rank-0 f64 arguments of `train_step` marked
    `loom.hyperparam = "<name>"` with `loom.default` (the option's value),
    which the runtime sets before a step (the bundle's kind
    "hyperparameter", named `hparam.<name>`): one bundle serves every
    setting. The code is then the general one: SGD always keeps a momentum
    buffer, weight decay and clipping are always applied (0 turns them off),
    and the warmup and cosine schedules take their step counts as values.
    Quantities derived from hyperparameters (1 - beta1, 1 / warmup-steps,
    ...) are computed in f64 and rounded once to f32, as the compiled-in
    constants are, so equal settings give equal bits.
  }];
  let options = [
    Option<"entry", "entry", "std::string", "\"\"",
           "forward function (default: the only public one)">,
    Option<"lossOutput", "loss-output", "std::string", "\"\"",
           "name of the scalar output that is the loss">,
    Option<"loss", "loss", "std::string", "\"\"",
           "loss to attach: cross-entropy:LABELS or mse:TARGET">,
    Option<"optimizer", "optimizer", "std::string", "\"adamw\"",
           "sgd, adam or adamw">,
    Option<"lr", "lr", "double", "1e-3", "learning rate">,
    Option<"momentum", "momentum", "double", "0.0", "SGD momentum">,
    Option<"nesterov", "nesterov", "bool", "false", "Nesterov momentum (SGD)">,
    Option<"weightDecay", "weight-decay", "double", "-1",
           "weight decay (default 0 for sgd and adam, 0.01 for adamw)">,
    Option<"beta1", "beta1", "double", "0.9", "Adam beta1">,
    Option<"beta2", "beta2", "double", "0.999", "Adam beta2">,
    Option<"epsilon", "epsilon", "double", "1e-8", "Adam epsilon">,
    Option<"schedule", "schedule", "std::string", "\"constant\"",
           "learning-rate schedule: constant, warmup or cosine">,
    Option<"warmupSteps", "warmup-steps", "int64_t", "0",
           "linear warmup steps (warmup, cosine)">,
    Option<"totalSteps", "total-steps", "int64_t", "0",
           "steps until the cosine schedule reaches min-lr">,
    Option<"minLr", "min-lr", "double", "0.0", "final learning rate (cosine)">,
    Option<"clipNorm", "clip-norm", "double", "0.0",
           "clip gradients to this global L2 norm (0: off)">,
    Option<"accumulate", "accumulate", "int64_t", "1",
           "micro-batches whose gradients are summed per optimizer step">,
    Option<"lossScale", "loss-scale", "std::string", "\"none\"",
           "loss scaling: none or dynamic (for fp16)">,
    Option<"lossScaleInit", "loss-scale-init", "double", "65536.0",
           "the first dynamic loss scale">,
    Option<"lossScaleGrowthInterval", "loss-scale-growth-interval", "int64_t",
           "2000", "clean steps after which the dynamic loss scale doubles">,
    ListOption<"freeze", "freeze", "std::string",
               "GLOBs of parameters that keep their values: no gradient, no "
               "optimizer state">,
    Option<"runtimeHyperparams", "runtime-hyperparams", "bool", "false",
           "take lr, min-lr, warmup-steps, total-steps, weight-decay, "
           "clip-norm, momentum, beta1, beta2 and epsilon as arguments of "
           "train_step (their options become defaults)">,
  ];
}

def LoomShardInputsPass : Pass<"loom-shard-inputs", "::mlir::ModuleOp"> {
  let summary = "declares the device mesh and the shardings of the functions' arguments";
  let description = [{
    Adds `loom.mesh @mesh` with the axes of `mesh` and gives the arguments
    of the public functions their shardings, in this order of precedence:

    1. the user's (`shard`, one `NAME_GLOB=SPEC` each, `loomc --shard`):
       parameters (`loom.param`) and inputs (`loom.input`) whose name
       matches the glob take the per-dimension mesh axes of SPEC, e.g.
       `h.*.mlp.fc1.weight=[{tp}, {} ]`; the first matching pattern wins, and
       a pattern that matches nothing is an error;
    2. with `tp-plan=auto`, Megatron-LM's tensor-parallel layouts over
       `tp-axis` for the other parameters: column-parallel then row-parallel
       linear layers, attention split by heads, the biases of split features
       (every parameter argument gets `loom.tp_plan`, saying how it is split
       or why it stays replicated);
    3. every other data input split along dimension 0 over `data-axis` (when
       the mesh has that axis; with `tp=4` alone, inputs are replicated) and
       `expert-axis`;
    3b. with `expert-axis` in the mesh (expert parallelism), the stacked
       expert weights of mixture-of-experts layers (`loom.moe_expert`
       arguments) split along the experts over it, and the experts' rows
       pinned with `loom.shard`: dispatched `[E, C, D]` rows split along the
       experts over `expert-axis` and the slots over `data-axis`, their
       outputs gathered over `data-axis` only, tokens read by every expert
       (the model's own routing) gathered over `expert-axis`;
    4. with `sequence-parallel`, the output of every embedding lookup (a
       `loom.gather` on axis 0 of a parameter table at [batch, sequence]
       token ids from a data input) gets a `loom.shard` splitting it along
       the sequence over `tp-axis`: propagation then runs layer norms,
       dropout and residual adds on sequence shards, and partitioning
       gathers the sequence before a column-parallel layer and
       reduce-scatters it after a row-parallel one (Megatron-LM's sequence
       parallelism);
    5. optimizer state (`loom.state_of` a parameter) takes its parameter's
       sharding; with `zero` >= 1 the data axis is added to its dimension 0
       (after the parameter's own axes there), and with `zero` = 3 to the
       parameters', which are then gathered to the split they are used with
       at each use (`loom.gather_for_use`).

    A split that the mesh does not divide is an error naming the tensor.

    Input (`--loom-shard-inputs="mesh=dp=2,tp=2 shard=w=[{},{tp} ]"`):
    ```mlir
    func.func @train_step(%x: tensor<8x4xf32> {loom.input = "x"}, %w: tensor<4x2xf32> {loom.param = "w"}) ...
    ```
    Output:
    ```mlir
    loom.mesh @mesh = <dp = 2, tp = 2>
    func.func @train_step(%x: tensor<8x4xf32> {loom.input = "x", loom.sharding = #loom.sharding<@mesh, [{dp}, {} ]>},
                          %w: tensor<4x2xf32> {loom.param = "w", loom.sharding = #loom.sharding<@mesh, [{}, {tp} ]>}) ...
    ```
  }];
  let options = [
    Option<"meshShape", "mesh", "std::string", "\"dp=1\"",
           "mesh axes and sizes, e.g. dp=4 or dp=2,tp=2">,
    Option<"dataAxis", "data-axis", "std::string", "\"dp\"",
           "the mesh axis the batch is split over">,
    Option<"zero", "zero", "int64_t", "0",
           "ZeRO stage: 1 splits optimizer state over the data axis, 3 also "
           "parameters (gathered at each use); 2 is 1 plus loom-partition's "
           "reduce-scatter">,
    ListOption<"shard", "shard", "std::string",
               "NAME_GLOB=SPEC shardings of parameters and inputs, e.g. "
               "h.*.fc1.weight=[{tp},{}]">,
    Option<"tpPlan", "tp-plan", "std::string", "\"none\"",
           "none, or auto: Megatron's tensor-parallel layouts for the "
           "parameters --shard leaves">,
    Option<"tpAxis", "tp-axis", "std::string", "\"tp\"",
           "the mesh axis tensor parallelism splits over">,
    Option<"sequenceParallel", "sequence-parallel", "bool", "false",
           "also split the embedding lookups' outputs along the sequence "
           "over tp-axis, so the layers outside the tensor-parallel regions "
           "run on sequence shards">,
    Option<"expertAxis", "expert-axis", "std::string", "\"ep\"",
           "the mesh axis mixture-of-experts layers split their experts "
           "over (expert parallelism); the batch is split over it too">,
  ];
  let dependentDialects = ["::mlir::loom::LoomDialect"];
}

def LoomSplitFusedProjectionsPass
    : Pass<"loom-split-fused-projections", "::mlir::ModuleOp"> {
  let summary = "computes a fused projection (QKV) as one product per part, over a view of its weight";
  let description = [{
    A linear layer whose output is split into equal parts along its features
    (a transformer's fused query/key/value projection, `qkv(x).split(C)`)
    cannot be split by tensor parallelism as it is: each part must be split
    by heads, and the parts are interleaved in the weight's rows. This pass
    views the weight `[k*C, K]` as `[k, C, K]` (and a bias `[k*C]` as
    `[k, C]`; the same row-major data, so the parameter keeps its values,
    and `loom.logical_shape` keeps its ONNX shape for checkpoints) and
    computes each part with its own product over a slice of the view:

    ```mlir
    %y = loom.matmul %x, %w {transpose_rhs} : (tensor<4x32xf32>, tensor<96x32xf32>) -> tensor<4x96xf32>
    %z = loom.add %b, %y : (tensor<96xf32>, tensor<4x96xf32>) -> tensor<4x96xf32>
    %q, %k, %v = loom.split %z {axis = 1, sizes = [32, 32, 32]}
    ```
    becomes, with `%w : tensor<3x32x32xf32>` and `%b : tensor<3x32xf32>`,
    for each part i:
    ```mlir
    %wi = loom.reshape (loom.slice %w [i:i+1, :, :]) : tensor<32x32xf32>
    %bi = loom.reshape (loom.slice %b [i:i+1, :]) : tensor<32xf32>
    %qi = loom.add %bi, (loom.matmul %x, %wi {transpose_rhs})
    ```
    Only weights and biases used by nothing else are rewritten.
    `loomc --tp-plan=auto` runs it before building the training step.
  }];
  let dependentDialects = ["::mlir::loom::LoomDialect"];
}

def LoomPropagateShardingPass : Pass<"loom-propagate-sharding", "::mlir::ModuleOp"> {
  let summary = "gives every value a sharding from the arguments' through the ops' sharding rules";
  let description = [{
    For every function with sharded arguments (`loom.sharding`), carries the
    splits through the graph with `ShardingRuleOpInterface`: a factor split
    in one operand or result is split alike in the others, forwards and
    backwards until nothing changes. Ops get `loom.sharding`, an array with
    the sharding of each result (omitted when all are replicated). Arguments
    keep their shardings; ops without a rule compute whole.

    Losses averaged over labels with ignore_index are first rewritten as a
    sum divided by the count of kept labels, so both can be summed across
    devices.

    Input:
    ```mlir
    loom.mesh @mesh = <dp = 2>
    func.func @f(%x: tensor<8x4xf32> {loom.sharding = #loom.sharding<@mesh, [{dp}, {} ]>}, %w: tensor<4x2xf32>) -> tensor<8x2xf32> {
      %y = loom.matmul %x, %w : (tensor<8x4xf32>, tensor<4x2xf32>) -> tensor<8x2xf32>
      return %y : tensor<8x2xf32>
    }
    ```
    Output: the matmul carries
    `{loom.sharding = [#loom.sharding<@mesh, [{dp}, {} ]>]}`.

    A split that does not divide a dimension an op needs (for example a
    reshape that splits a batch of 8 into 2x4 under dp=4) is an error at
    that op, which is the ONNX node's location.
  }];
  let dependentDialects = ["::mlir::loom::LoomDialect"];
}

def LoomPartitionPass : Pass<"loom-partition", "::mlir::ModuleOp"> {
  let summary = "turns sharded functions into the program one device runs";
  let description = [{
    After `loom-propagate-sharding`: every tensor becomes its local block
    (arguments, results and ops), operands split otherwise than an op's
    sharding rule needs are gathered with `loom.all_gather`, and ops that sum
    over a split factor get a `loom.all_reduce` (sum, or avg for means) of
    their partial results. In data parallelism these are the gradient
    all-reduces: weight gradients contract over the split batch.

    Input: the output of the example of `loom-propagate-sharding`. Output:
    ```mlir
    func.func @f(%x: tensor<4x4xf32> {loom.sharding = ...}, %w: tensor<4x2xf32>) -> (tensor<4x2xf32> {loom.sharding = #loom.sharding<@mesh, [{dp}, {} ]>}) {
      %y = loom.matmul %x, %w : (tensor<4x4xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
      return %y : tensor<4x2xf32>
    }
    ```
    Every device runs the same collectives in the same order. Partial sums
    are completed where they are used: with `reduce-scatter`, a use that
    wants them split over the same axes (ZeRO-2: the sharded optimizer
    update of a gradient) gets a `loom.reduce_scatter`; otherwise an
    all-reduce (and `loom.local_block` for the block). Arguments with
    `loom.gather_for_use` (ZeRO-3 parameters) are gathered at every use.
  }];
  let options = [
    Option<"reduceScatter", "reduce-scatter", "bool", "true",
           "complete partial sums used split with reduce_scatter (off: "
           "all_reduce, then the local block; ZeRO-1 keeps whole gradients)">,
  ];
  let dependentDialects = ["::mlir::loom::LoomDialect"];
}

def LoomBucketAllReducesPass : Pass<"loom-bucket-all-reduces", "::mlir::ModuleOp"> {
  let summary = "fuses consecutive all-reduces into buckets of up to bucket-bytes";
  let description = [{
    After `loom-partition`, packs consecutive `loom.all_reduce`s of the same
    mesh axes, reduction and element type (the gradient all-reduces of data
    parallelism) into one collective per bucket: inputs are flattened and
    concatenated, reduced once, and split back. A bucket is emitted right
    after its last member as soon as something uses one of its results or it
    holds `bucket-bytes`, so nothing else moves and every rank issues the
    same collectives in the same order. All-reduces are first moved up to
    the op computing their operand, so buckets follow the backward pass.
    With `overlap`, buckets are started there (`loom.all_reduce_start`) and
    awaited (`loom.wait`) at their first use, and the runtime runs them on
    its collective thread meanwhile.

    Input:
    ```mlir
    %a = loom.all_reduce sum %ga on @mesh ["dp"] : tensor<4x2xf32>
    %b = loom.all_reduce sum %gb on @mesh ["dp"] : tensor<2xf32>
    ```
    Output:
    ```mlir
    %fa = loom.reshape %ga : tensor<4x2xf32> -> tensor<8xf32>
    %fb = loom.reshape %gb : tensor<2xf32> -> tensor<2xf32>
    %all = loom.concat %fa, %fb {axis = 0 : i64} : (tensor<8xf32>, tensor<2xf32>) -> tensor<10xf32>
    %r = loom.all_reduce sum %all on @mesh ["dp"] : tensor<10xf32>
    %pa, %pb = loom.split %r {axis = 0 : i64, sizes = array<i64: 8, 2>} : ...
    %a = loom.reshape %pa : tensor<8xf32> -> tensor<4x2xf32>
    ...
    ```
  }];
  let options = [
    Option<"bucketBytes", "bucket-bytes", "int64_t", "4194304",
           "largest bucket in bytes (default 4 MiB)">,
    Option<"overlap", "overlap", "bool", "false",
           "start each bucket (loom.all_reduce_start) where its last gradient "
           "is produced and wait for it at its first use">,
  ];
  let dependentDialects = ["::mlir::loom::LoomDialect"];
}

def LoomNarrowReductionsPass : Pass<"loom-narrow-reductions", "::mlir::ModuleOp"> {
  let summary = "sums gradients over the data axis in bf16 or fp16";
  let description = [{
    Every `loom.all_reduce` and `loom.reduce_scatter` that sums (or
    averages) an f32 tensor of rank 1 or more over exactly the mesh axis
    `axis` (the data axis: the gradients of data parallelism and ZeRO) sums
    it in `dtype` instead: the operand is cast to it, the collective carries
    and combines 16-bit values (half the bytes on the wire; each combination
    is rounded, as NCCL's bf16 all-reduce and PyTorch DDP's bf16
    compression hook round), and the result is cast back. Scalars (the
    loss, the loss scaler's overflow check) keep f32. `loomc
    --grad-reduce-dtype=bf16|fp16` runs it after `loom-partition`, before
    bucketing.
    ```mlir
    %r = loom.all_reduce sum %g on @mesh ["dp"] : tensor<64xf32>
    ```
    becomes
    ```mlir
    %n = loom.cast %g : tensor<64xf32> -> tensor<64xbf16>
    %s = loom.all_reduce sum %n on @mesh ["dp"] : tensor<64xbf16>
    %r = loom.cast %s : tensor<64xbf16> -> tensor<64xf32>
    ```
  }];
  let options = [
    Option<"axis", "axis", "std::string", "\"dp\"",
           "the mesh axis whose sums are narrowed">,
    Option<"dtype", "dtype", "std::string", "\"bf16\"",
           "the format the sums travel in: bf16 or fp16">,
  ];
  let dependentDialects = ["::mlir::loom::LoomDialect"];
}

def LoomWidenGradientsPass : Pass<"loom-widen-gradients", "::mlir::ModuleOp"> {
  let summary = "low-precision products that are only widened return their f32 accumulator";
  let description = [{
    After `loom-autocast`, the training step's gradient products are bf16 or
    fp16 products too (the gradient of a low-precision product), and the
    gradient of each cast widens their results back to fp32: rounded to the
    low precision, summed there (a weight read by several products, the
    rows of a batched product), and widened. This pass makes those
    gradients accumulate in fp32 instead: a `loom.matmul` or bias-less
    `loom.conv` whose every use widens it to one type returns that
    accumulator type, and a sum, sum-reduction, reshape, transpose or slice
    whose every use widens it runs on widened operands, so that the
    widening moves up to the products. Data-parallel reductions of the
    gradients (inserted later by `loom-partition`) then sum fp32 values, as
    `--grad-reduce-dtype=fp32` promises.

    ```mlir
    %dw = loom.matmul %x, %g {transpose_lhs} : (tensor<8x4xbf16>, tensor<8x2xbf16>) -> tensor<4x2xbf16>
    %w = loom.cast %dw : tensor<4x2xbf16> -> tensor<4x2xf32>
    ```
    becomes
    ```mlir
    %dw = loom.matmul %x, %g {transpose_lhs} : (tensor<8x4xbf16>, tensor<8x2xbf16>) -> tensor<4x2xf32>
    ```
    `loomc --precision=bf16` runs it after building the training step; not
    for fp16, whose products round to fp16 as PyTorch's do so that dynamic
    loss scaling sees an overflowing gradient as inf (GradScaler's
    semantics), nor for bf16-pure, whose gradients are bf16 by design.
    (Either way `loom-partition` completes a partial sum that is widened in
    fp32, after the widening.)
  }];
  let dependentDialects = ["::mlir::loom::LoomDialect"];
}

def LoomAutocastPass : Pass<"loom-autocast", "::mlir::ModuleOp"> {
  let summary = "runs matrix products and convolutions in bf16 or fp16, by an op policy";
  let description = [{
    Mixed precision on the forward functions, by one table of op policies
    (as PyTorch's autocast lists):

    * low precision (`precision`): `loom.matmul` and `loom.conv` (their
      gradients are products too and follow);
    * fp32: exp, log, pow, sqrt, rsqrt, reciprocal, softplus, softmax,
      log-softmax, layer and batch norms, losses, reductions, cumsum, average
      pooling, LSTM/GRU, and every op the table does not name;
    * the widest float type of its operands: elementwise arithmetic and
      comparisons, activations and data movement (0-d tensors and splat
      constants take the type of the others, as scalars do in PyTorch's type
      promotion, so `scores * 0.125` stays bf16).

    A cast is inserted once per value and type, next to the value's
    definition, and shared by all its uses; a widening followed by the
    matching narrowing folds away. Signatures do not change: fp32 arguments
    (parameters: the master weights) are cast where a product reads them and
    results are cast back to their declared types, so a training step built
    afterwards (`loom-build-train-step`) keeps its loss and optimizer in
    fp32, and since the gradient of a cast is the cast back, each
    parameter's gradient arrives in fp32.

    ```mlir
    %y = loom.matmul %x, %w : (tensor<4x8xf32>, tensor<8x2xf32>) -> tensor<4x2xf32>
    %z = loom.add %y, %b : (tensor<4x2xf32>, tensor<2xf32>) -> tensor<4x2xf32>
    ```
    becomes
    ```mlir
    %xl = loom.cast %x : tensor<4x8xf32> -> tensor<4x8xbf16>
    %wl = loom.cast %w : tensor<8x2xf32> -> tensor<8x2xbf16>
    %y = loom.matmul %xl, %wl : (tensor<4x8xbf16>, tensor<8x2xbf16>) -> tensor<4x2xf32>
    %z = loom.add %y, %b : (tensor<4x2xf32>, tensor<2xf32>) -> tensor<4x2xf32>
    ```
    A product whose every use would widen it back returns its f32
    accumulator, as here, instead of a rounded bf16 result (but a
    convolution with a bias rounds once, after the bias). A product's bias
    add (the product plus a tensor of lower rank) runs in f32 and, when an
    op that does not want f32 reads it (an activation, the next product),
    is rounded once to the low precision, as PyTorch's autocast rounds
    `addmm`: activations between layers are low-precision tensors.
    `loomc --precision=bf16|fp16` runs it before building the training step.

    `precision=bf16-pure` applies bf16's policy and then stores the f32
    parameters (`loom.param` arguments) in bf16: each argument becomes bf16,
    its `loom.init` is rounded once (to nearest, ties to even), and its uses
    read one widening cast, into which the narrowing casts of products fold.
    The parameters' gradients are then bf16 too; `loom-build-train-step`
    keeps the optimizer state of low-precision parameters in f32 and
    computes their updates in f32, rounded once to bf16.
  }];
  let options = [
    Option<"precision", "precision", "std::string", "\"bf16\"",
           "the low precision: bf16, fp16, or bf16-pure (bf16 with the "
           "parameters stored in bf16)">,
  ];
  let dependentDialects = ["::mlir::loom::LoomDialect"];
}

def LoomRematPass : Pass<"loom-remat", "::mlir::ModuleOp"> {
  let summary = "recomputes layers' activations in the backward pass instead of keeping them";
  let description = [{
    Gradient checkpointing on the training step built by
    `loom-build-train-step`. The forward pass is every op up to the one
    that computes the loss (the `train_step` result named "loss"); the
    backward pass and the optimizer follow. Layers are read from the ONNX
    node names: the first level of the names' paths whose parts are numbered
    members of a list (`/gpt/blocks.0/attn/MatMul`, `/transformer/h.11/...`,
    `/model/layers.3/...`) names one layer per number.

    For every layer to recompute, the forward values the backward pass
    reads that the layer computed are computed again, right before their
    first use in the backward pass, from what the layer read (its inputs,
    the parameters, values of other layers); the backward pass reads those
    copies instead. The layer's activations then die in the forward pass,
    and only its inputs stay alive until its backward pass: the memory of
    the activations of one layer instead of all of them, for one more
    forward pass of the recomputed layers. A layer's outputs (values later
    forward ops read) are kept: the next layer reads them anyway. Each value
    the copies read from outside goes through a `loom.optimization_barrier`,
    so CSE cannot fold the copies back into the forward pass.

    In every mode, `none` included, each layer of the forward pass reads
    the values it takes from outside through barriers too (one per value
    and layer), as its copies do: fusion then cannot pull the ops computing
    a layer's input (a residual stream's additions) into the layer's
    reductions in the forward pass alone, which from -O2 would let the code
    generator sum them in another order than in the copies
    (`loom-reassociate-reductions`). With the barriers, recomputed values
    equal the forward pass's bit for bit. Boolean masks computed from the
    function's arguments and constants alone (a causal mask compared out of
    an input) are exempt: layers read them as they are and copies compute
    them again, since a barrier would store them as tensors of i1, which
    the loops reading them load one byte per element. Recomputed dropout draws the
    masks of the forward pass (they are a function of seed, step and
    index), and the arithmetic is the same, so the results are identical to
    those without recomputation.

    Selective recomputation (after Megatron-LM's) keeps the results of a
    layer's matrix products and convolutions with a parameter, which cost
    the most to recompute, and recomputes the rest from them: which values
    to keep is a minimum cut of the layer's graph (as PyTorch's
    min-cut partitioner finds it), weighing each value by its bytes, with
    the layer's inputs and the values later layers read free. For a
    transformer block it recomputes attention's scores, softmax and
    dropout and the elementwise ops, for a few percent of the block's
    FLOPs.

    `mode=full` recomputes every layer fully; `mode=selective` every layer
    selectively; `mode=layers` fully those named in `layers` and
    selectively those in `selective-layers` (what `loomc --memory-budget`
    chooses); `mode=none` nothing.
    With `report`, prints the layers found, those recomputed and the FLOPs
    recomputed per step (cost interface) next to the forward pass's.
  }];
  let options = [
    Option<"entry", "entry", "std::string", "\"train_step\"",
           "the training step">,
    Option<"mode", "mode", "std::string", "\"full\"",
           "none, full (every layer), selective (every layer, keeping "
           "products with parameters) or layers (those named)">,
    ListOption<"layers", "layers", "std::string",
               "the layers to recompute fully with mode=layers (names as "
               "in the report, e.g. /gpt/blocks.0)">,
    ListOption<"selectiveLayers", "selective-layers", "std::string",
               "the layers to recompute selectively with mode=layers">,
    Option<"fenceLayerInputs", "fence-layer-inputs", "bool", "true",
           "make each layer read its inputs through barriers in every mode "
           "(also none), so that recomputed values equal the forward "
           "pass's bit for bit">,
    Option<"report", "report", "bool", "false",
           "print the layers and what recomputing them costs">
  ];
  let dependentDialects = ["::mlir::loom::LoomDialect"];
}

def LoomMemoryReportPass : Pass<"loom-memory-report", "::mlir::ModuleOp"> {
  let summary = "prints what one rank holds for the training step";
  let description = [{
    Reads a training step (after `loom-partition`, or unpartitioned) and
    prints the bytes one rank holds: parameters and optimizer state (the
    local sizes of the `loom.param` and `loom.state` arguments), gradients
    (the values `loom-build-train-step` names `loom.gradient`, at the size
    they have once complete: a block when a `loom.reduce_scatter` completes
    them) and peak activations (the most bytes of temporaries alive at once
    in program order, before buffer reuse). The IR is not changed.

    For Adam in fp32 with Ψ parameters on N ranks this gives the ZeRO
    paper's 16Ψ bytes unsharded: 4Ψ + 4Ψ + 8Ψ/N with ZeRO-1,
    4Ψ + (4Ψ + 8Ψ)/N with ZeRO-2 and 16Ψ/N with ZeRO-3 (plus the 8-byte step
    counter, and tensors whose dimension 0 the axis does not divide).

    With `parameters`, it also lists every parameter: its sharding, whole
    shape, bytes on this rank and, after `--tp-plan=auto`, how the plan
    split it or why it stayed replicated (`loom.tp_plan`). With
    `collectives`, it counts the collectives of one call by kind, mesh axes
    and size, with the bytes each moves (an all-reduce and a reduce-scatter
    the bytes of their input, an all-gather of its result), before
    gradient all-reduces are bucketed.
  }];
  let options = [
    Option<"entry", "entry", "std::string", "\"train_step\"",
           "the function to report on">,
    Option<"parameters", "parameters", "bool", "false",
           "also list every parameter's sharding and bytes">,
    Option<"collectives", "collectives", "bool", "false",
           "also count the collectives of one call and their bytes">,
  ];
}

def LoomMoeRoutingPass : Pass<"loom-moe-routing", "::mlir::ModuleOp"> {
  let summary = "chooses the routing of mixture-of-experts layers";
  let description = [{
    Sets the routing of every `loom.moe`: `model` keeps each layer's own
    (its top-k over all tokens, as imported), `token-choice` adds a capacity
    of `ceil(capacity-factor * k * tokens / experts)` per expert (GShard,
    Switch) and `expert-choice` lets each expert take its
    `ceil(capacity-factor * tokens / experts)` most probable tokens (Zhou et
    al., 2022). `capacity-factor` 0 picks the default: 1.25 for token choice,
    2 for expert choice. `aux-loss` and `z-loss` are the coefficients of
    Switch's load-balancing loss and the router z-loss that the training
    step adds to its loss. Errors, at the layer's ONNX node: a capacity
    factor that is not positive, a load-balancing loss with expert choice,
    and any flag when the module has no `loom.moe`. With `report`, prints
    each layer's experts, routing, capacity and expert parameters.
    ```mlir
    %y = loom.moe token_choice relu %x, %logits experts(%w1, %w2) {k = 2 : i64, capacity_factor = 1.25} : ...
    ```
  }];
  let options = [
    Option<"routing", "routing", "std::string", "\"model\"",
           "model, token-choice or expert-choice">,
    Option<"capacityFactor", "capacity-factor", "double", "0.0",
           "slots per expert relative to an even share (0: the default)">,
    Option<"auxLoss", "aux-loss", "double", "0.0",
           "coefficient of the load-balancing loss">,
    Option<"zLoss", "z-loss", "double", "0.0",
           "coefficient of the router z-loss">,
    Option<"report", "report", "bool", "false",
           "print the layers on stdout">,
    Option<"groups", "groups", "int64_t", "1",
           "routing groups of the capacity routings (each group of tokens "
           "routed on its own; 1: the whole batch)">,
    Option<"expertParallel", "expert-parallel", "int64_t", "1",
           "ranks the experts are split over (the size of the mesh's "
           "expert axis); every layer's experts must divide evenly">,
  ];
}

def LoomRaiseMoePass : Pass<"loom-raise-moe", "::mlir::ModuleOp"> {
  let summary = "turns dense mixture-of-experts exports into loom.moe";
  let description = [{
    Finds a `loom.top_k` over the experts of router probabilities (a
    `loom.softmax` of `[tokens, experts]` logits), one expert network per
    router column on the same tokens (`fc2(act(fc1 x + b1) [* (fc3 x + b3)])
    + b2` over parameters; relu, gelu (also erf's exact form) or silu), and
    the value that combines them: the ops after the top-k are evaluated on
    random routing decisions and expert outputs, and the first value equal
    to the sum of each token's chosen experts' outputs times their gates
    (the top-k values, or renormalized over the k) is the layer's output.
    The layer becomes one `loom.moe` (routing `top_k`) over the experts'
    weights stacked along a new leading dimension (the parameters keep
    their names and shapes); the dense ops are removed. How the combine is
    written (masks in a loop over experts, one_hot masks, a gather of the
    stacked outputs) does not matter. A top-k of probabilities that is not
    such a layer stays as it is; with `report` each is listed with the
    reason.
  }];
  let options = [
    Option<"report", "report", "bool", "false",
           "print the layers raised and the top-k ops left dense, with why">,
  ];
}

def LoomPipelineStagesPass : Pass<"loom-pipeline-stages", "::mlir::ModuleOp"> {
  let summary = "cuts the forward function into pipeline stages";
  let description = [{
    Gives every op of the forward function (its single public function, or
    `entry`) a `loom.stage` attribute: the pipeline stage that runs it.
    With `cuts` (ONNX node names, `stages - 1` of them in graph order), a
    stage ends after the last op of each named node. Without, the pass cuts
    where the least activation memory crosses (between layers: only a
    layer's output flows on), each cut at the candidate nearest its share of
    the forward FLOPs (cost interface). Errors: a cut naming no node or not
    separating the graph, fewer places between layers than cuts needed, a
    stage without parameters, a parameter read by two stages (tied weights).
    Autodiff gives each gradient op the stage of the op it differentiates;
    `loom-pipeline` reads the attributes after partitioning. With `report`,
    prints each stage's parameters, share of the FLOPs and first and last
    node.
    ```mlir
    %0 = loom.matmul %x, %w1 {loom.stage = 0 : i64} : ...
    %1 = loom.matmul %0, %w2 {loom.stage = 1 : i64} : ...
    ```
  }];
  let options = [
    Option<"entry", "entry", "std::string", "\"\"",
           "the forward function (default: the module's public function)">,
    Option<"stages", "stages", "int64_t", "2", "how many stages">,
    ListOption<"cuts", "cuts", "std::string",
               "ONNX node names after which a stage ends">,
    Option<"report", "report", "bool", "false",
           "print the stages on stdout">,
  ];
}

def LoomPipelinePass : Pass<"loom-pipeline", "::mlir::ModuleOp"> {
  let summary = "one program per pipeline stage with a microbatch schedule";
  let description = [{
    Replaces the partitioned training step `entry` (one microbatch, its ops
    tagged with `loom.stage`) by `<entry>_stage<s>`, one program per stage of
    the mesh axis `axis`. Each takes its stage's parameters and optimizer
    state and `microbatches` microbatches of every input (stacked along
    dimension 0) and runs, in the order of `schedule` (`gpipe`: all
    forwards, then all backwards; `1f1b`: PipeDream-flush, which keeps at
    most `stages - stage` microbatches in flight; `zero-bubble`: ZB-H1, each
    backward split into the ops the gradient sent back needs (B) and the
    weight gradients (W), up to `stages - stage - 1` W passes held back to
    fill the cool-down's waits), the forward and backward
    ops of its stage for each microbatch. Values that other stages read move
    with `loom.send` / `loom.recv` along `axis`; batch-independent values are
    computed once per step on each stage that needs them. The gradients and
    the loss are summed over the microbatches in their order and divided by
    their number (as `--grad-accumulation` does; dropout in microbatch i of
    step t draws its masks at position t * microbatches + i, as that
    option's i-th call does), the optimizer runs once,
    and the last stage sends the mean loss to the others, so every stage
    returns it. The point-to-point order of every stage is checked by
    simulation (`loom-check-p2p`). `eval_step` is removed (evaluation is not
    pipelined yet); `loom.training` gains `pipeline_axis`,
    `pipeline_stages`, `microbatches` and `pipeline_schedule` for the
    runtime, which runs program `s` on the ranks whose `axis` coordinate is
    `s`.

    With `virtual-stages` V > 1 (`schedule` `interleaved-1f1b`, Megatron-LM's
    interleaved 1F1B), the ops carry `axis`-size x V virtual stages and
    program `s` runs the model chunks (virtual stages) `c * size + s`: the
    forward passes of each group of `size` microbatches go through one
    chunk after the other, so the bubble shrinks by V at the price of V
    times the messages. A stage receives what it reads from another rank
    in the order that rank sends it (receiving early what a later pass
    needs), so the activations and gradients that share a pair of ranks
    cannot be confused.
  }];
  let options = [
    Option<"entry", "entry", "std::string", "\"train_step\"",
           "the training step to pipeline">,
    Option<"axis", "axis", "std::string", "\"pp\"",
           "the mesh axis of the stages">,
    Option<"microbatches", "microbatches", "int64_t", "1",
           "microbatches per step">,
    Option<"schedule", "schedule", "std::string", "\"1f1b\"",
           "gpipe, 1f1b, interleaved-1f1b or zero-bubble">,
    Option<"virtualStages", "virtual-stages", "int64_t", "1",
           "model chunks per stage (interleaved-1f1b: at least 2)">,
    Option<"report", "report", "bool", "false",
           "print the bubble fraction and each stage's parameters, bytes "
           "sent and microbatches in flight">,
  ];
}

def LoomCheckP2PPass : Pass<"loom-check-p2p", "::mlir::ModuleOp"> {
  let summary = "checks that stage programs' sends and receives cannot deadlock";
  let description = [{
    Simulates the functions carrying `loom.pipeline_stage = s` (one per
    stage, numbered from 0) as `loom-pipeline` checks its own output: a
    `loom.send` never blocks, a `loom.recv` waits for the next message from
    the stage its offset names, which must be of its type. Reports the first
    stage that would wait forever and the stage it waits for, a receive that
    would get a message of another type, and messages never received.
  }];
}

#endif // LOOM_TRANSFORMS_PASSES
