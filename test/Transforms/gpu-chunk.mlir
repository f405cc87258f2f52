// RUN: linac-opt %examples/gated_deltanet.mlir -linac-gpu-chunk=chunk-size=32 | FileCheck %s
// RUN: linac-opt %examples/gated_deltanet.mlir -linac-gpu-chunk=chunk-size=32 -linac-tile-to-gpu | FileCheck %s --check-prefix=LOOPS

// One kernel per recurrence: block (h, n) runs sequence n, head h; the chunk body is the CPU's tile IR.
// CHECK: gpu.module @linac_kernels
// CHECK: gpu.func @linac_gated_deltanet_forward_chunk32({{.*}}) kernel attributes
// CHECK-SAME: linac.chunk_size = 32
// CHECK: gpu.block_id x
// CHECK: gpu.block_id y
// CHECK: scf.for
// CHECK: linac.tile.gated_dot
// CHECK: linac.tile.tri_solve
// CHECK: gpu.return

// Tiles become slots of the block's scratch; loops are strided over threads and end in a barrier.
// LOOPS: gpu.func @linac_gated_deltanet_forward_chunk32
// LOOPS-SAME: linac.tile_slots = {{[1-9][0-9]*}}
// LOOPS: gpu.thread_id x
// LOOPS: gpu.block_dim x
// LOOPS: memref.reinterpret_cast
// LOOPS: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}}
// LOOPS: gpu.barrier
// LOOPS-NOT: linac.tile
