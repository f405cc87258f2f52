// Recurrences from novel.mlir, sequential and chunked, against fp64 loops written here from their formulas.

#include "Harness.h"

#include "novel.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace linac;
using namespace linac::test;
using Inputs = std::vector<std::vector<double>>;

namespace {

/// Sequence bounds in flattened token indices.
std::vector<std::pair<int64_t, int64_t>> sequences(const ref::Shape &s) {
  std::vector<std::pair<int64_t, int64_t>> out;
  if (s.cu_seqlens.empty())
    for (int64_t n = 0; n < s.B; ++n)
      out.push_back({n * s.T, (n + 1) * s.T});
  else
    for (size_t n = 0; n + 1 < s.cu_seqlens.size(); ++n)
      out.push_back({s.cu_seqlens[n], s.cu_seqlens[n + 1]});
  return out;
}

/// Runs a matrix recurrence token by token; `step(S, t, h, o)` updates S (K x V, row-major) and writes o.
template <typename Step>
ref::ForwardResult runMatrix(const ref::Shape &s, const std::vector<double> *h0, Step step) {
  auto seqs = sequences(s);
  int64_t tokens = s.cu_seqlens.empty() ? s.B * s.T : s.T;
  ref::ForwardResult r{std::vector<double>(tokens * s.H * s.V), std::vector<double>(seqs.size() * s.H * s.K * s.V)};
  for (size_t n = 0; n < seqs.size(); ++n)
    for (int64_t h = 0; h < s.H; ++h) {
      std::vector<double> S(s.K * s.V, 0.0);
      if (h0)
        std::copy_n(h0->begin() + (n * s.H + h) * s.K * s.V, s.K * s.V, S.begin());
      for (int64_t t = seqs[n].first; t < seqs[n].second; ++t)
        step(S, t, h, &r.out[(t * s.H + h) * s.V]);
      std::copy(S.begin(), S.end(), r.finalState.begin() + (n * s.H + h) * s.K * s.V);
    }
  return r;
}

struct Access {
  const ref::Shape &s;
  double key(const std::vector<double> &x, int64_t t, int64_t h, int64_t i) const { return x[(t * s.H + h) * s.K + i]; }
  double value(const std::vector<double> &x, int64_t t, int64_t h, int64_t j) const {
    return x[(t * s.H + h) * s.V + j];
  }
  double scalar(const std::vector<double> &x, int64_t t, int64_t h) const { return x[t * s.H + h]; }
};

/// S = (I - beta k k^T) S + beta k v^T, in place.
void deltaRule(std::vector<double> &S, const ref::Shape &s, const double *k, const double *v, double beta) {
  for (int64_t j = 0; j < s.V; ++j) {
    double recalled = 0;
    for (int64_t i = 0; i < s.K; ++i)
      recalled += k[i] * S[i * s.V + j];
    for (int64_t i = 0; i < s.K; ++i)
      S[i * s.V + j] += beta * k[i] * (v[j] - recalled);
  }
}

void readInto(const std::vector<double> &S, const ref::Shape &s, const double *q, double scale, double *o) {
  for (int64_t j = 0; j < s.V; ++j) {
    double acc = 0;
    for (int64_t i = 0; i < s.K; ++i)
      acc += q[i] * S[i * s.V + j];
    o[j] = scale * acc;
  }
}

ref::ForwardResult keyedGatedDelta(const ref::Shape &s, const Inputs &in, const std::vector<double> *h0) {
  const auto &q = in[0], &k = in[1], &v = in[2], &g = in[3], &beta = in[4], &z = in[5];
  return runMatrix(s, h0, [&](std::vector<double> &S, int64_t t, int64_t h, double *o) {
    for (int64_t i = 0; i < s.K; ++i)
      for (int64_t j = 0; j < s.V; ++j)
        S[i * s.V + j] *= std::exp(g[(t * s.H + h) * s.K + i]);
    deltaRule(S, s, &k[(t * s.H + h) * s.K], &v[(t * s.H + h) * s.V], beta[t * s.H + h]);
    readInto(S, s, &q[(t * s.H + h) * s.K], 1.0 / std::sqrt(double(s.K)), o);
    for (int64_t j = 0; j < s.V; ++j)
      o[j] /= 1.0 + std::exp(-z[(t * s.H + h) * s.V + j]);
  });
}

ref::ForwardResult fixedDecayDelta(const ref::Shape &s, const Inputs &in, const std::vector<double> *h0) {
  const auto &q = in[0], &k = in[1], &v = in[2], &beta = in[3];
  // The kernel's gate is log(0.97f) in f32; the reference keeps 0.97 exact, so this also bounds that rounding.
  return runMatrix(s, h0, [&](std::vector<double> &S, int64_t t, int64_t h, double *o) {
    for (double &x : S)
      x *= 0.97;
    deltaRule(S, s, &k[(t * s.H + h) * s.K], &v[(t * s.H + h) * s.V], beta[t * s.H + h]);
    readInto(S, s, &q[(t * s.H + h) * s.K], 1.0, o);
  });
}

ref::ForwardResult sandwichDecay(const ref::Shape &s, const Inputs &in, const std::vector<double> *h0) {
  const auto &q = in[0], &k = in[1], &v = in[2], &g = in[3], &beta = in[4], &wh = in[5];
  return runMatrix(s, h0, [&](std::vector<double> &S, int64_t t, int64_t h, double *o) {
    double decay = std::exp(g[t * s.H + h]), b = beta[t * s.H + h];
    for (int64_t i = 0; i < s.K; ++i)
      for (int64_t j = 0; j < s.V; ++j) {
        double x = decay * S[i * s.V + j] + b * k[(t * s.H + h) * s.K + i] * v[(t * s.H + h) * s.V + j];
        S[i * s.V + j] = std::exp(wh[h * s.K + i]) * x;
      }
    readInto(S, s, &q[(t * s.H + h) * s.K], 1.0 / std::sqrt(double(s.K)), o);
  });
}

using ref::InputKind;

struct Novel {
  std::string name;
  std::vector<std::pair<std::string, InputKind>> inputs;
  ReferenceFn reference;
  std::vector<std::pair<std::string, linac_forward_fn>> variants;
  std::vector<std::pair<std::string, linac_backward_fn>> backwards;
};

std::vector<Novel> novelRecurrences() {
  return {
      {"keyed_gated_delta",
       {{"q", InputKind::TokenKey},
        {"k", InputKind::TokenKey},
        {"v", InputKind::TokenValue},
        {"g", InputKind::TokenKey},
        {"beta", InputKind::TokenScalar},
        {"z", InputKind::TokenValue}},
       keyedGatedDelta,
       {{"sequential", linac_keyed_gated_delta_forward_sequential},
        {"chunk16", linac_keyed_gated_delta_forward_chunk16},
        {"chunk32", linac_keyed_gated_delta_forward_chunk32},
        {"chunk64", linac_keyed_gated_delta_forward_chunk64}},
       {{"chunk16", linac_keyed_gated_delta_backward_chunk16},
        {"chunk32", linac_keyed_gated_delta_backward_chunk32},
        {"chunk64", linac_keyed_gated_delta_backward_chunk64}}},
      {"fixed_decay_delta",
       {{"q", InputKind::TokenKey}, {"k", InputKind::TokenKey}, {"v", InputKind::TokenValue}, {"beta", InputKind::TokenScalar}},
       fixedDecayDelta,
       {{"sequential", linac_fixed_decay_delta_forward_sequential},
        {"chunk16", linac_fixed_decay_delta_forward_chunk16},
        {"chunk32", linac_fixed_decay_delta_forward_chunk32},
        {"chunk64", linac_fixed_decay_delta_forward_chunk64}},
       {{"chunk16", linac_fixed_decay_delta_backward_chunk16},
        {"chunk32", linac_fixed_decay_delta_backward_chunk32},
        {"chunk64", linac_fixed_decay_delta_backward_chunk64}}},
      {"sandwich_decay",
       {{"q", InputKind::TokenKey},
        {"k", InputKind::TokenKey},
        {"v", InputKind::TokenValue},
        {"g", InputKind::TokenScalar},
        {"beta", InputKind::TokenScalar},
        {"wh", InputKind::HeadKey}},
       sandwichDecay,
       {{"sequential", linac_sandwich_decay_forward_sequential},
        {"chunk16", linac_sandwich_decay_forward_chunk16},
        {"chunk32", linac_sandwich_decay_forward_chunk32},
        {"chunk64", linac_sandwich_decay_forward_chunk64}},
       {{"chunk16", linac_sandwich_decay_backward_chunk16},
        {"chunk32", linac_sandwich_decay_backward_chunk32},
        {"chunk64", linac_sandwich_decay_backward_chunk64}}},
  };
}

class NovelRecurrence : public ::testing::TestWithParam<Novel> {
protected:
  void check(Problem p, const std::string &what) {
    const Novel &r = GetParam();
    p.unitKeys = true;
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
      p.unitKeys = true;
      GradientErrors e = compareBackward(fn, r.name, true, r.inputs, expected, p, freshSeed());
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

INSTANTIATE_TEST_SUITE_P(Novel, NovelRecurrence, ::testing::ValuesIn(novelRecurrences()),
                         [](const auto &info) { return info.param.name; });

} // namespace
