// The GPU kernels from linacc --target=cuda, on the device machine: every
// example's chunked forward and derived backward against the fp64 CPU
// reference (odd T, varlen, initial and final states, head dims 64 and 128,
// strong decay; varlen and strong decay also at the fixed-size kernels' head
// dims), then a timing at the benchmark shape. CI runs it on the CUDA driver
// emulator (test/Emulation); bench/gpu/build.sh builds it for the device.

#include "GpuHarness.h"

#include <cstdio>

using namespace linac;
using namespace linac::test;

int main(int argc, char **argv) {
  // --no-timing skips the timing; --repeat N runs the checks N times on fresh random inputs (intermittent errors);
  // --only TEXT runs the cases whose "recurrence case" contains TEXT. LINAC_SEED=<seed> replays a printed seed.
  bool timeLarge = true;
  int repeats = 1;
  std::string only;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--no-timing")
      timeLarge = false;
    else if (arg == "--repeat" && i + 1 < argc && std::atoi(argv[i + 1]) > 0)
      repeats = std::atoi(argv[++i]);
    else if (arg == "--only" && i + 1 < argc)
      only = argv[++i];
    else {
      std::fprintf(stderr, "usage: gpu-check [--no-timing] [--repeat N] [--only TEXT]\n");
      return 2;
    }
  }
  std::printf("device: %s\n", initDevice().c_str());
  const std::vector<GpuKernel> kernels = allGpuKernels();
  std::printf("tensor-core products: %s, I/O: %s\n", kernels.front().products.c_str(), kernels.front().io.c_str());
  struct Case {
    const char *what;
    Problem problem;
    bool misaligned = false;  // every buffer one element past 16-byte alignment: the generic kernels
  };
  Problem strong{{2, 130, 2, 16, 16, {}}};
  strong.gateMin = -20;
  strong.gateMax = -5;
  // The same at a head dimension with fixed-size kernels (which one slice, LINAC_CUDA_VALUE_SPLITS=1, reaches).
  Problem strong64{{1, 100, 2, 64, 64, {}}};
  strong64.gateMin = -20;
  strong64.gateMax = -5;
  const Case cases[] = {
      {"T=1", {{2, 1, 2, 16, 24, {}}}},
      {"T=63", {{2, 63, 2, 16, 24, {}}}},
      {"T=65", {{2, 65, 2, 16, 24, {}}}},
      {"varlen", {{1, 300, 2, 16, 16, {0, 7, 70, 71, 200, 300}}}},
      {"K=V=64", {{1, 200, 2, 64, 64, {}}}},
      {"K=V=128", {{1, 130, 2, 128, 128, {}}}},
      {"varlen K=V=128", {{1, 300, 2, 128, 128, {0, 7, 70, 71, 200, 300}}}},
      {"runtime tiny", {{3, 100, 2, 32, 32, {}}}}, // the runtime tests' layer shape (head dim 32, B=3, T=100)
      {"K=V=256", {{1, 70, 2, 256, 256, {}}}},
      {"strong decay", strong},
      {"strong K=V=64", strong64},
      // Buffers not 16-byte aligned (views into larger tensors) at the fixed-size kernels' head dims: the
      // launchers must take the generic kernels, whichever slices they choose.
      {"misaligned 64", {{2, 70, 2, 64, 64, {}}}, true},
      {"misaligned 128", {{1, 150, 2, 128, 128, {0, 7, 70, 150}}}, true},
  };
  // DESIGN.md: fp32 chunked forms below 1e-4 relative rms error, per output and per gradient; bf16 inputs with
  // fp32 accumulation below 5e-3 for outputs and 1e-2 for gradients. Kernels with bf16 or f16 I/O (linacc
  // --gpu-io; the reference then reads the same 16-bit values; f16's 11 significant bits are more than bf16's
  // 8, and DESIGN.md sets no tighter class for them) are in that class, and so are kernels built with tf32
  // or bf16 products (one tensor-core product of operands rounded to 10 or 8 mantissa bits).
  bool ok = true;
  std::printf("%-15s %-15s %10s %10s  %s\n", "recurrence", "case", "out err", "state err", "worst gradient");
  for (int repeat = 0; repeat < repeats; ++repeat)
    for (const GpuKernel &k : kernels)
      for (const Case &c : cases) {
        if ((k.name + " " + c.what).find(only) == std::string::npos)
          continue;
        bool bf16Class = k.products != "tf32x3" || k.io != "f32";
        const double tolerance = bf16Class ? 5e-3 : 1e-4, gradTolerance = bf16Class ? 1e-2 : 1e-4;
        Problem problem = c.problem;
        problem.io = k.io;
        misalignBuffers() = c.misaligned;
        const uint64_t forwardSeed = freshSeed();
        Run fwd = runProblem(k, problem, forwardSeed, true, 0);
        gpuKernel = &k;
        auto expected = [&](const ref::Shape &s, const std::vector<std::vector<double>> &in,
                            const std::vector<double> &h0, const std::vector<double> &dOut,
                            const std::vector<double> &dht) {
          return ref::backward(k.name, s, in, &h0, 0.0, dOut, &dht);
        };
        // The backward alone (recomputing the boundary states), then the training pair on the same inputs (the
        // saving forward, then the backward given its states), each against the fp64 gradients.
        const uint64_t backwardSeed = freshSeed();
        GradientErrors grads =
            compareBackward(gpuBackward, k.matrix, k.inputs, expected, problem, backwardSeed,
                            /*ioBuffers=*/false); // gpuBackward uploads them in the kernels' I/O type itself
        if (k.forwardSaving) {
          trainingBackward() = true;
          GradientErrors training = compareBackward(gpuBackward, k.matrix, k.inputs, expected, problem,
                                                    backwardSeed, /*ioBuffers=*/false);
          trainingBackward() = false;
          for (const auto &[what, error] : training.errors)
            grads.errors.emplace_back(what + " (training)", error);
        }
        std::pair<std::string, double> worst{"", 0.0};
        bool gradsOk = true;
        for (const auto &[what, error] : grads.errors) {
          gradsOk &= error < gradTolerance;
          if (!(error <= worst.second))
            worst = {what, error};
        }
        const bool forwardOk = fwd.outError < tolerance && fwd.stateError < tolerance;
        const bool pass = forwardOk && gradsOk;
        ok &= pass;
        std::printf("%-15s %-15s %10.2e %10.2e  %s %.2e%s\n", k.name.c_str(), c.what, fwd.outError, fwd.stateError,
                    worst.first.c_str(), worst.second, pass ? "" : "  FAIL");
        if (!forwardOk)
          std::printf("    forward (seed %llu)\n", (unsigned long long)forwardSeed);
        if (!gradsOk)
          for (const auto &[what, error] : grads.errors)
            std::printf("    %s %.2e (seed %llu)\n", what.c_str(), error, (unsigned long long)grads.seed);
      }
  misalignBuffers() = false;
  std::printf(ok ? "all GPU kernels, forward and backward, match the fp64 reference\n"
                 : "SOME GPU KERNELS DO NOT MATCH\n");
  if (timeLarge) {
    std::printf("\ntiming, %s inputs, median of 3 after one warm-up\n%-15s %-26s %10s %12s\n",
                kernels.front().io.c_str(), "recurrence", "shape", "fwd ms", "fwd+bwd ms");
    for (const GpuKernel &k : kernels) {
      // HGRN's 2048 channels are independent: 16 heads of 128 is the same computation as fla's [B, T, 2048].
      Problem p{{8, 4096, 16, 128, 128, {}}};
      Run t = runProblem(k, p, 1, false, 3);
      std::printf("%-15s B=8 T=4096 H=16 K=V=128 %10.3f %12.3f\n", k.name.c_str(), t.forwardMs, t.forwardBackwardMs);
      std::fflush(stdout);
    }
  }
  return ok ? 0 : 1;
}
