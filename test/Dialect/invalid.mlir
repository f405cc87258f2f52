// RUN: linac-opt %s -split-input-file -verify-diagnostics

// expected-error @below {{state must be a K x V matrix or a D vector, got rank 3}}
linac.recurrence @rank3(%S: !linac.state<4x4x4xf32>) -> (!linac.state<4x4x4xf32>, tensor<4xf32>) {
  linac.yield
}

// -----

// expected-error @below {{states are kept in f32}}
linac.recurrence @bf16_state(%S: !linac.state<4x4xbf16>) -> (!linac.state<4x4xbf16>, tensor<4xf32>) {
  linac.yield
}

// -----

// expected-error @below {{first argument must be the state}}
linac.recurrence @no_state(%q: tensor<?xf32>) -> (tensor<?xf32>) {
  linac.yield %q : tensor<?xf32>
}

// -----

// expected-error @below {{is a second state}}
linac.recurrence @two_states(%S: !linac.state<?x?xf32>, %T: !linac.state<?x?xf32>, %q: tensor<?xf32>)
    -> (!linac.state<?x?xf32>, tensor<?xf32>) {
  %o = linac.read %S, %q : !linac.state<?x?xf32>, tensor<?xf32> -> tensor<?xf32>
  linac.yield %S, %o : !linac.state<?x?xf32>, tensor<?xf32>
}

// -----

// expected-error @below {{inputs are f32 scalars or 1-D f32 tensors}}
linac.recurrence @matrix_input(%S: !linac.state<?x?xf32>, %q: tensor<?x?xf32>)
    -> (!linac.state<?x?xf32>, tensor<?xf32>) {
  linac.yield
}

// -----

linac.recurrence @missing_output(%S: !linac.state<?x?xf32>, %k: tensor<?xf32>, %v: tensor<?xf32>)
    -> (!linac.state<?x?xf32>, tensor<?xf32>) {
  %n = linac.write %S, %k, %v : !linac.state<?x?xf32>, tensor<?xf32>, tensor<?xf32>
  // expected-error @below {{must return the new state and the output (2 values), got 1; missing output}}
  linac.yield %n : !linac.state<?x?xf32>
}

// -----

linac.recurrence @output_not_vector(%S: !linac.state<?x?xf32>, %k: tensor<?xf32>, %v: tensor<?xf32>, %x: f32)
    -> (!linac.state<?x?xf32>, f32) {
  %n = linac.write %S, %k, %v : !linac.state<?x?xf32>, tensor<?xf32>, tensor<?xf32>
  // expected-error @below {{second value (the output) must be a 1-D f32 tensor}}
  linac.yield %n, %x : !linac.state<?x?xf32>, f32
}

// -----

// expected-error @below {{signature results must be}}
linac.recurrence @bad_signature(%S: !linac.state<?x?xf32>, %q: tensor<?xf32>)
    -> (!linac.state<?x?xf32>, tensor<8xf32>) {
  %o = linac.read %S, %q : !linac.state<?x?xf32>, tensor<?xf32> -> tensor<?xf32>
  linac.yield %S, %o : !linac.state<?x?xf32>, tensor<?xf32>
}

// -----

linac.recurrence @wrong_state_yield(%S: !linac.state<?x?xf32>, %q: tensor<?xf32>, %k: tensor<?xf32>,
                                    %v: tensor<?xf32>) -> (!linac.state<?x?xf32>, tensor<?xf32>) {
  %n = linac.write %S, %k, %v : !linac.state<?x?xf32>, tensor<?xf32>, tensor<?xf32>
  %o = linac.read %n, %q : !linac.state<?x?xf32>, tensor<?xf32> -> tensor<?xf32>
  // expected-error @below {{must return the last state of the update chain}}
  linac.yield %S, %o : !linac.state<?x?xf32>, tensor<?xf32>
}

// -----

linac.recurrence @branching_chain(%S: !linac.state<?x?xf32>, %q: tensor<?xf32>, %k: tensor<?xf32>,
                                  %v: tensor<?xf32>, %g: f32) -> (!linac.state<?x?xf32>, tensor<?xf32>) {
  // expected-note @below {{first update here}}
  %a = linac.decay %S, %g : !linac.state<?x?xf32>, f32
  // expected-error @below {{updates a state that is already updated by another op; state updates must form one chain}}
  %b = linac.write %S, %k, %v : !linac.state<?x?xf32>, tensor<?xf32>, tensor<?xf32>
  %o = linac.read %b, %q : !linac.state<?x?xf32>, tensor<?xf32> -> tensor<?xf32>
  linac.yield %b, %o : !linac.state<?x?xf32>, tensor<?xf32>
}

