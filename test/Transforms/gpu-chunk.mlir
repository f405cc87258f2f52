// RUN: linac-opt %examples/gated_deltanet.mlir -linac-gpu-chunk="chunk-size=32 split=0" | FileCheck %s
// RUN: linac-opt %examples/gated_deltanet.mlir -linac-gpu-chunk="chunk-size=32 split=0" -linac-tile-to-gpu | FileCheck %s --check-prefix=LOOPS
// RUN: linac-opt %examples/gated_deltanet.mlir -linac-gpu-chunk="chunk-size=32 static-dims=128,64 split=0" -canonicalize -linac-tile-to-gpu | FileCheck %s --check-prefix=STATIC
// RUN: linac-opt %examples/gated_deltanet.mlir -linac-gpu-chunk="chunk-size=32 static-dims=128,64 split=0 static-slices=2" | FileCheck %s --check-prefix=OWNED
// RUN: linac-opt %examples/rwkv6.mlir -linac-gpu-chunk="chunk-size=16 static-dims=64,64 split=0 pair-kernel=none" | FileCheck %s --check-prefix=OWNEDHEAD
// RUN: linac-opt %examples/gla.mlir -linac-gpu-chunk="chunk-size=16 static-dims=128,128" | FileCheck %s --check-prefix=PAIRS
// RUN: linac-opt %examples/rwkv6.mlir -linac-gpu-chunk="chunk-size=16 static-dims=64,64" | FileCheck %s --check-prefix=PAIRSHEAD
// RUN: linac-opt %examples/gated_deltanet.mlir -linac-gpu-chunk="chunk-size=32 pair-kernel=all" | FileCheck %s --check-prefix=NOPAIRS
// RUN: linac-opt %examples/simple_gla.mlir -linac-gpu-chunk="chunk-size=32" | FileCheck %s --check-prefix=NOPAIRS
// RUN: linac-opt %examples/simple_gla.mlir -linac-gpu-chunk="chunk-size=32 pair-kernel=all" | FileCheck %s --check-prefix=SCALARPAIRS
// RUN: linac-opt %examples/gla.mlir -linac-gpu-chunk="chunk-size=16 pair-kernel=none" | FileCheck %s --check-prefix=NOPAIRS
// RUN: not linac-opt %examples/gla.mlir -linac-gpu-chunk="pair-blocks-per-sm=33" 2>&1 | FileCheck %s --check-prefix=BADPAIRS
// RUN: not linac-opt %examples/gla.mlir -linac-gpu-chunk="pair-kernel=some" 2>&1 | FileCheck %s --check-prefix=BADPAIRKIND
// RUN: linac-opt %examples/gated_deltanet.mlir -linac-gpu-chunk="chunk-size=32 static-dims=128,128 tail-kernel=all" | FileCheck %s --check-prefix=TAIL
// RUN: linac-opt %examples/gla.mlir -linac-gpu-chunk="chunk-size=16 tail-kernel=all" | FileCheck %s --check-prefix=NOTAIL
// RUN: linac-opt %examples/hgrn.mlir -linac-gpu-chunk="chunk-size=16 tail-kernel=all" | FileCheck %s --check-prefix=NOTAIL
// RUN: not linac-opt %examples/gla.mlir -linac-gpu-chunk="tail-kernel=some" 2>&1 | FileCheck %s --check-prefix=BADTAIL
// RUN: not linac-opt %examples/gla.mlir -linac-gpu-chunk="tail-blocks-per-sm=0" 2>&1 | FileCheck %s --check-prefix=BADTAIL
// RUN: linac-opt %examples/gated_deltanet.mlir -linac-gpu-chunk="chunk-size=32 static-dims=128,64 split=0" -canonicalize -linac-tile-to-gpu | FileCheck %s --check-prefix=PRIVATE
// RUN: linac-opt %examples/gated_deltanet.mlir -linac-gpu-chunk="chunk-size=32 static-dims=128,64 split=0" -canonicalize -linac-tile-to-gpu | FileCheck %s --check-prefix=SUMS
// RUN: linac-opt %examples/gated_deltanet.mlir -linac-gpu-chunk="chunk-size=32 split=1" | FileCheck %s --check-prefix=SPLIT
// RUN: linac-opt %examples/gated_deltanet.mlir -linac-gpu-chunk="chunk-size=32 static-dims=128,128 split=1" -canonicalize -linac-tile-to-gpu | FileCheck %s --check-prefix=SPLITLOOPS
// RUN: linac-opt %examples/gated_deltanet.mlir -linac-gpu-chunk="chunk-size=32 split=0" -linac-tile-to-gpu=products=tf32 | FileCheck %s --check-prefix=TF32
// RUN: not linac-opt %examples/gated_deltanet.mlir -linac-gpu-chunk="chunk-size=32" -linac-tile-to-gpu=products=fp16 2>&1 | FileCheck %s --check-prefix=BADPRODUCTS
// RUN: linac-opt %examples/gated_deltanet.mlir -linac-gpu-chunk="chunk-size=32 split=0" -linac-tile-to-gpu=products=bf16 | FileCheck %s --check-prefix=BF16MMA
// RUN: linac-opt %examples/gated_deltanet.mlir -linac-gpu-chunk="chunk-size=32 static-dims=128,128,256,256 split=0" | FileCheck %s --check-prefix=THREADS
// RUN: linac-opt %examples/gla.mlir -linac-gpu-chunk="chunk-size=32 static-dims=128,128 split=0" | FileCheck %s --check-prefix=GLATHREADS
// RUN: linac-opt %examples/gated_deltanet.mlir -linac-gpu-chunk="chunk-size=32 static-dims=128,128,256,256 split=1" | FileCheck %s --check-prefix=SPLITTHREADS
// RUN: linac-opt %examples/gla.mlir -linac-gpu-chunk="chunk-size=32 static-dims=128,128 static-slices=2 split=0" | FileCheck %s --check-prefix=SLICES
// RUN: not linac-opt %examples/gla.mlir -linac-gpu-chunk="chunk-size=32 static-slices=9" 2>&1 | FileCheck %s --check-prefix=BADSLICES
// RUN: linac-opt %examples/gated_deltanet.mlir -linac-gpu-chunk="chunk-size=32 split=0 io-type=bf16" | FileCheck %s --check-prefix=BF16
// RUN: linac-opt %examples/gated_deltanet.mlir -linac-gpu-chunk="chunk-size=32 split=0 io-type=bf16" -linac-tile-to-gpu | FileCheck %s --check-prefix=BF16LOOPS
// RUN: linac-opt %examples/gated_deltanet.mlir -linac-gpu-chunk="chunk-size=32 split=0 io-type=f16" -linac-tile-to-gpu | FileCheck %s --check-prefix=F16LOOPS
// RUN: not linac-opt %examples/gated_deltanet.mlir -linac-gpu-chunk="chunk-size=32 io-type=f8" 2>&1 | FileCheck %s --check-prefix=BADIO
// RUN: not linac-opt %examples/gated_deltanet.mlir -linac-gpu-chunk="chunk-size=32" -linac-gpu-chunk="chunk-size=16 io-type=bf16" 2>&1 | FileCheck %s --check-prefix=MIXEDIO
// RUN: linac-opt %examples/gated_deltanet.mlir -linac-gpu-chunk="chunk-size=32 static-dims=128,128 split=0" -canonicalize -linac-tile-to-gpu | FileCheck %s --check-prefix=PATTERN
// RUN: linac-opt %examples/gated_deltanet.mlir -linac-gpu-chunk="chunk-size=32 static-dims=128,128 split=0" -canonicalize -linac-tile-to-gpu="pad-by-pattern=none wide-warp-tiles=none schedule=none" | FileCheck %s --check-prefix=NOPATTERN
// RUN: linac-opt %examples/gated_deltanet.mlir -linac-gpu-chunk="chunk-size=32 static-dims=128,128 split=0" -canonicalize -linac-tile-to-gpu="pad-by-pattern=all wide-warp-tiles=all" | FileCheck %s --check-prefix=ALLPATTERN
// RUN: not linac-opt %examples/gated_deltanet.mlir -linac-gpu-chunk="chunk-size=32" -linac-tile-to-gpu=pad-by-pattern=backward 2>&1 | FileCheck %s --check-prefix=BADPATTERN
// RUN: linac-opt %examples/gated_deltanet.mlir -linac-gpu-chunk="chunk-size=32 static-dims=128,128 split=0 io-type=bf16" -canonicalize -linac-tile-to-gpu=products=tf32 | FileCheck %s --check-prefix=SCHEDULE
// RUN: linac-opt %examples/gated_deltanet.mlir -linac-gpu-chunk="chunk-size=32 static-dims=128,128 split=0 io-type=bf16" -canonicalize -linac-tile-to-gpu="products=tf32 schedule=all" | FileCheck %s --check-prefix=SCHEDULEALL
// RUN: linac-opt %examples/gated_deltanet.mlir -linac-gpu-chunk="chunk-size=32 static-dims=128,128 split=0 io-type=bf16" -canonicalize -linac-tile-to-gpu="products=tf32 schedule=none" | FileCheck %s --check-prefix=SCHEDULENONE
// RUN: not linac-opt %examples/gated_deltanet.mlir -linac-gpu-chunk="chunk-size=32" -linac-tile-to-gpu=schedule=early 2>&1 | FileCheck %s --check-prefix=BADSCHEDULE
// RUN: linac-opt %examples/simple_gla.mlir -linac-gpu-chunk="chunk-size=32 static-dims=128,128 split=0 io-type=bf16" -canonicalize -linac-tile-to-gpu=products=tf32 | FileCheck %s --check-prefix=ACCESSES
// RUN: linac-opt %examples/simple_gla.mlir -linac-gpu-chunk="chunk-size=32 static-dims=128,128 split=0 io-type=bf16 boundary-every=1" -canonicalize -linac-tile-to-gpu="products=tf32 placement=latency" | FileCheck %s --check-prefix=LATENCY
// RUN: not linac-opt %examples/gated_deltanet.mlir -linac-gpu-chunk="chunk-size=32" -linac-tile-to-gpu=placement=traffic 2>&1 | FileCheck %s --check-prefix=BADPLACEMENT
// RUN: linac-opt %examples/gated_deltanet.mlir -linac-gpu-chunk="chunk-size=32 static-dims=128,128 split=0 io-type=bf16" -canonicalize -linac-tile-to-gpu="products=tf32 unroll-global-k=4" | FileCheck %s --check-prefix=UNROLLK
// RUN: linac-opt %examples/gla.mlir -linac-gpu-chunk="chunk-size=16 static-dims=128,128 split=0 boundary-slices=4" | FileCheck %s --check-prefix=BOUNDARIES
// RUN: not linac-opt %examples/gla.mlir -linac-gpu-chunk="boundary-slices=9" 2>&1 | FileCheck %s --check-prefix=BADBOUNDARIES
// RUN: linac-opt %examples/gla.mlir -linac-gpu-chunk="chunk-size=16 boundary-every=2" | FileCheck %s --check-prefix=EVERY
// RUN: not linac-opt %examples/gla.mlir -linac-gpu-chunk="boundary-every=65" 2>&1 | FileCheck %s --check-prefix=BADEVERY
// RUN: linac-opt %examples/gated_deltanet.mlir -linac-gpu-chunk="chunk-size=32 save-solves=on boundary-every=2" -canonicalize | FileCheck %s --check-prefix=SOLVES
// RUN: linac-opt %examples/deltanet.mlir -linac-gpu-chunk="chunk-size=32 io-type=bf16" | FileCheck %s --check-prefix=SOLVESAUTO
// RUN: linac-opt %examples/gated_deltanet.mlir -linac-gpu-chunk="chunk-size=32 io-type=bf16" | FileCheck %s --check-prefix=NOSOLVES
// RUN: not linac-opt %examples/deltanet.mlir -linac-gpu-chunk="save-solves=yes" 2>&1 | FileCheck %s --check-prefix=BADSOLVES
// RUN: linac-opt %examples/gated_deltanet.mlir -linac-gpu-chunk="chunk-size=32 static-dims=128,128 split=0 io-type=bf16" -canonicalize | FileCheck %s --check-prefix=SCALES
// RUN: linac-opt %examples/deltanet.mlir -linac-gpu-chunk="chunk-size=32 split=0" | FileCheck %s --check-prefix=SIMPLIFY

