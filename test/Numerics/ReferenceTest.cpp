// Validates the fp64 reference itself: the forward pass against independent formulations of each recurrence
// (attention over the past, closed forms, explicit transition matrices, hand-computed values) and the backward
// pass against central finite differences. Inputs are fresh on every run; failures print the seed, and
// LINAC_REF_SEED=<seed> replays it.

#include "Reference.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <vector>

using namespace linac::ref;

namespace {

using Tensor = std::vector<double>;
using Tensors = std::vector<Tensor>;

uint64_t testSeed() {
  if (const char *env = std::getenv("LINAC_REF_SEED"))
    return std::stoull(env);
  std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) ^ rd();
}

class Random {
public:
  explicit Random(uint64_t seed) : rng(seed) {}

  Tensor normal(size_t n) {
    std::normal_distribution<double> d(0.0, 1.0);
    Tensor x(n);
    for (double &e : x)
      e = d(rng);
    return x;
  }
  Tensor uniform(size_t n, double lo, double hi) {
    std::uniform_real_distribution<double> d(lo, hi);
    Tensor x(n);
    for (double &e : x)
      e = d(rng);
    return x;
  }
  /// log(sigmoid(x)), with x drawn so that every gate lies in [-5, 0) and none is 0.
  Tensor gates(size_t n) {
    Tensor x = uniform(n, -4.99, 8.0);
    for (double &e : x)
      e = -std::log1p(std::exp(-e));
    return x;
  }

private:
  std::mt19937_64 rng;
};

int64_t numTokens(const Shape &s) { return s.cu_seqlens.empty() ? s.B * s.T : s.T; }
int64_t stateCols(const std::string &name, const Shape &s) { return isVectorState(name) ? 1 : s.V; }
size_t stateSize(const std::string &name, const Shape &s) {
  return static_cast<size_t>(s.numSeqs() * s.H * s.K * stateCols(name, s));
}
size_t outSize(const std::string &name, const Shape &s) {
  return static_cast<size_t>(numTokens(s) * s.H * (isVectorState(name) ? s.K : s.V));
}

size_t sizeOf(const Shape &s, InputKind kind) {
  switch (kind) {
  case InputKind::TokenKey:
    return static_cast<size_t>(numTokens(s) * s.H * s.K);
  case InputKind::TokenValue:
    return static_cast<size_t>(numTokens(s) * s.H * s.V);
  case InputKind::TokenScalar:
    return static_cast<size_t>(numTokens(s) * s.H);
  case InputKind::HeadKey:
    return static_cast<size_t>(s.H * s.K);
  }
  return 0;
}

/// [begin, end) of every sequence in the flattened token index.
std::vector<std::pair<int64_t, int64_t>> sequences(const Shape &s) {
  std::vector<std::pair<int64_t, int64_t>> spans;
  for (int64_t n = 0; n < s.numSeqs(); ++n)
    spans.emplace_back(s.cu_seqlens.empty() ? n * s.T : s.cu_seqlens[n],
                       s.cu_seqlens.empty() ? (n + 1) * s.T : s.cu_seqlens[n + 1]);
  return spans;
}

bool isDeltaRule(const std::string &name) { return name == "deltanet" || name == "gated_deltanet"; }

/// fla's input distributions by each input's declared domain: gates in [-5, 0), strengths in (0, 1), unit-norm
/// rows (the delta rule's keys), else N(0, 1).
Tensors randomInputs(const std::string &name, const Shape &s, Random &rnd) {
  Tensors inputs;
  for (const Input &in : inputsOf(name)) {
    size_t n = sizeOf(s, in.kind);
    Tensor x = in.domain == InputDomain::LogGate    ? rnd.gates(n)
               : in.domain == InputDomain::Strength ? rnd.uniform(n, 0.01, 0.99)
                                                    : rnd.normal(n);
    if (in.domain == InputDomain::UnitRows)
      for (size_t row = 0; row < n; row += static_cast<size_t>(s.K)) {
        double norm = 0;
        for (int64_t i = 0; i < s.K; ++i)
          norm += x[row + i] * x[row + i];
        for (int64_t i = 0; i < s.K; ++i)
          x[row + i] /= std::sqrt(norm);
      }
    inputs.push_back(std::move(x));
  }
  return inputs;
}

