#ifndef LINAC_BENCH_GPU_GPUHARNESS_H
#define LINAC_BENCH_GPU_GPUHARNESS_H

// What the GPU check and the GPU benchmark share: the generated launchers of
// every example (bench/gpu/build.sh compiles them), device buffers, event
// timing, and one problem run on the GPU.

#include "Harness.h"

// LINAC_GPU_NO_EXAMPLES: the harness without the examples' launchers (allGpuKernels), for programs that test
// other recurrences' kernels (test/Emulation/NovelGpuTest.cpp).
#ifndef LINAC_GPU_NO_EXAMPLES
#include "deltanet_cuda.h"
#include "gated_deltanet_cuda.h"
#include "gla_cuda.h"
#include "hgrn2_cuda.h"
#include "hgrn_cuda.h"
#include "retnet_cuda.h"
#include "rwkv6_cuda.h"
#include "simple_gla_cuda.h"
#endif

#include <cuda.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <thread>
#include <cstdlib>
#include <string>
#include <vector>

namespace linac::test {

using Launch = CUresult (*)(CUstream, const CUdeviceptr *, CUdeviceptr, CUdeviceptr, CUdeviceptr, CUdeviceptr,
                            int64_t, int64_t, int64_t, int64_t, int64_t, float);
using BackwardLaunch = CUresult (*)(CUstream, const CUdeviceptr *, CUdeviceptr, CUdeviceptr, CUdeviceptr,
                                    const CUdeviceptr *, CUdeviceptr, CUdeviceptr, int64_t, int64_t, int64_t, int64_t,
                                    int64_t, float);
/// The training pair (linac_<name>_cuda_forward_saving / _backward_saved: the launchers above plus the saved
/// boundary states) and the saved states' size (linac_<name>_cuda_saved_floats).
using SavingLaunch = CUresult (*)(CUstream, const CUdeviceptr *, CUdeviceptr, CUdeviceptr, CUdeviceptr, CUdeviceptr,
                                  int64_t, int64_t, int64_t, int64_t, int64_t, float, CUdeviceptr);
using SavedBackwardLaunch = CUresult (*)(CUstream, const CUdeviceptr *, CUdeviceptr, CUdeviceptr, CUdeviceptr,
                                         const CUdeviceptr *, CUdeviceptr, CUdeviceptr, int64_t, int64_t, int64_t,
                                         int64_t, int64_t, float, CUdeviceptr);
using SavedFloats = size_t (*)(int64_t, int64_t, int64_t, int64_t, int64_t, int);

struct GpuKernel {
  std::string name;
  Launch launch;
  BackwardLaunch backward;
  const char *(*error)();
  bool matrix;
  /// The transition class linacc derived (e.g. "delta_token_scalar"; the launcher header's
  /// linac_<name>_cuda_transition).
  std::string transition;
  /// How its tensor-core products round: "tf32x3" (fp32 accuracy) or "tf32" (linacc --gpu-products).
  std::string products;
  /// The element type of its per-token inputs, output and output cotangent: "f32", "bf16" or "f16" (linacc
  /// --gpu-io).
  std::string io;
  /// Its inputs (names, kinds, domains), in the launchers' order (ref::inputsOf for the examples).
  std::vector<ref::Input> inputs;
  /// The training pair, where the harness has it (null: the plain launchers only).
  SavingLaunch forwardSaving = nullptr;
  SavedBackwardLaunch backwardSaved = nullptr;
  SavedFloats savedFloats = nullptr;
};

/// While set, gpuBackward runs the training pair: the saving forward (its boundary states into a buffer of
/// savedFloats() values), then the backward given them.
inline bool &trainingBackward() {
  static bool on = false;
  return on;
}

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

/// gpu-check's misaligned cases: while set, every buffer upload() and uploadIo() make starts one element past
/// an allocation's start (4 or 2 bytes: not 16-byte aligned), as a view into a larger tensor may. The launchers
/// must then take the generic kernels (the fixed-size ones assume 16-byte-aligned buffers).
inline bool &misalignBuffers() {
  static bool on = false;
  return on;
}
/// The allocation behind each shifted buffer, for freeBuffer.
inline std::vector<std::pair<CUdeviceptr, CUdeviceptr>> &shiftedBuffers() {
  static std::vector<std::pair<CUdeviceptr, CUdeviceptr>> shifted;
  return shifted;
}
/// `bytes` of device memory, one `element` past the allocation's start while misalignBuffers() is set.
inline CUdeviceptr allocBuffer(size_t bytes, size_t element) {
  const size_t shift = misalignBuffers() ? element : 0;
  CUdeviceptr d = 0;
  CHECK_CU(cuMemAlloc(&d, bytes + shift));
  if (shift)
    shiftedBuffers().push_back({d + shift, d});
  return d + shift;
}
/// Frees a buffer of allocBuffer (or cuMemAlloc).
inline void freeBuffer(CUdeviceptr d) {
  auto &shifted = shiftedBuffers();
  for (size_t i = 0; i < shifted.size(); ++i)
    if (shifted[i].first == d) {
      d = shifted[i].second;
      shifted.erase(shifted.begin() + long(i));
      break;
    }
  cuMemFree(d);
}

inline CUdeviceptr upload(const std::vector<float> &x) {
  CUdeviceptr d = allocBuffer(std::max<size_t>(x.size(), 1) * sizeof(float), sizeof(float));
  CHECK_CU(cuMemcpyHtoD(d, x.data(), x.size() * sizeof(float)));
  return d;
}

inline std::vector<float> download(CUdeviceptr d, size_t n) {
  std::vector<float> x(n);
  CHECK_CU(cuMemcpyDtoH(x.data(), d, n * sizeof(float)));
  return x;
}

/// A buffer of the I/O type `io`: fp32, or `x` rounded to bf16 or f16 (exact for values drawn as such).
inline CUdeviceptr uploadIo(const std::vector<float> &x, const std::string &io) {
  if (io == "f32")
    return upload(x);
  std::vector<uint16_t> h(x.size());
  for (size_t i = 0; i < x.size(); ++i)
    h[i] = ioBits(x[i], io);
  CUdeviceptr d = allocBuffer(std::max<size_t>(h.size(), 1) * sizeof(uint16_t), sizeof(uint16_t));
  CHECK_CU(cuMemcpyHtoD(d, h.data(), h.size() * sizeof(uint16_t)));
  return d;
}

inline std::vector<float> downloadIo(CUdeviceptr d, size_t n, const std::string &io) {
  if (io == "f32")
    return download(d, n);
  std::vector<uint16_t> h(n);
  CHECK_CU(cuMemcpyDtoH(h.data(), d, n * sizeof(uint16_t)));
  std::vector<float> x(n);
  for (size_t i = 0; i < n; ++i)
    x[i] = fromIoBits(h[i], io);
  return x;
}

/// The I/O type of kernel k's input i (Harness.h's inputIo: per-token inputs have the kernel's, per-head fp32).
inline std::string inputIo(const GpuKernel &k, size_t i) { return inputIo(k.inputs[i].kind, k.io); }

inline void check(const GpuKernel &k, CUresult status) {
  if (status != CUDA_SUCCESS) {
    std::fprintf(stderr, "%s: %s\n", k.name.c_str(), k.error());
    std::exit(1);
  }
}

/// Element count of each input (and its gradient) of `k` at these sizes.
inline std::vector<size_t> inputSizes(const GpuKernel &k, int64_t tokens, int64_t H, int64_t K, int64_t V) {
  std::vector<size_t> sizes;
  for (const ref::Input &in : k.inputs)
    sizes.push_back(in.kind == ref::InputKind::HeadKey       ? H * K
                    : in.kind == ref::InputKind::TokenKey    ? tokens * H * K
                    : in.kind == ref::InputKind::TokenValue  ? tokens * H * V
                                                             : tokens * H);
  return sizes;
}

/// The GPU forward behind the CPU forward ABI (fp32 I/O kernels), so the harness's compareForward checks it
/// unchanged: uploads, launches `gpuKernel`'s forward, downloads the output and the final state.
inline const GpuKernel *gpuKernel = nullptr;
inline void gpuForward(const float *const *inputs, float *out, const float *h0, float *ht, const int32_t *cu, int64_t N,
                       int64_t T, int64_t H, int64_t K, int64_t V, float scale) {
  const GpuKernel &k = *gpuKernel;
  if (k.io != "f32") {
    std::fprintf(stderr, "gpuForward: %s has %s I/O; the CPU forward ABI passes floats\n", k.name.c_str(),
                 k.io.c_str());
    std::exit(1);
  }
  int64_t tokens = cu ? T : N * T, width = k.matrix ? V : K, stateSize = k.matrix ? K * V : K;
  std::vector<size_t> sizes = inputSizes(k, tokens, H, K, width);
  std::vector<CUdeviceptr> dIn;
  for (size_t i = 0; i < sizes.size(); ++i)
    dIn.push_back(upload(std::vector<float>(inputs[i], inputs[i] + sizes[i])));
  size_t states = size_t(N * H * stateSize), outputs = size_t(tokens * H * width);
  CUdeviceptr dH0 = h0 ? upload(std::vector<float>(h0, h0 + states)) : 0;
  CUdeviceptr dOut = upload(std::vector<float>(outputs, std::numeric_limits<float>::quiet_NaN()));
  CUdeviceptr dHt = upload(std::vector<float>(states, std::numeric_limits<float>::quiet_NaN()));
  CUdeviceptr dCu = 0;
  if (cu) {
    CHECK_CU(cuMemAlloc(&dCu, size_t(N + 1) * sizeof(int32_t)));
    CHECK_CU(cuMemcpyHtoD(dCu, cu, size_t(N + 1) * sizeof(int32_t)));
  }
  check(k, k.launch(nullptr, dIn.data(), dOut, dH0, dHt, dCu, N, T, H, K, V, scale));
  CHECK_CU(cuCtxSynchronize());
  std::vector<float> o = download(dOut, outputs), s = download(dHt, states);
  std::copy(o.begin(), o.end(), out);
  std::copy(s.begin(), s.end(), ht);
  for (CUdeviceptr d : {dH0, dOut, dHt, dCu})
    if (d)
      freeBuffer(d);
  for (CUdeviceptr d : dIn)
    freeBuffer(d);
}

/// The GPU backward behind the CPU backward ABI, so the harness's compareBackward checks it unchanged:
/// uploads, launches `gpuKernel`'s backward, downloads the gradients.
inline void gpuBackward(const float *const *inputs, const float *h0, const float *dout, const float *dht,
                        float *const *dinputs, float *dh0, const int32_t *cu, int64_t N, int64_t T, int64_t H,
                        int64_t K, int64_t V, float scale) {
  const GpuKernel &k = *gpuKernel;
  int64_t tokens = cu ? T : N * T, width = k.matrix ? V : K, stateSize = k.matrix ? K * V : K;
  std::vector<size_t> sizes = inputSizes(k, tokens, H, K, width);
  auto from = [](const float *p, size_t n) { return std::vector<float>(p, p + n); };
  std::vector<CUdeviceptr> dIn, dGrad;
  for (size_t i = 0; i < sizes.size(); ++i) {
    dIn.push_back(uploadIo(from(inputs[i], sizes[i]), inputIo(k, i)));
    dGrad.push_back(upload(std::vector<float>(sizes[i], std::numeric_limits<float>::quiet_NaN())));
  }
  size_t states = size_t(N * H * stateSize);
  CUdeviceptr dH0 = h0 ? upload(from(h0, states)) : 0, dDht = dht ? upload(from(dht, states)) : 0;
  CUdeviceptr dDout = uploadIo(from(dout, size_t(tokens * H * width)), k.io);
  CUdeviceptr dDh0 = dh0 ? upload(std::vector<float>(states, std::numeric_limits<float>::quiet_NaN())) : 0;
  CUdeviceptr dCu = 0;
  if (cu) {
    CHECK_CU(cuMemAlloc(&dCu, size_t(N + 1) * sizeof(int32_t)));
    CHECK_CU(cuMemcpyHtoD(dCu, cu, size_t(N + 1) * sizeof(int32_t)));
  }
  // The training pair's output and saved states (0: the plain backward runs).
  CUdeviceptr out = 0, saved = 0;
  if (trainingBackward() && k.forwardSaving) {
    size_t savedCount = k.savedFloats(N, T, H, K, V, cu != 0);
    out = uploadIo(std::vector<float>(size_t(tokens * H * width)), k.io);
    if (savedCount)
      CHECK_CU(cuMemAlloc(&saved, savedCount * sizeof(float)));
    check(k, k.forwardSaving(nullptr, dIn.data(), out, dH0, 0, dCu, N, T, H, K, V, scale, saved));
    check(k, k.backwardSaved(nullptr, dIn.data(), dH0, dDout, dDht, dGrad.data(), dDh0, dCu, N, T, H, K, V, scale,
                             saved));
  } else {
    check(k, k.backward(nullptr, dIn.data(), dH0, dDout, dDht, dGrad.data(), dDh0, dCu, N, T, H, K, V, scale));
  }
  CHECK_CU(cuCtxSynchronize());
  if (saved)
    CHECK_CU(cuMemFree(saved));
  for (size_t i = 0; i < sizes.size(); ++i) {
    std::vector<float> g = download(dGrad[i], sizes[i]);
    std::copy(g.begin(), g.end(), dinputs[i]);
  }
  if (dh0) {
    std::vector<float> g = download(dDh0, states);
    std::copy(g.begin(), g.end(), dh0);
  }
  for (CUdeviceptr d : {dH0, dDht, dDout, dDh0, dCu, out})
    if (d)
      freeBuffer(d);
  for (size_t i = 0; i < sizes.size(); ++i) {
    freeBuffer(dIn[i]);
    freeBuffer(dGrad[i]);
  }
}

/// Median ms of `repeats` runs of `work` between two events (after one untimed warm-up run).
template <typename F> inline double medianMs(int repeats, F work) {
  CUevent start, stop;
  CHECK_CU(cuEventCreate(&start, 0));
  CHECK_CU(cuEventCreate(&stop, 0));
  work();
  std::vector<float> times;
  for (int r = 0; r < repeats; ++r) {
    CHECK_CU(cuEventRecord(start, nullptr));
    work();
    CHECK_CU(cuEventRecord(stop, nullptr));
    CHECK_CU(cuEventSynchronize(stop));
    float ms = 0;
    CHECK_CU(cuEventElapsedTime(&ms, start, stop));
    times.push_back(ms);
  }
  cuEventDestroy(start);
  cuEventDestroy(stop);
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

/// Random fp32 inputs for timing, drawn like makeInputs by each input's domain (log-space gates in [gateMin,
/// gateMax), strengths in [0.05, 0.95], unit rows, else normal) but with a counter-based generator spread over
/// the host's threads: the benchmark's largest problems hold billions of elements, too many for the fp64 path.
inline std::vector<std::vector<float>> makeTimingInputs(const std::vector<ref::Input> &declared, const ref::Shape &s,
                                                        const Problem &p, uint64_t seed) {
  auto uniform01 = [](uint64_t counter) {
    uint64_t z = counter + 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (double(z >> 11) + 0.5) * 0x1.0p-53;
  };
  std::vector<std::vector<float>> inputs;
  unsigned workers = std::max(1u, std::thread::hardware_concurrency());
  for (const ref::Input &in : declared) {
    auto [rows, width] = inputRowsAndWidth(in.kind, s);
    bool gate = in.domain == ref::InputDomain::LogGate, beta = in.domain == ref::InputDomain::Strength;
    bool unit = in.domain == ref::InputDomain::UnitRows;
    std::vector<float> x(rows * width);
    uint64_t base = (seed + inputs.size()) << 40;
    auto fill = [&](size_t r0, size_t r1) {
      for (size_t r = r0; r < r1; ++r) {
        double norm = 0;
        for (size_t c = 0; c < width; ++c) {
          size_t i = r * width + c;
          double u = uniform01(base + 2 * i), v;
          if (gate)
            v = p.gateMin + (p.gateMax - p.gateMin) * u;
          else if (beta)
            v = 0.05 + 0.9 * u;
          else
            v = std::sqrt(-2.0 * std::log(u)) * std::cos(6.283185307179586 * uniform01(base + 2 * i + 1));
          x[i] = float(v);
          norm += v * v;
        }
        if (unit)
          for (size_t c = 0; c < width; ++c)
            x[r * width + c] = float(x[r * width + c] / (std::sqrt(norm) + 1e-12));
      }
    };
    std::vector<std::thread> pool;
    for (unsigned w = 0; w < workers; ++w)
      pool.emplace_back(fill, rows * w / workers, rows * (w + 1) / workers);
    for (std::thread &t : pool)
      t.join();
    inputs.push_back(std::move(x));
  }
  return inputs;
}

struct Run {
  double outError = 0, stateError = 0, forwardMs = 0, forwardBackwardMs = 0;
};

/// Runs one problem on the GPU: with `reference`, the forward once against the fp64 reference; else timed
/// (`repeats` > 0): the forward alone, then forward + backward (dout random, no final-state cotangent) through
/// the training pair where the kernel has it (the forward saving its boundary states for the backward).
inline Run runProblem(const GpuKernel &k, Problem p, uint64_t seed, bool reference, int repeats) {
  p.io = k.io;
  const ref::Shape &s = p.shape;
  InputGenerator gen(seed);
  int64_t N = s.numSeqs(), tokens = s.cu_seqlens.empty() ? s.B * s.T : s.T, T = s.cu_seqlens.empty() ? s.T : tokens;
  int64_t stateSize = k.matrix ? s.K * s.V : s.K, outWidth = k.matrix ? s.V : s.K;
  std::vector<std::vector<double>> inputs;
  std::vector<std::vector<float>> inputs32;
  if (reference) {
    inputs = makeInputs(k.inputs, s, p, gen); // values of p.io
    for (auto &x : inputs)
      inputs32.push_back(toFloat(x));
  } else {
    inputs32 = makeTimingInputs(k.inputs, s, p, seed);
  }
  std::vector<double> h0 = gen.normal(N * s.H * stateSize);
  std::vector<CUdeviceptr> dInputs, dGrads;
  for (size_t i = 0; i < inputs32.size(); ++i) {
    dInputs.push_back(uploadIo(inputs32[i], inputIo(k, i)));
    dGrads.push_back(upload(std::vector<float>(inputs32[i].size(), 0.0f)));
  }
  inputs32.clear();
  const float poison = std::numeric_limits<float>::quiet_NaN();
  CUdeviceptr dOut = uploadIo(std::vector<float>(tokens * s.H * outWidth, poison), k.io);
  // The output cotangent only feeds timed backward runs: varied values in [-1, 1], cheap to make.
  std::vector<float> dout(tokens * s.H * outWidth);
  for (size_t i = 0; i < dout.size(); ++i)
    dout[i] = float((i * 2654435761u) % 2001) / 1000.0f - 1.0f;
  CUdeviceptr dDout = uploadIo(dout, k.io);
  CUdeviceptr dHt = upload(std::vector<float>(N * s.H * stateSize, poison));
  CUdeviceptr dH0 = upload(toFloat(h0));
  CUdeviceptr dDh0 = upload(std::vector<float>(N * s.H * stateSize, poison));
  CUdeviceptr dCu = 0;
  if (!s.cu_seqlens.empty()) {
    CHECK_CU(cuMemAlloc(&dCu, s.cu_seqlens.size() * sizeof(int32_t)));
    CHECK_CU(cuMemcpyHtoD(dCu, s.cu_seqlens.data(), s.cu_seqlens.size() * sizeof(int32_t)));
  }
  auto forward = [&] { check(k, k.launch(nullptr, dInputs.data(), dOut, dH0, dHt, dCu, N, T, s.H, s.K, s.V, 0.0f)); };
  auto backward = [&] {
    check(k, k.backward(nullptr, dInputs.data(), dH0, dDout, 0, dGrads.data(), dDh0, dCu, N, T, s.H, s.K, s.V, 0.0f));
  };
  // LINAC_BENCH_RECOMPUTE=1 times the plain pair instead (the backward recomputing the boundary states): the
  // same kernels, for a side-by-side run.
  const bool savingPair = k.forwardSaving && !std::getenv("LINAC_BENCH_RECOMPUTE");
  size_t savedCount = savingPair ? k.savedFloats(N, T, s.H, s.K, s.V, dCu != 0) : 0;
  CUdeviceptr saved = 0;
  if (savedCount && !reference)
    CHECK_CU(cuMemAlloc(&saved, savedCount * sizeof(float)));
  auto training = [&] {
    if (!savingPair) {
      forward();
      backward();
      return;
    }
    check(k, k.forwardSaving(nullptr, dInputs.data(), dOut, dH0, dHt, dCu, N, T, s.H, s.K, s.V, 0.0f, saved));
    check(k, k.backwardSaved(nullptr, dInputs.data(), dH0, dDout, 0, dGrads.data(), dDh0, dCu, N, T, s.H, s.K, s.V,
                             0.0f, saved));
  };
  Run result;
  if (reference) {
    forward();
    CHECK_CU(cuCtxSynchronize());
    ref::ForwardResult want = ref::forward(k.name, s, inputs, &h0, 0.0);
    result.outError = relativeRms(downloadIo(dOut, want.out.size(), k.io), want.out);
    result.stateError = relativeRms(download(dHt, want.finalState.size()), want.finalState);
  } else {
    result.forwardMs = medianMs(repeats, forward);
    result.forwardBackwardMs = medianMs(repeats, training);
  }
  if (saved)
    CHECK_CU(cuMemFree(saved));
  for (size_t i = 0; i < dInputs.size(); ++i) {
    freeBuffer(dInputs[i]);
    freeBuffer(dGrads[i]);
  }
  for (CUdeviceptr d : {dOut, dDout, dHt, dH0, dDh0, dCu})
    if (d)
      freeBuffer(d);
  return result;
}

#ifndef LINAC_GPU_CHUNK
#define LINAC_GPU_CHUNK 64
#endif
#define LINAC_GPU_PASTE(a, b, c) a##b##c
#define LINAC_GPU_SYMBOL(a, b, c) LINAC_GPU_PASTE(a, b, c)

/// The kernels of every example for chunk size LINAC_GPU_CHUNK (bench/gpu/build.sh sets it); 0: the unsuffixed
/// launchers, which choose each recurrence's chunk size by its structure and the launch's head dimensions.
#if LINAC_GPU_CHUNK == 0
#define LINAC_GPU_LAUNCHER(name, direction) linac_##name##_cuda_##direction
#define LINAC_GPU_TRAINING(name, direction, suffix) linac_##name##_cuda_##direction##_##suffix
#define LINAC_GPU_SAVED_FLOATS(name) linac_##name##_cuda_saved_floats
#else
#define LINAC_GPU_LAUNCHER(name, direction) LINAC_GPU_SYMBOL(linac_##name##_cuda_##direction##_chunk, LINAC_GPU_CHUNK, )
#define LINAC_GPU_TRAINING(name, direction, suffix)                                                                    \
  LINAC_GPU_SYMBOL(linac_##name##_cuda_##direction##_chunk, LINAC_GPU_CHUNK, _##suffix)
#define LINAC_GPU_SAVED_FLOATS(name) LINAC_GPU_TRAINING(name, forward, saved_floats)
#endif
#ifndef LINAC_GPU_NO_EXAMPLES
inline std::vector<GpuKernel> allGpuKernels() {
#define LINAC_GPU_KERNEL(name)                                                                                         \
  GpuKernel {                                                                                                          \
    #name, LINAC_GPU_LAUNCHER(name, forward), LINAC_GPU_LAUNCHER(name, backward), linac_##name##_cuda_error,           \
        linac_##name##_cuda_state_rank == 2, linac_##name##_cuda_transition, linac_##name##_cuda_products,             \
        linac_##name##_cuda_io, ref::inputsOf(#name), LINAC_GPU_TRAINING(name, forward, saving),                       \
        LINAC_GPU_TRAINING(name, backward, saved), LINAC_GPU_SAVED_FLOATS(name)                                      \
  }
  return {LINAC_GPU_KERNEL(hgrn),  LINAC_GPU_KERNEL(retnet),   LINAC_GPU_KERNEL(simple_gla),
          LINAC_GPU_KERNEL(gla),   LINAC_GPU_KERNEL(hgrn2),    LINAC_GPU_KERNEL(rwkv6),
          LINAC_GPU_KERNEL(deltanet), LINAC_GPU_KERNEL(gated_deltanet)};
#undef LINAC_GPU_KERNEL
}
#endif

/// Makes device 0's primary context current; returns the device's name.
inline std::string initDevice() {
  CHECK_CU(cuInit(0));
  CUdevice device;
  CHECK_CU(cuDeviceGet(&device, 0));
  char name[256];
  CHECK_CU(cuDeviceGetName(name, sizeof name, device));
  CUcontext context;
  CHECK_CU(cuDevicePrimaryCtxRetain(&context, device));
  CHECK_CU(cuCtxSetCurrent(context));
  return name;
}

} // namespace linac::test

#endif
