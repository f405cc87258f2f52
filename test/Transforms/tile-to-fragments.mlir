// The register-resident lowering (linac-tile-to-fragments, an experiment): which fixed-size kernels it takes, and
// what a lowered one looks like.
// RUN: linac-opt %examples/simple_gla.mlir -linac-gpu-chunk="chunk-size=32 static-dims=128,128 split=0 io-type=bf16" -canonicalize -linac-tile-to-fragments | FileCheck %s
// RUN: linac-opt %examples/retnet.mlir -linac-gpu-chunk="chunk-size=64 static-dims=64,64 split=0 io-type=bf16" -canonicalize -linac-tile-to-fragments=warps=4 | FileCheck %s --check-prefix=RETNET
// RUN: linac-opt %examples/gated_deltanet.mlir -linac-gpu-chunk="chunk-size=32 static-dims=128,128 split=0 io-type=bf16" -canonicalize -linac-tile-to-fragments="warps=16 all=1" | FileCheck %s --check-prefix=SOLVE
// RUN: linac-opt %examples/gated_deltanet.mlir -linac-gpu-chunk="chunk-size=32 static-dims=128,128 split=0 io-type=bf16" -canonicalize -linac-tile-to-fragments="warps=8 all=1 prefetch=1" | FileCheck %s --check-prefix=PREFETCH
// RUN: linac-opt %examples/rwkv6.mlir -linac-gpu-chunk="chunk-size=16 static-dims=128,128 split=0 io-type=bf16 pair-kernel=none boundary-every=1" -canonicalize -linac-tile-to-fragments="warps=16 all=1" | FileCheck %s --check-prefix=ROWSUM
// RUN: linac-opt %examples/simple_gla.mlir -linac-gpu-chunk="chunk-size=32 static-dims=128,128 split=0 io-type=bf16 boundary-every=1" -canonicalize -linac-tile-to-fragments="warps=16 all=1" | FileCheck %s --check-prefix=BACKWARD
// RUN: linac-opt %examples/gated_deltanet.mlir -linac-gpu-chunk="chunk-size=32 static-dims=128,128 split=1 io-type=bf16" -canonicalize -linac-tile-to-fragments="warps=16 all=1" | FileCheck %s --check-prefix=SPLIT
// RUN: linac-opt %examples/hgrn.mlir -linac-gpu-chunk="chunk-size=32 static-dims=128,128 split=0 io-type=bf16" -canonicalize -linac-tile-to-fragments="warps=16 all=1" | FileCheck %s --check-prefix=SCAN
// RUN: linac-opt %examples/gla.mlir -linac-gpu-chunk="chunk-size=16 static-dims=256,256 split=0 io-type=bf16" -canonicalize -linac-tile-to-fragments="warps=16 all=1" | FileCheck %s --check-prefix=BIGSTATE
// RUN: linac-opt %examples/gla.mlir -linac-gpu-chunk="chunk-size=16 static-dims=128,128 split=0 io-type=bf16" -canonicalize -linac-tile-to-fragments=warps=16 | FileCheck %s --check-prefix=KEYGATES
// RUN: linac-opt %examples/simple_gla.mlir -linac-gpu-chunk="chunk-size=32 static-dims=128,128 split=0" -canonicalize -linac-tile-to-fragments | FileCheck %s --check-prefix=SKIPF32
// RUN: linac-opt %examples/simple_gla.mlir -linac-gpu-chunk="chunk-size=32 static-dims=128,128 split=0 io-type=bf16" -canonicalize -linac-tile-to-fragments -linac-tile-to-gpu | FileCheck %s --check-prefix=PIPELINE
// RUN: linac-opt %examples/gated_deltanet.mlir -linac-gpu-chunk="chunk-size=16 static-dims=128,128 split=0 io-type=bf16 static-slices=2" -canonicalize -linac-tile-to-fragments="all=1 prefetch=1" | FileCheck %s --check-prefix=SLICES
// RUN: not linac-opt %examples/simple_gla.mlir -linac-gpu-chunk="chunk-size=32" -linac-tile-to-fragments=warps=6 2>&1 | FileCheck %s --check-prefix=BADWARPS
// RUN: linac-opt %examples/gla.mlir -linac-gpu-chunk="chunk-size=16 static-dims=128,128 split=0 io-type=bf16" -canonicalize -linac-tile-to-fragments="warps=16 all=1" | FileCheck %s --check-prefix=PAIRGROUP
// RUN: linac-opt %examples/gla.mlir -linac-gpu-chunk="chunk-size=16 static-dims=128,128 split=0 io-type=bf16 pair-block-size=128" -canonicalize -linac-tile-to-fragments="warps=8 all=1" | FileCheck %s --check-prefix=PAIRWARPS
// RUN: not linac-opt %examples/gla.mlir -linac-gpu-chunk="chunk-size=16 static-dims=128,128 split=0 io-type=bf16 pair-block-size=96" -canonicalize -linac-tile-to-fragments="warps=8 all=1" 2>&1 | FileCheck %s --check-prefix=BADPAIRWARPS
// RUN: linac-opt %examples/gated_deltanet.mlir -linac-gpu-chunk="chunk-size=32 static-dims=128,128 split=0 io-type=bf16" -canonicalize -linac-tile-to-fragments="warps=8 all=1 prefetch=1 product-solves=all" | FileCheck %s --check-prefix=SOLVEPRODUCT
// RUN: linac-opt %examples/gated_deltanet.mlir -linac-gpu-chunk="chunk-size=32 static-dims=128,128 split=0 io-type=bf16" -canonicalize -linac-tile-to-fragments="warps=8 all=1 prefetch=1 product-solves=forward" | FileCheck %s --check-prefix=PRODUCTFWD
// RUN: not linac-opt %examples/simple_gla.mlir -linac-gpu-chunk="chunk-size=32" -linac-tile-to-fragments=product-solves=inverse 2>&1 | FileCheck %s --check-prefix=BADSOLVE
// RUN: linac-opt %examples/gated_deltanet.mlir -linac-gpu-chunk="chunk-size=32 static-dims=128,128 split=0 io-type=bf16" -canonicalize -linac-tile-to-fragments="warps=8" | FileCheck %s --check-prefix=LEFT
// RUN: linac-opt %examples/gated_deltanet.mlir -linac-gpu-chunk="chunk-size=32 static-dims=128,128 split=0 io-type=bf16" -canonicalize -linac-tile-to-fragments="warps=8 all=1 substitution=right" | FileCheck %s --check-prefix=RIGHT
// RUN: not linac-opt %examples/simple_gla.mlir -linac-gpu-chunk="chunk-size=32" -linac-tile-to-fragments=substitution=up 2>&1 | FileCheck %s --check-prefix=BADSUBST
// RUN: linac-opt %examples/retnet.mlir -linac-gpu-chunk="chunk-size=32 static-dims=128,128 split=0 io-type=bf16" -canonicalize -linac-tile-to-fragments="warps=8 all=1 interleave-terms=1" | FileCheck %s --check-prefix=INTERLEAVE