double dot(const Tensor &a, const Tensor &b) {
  double acc = 0;
  for (size_t i = 0; i < a.size(); ++i)
    acc += a[i] * b[i];
  return acc;
}

/// rms(got - want) / rms(want); absolute rms when `want` is all zeros.
double relativeRms(const Tensor &got, const Tensor &want) {
  EXPECT_EQ(got.size(), want.size());
  double num = 0, den = 0;
  for (size_t i = 0; i < want.size() && i < got.size(); ++i) {
    num += (got[i] - want[i]) * (got[i] - want[i]);
    den += want[i] * want[i];
  }
  return den == 0 ? std::sqrt(num / std::max<size_t>(want.size(), 1)) : std::sqrt(num / den);
}

double defaultScale(const Shape &s) { return 1.0 / std::sqrt(static_cast<double>(s.K)); }

// ---------------------------------------------------------------------------------------------------------------
// Independent forward formulations, indexed directly as [tokens, H, D] and [N, H, K, V].

size_t at(const Shape &s, int64_t tok, int64_t h, int64_t d, int64_t D) {
  return static_cast<size_t>((tok * s.H + h) * D + d);
}
size_t stateAt(const Shape &s, int64_t n, int64_t h, int64_t i, int64_t j, int64_t cols) {
  return static_cast<size_t>(((n * s.H + h) * s.K + i) * cols + j);
}

/// prod_{r = from..to} exp(logDecay[r, h, i]); 1 for an empty range.
double decayProduct(const Shape &s, const Tensor &logDecay, int64_t from, int64_t to, int64_t h, int64_t i) {
  double p = 1;
  for (int64_t r = from; r <= to; ++r)
    p *= std::exp(logDecay[at(s, r, h, i, s.K)]);
  return p;
}

/// Per-channel-decay linear attention written as attention over the past rather than as a recurrence:
///   o_t = scale * sum_{s <= tau} (q_t . (D(s+1..tau) * k_s)) v_s + scale * (D(begin..tau) * q_t)^T h0,
/// with D(a..b) = prod_{r=a..b} exp(logDecay_r), tau = t, or t - 1 when the read comes before the update.
/// logDecay is [tokens, H, K].
struct DecayAttention {
  Tensor q, k, v, logDecay;
  bool readBeforeUpdate = false;
};

ForwardResult attentionForm(const Shape &s, const DecayAttention &a, const Tensor *h0, double scale) {
  ForwardResult r{Tensor(static_cast<size_t>(numTokens(s) * s.H * s.V), 0.0),
                  Tensor(static_cast<size_t>(s.numSeqs() * s.H * s.K * s.V), 0.0)};
  std::vector<std::pair<int64_t, int64_t>> spans = sequences(s);
  for (int64_t n = 0; n < s.numSeqs(); ++n) {
    auto [begin, end] = spans[n];
    for (int64_t h = 0; h < s.H; ++h) {
      for (int64_t t = begin; t < end; ++t) {
        int64_t tau = a.readBeforeUpdate ? t - 1 : t;
        for (int64_t j = 0; j < s.V; ++j) {
          double acc = 0;
          for (int64_t src = begin; src <= tau; ++src)
            for (int64_t i = 0; i < s.K; ++i)
              acc += a.q[at(s, t, h, i, s.K)] * decayProduct(s, a.logDecay, src + 1, tau, h, i) *
                     a.k[at(s, src, h, i, s.K)] * a.v[at(s, src, h, j, s.V)];
          if (h0)
            for (int64_t i = 0; i < s.K; ++i)
              acc += a.q[at(s, t, h, i, s.K)] * decayProduct(s, a.logDecay, begin, tau, h, i) *
                     (*h0)[stateAt(s, n, h, i, j, s.V)];
          r.out[at(s, t, h, j, s.V)] = scale * acc;
        }
      }
      for (int64_t i = 0; i < s.K; ++i)
        for (int64_t j = 0; j < s.V; ++j) {
          double acc = h0 ? decayProduct(s, a.logDecay, begin, end - 1, h, i) * (*h0)[stateAt(s, n, h, i, j, s.V)] : 0;
          for (int64_t src = begin; src < end; ++src)
            acc += decayProduct(s, a.logDecay, src + 1, end - 1, h, i) * a.k[at(s, src, h, i, s.K)] *
                   a.v[at(s, src, h, j, s.V)];
          r.finalState[stateAt(s, n, h, i, j, s.V)] = acc;
        }
    }
  }
  return r;
}

