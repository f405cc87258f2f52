#ifndef LINAC_TEST_NUMERICS_KERNELS_H
#define LINAC_TEST_NUMERICS_KERNELS_H

// Every example as compiled by linacc (test/Numerics/CMakeLists.txt): the
// sequential variant and the chunked ones at chunk sizes 16, 32 and 64.

#include "linac_abi.h"

#include "deltanet.h"
#include "gated_deltanet.h"
#include "gla.h"
#include "hgrn.h"
#include "hgrn2.h"
#include "retnet.h"
#include "rwkv6.h"
#include "simple_gla.h"

#include <string>
#include <vector>

namespace linac::test {

struct CompiledRecurrence {
  std::string name;
  /// The I/O type the library was compiled for (linacc --cpu-io): "f32", "bf16" or "f16".
  std::string io;
  const linac_input_desc *inputs;
  int numInputs;
  bool matrixState;
  linac_forward_fn sequential, chunk16, chunk32, chunk64;
  linac_backward_fn backward16, backward32, backward64;

  linac_forward_fn chunked(int size) const {
    return size == 16 ? chunk16 : size == 32 ? chunk32 : chunk64;
  }
  linac_backward_fn backward(int size) const {
    return size == 16 ? backward16 : size == 32 ? backward32 : backward64;
  }
};

#define LINAC_COMPILED(name)                                                                                           \
  CompiledRecurrence {                                                                                                 \
    #name, linac_##name##_io, linac_##name##_inputs, linac_##name##_num_inputs,                                        \
        linac_##name##_state_rank == 2,                                                                                \
        linac_##name##_forward_sequential, linac_##name##_forward_chunk16, linac_##name##_forward_chunk32,            \
        linac_##name##_forward_chunk64, linac_##name##_backward_chunk16, linac_##name##_backward_chunk32,              \
        linac_##name##_backward_chunk64                                                                                \
  }

inline std::vector<CompiledRecurrence> compiledExamples() {
  return {LINAC_COMPILED(hgrn),  LINAC_COMPILED(retnet), LINAC_COMPILED(simple_gla), LINAC_COMPILED(gla),
          LINAC_COMPILED(hgrn2), LINAC_COMPILED(rwkv6),  LINAC_COMPILED(deltanet),   LINAC_COMPILED(gated_deltanet)};
}

} // namespace linac::test

#endif
