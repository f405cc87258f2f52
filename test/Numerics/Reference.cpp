#include "Reference.h"

#include <cmath>
#include <cstddef>
#include <stdexcept>

namespace linac::ref {

int64_t Shape::numSeqs() const { return cu_seqlens.empty() ? B : static_cast<int64_t>(cu_seqlens.size()) - 1; }

namespace {

using Tensor = std::vector<double>;
using Tensors = std::vector<Tensor>;

/// The state of one (sequence, head): K x V, row-major like its slice of the [N,H,K,V] tensor.
struct Matrix {
  int64_t rows, cols;
  std::vector<double> a;
  Matrix(int64_t r, int64_t c) : rows(r), cols(c), a(static_cast<size_t>(r * c), 0.0) {}
  double &operator()(int64_t i, int64_t j) { return a[static_cast<size_t>(i * cols + j)]; }
  double operator()(int64_t i, int64_t j) const { return a[static_cast<size_t>(i * cols + j)]; }
};

/// A validated shape and the flat offsets of its layouts. Tokens are numbered b*T+t, or t under cu_seqlens.
class Problem {
public:
  Problem(const Shape &s, bool isVector) : shape(s), vectorState(isVector) {
    if (s.H < 1 || s.K < 1 || (!isVector && s.V < 1) || s.B < 0 || s.T < 0)
      throw std::invalid_argument("linac::ref: H and K (and V for matrix states) must be positive");
    const auto &cu = s.cu_seqlens;
    if (!cu.empty()) {
      if (s.B != 1)
        throw std::invalid_argument("linac::ref: cu_seqlens requires B == 1");
      if (cu.size() < 2 || cu.front() != 0 || cu.back() != s.T)
        throw std::invalid_argument("linac::ref: cu_seqlens must run from 0 to T");
      for (size_t n = 1; n < cu.size(); ++n)
        if (cu[n] < cu[n - 1])
          throw std::invalid_argument("linac::ref: cu_seqlens must be non-decreasing");
    }
    H = s.H;
    K = s.K;
    V = s.V;
    numSeqs = s.numSeqs();
    numTokens = cu.empty() ? s.B * s.T : s.T;
  }

  int64_t H, K, V, numSeqs, numTokens;

  int64_t begin(int64_t n) const { return shape.cu_seqlens.empty() ? n * shape.T : shape.cu_seqlens[n]; }
  int64_t end(int64_t n) const { return shape.cu_seqlens.empty() ? (n + 1) * shape.T : shape.cu_seqlens[n + 1]; }

  size_t key(int64_t tok, int64_t h) const { return static_cast<size_t>((tok * H + h) * K); }
  size_t value(int64_t tok, int64_t h) const { return static_cast<size_t>((tok * H + h) * V); }
  size_t scalar(int64_t tok, int64_t h) const { return static_cast<size_t>(tok * H + h); }
  size_t headKey(int64_t h) const { return static_cast<size_t>(h * K); }
  size_t state(int64_t n, int64_t h) const { return static_cast<size_t>((n * H + h) * stateCols() * K); }

  int64_t stateCols() const { return vectorState ? 1 : V; }
  size_t stateSize() const { return static_cast<size_t>(numSeqs * H * K * stateCols()); }
  size_t outSize() const { return static_cast<size_t>(numTokens * H * (vectorState ? K : V)); }
  size_t sizeOf(InputKind kind) const {
    switch (kind) {
    case InputKind::TokenKey:
      return static_cast<size_t>(numTokens * H * K);
    case InputKind::TokenValue:
      return static_cast<size_t>(numTokens * H * V);
    case InputKind::TokenScalar:
      return static_cast<size_t>(numTokens * H);
    case InputKind::HeadKey:
      return static_cast<size_t>(H * K);
    }
    return 0;
  }