/// The attention-form operands of RetNet, simple GLA, GLA, HGRN-2 and RWKV-6 (without RWKV-6's bonus).
DecayAttention asDecayAttention(const std::string &name, const Shape &s, const Tensors &in) {
  DecayAttention a;
  a.logDecay.assign(static_cast<size_t>(numTokens(s) * s.H * s.K), 0.0);
  for (int64_t tok = 0; tok < numTokens(s); ++tok)
    for (int64_t h = 0; h < s.H; ++h)
      for (int64_t i = 0; i < s.K; ++i) {
        double &logDecay = a.logDecay[at(s, tok, h, i, s.K)];
        if (name == "retnet")
          logDecay = std::log(1.0 - std::pow(2.0, -5.0 - static_cast<double>(h)));
        else if (name == "simple_gla")
          logDecay = in[3][at(s, tok, h, 0, 1)];
        else if (name == "hgrn2")
          logDecay = in[1][at(s, tok, h, i, s.K)];
        else
          logDecay = in[3][at(s, tok, h, i, s.K)];
      }
  if (name == "hgrn2") {
    a.q = in[0];
    for (double &e : a.q)
      e = e / (1.0 + std::exp(-e));
    a.k = in[1];
    for (double &e : a.k)
      e = 1.0 - std::exp(e);
    a.v = in[2];
  } else {
    a.q = in[0];
    a.k = in[1];
    a.v = in[2];
  }
  a.readBeforeUpdate = name == "rwkv6";
  return a;
}

/// RWKV-6's current-token bonus, scale * (sum_i r_t[i] u[i] k_t[i]) v_t, added onto `out`.
void addRwkv6Bonus(const Shape &s, const Tensors &in, double scale, Tensor &out) {
  const Tensor &r = in[0], &k = in[1], &v = in[2], &u = in[4];
  for (int64_t tok = 0; tok < numTokens(s); ++tok)
    for (int64_t h = 0; h < s.H; ++h) {
      double bonus = 0;
      for (int64_t i = 0; i < s.K; ++i)
        bonus += r[at(s, tok, h, i, s.K)] * u[static_cast<size_t>(h * s.K + i)] * k[at(s, tok, h, i, s.K)];
      for (int64_t j = 0; j < s.V; ++j)
        out[at(s, tok, h, j, s.V)] += scale * bonus * v[at(s, tok, h, j, s.V)];
    }
}

/// HGRN in closed form: h_t = D(begin..t) h0 + sum_{s <= t} D(s+1..t) x_s.
ForwardResult hgrnClosedForm(const Shape &s, const Tensors &in, const Tensor *h0) {
  const Tensor &x = in[0], &g = in[1];
  ForwardResult r{Tensor(x.size(), 0.0), Tensor(static_cast<size_t>(s.numSeqs() * s.H * s.K), 0.0)};
  std::vector<std::pair<int64_t, int64_t>> spans = sequences(s);
  for (int64_t n = 0; n < s.numSeqs(); ++n) {
    auto [begin, end] = spans[n];
    for (int64_t h = 0; h < s.H; ++h)
      for (int64_t i = 0; i < s.K; ++i) {
        auto stateAfter = [&](int64_t t) {
          double acc = h0 ? decayProduct(s, g, begin, t, h, i) * (*h0)[stateAt(s, n, h, i, 0, 1)] : 0;
          for (int64_t src = begin; src <= t; ++src)
            acc += decayProduct(s, g, src + 1, t, h, i) * x[at(s, src, h, i, s.K)];
          return acc;
        };
        for (int64_t t = begin; t < end; ++t)
          r.out[at(s, t, h, i, s.K)] = stateAfter(t);
        r.finalState[stateAt(s, n, h, i, 0, 1)] = stateAfter(end - 1);
      }
  }
  return r;
}

using Mat = std::vector<std::vector<double>>;