// -----

// A gate computed from a read of the state makes S_t quadratic in S_{t-1}.
linac.recurrence @nonlinear_gate(%S: !linac.state<?x?xf32>, %q: tensor<?xf32>, %k: tensor<?xf32>,
                                 %v: tensor<?xf32>) -> (!linac.state<?x?xf32>, tensor<?xf32>) {
  %r = linac.read %S, %q : !linac.state<?x?xf32>, tensor<?xf32> -> tensor<?xf32>
  // expected-error @below {{makes the recurrence non-linear in the state: its gate depends on a read of the state}}
  %d = linac.decay %S, %r : !linac.state<?x?xf32>, tensor<?xf32>
  %n = linac.write %d, %k, %v : !linac.state<?x?xf32>, tensor<?xf32>, tensor<?xf32>
  %o = linac.read %n, %q : !linac.state<?x?xf32>, tensor<?xf32> -> tensor<?xf32>
  linac.yield %n, %o : !linac.state<?x?xf32>, tensor<?xf32>
}

// -----

linac.recurrence @nonlinear_write(%S: !linac.state<?x?xf32>, %q: tensor<?xf32>, %k: tensor<?xf32>)
    -> (!linac.state<?x?xf32>, tensor<?xf32>) {
  %r = linac.read %S, %q : !linac.state<?x?xf32>, tensor<?xf32> -> tensor<?xf32>
  %e = math.exp %r : tensor<?xf32>
  // expected-error @below {{makes the recurrence non-linear in the state: its value depends on a read of the state}}
  %n = linac.write %S, %k, %e : !linac.state<?x?xf32>, tensor<?xf32>, tensor<?xf32>
  %o = linac.read %n, %q : !linac.state<?x?xf32>, tensor<?xf32> -> tensor<?xf32>
  linac.yield %n, %o : !linac.state<?x?xf32>, tensor<?xf32>
}

// -----

linac.recurrence @nonlinear_beta(%S: !linac.state<?x?xf32>, %q: tensor<?xf32>, %k: tensor<?xf32>,
                                 %v: tensor<?xf32>, %b: f32) -> (!linac.state<?x?xf32>, tensor<?xf32>) {
  %r = linac.read %S, %q : !linac.state<?x?xf32>, tensor<?xf32> -> tensor<?xf32>
  %m = arith.mulf %r, %v : tensor<?xf32>
  // expected-error @below {{its value depends on a read of the state}}
  %n = linac.delta %S, %k, %m, %b : !linac.state<?x?xf32>, tensor<?xf32>, tensor<?xf32>
  %o = linac.read %n, %q : !linac.state<?x?xf32>, tensor<?xf32> -> tensor<?xf32>
  linac.yield %n, %o : !linac.state<?x?xf32>, tensor<?xf32>
}

// -----

linac.recurrence @key_dim_mismatch(%S: !linac.state<128x64xf32>, %q: tensor<128xf32>, %k: tensor<64xf32>,
                                   %v: tensor<64xf32>) -> (!linac.state<128x64xf32>, tensor<64xf32>) {
  // expected-error @below {{key has 64 elements but the state's key dimension is 128}}
  %n = linac.write %S, %k, %v : !linac.state<128x64xf32>, tensor<64xf32>, tensor<64xf32>
  %o = linac.read %n, %q : !linac.state<128x64xf32>, tensor<128xf32> -> tensor<64xf32>
  linac.yield %n, %o : !linac.state<128x64xf32>, tensor<64xf32>
}

// -----

linac.recurrence @value_dim_mismatch(%S: !linac.state<128x64xf32>, %q: tensor<128xf32>, %k: tensor<128xf32>,
                                     %v: tensor<32xf32>, %b: f32) -> (!linac.state<128x64xf32>, tensor<64xf32>) {
  // expected-error @below {{value has 32 elements but the state's value dimension is 64}}
  %n = linac.delta %S, %k, %v, %b : !linac.state<128x64xf32>, tensor<128xf32>, tensor<32xf32>
  %o = linac.read %n, %q : !linac.state<128x64xf32>, tensor<128xf32> -> tensor<64xf32>
  linac.yield %n, %o : !linac.state<128x64xf32>, tensor<64xf32>
}