// split=1, the chunk-parallel split (matrix states; not the default: slower at the benchmark shape, see
// bench/NOTES.md): per direction a before kernel (block x: a chunk
// slot, found by binary search over the sequences; block y: the head) storing what the chain reads, a chain
// kernel over (head, sequence, value slice) with no solve in it, and an after kernel per chunk slot.
// SPLIT: gpu.func @linac_gated_deltanet_forward_chunk32_before(
// SPLIT-SAME: linac.frontier_size = "32 * V + 32 * K + 1 * 1 + 32 * K"
// SPLIT-SAME: linac.phase = "before"
// SPLIT: gpu.block_id x
// SPLIT: scf.for {{.*}} iter_args
// SPLIT: scf.if
// SPLIT: linac.tile.tri_solve
// SPLIT: linac.tile.tri_solve
// SPLIT: linac.tile.store
// SPLIT: gpu.func @linac_gated_deltanet_forward_chunk32_chain(
// SPLIT: gpu.block_id z
// SPLIT: scf.for
// SPLIT-NOT: linac.tile.tri_solve
// SPLIT: linac.tile.matmul
// SPLIT: gpu.func @linac_gated_deltanet_forward_chunk32_after(
// SPLIT: linac.tile.gated_dot
// SPLIT: gpu.func @linac_gated_deltanet_backward_chunk32_before(
// The chain computes the state-sized tiles it reads (K^T of the chunk's corrected values) from chunk-sized
// frontier tiles: no K x V tile in the frontier.
// SPLIT-SAME: linac.frontier_size = "32 * K + 32 * K + 1 * 1 + 32 * K + 32 * V + 32 * V"
// SPLIT: gpu.func @linac_gated_deltanet_backward_chunk32_chain(
// SPLIT-NOT: linac.tile.tri_solve
// SPLIT: gpu.func @linac_gated_deltanet_backward_chunk32_after(
// SPLIT: linac.tile.tri_solve {{.*}} {transpose}
// SPLIT: linac.tile.store {{.*}} {accumulate}

