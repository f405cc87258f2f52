#include "CudaKernels.h"

#include "deltanet_cuda.h"
#include "gated_deltanet_cuda.h"
#include "gla_cuda.h"
#include "hgrn2_cuda.h"
#include "hgrn_cuda.h"
#include "retnet_cuda.h"
#include "rwkv6_cuda.h"
#include "simple_gla_cuda.h"

#include <vector>

namespace linac::rt::cuda {

// Chunk size 64 forward and derived backward, as on the CPU (Kernels.cpp).
#define LINAC_GPU_KERNEL(name)                                                                                         \
  GpuKernel { #name, linac_##name##_forward_chunk64, linac_##name##_backward_chunk64, linac_##name##_cuda_error }

const GpuKernel *findGpuKernel(const std::string &name) {
  static const std::vector<GpuKernel> kernels = {
      LINAC_GPU_KERNEL(hgrn),  LINAC_GPU_KERNEL(retnet), LINAC_GPU_KERNEL(simple_gla), LINAC_GPU_KERNEL(gla),
      LINAC_GPU_KERNEL(hgrn2), LINAC_GPU_KERNEL(rwkv6),  LINAC_GPU_KERNEL(deltanet),   LINAC_GPU_KERNEL(gated_deltanet),
  };
  for (const GpuKernel &k : kernels)
    if (k.name == name)
      return &k;
  return nullptr;
}

} // namespace linac::rt::cuda