// -----

linac.recurrence @query_dim_mismatch(%S: !linac.state<128x64xf32>, %q: tensor<64xf32>)
    -> (!linac.state<128x64xf32>, tensor<64xf32>) {
  // expected-error @below {{query has 64 elements but the state's key dimension is 128}}
  %o = linac.read %S, %q : !linac.state<128x64xf32>, tensor<64xf32> -> tensor<64xf32>
  linac.yield %S, %o : !linac.state<128x64xf32>, tensor<64xf32>
}

// -----

linac.recurrence @result_dim_mismatch(%S: !linac.state<128x64xf32>, %q: tensor<128xf32>)
    -> (!linac.state<128x64xf32>, tensor<128xf32>) {
  // expected-error @below {{result has 128 elements but the state's value dimension is 64}}
  %o = linac.read %S, %q : !linac.state<128x64xf32>, tensor<128xf32> -> tensor<128xf32>
  linac.yield %S, %o : !linac.state<128x64xf32>, tensor<128xf32>
}

// -----

// A per-value (dimension V) gate is not a diagonal on the key side: the state algebra has no such decay.
linac.recurrence @gate_on_value_dim(%S: !linac.state<128x64xf32>, %q: tensor<128xf32>, %g: tensor<64xf32>)
    -> (!linac.state<128x64xf32>, tensor<64xf32>) {
  // expected-error @below {{gate has 64 elements but the state's key dimension is 128}}
  %d = linac.decay %S, %g : !linac.state<128x64xf32>, tensor<64xf32>
  %o = linac.read %d, %q : !linac.state<128x64xf32>, tensor<128xf32> -> tensor<64xf32>
  linac.yield %d, %o : !linac.state<128x64xf32>, tensor<64xf32>
}

// -----

linac.recurrence @vector_gate_dim(%h: !linac.state<16xf32>, %x: tensor<16xf32>, %g: tensor<8xf32>)
    -> (!linac.state<16xf32>, tensor<16xf32>) {
  // expected-error @below {{gate has 8 elements but the state's vector dimension is 16}}
  %d = linac.decay %h, %g : !linac.state<16xf32>, tensor<8xf32>
  %n = linac.write %d, %x : !linac.state<16xf32>, tensor<16xf32>
  %o = linac.read %n : !linac.state<16xf32> -> tensor<16xf32>
  linac.yield %n, %o : !linac.state<16xf32>, tensor<16xf32>
}

// -----

// With symbolic K and V, a vector used as both a key and a value has no single size.
linac.recurrence @role_conflict(%S: !linac.state<?x?xf32>, %q: tensor<?xf32>, %k: tensor<?xf32>)
    -> (!linac.state<?x?xf32>, tensor<?xf32>) {
  // expected-note @below {{other use here}}
  // expected-error @below {{uses a vector as a value (V) vector, but it is also used as a key (K) vector; K and V may differ}}
  %n = linac.write %S, %k, %k : !linac.state<?x?xf32>, tensor<?xf32>, tensor<?xf32>
  %o = linac.read %n, %q : !linac.state<?x?xf32>, tensor<?xf32> -> tensor<?xf32>
  linac.yield %n, %o : !linac.state<?x?xf32>, tensor<?xf32>
}

// -----

linac.recurrence @role_conflict_through_math(%S: !linac.state<?x?xf32>, %q: tensor<?xf32>, %k: tensor<?xf32>,
                                             %v: tensor<?xf32>) -> (!linac.state<?x?xf32>, tensor<?xf32>) {
  // expected-note @below {{other use here}}
  %n = linac.write %S, %k, %v : !linac.state<?x?xf32>, tensor<?xf32>, tensor<?xf32>
  %mixed = arith.mulf %q, %v : tensor<?xf32>
  // expected-error @below {{uses a vector as a key (K) vector, but it is also used as a value (V) vector}}
  %o = linac.read %n, %mixed : !linac.state<?x?xf32>, tensor<?xf32> -> tensor<?xf32>
  linac.yield %n, %o : !linac.state<?x?xf32>, tensor<?xf32>
}

