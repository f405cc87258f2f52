#ifndef LINAC_RUNTIME_OPS_H
#define LINAC_RUNTIME_OPS_H

// The dense building blocks of a language model, forward and backward, as plain
// loops over row-major buffers (llm.c style). They are templates so the tests can
// run them in double and check the hand-written backward against finite
// differences; the model instantiates them in float.
//
// Conventions: a weight matrix of a linear map from C to OC features is stored
// [OC, C] (one output feature per row). Backward functions ADD into every
// gradient buffer (parameters and activations alike); callers zero them.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

namespace linac::rt {

/// Eight independent partial sums let the compiler vectorise the reduction without -ffast-math.
template <typename T> T dot(const T *a, const T *b, int64_t n) {
  T part[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  // (The tail's start as its own bound: carrying i from the first loop made GCC 12 warn that the tail loop may
  // run 2^61 times, -Waggressive-loop-optimizations, where GpuTest.cpp inlines it.)
  int64_t full = n - n % 8;
  for (int64_t i = 0; i < full; i += 8)
    for (int j = 0; j < 8; ++j)
      part[j] += a[i + j] * b[i + j];
  T sum = 0;
  for (int j = 0; j < 8; ++j)
    sum += part[j];
  for (int64_t i = full; i < n; ++i)
    sum += a[i] * b[i];
  return sum;
}

template <typename T> void axpy(T *y, T a, const T *x, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    y[i] += a * x[i];
}

/// out[N, OC] = inp[N, C] * w[OC, C]^T
template <typename T> void matmulForward(T *out, const T *inp, const T *w, int64_t N, int64_t C, int64_t OC) {
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < OC; ++o)
      out[n * OC + o] = dot(inp + n * C, w + o * C, C);
}

template <typename T>
void matmulBackward(T *dinp, T *dw, const T *dout, const T *inp, const T *w, int64_t N, int64_t C, int64_t OC) {
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < OC; ++o)
      axpy(dinp + n * C, dout[n * OC + o], w + o * C, C);
  for (int64_t o = 0; o < OC; ++o)
    for (int64_t n = 0; n < N; ++n)
      axpy(dw + o * C, dout[n * OC + o], inp + n * C, C);
}

template <typename T> void embeddingForward(T *out, const int32_t *tokens, const T *table, int64_t N, int64_t C) {
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      out[n * C + c] = table[tokens[n] * C + c];
}

template <typename T> void embeddingBackward(T *dtable, const T *dout, const int32_t *tokens, int64_t N, int64_t C) {
  for (int64_t n = 0; n < N; ++n)
    axpy(dtable + tokens[n] * C, T(1), dout + n * C, C);
}

constexpr double kNormEps = 1e-6;

/// y = x / rms(x) * w over rows of C; keeps 1 / rms per row for the backward.
template <typename T> void rmsnormForward(T *y, T *rstd, const T *x, const T *w, int64_t N, int64_t C) {
  for (int64_t n = 0; n < N; ++n) {
    const T *xr = x + n * C;
    T r = T(1) / std::sqrt(dot(xr, xr, C) / T(C) + T(kNormEps));
    rstd[n] = r;
    for (int64_t c = 0; c < C; ++c)
      y[n * C + c] = xr[c] * r * w[c];
  }
}

template <typename T>
void rmsnormBackward(T *dx, T *dw, const T *dy, const T *x, const T *w, const T *rstd, int64_t N, int64_t C) {
  for (int64_t n = 0; n < N; ++n) {
    const T *xr = x + n * C, *dyr = dy + n * C;
    T r = rstd[n];
    T proj = 0; // mean over the row of dy * w * x, the part of the gradient along x
    for (int64_t c = 0; c < C; ++c)
      proj += dyr[c] * w[c] * xr[c];
    proj /= T(C);
    for (int64_t c = 0; c < C; ++c) {
      dx[n * C + c] += r * (dyr[c] * w[c] - xr[c] * r * r * proj);
      dw[c] += dyr[c] * xr[c] * r;
    }
  }
}

template <typename T> T sigmoid(T z) { return T(1) / (T(1) + std::exp(-z)); }

/// Log-space gate in (-inf, 0): log(sigmoid(z)) / 16, the GLA parametrisation (fla's gate_logit_normalizer = 16).
/// At z = 0 a channel keeps exp(-log(2)/16) = 0.958 of its state per token, so the initial memory spans
/// tens of tokens, and no projection can make the gate positive.
constexpr double kGateNormalizer = 16.0;
template <typename T> void gateForward(T *g, const T *z, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    T zi = z[i];
    T logSigmoid = std::min(zi, T(0)) - std::log1p(std::exp(-std::abs(zi)));
    g[i] = logSigmoid / T(kGateNormalizer);
  }
}
template <typename T> void gateBackward(T *dz, const T *dg, const T *z, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    dz[i] += dg[i] * sigmoid(-z[i]) / T(kGateNormalizer);
}

