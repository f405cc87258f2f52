#ifndef LINAC_PASSES_TD
#define LINAC_PASSES_TD

include "mlir/Pass/PassBase.td"

def LinacLowerSequential : Pass<"linac-lower-sequential", "::mlir::ModuleOp"> {
  let summary = "Lower each linac.recurrence to its sequential loop over time";
  let description = [{
    Adds, next to every `linac.recurrence @name`, a function
    `func.func @linac_<name>_forward_sequential` with the C ABI shared by all
    lowerings:

    ```c
    void linac_<name>_forward(const float *const *inputs, float *out,
                              const float *h0, float *ht, const int32_t *cu_seqlens,
                              int64_t N, int64_t T, int64_t H, int64_t K, int64_t V,
                              float scale);
    ```

    Token tensors are row-major `[B, T, H, D]`, states `[N, H, K, V]`. Without
    `cu_seqlens`, `N = B` sequences of `T` tokens; with it, `T` is the total
    token count and sequence `n` is tokens `[cu[n], cu[n+1])`. `h0`, `ht` and
    `cu_seqlens` may be null; `scale <= 0` means `K^-1/2`.

    The body loops over sequences and heads, then over time. The state lives in
    one buffer updated in place, so reads of a state are scheduled before the
    update that consumes it. Vector-valued gate math is scalarised into loops
    over the key or value dimension; the result is plain scf/arith/math/memref.
  }];
  let options = [Option<"ioType", "io-type", "std::string", "\"f32\"",
                        "element type of the per-token inputs, the output and its cotangent: f32, bf16 or f16 "
                        "(read widened to f32, written rounded to nearest even; states and gradients stay f32)">];
  let dependentDialects = ["::mlir::func::FuncDialect", "::mlir::scf::SCFDialect",
                           "::mlir::arith::ArithDialect", "::mlir::math::MathDialect",
                           "::mlir::memref::MemRefDialect", "::mlir::LLVM::LLVMDialect"];
}

def LinacChunk : Pass<"linac-chunk", "::mlir::ModuleOp"> {
  let summary = "Derive the chunked-parallel form of each recurrence, in tile IR";
  let description = [{
    Adds `func.func @linac_<name>_forward_chunk<C>` (the common C ABI) that
    processes each sequence in chunks of C tokens. The pass first reduces the
    body to the canonical form

      S_t = A_t S_{t-1} + B_t,  A_t = (I - beta_t k_t k_t^T)? Diag(exp(g_t)),

    with g_t a scalar or per-key log gate (the sum of every decay in the body),
    and a read of S_t or of S_{t-1} (plus a bonus term). Within a chunk it
    cumulates the gates (b_i = sum_{j<=i} g_j) and writes every state as

      S_i = Diag(exp(b_i)) S_0 + sum_{j<=i} Diag(exp(b_i - b_j)) k_j w_j^T,

    where the pseudo-values w are the values themselves for diagonal
    transitions and, for the delta rule, the solution of the unit-triangular
    system (I + diag(beta) tril(K K^T gated, -1)) W = diag(beta)(V - (exp(b) k) S_0)
    (the UT/WY representation). Outputs are an inter-chunk term against S_0
    plus masked gated intra-chunk products; the next S_0 is S_C. Every
    exponent is a difference b_i - b_j <= 0 formed per pair, so strong gates
    cannot overflow. Vector states use the same cumulated gates in a gated
    prefix scan. Recurrences outside this form are rejected with a diagnostic.
  }];
  let options = [Option<"chunkSize", "chunk-size", "int64_t", "64", "tokens per chunk">,
                 Option<"ioType", "io-type", "std::string", "\"f32\"",
                        "element type of the per-token inputs, the output and its cotangent: f32, bf16 or f16 "
                        "(read widened to f32, written rounded to nearest even; states and gradients stay f32)">];
  let dependentDialects = ["::mlir::func::FuncDialect", "::mlir::scf::SCFDialect",
                           "::mlir::arith::ArithDialect", "::mlir::math::MathDialect",
                           "::mlir::memref::MemRefDialect", "::mlir::tensor::TensorDialect",
                           "::mlir::LLVM::LLVMDialect"];
}