Mat matmul(const Mat &a, const Mat &b) {
  Mat c(a.size(), std::vector<double>(b[0].size(), 0.0));
  for (size_t i = 0; i < a.size(); ++i)
    for (size_t l = 0; l < b.size(); ++l)
      for (size_t j = 0; j < b[0].size(); ++j)
        c[i][j] += a[i][l] * b[l][j];
  return c;
}

/// The delta rule unrolled with explicit K x K transition matrices A_r = exp(g_r) (I - beta_r k_r k_r^T):
///   S_t = A_t ... A_begin S0 + sum_{s <= t} A_t ... A_{s+1} beta_s k_s v_s^T.
ForwardResult deltaRuleUnrolled(const std::string &name, const Shape &s, const Tensors &in, const Tensor *h0,
                                double scale) {
  const Tensor &q = in[0], &k = in[1], &v = in[2];
  const bool gated = name == "gated_deltanet";
  const Tensor &beta = in[gated ? 4 : 3];
  auto transition = [&](int64_t r, int64_t h) {
    double decay = gated ? std::exp(in[3][at(s, r, h, 0, 1)]) : 1.0;
    double b = beta[at(s, r, h, 0, 1)];
    Mat A(static_cast<size_t>(s.K), std::vector<double>(static_cast<size_t>(s.K)));
    for (int64_t i = 0; i < s.K; ++i)
      for (int64_t l = 0; l < s.K; ++l)
        A[i][l] = decay * ((i == l ? 1.0 : 0.0) - b * k[at(s, r, h, i, s.K)] * k[at(s, r, h, l, s.K)]);
    return A;
  };
  auto write = [&](int64_t r, int64_t h) {
    Mat W(static_cast<size_t>(s.K), std::vector<double>(static_cast<size_t>(s.V)));
    for (int64_t i = 0; i < s.K; ++i)
      for (int64_t j = 0; j < s.V; ++j)
        W[i][j] = beta[at(s, r, h, 0, 1)] * k[at(s, r, h, i, s.K)] * v[at(s, r, h, j, s.V)];
    return W;
  };
  ForwardResult res{Tensor(static_cast<size_t>(numTokens(s) * s.H * s.V), 0.0),
                    Tensor(static_cast<size_t>(s.numSeqs() * s.H * s.K * s.V), 0.0)};
  std::vector<std::pair<int64_t, int64_t>> spans = sequences(s);
  for (int64_t n = 0; n < s.numSeqs(); ++n) {
    auto [begin, end] = spans[n];
    for (int64_t h = 0; h < s.H; ++h) {
      Mat S0(static_cast<size_t>(s.K), std::vector<double>(static_cast<size_t>(s.V), 0.0));
      if (h0)
        for (int64_t i = 0; i < s.K; ++i)
          for (int64_t j = 0; j < s.V; ++j)
            S0[i][j] = (*h0)[stateAt(s, n, h, i, j, s.V)];
      auto stateAfter = [&](int64_t t) {
        Mat phi(static_cast<size_t>(s.K), std::vector<double>(static_cast<size_t>(s.K), 0.0));
        for (int64_t i = 0; i < s.K; ++i)
          phi[i][i] = 1.0;
        Mat S(static_cast<size_t>(s.K), std::vector<double>(static_cast<size_t>(s.V), 0.0));
        for (int64_t src = t; src >= begin; --src) {
          Mat term = matmul(phi, write(src, h));
          for (int64_t i = 0; i < s.K; ++i)
            for (int64_t j = 0; j < s.V; ++j)
              S[i][j] += term[i][j];
          phi = matmul(phi, transition(src, h));
        }
        Mat fromH0 = matmul(phi, S0);
        for (int64_t i = 0; i < s.K; ++i)
          for (int64_t j = 0; j < s.V; ++j)
            S[i][j] += fromH0[i][j];
        return S;
      };
      for (int64_t t = begin; t < end; ++t) {
        Mat S = stateAfter(t);
        for (int64_t j = 0; j < s.V; ++j) {
          double acc = 0;
          for (int64_t i = 0; i < s.K; ++i)
            acc += S[i][j] * q[at(s, t, h, i, s.K)];
          res.out[at(s, t, h, j, s.V)] = scale * acc;
        }
      }
      Mat S = stateAfter(end - 1);
      for (int64_t i = 0; i < s.K; ++i)
        for (int64_t j = 0; j < s.V; ++j)
          res.finalState[stateAt(s, n, h, i, j, s.V)] = S[i][j];
    }
  }
  return res;
}

