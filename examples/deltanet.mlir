// DeltaNet: the delta rule erases what the state recalls at k_t before writing v_t.
//   S_t = (I - beta_t k_t k_t^T) S_{t-1} + beta_t k_t v_t^T,   o_t = scale * S_t^T q_t
linac.recurrence @deltanet(%S: !linac.state<?x?xf32>, %q: tensor<?xf32>, %k: tensor<?xf32>, %v: tensor<?xf32>,
                           %beta: f32) -> (!linac.state<?x?xf32>, tensor<?xf32>) {
  %next = linac.delta %S, %k, %v, %beta : !linac.state<?x?xf32>, tensor<?xf32>, tensor<?xf32>
  %o = linac.read %next, %q : !linac.state<?x?xf32>, tensor<?xf32> -> tensor<?xf32>
  linac.yield %next, %o : !linac.state<?x?xf32>, tensor<?xf32>
}