template <typename T> void sigmoidForward(T *y, const T *z, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    y[i] = sigmoid(z[i]);
}
template <typename T> void sigmoidBackward(T *dz, const T *dy, const T *y, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    dz[i] += dy[i] * y[i] * (T(1) - y[i]);
}

/// Unit rows: the delta rule S - beta k k^T S is a contraction only for |k| = 1.
template <typename T> void l2normForward(T *y, T *inv, const T *x, int64_t N, int64_t C) {
  for (int64_t n = 0; n < N; ++n) {
    const T *xr = x + n * C;
    T r = T(1) / std::sqrt(dot(xr, xr, C) + T(kNormEps));
    inv[n] = r;
    for (int64_t c = 0; c < C; ++c)
      y[n * C + c] = xr[c] * r;
  }
}
template <typename T> void l2normBackward(T *dx, const T *dy, const T *y, const T *inv, int64_t N, int64_t C) {
  for (int64_t n = 0; n < N; ++n) {
    const T *yr = y + n * C, *dyr = dy + n * C;
    T along = dot(yr, dyr, C);
    for (int64_t c = 0; c < C; ++c)
      dx[n * C + c] += inv[n] * (dyr[c] - yr[c] * along);
  }
}

/// Short causal convolution over time, per channel, then SiLU (the short convolution Mamba-2, DeltaNet and
/// their kin put in front of q, k and v: it hands each token its W - 1 predecessors, which a recurrence cannot
/// bind to a key by itself): on x [B, T, C] and taps w [C, W], pre[b, t, c] = sum_{j < W} w[c, j] x[b, t - j, c]
/// (zero before t = 0) and y = silu(pre); pre is kept for the backward.
template <typename T>
void shortConvForward(T *y, T *pre, const T *x, const T *w, int64_t B, int64_t Tn, int64_t C, int64_t W) {
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < Tn; ++t)
      for (int64_t c = 0; c < C; ++c) {
        T sum = 0;
        for (int64_t j = 0; j < W && j <= t; ++j)
          sum += w[c * W + j] * x[((b * Tn) + t - j) * C + c];
        int64_t at = (b * Tn + t) * C + c;
        pre[at] = sum;
        y[at] = sum * sigmoid(sum);
      }
}
template <typename T>
void shortConvBackward(T *dx, T *dw, const T *dy, const T *pre, const T *x, const T *w, int64_t B, int64_t Tn,
                       int64_t C, int64_t W) {
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < Tn; ++t)
      for (int64_t c = 0; c < C; ++c) {
        int64_t at = (b * Tn + t) * C + c;
        T a = pre[at], s = sigmoid(a);
        T d = dy[at] * s * (T(1) + a * (T(1) - s));
        for (int64_t j = 0; j < W && j <= t; ++j) {
          dx[at - j * C] += w[c * W + j] * d;
          dw[c * W + j] += x[at - j * C] * d;
        }
      }
}

/// SwiGLU gating: ab holds rows [a (F), b (F)]; h = silu(a) * b.
template <typename T> void swigluForward(T *h, const T *ab, int64_t N, int64_t F) {
  for (int64_t n = 0; n < N; ++n)
    for (int64_t f = 0; f < F; ++f) {
      T a = ab[n * 2 * F + f], b = ab[n * 2 * F + F + f];
      h[n * F + f] = a * sigmoid(a) * b;
    }
}
template <typename T> void swigluBackward(T *dab, const T *dh, const T *ab, int64_t N, int64_t F) {
  for (int64_t n = 0; n < N; ++n)
    for (int64_t f = 0; f < F; ++f) {
      T a = ab[n * 2 * F + f], b = ab[n * 2 * F + F + f], s = sigmoid(a);
      T d = dh[n * F + f];
      dab[n * 2 * F + f] += d * b * s * (T(1) + a * (T(1) - s));
      dab[n * 2 * F + F + f] += d * a * s;
    }
}

/// Rotary position embedding on [B, T, H, D] in place: pairs (2i, 2i+1) turn by t * 10000^(-2i/D).
/// The inverse rotation (sign = -1) is the backward, since a rotation's transpose is its inverse.
template <typename T> void rope(T *x, int64_t B, int64_t Tn, int64_t H, int64_t D, int sign) {
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < Tn; ++t)
      for (int64_t h = 0; h < H; ++h) {
        T *row = x + ((b * Tn + t) * H + h) * D;
        for (int64_t i = 0; i < D / 2; ++i) {
          double angle = double(t) * std::pow(10000.0, -2.0 * double(i) / double(D));
          T c = T(std::cos(angle)), s = T(sign * std::sin(angle));
          T x0 = row[2 * i], x1 = row[2 * i + 1];
          row[2 * i] = x0 * c - x1 * s;
          row[2 * i + 1] = x0 * s + x1 * c;
        }
      }
}

