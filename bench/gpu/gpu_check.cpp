// The GPU kernels from linacc --target=cuda, on the device machine: every
// example's chunked forward against the fp64 CPU reference (odd T, varlen,
// initial and final states, head dims 64 and 128), then a timing at the
// benchmark shape. Not part of CI (no GPU there): bench/gpu/run.sh builds it
// here and the device tool runs it.

#include "Harness.h"

#include "deltanet_cuda.h"
#include "gated_deltanet_cuda.h"
#include "gla_cuda.h"
#include "hgrn2_cuda.h"
#include "hgrn_cuda.h"
#include "retnet_cuda.h"
#include "rwkv6_cuda.h"
#include "simple_gla_cuda.h"

#include <cuda.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>

using namespace linac;
using namespace linac::test;

using Launch = CUresult (*)(CUstream, const CUdeviceptr *, CUdeviceptr, CUdeviceptr, CUdeviceptr, CUdeviceptr,
                            int64_t, int64_t, int64_t, int64_t, int64_t, float);

struct GpuKernel {
  std::string name;
  Launch launch;
  const char *(*error)();
  bool matrix;
};

#define CHECK_CU(call)                                                                                                 \
  do {                                                                                                                 \
    CUresult status_ = (call);                                                                                         \
    if (status_ != CUDA_SUCCESS) {                                                                                     \
      const char *text_ = nullptr;                                                                                     \
      cuGetErrorString(status_, &text_);                                                                               \
      std::fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call, text_ ? text_ : "?");                \
      std::exit(1);                                                                                                    \
    }                                                                                                                  \
  } while (0)

static CUdeviceptr upload(const std::vector<float> &x) {
  CUdeviceptr d = 0;
  CHECK_CU(cuMemAlloc(&d, std::max<size_t>(x.size(), 1) * sizeof(float)));
  CHECK_CU(cuMemcpyHtoD(d, x.data(), x.size() * sizeof(float)));
  return d;
}

static std::vector<float> download(CUdeviceptr d, size_t n) {
  std::vector<float> x(n);
  CHECK_CU(cuMemcpyDtoH(x.data(), d, n * sizeof(float)));
  return x;
}

/// Runs one problem on the GPU; returns {output error, final-state error, ms of one launch}.
static std::array<double, 3> runProblem(const GpuKernel &k, const Problem &p, uint64_t seed, bool reference,
                                        int repeats) {
  const ref::Shape &s = p.shape;
  InputGenerator gen(seed);
  auto inputs = makeInputs(k.name, ref::inputsOf(k.name), s, p, gen);
  int64_t N = s.numSeqs(), tokens = s.cu_seqlens.empty() ? s.B * s.T : s.T;
  int64_t stateSize = k.matrix ? s.K * s.V : s.K, outWidth = k.matrix ? s.V : s.K;
  std::vector<double> h0 = gen.normal(N * s.H * stateSize);
  std::vector<CUdeviceptr> dInputs;
  for (auto &x : inputs)
    dInputs.push_back(upload(toFloat(x)));
  const float poison = std::numeric_limits<float>::quiet_NaN();
  CUdeviceptr dOut = upload(std::vector<float>(tokens * s.H * outWidth, poison));
  CUdeviceptr dHt = upload(std::vector<float>(N * s.H * stateSize, poison));
  CUdeviceptr dH0 = upload(toFloat(h0));
  CUdeviceptr dCu = 0;
  if (!s.cu_seqlens.empty()) {
    CHECK_CU(cuMemAlloc(&dCu, s.cu_seqlens.size() * sizeof(int32_t)));
    CHECK_CU(cuMemcpyHtoD(dCu, s.cu_seqlens.data(), s.cu_seqlens.size() * sizeof(int32_t)));
  }
  CUevent start, stop;
  CHECK_CU(cuEventCreate(&start, 0));
  CHECK_CU(cuEventCreate(&stop, 0));
  std::vector<float> times;
  for (int r = 0; r < repeats; ++r) {
    CHECK_CU(cuEventRecord(start, nullptr));
    CUresult status = k.launch(nullptr, dInputs.data(), dOut, dH0, dHt, dCu, N, s.cu_seqlens.empty() ? s.T : tokens,
                               s.H, s.K, s.V, 0.0f);
    if (status != CUDA_SUCCESS) {
      std::fprintf(stderr, "%s: %s\n", k.name.c_str(), k.error());
      std::exit(1);
    }
    CHECK_CU(cuEventRecord(stop, nullptr));
    CHECK_CU(cuEventSynchronize(stop));
    float ms = 0;
    CHECK_CU(cuEventElapsedTime(&ms, start, stop));
    times.push_back(ms);
  }
  std::sort(times.begin(), times.end());
  std::array<double, 3> result{0, 0, times[times.size() / 2]};
  if (reference) {
    ref::ForwardResult want = ref::forward(k.name, s, inputs, &h0, 0.0);
    result[0] = relativeRms(download(dOut, want.out.size()), want.out);
    result[1] = relativeRms(download(dHt, want.finalState.size()), want.finalState);
  }
  for (CUdeviceptr d : dInputs)
    cuMemFree(d);
  cuMemFree(dOut);
  cuMemFree(dHt);
  cuMemFree(dH0);
  if (dCu)
    cuMemFree(dCu);
  cuEventDestroy(start);
  cuEventDestroy(stop);
  return result;
}