// Each split kernel and its fixed-size copy lower; the chain's tiles are few.
// SPLITLOOPS: gpu.func @linac_gated_deltanet_forward_chunk32_chain_k128_v128(
// SPLITLOOPS-SAME: linac.tile_slots = 6
// SPLITLOOPS: gpu.func @linac_gated_deltanet_backward_chunk32_after_k128_v128(
// SPLITLOOPS-NOT: linac.tile.

// split=0 (the default): one kernel per recurrence and direction, the delta rule solved once per chunk with S_0
// in the right-hand side: block (h, n) runs sequence n, head h; the chunk body is the CPU's tile IR.
// CHECK: gpu.module @linac_kernels
// CHECK: gpu.func @linac_gated_deltanet_forward_chunk32({{.*}}) kernel attributes
// CHECK-SAME: known_block_size = array<i32: 512, 1, 1>
// CHECK-SAME: linac.chunk_size = 32
// CHECK: gpu.block_id x
// CHECK: gpu.block_id y
// CHECK: scf.for
// CHECK: linac.tile.gated_dot
// CHECK: linac.tile.tri_solve
// CHECK: gpu.return

// The derived backward in the same module: forward with boundary states kept, then chunks in reverse, with
// the adjoint tiles and accumulating gradient stores.
// CHECK: gpu.func @linac_gated_deltanet_backward_chunk32({{.*}}) kernel attributes
// CHECK-SAME: linac.direction = "backward"
// CHECK-SAME: linac.input_layout = "tK,tK,tV,t1,t1"
// CHECK: gpu.block_id z
// CHECK: linac.tile.tri_solve
// CHECK: linac.tile.tri_solve {{.*}} {transpose}
// CHECK: linac.tile.store {{.*}} {accumulate}
// CHECK: gpu.return

