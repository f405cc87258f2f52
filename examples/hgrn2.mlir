// HGRN-2: GLA whose key is tied to the forget gate, k_t = 1 - exp(g_t), with a swish query.
//   S_t = Diag(exp(g_t)) S_{t-1} + (1 - exp(g_t)) v_t^T,   o_t = scale * S_t^T swish(q_t)
linac.recurrence @hgrn2(%S: !linac.state<?x?xf32>, %q: tensor<?xf32>, %g: tensor<?xf32>, %v: tensor<?xf32>)
    -> (!linac.state<?x?xf32>, tensor<?xf32>) {
  %one = arith.constant 1.0 : f32
  %ones = linac.splat %one like %g : tensor<?xf32>
  %forget = math.exp %g : tensor<?xf32>
  %k = arith.subf %ones, %forget : tensor<?xf32>
  %negq = arith.negf %q : tensor<?xf32>
  %expnegq = math.exp %negq : tensor<?xf32>
  %denom = arith.addf %ones, %expnegq : tensor<?xf32>
  %swish = arith.divf %q, %denom : tensor<?xf32>
  %decayed = linac.decay %S, %g : !linac.state<?x?xf32>, tensor<?xf32>
  %next = linac.write %decayed, %k, %v : !linac.state<?x?xf32>, tensor<?xf32>, tensor<?xf32>
  %o = linac.read %next, %swish : !linac.state<?x?xf32>, tensor<?xf32> -> tensor<?xf32>
  linac.yield %next, %o : !linac.state<?x?xf32>, tensor<?xf32>
}