def LinacAutodiff : Pass<"linac-autodiff", "::mlir::ModuleOp"> {
  let summary = "Derive the chunked backward pass of each recurrence, in tile IR";
  let description = [{
    Adds `func.func @linac_<name>_backward_chunk<C>` with the backward C ABI

    ```c
    void linac_<name>_backward_chunk<C>(const float *const *inputs, const float *h0,
        const float *dout, const float *dht, float *const *dinputs, float *dh0,
        const int32_t *cu_seqlens, int64_t N, int64_t T, int64_t H, int64_t K,
        int64_t V, float scale);
    ```

    which writes the gradient of sum(out * dout) + sum(ht * dht) with respect
    to every input (`dinputs[i]` has input i's shape) and the initial state.
    It needs only the forward's inputs: per sequence and head it replays the
    chunked forward keeping the state at each chunk boundary
    (N * H * ceil(T / C) * K * V floats), then walks the chunks backwards,
    recomputing each chunk's tiles with the forward's own derivation and
    applying reverse-mode rules to every tile op, including the body's gate
    math. The state cotangent is carried from chunk to chunk in reverse time.
  }];
  let options = [Option<"chunkSize", "chunk-size", "int64_t", "64", "tokens per chunk">,
                 Option<"ioType", "io-type", "std::string", "\"f32\"",
                        "element type of the per-token inputs, the output and its cotangent: f32, bf16 or f16 "
                        "(read widened to f32, written rounded to nearest even; states and gradients stay f32)">];
  let dependentDialects = ["::mlir::func::FuncDialect", "::mlir::scf::SCFDialect",
                           "::mlir::arith::ArithDialect", "::mlir::math::MathDialect",
                           "::mlir::memref::MemRefDialect", "::mlir::tensor::TensorDialect",
                           "::mlir::LLVM::LLVMDialect"];
}

def LinacGpuChunk : Pass<"linac-gpu-chunk", "::mlir::ModuleOp"> {
  let summary = "The chunked forward and derived backward of each recurrence as GPU kernels in tile IR";
  let description = [{
    Adds `gpu.module @linac_kernels` holding, per recurrence, the kernels
    `linac_<name>_forward_chunk<C>(inputs..., out, h0, ht, cu_seqlens,
    state_scratch, tile_scratch, N, T, H, K, V, scale)` and
    `linac_<name>_backward_chunk<C>(inputs..., dinputs..., h0, dout, dht, dh0,
    cu_seqlens, boundary_scratch, state_scratch, tile_scratch, N, T, H, K, V,
    scale)`, both launched on a grid of (H, N) blocks: block (h, n) runs
    sequence n, head h, with the derivation of linac-chunk (forward) and of
    linac-autodiff (backward). `state_scratch` holds one state per block
    (two for the backward: state and cotangent); `boundary_scratch` holds
    the state at each chunk boundary, N + ceil(tokens / C) slots of H states.
    Gradient stores accumulate atomically (per-head inputs sum over
    sequences), so the launcher zeroes `dinputs` first.

    With `split`, recurrences with a matrix state get the chunk-parallel
    split instead (ChunkSplit.h, docs/gpu.md): kernels
    `<forward>_before`, `_chain`, `_after` with the arguments
    `(inputs..., out, h0, ht, cu_seqlens, frontier, boundaries,
    state_scratch, tile_scratch, N, T, H, K, V, scale)` and
    `<backward>_before`, `_chain`, `_after` with `(inputs..., dinputs..., h0,
    dout, dht, dh0, cu_seqlens, frontier, boundaries, grad_boundaries,
    state_scratch, tile_scratch, N, T, H, K, V, scale)`. The before and
    after kernels run on an (H, slots) grid, one block per chunk (chunk c
    of sequence n is slot n + start_n / C + c); the chain kernels on (H, N,
    value slices). Each records its frontier's floats per chunk slot and
    head as `linac.frontier_size`, a C++ expression of K and V.

    With `pair-kernel` (per-key, the default: recurrences with per-key gates;
    all; none), a matrix state's in-order backward whose chunk output
    has terms that do not depend on the chunk's initial state (the
    intra-chunk pairs: GLA's gated q k^T v, RWKV-6's bonus; not the delta
    rule's, which read the state through the solved values) leaves their
    gradients to `<backward>_pairs` (linac.phase "pairs"), with the
    backward's arguments. The in-order backward (linac.pair_kernel names
    the pairs kernel) derives the rest and stores its gradients as it
    would alone; the pairs kernel runs after it on an (slots, H) grid like
    the split's before and after kernels: each block derives one chunk's
    pair terms (ChunkBackward.h, BackwardTerms::Pairs: neither the state
    nor its cotangent is read) and adds them into the gradients
    (atomically).

    With `tail-kernel` all, a matrix state's in-order backward (without a
    pairs or boundary kernel) is the head of a tail cut (ChunkSplit.h,
    TailCut): each chunk runs the path to the next chunk's state cotangent
    and the products that contract a state-sized tile computed from the
    state or its cotangent, and stores the chunk-sized tiles the rest reads
    (the cut, `linac.tail_cut` floats a chunk, a C++ expression of K and V,
    at a fourth scratch pointer in [chunk slot, H, cut]); `<backward>_tail`
    (linac.phase "tail", linac.tail_kernel names it) runs after it over
    chunk slots and computes every input gradient from the cut. The head
    must run one value slice.

    With `io-type=bf16` (or `f16`) the per-token inputs, `out` and `dout`
    are bf16 (f16) buffers (fla's I/O precision); the kernels compute in fp32 and the
    states, per-head inputs and input gradients stay fp32 (the gradients
    are accumulated atomically). The module records it as `linac.io_type`.

    With `static-dims=K0,V0,K1,V1,...` each kernel also gets copies
    `<kernel>_k<K>_v<V>` for those head dimensions and one value slice: K,
    V, the grid's z extent and z index are constants there (attribute
    `linac.static_dims`), so after canonicalization every tile extent,
    stride and slot size is one too.
  }];
  let options = [Option<"chunkSize", "chunk-size", "int64_t", "64", "tokens per chunk">,
                 Option<"blockSize", "block-size", "int64_t", "0",
                        "threads per block (a multiple of 32, at most 1024; 0: 512, and 1024 for a vector state's "
                        "backward and the split's kernels); the kernels are compiled for it">,
                 Option<"backwardBlockSize", "backward-block-size", "int64_t", "0",
                        "threads per block of the in-order backward kernels (0: a matrix state's at most 512, "
                        "and 256 for the delta rule unless block-size is set, but 512 for its fixed-size copies "
                        "above K V = 128 x 128; a vector state's block-size)">,
                 ListOption<"staticDims", "static-dims", "int64_t",
                            "pairs K, V of head dimensions to also compile fixed-size kernels for">,
                 Option<"staticSlices", "static-slices", "int64_t", "1",
                        "an experiment: also fixed-size copies that run this many value slices (V a multiple of "
                        "it) as that many blocks a multiprocessor (1: none)">,
                 Option<"boundarySlices", "boundary-slices", "int64_t", "0",
                        "an experiment: a matrix state's in-order backward takes its boundary states from a kernel "
                        "of its own, launched with this many value slices as that many blocks a multiprocessor "
                        "(0: the backward computes them itself)">,
                 Option<"boundaryEvery", "boundary-every", "int64_t", "0",
                        "the in-order kernels keep the initial state of every R-th chunk only (the training "
                        "forward's saved states, the backward's boundary scratch); the backward rebuilds the others "
                        "from the kept one before them with the forward's state recurrence (1: every chunk's; 0: "
                        "2 for matrix states at 16-bit I/O without the delta rule or with its solves saved, else "
                        "1)">,
                 Option<"saveSolves", "save-solves", "std::string", "\"auto\"",
                        "on: the in-order delta rule's kernels keep each chunk's solve (its C x V pseudo-values) "
                        "beside the boundary states (the training forward's saved states, the backward's boundary "
                        "scratch); the backward loads them instead of solving again, in its reverse loop and in "
                        "the rebuilds of boundary-every. off: they solve again. auto: on for the delta rule "
                        "without decay gates at 16-bit I/O">,
                 Option<"split", "split", "bool", "false",
                        "the chunk-parallel split (three kernels per direction) for matrix states">,
                 Option<"phaseBlockSize", "phase-block-size", "int64_t", "0",
                        "threads per block of the split's before and after kernels (0: block-size)">,
                 Option<"ioType", "io-type", "std::string", "\"f32\"",
                        "element type of the per-token inputs, the output and its cotangent: f32, bf16 or f16 (read "
                        "widened to f32, the output rounded to nearest even); states, per-head inputs and the "
                        "input gradients stay f32">,
                 Option<"phaseBlocksPerSm", "phase-blocks-per-sm", "int64_t", "1",
                        "blocks of the before and after kernels each multiprocessor should hold: bounds their "
                        "registers (nvvm.minctasm) and shared memory (linac.shared_budget)">,
                 Option<"pairKernel", "pair-kernel", "std::string", "\"per-key\"",
                        "which matrix states' in-order backwards leave the gradients of the output's "
                        "state-independent terms (the intra-chunk pairs) to a kernel over chunk slots of its own, "
                        "`<backward>_pairs`, launched first (where the output has such terms): per-key (those "
                        "with per-key gates, whose pairs run exact per-key loops), all or none">,
                 Option<"pairBlockSize", "pair-block-size", "int64_t", "0",
                        "threads per block of the pairs kernel (0: the in-order backward's; also the warps of "
                        "its fragment lowering)">,
                 Option<"pairBlocksPerSm", "pair-blocks-per-sm", "int64_t", "0",
                        "blocks of the pairs kernel each multiprocessor should hold (0: 2 with bf16 I/O, whose "
                        "fragment lowering then runs it at 128 registers a thread, measured faster: "
                        "bench/NOTES.md v26; else 1)">,
                 Option<"tailKernel", "tail-kernel", "std::string", "\"none\"",
                        "which matrix states' in-order backwards leave their state-free tail (TailCut: every "
                        "input gradient, from the chunk-sized tiles the loop computes from the state and its "
                        "cotangent, which it stores) to a kernel over chunk slots, `<backward>_tail`, launched "
                        "after it: all (where the cut exists and there is no pairs or boundary kernel) or none">,
                 Option<"tailBlocksPerSm", "tail-blocks-per-sm", "int64_t", "2",
                        "blocks of the tail kernel each multiprocessor should hold">];
  let dependentDialects = ["::mlir::gpu::GPUDialect", "::mlir::scf::SCFDialect", "::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect", "::mlir::memref::MemRefDialect",
                           "::mlir::tensor::TensorDialect", "::mlir::LLVM::LLVMDialect"];
}

