// GLA: a data-dependent gate per key channel.
//   S_t = Diag(exp(g_t)) S_{t-1} + k_t v_t^T,   o_t = scale * S_t^T q_t
linac.recurrence @gla(%S: !linac.state<?x?xf32>, %q: tensor<?xf32>, %k: tensor<?xf32>, %v: tensor<?xf32>,
                      %g: tensor<?xf32>) -> (!linac.state<?x?xf32>, tensor<?xf32>) {
  %decayed = linac.decay %S, %g : !linac.state<?x?xf32>, tensor<?xf32>
  %next = linac.write %decayed, %k, %v : !linac.state<?x?xf32>, tensor<?xf32>, tensor<?xf32>
  %o = linac.read %next, %q : !linac.state<?x?xf32>, tensor<?xf32> -> tensor<?xf32>
  linac.yield %next, %o : !linac.state<?x?xf32>, tensor<?xf32>
}
