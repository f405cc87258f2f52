// HGRN: a gated vector recurrence, one channel per state element.
//   h_t = exp(g_t) * h_{t-1} + x_t,   o_t = h_t
linac.recurrence @hgrn(%h: !linac.state<?xf32>, %x: tensor<?xf32>, %g: tensor<?xf32>)
    -> (!linac.state<?xf32>, tensor<?xf32>) {
  %decayed = linac.decay %h, %g : !linac.state<?xf32>, tensor<?xf32>
  %next = linac.write %decayed, %x : !linac.state<?xf32>, tensor<?xf32>
  %o = linac.read %next : !linac.state<?xf32> -> tensor<?xf32>
  linac.yield %next, %o : !linac.state<?xf32>, tensor<?xf32>
}
