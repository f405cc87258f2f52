// RUN: linac-opt %examples/simple_gla.mlir -linac-chunk=chunk-size=32 | FileCheck %s --check-prefix=SCALAR
// RUN: linac-opt %examples/gla.mlir -linac-chunk=chunk-size=16 | FileCheck %s --check-prefix=PERKEY
// RUN: linac-opt %examples/gated_deltanet.mlir -linac-chunk=chunk-size=64 | FileCheck %s --check-prefix=DELTA
// RUN: linac-opt %examples/deltanet.mlir -linac-chunk=chunk-size=64 | FileCheck %s --check-prefix=NOGATE
// RUN: linac-opt %examples/rwkv6.mlir -linac-chunk=chunk-size=32 | FileCheck %s --check-prefix=BEFORE
// RUN: linac-opt %examples/hgrn.mlir -linac-chunk=chunk-size=64 | FileCheck %s --check-prefix=VECTOR
// RUN: linac-opt %examples/hgrn2.mlir -linac-chunk=chunk-size=64 | FileCheck %s --check-prefix=TIED
// RUN: linac-opt %s -split-input-file -verify-diagnostics -linac-chunk
// RUN: for f in hgrn retnet simple_gla gla hgrn2 rwkv6 deltanet gated_deltanet; do \
// RUN:   linac-opt %examples/$f.mlir -linac-chunk | grep -o 'linac.read = "[a-z_+]*", linac.recurrence = "[a-z_0-9]*", linac.transition = "[a-z_]*"'; \
// RUN: done | FileCheck %s --check-prefix=CLASS

// The transition class each example reduces to.
// CLASS: linac.read = "after_update", linac.recurrence = "hgrn", linac.transition = "token_per_key"
// CLASS: linac.read = "after_update", linac.recurrence = "retnet", linac.transition = "head_scalar"
// CLASS: linac.read = "after_update", linac.recurrence = "simple_gla", linac.transition = "token_scalar"
// CLASS: linac.read = "after_update", linac.recurrence = "gla", linac.transition = "token_per_key"
// CLASS: linac.read = "after_update", linac.recurrence = "hgrn2", linac.transition = "token_per_key"
// CLASS: linac.read = "before_update+bonus", linac.recurrence = "rwkv6", linac.transition = "token_per_key"
// CLASS: linac.read = "after_update", linac.recurrence = "deltanet", linac.transition = "delta_identity"
// CLASS: linac.read = "after_update", linac.recurrence = "gated_deltanet", linac.transition = "delta_token_scalar"

// The chunk-parallel split (ChunkSplit.h): per (sequence, head), three loops over the chunks. Before: what
// the state chain reads that does not depend on the state (for simple GLA the chunk's decay and its K^T V),
// stored per chunk (linac.frontier: floats per chunk); the chain, elementwise here; after: the outputs, each
// chunk from its initial state. A scalar gate per token is cumulated as a C x 1 tile, widened to K only where
// it scales keys or queries.
// SCALAR-LABEL: func.func @linac_simple_gla_forward_chunk32
// SCALAR-SAME: linac.frontier = "1 * 1 + K * V"
// SCALAR: scf.for
// SCALAR: %[[G:.*]] = linac.tile.load {{.*}} shape(%c32, %c1{{.*}})
// SCALAR: %[[GM:.*]] = linac.tile.mask_rows %[[G]]
// SCALAR: %[[B:.*]] = linac.tile.cumsum %[[GM]]
// SCALAR: linac.tile.row %[[B]]
// SCALAR: linac.tile.cumsum %[[GM]] {exclusive, reverse}
// SCALAR: %[[KV:.*]] = linac.tile.matmul {{.*}} {transpose_lhs}
// SCALAR: linac.tile.store %[[KV]], %[[F:.*]][{{.*}}] stride
// SCALAR: scf.for
// SCALAR: linac.tile.load %[[F]]
// SCALAR-NOT: linac.tile.matmul
// SCALAR: linac.tile.store {{.*}}, %alloc[
// SCALAR: scf.for
// SCALAR: %[[P:.*]] = linac.tile.gated_dot %{{.*}}, %{{.*}} gates(%[[B2:.*]], %[[B2]]) mask lower
// SCALAR: linac.tile.matmul %[[P]]
// SCALAR: linac.tile.matmul %{{.*}}, %{{.*}}
// SCALAR: linac.tile.store
// SCALAR-NOT: linac.tile.tri_solve

