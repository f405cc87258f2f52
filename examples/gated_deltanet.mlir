// Gated DeltaNet: a scalar decay per head and token, then the delta rule.
//   S_t = exp(g_t) (I - beta_t k_t k_t^T) S_{t-1} + beta_t k_t v_t^T,   o_t = scale * S_t^T q_t
linac.recurrence @gated_deltanet(%S: !linac.state<?x?xf32>, %q: tensor<?xf32>, %k: tensor<?xf32>,
                                 %v: tensor<?xf32>, %g: f32, %beta: f32)
    -> (!linac.state<?x?xf32>, tensor<?xf32>) {
  %decayed = linac.decay %S, %g : !linac.state<?x?xf32>, f32
  %next = linac.delta %decayed, %k, %v, %beta : !linac.state<?x?xf32>, tensor<?xf32>, tensor<?xf32>
  %o = linac.read %next, %q : !linac.state<?x?xf32>, tensor<?xf32> -> tensor<?xf32>
  linac.yield %next, %o : !linac.state<?x?xf32>, tensor<?xf32>
}