// The generic kernel keeps its tile ops; the fixed-size forward has none left: its tiles are values in
// registers, its products bf16 mma.sync from operand copies (a tile's copy in its own layout, its pairs of
// columns stored as 32-bit words; the fragments read by ldmatrix, .trans where a product takes the transpose),
// and three barriers a chunk (every copy the first product reads, the pair tile the second reads, the loop's end
// before the copies are rewritten).
// CHECK: gpu.func @linac_simple_gla_forward_chunk32(
// CHECK: linac.tile.gated_dot
// CHECK: gpu.func @linac_simple_gla_forward_chunk32_k128_v128(
// CHECK-SAME: known_block_size = array<i32: 256, 1, 1>
// CHECK-SAME: linac.fragments = 3
// CHECK-SAME: linac.products = "bf16"
// CHECK-SAME: linac.tile_slot_sizes = ["20224"]
// CHECK-NOT: linac.tile.
// CHECK: llvm.alloca {{.*}} x !llvm.array<64 x f32>
// CHECK-NOT: linac.tile.
// CHECK: scf.for
// CHECK-NOT: linac.tile.
// CHECK: gpu.shuffle  up
// CHECK-NOT: linac.tile.
// CHECK: llvm.store {{.*}} : i32, !llvm.ptr<3>
// CHECK-NOT: linac.tile.
// CHECK: gpu.barrier
// CHECK-NOT: linac.tile.
// CHECK: nvvm.ldmatrix {{.*}}layout = #nvvm.mma_layout<row>, num = 4 : i32{{.*}} -> !llvm.struct<(i32, i32, i32, i32)>
// CHECK-NOT: linac.tile.
// CHECK: nvvm.mma.sync {{.*}}multiplicandAPtxType = #nvvm.mma_type<bf16>{{.*}}shape = #nvvm.shape<m = 16, n = 8, k = 16>
// CHECK-NOT: linac.tile.
// CHECK: gpu.barrier
// CHECK-NOT: linac.tile.
// CHECK: nvvm.ldmatrix {{.*}}layout = #nvvm.mma_layout<col>, num = 4 : i32
// CHECK-NOT: linac.tile.
// CHECK: gpu.barrier
// CHECK-NOT: linac.tile.
// CHECK: gpu.return
// The backward kernels are left to linac-tile-to-gpu.
// CHECK: gpu.func @linac_simple_gla_backward_chunk32_k128_v128(
// CHECK-NOT: linac.fragments =
// CHECK: linac.tile.