// A fixed-size backward that runs one value slice writes each per-token input gradient row once (one block per
// sequence and head, the chunks partitioning its tokens): plain stores, and linac.stored_gradients (a '1' per
// such input) tells the launcher not to zero those gradients. The generic kernel and the copies with value slices keep adding.
// OWNED: gpu.func @linac_gated_deltanet_backward_chunk32(
// OWNED-NOT: linac.stored_gradients
// OWNED-COUNT-5: linac.tile.store {{.*}} {accumulate}
// OWNED: gpu.func @linac_gated_deltanet_backward_chunk32_k128_v64_z2(
// OWNED-NOT: linac.stored_gradients
// OWNED-COUNT-5: linac.tile.store {{.*}} {accumulate}
// OWNED: gpu.func @linac_gated_deltanet_backward_chunk32_k128_v64(
// OWNED-SAME: linac.stored_gradients = "11111"
// OWNED-NOT: {accumulate}
// OWNED-NOT: linac.token_gradient
// OWNED: gpu.return
// boundary-slices=Z: the backward's boundary states come from a kernel of its own (the forward without outputs,
// with the backward's arguments), whose copy with Z value slices runs 1024 / Z threads, Z blocks a
// multiprocessor; the backward then has one chunk loop (the chunks in reverse) and names that kernel.
// BOUNDARIES: gpu.func @linac_gla_backward_chunk16_boundaries(
// BOUNDARIES-SAME: known_block_size = array<i32: 1024, 1, 1>
// BOUNDARIES-SAME: linac.phase = "boundaries"
// BOUNDARIES-NOT: linac.tile.store {{.*}} {accumulate}
// BOUNDARIES: gpu.func @linac_gla_backward_chunk16_boundaries_k128_v128_z4(
// BOUNDARIES-SAME: known_block_size = array<i32: 256, 1, 1>
// BOUNDARIES-SAME: linac.static_dims = array<i64: 128, 128, 4>
// BOUNDARIES-SAME: nvvm.minctasm = 4
// BOUNDARIES: gpu.func @linac_gla_backward_chunk16(
// BOUNDARIES-SAME: linac.boundary_kernel = "linac_gla_backward_chunk16_boundaries", linac.boundary_slices = 4
// BOUNDARIES: scf.for
// BOUNDARIES-NOT: scf.for
// BOUNDARIES: gpu.return
// BADBOUNDARIES: linac-gpu-chunk: boundary-slices must be in [0, 8], not 9
// boundary-every=R: the training forward saves, and the backward's recomputing pass keeps, the initial state of
// chunks 0, R, 2R, ... only (slot n + start / (C R) + c / R); the reverse loop loads the kept state at or before
// chunk c and runs the forward's state recurrence over the c mod R chunks between (a loop of chunk updates: the
// decayed k^T v product, no output).
// EVERY: gpu.func @linac_gla_forward_chunk16(
// EVERY-SAME: linac.boundary_every = 2
// EVERY: scf.for
// EVERY: arith.remui %{{.*}}, %c2
// EVERY: scf.if
// EVERY: scf.if
// EVERY: arith.divui %{{.*}}, %c2
// EVERY: linac.tile.store
// EVERY: gpu.func @linac_gla_backward_chunk16_pairs(
// EVERY-NOT: linac.boundary_every
// EVERY: gpu.func @linac_gla_backward_chunk16(
// EVERY-SAME: linac.boundary_every = 2
// The recomputing pass (where nothing was saved) keeps every second state too.
// EVERY: scf.for
// EVERY: arith.remui %{{.*}}, %c2
// EVERY: scf.if
// EVERY: linac.tile.store
// The chunks in reverse: the kept state, then the chunks between.
// EVERY: scf.for %[[STEP:.*]] = 
// EVERY: %[[C:.*]] = arith.subi %{{.*}}, %[[STEP]]
// EVERY: %[[R:.*]] = arith.remui %[[C]], %c2
// EVERY: arith.subi %[[C]], %[[R]]
// EVERY: linac.tile.load
// EVERY: linac.tile.store
// EVERY: scf.for
// EVERY-NOT: linac.tile.store {{.*}} {accumulate}
// EVERY: linac.tile.matmul
// EVERY-NOT: linac.tile.store {{.*}} {accumulate}
// EVERY: linac.tile.store
// EVERY: }
// EVERY: linac.tile.store {{.*}} {accumulate}
// EVERY: gpu.return
// BADEVERY: linac-gpu-chunk: boundary-every must be in [0, 64], not 65
// save-solves: the in-order delta rule's solve (its pseudo-values, C x V) is kept beside the boundary states by
// the training forward and by the backward's recomputing pass; the backward loads it, in the rebuild of the
// chunks between kept states and in each chunk's backward, whose only solve is then the adjoint's (transposed).
// SOLVES: gpu.func @linac_gated_deltanet_forward_chunk32(
// SOLVES-SAME: linac.saved_solves
// SOLVES: scf.for
// SOLVES: %[[W:.*]] = linac.tile.tri_solve
// SOLVES: scf.if
// SOLVES: linac.tile.store %[[W]]
// SOLVES: gpu.func @linac_gated_deltanet_backward_chunk32(
// SOLVES-SAME: linac.saved_solves
// SOLVES: scf.for
// SOLVES: %[[W2:.*]] = linac.tile.tri_solve
// SOLVES: linac.tile.store %[[W2]]
// SOLVES: scf.for
// SOLVES: scf.for
// SOLVES-NOT: linac.tile.tri_solve %{{[0-9]+}}, %{{[0-9]+}}{{$}}
// SOLVES: linac.tile.tri_solve {{.*}} {transpose}
// SOLVES-NOT: linac.tile.tri_solve
// SOLVES: gpu.return
// By default (auto) the delta rule without decay gates keeps its solves at 16-bit I/O, and with them every second
// state; with gates (Gated DeltaNet) neither (both measured slower there).
// SOLVESAUTO: gpu.func @linac_deltanet_forward_chunk32(
// SOLVESAUTO-SAME: linac.boundary_every = 2
// SOLVESAUTO-SAME: linac.saved_solves
// SOLVESAUTO: gpu.func @linac_deltanet_backward_chunk32(
// SOLVESAUTO-SAME: linac.boundary_every = 2
// SOLVESAUTO-SAME: linac.saved_solves
// NOSOLVES-NOT: linac.saved_solves
// NOSOLVES-NOT: linac.boundary_every
// BADSOLVES: linac-gpu-chunk: save-solves must be auto, on or off, not 'yes'
// A per-head input's gradient (RWKV-6's bonus) sums over the chunks: it still adds.
// OWNEDHEAD: gpu.func @linac_rwkv6_backward_chunk16_k64_v64(
// OWNEDHEAD-SAME: linac.stored_gradients = "11110"
// OWNEDHEAD-COUNT-1: linac.tile.store {{.*}} {accumulate}
// OWNEDHEAD-NOT: {accumulate}
// OWNEDHEAD: gpu.return

// pair-kernel (per-key by default: recurrences with per-key gates): GLA's output is a sum of the state's term (q decayed, times S_0) and the intra-chunk pairs' (the
// gated q k^T times v), which reads no state: the gradients of that term go to a kernel of its own over chunk
// slots, which holds every gated pair op, loads q, k, v, g and dO only (neither state nor state cotangent), and
// runs after the in-order backward, adding its gradients (all four inputs) into that kernel's. The in-order
// backward keeps the state's terms, without a pair op, and stores its gradients as it would alone (once,
// plainly, in its fixed-size copy).
// PAIRS: gpu.func @linac_gla_backward_chunk16_pairs(
// PAIRS-NOT: linac.stored_gradients
// PAIRS-SAME: linac.phase = "pairs"
// PAIRS-NOT: linac.stored_gradients
// PAIRS: scf.for
// PAIRS-COUNT-4: linac.tile.load
// PAIRS-NOT: linac.tile.load
// PAIRS: linac.tile.gated_dot
// PAIRS: linac.tile.load
// PAIRS-NOT: linac.tile.load
// PAIRS: linac.tile.gated_matmul
// PAIRS: linac.tile.gated_matmul {{.*}} {transpose}
// PAIRS: linac.tile.gate_grad
// PAIRS-COUNT-4: linac.tile.store {{.*}} valid %{{[0-9]+}} {accumulate} : memref
// PAIRS-NOT: linac.tile
// PAIRS: gpu.return
// PAIRS: gpu.func @linac_gla_backward_chunk16_pairs_k128_v128(
// PAIRS-NOT: linac.stored_gradients
// PAIRS-COUNT-4: linac.tile.store {{.*}} {accumulate}
// PAIRS: gpu.func @linac_gla_backward_chunk16(
// PAIRS-SAME: linac.pair_kernel = "linac_gla_backward_chunk16_pairs"
// PAIRS-NOT: gated
// PAIRS-COUNT-4: linac.tile.store {{.*}} {accumulate}
// PAIRS-NOT: gated
// PAIRS: gpu.return
// PAIRS: gpu.func @linac_gla_backward_chunk16_k128_v128(
// PAIRS-SAME: linac.stored_gradients = "1111"
// PAIRS-NOT: gated
// PAIRS-NOT: {accumulate}
// PAIRS: gpu.return
// RWKV-6: the bonus term (q . u k) v reads no state either; the pairs kernel adds the per-head u's gradient.
// PAIRSHEAD: gpu.func @linac_rwkv6_backward_chunk16_pairs(
// PAIRSHEAD-NOT: linac.stored_gradients
// PAIRSHEAD: linac.tile.gated_dot
// PAIRSHEAD: linac.tile.row_sum
// PAIRSHEAD-COUNT-5: linac.tile.store {{.*}} {accumulate} : memref
// PAIRSHEAD: gpu.return
// The delta rule's pair terms read the state (through the solved values): no pairs kernel, even with
// pair-kernel=all. Scalar gates get one only with pair-kernel=all (per-key, the default, measured it slower
// there: bench/NOTES.md v25); pair-kernel=none: none.
// NOPAIRS-NOT: _pairs
// NOPAIRS-NOT: linac.pair_kernel
// SCALARPAIRS: gpu.func @linac_simple_gla_backward_chunk32_pairs(
// SCALARPAIRS: gpu.func @linac_simple_gla_backward_chunk32(
// SCALARPAIRS-SAME: linac.pair_kernel = "linac_simple_gla_backward_chunk32_pairs"
// BADPAIRS: linac-gpu-chunk: pair-blocks-per-sm must be 0 (by I/O type) or in [1, 32], not 33
// BADPAIRKIND: linac-gpu-chunk: pair-kernel must be per-key, all or none, not 'some'