ForwardResult independentForward(const std::string &name, const Shape &s, const Tensors &in, const Tensor *h0,
                                 double scale) {
  if (name == "hgrn")
    return hgrnClosedForm(s, in, h0);
  if (isDeltaRule(name))
    return deltaRuleUnrolled(name, s, in, h0, scale);
  ForwardResult r = attentionForm(s, asDecayAttention(name, s, in), h0, scale);
  if (name == "rwkv6")
    addRwkv6Bonus(s, in, scale, r.out);
  return r;
}

// ---------------------------------------------------------------------------------------------------------------

class RecurrenceTest : public ::testing::TestWithParam<std::string> {
protected:
  void SetUp() override { seed = testSeed(); }
  uint64_t seed = 0;
};

#define TRACE_SEED                                                                                                     \
  SCOPED_TRACE("seed " + std::to_string(seed) + " (rerun with LINAC_REF_SEED=" + std::to_string(seed) + ")")

TEST_P(RecurrenceTest, ForwardMatchesIndependentFormulation) {
  TRACE_SEED;
  const std::string &name = GetParam();
  Random rnd(seed);
  struct Case {
    const char *label;
    Shape shape;
    bool withH0;
    double scale;
  };
  const Case cases[] = {
      {"B=2 T=7", {2, 7, 3, 4, 5, {}}, true, 0.0},
      {"T=1", {3, 1, 2, 4, 3, {}}, true, 0.0},
      {"h0 = 0, scale 0.37", {2, 6, 2, 3, 4, {}}, false, 0.37},
      {"varlen with an empty sequence", {1, 12, 2, 4, 3, {0, 3, 3, 4, 12}}, true, 0.0},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.label);
    Tensors in = randomInputs(name, c.shape, rnd);
    Tensor h0 = rnd.normal(stateSize(name, c.shape));
    const Tensor *h0Arg = c.withH0 ? &h0 : nullptr;
    ForwardResult got = forward(name, c.shape, in, h0Arg, c.scale);
    ForwardResult want = independentForward(name, c.shape, in, h0Arg, c.scale > 0 ? c.scale : defaultScale(c.shape));
    ASSERT_EQ(got.out.size(), outSize(name, c.shape));
    ASSERT_EQ(got.finalState.size(), stateSize(name, c.shape));
    EXPECT_LT(relativeRms(got.out, want.out), 1e-12);
    EXPECT_LT(relativeRms(got.finalState, want.finalState), 1e-12);
  }
}

TEST_P(RecurrenceTest, NullInitialStateIsZeros) {
  TRACE_SEED;
  const std::string &name = GetParam();
  Random rnd(seed);
  Shape s{2, 4, 2, 3, 4, {}};
  Tensors in = randomInputs(name, s, rnd);
  Tensor zeros(stateSize(name, s), 0.0);
  ForwardResult a = forward(name, s, in, nullptr, 0.0), b = forward(name, s, in, &zeros, 0.0);
  EXPECT_EQ(a.out, b.out);
  EXPECT_EQ(a.finalState, b.finalState);
}