// At 4 warps and K = V = 64 the state is 64 x 64: 32 values a thread.
// RETNET: gpu.func @linac_retnet_forward_chunk64_k64_v64(
// RETNET-SAME: known_block_size = array<i32: 128, 1, 1>
// RETNET-SAME: linac.fragments = 3
// RETNET: llvm.alloca {{.*}} x !llvm.array<32 x f32>

// The delta rule's forward: the triangular solve in fp32 through shared memory (a thread per column), six
// barriers a chunk; its backward (with all=1) too, its copies sharing bytes where a barrier separates their uses
// (225 KB with the low parts of its state-reading products' operands, below; 213 KB with the states' only, 143 KB
// without them).
// SOLVE: gpu.func @linac_gated_deltanet_forward_chunk32_k128_v128(
// SOLVE-SAME: known_block_size = array<i32: 512, 1, 1>
// SOLVE-SAME: linac.fragments = 6
// SOLVE-SAME: linac.tile_slot_sizes = ["24960"]
// SOLVE-NOT: linac.tile.
// SOLVE: gpu.return
// SOLVE: gpu.func @linac_gated_deltanet_backward_chunk32_k128_v128(
// SOLVE-SAME: linac.fragments = 27
// SOLVE-SAME: linac.tile_slot_sizes = ["57600"]
// SOLVE-NOT: linac.tile.
// SOLVE: gpu.return

// With prefetch, the chunk loop's input loads (q, k, v as bf16 pairs: 8 words a thread each at 8 warps; the
// gates and beta as 16-bit elements, a word each) are staged one chunk ahead: the first chunk's copies before
// the loop, then in each iteration a wait for its own and the next one's copies. The backward's copies (225 KB
// with its split operands' low parts) leave no room for staged words (18 a thread with only the states' low
// parts, 52 without any).
// PREFETCH: gpu.func @linac_gated_deltanet_forward_chunk32_k128_v128(
// PREFETCH-SAME: linac.prefetched = 26
// PREFETCH: nvvm.cp.async.shared.global {{.*}}, 4, cache =  ca
// PREFETCH: nvvm.cp.async.commit.group
// PREFETCH-NEXT: scf.for %[[IV:.*]] = %{{.*}} to %[[UB:.*]] step %[[STEP:[^ ]*]]
// PREFETCH-NEXT: nvvm.cp.async.wait.group 0
// Only an iteration that exists is staged: past the last one (chunk -1 of a loop in reverse order) the rows
// that exist are none and nothing is read.
// PREFETCH: %[[NEXT:.*]] = arith.addi %[[IV]], %[[STEP]] : index
// PREFETCH-NEXT: %[[RUNS:.*]] = arith.cmpi slt, %[[NEXT]], %[[UB]] : index
// PREFETCH: arith.select %[[RUNS]], %{{.*}}, %c0{{.*}} : index
// PREFETCH: nvvm.cp.async.shared.global {{.*}}, 4, cache =  ca
// PREFETCH: nvvm.cp.async.commit.group
// PREFETCH: gpu.return
// PREFETCH: gpu.func @linac_gated_deltanet_backward_chunk32_k128_v128(
// PREFETCH-NOT: linac.prefetched
// Its boundary states stay fp32 (bf16 ones failed GDN's gate gradient at K = V = 128: 1.66e-2).
// PREFETCH-NOT: memref<?xbf16> {linac.chunk_boundaries}
// Loads not staged take adjacent fp32 columns in pairs.
// PREFETCH: llvm.load {{.*}} {alignment = 8 : i64} : !llvm.ptr<1> -> vector<2xf32>

