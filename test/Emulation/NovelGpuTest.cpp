// The GPU kernels of test/Numerics/novel.mlir (recurrences from no paper) on the CUDA driver emulator
// (docs/emulation.md), against the fp64 loops of NovelReference.h: the forward's output and final state, and
// the derived backward against central finite differences, as NovelTest.cpp checks the CPU kernels. The
// launchers are the ones `linacc --target=cuda` writes for a user's file (fp32 I/O, 3xTF32 products), so a
// recurrence the compiler has never seen is checked through the GPU path too.

#define LINAC_GPU_NO_EXAMPLES
#include "GpuHarness.h"
#include "NovelReference.h"

#include "novel_cuda.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>

using namespace linac;
using namespace linac::test;

namespace {

struct NovelGpu {
  novel::NovelReference reference;
  /// Launcher variant ("chunk16", "chunk64", "auto": the unsuffixed one) and its kernels.
  std::vector<std::pair<std::string, GpuKernel>> variants;
};

std::vector<NovelGpu> novelGpuRecurrences() {
  std::vector<NovelGpu> out;
  for (const novel::NovelReference &r : novel::novelReferences()) {
#define LINAC_NOVEL_GPU(name, suffix)                                                                                  \
  GpuKernel {                                                                                                          \
    #name, linac_##name##_cuda_forward##suffix, linac_##name##_cuda_backward##suffix, linac_novel_cuda_error,            \
        linac_##name##_cuda_state_rank == 2, linac_##name##_cuda_transition, linac_##name##_cuda_products,             \
        linac_##name##_cuda_io, r.inputs                                                                               \
  }
#define LINAC_NOVEL_VARIANTS(name)                                                                                     \
  {{"chunk16", LINAC_NOVEL_GPU(name, _chunk16)},                                                                       \
   {"chunk64", LINAC_NOVEL_GPU(name, _chunk64)},                                                                       \
   {"auto", LINAC_NOVEL_GPU(name, )}}
    NovelGpu n{r, {}};
    if (r.name == "keyed_gated_delta")
      n.variants = LINAC_NOVEL_VARIANTS(keyed_gated_delta);
    else if (r.name == "fixed_decay_delta")
      n.variants = LINAC_NOVEL_VARIANTS(fixed_decay_delta);
    else if (r.name == "sandwich_decay")
      n.variants = LINAC_NOVEL_VARIANTS(sandwich_decay);
#undef LINAC_NOVEL_VARIANTS
#undef LINAC_NOVEL_GPU
    if (n.variants.empty()) {
      std::fprintf(stderr, "no GPU launchers listed for %s\n", r.name.c_str());
      std::exit(1);
    }
    out.push_back(std::move(n));
  }
  return out;
}

/// Every variant's forward on problem p against the reference (fp32 tolerance: fp32 I/O and 3xTF32 products).
void checkForward(const NovelGpu &r, Problem p, const std::string &what) {
  for (const auto &[variant, kernel] : r.variants) {
    ASSERT_EQ(kernel.io, "f32");
    gpuKernel = &kernel;
    Errors e = compareForward(Kernel{r.reference.name, gpuForward, kernel.matrix}, r.reference.inputs,
                              r.reference.reference, p, freshSeed());
    EXPECT_LT(e.out, 1e-4) << r.reference.name << " " << variant << " " << what << ": output, seed " << e.seed;
    EXPECT_LT(e.finalState, 1e-4) << r.reference.name << " " << variant << " " << what << ": state, seed "
                                  << e.seed;
  }
}

/// The gradients the backward must give: fp64 central finite differences of r's reference.
GradientFn finiteDifferencesOf(const NovelGpu &r) {
  ReferenceFn reference = r.reference.reference;
  return [reference](const ref::Shape &s, const std::vector<std::vector<double>> &inputs,
                     const std::vector<double> &h0, const std::vector<double> &dOut, const std::vector<double> &dht) {
    return finiteDifferences(reference, s, inputs, h0, dOut, dht);
  };
}

class NovelGpuRecurrence : public ::testing::TestWithParam<NovelGpu> {
protected:
  static void SetUpTestSuite() { initDevice(); }
};

TEST_P(NovelGpuRecurrence, Lengths) {
  for (int64_t T : {1, 63, 65, 300})
    checkForward(GetParam(), {{2, T, 2, 16, 24, {}}}, "T=" + std::to_string(T));
}

TEST_P(NovelGpuRecurrence, VariableLength) {
  checkForward(GetParam(), {{1, 300, 2, 16, 16, {0, 7, 70, 71, 200, 300}}}, "varlen");
}

TEST_P(NovelGpuRecurrence, StrongDecay) {
  Problem p{{2, 130, 2, 16, 16, {}}};
  p.gateMin = -20.0;
  p.gateMax = -5.0;
  checkForward(GetParam(), p, "strong decay");
}

// Head dimensions with fixed-size kernels (64 and 128): with the launchers' value slices (generic kernels,
// several blocks a head) and with one slice, which runs the fixed-size copies.
TEST_P(NovelGpuRecurrence, FixedSizes) {
  for (const char *slices : {"", "1"}) {
    if (*slices)
      setenv("LINAC_CUDA_VALUE_SPLITS", slices, 1);
    checkForward(GetParam(), {{1, 130, 2, 64, 64, {}}}, std::string("K=V=64 slices=") + slices);
    checkForward(GetParam(), {{1, 70, 1, 128, 128, {}}}, std::string("K=V=128 slices=") + slices);
    unsetenv("LINAC_CUDA_VALUE_SPLITS");
  }
}

// Head dimensions past the fixed-size kernels and past shared memory: the generic kernels with their tiles
// in global scratch.
TEST_P(NovelGpuRecurrence, LargeHeads) { checkForward(GetParam(), {{1, 40, 1, 512, 384, {}}}, "K=512 V=384"); }

// Bad arguments come back as errors with a description, not as a launch.
TEST_P(NovelGpuRecurrence, BadArguments) {
  const GpuKernel &k = GetParam().variants.front().second;
  std::vector<CUdeviceptr> inputs(GetParam().reference.inputs.size(), 0);
  EXPECT_EQ(k.launch(nullptr, inputs.data(), 0, 0, 0, 0, 1, 10, 1, 16, 16, 0.0f), CUDA_ERROR_INVALID_VALUE);
  EXPECT_NE(std::string(k.error()).find("bad arguments"), std::string::npos) << k.error();
  CUdeviceptr out = upload(std::vector<float>(16));
  EXPECT_EQ(k.launch(nullptr, inputs.data(), out, 0, 0, 0, 0, 10, 1, 16, 16, 0.0f), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(k.launch(nullptr, inputs.data(), out, 0, 0, 0, 70000, 1, 1, 16, 16, 0.0f), CUDA_ERROR_INVALID_VALUE);
  EXPECT_NE(std::string(k.error()).find("65535"), std::string::npos) << k.error();
  cuMemFree(out);
}

// The derived backward against fp64 central finite differences of the reference.
TEST_P(NovelGpuRecurrence, BackwardFiniteDifferences) {
  const NovelGpu &r = GetParam();
  GradientFn expected = finiteDifferencesOf(r);
  for (ref::Shape shape : {ref::Shape{2, 5, 2, 3, 4, {}}, ref::Shape{1, 9, 1, 3, 2, {0, 3, 4, 9}},
                           ref::Shape{1, 1, 1, 4, 3, {}}, ref::Shape{1, 40, 1, 16, 8, {}}})
    for (const auto &[variant, kernel] : r.variants) {
      Problem p{shape};
      gpuKernel = &kernel;
      GradientErrors e = compareBackward(gpuBackward, kernel.matrix, r.reference.inputs,
                                         expected, p, freshSeed(), /*ioBuffers=*/false);
      for (const auto &[gradient, error] : e.errors)
        EXPECT_LT(error, 1e-4) << r.reference.name << " " << variant << " T=" << shape.T << " K=" << shape.K
                               << ": " << gradient << ", seed " << e.seed;
    }
}

// The fixed-size backward kernels (K = V = 64, one value slice) against finite differences.
TEST_P(NovelGpuRecurrence, BackwardFixedSize) {
  const NovelGpu &r = GetParam();
  GradientFn expected = finiteDifferencesOf(r);
  setenv("LINAC_CUDA_VALUE_SPLITS", "1", 1);
  for (const auto &[variant, kernel] : r.variants) {
    Problem p{{1, 10, 1, 64, 64, {}}};
    gpuKernel = &kernel;
    GradientErrors e = compareBackward(gpuBackward, kernel.matrix, r.reference.inputs, expected,
                                       p, freshSeed(), /*ioBuffers=*/false);
    for (const auto &[gradient, error] : e.errors)
      EXPECT_LT(error, 1e-4) << r.reference.name << " " << variant << " K=V=64: " << gradient << ", seed " << e.seed;
  }
  unsetenv("LINAC_CUDA_VALUE_SPLITS");
}

INSTANTIATE_TEST_SUITE_P(NovelGpu, NovelGpuRecurrence, ::testing::ValuesIn(novelGpuRecurrences()),
                         [](const auto &info) { return info.param.reference.name; });

} // namespace