def LinacTileToGpu : Pass<"linac-tile-to-gpu", "::mlir::ModuleOp"> {
  let summary = "Lower the tile IR of GPU kernels to thread-parallel loops over per-block scratch";
  let description = [{
    Every tile of a kernel gets a slot sized by its shape (rows padded by 4
    floats), reused once the tile is dead (no op reads it any more, a read
    inside a loop counting until the loop ends); slots go in the block's
    dynamic shared memory while they fit, the rest in its region of
    `tile_scratch`. The kernel's `linac.tile_slot_sizes` says how large each
    is, for the launcher. Each tile op's loop is strided over the block's
    threads and followed by a barrier (a thread's share of a tile of known
    size is unrolled); loops that carry a dependence (prefix sums, scans,
    triangular solves) run one thread per column. Matrix products (matmul,
    and gated_dot / gated_matmul with one gate per row) run on the tensor
    cores, mma.sync m16n8k8 in tf32: with `products=tf32x3` (the default)
    each fp32 operand is split in a high and a low tf32 part, three products
    per step, for fp32 accuracy; with `products=tf32` one product of the
    operands rounded to tf32 (10-bit mantissa, the accuracy class of bf16
    inputs with fp32 accumulation); with `products=bf16` mma.sync m16n8k16
    on operands rounded to bf16 (8-bit mantissa; half the mma steps of
    tf32). Each kernel records it as `linac.products`.
  }];
  let options = [Option<"products", "products", "std::string", "\"tf32x3\"",
                        "tensor-core products: tf32x3 (fp32 accuracy), tf32 (one tf32 product) or bf16 (one bf16 "
                        "product, m16n8k16)">,
                 Option<"forwardCopies", "forward-copies", "int64_t", "0",
                        "most unrolled copies of a thread's share in a forward kernel (0: 16, whatever the block "
                        "size)">,
                 Option<"productChains", "product-chains", "int64_t", "0",
                        "accumulator chains of a tf32x3 product's k steps (0: 3 where a warp holds one output "
                        "fragment and the copy budget is 8 or more, else 1; 1: the three products in one chain)">,
                 Option<"splitK", "split-k", "int64_t", "1",
                        "most warps that share a warp tile's k steps where fewer warp tiles than warps have work "
                        "(a power of two; 1: none)">,
                 Option<"factorGates", "factor-gates", "bool", "false",
                        "per-key gated pair products in blocks of 16 rows: pairs across blocks on the tensor "
                        "cores through reference gates, pairs within a block exactly (off: 7-15% slower for "
                        "GLA and HGRN-2 on the H200, bench/NOTES.md v8)">,
                 Option<"padByPattern", "pad-by-pattern", "std::string", "\"forward\"",
                        "in which kernels (none, forward or all) a tile that the products read mostly in the B "
                        "fragment's pattern gets rows padded by 8 floats instead of 4 (no bank conflicts there)">,
                 Option<"wideWarpTiles", "wide-warp-tiles", "std::string", "\"forward\"",
                        "in which kernels (none, forward or all) a warp may take 2 x 4 or 4 x 2 product fragments "
                        "where every warp still has work">,
                 Option<"placement", "placement", "std::string", "\"accesses\"",
                        "how the fixed-size kernels choose the slots that stay in shared memory: by accesses (each "
                        "read or write of a slot counts one) or latency (the round trips the slot's accesses would "
                        "wait for in global memory, a product's one per k step, per float of the slot)">,
                 Option<"unrollGlobalK", "unroll-global-k", "int64_t", "0",
                        "in fixed-size kernels, unroll by this factor each product's k loop that reads a slot left "
                        "in global memory, so that several steps' loads are in flight at once (0 or 1: none)">,
                 Option<"schedule", "schedule", "std::string", "\"fit\"",
                        "in which kernels (none, fit, forward or all) the tile ops are ordered by level, so that "
                        "independent passes share a barrier (fit: fixed-size kernels whose slots do not grow "
                        "past shared memory with it)">];
  let dependentDialects = ["::mlir::gpu::GPUDialect", "::mlir::scf::SCFDialect", "::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect", "::mlir::NVVM::NVVMDialect",
                           "::mlir::LLVM::LLVMDialect"];
}