  /// State of (n, h) from an [N,H,K,V] tensor; zeros when `src` is null.
  Matrix loadState(const Tensor *src, int64_t n, int64_t h) const {
    Matrix S(K, stateCols());
    if (src)
      for (size_t e = 0; e < S.a.size(); ++e)
        S.a[e] = (*src)[state(n, h) + e];
    return S;
  }
  void storeState(const Matrix &S, Tensor &dst, int64_t n, int64_t h) const {
    for (size_t e = 0; e < S.a.size(); ++e)
      dst[state(n, h) + e] = S.a[e];
  }

private:
  const Shape &shape;
  bool vectorState;
};

Tensors zerosLike(const Tensors &xs) {
  Tensors out;
  for (const Tensor &x : xs)
    out.emplace_back(x.size(), 0.0);
  return out;
}

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// ---------------------------------------------------------------------------------------------------------------
// Shared pieces of the matrix-state recurrences.

/// o = scale * S^T q.
void read(const Matrix &S, const double *q, double scale, double *o) {
  for (int64_t j = 0; j < S.cols; ++j) {
    double acc = 0;
    for (int64_t i = 0; i < S.rows; ++i)
      acc += S(i, j) * q[i];
    o[j] = scale * acc;
  }
}

/// Adjoint of read: dS += scale * q dO^T, dq += scale * S dO.
void readAdjoint(const Matrix &S, const double *q, const double *dO, double scale, Matrix &dS, double *dq) {
  for (int64_t i = 0; i < S.rows; ++i) {
    double acc = 0;
    for (int64_t j = 0; j < S.cols; ++j) {
      dS(i, j) += scale * q[i] * dO[j];
      acc += S(i, j) * dO[j];
    }
    dq[i] += scale * acc;
  }
}

/// Adjoint of S += k v^T: dk += dS v, dv += dS^T k.
void outerProductAdjoint(const Matrix &dS, const double *k, const double *v, double *dk, double *dv) {
  for (int64_t i = 0; i < dS.rows; ++i)
    for (int64_t j = 0; j < dS.cols; ++j) {
      dk[i] += dS(i, j) * v[j];
      dv[j] += dS(i, j) * k[i];
    }
}

/// One token's state update S_{t-1} -> S_t, in place.
using Step = void (*)(const Problem &P, const Tensors &in, int64_t tok, int64_t h, Matrix &S);
/// Adjoint of a Step: `prev` is S_{t-1} and `dS` holds dL/dS_t on entry and dL/dS_{t-1} on return; this
/// token's input gradients are added into `dIn`.
using StepAdjoint = void (*)(const Problem &P, const Tensors &in, int64_t tok, int64_t h, const Matrix &prev,
                             Matrix &dS, Tensors &dIn);

/// Recurrences that update, then read o_t = scale * S_t^T q_t with q = in[0].
ForwardResult forwardReadAfterUpdate(const Problem &P, const Tensors &in, const Tensor *h0, double scale, Step step) {
  ForwardResult r{Tensor(P.outSize(), 0.0), Tensor(P.stateSize(), 0.0)};
  for (int64_t n = 0; n < P.numSeqs; ++n)
    for (int64_t h = 0; h < P.H; ++h) {
      Matrix S = P.loadState(h0, n, h);
      for (int64_t tok = P.begin(n); tok < P.end(n); ++tok) {
        step(P, in, tok, h, S);
        read(S, &in[0][P.key(tok, h)], scale, &r.out[P.value(tok, h)]);
      }
      P.storeState(S, r.finalState, n, h);
    }
  return r;
}

/// All states of one (sequence, head): element t - begin is the state before token t, the last one the final
/// state.
std::vector<Matrix> replay(const Problem &P, const Tensors &in, const Tensor *h0, int64_t n, int64_t h, Step step) {
  std::vector<Matrix> states{P.loadState(h0, n, h)};
  for (int64_t tok = P.begin(n); tok < P.end(n); ++tok) {
    Matrix next = states.back();
    step(P, in, tok, h, next);
    states.push_back(std::move(next));
  }
  return states;
}

BackwardResult backwardReadAfterUpdate(const Problem &P, const Tensors &in, const Tensor *h0, double scale,
                                       const Tensor &dOut, const Tensor *dFinal, Step step, StepAdjoint adjoint) {
  BackwardResult r{zerosLike(in), Tensor(P.stateSize(), 0.0)};
  for (int64_t n = 0; n < P.numSeqs; ++n)
    for (int64_t h = 0; h < P.H; ++h) {
      std::vector<Matrix> states = replay(P, in, h0, n, h, step);
      Matrix dS = P.loadState(dFinal, n, h);
      for (int64_t tok = P.end(n) - 1; tok >= P.begin(n); --tok) {
        const Matrix &before = states[tok - P.begin(n)], &after = states[tok - P.begin(n) + 1];
        readAdjoint(after, &in[0][P.key(tok, h)], &dOut[P.value(tok, h)], scale, dS, &r.dInputs[0][P.key(tok, h)]);
        adjoint(P, in, tok, h, before, dS, r.dInputs);
      }
      P.storeState(dS, r.dh0, n, h);
    }
  return r;
}

// ---------------------------------------------------------------------------------------------------------------
// HGRN: h_t = exp(g_t) * h_t-1 + x_t, o_t = h_t, elementwise over K channels. Inputs x, g.

ForwardResult forwardHgrn(const Problem &P, const Tensors &in, const Tensor *h0, double /*scale*/) {
  const Tensor &x = in[0], &g = in[1];
  ForwardResult r{Tensor(P.outSize(), 0.0), Tensor(P.stateSize(), 0.0)};
  for (int64_t n = 0; n < P.numSeqs; ++n)
    for (int64_t h = 0; h < P.H; ++h)
      for (int64_t i = 0; i < P.K; ++i) {
        double state = h0 ? (*h0)[P.state(n, h) + i] : 0.0;
        for (int64_t tok = P.begin(n); tok < P.end(n); ++tok) {
          size_t at = P.key(tok, h) + i;
          state = std::exp(g[at]) * state + x[at];
          r.out[at] = state;
        }
        r.finalState[P.state(n, h) + i] = state;
      }
  return r;
}

BackwardResult backwardHgrn(const Problem &P, const Tensors &in, const Tensor *h0, double /*scale*/, const Tensor &dOut,
                            const Tensor *dFinal) {
  const Tensor &x = in[0], &g = in[1];
  BackwardResult r{zerosLike(in), Tensor(P.stateSize(), 0.0)};
  Tensor &dx = r.dInputs[0], &dg = r.dInputs[1];
  for (int64_t n = 0; n < P.numSeqs; ++n)
    for (int64_t h = 0; h < P.H; ++h)
      for (int64_t i = 0; i < P.K; ++i) {
        // states[t - begin] is h_{t-1}.
        std::vector<double> states{h0 ? (*h0)[P.state(n, h) + i] : 0.0};
        for (int64_t tok = P.begin(n); tok < P.end(n); ++tok) {
          size_t at = P.key(tok, h) + i;
          states.push_back(std::exp(g[at]) * states.back() + x[at]);
        }
        double dState = dFinal ? (*dFinal)[P.state(n, h) + i] : 0.0;
        for (int64_t tok = P.end(n) - 1; tok >= P.begin(n); --tok) {
          size_t at = P.key(tok, h) + i;
          double decay = std::exp(g[at]);
          dState += dOut[at];
          dx[at] += dState;
          dg[at] += dState * decay * states[tok - P.begin(n)];
          dState *= decay;
        }
        r.dh0[P.state(n, h) + i] = dState;
      }
  return r;
}

// ---------------------------------------------------------------------------------------------------------------
// RetNet: S_t = gamma_h S_t-1 + k_t v_t^T with the fixed per-head decay gamma_h = 1 - 2^(-5-h). Inputs q, k, v.

double retnetGamma(int64_t h) { return 1.0 - std::ldexp(1.0, -5 - static_cast<int>(h)); }

void retnetStep(const Problem &P, const Tensors &in, int64_t tok, int64_t h, Matrix &S) {
  const double *k = &in[1][P.key(tok, h)], *v = &in[2][P.value(tok, h)];
  double gamma = retnetGamma(h);
  for (int64_t i = 0; i < P.K; ++i)
    for (int64_t j = 0; j < P.V; ++j)
      S(i, j) = gamma * S(i, j) + k[i] * v[j];
}

void retnetStepAdjoint(const Problem &P, const Tensors &in, int64_t tok, int64_t h, const Matrix & /*prev*/, Matrix &dS,
                       Tensors &dIn) {
  outerProductAdjoint(dS, &in[1][P.key(tok, h)], &in[2][P.value(tok, h)], &dIn[1][P.key(tok, h)],
                      &dIn[2][P.value(tok, h)]);
  double gamma = retnetGamma(h);
  for (double &e : dS.a)
    e *= gamma;
}

// ---------------------------------------------------------------------------------------------------------------
// Simple GLA / Mamba-2: S_t = exp(g_t) S_t-1 + k_t v_t^T with one scalar gate per token and head.
// Inputs q, k, v, g.

void simpleGlaStep(const Problem &P, const Tensors &in, int64_t tok, int64_t h, Matrix &S) {
  const double *k = &in[1][P.key(tok, h)], *v = &in[2][P.value(tok, h)];
  double decay = std::exp(in[3][P.scalar(tok, h)]);
  for (int64_t i = 0; i < P.K; ++i)
    for (int64_t j = 0; j < P.V; ++j)
      S(i, j) = decay * S(i, j) + k[i] * v[j];
}

void simpleGlaStepAdjoint(const Problem &P, const Tensors &in, int64_t tok, int64_t h, const Matrix &prev, Matrix &dS,
                          Tensors &dIn) {
  outerProductAdjoint(dS, &in[1][P.key(tok, h)], &in[2][P.value(tok, h)], &dIn[1][P.key(tok, h)],
                      &dIn[2][P.value(tok, h)]);
  double decay = std::exp(in[3][P.scalar(tok, h)]);
  double dDecay = 0;
  for (size_t e = 0; e < dS.a.size(); ++e) {
    dDecay += dS.a[e] * prev.a[e];
    dS.a[e] *= decay;
  }
  // d exp(g) / dg = exp(g).
  dIn[3][P.scalar(tok, h)] += decay * dDecay;
}

// ---------------------------------------------------------------------------------------------------------------
// GLA: S_t = Diag(exp(g_t)) S_t-1 + k_t v_t^T, row i of S decayed by exp(g_t[i]). Inputs q, k, v, g.

void glaStep(const Problem &P, const Tensors &in, int64_t tok, int64_t h, Matrix &S) {
  const double *k = &in[1][P.key(tok, h)], *v = &in[2][P.value(tok, h)], *g = &in[3][P.key(tok, h)];
  for (int64_t i = 0; i < P.K; ++i) {
    double decay = std::exp(g[i]);
    for (int64_t j = 0; j < P.V; ++j)
      S(i, j) = decay * S(i, j) + k[i] * v[j];
  }
}

void glaStepAdjoint(const Problem &P, const Tensors &in, int64_t tok, int64_t h, const Matrix &prev, Matrix &dS,
                    Tensors &dIn) {
  outerProductAdjoint(dS, &in[1][P.key(tok, h)], &in[2][P.value(tok, h)], &dIn[1][P.key(tok, h)],
                      &dIn[2][P.value(tok, h)]);
  const double *g = &in[3][P.key(tok, h)];
  double *dg = &dIn[3][P.key(tok, h)];
  for (int64_t i = 0; i < P.K; ++i) {
    double decay = std::exp(g[i]);
    double dDecay = 0;
    for (int64_t j = 0; j < P.V; ++j) {
      dDecay += dS(i, j) * prev(i, j);
      dS(i, j) *= decay;
    }
    dg[i] += decay * dDecay;
  }
}

ForwardResult forwardGla(const Problem &P, const Tensors &in, const Tensor *h0, double scale) {
  return forwardReadAfterUpdate(P, in, h0, scale, glaStep);
}

BackwardResult backwardGla(const Problem &P, const Tensors &in, const Tensor *h0, double scale, const Tensor &dOut,
                           const Tensor *dFinal) {
  return backwardReadAfterUpdate(P, in, h0, scale, dOut, dFinal, glaStep, glaStepAdjoint);
}

// ---------------------------------------------------------------------------------------------------------------
// HGRN-2: GLA whose key is tied to the gate, k_t = 1 - exp(g_t), read with q'_t = swish(q_t). Inputs q, g, v.

/// The GLA inputs (q', k, v, g) of HGRN-2 inputs (q, g, v).
Tensors hgrn2AsGla(const Tensors &in) {
  const Tensor &q = in[0], &g = in[1], &v = in[2];
  Tensor swishQ(q.size()), k(g.size());
  for (size_t e = 0; e < q.size(); ++e)
    swishQ[e] = q[e] * sigmoid(q[e]);
  for (size_t e = 0; e < g.size(); ++e)
    k[e] = -std::expm1(g[e]);
  return {swishQ, k, v, g};
}

ForwardResult forwardHgrn2(const Problem &P, const Tensors &in, const Tensor *h0, double scale) {
  return forwardGla(P, hgrn2AsGla(in), h0, scale);
}

BackwardResult backwardHgrn2(const Problem &P, const Tensors &in, const Tensor *h0, double scale, const Tensor &dOut,
                             const Tensor *dFinal) {
  const Tensor &q = in[0], &g = in[1];
  BackwardResult gla = backwardGla(P, hgrn2AsGla(in), h0, scale, dOut, dFinal);
  const Tensor &dSwishQ = gla.dInputs[0], &dk = gla.dInputs[1], &dv = gla.dInputs[2], &dDecayG = gla.dInputs[3];
  Tensor dq(q.size()), dg(g.size());
  for (size_t e = 0; e < q.size(); ++e) {
    // d/dq (q sigmoid(q)) = sigmoid(q) (1 + q (1 - sigmoid(q))).
    double s = sigmoid(q[e]);
    dq[e] = dSwishQ[e] * s * (1.0 + q[e] * (1.0 - s));
  }
  // g feeds both the decay and the tied key: d(1 - exp(g))/dg = -exp(g).
  for (size_t e = 0; e < g.size(); ++e)
    dg[e] = dDecayG[e] - std::exp(g[e]) * dk[e];
  return {{dq, dg, dv}, gla.dh0};
}

// ---------------------------------------------------------------------------------------------------------------
// RWKV-6: reads before the update, plus a bonus for the current token:
//   o_t = scale * (S_t-1^T r_t + (sum_i r_t[i] u[i] k_t[i]) v_t),  S_t = Diag(exp(w_t)) S_t-1 + k_t v_t^T.
// Inputs r, k, v, w, u. The update is GLA's with w as the gate.

ForwardResult forwardRwkv6(const Problem &P, const Tensors &in, const Tensor *h0, double scale) {
  const Tensor &r = in[0], &k = in[1], &v = in[2], &u = in[4];
  ForwardResult res{Tensor(P.outSize(), 0.0), Tensor(P.stateSize(), 0.0)};
  for (int64_t n = 0; n < P.numSeqs; ++n)
    for (int64_t h = 0; h < P.H; ++h) {
      Matrix S = P.loadState(h0, n, h);
      for (int64_t tok = P.begin(n); tok < P.end(n); ++tok) {
        double *o = &res.out[P.value(tok, h)];
        read(S, &r[P.key(tok, h)], scale, o);
        double bonus = 0;
        for (int64_t i = 0; i < P.K; ++i)
          bonus += r[P.key(tok, h) + i] * u[P.headKey(h) + i] * k[P.key(tok, h) + i];
        for (int64_t j = 0; j < P.V; ++j)
          o[j] += scale * bonus * v[P.value(tok, h) + j];
        glaStep(P, in, tok, h, S);
      }
      P.storeState(S, res.finalState, n, h);
    }
  return res;
}

BackwardResult backwardRwkv6(const Problem &P, const Tensors &in, const Tensor *h0, double scale, const Tensor &dOut,
                             const Tensor *dFinal) {
  const Tensor &r = in[0], &k = in[1], &v = in[2], &u = in[4];
  BackwardResult res{zerosLike(in), Tensor(P.stateSize(), 0.0)};
  Tensor &dr = res.dInputs[0], &dk = res.dInputs[1], &dv = res.dInputs[2], &du = res.dInputs[4];
  for (int64_t n = 0; n < P.numSeqs; ++n)
    for (int64_t h = 0; h < P.H; ++h) {
      std::vector<Matrix> states = replay(P, in, h0, n, h, glaStep);
      Matrix dS = P.loadState(dFinal, n, h);
      for (int64_t tok = P.end(n) - 1; tok >= P.begin(n); --tok) {
        const Matrix &before = states[tok - P.begin(n)];
        glaStepAdjoint(P, in, tok, h, before, dS, res.dInputs);
        // The read happens before the update, so it sees and adds to S_t-1.
        const double *dO = &dOut[P.value(tok, h)];
        readAdjoint(before, &r[P.key(tok, h)], dO, scale, dS, &dr[P.key(tok, h)]);
        double bonus = 0, vDotDO = 0;
        for (int64_t i = 0; i < P.K; ++i)
          bonus += r[P.key(tok, h) + i] * u[P.headKey(h) + i] * k[P.key(tok, h) + i];
        for (int64_t j = 0; j < P.V; ++j) {
          vDotDO += v[P.value(tok, h) + j] * dO[j];
          dv[P.value(tok, h) + j] += scale * bonus * dO[j];
        }
        for (int64_t i = 0; i < P.K; ++i) {
          size_t at = P.key(tok, h) + i, ui = P.headKey(h) + i;
          dr[at] += scale * vDotDO * u[ui] * k[at];
          dk[at] += scale * vDotDO * r[at] * u[ui];
          du[ui] += scale * vDotDO * r[at] * k[at];
        }
      }
      P.storeState(dS, res.dh0, n, h);
    }
  return res;
}

// ---------------------------------------------------------------------------------------------------------------
// Delta rule: S_t = (I - beta k k^T) S_t-1 + beta k v^T, computed as S_t-1 + beta k (v - S_t-1^T k)^T.

void deltaRule(Matrix &S, const double *k, const double *v, double beta) {
  std::vector<double> delta(static_cast<size_t>(S.cols));
  for (int64_t j = 0; j < S.cols; ++j) {
    double recalled = 0;
    for (int64_t i = 0; i < S.rows; ++i)
      recalled += S(i, j) * k[i];
    delta[j] = v[j] - recalled;
  }
  for (int64_t i = 0; i < S.rows; ++i)
    for (int64_t j = 0; j < S.cols; ++j)
      S(i, j) += beta * k[i] * delta[j];
}

/// Adjoint of deltaRule: dS holds dL/dS_t on entry and dL/dS_t-1 on return.
void deltaRuleAdjoint(const Matrix &prev, const double *k, const double *v, double beta, Matrix &dS, double *dk,
                      double *dv, double *dBeta) {
  const int64_t K = prev.rows, V = prev.cols;
  // delta = v - prev^T k; S_t = prev + beta k delta^T.
  std::vector<double> delta(static_cast<size_t>(V)), dSTk(static_cast<size_t>(V)), dSDelta(static_cast<size_t>(K));
  for (int64_t j = 0; j < V; ++j) {
    double recalled = 0;
    for (int64_t i = 0; i < K; ++i)
      recalled += prev(i, j) * k[i];
    delta[j] = v[j] - recalled;
  }
  for (int64_t i = 0; i < K; ++i)
    for (int64_t j = 0; j < V; ++j) {
      dSDelta[i] += dS(i, j) * delta[j];
      dSTk[j] += dS(i, j) * k[i];
    }
  // Through beta k delta^T: dbeta = k . (dS delta), dk = beta dS delta, d delta = beta dS^T k.
  for (int64_t i = 0; i < K; ++i) {
    *dBeta += k[i] * dSDelta[i];
    dk[i] += beta * dSDelta[i];
  }
  // Through delta = v - prev^T k, with d delta = beta dS^T k: dv = d delta, dk -= prev d delta,
  // dprev = dS - k d delta^T.
  for (int64_t j = 0; j < V; ++j)
    dv[j] += beta * dSTk[j];
  for (int64_t i = 0; i < K; ++i)
    for (int64_t j = 0; j < V; ++j) {
      dk[i] -= prev(i, j) * beta * dSTk[j];
      dS(i, j) -= k[i] * beta * dSTk[j];
    }
}

// DeltaNet. Inputs q, k, v, beta.

void deltanetStep(const Problem &P, const Tensors &in, int64_t tok, int64_t h, Matrix &S) {
  deltaRule(S, &in[1][P.key(tok, h)], &in[2][P.value(tok, h)], in[3][P.scalar(tok, h)]);
}

void deltanetStepAdjoint(const Problem &P, const Tensors &in, int64_t tok, int64_t h, const Matrix &prev, Matrix &dS,
                         Tensors &dIn) {
  deltaRuleAdjoint(prev, &in[1][P.key(tok, h)], &in[2][P.value(tok, h)], in[3][P.scalar(tok, h)], dS,
                   &dIn[1][P.key(tok, h)], &dIn[2][P.value(tok, h)], &dIn[3][P.scalar(tok, h)]);
}

// Gated DeltaNet: S_t = exp(g_t) (I - beta k k^T) S_t-1 + beta k v^T, i.e. the delta rule applied to
// exp(g_t) S_t-1. Inputs q, k, v, g, beta.

void gatedDeltanetStep(const Problem &P, const Tensors &in, int64_t tok, int64_t h, Matrix &S) {
  double decay = std::exp(in[3][P.scalar(tok, h)]);
  for (double &e : S.a)
    e *= decay;
  deltaRule(S, &in[1][P.key(tok, h)], &in[2][P.value(tok, h)], in[4][P.scalar(tok, h)]);
}

void gatedDeltanetStepAdjoint(const Problem &P, const Tensors &in, int64_t tok, int64_t h, const Matrix &prev,
                              Matrix &dS, Tensors &dIn) {
  double decay = std::exp(in[3][P.scalar(tok, h)]);
  Matrix decayed = prev;
  for (double &e : decayed.a)
    e *= decay;
  deltaRuleAdjoint(decayed, &in[1][P.key(tok, h)], &in[2][P.value(tok, h)], in[4][P.scalar(tok, h)], dS,
                   &dIn[1][P.key(tok, h)], &dIn[2][P.value(tok, h)], &dIn[4][P.scalar(tok, h)]);
  // dS is now dL/d(decayed); decayed = exp(g) prev, so dg = sum(dS * decayed) and dprev = exp(g) dS.
  double dg = 0;
  for (size_t e = 0; e < dS.a.size(); ++e) {
    dg += dS.a[e] * decayed.a[e];
    dS.a[e] *= decay;
  }
  dIn[3][P.scalar(tok, h)] += dg;
}

// ---------------------------------------------------------------------------------------------------------------
// Registry.

using ForwardFn = ForwardResult (*)(const Problem &, const Tensors &, const Tensor *, double);
using BackwardFn = BackwardResult (*)(const Problem &, const Tensors &, const Tensor *, double, const Tensor &,
                                      const Tensor *);

template <Step step> ForwardResult forwardWith(const Problem &P, const Tensors &in, const Tensor *h0, double scale) {
  return forwardReadAfterUpdate(P, in, h0, scale, step);
}

template <Step step, StepAdjoint adjoint>
BackwardResult backwardWith(const Problem &P, const Tensors &in, const Tensor *h0, double scale, const Tensor &dOut,
                            const Tensor *dFinal) {
  return backwardReadAfterUpdate(P, in, h0, scale, dOut, dFinal, step, adjoint);
}

struct Recurrence {
  const char *name;
  std::vector<Input> inputs;
  bool vectorState;
  ForwardFn forward;
  BackwardFn backward;
};

const std::vector<Recurrence> &recurrences() {
  using K = InputKind;
  using D = InputDomain;
  static const std::vector<Recurrence> table = {
      {"hgrn", {{"x", K::TokenKey}, {"g", K::TokenKey, D::LogGate}}, true, forwardHgrn, backwardHgrn},
      {"retnet",
       {{"q", K::TokenKey}, {"k", K::TokenKey}, {"v", K::TokenValue}},
       false,
       forwardWith<retnetStep>,
       backwardWith<retnetStep, retnetStepAdjoint>},
      {"simple_gla",
       {{"q", K::TokenKey}, {"k", K::TokenKey}, {"v", K::TokenValue}, {"g", K::TokenScalar, D::LogGate}},
       false,
       forwardWith<simpleGlaStep>,
       backwardWith<simpleGlaStep, simpleGlaStepAdjoint>},
      {"gla",
       {{"q", K::TokenKey}, {"k", K::TokenKey}, {"v", K::TokenValue}, {"g", K::TokenKey, D::LogGate}},
       false,
       forwardGla,
       backwardGla},
      {"hgrn2",
       {{"q", K::TokenKey}, {"g", K::TokenKey, D::LogGate}, {"v", K::TokenValue}},
       false,
       forwardHgrn2,
       backwardHgrn2},
      {"rwkv6",
       {{"r", K::TokenKey},
        {"k", K::TokenKey},
        {"v", K::TokenValue},
        {"w", K::TokenKey, D::LogGate},
        {"u", K::HeadKey}},
       false,
       forwardRwkv6,
       backwardRwkv6},
      {"deltanet",
       {{"q", K::TokenKey},
        {"k", K::TokenKey, D::UnitRows},
        {"v", K::TokenValue},
        {"beta", K::TokenScalar, D::Strength}},
       false,
       forwardWith<deltanetStep>,
       backwardWith<deltanetStep, deltanetStepAdjoint>},
      {"gated_deltanet",
       {{"q", K::TokenKey},
        {"k", K::TokenKey, D::UnitRows},
        {"v", K::TokenValue},
        {"g", K::TokenScalar, D::LogGate},
        {"beta", K::TokenScalar, D::Strength}},
       false,
       forwardWith<gatedDeltanetStep>,
       backwardWith<gatedDeltanetStep, gatedDeltanetStepAdjoint>},
  };
  return table;
}

const Recurrence &lookup(const std::string &name) {
  for (const Recurrence &rec : recurrences())
    if (name == rec.name)
      return rec;
  throw std::invalid_argument("linac::ref: unknown recurrence '" + name + "'");
}

void checkSize(const std::string &what, size_t got, size_t want) {
  if (got != want)
    throw std::invalid_argument("linac::ref: " + what + " has " + std::to_string(got) + " elements, expected " +
                                std::to_string(want));
}

void checkInputs(const Recurrence &rec, const Problem &P, const Tensors &inputs, const Tensor *h0) {
  checkSize(std::string(rec.name) + " input list", inputs.size(), rec.inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i)
    checkSize(std::string(rec.name) + " input '" + rec.inputs[i].name + "'", inputs[i].size(),
              P.sizeOf(rec.inputs[i].kind));
  if (h0)
    checkSize(std::string(rec.name) + " h0", h0->size(), P.stateSize());
}

double effectiveScale(double scale, int64_t K) { return scale > 0 ? scale : 1.0 / std::sqrt(static_cast<double>(K)); }

} // namespace

ForwardResult forward(const std::string &name, const Shape &s, const std::vector<std::vector<double>> &inputs,
                      const std::vector<double> *h0, double scale) {
  const Recurrence &rec = lookup(name);
  Problem P(s, rec.vectorState);
  checkInputs(rec, P, inputs, h0);
  return rec.forward(P, inputs, h0, effectiveScale(scale, s.K));
}

BackwardResult backward(const std::string &name, const Shape &s, const std::vector<std::vector<double>> &inputs,
                        const std::vector<double> *h0, double scale, const std::vector<double> &dOut,
                        const std::vector<double> *dFinal) {
  const Recurrence &rec = lookup(name);
  Problem P(s, rec.vectorState);
  checkInputs(rec, P, inputs, h0);
  checkSize(name + " dOut", dOut.size(), P.outSize());
  if (dFinal)
    checkSize(name + " dFinal", dFinal->size(), P.stateSize());
  return rec.backward(P, inputs, h0, effectiveScale(scale, s.K), dOut, dFinal);
}

std::vector<Input> inputsOf(const std::string &name) { return lookup(name).inputs; }

std::vector<std::string> recurrenceNames() {
  std::vector<std::string> names;
  for (const Recurrence &rec : recurrences())
    names.push_back(rec.name);
  return names;
}

bool isVectorState(const std::string &name) { return lookup(name).vectorState; }

} // namespace linac::ref