// Tiles become slots sized by their shape (rows of 4 floats padding), reused once dead by a tile of the same
// shape: the forward's 40-odd tiles fit in 14 slots, the backward's (forward, recompute and adjoints, 120-odd)
// in 38 (not canonicalized, but linac-gpu-chunk's simplification drops dead tiles). Fills, broadcasts, masks,
// transposes, elementwise chains with one reader and a load copied by the store after it get no slot: their
// readers compute their elements in place, and in the forward and in a matrix state's backward (512 threads, 128
// registers a thread) a product that flows only into a state update is lowered at the store.
// The forward's K x V slot: its running state, K x (V + 4) and updated in place. The most accessed slots
// first (an access inside the chunk loop counts 64), each in dynamic shared memory while it fits, the rest in
// the global scratch, through generic pointers: in the forward the chunk's gates and keys lead.
// Loops are strided over threads (the block size is a constant: known_block_size) and end in a barrier; products run on the tensor cores in tf32 with split operands (three mma.sync per k step).
// LOOPS: llvm.mlir.global external @linac_tile_smem() {addr_space = 3 : i32, alignment = 16 : i64}
// LOOPS: gpu.func @linac_gated_deltanet_forward_chunk32
// LOOPS-SAME: linac.tile_slot_sizes = ["32 * (1 + 4)", "32 * (K + 4)", "32 * (K + 4)", {{.*}}"32 * (32 + 4)", {{.*}}"K * (V + 4)", {{.*}}"1 * (1 + 4)", {{.*}}]
// LOOPS-SAME: linac.tile_slots = 14
// LOOPS: gpu.thread_id x
// LOOPS-NEXT: arith.constant 512 : index
// LOOPS: llvm.addrspacecast {{.*}} : !llvm.ptr<3> to !llvm.ptr
// LOOPS: nvvm.read.ptx.sreg.dynamic.smem.size
// LOOPS: llvm.select
// LOOPS: memref.reinterpret_cast
// LOOPS: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}}
// LOOPS: gpu.barrier
// LOOPS: arith.andi %{{.*}}, %{{.*}} : i32
// LOOPS: nvvm.mma.sync {{.*}} multiplicandAPtxType = #nvvm.mma_type<tf32>{{.*}}shape = #nvvm.shape<m = 16, n = 8, k = 8>
// LOOPS-NEXT: llvm.extractvalue
// LOOPS: nvvm.mma.sync
// LOOPS: nvvm.mma.sync
// LOOPS: gpu.func @linac_gated_deltanet_backward_chunk32
// LOOPS-SAME: linac.tile_slots = 38
// Gradients of inputs every block reads (q, k, gates, beta) are summed across blocks atomically.
// LOOPS: memref.atomic_rmw addf
// LOOPS-NOT: linac.tile

// static-dims: after each kernel a copy for K = 128, V = 64 and one value slice, whose tile slots all have
// constant sizes (rows padded by 4 floats, or 8 in a forward kernel where the products read a tile mostly in
// the B fragment's pattern: the state here), so that the placement in shared memory folds.
// STATIC: gpu.func @linac_gated_deltanet_forward_chunk32(
// STATIC: gpu.func @linac_gated_deltanet_forward_chunk32_k128_v64(
// STATIC-SAME: linac.static_dims = array<i64: 128, 64>
// STATIC-SAME: linac.tile_slot_sizes = ["32 * (1 + 4)", {{.*}}"32 * (128 + 8)", {{.*}}"128 * (64 + 8)"
// STATIC-NOT: nvvm.read.ptx.sreg.dynamic.smem.size
// A thread's share of a tile of known size is unrolled: the initial state's 128 x 64 elements over 512 threads
// (the default block size) are 16 stores in a row, with no loop around them.
// STATIC: gpu.thread_id x
// STATIC-NOT: scf.for
// STATIC-COUNT-16: memref.store
// STATIC: gpu.barrier
// The copies' loads go before their stores, so that all of them are in flight at once: the final state's
// 128 x 64 elements leave as 16 loads from their slot, then 16 stores.
// STATIC: memref.store {{.*}} : memref<?xf32>
// STATIC-NEXT: memref.store {{.*}} : memref<?xf32>
// STATIC-NEXT: memref.store {{.*}} : memref<?xf32>
// STATIC-NEXT: memref.store {{.*}} : memref<?xf32>
// STATIC-NEXT: memref.store {{.*}} : memref<?xf32>
// STATIC-NEXT: memref.store {{.*}} : memref<?xf32>
// STATIC-NEXT: memref.store {{.*}} : memref<?xf32>
// STATIC-NEXT: memref.store {{.*}} : memref<?xf32>
// STATIC-NEXT: memref.store {{.*}} : memref<?xf32>
// STATIC-NEXT: memref.store {{.*}} : memref<?xf32>
// STATIC-NEXT: memref.store {{.*}} : memref<?xf32>
// STATIC-NEXT: memref.store {{.*}} : memref<?xf32>
// STATIC-NEXT: memref.store {{.*}} : memref<?xf32>
// STATIC-NEXT: memref.store {{.*}} : memref<?xf32>
// STATIC-NEXT: memref.store {{.*}} : memref<?xf32>
// STATIC-NEXT: memref.store {{.*}} : memref<?xf32>
// STATIC-NEXT: gpu.barrier
// STATIC: gpu.func @linac_gated_deltanet_backward_chunk32(
// STATIC: gpu.func @linac_gated_deltanet_backward_chunk32_k128_v64(