int main(int argc, char **argv) {
  bool timeLarge = !(argc > 1 && std::string(argv[1]) == "--no-timing");
  CHECK_CU(cuInit(0));
  CUdevice device;
  CHECK_CU(cuDeviceGet(&device, 0));
  char deviceName[256];
  CHECK_CU(cuDeviceGetName(deviceName, sizeof deviceName, device));
  CUcontext context;
  CHECK_CU(cuDevicePrimaryCtxRetain(&context, device));
  CHECK_CU(cuCtxSetCurrent(context));
  std::printf("device: %s\n", deviceName);

  const GpuKernel kernels[] = {
      {"hgrn", linac_hgrn_forward_chunk64, linac_hgrn_cuda_error, false},
      {"retnet", linac_retnet_forward_chunk64, linac_retnet_cuda_error, true},
      {"simple_gla", linac_simple_gla_forward_chunk64, linac_simple_gla_cuda_error, true},
      {"gla", linac_gla_forward_chunk64, linac_gla_cuda_error, true},
      {"hgrn2", linac_hgrn2_forward_chunk64, linac_hgrn2_cuda_error, true},
      {"rwkv6", linac_rwkv6_forward_chunk64, linac_rwkv6_cuda_error, true},
      {"deltanet", linac_deltanet_forward_chunk64, linac_deltanet_cuda_error, true},
      {"gated_deltanet", linac_gated_deltanet_forward_chunk64, linac_gated_deltanet_cuda_error, true},
  };
  struct Case {
    const char *what;
    Problem problem;
  };
  Problem strong{{2, 130, 2, 16, 16, {}}};
  strong.gateMin = -20;
  strong.gateMax = -5;
  const Case cases[] = {
      {"T=1", {{2, 1, 2, 16, 24, {}}}},         {"T=63", {{2, 63, 2, 16, 24, {}}}},
      {"T=65", {{2, 65, 2, 16, 24, {}}}},       {"varlen", {{1, 300, 2, 16, 16, {0, 7, 70, 71, 200, 300}}}},
      {"K=V=64", {{1, 200, 2, 64, 64, {}}}},    {"K=V=128", {{1, 130, 2, 128, 128, {}}}},
      {"strong decay", strong},
  };
  bool ok = true;
  std::printf("%-15s %-13s %12s %12s\n", "recurrence", "case", "out err", "state err");
  for (const GpuKernel &k : kernels)
    for (const Case &c : cases) {
      auto [out, state, ms] = runProblem(k, c.problem, freshSeed(), true, 1);
      bool pass = out < 1e-4 && state < 1e-4;
      ok &= pass;
      std::printf("%-15s %-13s %12.2e %12.2e %s\n", k.name.c_str(), c.what, out, state, pass ? "" : "FAIL");
    }
  std::printf(ok ? "all GPU kernels match the fp64 reference\n" : "SOME GPU KERNELS DO NOT MATCH\n");
  if (timeLarge) {
    std::printf("\nforward timing, fp32 inputs, median of 3 after one warm-up\n%-15s %-28s %10s\n", "recurrence",
                "shape", "ms");
    for (const GpuKernel &k : kernels) {
      int64_t T = 4096;
      // HGRN's 2048 channels are independent: 16 heads of 128 is the same computation as fla's [B, T, 2048].
      Problem p{{8, T, 16, 128, 128, {}}};
      auto t = runProblem(k, p, 1, false, 4);
      std::printf("%-15s B=8 T=%lld H=16 K=V=128 %10.3f\n", k.name.c_str(), (long long)T, t[2]);
      std::fflush(stdout);
    }
  }
  return ok ? 0 : 1;
}
