// Runs every compiled example (sequential and chunked variants) on one random
// problem, checks it against the fp64 reference and reports CPU throughput.
// This is the README's main job until the runtime can train a model.
//
//   cpu-forward-bench [T] [H] [D]      (defaults: 512 2 64; B = 2)

#include "Harness.h"
#include "Kernels.h"

#include <cstdio>
#include <cstdlib>

using namespace linac;
using namespace linac::test;

int main(int argc, char **argv) {
  int64_t T = argc > 1 ? std::atoll(argv[1]) : 512;
  int64_t H = argc > 2 ? std::atoll(argv[2]) : 2;
  int64_t D = argc > 3 ? std::atoll(argv[3]) : 64;
  if (T < 1 || H < 1 || D < 1) {
    std::fprintf(stderr, "usage: cpu-forward-bench [T >= 1] [H >= 1] [D >= 1]\n");
    return 2;
  }
  Problem p{{2, T, H, D, D, {}}};
  std::printf("linac CPU forward, B=2 T=%lld H=%lld K=V=%lld, fp32 vs fp64 reference\n", (long long)T, (long long)H,
              (long long)D);
  std::printf("%-15s %-11s %12s %12s %10s %14s\n", "recurrence", "variant", "out err", "state err", "ms",
              "tokens/s");
  bool ok = true;
  for (const CompiledRecurrence &r : compiledExamples()) {
    std::pair<const char *, linac_forward_fn> variants[] = {
        {"sequential", r.sequential}, {"chunk16", r.chunk16}, {"chunk32", r.chunk32}, {"chunk64", r.chunk64}};
    for (auto [variant, fn] : variants) {
      Errors e = compareForward(Kernel{r.name, fn, r.matrixState}, p, freshSeed());
      double ms = e.kernelMs;
      double limit = std::string(variant) == "sequential" ? 1e-5 : 1e-4;
      bool pass = e.out < limit && e.finalState < limit;
      ok &= pass;
      // One cold call on one core, fp32 scalar loops: a smoke figure, not a benchmark.
      std::printf("%-15s %-11s %12.2e %12.2e %10.1f %14.0f %s\n", r.name.c_str(), variant, e.out, e.finalState, ms,
                  2 * T / (ms / 1e3), pass ? "" : "FAIL");
    }
  }
  std::printf(ok ? "all kernels match the reference\n" : "SOME KERNELS DO NOT MATCH THE REFERENCE\n");
  return ok ? 0 : 1;
}
