#ifndef LINAC_RUNTIME_CUDA_CUDAKERNELS_H
#define LINAC_RUNTIME_CUDA_CUDAKERNELS_H

// The GPU builds of the compiled recurrences: `linacc --target=cuda --chunk-sizes=64` launchers (driver API,
// cubin embedded) for every example, by recurrence name. The input table is the CPU kernel's (Kernels.h): both
// come from the same .mlir, so inputs are in the same order with the same kinds.

#include <cuda.h>
#include <string>

namespace linac::rt::cuda {

using ForwardLauncher = CUresult (*)(CUstream stream, const CUdeviceptr *inputs, CUdeviceptr out, CUdeviceptr h0,
                                     CUdeviceptr ht, CUdeviceptr cu_seqlens, int64_t N, int64_t T, int64_t H,
                                     int64_t K, int64_t V, float scale);
using BackwardLauncher = CUresult (*)(CUstream stream, const CUdeviceptr *inputs, CUdeviceptr h0, CUdeviceptr dout,
                                      CUdeviceptr dht, const CUdeviceptr *dinputs, CUdeviceptr dh0,
                                      CUdeviceptr cu_seqlens, int64_t N, int64_t T, int64_t H, int64_t K, int64_t V,
                                      float scale);

/// The training pair: the forward that also saves each chunk's initial state in `saved`, the backward that reads
/// them there (docs/gpu.md, Launcher), and the saved states' size in floats.
using SavingForwardLauncher = CUresult (*)(CUstream stream, const CUdeviceptr *inputs, CUdeviceptr out,
                                           CUdeviceptr h0, CUdeviceptr ht, CUdeviceptr cu_seqlens, int64_t N,
                                           int64_t T, int64_t H, int64_t K, int64_t V, float scale,
                                           CUdeviceptr saved);
using SavedBackwardLauncher = CUresult (*)(CUstream stream, const CUdeviceptr *inputs, CUdeviceptr h0,
                                           CUdeviceptr dout, CUdeviceptr dht, const CUdeviceptr *dinputs,
                                           CUdeviceptr dh0, CUdeviceptr cu_seqlens, int64_t N, int64_t T, int64_t H,
                                           int64_t K, int64_t V, float scale, CUdeviceptr saved);
using SavedFloats = size_t (*)(int64_t N, int64_t T, int64_t H, int64_t K, int64_t V, int varlen);

struct GpuKernel {
  std::string name;
  ForwardLauncher forward;
  BackwardLauncher backward;
  /// The launcher's description of its last failure.
  const char *(*error)();
  SavingForwardLauncher forwardSaving;
  SavedBackwardLauncher backwardSaved;
  SavedFloats savedFloats;
};

/// The GPU kernel of recurrence `name`: a built-in example, or one loaded by loadGpuKernelLibrary; else null.
const GpuKernel *findGpuKernel(const std::string &name);

/// Loads recurrence `name` from `path`, a `linacc my.mlir --target=cuda --shared` library (my_cuda.so: chunk
/// size 64 launchers, cubin embedded), unless it is known already. Throws Error naming the file and what is
/// missing.
const GpuKernel *loadGpuKernelLibrary(const std::string &path, const std::string &name);

} // namespace linac::rt::cuda

#endif
