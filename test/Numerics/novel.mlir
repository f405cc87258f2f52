// Recurrences that appear in no paper. They go through the same passes as the
// examples, with no change to the compiler, to show the derivations are general.

// A per-key gated delta rule with an output gate:
//   S_t = (I - beta_t k_t k_t^T) Diag(exp(g_t)) S_{t-1} + beta_t k_t v_t^T
//   o_t = (scale * S_t^T q_t) * sigmoid(z_t)
linac.recurrence @keyed_gated_delta(%S: !linac.state<?x?xf32>, %q: tensor<?xf32>, %k: tensor<?xf32>,
                                    %v: tensor<?xf32>, %g: tensor<?xf32>, %beta: f32, %z: tensor<?xf32>)
    -> (!linac.state<?x?xf32>, tensor<?xf32>) {
  %d = linac.decay %S, %g : !linac.state<?x?xf32>, tensor<?xf32>
  %n = linac.delta %d, %k, %v, %beta : !linac.state<?x?xf32>, tensor<?xf32>, tensor<?xf32>
  %o = linac.read %n, %q : !linac.state<?x?xf32>, tensor<?xf32> -> tensor<?xf32>
  %one = arith.constant 1.0 : f32
  %ones = linac.splat %one like %z : tensor<?xf32>
  %negz = arith.negf %z : tensor<?xf32>
  %e = math.exp %negz : tensor<?xf32>
  %den = arith.addf %ones, %e : tensor<?xf32>
  %gated = arith.divf %o, %den : tensor<?xf32>
  linac.yield %n, %gated : !linac.state<?x?xf32>, tensor<?xf32>
}

// The delta rule under a fixed decay of 0.97 per token, read with scale 1:
//   S_t = 0.97 (I - beta_t k_t k_t^T) S_{t-1} + beta_t k_t v_t^T,   o_t = S_t^T q_t
linac.recurrence @fixed_decay_delta(%S: !linac.state<?x?xf32>, %q: tensor<?xf32>, %k: tensor<?xf32>,
                                    %v: tensor<?xf32>, %beta: f32) -> (!linac.state<?x?xf32>, tensor<?xf32>) {
  %gamma = arith.constant 0.97 : f32
  %g = math.log %gamma : f32
  %d = linac.decay %S, %g : !linac.state<?x?xf32>, f32
  %n = linac.delta %d, %k, %v, %beta : !linac.state<?x?xf32>, tensor<?xf32>, tensor<?xf32>
  %o = linac.read %n, %q {scale = 1.0} : !linac.state<?x?xf32>, tensor<?xf32> -> tensor<?xf32>
  linac.yield %n, %o : !linac.state<?x?xf32>, tensor<?xf32>
}

// A scaled write between a per-token scalar decay and a learned per-head per-key decay:
//   S_t = Diag(exp(wh)) (exp(g_t) S_{t-1} + beta_t k_t v_t^T),   o_t = scale * S_t^T q_t
linac.recurrence @sandwich_decay(%S: !linac.state<?x?xf32>, %q: tensor<?xf32>, %k: tensor<?xf32>,
                                 %v: tensor<?xf32>, %g: f32, %beta: f32, %wh: tensor<?xf32> {linac.per_head})
    -> (!linac.state<?x?xf32>, tensor<?xf32>) {
  %d = linac.decay %S, %g : !linac.state<?x?xf32>, f32
  %w = linac.write %d, %k, %v scale %beta : !linac.state<?x?xf32>, tensor<?xf32>, tensor<?xf32>
  %n = linac.decay %w, %wh : !linac.state<?x?xf32>, tensor<?xf32>
  %o = linac.read %n, %q : !linac.state<?x?xf32>, tensor<?xf32> -> tensor<?xf32>
  linac.yield %n, %o : !linac.state<?x?xf32>, tensor<?xf32>
}
