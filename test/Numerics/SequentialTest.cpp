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
  EXPECT_EQ(inputTableMismatches(r.inputs, r.numInputs, linac::ref::inputsOf(r.name)), std::vector<std::string>{});
  EXPECT_EQ(r.matrixState, !linac::ref::isVectorState(r.name));
}

// The check above finds each kind of disagreement (and lets an input without activation take the test's domain).
TEST(InputTable, MismatchesAreFound) {
  using K = linac::ref::InputKind;
  using D = linac::ref::InputDomain;
  const linac_input_desc table[] = {{"k", LINAC_TOKEN_KEY, LINAC_ACT_NONE},
                                    {"g", LINAC_TOKEN_SCALAR, LINAC_ACT_LOG_SIGMOID}};
  using Declared = std::vector<linac::ref::Input>;
  EXPECT_TRUE(inputTableMismatches(table, 2, Declared{{"k", K::TokenKey, D::UnitRows}, {"g", K::TokenScalar, D::LogGate}})
                  .empty());
  EXPECT_EQ(inputTableMismatches(table, 2, Declared{{"k", K::TokenKey}, {"g", K::TokenScalar}}).size(), 1u);
  EXPECT_EQ(inputTableMismatches(table, 2, Declared{{"q", K::TokenKey}, {"g", K::TokenKey, D::LogGate}}).size(), 2u);
  EXPECT_EQ(inputTableMismatches(table, 2, Declared{{"k", K::TokenKey}}).size(), 1u);
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

// The harness's f32 -> f16 rounding (the GPU check's f16 I/O feeds the fp64 reference these values) against
// the compiler's own conversion (_Float16, libgcc's __truncsfhf2): every half round-trips, ties between
// neighbouring halves go to even, and random floats over the whole range (subnormals, overflow) round alike.
TEST(IoRounding, HalfMatchesTheCompilersConversion) {
  auto viaCompiler = [](float x) {
    _Float16 h = static_cast<_Float16>(x);
    uint16_t bits;
    std::memcpy(&bits, &h, sizeof bits);
    return bits;
  };
  for (uint32_t h = 0; h < 0x10000u; ++h) {
    if ((h & 0x7C00u) == 0x7C00u && (h & 0x3FFu))
      continue; // NaN payloads need not survive
    float x = fromF16Bits(uint16_t(h));
    _Float16 want;
    uint16_t bits = uint16_t(h);
    std::memcpy(&want, &bits, sizeof want);
    ASSERT_EQ(x, static_cast<float>(want)) << std::hex << h;
    ASSERT_EQ(f16Bits(x), h) << std::hex << h;
    if ((h & 0x7FFFu) < 0x7BFFu) { // the midpoint to the next half up (in magnitude), and just either side
      float next = fromF16Bits(uint16_t(h + 1));
      float mid = float((double(x) + double(next)) / 2);
      for (float y : {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, mid * 2)})
        ASSERT_EQ(f16Bits(y), viaCompiler(y)) << y;
    }
  }
  std::mt19937 gen(12345);
  std::uniform_int_distribution<uint32_t> any;
  for (int i = 0; i < 2000000; ++i) {
    uint32_t u = any(gen);
    float x;
    std::memcpy(&x, &u, sizeof x);
    if (std::isnan(x))
      continue;
    ASSERT_EQ(f16Bits(x), viaCompiler(x)) << x;
  }
}
