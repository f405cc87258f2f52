// The sequential CPU lowering of every example against the fp64 reference.
// DESIGN.md: fp32 sequential lowering below 1e-5 relative rms error.

#include "Harness.h"
#include "Kernels.h"

#include <gtest/gtest.h>

using namespace linac::test;

class Sequential : public ::testing::TestWithParam<CompiledRecurrence> {
protected:
  void check(const Problem &p, const std::string &what) {
    const CompiledRecurrence &r = GetParam();
    Errors e = compareForward(Kernel{r.name, r.sequential, r.matrixState}, p, freshSeed());
    EXPECT_LT(e.out, 1e-5) << r.name << " " << what << ": output error, seed " << e.seed;
    EXPECT_LT(e.finalState, 1e-5) << r.name << " " << what << ": final-state error, seed " << e.seed;
  }
};

TEST_P(Sequential, InputTableMatchesReference) {
  const CompiledRecurrence &r = GetParam();
  auto expected = linac::ref::inputsOf(r.name);
  ASSERT_EQ(r.numInputs, static_cast<int>(expected.size()));
  for (int i = 0; i < r.numInputs; ++i)
    EXPECT_EQ(expected[i].first, r.inputs[i].name) << "input " << i;
  EXPECT_EQ(r.matrixState, !linac::ref::isVectorState(r.name));
}

TEST_P(Sequential, SingleToken) { check({{2, 1, 3, 16, 8, {}}}, "T=1"); }

TEST_P(Sequential, OddLengths) {
  for (int64_t T : {63, 64, 65})
    check({{2, T, 2, 16, 24, {}}}, "T=" + std::to_string(T));
}

TEST_P(Sequential, LongSequence) { check({{1, 1000, 2, 32, 32, {}}}, "T=1000"); }

TEST_P(Sequential, HeadDims) {
  for (int64_t D : {64, 128, 256})
    check({{1, 37, 2, D, D, {}}}, "K=V=" + std::to_string(D));
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

INSTANTIATE_TEST_SUITE_P(Examples, Sequential, ::testing::ValuesIn(compiledExamples()),
                         [](const auto &info) { return info.param.name; });