def LinacTileToFragments : Pass<"linac-tile-to-fragments", "::mlir::ModuleOp"> {
  let summary = "Lower fixed-size GPU kernels with tiles in registers (an experiment; docs/gpu.md)";
  let description = [{
    For each fixed-size forward kernel (`linac.static_dims`; with `all`, the
    backward ones too) whose ops it has a lowering for, every tile of at
    least 16 x 8 lives in the registers of the block's warps in the tensor
    cores' m16n8 accumulator layout (a grid of warps, each owning a block of
    fragments), and vectors (m x 1, 1 x n, 1 x 1) in every warp's lanes
    (element e in lane e % 32). Elementwise ops, row masks and broadcasts
    run on a thread's own values (a broadcast reads the vector through warp
    shuffles), prefix sums are warp scans, matrix products (matmul, and
    gated_dot / gated_matmul with one gate per row) run as bf16 mma.sync
    m16n8k16 from bf16 copies of their operands in shared memory (written
    once per tile and orientation), and a block barrier goes only where a
    warp reads a copy written since the last one, or overwrites one read
    since. Triangular solves, per-key gated products, gate gradients and
    sums across warps go through fp32 copies. The running states are
    per-thread arrays that LLVM keeps in registers. Kernels with any other
    op, 16-bit inputs other than bf16, or copies that do not fit in shared
    memory are left as they are for linac-tile-to-gpu and say why in
    `linac.fragments_skipped`; lowered ones carry `linac.fragments` (their
    barriers in the code) and run `warps` warps a block. With `prefetch`,
    the tile loads of a chunk loop's inputs are issued one iteration ahead
    into thread-private shared memory (`linac.prefetched` counts the words
    a thread stages per iteration).
  }];
  let options = [Option<"warps", "warps", "int64_t", "8", "warps a block (a power of two)">,
                 Option<"all", "all", "bool", "false", "also the backward kernels">,
                 Option<"prefetch", "prefetch", "bool", "false",
                        "load each chunk loop's inputs one iteration ahead (cp.async into thread-private "
                        "shared memory, double-buffered)">,
                 Option<"productSolves", "product-solves", "std::string", "\"none\"",
                        "the kernels (none, forward, backward or all) whose triangular solves (I + L) X = R are "
                        "products X = T R on the tensor cores (T = (I + L)^-1 computed for each solve by one warp, "
                        "both operands split); the others' are substitutions (a thread per column of R, in fp32)">,
                 Option<"substitution", "substitution", "std::string", "\"left\"",
                        "the substitutions' order: left (row by row, each row's terms one chain) or right "
                        "(each x_j's terms to every later row as soon as it is known: independent updates; "
                        "bit-identical results)">,
                 Option<"interleaveTerms", "interleave-terms", "bool", "false",
                        "a split product's two or three mma terms of a k step issued term by term over the warp's "
                        "fragments instead of fragment by fragment, so that consecutive mma go to different "
                        "accumulators (each accumulator's terms in the same order: bit-identical results)">];
  let dependentDialects = ["::mlir::gpu::GPUDialect", "::mlir::scf::SCFDialect", "::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect", "::mlir::NVVM::NVVMDialect",
                           "::mlir::LLVM::LLVMDialect", "::mlir::math::MathDialect"];
}

