#include "Kernels.h"

#include "deltanet.h"
#include "gated_deltanet.h"
#include "gla.h"
#include "hgrn.h"
#include "hgrn2.h"
#include "retnet.h"
#include "rwkv6.h"
#include "simple_gla.h"

namespace linac::rt {

// Training uses the chunked forms at chunk size 64: the forward is parallel over a
// chunk and the backward keeps one state per chunk boundary (linac_abi.h).
#define LINAC_KERNEL(name)                                                                                             \
  KernelInfo {                                                                                                         \
    #name, linac_##name##_inputs, linac_##name##_num_inputs, linac_##name##_state_rank,                                \
        linac_##name##_forward_chunk64, linac_##name##_backward_chunk64                                                \
  }

const std::vector<KernelInfo> &allKernels() {
  static const std::vector<KernelInfo> kernels = {
      LINAC_KERNEL(hgrn),  LINAC_KERNEL(retnet), LINAC_KERNEL(simple_gla), LINAC_KERNEL(gla),
      LINAC_KERNEL(hgrn2), LINAC_KERNEL(rwkv6),  LINAC_KERNEL(deltanet),   LINAC_KERNEL(gated_deltanet),
  };
  return kernels;
}

const KernelInfo *findKernel(const std::string &name) {
  for (const KernelInfo &k : allKernels())
    if (k.name == name)
      return &k;
  return nullptr;
}

std::string kernelNames() {
  std::string names;
  for (const KernelInfo &k : allKernels())
    names += (names.empty() ? "" : ", ") + k.name;
  return names;
}

} // namespace linac::rt