// The running state is block-private (linac.block_private): it leaves the state scratch (%arg9) for a tile
// slot of its own (the 128 x (64 + 4) slot above), and the chunk loop reads and updates it in place.
// A barrier goes between tile ops that share no slot or buffer one of them writes (the chunk's input loads,
// for one); the kernel records how many went.
// PRIVATE: gpu.func @linac_gated_deltanet_forward_chunk32_k128_v64(
// PRIVATE-SAME: linac.barriers_dropped = {{[1-9][0-9]*}}
// PRIVATE-SAME: linac.transition
// PRIVATE-NOT: %arg9
// PRIVATE: gpu.return
// A matrix state's backward runs 512 threads (128 registers a thread) and holds two K x V tiles, the state and
// its gradient, and no other: the gradient's update dS' = d dS + A B + C D stores d dS + A B (A B lowered at
// the store), then adds C D where it is computed (no slot for either product); the recomputed state's slot
// takes the checkpoints once the recomputation ends, the initial and final states are copied with no tile
// between, and the sum over dS * S reads both in place. (At 1024 threads the products keep their slots: lowered
// at their stores they spilled, bench/NOTES.md v6 and v7.)
// SUMS: gpu.func @linac_gated_deltanet_backward_chunk32_k128_v64(
// SUMS-SAME: linac.tile_slot_sizes = [{{[^]]*}}"128 * (64 + 4)"{{[^]]*}}"128 * (64 + 4)"{{[^]]*}}]
// SUMS-SAME: linac.tile_slots = 34

// products=tf32: one tensor-core product per k step of operands rounded to tf32 (add half an ulp of the
// dropped bits, clear them), recorded on the kernel for the launcher header.
// TF32: gpu.func @linac_gated_deltanet_forward_chunk32
// TF32-SAME: linac.products = "tf32"
// TF32: arith.addi %{{.*}}, %c4096_i32
// TF32-NEXT: arith.andi %{{.*}}, %c-8192_i32
// TF32: nvvm.mma.sync
// TF32-NEXT: llvm.extractvalue
// TF32-NOT: nvvm.mma.sync
// TF32: scf.yield
// BADPRODUCTS: error: linac-tile-to-gpu: products must be tf32x3, tf32 or bf16, not 'fp16'

// io-type=bf16: the per-token inputs (q, k, v, g, beta), the output and its cotangent are bf16 buffers; the
// states and input gradients stay f32. Loads widen each element, the output's store rounds it.
// BF16: gpu.module @linac_kernels attributes {linac.io_type = "bf16"}
// BF16: gpu.func @linac_gated_deltanet_forward_chunk32(
// BF16-SAME: linac.io_type = "bf16"
// BF16-COUNT-5: to memref<?xbf16>
// BF16-NOT: to memref
// BF16: to memref<?xf32>
// BF16-NOT: to memref
// BF16: to memref<?xbf16>
// BF16-NOT: to memref
// BF16: to memref<?xf32>
// BF16: linac.tile.load %{{.*}} : memref<?xbf16>
// BF16: linac.tile.store %{{.*}} : memref<?xbf16>
// BF16: gpu.func @linac_gated_deltanet_backward_chunk32(
// BF16: linac.tile.store %{{.*}} {accumulate} : memref<?xf32>
// BF16LOOPS: gpu.func @linac_gated_deltanet_forward_chunk32(
// BF16LOOPS: memref.load %{{.*}} : memref<?xbf16>
// BF16LOOPS-NEXT: arith.extf %{{.*}} : bf16 to f32
// BF16LOOPS: arith.truncf %{{.*}} : f32 to bf16
// BF16LOOPS-NEXT: memref.store %{{.*}} : memref<?xbf16>
// io-type=f16 the same way, with IEEE halves.
// F16LOOPS: gpu.module @linac_kernels attributes {linac.io_type = "f16"}
// F16LOOPS: gpu.func @linac_gated_deltanet_forward_chunk32(
// F16LOOPS-SAME: linac.io_type = "f16"
// F16LOOPS: memref.load %{{.*}} : memref<?xf16>
// F16LOOPS-NEXT: arith.extf %{{.*}} : f16 to f32
// F16LOOPS: arith.truncf %{{.*}} : f32 to f16
// F16LOOPS-NEXT: memref.store %{{.*}} : memref<?xf16>
// BADIO: linac-gpu-chunk: io-type must be f32, bf16 or f16, not 'f8'
// MIXEDIO: linac-gpu-chunk: io-type bf16 differs from the kernels already built (f32)

// products=bf16: operands rounded to bf16 two to a register (the lower column or row in the low half), one
// m16n8k16 product per 16 k, so the k loop steps by 16.
// BF16MMA: gpu.func @linac_gated_deltanet_forward_chunk32
// BF16MMA-SAME: linac.products = "bf16"
// BF16MMA: %[[STEP:.*]] = arith.constant 16 : index
// BF16MMA: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %[[STEP]]
// BF16MMA: llvm.insertelement %{{.*}}[%c0_i32{{.*}} : i32] : vector<2xf32>
// BF16MMA-NEXT: arith.constant 1 : i32
// BF16MMA-NEXT: llvm.insertelement
// BF16MMA-NEXT: arith.truncf %{{.*}} : vector<2xf32> to vector<2xbf16>
// BF16MMA-NEXT: llvm.bitcast %{{.*}} : vector<2xbf16> to i32
// BF16MMA: nvvm.mma.sync A[{{.*}}, {{.*}}, {{.*}}, {{.*}}] B[{{.*}}, {{.*}}] C[{{.*}}] {{.*}}multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>, shape = #nvvm.shape<m = 16, n = 8, k = 16>}

// Threads per block by structure: forwards 512; the delta rule's backward 256 (the generic kernel and the copies
// up to K V = 128 x 128), its copy above that 512; a per-key gated recurrence's backward 512.
// THREADS: gpu.func @linac_gated_deltanet_forward_chunk32(
// THREADS-SAME: known_block_size = array<i32: 512, 1, 1>
// THREADS: gpu.func @linac_gated_deltanet_backward_chunk32(
// THREADS-SAME: known_block_size = array<i32: 256, 1, 1>
// THREADS: gpu.func @linac_gated_deltanet_backward_chunk32_k256_v256(
// THREADS-SAME: known_block_size = array<i32: 512, 1, 1>
// THREADS: gpu.func @linac_gated_deltanet_backward_chunk32_k128_v128(
// THREADS-SAME: known_block_size = array<i32: 256, 1, 1>
// GLATHREADS: gpu.func @linac_gla_backward_chunk32(
// GLATHREADS-SAME: known_block_size = array<i32: 512, 1, 1>
// GLATHREADS: gpu.func @linac_gla_backward_chunk32_k128_v128(
// GLATHREADS-SAME: known_block_size = array<i32: 512, 1, 1>