// Per-key gates (GLA at chunk 16): the gates' prefix sums by warp shuffles (each warp holds all 16 rows), each pair's
// exponents over the key channels split across lanes (summed by xor shuffles), exactly on the CUDA cores.
// KEYGATES: gpu.func @linac_gla_forward_chunk16_k128_v128(
// KEYGATES-SAME: known_block_size = array<i32: 512, 1, 1>
// KEYGATES-SAME: linac.fragments = 4
// The per-key pair product over the 136 kept pairs of 16 x 16 only, two lanes a pair: 272 jobs on 288 threads
// (whole warps; the surplus lanes repeat the last job and store nothing).
// KEYGATES-NOT: linac.tile.
// KEYGATES: arith.cmpi slt, %[[SLOT:.*]], %c288
// KEYGATES: arith.cmpi slt, %[[SLOT]], %c272
// KEYGATES: arith.constant 271
// KEYGATES-NOT: linac.tile.
// Each pair's exponential as exp2(x log2 e) (ex2.approx on the GPU), not the correctly rounded expansion.
// KEYGATES-NOT: math.exp {{%}}
// KEYGATES: arith.mulf %{{.*}}, %cst{{.*}} : f32
// KEYGATES-NEXT: math.exp2
// KEYGATES-NOT: math.exp {{%}}
// KEYGATES: math.fma
// KEYGATES-NOT: math.exp {{%}}
// KEYGATES-NOT: linac.tile.
// KEYGATES: gpu.shuffle  xor
// KEYGATES-NOT: linac.tile.
// KEYGATES: nvvm.mma.sync
// KEYGATES-NOT: linac.tile.
// KEYGATES: gpu.return
// Without `all`, the backward is left to linac-tile-to-gpu; GLA's backward with `all` is in ROWSUM's RWKV-6.
// KEYGATES: gpu.func @linac_gla_backward_chunk16_k128_v128(
// KEYGATES-NOT: linac.fragments
// KEYGATES-SAME: {

// GLA's pairs kernel: the score's per-key pair product (136 kept pairs, two lanes a pair: 64 exponentials a
// lane), dO V^T on the tensor cores, then the three per-key pair products of dA (dq's row sums, dk's column sums,
// the gate gradient) in one pass: four lanes a channel, rows 15 down to 0, each kept pair's exponential once and
// shared by all three (floor(i / 4) + 1 a row: 40 a lane; the three separate lowerings each computed their own),
// as exp2(x log2 e) (ex2.approx) in the pairs kernel (the whole per-key backward keeps the exact exp: ROWSUM).
// Its gradients are added into the in-order backward's (it runs after it), atomically.
// PAIRGROUP: gpu.func @linac_gla_backward_chunk16_pairs_k128_v128(
// PAIRGROUP-SAME: linac.fragments = 6
// PAIRGROUP-NOT: linac.tile.
// PAIRGROUP-COUNT-64: math.exp2
// PAIRGROUP-NOT: math.exp
// PAIRGROUP: nvvm.mma.sync
// PAIRGROUP-NOT: math.exp
// PAIRGROUP: gpu.barrier
// PAIRGROUP: arith.cmpi slt, %{{.*}}, %c512 : index
// PAIRGROUP-COUNT-40: math.exp2
// PAIRGROUP-NOT: math.exp
// PAIRGROUP: gpu.barrier
// PAIRGROUP-NOT: math.exp
// PAIRGROUP-NOT: linac.tile.
// PAIRGROUP: memref.atomic_rmw addf
// PAIRGROUP-NOT: linac.tile.
// PAIRGROUP: gpu.return

