// Mamba-2 / simple GLA: one data-dependent scalar gate per head and token.
//   S_t = exp(g_t) S_{t-1} + k_t v_t^T,   o_t = scale * S_t^T q_t
linac.recurrence @simple_gla(%S: !linac.state<?x?xf32>, %q: tensor<?xf32>, %k: tensor<?xf32>, %v: tensor<?xf32>,
                             %g: f32) -> (!linac.state<?x?xf32>, tensor<?xf32>) {
  %decayed = linac.decay %S, %g : !linac.state<?x?xf32>, f32
  %next = linac.write %decayed, %k, %v : !linac.state<?x?xf32>, tensor<?xf32>, tensor<?xf32>
  %o = linac.read %next, %q : !linac.state<?x?xf32>, tensor<?xf32> -> tensor<?xf32>
  linac.yield %next, %o : !linac.state<?x?xf32>, tensor<?xf32>
}