/// Causal softmax attention on [B, T, H, D] q, k, v; keeps the probabilities [B, H, T, T] for the backward.
template <typename T>
void attentionForward(T *out, T *prob, const T *q, const T *k, const T *v, int64_t B, int64_t Tn, int64_t H,
                      int64_t D) {
  const T scale = T(1) / std::sqrt(T(D));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t t = 0; t < Tn; ++t) {
        T *p = prob + ((b * H + h) * Tn + t) * Tn;
        const T *qt = q + ((b * Tn + t) * H + h) * D;
        T maxScore = -std::numeric_limits<T>::infinity();
        for (int64_t s = 0; s <= t; ++s) {
          p[s] = dot(qt, k + ((b * Tn + s) * H + h) * D, D) * scale;
          maxScore = std::max(maxScore, p[s]);
        }
        T sum = 0;
        for (int64_t s = 0; s <= t; ++s) {
          p[s] = std::exp(p[s] - maxScore);
          sum += p[s];
        }
        for (int64_t s = 0; s <= t; ++s)
          p[s] /= sum;
        for (int64_t s = t + 1; s < Tn; ++s)
          p[s] = 0;
        T *ot = out + ((b * Tn + t) * H + h) * D;
        for (int64_t d = 0; d < D; ++d)
          ot[d] = 0;
        for (int64_t s = 0; s <= t; ++s)
          axpy(ot, p[s], v + ((b * Tn + s) * H + h) * D, D);
      }
}

template <typename T>
void attentionBackward(T *dq, T *dk, T *dv, const T *dout, const T *prob, const T *q, const T *k, const T *v,
                       int64_t B, int64_t Tn, int64_t H, int64_t D) {
  const T scale = T(1) / std::sqrt(T(D));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t t = 0; t < Tn; ++t) {
        const T *p = prob + ((b * H + h) * Tn + t) * Tn;
        const T *dot_ = dout + ((b * Tn + t) * H + h) * D;
        const T *qt = q + ((b * Tn + t) * H + h) * D;
        T *dqt = dq + ((b * Tn + t) * H + h) * D;
        // d softmax: dscore_s = p_s (dp_s - sum_s' p_s' dp_s') with dp_s = dout_t . v_s
        T weighted = 0;
        for (int64_t s = 0; s <= t; ++s)
          weighted += p[s] * dot(dot_, v + ((b * Tn + s) * H + h) * D, D);
        for (int64_t s = 0; s <= t; ++s) {
          int64_t row = ((b * Tn + s) * H + h) * D;
          T dp = dot(dot_, v + row, D);
          axpy(dv + row, p[s], dot_, D);
          T dscore = p[s] * (dp - weighted) * scale;
          axpy(dqt, dscore, k + row, D);
          axpy(dk + row, dscore, qt, D);
        }
      }
}

/// Mean cross-entropy over the rows whose target is >= 0 (a negative target is ignored, e.g. the
/// non-answer positions of a recall task). Writes dlogits for that mean when dlogits is not null.
template <typename T>
double crossEntropy(T *dlogits, const T *logits, const int32_t *targets, int64_t N, int64_t Vocab) {
  int64_t counted = 0;
  for (int64_t n = 0; n < N; ++n)
    counted += targets[n] >= 0;
  double loss = 0;
  for (int64_t n = 0; n < N; ++n) {
    const T *row = logits + n * Vocab;
    if (targets[n] < 0) {
      if (dlogits)
        for (int64_t c = 0; c < Vocab; ++c)
          dlogits[n * Vocab + c] = 0;
      continue;
    }
    T maxLogit = row[0];
    for (int64_t c = 1; c < Vocab; ++c)
      maxLogit = std::max(maxLogit, row[c]);
    double sum = 0;
    for (int64_t c = 0; c < Vocab; ++c)
      sum += std::exp(double(row[c] - maxLogit));
    loss += std::log(sum) - double(row[targets[n]] - maxLogit);
    if (dlogits)
      for (int64_t c = 0; c < Vocab; ++c)
        dlogits[n * Vocab + c] =
            T((std::exp(double(row[c] - maxLogit)) / sum - (c == targets[n] ? 1.0 : 0.0)) / double(counted));
  }
  return counted ? loss / double(counted) : 0.0;
}

} // namespace linac::rt

#endif
