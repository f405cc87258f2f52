// The GPU benchmark (issue 5): every example's chunked forward and forward +
// backward at B=8, H=16 over T and head dims, timed with CUDA events (one
// warm-up, median of the repeats), with tokens/s and the achieved rate against
// the floor of the same work at bf16 I/O on an H200. Inputs are fp32 or bf16
// as the kernels were built (linacc --gpu-io); the floor is always bf16's, the
// precision fla is measured at, so "x floor" does not flatter fp32 builds.
// Run on the device machine:
//   gpu-bench [--quick] [--head-dim D] [name...]
// --quick times only the benchmark shape B=8 T=4096 H=16 K=V=128 (--head-dim D: K=V=D).

#include "GpuHarness.h"

#include <cstring>

using namespace linac;
using namespace linac::test;

namespace {

// Measured on this workplace's H200s (KINDS.md): device copy and a large bf16 matrix product.
constexpr double kBytesPerSecond = 4.3e12, kFlopsPerSecond = 790e12;

struct Work {
  double bytes = 0, flops = 0;
};

/// The least memory traffic (bf16 elements, each input read once, each output written once) and the matrix
/// FLOPs of the chunked algorithm (chunk C), for the forward; the backward reads the inputs and dout again,
/// writes every input gradient, and does about twice the forward's products after recomputing it.
Work floorOf(const GpuKernel &k, int64_t tokens, int64_t H, int64_t K, int64_t V, int64_t C, bool backward) {
  std::vector<size_t> sizes = inputSizes(k, tokens, H, K, k.matrix ? V : K);
  double inputs = 0;
  for (size_t s : sizes)
    inputs += double(s);
  double out = double(tokens * H * (k.matrix ? V : K));
  Work w;
  w.bytes = 2.0 * (inputs + out);
  if (k.matrix) {
    double chunks = double(tokens) / double(C) * double(H);
    double perChunk = 2.0 * C * C * K + 2.0 * C * C * V + 4.0 * C * K * V;
    if (k.transition.rfind("delta_", 0) == 0) // the delta rule's UT transform and pseudo-values
      perChunk += 2.0 * C * C * K + 2.0 * C * K * V + double(C) * C * V;
    w.flops = chunks * perChunk;
  }
  if (backward) {
    w.bytes += 2.0 * (2 * inputs + out);
    w.flops *= 4.0;
  }
  return w;
}

struct Shape {
  int64_t T, K;
};

} // namespace

int main(int argc, char **argv) {
  bool quick = false;
  int64_t headDim = 128;
  std::vector<std::string> only;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--quick"))
      quick = true;
    else if (!std::strcmp(argv[i], "--head-dim") && i + 1 < argc && std::atoll(argv[i + 1]) > 0)
      headDim = std::atoll(argv[++i]);
    else
      only.push_back(argv[i]);
  }
  std::string device = initDevice();
  std::printf("device: %s\n%s inputs; floor = max(bytes / 4.3 TB/s, FLOPs / 790 TFLOP/s) of the same work at bf16 "
              "I/O\n",
              device.c_str(), allGpuKernels().front().io.c_str());
  std::printf("fwd: the forward alone; fwd+bwd: %s\n\n",
              std::getenv("LINAC_BENCH_RECOMPUTE")
                  ? "the forward, then the backward recomputing the chunks' boundary states (LINAC_BENCH_RECOMPUTE)"
                  : "the training pair (the forward saving the chunks' boundary states, the backward given them)");
  std::vector<Shape> shapes = {{4096, headDim}};
  if (!quick)
    shapes.insert(shapes.end(), {{2048, 128}, {8192, 128}, {16384, 128}, {4096, 64}, {4096, 256}});
  std::printf("%-15s %6s %4s %10s %12s %11s %9s %9s %10s %10s\n", "recurrence", "T", "K=V", "fwd ms", "fwd+bwd ms",
              "Mtok/s f+b", "fwd TB/s", "fwd TF/s", "fwd/floor", "f+b/floor");
  for (const GpuKernel &k : allGpuKernels()) {
    if (!only.empty() && std::find(only.begin(), only.end(), k.name) == only.end())
      continue;
    for (const Shape &s : shapes) {
      const int64_t B = 8, H = 16, C = 64;
      Problem p{{B, s.T, H, s.K, s.K, {}}};
      Run t = runProblem(k, p, 1, false, 3);
      Work f = floorOf(k, B * s.T, H, s.K, s.K, C, false), fb = floorOf(k, B * s.T, H, s.K, s.K, C, true);
      auto floorMs = [](const Work &w) { return 1e3 * std::max(w.bytes / kBytesPerSecond, w.flops / kFlopsPerSecond); };
      std::printf("%-15s %6lld %4lld %10.3f %12.3f %11.2f %9.3f %9.2f %10.1f %10.1f\n", k.name.c_str(),
                  (long long)s.T, (long long)s.K, t.forwardMs, t.forwardBackwardMs,
                  double(B * s.T) / (t.forwardBackwardMs * 1e3), f.bytes / (t.forwardMs * 1e9),
                  f.flops / (t.forwardMs * 1e9), t.forwardMs / floorMs(f), t.forwardBackwardMs / floorMs(fb));
      std::fflush(stdout);
    }
  }
  return 0;
}
