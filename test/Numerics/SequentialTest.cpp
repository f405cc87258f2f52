// The sequential CPU lowering of every example against the fp64 reference.
// DESIGN.md: fp32 sequential lowering below 1e-5 relative rms error.

#include "Harness.h"

#include "deltanet.h"
#include "gated_deltanet.h"
#include "gla.h"
#include "hgrn.h"
#include "hgrn2.h"
#include "retnet.h"
#include "rwkv6.h"
#include "simple_gla.h"

#include <gtest/gtest.h>

using namespace linac::test;

#define LINAC_KERNEL(name, matrix)                                                                                     \
  Kernel { #name, linac_##name##_forward, linac_##name##_inputs, linac_##name##_num_inputs, matrix }

static const Kernel kKernels[] = {
    LINAC_KERNEL(hgrn, false),      LINAC_KERNEL(retnet, true), LINAC_KERNEL(simple_gla, true),
    LINAC_KERNEL(gla, true),        LINAC_KERNEL(hgrn2, true),  LINAC_KERNEL(rwkv6, true),
    LINAC_KERNEL(deltanet, true),   LINAC_KERNEL(gated_deltanet, true),
};

static uint64_t freshSeed() { return std::random_device{}() * 0x9E3779B97F4A7C15ull ^ std::random_device{}(); }

class Sequential : public ::testing::TestWithParam<Kernel> {
protected:
  void check(const Problem &p, const char *what) {
    const Kernel &kernel = GetParam();
    Errors e = compareForward(kernel, p, freshSeed());
    EXPECT_LT(e.out, 1e-5) << kernel.name << " " << what << ": output error, seed " << e.seed;
    EXPECT_LT(e.finalState, 1e-5) << kernel.name << " " << what << ": final-state error, seed " << e.seed;
    RecordProperty(std::string(what) + "_out", std::to_string(e.out));
  }
};

TEST_P(Sequential, InputTableMatchesReference) {
  const Kernel &kernel = GetParam();
  auto expected = linac::ref::inputsOf(kernel.name);
  ASSERT_EQ(kernel.numInputs, static_cast<int>(expected.size()));
  for (int i = 0; i < kernel.numInputs; ++i)
    EXPECT_EQ(expected[i].first, kernel.inputs[i].name) << "input " << i;
  EXPECT_EQ(kernel.matrixState, !linac::ref::isVectorState(kernel.name));
}

TEST_P(Sequential, SingleToken) { check({{2, 1, 3, 16, 8, {}}}, "T=1"); }

TEST_P(Sequential, OddLengths) {
  for (int64_t T : {63, 64, 65})
    check({{2, T, 2, 16, 24, {}}}, ("T=" + std::to_string(T)).c_str());
}

TEST_P(Sequential, LongSequence) { check({{1, 1000, 2, 32, 32, {}}}, "T=1000"); }

TEST_P(Sequential, HeadDims) {
  for (int64_t D : {64, 128, 256})
    check({{1, 37, 2, D, D, {}}}, ("K=V=" + std::to_string(D)).c_str());
}

TEST_P(Sequential, KeyAndValueDimsDiffer) { check({{2, 20, 2, 8, 40, {}}}, "K=8,V=40"); }

TEST_P(Sequential, ZeroInitialState) {
  Problem p{{2, 50, 2, 16, 16, {}}};
  p.withInitialState = false;
  check(p, "h0=0");
}

TEST_P(Sequential, VariableLength) { check({{1, 200, 2, 16, 16, {0, 7, 70, 71, 200}}}, "varlen"); }

TEST_P(Sequential, StrongDecay) {
  Problem p{{2, 65, 2, 16, 16, {}}};
  p.gateMin = -20.0;
  p.gateMax = -5.0;
  check(p, "strong decay");
}

INSTANTIATE_TEST_SUITE_P(Examples, Sequential, ::testing::ValuesIn(kKernels),
                         [](const auto &info) { return info.param.name; });