// -----

// expected-error @below {{input #3 is a vector that reaches no state update, read or output}}
linac.recurrence @unused_input(%S: !linac.state<?x?xf32>, %q: tensor<?xf32>, %k: tensor<?xf32>,
                               %unused: tensor<?xf32>, %v: tensor<?xf32>) -> (!linac.state<?x?xf32>, tensor<?xf32>) {
  %n = linac.write %S, %k, %v : !linac.state<?x?xf32>, tensor<?xf32>, tensor<?xf32>
  %o = linac.read %n, %q : !linac.state<?x?xf32>, tensor<?xf32> -> tensor<?xf32>
  linac.yield %n, %o : !linac.state<?x?xf32>, tensor<?xf32>
}

// -----

linac.recurrence @delta_on_vector(%h: !linac.state<?xf32>, %k: tensor<?xf32>, %v: tensor<?xf32>, %b: f32)
    -> (!linac.state<?xf32>, tensor<?xf32>) {
  // expected-error @below {{needs a matrix state; the delta rule erases a key's value from S}}
  %n = linac.delta %h, %k, %v, %b : !linac.state<?xf32>, tensor<?xf32>, tensor<?xf32>
  %o = linac.read %n : !linac.state<?xf32> -> tensor<?xf32>
  linac.yield %n, %o : !linac.state<?xf32>, tensor<?xf32>
}

// -----

linac.recurrence @write_without_value(%S: !linac.state<?x?xf32>, %q: tensor<?xf32>, %k: tensor<?xf32>)
    -> (!linac.state<?x?xf32>, tensor<?xf32>) {
  // expected-error @below {{on a matrix state needs a key and a value}}
  %n = linac.write %S, %k : !linac.state<?x?xf32>, tensor<?xf32>
  %o = linac.read %n, %q : !linac.state<?x?xf32>, tensor<?xf32> -> tensor<?xf32>
  linac.yield %n, %o : !linac.state<?x?xf32>, tensor<?xf32>
}

// -----

linac.recurrence @vector_write_two(%h: !linac.state<?xf32>, %x: tensor<?xf32>)
    -> (!linac.state<?xf32>, tensor<?xf32>) {
  // expected-error @below {{on a vector state takes one vector (h + x), not a key and a value}}
  %n = linac.write %h, %x, %x : !linac.state<?xf32>, tensor<?xf32>, tensor<?xf32>
  %o = linac.read %n : !linac.state<?xf32> -> tensor<?xf32>
  linac.yield %n, %o : !linac.state<?xf32>, tensor<?xf32>
}

// -----

linac.recurrence @read_without_query(%S: !linac.state<?x?xf32>, %k: tensor<?xf32>, %v: tensor<?xf32>)
    -> (!linac.state<?x?xf32>, tensor<?xf32>) {
  %n = linac.write %S, %k, %v : !linac.state<?x?xf32>, tensor<?xf32>, tensor<?xf32>
  // expected-error @below {{of a matrix state needs a query}}
  %o = linac.read %n : !linac.state<?x?xf32> -> tensor<?xf32>
  linac.yield %n, %o : !linac.state<?x?xf32>, tensor<?xf32>
}

// -----

linac.recurrence @vector_read_query(%h: !linac.state<?xf32>, %x: tensor<?xf32>)
    -> (!linac.state<?xf32>, tensor<?xf32>) {
  %n = linac.write %h, %x : !linac.state<?xf32>, tensor<?xf32>
  // expected-error @below {{of a vector state takes no query or bonus (o = h)}}
  %o = linac.read %n, %x : !linac.state<?xf32>, tensor<?xf32> -> tensor<?xf32>
  linac.yield %n, %o : !linac.state<?xf32>, tensor<?xf32>
}

// -----

linac.recurrence @vector_read_scale(%h: !linac.state<?xf32>, %x: tensor<?xf32>)
    -> (!linac.state<?xf32>, tensor<?xf32>) {
  %n = linac.write %h, %x : !linac.state<?xf32>, tensor<?xf32>
  // expected-error @below {{of a vector state takes no scale}}
  %o = linac.read %n {scale = 2.0} : !linac.state<?xf32> -> tensor<?xf32>
  linac.yield %n, %o : !linac.state<?xf32>, tensor<?xf32>
}

