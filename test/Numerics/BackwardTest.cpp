// The backward pass derived by linac-autodiff, for every example and chunk
// size: against fp64 central finite differences of the reference forward on
// small shapes, and against the independent fp64 reference backward on larger
// ones. Every input, the initial state and the final-state cotangent are covered.
// DESIGN.md: fp32 chunked forms below 1e-4 relative rms error per gradient.
// Built also against the kernels with 16-bit I/O (linacc --cpu-io=bf16|f16;
// backward-bf16-test, backward-f16-test): the inputs and the output cotangent
// are 16-bit values, the reference sees the same ones, and the gradients,
// computed and stored in fp32, keep the fp32 bound.

#include "Harness.h"
#include "Kernels.h"

#include <gtest/gtest.h>

#include <tuple>

using namespace linac;
using namespace linac::test;

class Backward : public ::testing::TestWithParam<std::tuple<CompiledRecurrence, int>> {
protected:
  void check(Problem p, const GradientFn &expected, const std::string &what) {
    const auto &[r, chunk] = GetParam();
    p.io = r.io;
    GradientErrors e =
        compareBackward(r.backward(chunk), r.matrixState, ref::inputsOf(r.name), expected, p, freshSeed());
    for (const auto &[gradient, error] : e.errors)
      EXPECT_LT(error, 1e-4) << r.name << " C=" << chunk << " " << what << ": " << gradient << " error, seed "
                             << e.seed;
  }
  GradientFn referenceBackward() const {
    std::string name = std::get<0>(GetParam()).name;
    return [name](const ref::Shape &s, const std::vector<std::vector<double>> &inputs, const std::vector<double> &h0,
                  const std::vector<double> &dOut, const std::vector<double> &dht) {
      return ref::backward(name, s, inputs, &h0, 0.0, dOut, &dht);
    };
  }
  GradientFn finiteDifference() const {
    std::string name = std::get<0>(GetParam()).name;
    return [name](const ref::Shape &s, const std::vector<std::vector<double>> &inputs, const std::vector<double> &h0,
                  const std::vector<double> &dOut, const std::vector<double> &dht) {
      ReferenceFn forward = [&](const ref::Shape &shape, const std::vector<std::vector<double>> &in,
                                const std::vector<double> *state) { return ref::forward(name, shape, in, state, 0.0); };
      return finiteDifferences(forward, s, inputs, h0, dOut, dht);
    };
  }
};

TEST_P(Backward, FiniteDifferences) {
  check({{2, 5, 2, 3, 4, {}}}, finiteDifference(), "B=2 T=5");
  check({{1, 9, 1, 3, 2, {0, 3, 4, 9}}}, finiteDifference(), "varlen");
  check({{1, 1, 2, 4, 3, {}}}, finiteDifference(), "T=1");
}

TEST_P(Backward, Lengths) {
  for (int64_t T : {1, 63, 64, 65, 200})
    check({{2, T, 2, 16, 24, {}}}, referenceBackward(), "T=" + std::to_string(T));
}

TEST_P(Backward, VariableLength) {
  check({{1, 300, 2, 16, 16, {0, 7, 70, 71, 200, 300}}}, referenceBackward(), "varlen");
}

TEST_P(Backward, StrongDecay) {
  Problem p{{2, 130, 2, 16, 16, {}}};
  p.gateMin = -20.0;
  p.gateMax = -5.0;
  check(p, referenceBackward(), "strong decay");
}

TEST_P(Backward, WeakDecay) {
  Problem p{{1, 500, 2, 16, 16, {}}};
  p.gateMin = -0.01;
  p.gateMax = -0.0001;
  check(p, referenceBackward(), "weak decay");
}

TEST_P(Backward, HeadDim64) { check({{1, 70, 1, 64, 64, {}}}, referenceBackward(), "K=V=64"); }

INSTANTIATE_TEST_SUITE_P(Examples, Backward,
                         ::testing::Combine(::testing::ValuesIn(compiledExamples()), ::testing::Values(16, 32, 64)),
                         [](const auto &info) {
                           return std::get<0>(info.param).name + "_C" + std::to_string(std::get<1>(info.param));
                         });
