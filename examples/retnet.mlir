// RetNet: fixed per-head decay gamma_h = 1 - 2^(-5-h).
//   S_t = gamma_h S_{t-1} + k_t v_t^T,   o_t = scale * S_t^T q_t
linac.recurrence @retnet(%S: !linac.state<?x?xf32>, %q: tensor<?xf32>, %k: tensor<?xf32>, %v: tensor<?xf32>)
    -> (!linac.state<?x?xf32>, tensor<?xf32>) {
  %h = linac.head_index : f32
  %one = arith.constant 1.0 : f32
  %minus5 = arith.constant -5.0 : f32
  %e = arith.subf %minus5, %h : f32
  %p = math.exp2 %e : f32
  %gamma = arith.subf %one, %p : f32
  %g = math.log %gamma : f32
  %decayed = linac.decay %S, %g : !linac.state<?x?xf32>, f32
  %next = linac.write %decayed, %k, %v : !linac.state<?x?xf32>, tensor<?xf32>, tensor<?xf32>
  %o = linac.read %next, %q : !linac.state<?x?xf32>, tensor<?xf32> -> tensor<?xf32>
  linac.yield %next, %o : !linac.state<?x?xf32>, tensor<?xf32>
}
