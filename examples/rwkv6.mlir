// RWKV-6: reads the state before the update, plus a per-head bonus u for the current token.
//   o_t = scale * (S_{t-1}^T r_t + (r_t . (u * k_t)) v_t)
//   S_t = Diag(exp(w_t)) S_{t-1} + k_t v_t^T
linac.recurrence @rwkv6(%S: !linac.state<?x?xf32>, %r: tensor<?xf32>, %k: tensor<?xf32>, %v: tensor<?xf32>,
                        %w: tensor<?xf32>, %u: tensor<?xf32> {linac.per_head})
    -> (!linac.state<?x?xf32>, tensor<?xf32>) {
  %o = linac.read %S, %r bonus(%u, %k, %v)
      : !linac.state<?x?xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?xf32> -> tensor<?xf32>
  %decayed = linac.decay %S, %w : !linac.state<?x?xf32>, tensor<?xf32>
  %next = linac.write %decayed, %k, %v : !linac.state<?x?xf32>, tensor<?xf32>, tensor<?xf32>
  linac.yield %next, %o : !linac.state<?x?xf32>, tensor<?xf32>
}
