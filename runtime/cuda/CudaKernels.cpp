#include "CudaKernels.h"

#include "deltanet_cuda.h"
#include "gated_deltanet_cuda.h"
#include "gla_cuda.h"
#include "hgrn2_cuda.h"
#include "hgrn_cuda.h"
#include "retnet_cuda.h"
#include "rwkv6_cuda.h"
#include "simple_gla_cuda.h"

#include "runtime/Config.h"
#include "runtime/Kernels.h"

#include <deque>
#include <filesystem>
#include <vector>

namespace linac::rt::cuda {

// Chunk size 64 forward and derived backward, as on the CPU (Kernels.cpp).
#define LINAC_GPU_KERNEL(name)                                                                                         \
  GpuKernel {                                                                                                          \
    #name, linac_##name##_cuda_forward_chunk64, linac_##name##_cuda_backward_chunk64, linac_##name##_cuda_error,       \
        linac_##name##_cuda_forward_chunk64_saving, linac_##name##_cuda_backward_chunk64_saved,                        \
        linac_##name##_cuda_forward_chunk64_saved_floats                                                               \
  }

namespace {
/// Kernels loaded at run time, with the library each came from (weakly canonical); a deque keeps their
/// addresses stable.
struct LoadedGpuKernel {
  std::string path;
  GpuKernel kernel;
};
std::deque<LoadedGpuKernel> &loadedGpuKernels() {
  static std::deque<LoadedGpuKernel> loaded;
  return loaded;
}
const std::vector<GpuKernel> &builtInGpuKernels() {
  static const std::vector<GpuKernel> kernels = {
      LINAC_GPU_KERNEL(hgrn),  LINAC_GPU_KERNEL(retnet), LINAC_GPU_KERNEL(simple_gla), LINAC_GPU_KERNEL(gla),
      LINAC_GPU_KERNEL(hgrn2), LINAC_GPU_KERNEL(rwkv6),  LINAC_GPU_KERNEL(deltanet),   LINAC_GPU_KERNEL(gated_deltanet),
  };
  return kernels;
}
} // namespace

const GpuKernel *findGpuKernel(const std::string &name) {
  for (const GpuKernel &k : builtInGpuKernels())
    if (k.name == name)
      return &k;
  for (const LoadedGpuKernel &k : loadedGpuKernels())
    if (k.kernel.name == name)
      return &k.kernel;
  return nullptr;
}

const GpuKernel *loadGpuKernelLibrary(const std::string &path, const std::string &name) {
  bool builtIn = false;
  for (const GpuKernel &k : builtInGpuKernels())
    builtIn = builtIn || k.name == name;
  const LoadedGpuKernel *loaded = nullptr;
  for (const LoadedGpuKernel &k : loadedGpuKernels())
    if (k.kernel.name == name)
      loaded = &k;
  auto [canonical, again] =
      claimLibraryName("gpu_kernel_library", path, name, builtIn, loaded ? &loaded->path : nullptr);
  if (again)
    return &loaded->kernel;
  // Its symbols resolve against the driver API the process already uses.
  KernelLibrary library("gpu_kernel_library", path);
  auto symbol = [&](const std::string &full) {
    return library.symbol(full, "is '" + name +
                                    "' a recurrence in it, compiled by linacc --target=cuda --shared with chunk size 64?");
  };
  // linacc names the error function after the source file: my.mlir -> my_cuda.so, linac_my_cuda_error.
  std::string stem = std::filesystem::path(path).stem().string();
  if (stem.size() > 5 && stem.compare(stem.size() - 5, 5, "_cuda") == 0)
    stem.resize(stem.size() - 5);
  requireFp32Io("gpu_kernel_library", path, name, static_cast<const char *>(symbol("linac_" + name + "_cuda_io")),
                "--gpu-io");
  GpuKernel k{name, reinterpret_cast<ForwardLauncher>(symbol("linac_" + name + "_cuda_forward_chunk64")),
              reinterpret_cast<BackwardLauncher>(symbol("linac_" + name + "_cuda_backward_chunk64")),
              reinterpret_cast<const char *(*)()>(symbol("linac_" + stem + "_cuda_error")),
              reinterpret_cast<SavingForwardLauncher>(symbol("linac_" + name + "_cuda_forward_chunk64_saving")),
              reinterpret_cast<SavedBackwardLauncher>(symbol("linac_" + name + "_cuda_backward_chunk64_saved")),
              reinterpret_cast<SavedFloats>(symbol("linac_" + name + "_cuda_forward_chunk64_saved_floats"))};
  return &loadedGpuKernels().emplace_back(LoadedGpuKernel{canonical, k}).kernel;
}

} // namespace linac::rt::cuda