/// Sequences are independent: a varlen batch equals each sequence run alone, and fixed-length B = 2 equals
/// cu_seqlens = {0, T, 2T}.
TEST_P(RecurrenceTest, SequencesAreIndependent) {
  TRACE_SEED;
  const std::string &name = GetParam();
  Random rnd(seed);
  Shape varlen{1, 9, 2, 3, 4, {0, 3, 4, 4, 9}};
  Tensors in = randomInputs(name, varlen, rnd);
  Tensor h0 = rnd.normal(stateSize(name, varlen));
  ForwardResult whole = forward(name, varlen, in, &h0, 0.0);
  const auto kinds = inputsOf(name);
  const size_t outWidth = static_cast<size_t>(varlen.H * (isVectorState(name) ? varlen.K : varlen.V));
  const size_t stateWidth = static_cast<size_t>(varlen.H * varlen.K * stateCols(name, varlen));
  for (int64_t n = 0; n < varlen.numSeqs(); ++n) {
    int64_t begin = varlen.cu_seqlens[n], len = varlen.cu_seqlens[n + 1] - begin;
    Shape alone{1, len, varlen.H, varlen.K, varlen.V, {}};
    Tensors part;
    for (size_t x = 0; x < in.size(); ++x) {
      if (kinds[x].kind == InputKind::HeadKey) {
        part.push_back(in[x]);
        continue;
      }
      size_t width = sizeOf(varlen, kinds[x].kind) / static_cast<size_t>(varlen.T);
      part.emplace_back(in[x].begin() + begin * width, in[x].begin() + (begin + len) * width);
    }
    Tensor h0Part(h0.begin() + n * stateWidth, h0.begin() + (n + 1) * stateWidth);
    ForwardResult single = forward(name, alone, part, &h0Part, 0.0);
    EXPECT_EQ(single.out, Tensor(whole.out.begin() + begin * outWidth, whole.out.begin() + (begin + len) * outWidth))
        << "sequence " << n;
    EXPECT_EQ(single.finalState,
              Tensor(whole.finalState.begin() + n * stateWidth, whole.finalState.begin() + (n + 1) * stateWidth))
        << "sequence " << n;
  }

  Shape fixed{2, 5, 2, 3, 4, {}}, asVarlen{1, 10, 2, 3, 4, {0, 5, 10}};
  Tensors in2 = randomInputs(name, fixed, rnd);
  Tensor h02 = rnd.normal(stateSize(name, fixed));
  ForwardResult a = forward(name, fixed, in2, &h02, 0.0), b = forward(name, asVarlen, in2, &h02, 0.0);
  EXPECT_EQ(a.out, b.out);
  EXPECT_EQ(a.finalState, b.finalState);
}

/// sum(out * dOut) + sum(finalState * dFinal).
double loss(const std::string &name, const Shape &s, const Tensors &in, const Tensor *h0, double scale,
            const Tensor &dOut, const Tensor *dFinal) {
  ForwardResult f = forward(name, s, in, h0, scale);
  return dot(f.out, dOut) + (dFinal ? dot(f.finalState, *dFinal) : 0.0);
}

/// Central differences of `f` w.r.t. every element of `x`, which `f` reads by reference.
Tensor finiteDifferences(Tensor &x, const std::function<double()> &f, double eps) {
  Tensor grad(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    double saved = x[i];
    x[i] = saved + eps;
    double up = f();
    x[i] = saved - eps;
    double down = f();
    x[i] = saved;
    grad[i] = (up - down) / (2 * eps);
  }
  return grad;
}

TEST_P(RecurrenceTest, BackwardMatchesFiniteDifferences) {
  TRACE_SEED;
  const std::string &name = GetParam();
  Random rnd(seed);
  struct Case {
    const char *label;
    Shape shape;
    bool withH0, withDOut, withDFinal;
    double scale;
  };
  const Case cases[] = {
      {"B=2 T=5", {2, 5, 2, 3, 4, {}}, true, true, true, 0.0},
      {"varlen", {1, 9, 2, 3, 4, {0, 3, 4, 9}}, true, true, true, 0.7},
      {"varlen with an empty sequence", {1, 5, 2, 3, 4, {0, 2, 2, 5}}, true, true, true, 0.0},
      {"T=1", {2, 1, 2, 3, 4, {}}, true, true, true, 0.0},
      {"no h0, no dFinal", {2, 5, 2, 3, 4, {}}, false, true, false, 0.0},
      {"final state only", {2, 5, 2, 3, 4, {}}, true, false, true, 0.0},
  };
  const auto kinds = inputsOf(name);
  for (const Case &c : cases) {
    SCOPED_TRACE(c.label);
    const Shape &s = c.shape;
    Tensors in = randomInputs(name, s, rnd);
    Tensor h0 = c.withH0 ? rnd.normal(stateSize(name, s)) : Tensor(stateSize(name, s), 0.0);
    Tensor dOut = c.withDOut ? rnd.normal(outSize(name, s)) : Tensor(outSize(name, s), 0.0);
    Tensor dFinal = rnd.normal(stateSize(name, s));
    const Tensor *h0Arg = c.withH0 ? &h0 : nullptr;
    const Tensor *dFinalArg = c.withDFinal ? &dFinal : nullptr;

    BackwardResult got = backward(name, s, in, h0Arg, c.scale, dOut, dFinalArg);
    ASSERT_EQ(got.dInputs.size(), in.size());
    for (size_t x = 0; x < in.size(); ++x) {
      ASSERT_EQ(got.dInputs[x].size(), in[x].size()) << kinds[x].name;
      Tensor want = finiteDifferences(
          in[x], [&] { return loss(name, s, in, h0Arg, c.scale, dOut, dFinalArg); }, 1e-6);
      EXPECT_LT(relativeRms(got.dInputs[x], want), 1e-6) << "d" << kinds[x].name;
    }
    // With a null h0 the gradient is taken at h0 = 0, which `h0` holds in that case. Every recurrence is
    // linear in its state, so the loss is affine in h0 and a large step has no truncation error; it keeps
    // rounding noise well below the small gradient that strong decay leaves on h0.
    Tensor want = finiteDifferences(
        h0, [&] { return loss(name, s, in, &h0, c.scale, dOut, dFinalArg); }, 1e-2);
    EXPECT_LT(relativeRms(got.dh0, want), 1e-6) << "dh0";
  }
}