// -----

linac.recurrence @bonus_arity(%S: !linac.state<?x?xf32>, %q: tensor<?xf32>, %u: tensor<?xf32>)
    -> (!linac.state<?x?xf32>, tensor<?xf32>) {
  // expected-error @below {{bonus takes (u, k, v), got 2 operands}}
  %o = linac.read %S, %q bonus(%u, %q) : !linac.state<?x?xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?xf32> -> tensor<?xf32>
  linac.yield %S, %o : !linac.state<?x?xf32>, tensor<?xf32>
}

// -----

linac.recurrence @bad_scale(%S: !linac.state<?x?xf32>, %q: tensor<?xf32>)
    -> (!linac.state<?x?xf32>, tensor<?xf32>) {
  // expected-error @below {{scale must be positive, got -1}}
  %o = linac.read %S, %q {scale = -1.0} : !linac.state<?x?xf32>, tensor<?xf32> -> tensor<?xf32>
  linac.yield %S, %o : !linac.state<?x?xf32>, tensor<?xf32>
}

// -----

linac.recurrence @foreign_op(%S: !linac.state<?x?xf32>, %q: tensor<?xf32>)
    -> (!linac.state<?x?xf32>, tensor<?xf32>) {
  // expected-error @below {{is not allowed in a recurrence body; only linac ops, f32 constants and elementwise arith/math ops are}}
  %c = tensor.empty() : tensor<4xf32>
  %o = linac.read %S, %q : !linac.state<?x?xf32>, tensor<?xf32> -> tensor<?xf32>
  linac.yield %S, %o : !linac.state<?x?xf32>, tensor<?xf32>
}

// -----

linac.recurrence @integer_math(%S: !linac.state<?x?xf32>, %q: tensor<?xf32>, %a: f32)
    -> (!linac.state<?x?xf32>, tensor<?xf32>) {
  // expected-error @below {{works on f32 scalars and 1-D f32 tensors only, got 'i1'}}
  %c = arith.cmpf olt, %a, %a : f32
  %o = linac.read %S, %q : !linac.state<?x?xf32>, tensor<?xf32> -> tensor<?xf32>
  linac.yield %S, %o : !linac.state<?x?xf32>, tensor<?xf32>
}

// -----

linac.recurrence @vector_constant(%S: !linac.state<4x4xf32>, %q: tensor<4xf32>)
    -> (!linac.state<4x4xf32>, tensor<4xf32>) {
  // expected-error @below {{must be an f32 scalar constant; use linac.splat to make a vector}}
  %c = arith.constant dense<1.0> : tensor<4xf32>
  %o = linac.read %S, %q : !linac.state<4x4xf32>, tensor<4xf32> -> tensor<4xf32>
  linac.yield %S, %o : !linac.state<4x4xf32>, tensor<4xf32>
}

// -----

// expected-error @below {{input #2: linac.activation must be "none", "log_sigmoid", "sigmoid" or "l2_normalize", not "relu"}}
linac.recurrence @unknown_activation(%S: !linac.state<?x?xf32>, %q: tensor<?xf32>, %a: f32 {linac.activation = "relu"})
    -> (!linac.state<?x?xf32>, tensor<?xf32>) {
  %d = linac.decay %S, %a : !linac.state<?x?xf32>, f32
  %o = linac.read %d, %q : !linac.state<?x?xf32>, tensor<?xf32> -> tensor<?xf32>
  linac.yield %d, %o : !linac.state<?x?xf32>, tensor<?xf32>
}

// -----

// expected-error @below {{input #2: linac.activation "l2_normalize" needs a vector input, not 'f32'}}
linac.recurrence @scalar_normalized(%S: !linac.state<?x?xf32>, %q: tensor<?xf32>, %a: f32 {linac.activation = "l2_normalize"})
    -> (!linac.state<?x?xf32>, tensor<?xf32>) {
  %d = linac.decay %S, %a : !linac.state<?x?xf32>, f32
  %o = linac.read %d, %q : !linac.state<?x?xf32>, tensor<?xf32> -> tensor<?xf32>
  linac.yield %d, %o : !linac.state<?x?xf32>, tensor<?xf32>
}

// -----

func.func @yield_outside() {
  // expected-error @below {{expects parent op 'linac.recurrence'}}
  linac.yield
}