def LinacTileToLoops : Pass<"linac-tile-to-loops", "::mlir::ModuleOp"> {
  let summary = "Lower tile IR to scf loops over heap buffers (the CPU back end)";
  let description = [{
    Each tile value becomes a memref<?x?xf32> allocated where it is defined and
    freed at the end of its block; each tile op becomes a loop nest, and
    elementwise arith/math ops on tiles become the same op on elements.
  }];
  let options = [Option<"factorGates", "factor-gates", "bool", "false",
                        "per-key gated pair products in blocks of 16 rows as the GPU lowers them (pairs across "
                        "blocks through reference gates): lets the CPU numerics test the GPU's form">,
                 Option<"schedule", "schedule", "bool", "false",
                        "tile ops ordered by level as the GPU orders them (scheduleByLevel): lets the CPU "
                        "numerics test that the ordering keeps the program's meaning">];
  let dependentDialects = ["::mlir::scf::SCFDialect", "::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect", "::mlir::memref::MemRefDialect"];
}

def LinacFinalizeEntryPoints : Pass<"linac-finalize-entry-points", "::mlir::ModuleOp"> {
  let summary = "Add linac_<name>_forward (and _backward), which call the chosen variants, and drop the recurrences";
  let options = [Option<"forward", "forward", "std::string", "\"sequential\"",
                        "variant behind linac_<name>_forward: sequential or chunk<C>">,
                 Option<"backward", "backward", "std::string", "\"\"",
                        "variant behind linac_<name>_backward (chunk<C>); empty for none">];
  let dependentDialects = ["::mlir::func::FuncDialect"];
}

#endif
