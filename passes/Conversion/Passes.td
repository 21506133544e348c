//===- Passes.td - Loom's conversion passes ----------------*- tablegen -*-===//
//
// Lowerings out of the loom dialect.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_CONVERSION_PASSES
#define LOOM_CONVERSION_PASSES

include "mlir/Pass/PassBase.td"

def ConvertLoomToLinalgPass
    : Pass<"loom-convert-loom-to-linalg", "::mlir::ModuleOp"> {
  let summary = "lowers loom ops to linalg, tensor, arith and math on tensors";
  let description = [{
    Rewrites loom ops into upstream ops on tensors, ready for one-shot
    bufferization: elementwise ops (with numpy broadcasting) become one
    `linalg.generic` each, contractions and reductions `linalg.generic`s with
    reduction iterators, layout ops `linalg.transpose`, `tensor.collapse_shape`
    / `tensor.expand_shape`, `tensor.extract_slice` and `tensor.insert_slice`,
    and softmax its numerically stable decomposition. An op without a CPU
    lowering yet is reported with an error that names it.

    Input:
    ```mlir
    %0 = loom.add %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    ```
    Output:
    ```mlir
    %e = tensor.empty() : tensor<2x3xf32>
    %0 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                                          affine_map<(d0, d1) -> (d1)>,
                                          affine_map<(d0, d1) -> (d0, d1)>],
                         iterator_types = ["parallel", "parallel"]}
        ins(%a, %b : tensor<2x3xf32>, tensor<3xf32>) outs(%e : tensor<2x3xf32>) {
    ^bb0(%x: f32, %y: f32, %out: f32):
      %s = arith.addf %x, %y : f32
      linalg.yield %s : f32
    } -> tensor<2x3xf32>
    ```
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::scf::SCFDialect"];
}

def LoomExposeEntryPointsPass
    : Pass<"loom-expose-entry-points", "::mlir::ModuleOp"> {
  let summary = "marks public functions for the C interface the runtime calls";
  let description = [{
    Sets `llvm.emit_c_interface` on every public function with a body, so
    that the LLVM lowering emits `_mlir_ciface_<name>` taking one memref
    descriptor pointer per argument. The bundle emitter wraps each of those
    in `loom_entry_<name>(void **descriptors)`, which libloomrt calls.
    The `loom.*` argument and result attributes (names, initial values),
    which the bundle emitter has read by now, are dropped, and so are the
    `loom.mesh` declarations, whose collectives are runtime calls by now.
    Run after bufferization and `buffer-results-to-out-params`, so results
    are caller-allocated arguments too.
  }];
}

def LoomMemrefCopyToLinalgPass
    : Pass<"loom-memref-copy-to-linalg", "::mlir::func::FuncOp"> {
  let summary = "rewrites memref.copy as linalg.copy";
  let description = [{
    Bufferization copies strided views (slices of concatenations, splits)
    with `memref.copy`, whose LLVM lowering calls `memrefCopy` from MLIR's
    runner-utils library. Bundles must not depend on that library, so the
    copies become `linalg.copy`, which `convert-linalg-to-loops` turns into
    plain loops.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
}

def LoomCopyRepeatedResultsPass
    : Pass<"loom-copy-repeated-results", "::mlir::func::FuncOp"> {
  let summary = "copies a tensor that a function returns more than once";
  let description = [{
    Bufferization turns each result of a function into an out-parameter of
    its own (`buffer-results-to-out-params`), which crashed on a value
    returned twice: two outputs that are one tensor (an ONNX graph whose
    outputs name the same value, a training step returning a counter both
    as an output and as its state update). This pass, run just before
    bufferization, returns a `linalg.copy` of the value in each repeated
    position, so every result has a tensor of its own.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
}

def LoomDuplicateFillsPass
    : Pass<"loom-duplicate-fills", "::mlir::func::FuncOp"> {
  let summary = "gives every op that writes into a filled tensor a fill of its own";
  let description = [{
    CSE merges identical `linalg.fill`s (the zeros that matmuls and
    reductions accumulate into), so one filled tensor becomes the `outs` of
    many ops. One-shot bufferization then fills one buffer and copies it for
    every op but the last: a read and a write of the whole result instead of
    a write. This pass, run just before bufferization, clones the fill (and
    its `tensor.empty`) in front of each op that takes the filled tensor as
    an `outs` operand, so each bufferizes to a fill of its own buffer, right
    before the op: `loom-matmul-to-kernel` then finds the zeroing of a
    product next to it. Uses as an input keep the original fill.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
}

def LoomDeallocAtLastUsePass
    : Pass<"loom-dealloc-at-last-use", "::mlir::func::FuncOp"> {
  let summary = "frees each buffer right after its last use, not at the end of its block";
  let description = [{
    Ownership-based buffer deallocation places every `memref.dealloc` at
    the end of the block that owns the buffer, so in a training step, one
    long block, every temporary stays allocated until the step returns and
    the peak is the sum of all of them. This pass moves each `memref.dealloc`
    up to right after the last op of its block that uses the buffer or a
    value that may alias it (the memref results of any op that reads it:
    views, casts, loops carrying it; uses inside an op's regions count as
    uses by that op). Deallocations whose buffer is used outside the block
    stay where they are. The buffer's memory is then free for the rest of
    the step, and the most bytes alive at once is what the computation
    needs, not what it allocates in all.
  }];
}

def LoomBufferPeakPass : Pass<"loom-buffer-peak", "::mlir::ModuleOp"> {
  let summary = "predicts the peak bytes of the temporaries each entry point allocates";
  let description = [{
    Runs on bufferized code, after buffer deallocation: for every public
    function, walks its ops in program order (into loop bodies once, and
    into the functions it calls) adding the bytes of each `memref.alloc`
    and taking off those of each `memref.dealloc`, and records the most
    alive at once in the module attribute `loom.buffer_peak` (a dictionary
    from function name to bytes). These are the buffers the compiled code
    asks libloomrt's allocator for, so the runtime's high-water mark of its
    allocations (`loom_session_memory_stats`, `loom-run train
    --memory-stats`) measures the same quantity; the arguments (parameters,
    state, inputs and outputs, which the runtime allocates once) come on
    top. Kernels' own workspaces (convolutions' im2col) are not included.
    `loomc` writes the figures to the bundle's manifest and `--report`
    prints them.
  }];
}

def LoomMatmulToKernelPass
    : Pass<"loom-matmul-to-kernel", "::mlir::ModuleOp"> {
  let summary = "hands bufferized f32 matmuls and grouped 2-D convolutions to the runtime's kernels";
  let description = [{
    Replaces every `linalg.matmul` on f32 memrefs with unit-stride rows (plain
    or with either operand transposed, as `loom-convert-loom-to-linalg`
    emits them) by a call to `loom_kernel_matmul_f32(a, b, c, flags)` (flags:
    1 = `b` transposed, 2 = `a` transposed, 4 = overwrite `c`), and every `linalg.batch_matmul`
    of that form by `loom_kernel_batch_matmul_f32(a, b, c, flags)`,
    declared with `llvm.emit_c_interface`. libloomrt implements it with
    OpenBLAS and resolves it when a bundle is loaded. `c` accumulates, as
    linalg.matmul does, except where the op before the product zeroes `c`
    (a `linalg.fill` with +0.0, or a `memref.copy` from a buffer that only
    such a fill writes): that op goes, and flag 4 tells the kernel to
    overwrite `c` instead of reading it. Every `linalg.conv_2d_ngchw_gfchw` on f32 memrefs
    (the form `loom-convert-loom-to-linalg` gives 2-D f32 convolutions, with
    the padding already applied) becomes `loom_kernel_conv2d_f32(input,
    filter, output, stride_h, stride_w, dilation_h, dilation_w)`: im2col and
    one OpenBLAS GEMM per image and group, accumulating into `output`.

    With `kernel-prefix=loom_cuda_` (the CUDA pipeline) the same calls name
    the CUDA engine's kernels (`loom_cuda_matmul_f32`, ...), which take
    device buffers; with `convolutions=false` (the CUDA pipeline, until its
    engine has convolutions) convolutions stay linalg ops, lowered to loops
    like the rest.
  }];
  let options = [
    Option<"kernelPrefix", "kernel-prefix", "std::string",
           /*default=*/"\"loom_kernel_\"",
           "prefix of the runtime kernels' names">,
    Option<"convolutions", "convolutions", "bool", /*default=*/"true",
           "hand grouped 2-D convolutions to the runtime too">
  ];
  let dependentDialects = ["::mlir::func::FuncDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::arith::ArithDialect"];
}

def LoomFuseElementwisePass
    : Pass<"loom-fuse-elementwise", "::mlir::func::FuncOp"> {
  let summary = "fuses elementwise linalg.generic producers into their consumers";
  let description = [{
    Upstream's elementwise fusion patterns, without the reshape propagation
    that `linalg-fuse-elementwise-ops` adds: propagating reshapes turns the
    named `linalg.matmul` ops Loom emits (for the runtime's GEMM) back into
    generic loops. Fusion recomputes the producer inside the consumer's
    loops, so two kinds of producer are kept apart:
    * one that the consumer broadcasts (a per-row statistic used across the
      row) unless its body is a couple of plain arithmetic ops: fused, layer
      norm's `1 / sqrt(var + eps)` would run once per element instead of
      once per row;
    * a gather (`tensor.extract`) with several consumers, which would be
      copied into each, and keeps them from vectorizing.
    A producer whose result is also returned by the function (the moments an
    optimizer updates, returned and read by the parameter update) fuses into
    its all-parallel consumer first, which then yields that result as well:
    AdamW's update of a parameter is one loop with three results instead of
    three loops.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
}

def LoomReassociateReductionsPass
    : Pass<"loom-reassociate-reductions", "::mlir::func::FuncOp"> {
  let summary = "lets the code generator reorder the float arithmetic of reductions other than sums";
  let description = [{
    Marks the accumulation of every `linalg.generic` with a reduction
    iterator whose combiner is not a sum (maxima, minima, products) with the
    `reassoc` and `contract` fast-math flags, so that LLVM can vectorize the
    reduction: the ops that combine an element with the accumulator
    (`matchReduction`'s combiners) and the products that feed only them.

    Sums are left in order. LLVM vectorizes a reassociated sum with the
    vector width and interleaving its cost model picks for the whole loop,
    so the same sum fused with different producers rounded differently: a
    softmax denominator recomputed in the backward pass (`loom-remat`) was
    not bit for bit the one of the forward pass. The sums that vectorize
    well (innermost, contiguous, a multiple of 16 elements) get lanes of
    their own, in a fixed order, from `loom-split-lane-reductions`.

    Other arithmetic in the body (elementwise producers that fusion moved
    into the reduction) keeps strict semantics, because the same value may
    be computed again elsewhere and compared exactly: a max pool's gradient
    compares its input with its result, and with a batch norm fused into
    the pooling, `contract` once turned the normalization into FMAs there
    and not in the gradient, so no window found its maximum.
    `loomc -O2` and above run it.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

def LoomSplitLaneReductionsPass
    : Pass<"loom-split-lane-reductions", "::mlir::func::FuncOp"> {
  let summary = "splits innermost f32 sums, maxima and minima into 16 lanes that vectorize in a fixed order";
  let description = [{
    Rewrites each `linalg.generic` on tensors whose one reduction is its
    innermost loop, of a static size n that is a multiple of 16 (32 or
    more), that each input reads along its own innermost dimension, and
    whose combiner is an f32 `addf`, `maximumf` or `minimumf`: those input
    dimensions are expanded into [n / 16, 16], the op keeps 16 partial
    results (from 0, -inf or +inf) in an extra innermost parallel dimension
    (a loop over independent lanes, which vectorizes as elementwise code),
    and a second op combines the 16 with the original init, in order.

    Sums: lane l adds elements l, l + 16, l + 32, ... in order, whatever
    the code around the loop, so a sum rounds the same in every context
    (`loom-reassociate-reductions` leaves sums unreassociated for this).
    Maxima and minima: LLVM's loop vectorizer recognizes them only in a few
    forms, and InstCombine rewrites the common `max(acc, select(mask, -inf,
    x))` of masked softmax into `select(mask, acc, max(acc, x))`, which it
    then does not recognize: the row maxima of attention scores ran as
    scalar loops; they are exact in any order. (Upstream's
    `linalg::splitReduction` mistakes a constant index, the broadcast mask's
    `0`, for a loop dimension.) `loomc -O2` and above run it before
    bufferization.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::arith::ArithDialect"];
}

def LoomApproximateMathPass
    : Pass<"loom-approximate-math", "::mlir::ModuleOp"> {
  let summary = "replaces f32 exp, log, tanh and erf with polynomial approximations";
  let description = [{
    Upstream's polynomial approximations (`math` dialect) of f32 `exp`,
    `expm1`, `log`, `log1p`, `log2`, `tanh` and `erf`: plain arithmetic that
    the loop vectorizer handles, instead of one libm call per element. Other
    types and functions keep their libm calls. `loomc -O2` and above run it.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::vector::VectorDialect"];
}

def LoomByteBooleansPass : Pass<"loom-byte-booleans", "::mlir::ModuleOp"> {
  let summary = "loads and stores i1 values in memory as bytes (i8) in the LLVM dialect";
  let description = [{
    Rewrites each `llvm.load` of an `i1` as a load of an `i8` followed by
    `llvm.trunc`, and each `llvm.store` of an `i1` as `llvm.zext` to `i8`
    followed by a store of the byte. Memory is unchanged: an `i1` already
    takes one byte holding 0 or 1 (what these stores write, and what
    constants, the runtime and `.npy` booleans hold), and truncation reads
    its low bit. LLVM's loop vectorizer widens byte loads and stores into
    vector loads and stores (the mask taken from the bytes' low bits), while
    for `i1` loads it assembles each mask register one byte at a time: loops
    that read a stored boolean tensor (a constant attention mask, a
    comparison a function returns) vectorize. Vectors of `i1` (bit-packed in
    memory) are left as they are. The CPU pipeline runs it last.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def LoomVectorizeInnerLoopsPass
    : Pass<"loom-vectorize-inner-loops", "::mlir::ModuleOp"> {
  let summary = "asks LLVM to vectorize innermost unit-stride loops of 16 or more iterations";
  let description = [{
    Puts `llvm.loop_annotation<vectorize = <disable = false>, unroll =
    <disable = true>>` on each innermost `scf.for` with a static trip count
    of at least 16 that carries no value and whose every `memref.load` and
    `memref.store` indexes a unit-stride innermost dimension with the
    induction variable (and uses it nowhere else): loops whose iterations
    are independent and whose vector form moves whole vectors. LLVM's cost
    model declined such loops when their trip count was small (the buffers
    may alias, so the vector loop needs run-time checks), and its full
    unroller then made each one scalar loads and stores: the attention
    heads' transposing copies (an innermost head dimension of 32) ran at a
    third of a plain copy's speed. Sums are never marked (their
    accumulators do not use the innermost index), so no order of
    arithmetic changes. `SCFToControlFlow` leaves the annotation on the
    loop's latch branch; `loom-attach-loop-annotations` hands it to LLVM.
    `loomc -O2` and above run it, after `scf-parallel-for-to-nested-fors`.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def LoomAttachLoopAnnotationsPass
    : Pass<"loom-attach-loop-annotations", "::mlir::ModuleOp"> {
  let summary = "makes the llvm.loop_annotation attribute of llvm.br the branch's loop annotation";
  let description = [{
    `SCFToControlFlow` copies an `scf.for`'s `llvm.loop_annotation`
    attribute to its latch branch, and the conversion to the LLVM dialect
    keeps it there as a plain attribute, which translation to LLVM IR does
    not read; this pass moves it into `llvm.br`'s `loop_annotation`, so the
    loop carries its `llvm.loop` metadata.
  }];
}

def LoomSplitReductionsPass
    : Pass<"loom-split-reductions", "::mlir::func::FuncOp"> {
  let summary = "splits linalg ops whose outer loops reduce along a parallel dimension";
  let description = [{
    A linalg op on buffers whose outermost loop is a reduction (a bias
    gradient, `[B, T, D] -> [D]`; layer norm's weight gradient) lowers to
    sequential loops around its parallel loop, which
    `loom-outline-parallel-loops` cannot hand to threads. This pass tiles the
    op's first parallel dimension into up to 8 tiles (the innermost
    dimension only into tiles of a multiple of 16 elements, so that they
    vectorize) with an outer `scf.parallel` over the tiles: each tile runs
    the whole reduction for its slice of the results, so results do not
    depend on the tiling. Ops with fewer than `min-work` iterations stay
    whole. `loomc -O2` and above run it after bufferization.
  }];
  let options = [
    Option<"minWork", "min-work", "int64_t", /*default=*/"131072",
           "iterations an op needs to be split">
  ];
  let dependentDialects = ["::mlir::scf::SCFDialect",
                           "::mlir::affine::AffineDialect",
                           "::mlir::memref::MemRefDialect"];
}

def LoomOutlineParallelLoopsPass
    : Pass<"loom-outline-parallel-loops", "::mlir::ModuleOp"> {
  let summary = "runs large parallel loop nests on the runtime's threads";
  let description = [{
    Moves each outermost `scf.parallel` nest with enough work into a function
    of its own, `(ctx: !llvm.ptr, begin: i64, end: i64) -> ()`, that runs
    iterations `[begin, end)` of the first parallel dimension, and replaces
    the nest with a call of the runtime's
    `loom_rt_parallel_for(fn, ctx, iterations)`, which splits the
    iterations into one contiguous chunk per thread. The values the nest
    uses from outside (memrefs as their descriptors, and scalars) travel in
    a stack record that `ctx` points to; constants are cloned instead. The
    outlined function reads them once on entry, so its inner loops see plain
    SSA pointers and vectorize as before. Nests with fewer than `min-work`
    innermost iterations, with calls or allocations inside, that read a
    value with no LLVM form to pass (a tensor), or whose first dimension has
    fewer than two iterations, stay where they are.

    Runs on `scf`, `memref` and `arith` after bufferization, before
    `convert-scf-to-cf`; `loomc -O2` and above run it after
    `convert-linalg-to-parallel-loops`.
  }];
  let options = [
    Option<"minWork", "min-work", "int64_t", /*default=*/"131072",
           "innermost iterations a nest needs to be run on several threads">
  ];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect",
                           "::mlir::func::FuncDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::scf::SCFDialect"];
}

def LoomMapToGpuPass : Pass<"loom-map-to-gpu", "::mlir::ModuleOp"> {
  let summary = "puts every bufferized loop nest and memory access of the entry points in a gpu.launch";
  let description = [{
    The CUDA pipeline's placement step, on bufferized `scf`, `memref` and
    `arith` (after `convert-linalg-to-parallel-loops`). In every function:

    * each outermost `scf.parallel` without results becomes a `gpu.launch`
      over its iterations linearized: `block-size` threads per block,
      enough blocks for all of them, each thread recovering its indices
      from `blockIdx.x * block-size + threadIdx.x` (consecutive threads take
      consecutive innermost indices, so accesses coalesce);
    * the other ops that read or write memory, or compute on what was read
      (reduction `scf.for` nests, scalar loads and stores, the arithmetic
      between them), are grouped into runs of consecutive ops and each run
      becomes a `gpu.launch` of one thread;
    * a loop or branch that holds calls or parallel loops stays on the host
      and its body is placed in the same way;
    * calls (the runtime's kernels and collectives), allocations, views and
      index arithmetic stay on the host; `memref.alloc`/`memref.dealloc`
      become `gpu.alloc`/`gpu.dealloc`, so that every buffer lives on the
      device; a `memref.get_global` that a call reads is copied to a device
      buffer first;
    * constants, globals and views a launch reads are sunk into it, so that
      `gpu-kernel-outlining` copies globals into the kernel module.

    A value computed on the device that the host needs (a loop bound, an
    allocation size) is an error naming the op.
  }];
  let options = [
    Option<"blockSize", "block-size", "int64_t", /*default=*/"256",
           "threads per block of a parallel loop's launch">
  ];
  let dependentDialects = ["::mlir::gpu::GPUDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect"];
}

def LoomMergeGpuModulesPass
    : Pass<"loom-merge-gpu-modules", "::mlir::ModuleOp"> {
  let summary = "moves every outlined kernel into one gpu.module, @loom_kernels";
  let description = [{
    `gpu-kernel-outlining` gives each kernel a module of its own; the CUDA
    target wants one: one PTX text and one binary per architecture, which
    the runtime loads once. Kernels are renamed after their old modules
    (unique), symbols they share (globals copied by outlining) are kept
    once, and every `gpu.launch_func` is pointed at the new name.
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect"];
}

def LoomMergeFatbinsPass : Pass<"loom-merge-fatbins", "::mlir::ModuleOp"> {
  let summary = "makes a gpu.binary's fatbins for several architectures one fatbin";
  let description = [{
    `gpu-module-to-binary` gives a module compiled for sm_80 and sm_90 one
    fatbin object per architecture (each with its cubin and PTX), of which
    the host code would load the first. This pass moves every object's
    entries into one fatbin, so that the driver picks the cubin of the
    device it runs on (and JIT-compiles the newest PTX on a newer one). An
    object that is not a fatbin, or whose header is not one, is an error.
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect"];
}

def LoomEmulateGpuLaunchesPass
    : Pass<"loom-emulate-gpu-launches", "::mlir::ModuleOp"> {
  let summary = "runs loom-map-to-gpu's launches as loops on the CPU (for tests)";
  let description = [{
    A check of the CUDA target's placement on a machine without a GPU: each
    `gpu.launch` (before outlining) becomes loops over its blocks and
    threads, in order, with the ids and sizes its body reads;
    `gpu.alloc`/`gpu.dealloc`/`gpu.memcpy` become `memref.alloc`,
    `memref.dealloc` and `memref.copy`. Kernels do not communicate, so the
    loops compute what the launches would; the rest of the CPU pipeline
    (`loom-gpu-emulation-pipeline`) then runs the result, and the numbers
    are compared with the CPU lowering's.
  }];
  let dependentDialects = ["::mlir::scf::SCFDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::arith::ArithDialect"];
}

#endif // LOOM_CONVERSION_PASSES