// static-slices=2 (an experiment): beside each fixed-size copy, one that runs 2 value slices of V / 2 columns
// (block z the z-th, the width a constant) as 2 blocks a multiprocessor: half the threads, nvvm.minctasm 2 and
// half the shared memory.
// SLICES: gpu.func @linac_gla_forward_chunk32_k128_v128_z2(
// SLICES-SAME: known_block_size = array<i32: 256, 1, 1>
// SLICES-SAME: linac.shared_budget = 115712
// SLICES-SAME: linac.static_dims = array<i64: 128, 128, 2>
// SLICES-SAME: nvvm.minctasm = 2
// SLICES: %[[WIDTH:.*]] = arith.constant 64 : index
// SLICES: gpu.block_id z
// SLICES: gpu.func @linac_gla_forward_chunk32_k128_v128(
// SLICES: gpu.func @linac_gla_backward_chunk32_k128_v128_z2(
// SLICES-SAME: known_block_size = array<i32: 256, 1, 1>
// BADSLICES: linac-gpu-chunk: static-slices must be in [1, 8], not 9

// The delta rule's threads rule is the in-order backward's: the split's kernels and their copies keep 1024.
// SPLITTHREADS: gpu.func @linac_gated_deltanet_backward_chunk32_before_k256_v256(
// SPLITTHREADS-SAME: known_block_size = array<i32: 1024, 1, 1>
// SPLITTHREADS: gpu.func @linac_gated_deltanet_backward_chunk32_before_k128_v128(
// SPLITTHREADS-SAME: known_block_size = array<i32: 1024, 1, 1>

// Padding by fragment pattern and 2 x 4 warp tiles, by default in the fixed-size forward kernels (their limiter
// is shared-memory bandwidth, bench/NOTES.md v10): the state (read as the B operand of two products) and the
// two 32 x 128 tiles read mostly as B operands get rows padded by 8 floats; the state update (128 x 128
// fragments over C) runs 2 x 4 fragments a warp. The generic kernels and the backward keep 4 floats and 2 x 2.
// PATTERN: gpu.func @linac_gated_deltanet_forward_chunk32(
// PATTERN-SAME: linac.tile_slot_sizes = [
// PATTERN-NOT: + 8)
// PATTERN-SAME: linac.warp_tile_fragments = 1
// PATTERN: gpu.func @linac_gated_deltanet_forward_chunk32_k128_v128(
// PATTERN-SAME: "128 * (128 + 8)"
// PATTERN-SAME: linac.warp_tile_fragments = 8
// PATTERN: gpu.func @linac_gated_deltanet_backward_chunk32_k128_v128(
// PATTERN-NOT: + 8)
// PATTERN-SAME: linac.warp_tile_fragments = 4
// NOPATTERN: gpu.func @linac_gated_deltanet_forward_chunk32_k128_v128(
// NOPATTERN-SAME: linac.tile_slot_sizes = ["32 * (1 + 4)", "32 * (128 + 4)"
// NOPATTERN-NOT: + 8)
// NOPATTERN-SAME: linac.warp_tile_fragments = 4
// ALLPATTERN: gpu.func @linac_gated_deltanet_backward_chunk32_k128_v128(
// ALLPATTERN-SAME: "128 * (128 + 8)"
// ALLPATTERN-SAME: linac.warp_tile_fragments = 8
// BADPATTERN: pad-by-pattern must be none, forward or all, not 'backward'

// Tile ops ordered by level (schedule, default fit): each pass at the earliest level after the passes it
// reads (through values, and through memory for loads and stores of one buffer), one level's passes together,
// so that dropBarriers leaves about one barrier a level. The generic kernels keep program order; a fixed-size
// kernel is lowered both ways and keeps the ordered form unless its slots then take more memory than the
// program order's where that exceeds shared memory: Gated DeltaNet's forward at K = V = 128 is ordered (12
// barriers instead of 19, 201 KB of slots instead of 162, within the 227 KB it has; one more after the training
// forward's conditional store of the boundary state); its backward is not (354 -> 392 KB, past it; 58 barriers
// instead of 75). With schedule=all the backward is ordered too.
// SCHEDULE: gpu.func @linac_gated_deltanet_forward_chunk32(
// SCHEDULE-NOT: linac.ops_scheduled
// SCHEDULE: gpu.func @linac_gated_deltanet_forward_chunk32_k128_v128(
// SCHEDULE-SAME: linac.ops_scheduled = {{[1-9][0-9]*}}
// SCHEDULE-COUNT-13: gpu.barrier
// SCHEDULE-NOT: gpu.barrier
// SCHEDULE: gpu.func @linac_gated_deltanet_backward_chunk32(
// SCHEDULE-NOT: linac.ops_scheduled
// SCHEDULE: gpu.func @linac_gated_deltanet_backward_chunk32_k128_v128(
// SCHEDULE-NOT: linac.ops_scheduled
// SCHEDULE-SAME: linac.tile_slots = 31
// SCHEDULEALL: gpu.func @linac_gated_deltanet_backward_chunk32(
// SCHEDULEALL-SAME: linac.ops_scheduled = {{[1-9][0-9]*}}
// SCHEDULEALL: gpu.func @linac_gated_deltanet_backward_chunk32_k128_v128(
// SCHEDULEALL-SAME: linac.ops_scheduled = {{[1-9][0-9]*}}
// Program order: a barrier after nearly every op (20 in the forward, with the training forward's store). An mma.sync touches no memory, so it no
// longer keeps the barriers around a product (22 before that).
// SCHEDULENONE: gpu.func @linac_gated_deltanet_forward_chunk32_k128_v128(
// SCHEDULENONE-NOT: linac.ops_scheduled
// SCHEDULENONE-COUNT-20: gpu.barrier
// SCHEDULENONE-NOT: gpu.barrier
// SCHEDULENONE: gpu.func @linac_gated_deltanet_backward_chunk32(
// BADSCHEDULE: schedule must be none, fit, forward or all, not 'early'
// Which slots stay in shared memory (placement, fixed-size kernels). By accesses (default) simple GLA's
// backward at K = V = 128 leaves tiles that the products read over 16 k steps in global memory: 40 round trips
// to global memory a chunk by the kernel's own count (linac.global_slot_rounds; a product's operand one a k
// step, any other access one). By latency (round trips a float of the slot) only tiles that elementwise
// passes read go there: 26 (18 before the scalar factors left the products: their results' scaling is one
// more elementwise pass).
// ACCESSES: gpu.func @linac_simple_gla_backward_chunk32_k128_v128(
// ACCESSES-SAME: linac.global_slot_rounds = 40
// LATENCY: gpu.func @linac_simple_gla_backward_chunk32_k128_v128(
// LATENCY-SAME: linac.global_slot_rounds = 26
// BADPLACEMENT: placement must be accesses or latency, not 'traffic'
// Products' k loops that read a slot left in global memory, unrolled by 4 (Gated DeltaNet's backward: two
// products that read the state gradient there, each with an interior and an edge loop); the generic kernels
// (no known placement) and the forward (every slot in shared memory) keep theirs.
// UNROLLK: gpu.func @linac_gated_deltanet_forward_chunk32(
// UNROLLK-NOT: linac.k_loops_unrolled
// UNROLLK: gpu.func @linac_gated_deltanet_forward_chunk32_k128_v128(
// UNROLLK-NOT: linac.k_loops_unrolled
// UNROLLK: gpu.func @linac_gated_deltanet_backward_chunk32(
// UNROLLK-NOT: linac.k_loops_unrolled
// UNROLLK: gpu.func @linac_gated_deltanet_backward_chunk32_k128_v128(
// UNROLLK-SAME: linac.k_loops_unrolled = 4