// An explicit pair-block-size sets the pairs kernel's warps in this lowering too (the rest keep the pass's 8);
// one it cannot take is an error, not ignored.
// PAIRWARPS: gpu.func @linac_gla_backward_chunk16_pairs_k128_v128(
// PAIRWARPS-SAME: known_block_size = array<i32: 128, 1, 1>
// PAIRWARPS-SAME: linac.fragment_warps = 4
// PAIRWARPS: gpu.func @linac_gla_backward_chunk16_k128_v128(
// PAIRWARPS-SAME: known_block_size = array<i32: 256, 1, 1>
// BADPAIRWARPS: error: linac-tile-to-fragments: linac_gla_backward_chunk16_pairs_k128_v128's block size must be a power of two from 32 to 1024 threads here, not 96

// The scalar-gate backward with all=1: both of its loops (the chunks' states forward, unless the training
// forward saved them, then the chunks in reverse) in registers, its two running states (S and dS) per-thread arrays, its gate gradient summed pair by
// pair over an fp32 copy. A product that reads a running state takes both operands split (but a bf16 input as
// loaded): a second bf16 copy of what bf16 drops (x - bf16(x), the pair rounded by one cvt) and one more mma a
// fragment for each (116 -> 180 mma; 126 -> 203 KB of copies).
// BACKWARD: gpu.func @linac_simple_gla_backward_chunk32_k128_v128(
// BACKWARD-SAME: known_block_size = array<i32: 512, 1, 1>
// BACKWARD-SAME: linac.fragments = 12
// BACKWARD-SAME: linac.tile_slot_sizes = ["51840"]
// BACKWARD-NOT: linac.tile.
// BACKWARD-COUNT-2: llvm.alloca {{.*}} x !llvm.array<32 x f32>
// BACKWARD-NOT: linac.tile.
// BACKWARD-COUNT-180: nvvm.mma.sync
// BACKWARD-NOT: nvvm.mma.sync
// BACKWARD: gpu.return

// RWKV-6's bonus (a row sum, across warps through shared memory) in the forward; the backward's per-key
// adjoints (gated_matmul, gate_grad on the CUDA cores in fp32, one exp per pair and channel: PAIRGROUP), the row of the decay
// gradient scattered into a matrix, and the bonus gradient added atomically by the first warp (4 values a lane).
// Every kernel gets all the registers its block size allows. (pair-kernel=none: the whole backward, with its pairs
// and the exact exp: ex2.approx made it spill more and run 19-23% slower, bench/NOTES.md v23.)
// ROWSUM: gpu.func @linac_rwkv6_forward_chunk16_k128_v128(
// ROWSUM-SAME: linac.fragments = 5
// ROWSUM-SAME: nvvm.maxnreg = 128 : i32
// ROWSUM-NOT: linac.tile.
// ROWSUM: gpu.return
// ROWSUM: gpu.func @linac_rwkv6_backward_chunk16_k128_v128(
// ROWSUM-SAME: linac.fragments = 12
// ROWSUM-NOT: linac.tile.
// ROWSUM-COUNT-2: llvm.alloca {{.*}} x !llvm.array<32 x f32>
// ROWSUM-NOT: linac.tile.
// ROWSUM-NOT: math.exp2
// ROWSUM: math.exp {{%}}
// ROWSUM-NOT: linac.tile.
// ROWSUM-NOT: math.exp2
// ROWSUM-COUNT-4: memref.atomic_rmw addf
// ROWSUM-NOT: memref.atomic_rmw
// ROWSUM-NOT: math.exp2
// ROWSUM: gpu.return