INSTANTIATE_TEST_SUITE_P(All, RecurrenceTest, ::testing::ValuesIn(recurrenceNames()),
                         [](const auto &info) { return info.param; });

// ---------------------------------------------------------------------------------------------------------------
// Hand-computed and structural checks of the delta rule.

/// k = (0.6, 0.8), v = (1, 2), beta = 0.5, S0 = I, q = (0.5, -1), scale 1, worked on paper:
///   (I - beta k k^T) = [[.82, -.24], [-.24, .68]], beta k v^T = [[.3, .6], [.4, .8]].
TEST(DeltaRuleByHand, SingleToken) {
  Shape s{1, 1, 1, 2, 2, {}};
  Tensor h0{1, 0, 0, 1};
  Tensors deltanet{{0.5, -1}, {0.6, 0.8}, {1, 2}, {0.5}};
  ForwardResult d = forward("deltanet", s, deltanet, &h0, 1.0);
  // S1 = [[1.12, .36], [.16, 1.48]].
  const Tensor dState{1.12, 0.36, 0.16, 1.48}, dOut{0.40, -1.30};
  EXPECT_LT(relativeRms(d.finalState, dState), 1e-14);
  EXPECT_LT(relativeRms(d.out, dOut), 1e-14);

  Tensors gated{{0.5, -1}, {0.6, 0.8}, {1, 2}, {std::log(0.5)}, {0.5}};
  ForwardResult g = forward("gated_deltanet", s, gated, &h0, 1.0);
  // S1 = 0.5 [[.82, -.24], [-.24, .68]] + [[.3, .6], [.4, .8]] = [[.71, .48], [.28, 1.14]].
  const Tensor gState{0.71, 0.48, 0.28, 1.14}, gOut{0.075, -0.90};
  EXPECT_LT(relativeRms(g.finalState, gState), 1e-14);
  EXPECT_LT(relativeRms(g.out, gOut), 1e-14);
}

/// With beta = 1 and a unit key the delta rule overwrites the value stored at k: S_t^T k_t = v_t, whatever the
/// history and gate. Reading with q = k and scale 1 must therefore return v.
TEST(DeltaRuleByHand, UnitBetaStoresTheValue) {
  uint64_t seed = testSeed();
  TRACE_SEED;
  Random rnd(seed);
  for (const std::string name : {"deltanet", "gated_deltanet"}) {
    SCOPED_TRACE(name);
    Shape s{2, 6, 2, 4, 3, {}};
    Tensors in = randomInputs(name, s, rnd);
    in[0] = in[1];
    in.back().assign(in.back().size(), 1.0);
    Tensor h0 = rnd.normal(stateSize(name, s));
    ForwardResult r = forward(name, s, in, &h0, 1.0);
    EXPECT_LT(relativeRms(r.out, in[2]), 1e-12);
  }
}