// Scalar factors out of products: the backward's four products of the output cotangent read the loaded bf16 dO
// (exact in the tensor cores' bf16), not dO times the read's scale 1/sqrt(128); the scale multiplies the product
// (dq's dO S^T here) or, where the product accumulates, its other operand. The forward has none.
// SCALES: gpu.func @linac_gated_deltanet_forward_chunk32_k128_v128(
// SCALES-NOT: linac.scales_factored
// SCALES: gpu.func @linac_gated_deltanet_backward_chunk32(
// SCALES-SAME: linac.scales_factored = 4
// SCALES: gpu.func @linac_gated_deltanet_backward_chunk32_k128_v128(
// SCALES-SAME: linac.scales_factored = 4
// The scale's first fill (an SSA value, not a constant) multiplies dq's product dO S^T, computed just before it.
// SCALES: %[[C:[0-9]+]] = linac.tile.fill %{{[0-9]+}} shape(%c32, %c128)
// SCALES-NEXT: arith.mulf %{{[0-9]+}}, %[[C]]

// Exact simplifications: DeltaNet has no gate, so its chunk form's log decays are fills of 0; their prefix sums,
// broadcasts and exponentials fold to fills, products with a fill of 1 to their other operand, and its gated
// products (zero gates) become masked plain products: no exponential and no gated op is left in either kernel.
// SIMPLIFY: gpu.func @linac_deltanet_forward_chunk32(
// SIMPLIFY-SAME: linac.tiles_simplified = 18
// SIMPLIFY-NOT: math.exp
// SIMPLIFY-NOT: linac.tile.gated
// SIMPLIFY: gpu.func @linac_deltanet_backward_chunk32(
// SIMPLIFY-SAME: linac.tiles_simplified = 44
// SIMPLIFY-NOT: math.exp
// SIMPLIFY-NOT: linac.tile.gate
// SIMPLIFY: gpu.return

// The in-order backward cut into a head and a tail (TailCut). The head keeps the state work: both solves (the
// delta rule's and its adjoint, which the next chunk's cotangent needs) and the products with the state and
// its cotangent; it stores the cut (C x V and C x K tiles and a scalar, each where it is computed) and no gradient. The tail loads the cut,
// recomputes the state-free tiles and computes every gradient: the pair products, the gate gradients.
// TAIL: gpu.func @linac_gated_deltanet_backward_chunk32(
// TAIL-SAME: linac.tail_cut = "32 * V + 32 * V + 32 * K + 1 * 1 + 32 * K + 32 * V + 32 * K"
// TAIL-SAME: linac.tail_kernel = "linac_gated_deltanet_backward_chunk32_tail"
// TAIL-SAME: linac.tile_scratch_arg = 19
// TAIL-NOT: linac.tile.gated_matmul
// TAIL-NOT: linac.tile.gate_grad
// TAIL: linac.tile.tri_solve
// TAIL-NOT: linac.tile.gated_matmul
// TAIL: linac.tile.tri_solve {{.*}} {transpose}
// TAIL-NOT: {accumulate}
// TAIL-NOT: linac.tile.gated_matmul
// TAIL: gpu.return
// TAIL: gpu.func @linac_gated_deltanet_backward_chunk32_k128_v128(
// TAIL-NOT: linac.stored_gradients
// TAIL-SAME: linac.tail_kernel = "linac_gated_deltanet_backward_chunk32_tail"
// TAIL: gpu.func @linac_gated_deltanet_backward_chunk32_tail(
// TAIL-SAME: linac.phase = "tail"
// TAIL-SAME: linac.tail_cut = "32 * V + 32 * V + 32 * K + 1 * 1 + 32 * K + 32 * V + 32 * K"
// TAIL-SAME: nvvm.minctasm = 2
// TAIL: scf.for
// TAIL-COUNT-7: linac.tile.load
// TAIL-NOT: linac.tile.tri_solve {{.*}} {transpose}
// TAIL: linac.tile.gated_matmul
// TAIL: linac.tile.gate_grad
// TAIL: linac.tile.gated_matmul
// TAIL: linac.tile.gate_grad
// TAIL-COUNT-5: linac.tile.store {{.*}} {accumulate}
// TAIL-NOT: linac.tile
// TAIL: gpu.return
// TAIL: gpu.func @linac_gated_deltanet_backward_chunk32_tail_k128_v128(
// TAIL-SAME: linac.stored_gradients = "11111"
// TAIL-NOT: {accumulate}
// TAIL: gpu.return
// Not with a pairs kernel (GLA's per-key gates) nor for a vector state (HGRN).
// NOTAIL-NOT: linac.tail
// BADTAIL: linac-gpu-chunk: tail-
