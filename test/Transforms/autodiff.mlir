// RUN: linac-opt %examples/gated_deltanet.mlir -linac-autodiff=chunk-size=16 | FileCheck %s
// RUN: linac-opt %examples/hgrn.mlir -linac-autodiff=chunk-size=32 | FileCheck %s --check-prefix=VECTOR
// RUN: linac-opt %examples/rwkv6.mlir -linac-autodiff=chunk-size=32 | FileCheck %s --check-prefix=BEFORE
// RUN: for f in hgrn retnet simple_gla gla hgrn2 rwkv6 deltanet gated_deltanet; do \
// RUN:   linac-opt %examples/$f.mlir -linac-autodiff -linac-tile-to-loops > /dev/null || exit 1; done
// RUN: linac-opt %s -split-input-file -verify-diagnostics -linac-autodiff

// The backward ABI: inputs, h0, dout, dht, dinputs, dh0, cu_seqlens, then the sizes and the scale.
// CHECK-LABEL: func.func @linac_gated_deltanet_backward_chunk16(
// CHECK-SAME: %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr,
// CHECK-SAME: i64, %{{.*}}: i64, %{{.*}}: i64, %{{.*}}: i64, %{{.*}}: i64, %{{.*}}: f32)
// The split backward (ChunkBackward.h), per (sequence, head): the forward's before and chain loops keep each
// chunk's initial state; then the backward's before loop stores what the cotangent chain reads and does not
// depend on it (the chunk's decayed keys and Wk, its decay, and the parts of dW and dS_0 that come from dOut:
// linac.frontier, floats per chunk); its chain runs the chunks in reverse with no solve; the after loop
// recomputes each chunk from its saved state and cotangent and differentiates it.
// CHECK-SAME: linac.frontier = "16 * K + 1 * 1 + 16 * K + K * V + 16 * V"
// CHECK: scf.for
// CHECK: linac.tile.tri_solve
// CHECK: linac.tile.store {{.*}}, %[[FRONTIER:alloc_[0-9]+]][
// CHECK: scf.for
// CHECK: linac.tile.store {{.*}}, %alloc[
// CHECK: scf.for
// CHECK: linac.tile.tri_solve
// CHECK: linac.tile.store {{.*}}, %[[FRONTIER]][
// CHECK: scf.for
// CHECK-NOT: linac.tile.tri_solve
// CHECK: linac.tile.matmul
// CHECK-NOT: linac.tile.tri_solve
// CHECK: scf.for
// CHECK: linac.tile.tri_solve
// The output's gated products, differentiated: gated_matmul for the operands, gate_grad for the gates,
// taken directly from the pairs' spans rather than through the prefix sums.
// CHECK: linac.tile.gated_matmul %[[DP:.*]], %{{.*}} gates(%[[B:.*]], %[[B]]) mask lower
// CHECK: linac.tile.gated_matmul %[[DP]], %{{.*}} gates(%[[B]], %[[B]]) mask lower {transpose}
// CHECK: linac.tile.gate_grad %[[DP]], %{{.*}}, %{{.*}} gates(%[[B]], %[[B]]) shift 0
// The UT transform's adjoint: the transposed solve.
// CHECK: linac.tile.tri_solve %{{.*}}, %{{.*}} {transpose}
// The prefix sums' adjoint is a suffix sum.
// CHECK: linac.tile.cumsum %{{.*}} {reverse}
// Input gradients accumulate.
// CHECK: linac.tile.store {{.*}} {accumulate}

// HGRN's gated scan: its adjoint is the reverse scan, and its gate gradient a gate_grad with unit pair weights.
// VECTOR-LABEL: func.func @linac_hgrn_backward_chunk32
// VECTOR: linac.tile.gated_scan %{{.*}} gates %{{.*}} {reverse}
// VECTOR: linac.tile.gate_grad %{{.*}} shift 0

// RWKV-6 reads S_{t-1}: its query gates are the exclusive prefix sums, so the pairs' spans shift by one.
// BEFORE-LABEL: func.func @linac_rwkv6_backward_chunk32
// BEFORE: linac.tile.cumsum %{{.*}} {exclusive}
// BEFORE: %[[BQ:.*]] = linac.tile.cumsum %{{.*}} {exclusive}
// BEFORE: linac.tile.gate_grad %{{.*}} gates(%[[BQ]], %{{.*}}) shift 1

// Gate math without a derivative rule is rejected, naming the op.
linac.recurrence @no_rule(%S: !linac.state<?x?xf32>, %q: tensor<?xf32>, %k: tensor<?xf32>, %v: tensor<?xf32>)
    -> (!linac.state<?x?xf32>, tensor<?xf32>) {
  // expected-error @below {{linac-autodiff: no derivative rule for this op}}
  %e = math.erf %k : tensor<?xf32>
  %n = linac.write %S, %e, %v : !linac.state<?x?xf32>, tensor<?xf32>, tensor<?xf32>
  %o = linac.read %n, %q : !linac.state<?x?xf32>, tensor<?xf32> -> tensor<?xf32>
  linac.yield %n, %o : !linac.state<?x?xf32>, tensor<?xf32>
}