// The split's phase kernels (--gpu-split): the before and after kernels loop over chunk slots and run a chunk
// under a condition the whole block shares, so the conditional gets a barrier on each side; the chain is
// lowered too. The after kernel adds its gradients into dinputs (atomics, the split's phases share rows).
// SPLIT: gpu.func @linac_gated_deltanet_forward_chunk32_before_k128_v128(
// SPLIT-SAME: linac.fragments =
// SPLIT: gpu.func @linac_gated_deltanet_forward_chunk32_chain_k128_v128(
// SPLIT-SAME: linac.fragments = 3
// SPLIT: gpu.func @linac_gated_deltanet_backward_chunk32_after_k128_v128(
// SPLIT-SAME: linac.fragments = 23
// SPLIT-SAME: linac.phase = "after"
// SPLIT-NOT: linac.tile.
// SPLIT: scf.for %{{.*}} = %block_id_x to %{{.*}} step %grid_dim_x {
// SPLIT-NOT: linac.tile.
// SPLIT-COUNT-26: memref.atomic_rmw addf
// SPLIT-NEXT: }
// SPLIT-NEXT: }
// SPLIT-NEXT: gpu.barrier
// SPLIT-NEXT: }
// SPLIT-NEXT: gpu.return

// What it has no lowering for yet, said on the kernel.
// HGRN's vector state (a gated scan), and head dim 256 (a state of 128 values a thread at 16 warps).
// SCAN: gpu.func @linac_hgrn_forward_chunk32_k128_v128(
// SCAN-SAME: linac.fragments_skipped = "'linac.tile.gated_scan'"
// BIGSTATE: gpu.func @linac_gla_backward_chunk16_k256_v256(
// BIGSTATE-SAME: linac.fragments_skipped = "a running state of 128 values a thread"
// SKIPF32: gpu.func @linac_simple_gla_forward_chunk32_k128_v128(
// SKIPF32-SAME: linac.fragments_skipped = "inputs not bf16"

// Two value slices (static-slices=2): each block reads its slice's columns of the state, at one offset (the
// slice's first column) in every access, and keeps them in registers like a whole state; the copies are built
// for two blocks a multiprocessor (128 registers, half the shared memory). (A skipped kernel has no
// linac.fragments.)
// SLICES: gpu.func @linac_gated_deltanet_forward_chunk16_k128_v128_z2(
// SLICES-SAME: linac.fragments =
// SLICES-SAME: linac.static_dims = array<i64: 128, 128, 2>
// SLICES-SAME: nvvm.maxnreg = 128
// SLICES: gpu.func @linac_gated_deltanet_backward_chunk16_k128_v128_z2(
// SLICES-SAME: linac.fragments =
// SLICES-SAME: linac.static_dims = array<i64: 128, 128, 2>
// SLICES-SAME: nvvm.maxnreg = 128

// linac-tile-to-gpu lowers the other kernels and leaves the lowered one as it is.
// PIPELINE: gpu.func @linac_simple_gla_forward_chunk32(
// PIPELINE-SAME: linac.tile_slot_sizes = [
// PIPELINE-NOT: linac.tile.
// PIPELINE: gpu.func @linac_simple_gla_forward_chunk32_k128_v128(
// PIPELINE-SAME: linac.fragments = 3
// PIPELINE-SAME: linac.tile_slot_sizes = ["20224"]
// PIPELINE-NOT: linac.tile.
// PIPELINE: gpu.func @linac_simple_gla_backward_chunk32(

// BADWARPS: linac-tile-to-fragments: warps must be a power of two in [1, 32], not 6

