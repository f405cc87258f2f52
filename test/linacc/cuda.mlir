// linacc --target=cuda: PTX for sm_90a, the cubin ptxas makes of it, and a driver-API launcher.
// RUN: rm -rf %t && linacc %examples/gla.mlir --target=cuda --chunk-sizes=64,16 --gpu-static-dims=128x128 --shared -o %t
// RUN: FileCheck %s --input-file=%t/gla.ptx --check-prefix=PTX
// RUN: test -s %t/gla.cubin
// RUN: FileCheck %s --input-file=%t/gla_cuda.h --check-prefix=HEADER
// RUN: FileCheck %s --input-file=%t/gla_cuda.cpp --check-prefix=LAUNCHER
// RUN: nm -D --defined-only %t/gla_cuda.so | FileCheck %s --check-prefix=SO

// PTX: .target sm_90a
// PTX-DAG: .entry linac_gla_forward_chunk64(
// PTX-DAG: .entry linac_gla_forward_chunk16(
// PTX-DAG: .entry linac_gla_backward_chunk64(
// PTX-DAG: .entry linac_gla_backward_chunk16(
// PTX-DAG: .entry linac_gla_forward_chunk64_k128_v128(
// PTX-DAG: .entry linac_gla_backward_chunk16_k128_v128(
// PTX-DAG: bar.sync
// PTX-DAG: atom.global.add.f32

// HEADER: #include <cuda.h>
// HEADER: extern "C" {
// HEADER: const char *linac_gla_cuda_error(void);
// HEADER: CUresult linac_gla_forward_chunk64(CUstream stream, const CUdeviceptr *inputs, CUdeviceptr out,
// HEADER: CUresult linac_gla_backward_chunk64(CUstream stream, const CUdeviceptr *inputs, CUdeviceptr h0, CUdeviceptr dout,
// HEADER-NEXT: CUdeviceptr dht, const CUdeviceptr *dinputs, CUdeviceptr dh0, CUdeviceptr cu_seqlens,
// The fixed-size copies are the launchers' business, not the API's.
// HEADER-NOT: _k128_v128

// --shared links the launchers into gla_cuda.so (for the runtime's gpu_kernel_library), C symbols.
// SO-DAG: T linac_gla_backward_chunk16
// SO-DAG: T linac_gla_backward_chunk64
// SO-DAG: T linac_gla_cuda_error
// SO-DAG: T linac_gla_forward_chunk16
// SO-DAG: T linac_gla_forward_chunk64

// LAUNCHER: // The cubin image,
// LAUNCHER: cuModuleLoadData
// LAUNCHER: CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
// LAUNCHER: cuLaunchKernel(function, unsigned(H), unsigned(N), unsigned(splits), k.blockSize, 1, 1,
// LAUNCHER-NEXT: unsigned(shared)
// LAUNCHER: cuMemsetD32Async(dinputs[i], 0
// The input layout sizes the gradients the backward zeroes: q, k, v per token; the per-key gate g per token.
// Each kernel knows its tile slots' sizes as functions of K, V and the value slices Z, in layout order.
// LAUNCHER: static const Kernel k = {"linac_gla_forward_chunk64", 4, "tK,tK,tV,tK", 64, true, 1024,
// LAUNCHER: return std::vector<int64_t>{64 * (64 + 4), {{.*}}64 * (K + 4){{.*}}K * (std::min<int64_t>(((V + Z - 1) / Z)
// The fixed-size copy for K = V = 128: every slot size a constant; launches with those sizes and one value
// slice take it.
// LAUNCHER: static const Kernel k128x128 = {"linac_gla_forward_chunk64_k128_v128", 4, "tK,tK,tV,tK", 64, true, 1024,
// LAUNCHER: return std::vector<int64_t>{1 * (128 + 4), {{.*}}64 * (64 + 4), {{.*}}128 * (128 + 4)
// LAUNCHER: }, 128, 128};
// LAUNCHER: static const Kernel *const fixed[] = {&k128x128, nullptr};
// LAUNCHER: return forward(choose(k, fixed, N, H, K, V), stream,
// LAUNCHER: static const Kernel k = {"linac_gla_backward_chunk64", 4, "tK,tK,tV,tK",
// LAUNCHER: return backward(choose(k, fixed, N, H, K, V), stream,