// ---------------------------------------------------------------------------------------------------------------
// The catalogue.

TEST(Catalogue, NamesAndInputs) {
  EXPECT_EQ(recurrenceNames(), (std::vector<std::string>{"hgrn", "retnet", "simple_gla", "gla", "hgrn2", "rwkv6",
                                                         "deltanet", "gated_deltanet"}));
  using K = InputKind;
  using D = InputDomain;
  using Inputs = std::vector<Input>;
  EXPECT_EQ(inputsOf("hgrn"), (Inputs{{"x", K::TokenKey}, {"g", K::TokenKey, D::LogGate}}));
  EXPECT_EQ(inputsOf("retnet"), (Inputs{{"q", K::TokenKey}, {"k", K::TokenKey}, {"v", K::TokenValue}}));
  EXPECT_EQ(inputsOf("simple_gla"), (Inputs{{"q", K::TokenKey},
                                            {"k", K::TokenKey},
                                            {"v", K::TokenValue},
                                            {"g", K::TokenScalar, D::LogGate}}));
  EXPECT_EQ(inputsOf("gla"),
            (Inputs{{"q", K::TokenKey}, {"k", K::TokenKey}, {"v", K::TokenValue}, {"g", K::TokenKey, D::LogGate}}));
  EXPECT_EQ(inputsOf("hgrn2"), (Inputs{{"q", K::TokenKey}, {"g", K::TokenKey, D::LogGate}, {"v", K::TokenValue}}));
  EXPECT_EQ(inputsOf("rwkv6"), (Inputs{{"r", K::TokenKey},
                                       {"k", K::TokenKey},
                                       {"v", K::TokenValue},
                                       {"w", K::TokenKey, D::LogGate},
                                       {"u", K::HeadKey}}));
  EXPECT_EQ(inputsOf("deltanet"), (Inputs{{"q", K::TokenKey},
                                          {"k", K::TokenKey, D::UnitRows},
                                          {"v", K::TokenValue},
                                          {"beta", K::TokenScalar, D::Strength}}));
  EXPECT_EQ(inputsOf("gated_deltanet"), (Inputs{{"q", K::TokenKey},
                                                {"k", K::TokenKey, D::UnitRows},
                                                {"v", K::TokenValue},
                                                {"g", K::TokenScalar, D::LogGate},
                                                {"beta", K::TokenScalar, D::Strength}}));
  for (const std::string &name : recurrenceNames())
    EXPECT_EQ(isVectorState(name), name == "hgrn") << name;
}

TEST(Catalogue, RejectsBadArguments) {
  Shape s{1, 2, 1, 2, 2, {}};
  EXPECT_THROW(inputsOf("mamba"), std::invalid_argument);
  EXPECT_THROW(isVectorState("mamba"), std::invalid_argument);
  EXPECT_THROW(forward("mamba", s, {}, nullptr, 0.0), std::invalid_argument);
  EXPECT_THROW(backward("mamba", s, {}, nullptr, 0.0, {}, nullptr), std::invalid_argument);
  Tensors retnet{Tensor(4), Tensor(4), Tensor(4)};
  EXPECT_NO_THROW(forward("retnet", s, retnet, nullptr, 0.0));
  EXPECT_THROW(forward("retnet", s, {Tensor(4), Tensor(4)}, nullptr, 0.0), std::invalid_argument);
  EXPECT_THROW(forward("retnet", s, {Tensor(4), Tensor(3), Tensor(4)}, nullptr, 0.0), std::invalid_argument);
  Tensor badH0(3);
  EXPECT_THROW(forward("retnet", s, retnet, &badH0, 0.0), std::invalid_argument);
  EXPECT_THROW(backward("retnet", s, retnet, nullptr, 0.0, Tensor(3), nullptr), std::invalid_argument);
  EXPECT_THROW(forward("retnet", Shape{2, 1, 1, 2, 2, {0, 1, 2}}, retnet, nullptr, 0.0), std::invalid_argument);
  EXPECT_THROW(forward("retnet", Shape{1, 2, 1, 2, 2, {0, 1}}, retnet, nullptr, 0.0), std::invalid_argument);
}

} // namespace
