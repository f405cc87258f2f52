// RUN: linac-opt %s | linac-opt | FileCheck %s

// Fixed dimensions, an explicit read scale and a scaled write.
// CHECK-LABEL: linac.recurrence @fixed_dims
// CHECK: linac.write %{{.*}}, %{{.*}}, %{{.*}} scale %{{.*}} : !linac.state<64x32xf32>, tensor<64xf32>, tensor<32xf32>
// CHECK: linac.read %{{.*}}, %{{.*}} {scale = 1.250000e-01 : f64}
linac.recurrence @fixed_dims(%S: !linac.state<64x32xf32>, %q: tensor<64xf32>, %k: tensor<64xf32>,
                             %v: tensor<32xf32>, %beta: f32) -> (!linac.state<64x32xf32>, tensor<32xf32>) {
  %g = arith.constant -0.5 : f32
  %d = linac.decay %S, %g : !linac.state<64x32xf32>, f32
  %w = linac.write %d, %k, %v scale %beta : !linac.state<64x32xf32>, tensor<64xf32>, tensor<32xf32>
  %o = linac.read %w, %q {scale = 0.125} : !linac.state<64x32xf32>, tensor<64xf32> -> tensor<32xf32>
  linac.yield %w, %o : !linac.state<64x32xf32>, tensor<32xf32>
}

// A recurrence in no paper: per-key gated delta rule with a fixed extra decay and a gated output.
// CHECK-LABEL: linac.recurrence @per_key_gated_delta
// CHECK: linac.splat
// CHECK: linac.delta
linac.recurrence @per_key_gated_delta(%S: !linac.state<?x?xf32>, %q: tensor<?xf32>, %k: tensor<?xf32>,
                                      %v: tensor<?xf32>, %g: tensor<?xf32>, %beta: f32, %z: tensor<?xf32>)
    -> (!linac.state<?x?xf32>, tensor<?xf32>) {
  %c = arith.constant -0.01 : f32
  %fixed = linac.splat %c like %g : tensor<?xf32>
  %gate = arith.addf %g, %fixed : tensor<?xf32>
  %d = linac.decay %S, %gate : !linac.state<?x?xf32>, tensor<?xf32>
  %u = linac.delta %d, %k, %v, %beta : !linac.state<?x?xf32>, tensor<?xf32>, tensor<?xf32>
  %o = linac.read %u, %q : !linac.state<?x?xf32>, tensor<?xf32> -> tensor<?xf32>
  %gated = arith.mulf %o, %z : tensor<?xf32>
  linac.yield %u, %gated : !linac.state<?x?xf32>, tensor<?xf32>
}