// A gate per key channel: the gated products take C x K gates.
// PERKEY-LABEL: func.func @linac_gla_forward_chunk16
// PERKEY-SAME: linac.frontier = "1 * K + K * V"
// PERKEY: linac.tile.store {{.*}}, %alloc[
// PERKEY: %[[G:.*]] = linac.tile.load {{.*}} shape(%c16, %{{[0-9]+}})
// PERKEY: %[[B:.*]] = linac.tile.cumsum
// PERKEY: linac.tile.gated_dot %{{.*}}, %{{.*}} gates(%[[B]], %[[B]]) mask lower

// The delta rule: strictly-lower gated K K^T, scaled by beta; W = U - Wk S_0 with U and Wk solved against
// beta V and beta exp(b) K, so that no solve depends on S_0: both run before the chain, which is two
// products per chunk.
// DELTA-LABEL: func.func @linac_gated_deltanet_forward_chunk64
// DELTA-SAME: linac.frontier = "64 * V + 64 * K + 1 * 1 + 64 * K"
// DELTA: %[[B:.*]] = linac.tile.cumsum
// DELTA: %[[A:.*]] = linac.tile.gated_dot %[[K:.*]], %[[K]] gates(%[[B]], %[[B]]) mask strict_lower
// DELTA: %[[L:.*]] = arith.mulf %{{.*}}, %[[A]]
// DELTA: %[[U:.*]] = linac.tile.tri_solve %[[L]], %{{.*}}
// DELTA: %[[WK:.*]] = linac.tile.tri_solve %[[L]], %{{.*}}
// DELTA: linac.tile.store %[[U]]
// DELTA: linac.tile.store %[[WK]]
// DELTA: scf.for
// DELTA: linac.tile.store %{{.*}}, %alloc_{{[0-9]+}}[
// DELTA: %[[S0:.*]] = linac.tile.load %alloc[
// DELTA-NOT: linac.tile.tri_solve
// DELTA: %[[WS:.*]] = linac.tile.matmul %{{.*}}, %[[S0]]
// DELTA: %[[W:.*]] = arith.subf %{{.*}}, %[[WS]]
// DELTA: linac.tile.matmul %{{.*}}, %[[W]] {transpose_lhs}
// DELTA: linac.tile.store {{.*}}, %alloc[
// DELTA-NOT: linac.tile.tri_solve
// DELTA: linac.tile.gated_dot %{{.*}}, %{{.*}} gates(%[[B2:.*]], %[[B2]]) mask lower
// DELTA: linac.tile.matmul

// No decay at all: a zero gate tile keeps the same derivation.
// NOGATE-LABEL: func.func @linac_deltanet_forward_chunk64
// NOGATE: linac.tile.fill %{{.*}} shape(%c64, %c1{{.*}})
// NOGATE: linac.tile.tri_solve

// RWKV-6 reads S_{t-1}: query gates b_{i-1} (the exclusive prefix sums), strictly-lower mask, the bonus row sums.
// BEFORE-LABEL: func.func @linac_rwkv6_forward_chunk32
// BEFORE: linac.tile.store {{.*}}, %alloc[
// BEFORE: %[[G:.*]] = linac.tile.mask_rows
// BEFORE: %[[B:.*]] = linac.tile.cumsum %[[G]]
// BEFORE: %[[BQ:.*]] = linac.tile.cumsum %[[G]] {exclusive}
// BEFORE: linac.tile.gated_dot %{{.*}}, %{{.*}} gates(%[[BQ]], %[[B]]) mask strict_lower
// BEFORE: linac.tile.row_sum

// Vector state: a gated prefix scan per channel plus the carried h_0.
// VECTOR-LABEL: func.func @linac_hgrn_forward_chunk64
// VECTOR: %[[B:.*]] = linac.tile.cumsum
// VECTOR: linac.tile.load %alloc{{.*}} shape(%c1{{.*}}, %{{.*}})
// VECTOR: linac.tile.gated_scan %{{.*}} gates %[[B]]
// VECTOR: linac.tile.row

// The tied key k = 1 - exp(g) and the swish query are gate math on tiles.
// TIED-LABEL: func.func @linac_hgrn2_forward_chunk64
// TIED: math.exp %{{.*}} : tensor<?x?xf32>
// TIED: arith.subf %{{.*}}, %{{.*}} : tensor<?x?xf32>
// TIED: arith.divf %{{.*}}, %{{.*}} : tensor<?x?xf32>