// product-solves=all: each triangular solve is X = T R with T = (I + L)^-1, computed by one warp (a lane per
// column of T: the unrolled chain of 496 FMAs over L's columns, fp32) and written as split bf16 copies (a 16-bit
// element a row: 32 high and 32 low parts a lane), then a product on the tensor cores; no substitution (its
// rows of L read four at a time) is left. The backward runs two (its forward solve and the adjoint's
// transposed one) and fits in shared memory only in the placement's other orders (the first-access order leaves
// holes: 239,616 bytes where at most 228,352 are live at once).
// SOLVEPRODUCT: gpu.func @linac_gated_deltanet_forward_chunk32_k128_v128(
// SOLVEPRODUCT-NOT: vector<4xf32>
// SOLVEPRODUCT: scf.if
// SOLVEPRODUCT: math.fma
// SOLVEPRODUCT-COUNT-64: llvm.store {{.*}} : i16, !llvm.ptr<3>
// SOLVEPRODUCT: nvvm.mma.sync
// SOLVEPRODUCT-NOT: vector<4xf32>
// SOLVEPRODUCT: gpu.return
// SOLVEPRODUCT: gpu.func @linac_gated_deltanet_backward_chunk32_k128_v128(
// SOLVEPRODUCT-SAME: linac.fragments =
// SOLVEPRODUCT-COUNT-128: llvm.store {{.*}} : i16, !llvm.ptr<3>
// SOLVEPRODUCT: gpu.return
// SOLVEPRODUCT-NOT: linac.fragments_skipped

// product-solves=forward (linacc's default): the forward's solve is a product, the backward keeps its
// substitutions (rows of L read four at a time, no 16-bit copies of an inverse) and its first-access placement.
// PRODUCTFWD: gpu.func @linac_gated_deltanet_forward_chunk32_k128_v128(
// PRODUCTFWD-NOT: vector<4xf32>
// PRODUCTFWD-COUNT-64: llvm.store {{.*}} : i16, !llvm.ptr<3>
// PRODUCTFWD-NOT: vector<4xf32>
// PRODUCTFWD: gpu.return
// PRODUCTFWD: gpu.func @linac_gated_deltanet_backward_chunk32_k128_v128(
// PRODUCTFWD-SAME: linac.tile_slot_sizes = ["57600"]
// PRODUCTFWD-NOT: : i16, !llvm.ptr<3>
// PRODUCTFWD: vector<4xf32>
// PRODUCTFWD-NOT: : i16, !llvm.ptr<3>
// PRODUCTFWD: gpu.return

// BADSOLVE: linac-tile-to-fragments: product-solves must be none, forward, backward or all, not 'inverse'

// The substitution's order. Left (the default): row by row, each row's x_i stored as soon as its chain of terms
// ends, so a store comes between the first row's term and the next row's.
// LEFT: gpu.func @linac_gated_deltanet_forward_chunk32_k128_v128(
// LEFT: math.fma
// LEFT-NEXT: llvm.getelementptr
// LEFT-NEXT: llvm.store
// Right: the column in registers; x_0's terms go to the rows below before any store (forward: rows in blocks
// of four, 496 terms for C = 32, then the 32 stores); the transposed solve of the backward reads L's rows four
// entries at a time.
// RIGHT: gpu.func @linac_gated_deltanet_forward_chunk32_k128_v128(
// RIGHT: math.fma
// RIGHT-NOT: llvm.store
// RIGHT: math.fma
// RIGHT-NOT: llvm.store
// RIGHT-COUNT-494: math.fma
// RIGHT-NOT: math.fma
// RIGHT-COUNT-32: llvm.store {{.*}} : f32, !llvm.ptr<3>
// RIGHT: gpu.return
// RIGHT: gpu.func @linac_gated_deltanet_backward_chunk32_k128_v128(
// RIGHT: gpu.return
// BADSUBST: linac-tile-to-fragments: substitution must be left or right, not 'up'

// interleave-terms: a split product's terms go term by term over the warp's fragments (in RetNet's backward,
// 143 of its 360 mma follow the mma whose accumulator they continue by default, 15 with the option: single-fragment
// groups), the same 360 mma.
// INTERLEAVE: gpu.func @linac_retnet_backward_chunk32_k128_v128(
// INTERLEAVE-COUNT-360: nvvm.mma.sync
// INTERLEAVE-NOT: nvvm.mma.sync
// INTERLEAVE: gpu.return
