// The recurrences of novel.mlir as fp64 loops written from their formulas, independently of the compiler:
// the references of the CPU test (NovelTest.cpp) and of the GPU kernels' test on the emulator
// (test/Emulation/NovelGpuTest.cpp).
#ifndef LINAC_TEST_NOVELREFERENCE_H
#define LINAC_TEST_NOVELREFERENCE_H

#include "Harness.h"

#include <cmath>
#include <string>
#include <utility>
#include <vector>

namespace linac::test::novel {

using Inputs = std::vector<std::vector<double>>;


/// Sequence bounds in flattened token indices.
inline std::vector<std::pair<int64_t, int64_t>> sequences(const ref::Shape &s) {
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
inline ref::ForwardResult runMatrix(const ref::Shape &s, const std::vector<double> *h0, Step step) {
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
inline void deltaRule(std::vector<double> &S, const ref::Shape &s, const double *k, const double *v, double beta) {
  for (int64_t j = 0; j < s.V; ++j) {
    double recalled = 0;
    for (int64_t i = 0; i < s.K; ++i)
      recalled += k[i] * S[i * s.V + j];
    for (int64_t i = 0; i < s.K; ++i)
      S[i * s.V + j] += beta * k[i] * (v[j] - recalled);
  }
}

inline void readInto(const std::vector<double> &S, const ref::Shape &s, const double *q, double scale, double *o) {
  for (int64_t j = 0; j < s.V; ++j) {
    double acc = 0;
    for (int64_t i = 0; i < s.K; ++i)
      acc += q[i] * S[i * s.V + j];
    o[j] = scale * acc;
  }
}

inline ref::ForwardResult keyedGatedDelta(const ref::Shape &s, const Inputs &in, const std::vector<double> *h0) {
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

inline ref::ForwardResult fixedDecayDelta(const ref::Shape &s, const Inputs &in, const std::vector<double> *h0) {
  const auto &q = in[0], &k = in[1], &v = in[2], &beta = in[3];
  // The kernel's gate is log(0.97f) in f32; the reference keeps 0.97 exact, so this also bounds that rounding.
  return runMatrix(s, h0, [&](std::vector<double> &S, int64_t t, int64_t h, double *o) {
    for (double &x : S)
      x *= 0.97;
    deltaRule(S, s, &k[(t * s.H + h) * s.K], &v[(t * s.H + h) * s.V], beta[t * s.H + h]);
    readInto(S, s, &q[(t * s.H + h) * s.K], 1.0, o);
  });
}

inline ref::ForwardResult sandwichDecay(const ref::Shape &s, const Inputs &in, const std::vector<double> *h0) {
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

/// A recurrence of novel.mlir: its name, its inputs in the kernels' order and its fp64 reference.
struct NovelReference {
  std::string name;
  std::vector<ref::Input> inputs;
  ReferenceFn reference;
};

inline std::vector<NovelReference> novelReferences() {
  using ref::InputKind;
  using D = ref::InputDomain;
  // sandwich_decay's k (unit rows) and beta (a strength) are the tests' conditioning: that recurrence takes any
  // real values there (no delta rule), and its keys' norms would otherwise grow its state.
  return {
      {"keyed_gated_delta",
       {{"q", InputKind::TokenKey},
        {"k", InputKind::TokenKey, D::UnitRows},
        {"v", InputKind::TokenValue},
        {"g", InputKind::TokenKey, D::LogGate},
        {"beta", InputKind::TokenScalar, D::Strength},
        {"z", InputKind::TokenValue}},
       keyedGatedDelta},
      {"fixed_decay_delta",
       {{"q", InputKind::TokenKey},
        {"k", InputKind::TokenKey, D::UnitRows},
        {"v", InputKind::TokenValue},
        {"beta", InputKind::TokenScalar, D::Strength}},
       fixedDecayDelta},
      {"sandwich_decay",
       {{"q", InputKind::TokenKey},
        {"k", InputKind::TokenKey, D::UnitRows},
        {"v", InputKind::TokenValue},
        {"g", InputKind::TokenScalar, D::LogGate},
        {"beta", InputKind::TokenScalar, D::Strength},
        {"wh", InputKind::HeadKey, D::LogGate}},
       sandwichDecay},
  };
}

} // namespace linac::test::novel

#endif