// expected-error @below {{never writes to its state}}
linac.recurrence @no_write(%S: !linac.state<?x?xf32>, %q: tensor<?xf32>, %g: f32)
    -> (!linac.state<?x?xf32>, tensor<?xf32>) {
  %d = linac.decay %S, %g : !linac.state<?x?xf32>, f32
  %o = linac.read %d, %q : !linac.state<?x?xf32>, tensor<?xf32> -> tensor<?xf32>
  linac.yield %d, %o : !linac.state<?x?xf32>, tensor<?xf32>
}

// -----

linac.recurrence @two_writes(%S: !linac.state<?x?xf32>, %q: tensor<?xf32>, %k: tensor<?xf32>, %v: tensor<?xf32>)
    -> (!linac.state<?x?xf32>, tensor<?xf32>) {
  // expected-note @below {{first write here}}
  %a = linac.write %S, %k, %v : !linac.state<?x?xf32>, tensor<?xf32>, tensor<?xf32>
  // expected-error @below {{is a second write of the same token}}
  %b = linac.write %a, %q, %v : !linac.state<?x?xf32>, tensor<?xf32>, tensor<?xf32>
  %o = linac.read %b, %q : !linac.state<?x?xf32>, tensor<?xf32> -> tensor<?xf32>
  linac.yield %b, %o : !linac.state<?x?xf32>, tensor<?xf32>
}

// -----

linac.recurrence @decay_after_delta(%S: !linac.state<?x?xf32>, %q: tensor<?xf32>, %k: tensor<?xf32>,
                                    %v: tensor<?xf32>, %beta: f32, %g: tensor<?xf32>)
    -> (!linac.state<?x?xf32>, tensor<?xf32>) {
  // expected-note @below {{delta rule here}}
  %a = linac.delta %S, %k, %v, %beta : !linac.state<?x?xf32>, tensor<?xf32>, tensor<?xf32>
  // expected-error @below {{follows the delta rule}}
  %b = linac.decay %a, %g : !linac.state<?x?xf32>, tensor<?xf32>
  %o = linac.read %b, %q : !linac.state<?x?xf32>, tensor<?xf32> -> tensor<?xf32>
  linac.yield %b, %o : !linac.state<?x?xf32>, tensor<?xf32>
}

// -----

// expected-error @below {{has 2 reads of its state; the chunked derivation handles exactly one}}
linac.recurrence @two_reads(%S: !linac.state<?x?xf32>, %q: tensor<?xf32>, %k: tensor<?xf32>, %v: tensor<?xf32>)
    -> (!linac.state<?x?xf32>, tensor<?xf32>) {
  %o1 = linac.read %S, %q : !linac.state<?x?xf32>, tensor<?xf32> -> tensor<?xf32>
  %n = linac.write %S, %k, %v : !linac.state<?x?xf32>, tensor<?xf32>, tensor<?xf32>
  %o2 = linac.read %n, %q : !linac.state<?x?xf32>, tensor<?xf32> -> tensor<?xf32>
  %o = arith.addf %o1, %o2 : tensor<?xf32>
  linac.yield %n, %o : !linac.state<?x?xf32>, tensor<?xf32>
}

// -----

linac.recurrence @read_mid_token(%S: !linac.state<?x?xf32>, %q: tensor<?xf32>, %k: tensor<?xf32>,
                                 %v: tensor<?xf32>, %g: f32) -> (!linac.state<?x?xf32>, tensor<?xf32>) {
  %d = linac.decay %S, %g : !linac.state<?x?xf32>, f32
  // expected-error @below {{reads a state between two updates of the same token}}
  %o = linac.read %d, %q : !linac.state<?x?xf32>, tensor<?xf32> -> tensor<?xf32>
  %n = linac.write %d, %k, %v : !linac.state<?x?xf32>, tensor<?xf32>, tensor<?xf32>
  linac.yield %n, %o : !linac.state<?x?xf32>, tensor<?xf32>
}

// -----

linac.recurrence @vector_read_before(%h: !linac.state<?xf32>, %x: tensor<?xf32>)
    -> (!linac.state<?xf32>, tensor<?xf32>) {
  // expected-error @below {{reads the previous state of a vector recurrence}}
  %o = linac.read %h : !linac.state<?xf32> -> tensor<?xf32>
  %n = linac.write %h, %x : !linac.state<?xf32>, tensor<?xf32>
  linac.yield %n, %o : !linac.state<?xf32>, tensor<?xf32>
}
