// Recurrences from novel.mlir, sequential and chunked, against fp64 loops written from their formulas
// (NovelReference.h).

#include "Harness.h"
#include "NovelReference.h"

#include "novel.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace linac;
using namespace linac::test;

namespace {

using namespace novel;
using ref::InputKind;

struct Novel {
  std::string name;
  std::vector<ref::Input> inputs;
  ReferenceFn reference;
  std::vector<std::pair<std::string, linac_forward_fn>> variants;
  std::vector<std::pair<std::string, linac_backward_fn>> backwards;
};

/// novelReferences() (NovelReference.h), in its order, each with its compiled entry points.
std::vector<Novel> novelRecurrences() {
  const std::vector<NovelReference> refs = novelReferences();
  auto with = [&](size_t i, std::vector<std::pair<std::string, linac_forward_fn>> variants,
                  std::vector<std::pair<std::string, linac_backward_fn>> backwards) {
    return Novel{refs[i].name, refs[i].inputs, refs[i].reference, std::move(variants), std::move(backwards)};
  };
  return {
      with(0,
           {{"sequential", linac_keyed_gated_delta_forward_sequential},
            {"chunk16", linac_keyed_gated_delta_forward_chunk16},
            {"chunk32", linac_keyed_gated_delta_forward_chunk32},
            {"chunk64", linac_keyed_gated_delta_forward_chunk64}},
           {{"chunk16", linac_keyed_gated_delta_backward_chunk16},
            {"chunk32", linac_keyed_gated_delta_backward_chunk32},
            {"chunk64", linac_keyed_gated_delta_backward_chunk64}}),
      with(1,
           {{"sequential", linac_fixed_decay_delta_forward_sequential},
            {"chunk16", linac_fixed_decay_delta_forward_chunk16},
            {"chunk32", linac_fixed_decay_delta_forward_chunk32},
            {"chunk64", linac_fixed_decay_delta_forward_chunk64}},
           {{"chunk16", linac_fixed_decay_delta_backward_chunk16},
            {"chunk32", linac_fixed_decay_delta_backward_chunk32},
            {"chunk64", linac_fixed_decay_delta_backward_chunk64}}),
      with(2,
           {{"sequential", linac_sandwich_decay_forward_sequential},
            {"chunk16", linac_sandwich_decay_forward_chunk16},
            {"chunk32", linac_sandwich_decay_forward_chunk32},
            {"chunk64", linac_sandwich_decay_forward_chunk64}},
           {{"chunk16", linac_sandwich_decay_backward_chunk16},
            {"chunk32", linac_sandwich_decay_backward_chunk32},
            {"chunk64", linac_sandwich_decay_backward_chunk64}}),
  };
}

class NovelRecurrence : public ::testing::TestWithParam<Novel> {
protected:
  void check(Problem p, const std::string &what) {
    const Novel &r = GetParam();
    for (const auto &[variant, fn] : r.variants) {
      double tolerance = variant == "sequential" ? 1e-5 : 1e-4;
      Errors e = compareForward(Kernel{r.name, fn, true}, r.inputs, r.reference, p, freshSeed());
      EXPECT_LT(e.out, tolerance) << r.name << " " << variant << " " << what << ": output, seed " << e.seed;
      EXPECT_LT(e.finalState, tolerance) << r.name << " " << variant << " " << what << ": state, seed " << e.seed;
    }
  }
};

// The derived backward against fp64 central finite differences of the formula above.
TEST_P(NovelRecurrence, BackwardFiniteDifferences) {
  const Novel &r = GetParam();
  GradientFn expected = [&](const ref::Shape &s, const Inputs &inputs, const std::vector<double> &h0,
                            const std::vector<double> &dOut, const std::vector<double> &dht) {
    return finiteDifferences(r.reference, s, inputs, h0, dOut, dht);
  };
  for (ref::Shape shape : {ref::Shape{2, 5, 2, 3, 4, {}}, ref::Shape{1, 9, 1, 3, 2, {0, 3, 4, 9}},
                           ref::Shape{1, 1, 1, 4, 3, {}}})
    for (const auto &[variant, fn] : r.backwards) {
      Problem p{shape};
      GradientErrors e = compareBackward(fn, true, r.inputs, expected, p, freshSeed());
      for (const auto &[gradient, error] : e.errors)
        EXPECT_LT(error, 1e-4) << r.name << " " << variant << " T=" << shape.T << ": " << gradient << ", seed "
                               << e.seed;
    }
}

TEST_P(NovelRecurrence, Lengths) {
  for (int64_t T : {1, 63, 64, 65, 1000})
    check({{2, T, 2, 16, 24, {}}}, "T=" + std::to_string(T));
}

TEST_P(NovelRecurrence, VariableLength) { check({{1, 300, 2, 16, 16, {0, 7, 70, 71, 200, 300}}}, "varlen"); }

TEST_P(NovelRecurrence, StrongDecay) {
  Problem p{{2, 130, 2, 16, 16, {}}};
  p.gateMin = -20.0;
  p.gateMax = -5.0;
  check(p, "strong decay");
}

// Each compiled input table against its reference's declaration (names, layouts, domains by activation).
TEST(NovelInputs, TablesMatchReferences) {
  const std::vector<NovelReference> refs = novelReferences();
  ASSERT_EQ(refs.size(), 3u);
  EXPECT_EQ(inputTableMismatches(linac_keyed_gated_delta_inputs, linac_keyed_gated_delta_num_inputs, refs[0].inputs),
            std::vector<std::string>{});
  EXPECT_EQ(inputTableMismatches(linac_fixed_decay_delta_inputs, linac_fixed_decay_delta_num_inputs, refs[1].inputs),
            std::vector<std::string>{});
  EXPECT_EQ(inputTableMismatches(linac_sandwich_decay_inputs, linac_sandwich_decay_num_inputs, refs[2].inputs),
            std::vector<std::string>{});
}

INSTANTIATE_TEST_SUITE_P(Novel, NovelRecurrence, ::testing::ValuesIn(novelRecurrences()),
                         [](const auto &info) { return info.param.name; });

} // namespace
