// RUN: linac-opt %s -linac-lower-sequential | FileCheck %s
// RUN: linac-opt %examples/rwkv6.mlir -linac-lower-sequential | FileCheck %s --check-prefix=RWKV
// RUN: linac-opt %examples/hgrn.mlir -linac-lower-sequential | FileCheck %s --check-prefix=HGRN
// RUN: for f in hgrn retnet simple_gla gla hgrn2 rwkv6 deltanet gated_deltanet; do \
// RUN:   linac-opt %examples/$f.mlir -linac-cpu-pipeline > /dev/null || exit 1; done

// The C ABI: inputs array, out, h0, ht, cu_seqlens, then N, T, H, K, V and the scale.
// CHECK-LABEL: func.func @linac_gated_deltanet_forward_sequential(
// CHECK-SAME: %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr,
// CHECK-SAME: %{{.*}}: i64, %{{.*}}: i64, %{{.*}}: i64, %{{.*}}: i64, %{{.*}}: i64, %{{.*}}: f32)
// CHECK-SAME: attributes {linac.recurrence = "gated_deltanet"}
// scale <= 0 selects K^-1/2.
// CHECK: math.sqrt
// CHECK: arith.cmpf ogt
// Null cu_seqlens means fixed-length sequences.
// CHECK: llvm.icmp "ne"
// The state buffer and the delta rule's residual are allocated once, outside the loops.
// CHECK: memref.alloc
// CHECK: memref.alloc
// Loops: sequences, then sequence bounds from cu_seqlens or n*T, then heads, then time.
// CHECK: scf.for
// CHECK: scf.if
// CHECK: memref.load {{.*}} : memref<?xi32>
// CHECK: scf.for
// CHECK: scf.for
// The scalar decay: one exp per token, applied to all K*V entries.
// CHECK: math.exp
// CHECK: scf.for
// CHECK: arith.mulf
// The delta rule: residual v - S^T k, a reduction over K...
// CHECK: scf.for
// CHECK: scf.for {{.*}} iter_args
// CHECK: arith.subf
// ...then the rank-one update.
// CHECK: scf.for
// CHECK: scf.for
// The read is a reduction over K for each value column, times the scale.
// CHECK: scf.for
// CHECK: scf.for {{.*}} iter_args
// CHECK: arith.mulf
// CHECK: memref.dealloc
// CHECK: memref.dealloc
// CHECK-NOT: linac.tile
linac.recurrence @gated_deltanet(%S: !linac.state<?x?xf32>, %q: tensor<?xf32>, %k: tensor<?xf32>,
                                 %v: tensor<?xf32>, %g: f32, %beta: f32)
    -> (!linac.state<?x?xf32>, tensor<?xf32>) {
  %decayed = linac.decay %S, %g : !linac.state<?x?xf32>, f32
  %next = linac.delta %decayed, %k, %v, %beta : !linac.state<?x?xf32>, tensor<?xf32>, tensor<?xf32>
  %o = linac.read %next, %q : !linac.state<?x?xf32>, tensor<?xf32> -> tensor<?xf32>
  linac.yield %next, %o : !linac.state<?x?xf32>, tensor<?xf32>
}

// RWKV-6 reads S_{t-1}: the read (with its bonus reduction) is emitted before the decay updates the buffer.
// RWKV-LABEL: func.func @linac_rwkv6_forward_sequential
// RWKV: scf.for {{.*}} iter_args
// RWKV: scf.for {{.*}} iter_args
// RWKV: math.exp
// RWKV-NOT: linac.

// HGRN's per-channel gate: one exp per channel, no value loop.
// HGRN-LABEL: func.func @linac_hgrn_forward_sequential
// HGRN: math.exp
// HGRN-NOT: linac.
