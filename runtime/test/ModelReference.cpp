#include "ModelReference.h"

#include "Reference.h"

#include <algorithm>
#include <cmath>
#include <exception>
#include <limits>
#include <map>
#include <stdexcept>
#include <thread>

namespace linac::modelref {

namespace {

using Vec = std::vector<double>;

// The model's constants, from its definition (runtime/README.md, Model.h): RMSNorm divides by
// sqrt(mean(x^2) + eps), a delta-rule key by sqrt(|x|^2 + eps); a gate is log(sigmoid(z)) / 16 (GLA's
// normaliser); rotary pairs (2i, 2i+1) turn by t * 10000^(-2i/d); attention scores are scaled by 1/sqrt(d).
constexpr double kEps = 1e-6;
constexpr double kGateNormalizer = 16.0;
constexpr double kRopeBase = 10000.0;

// referenceGradient's step halvings: at most this many, and none once the truncation estimate is this small
// relative to the derivative (or below the rounding noise).
constexpr int kMaxHalvings = 10;
constexpr double kConverged = 1e-11;

/// Compensated (Neumaier) summation, for the cross-entropy's sums: rounding in the loss is what limits the finite
/// differences, and plain sums over the vocabulary and the batch carried ten times the rounding of the rest.
struct Sum {
  double s = 0, c = 0;
  void add(double x) {
    double t = s + x;
    c += std::abs(s) >= std::abs(x) ? (s - t) + x : (x - t) + s;
    s = t;
  }
  double value() const { return s + c; }
};

double sigmoid(double z) { return 1.0 / (1.0 + std::exp(-z)); }

/// log(sigmoid(z)) without overflow on either side.
double logSigmoid(double z) { return z >= 0 ? -std::log1p(std::exp(-z)) : z - std::log1p(std::exp(z)); }

/// out[n, o] = sum_c in[n, c] w[o, c]: a linear map stored [out features, in features]. Four partial sums let
/// the compiler vectorise (the finite differences run thousands of forwards); fp64 either way.
void linear(double *out, const double *in, const double *w, int64_t N, int64_t C, int64_t OC) {
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < OC; ++o) {
      const double *a = in + n * C, *b = w + o * C;
      double part[4] = {0, 0, 0, 0};
      int64_t c = 0;
      for (; c + 4 <= C; c += 4)
        for (int j = 0; j < 4; ++j)
          part[j] += a[c + j] * b[c + j];
      for (; c < C; ++c)
        part[0] += a[c] * b[c];
      out[n * OC + o] = (part[0] + part[1]) + (part[2] + part[3]);
    }
}

/// Rows of C: y = x / sqrt(mean(x^2) + eps) * gain.
void rmsnorm(double *y, const double *x, const double *gain, int64_t N, int64_t C) {
  for (int64_t n = 0; n < N; ++n) {
    double squares = 0;
    for (int64_t c = 0; c < C; ++c)
      squares += x[n * C + c] * x[n * C + c];
    double inv = 1.0 / std::sqrt(squares / double(C) + kEps);
    for (int64_t c = 0; c < C; ++c)
      y[n * C + c] = x[n * C + c] * inv * gain[c];
  }
}

/// The parameter table read by name: each tensor is taken once, with the shape the architecture implies, and
/// remembers the first layer whose output it changes (-1: the embedding, which also feeds the tied head).
class Table {
public:
  explicit Table(const std::vector<rt::ParamInfo> &info) : info(info), stage(info.size(), kUnused) {
    for (size_t i = 0; i < info.size(); ++i)
      if (!index.emplace(info[i].name, i).second)
        throw std::invalid_argument("modelref: parameter '" + info[i].name + "' appears twice");
  }

  size_t take(const std::string &name, const std::vector<int64_t> &shape, int firstLayer) {
    auto it = index.find(name);
    if (it == index.end())
      throw std::invalid_argument("modelref: the model has no parameter '" + name + "'");
    const rt::ParamInfo &p = info[it->second];
    if (p.shape != shape)
      throw std::invalid_argument("modelref: parameter '" + name + "' has shape " + str(p.shape) + ", expected " +
                                  str(shape));
    if (stage[it->second] != kUnused)
      throw std::invalid_argument("modelref: parameter '" + name + "' used twice");
    stage[it->second] = firstLayer;
    return p.offset;
  }

  /// Every tensor must be part of the reference: a parameter it does not know would be a model it does not mirror.
  std::vector<int> finish() const {
    for (size_t i = 0; i < info.size(); ++i)
      if (stage[i] == kUnused)
        throw std::invalid_argument("modelref: parameter '" + info[i].name + "' is not part of the reference model");
    return stage;
  }

private:
  static constexpr int kUnused = std::numeric_limits<int>::min();
  static std::string str(const std::vector<int64_t> &shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i)
      s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]";
  }
  const std::vector<rt::ParamInfo> &info;
  std::vector<int> stage;
  std::map<std::string, size_t> index;
};

/// One projection feeding the recurrence, in linac::ref's input order; `conv` holds its short convolution's taps
/// when it has one.
struct Input {
  std::string name;
  bool perToken;
  int64_t width;
  rt::InputTransform transform;
  size_t w;
  bool convolved = false;
  size_t conv = 0;
};

struct Layer {
  bool attention = false;
  size_t norm1 = 0, norm2 = 0, gateUp = 0, down = 0;
  // Linear attention.
  std::vector<Input> inputs;
  size_t outNorm = 0, outProj = 0;
  // Softmax attention.
  size_t qkv = 0, attnOut = 0;
};

/// The model's structure: where each tensor lives and what each layer computes.
class Net {
public:
  Net(const rt::Config &cfg, const std::vector<rt::ParamInfo> &info)
      : variant(cfg.variant), L(cfg.layers), D(cfg.width), H(cfg.heads), hd(cfg.headDim), F(cfg.hidden()),
        W(cfg.shortConv) {
    if (!hasReference(variant))
      throw std::invalid_argument("modelref: linac::ref has no recurrence '" + variant + "'");
    const rt::KernelInfo *kernel = rt::findKernel(variant);
    if (!kernel)
      throw std::invalid_argument("modelref: no compiled recurrence '" + variant + "'");
    Table table(info);
    embed = table.take("embed", {rt::kVocab, D}, -1);
    std::vector<bool> attention = cfg.attentionLayers();
    // Keys and values are head_dim wide, and so is the output of either state (HGRN's vector state: K wide).
    const int64_t K = hd, V = hd;
    std::vector<rt::InputPlan> plans = rt::planInputs(*kernel, K, V);
    for (int l = 0; l < L; ++l) {
      Layer layer;
      std::string prefix = "layer" + std::to_string(l);
      layer.attention = attention[l];
      layer.norm1 = table.take(prefix + ".norm1", {D}, l);
      if (layer.attention) {
        layer.qkv = table.take(prefix + ".attn.qkv", {3 * H * hd, D}, l);
        layer.attnOut = table.take(prefix + ".attn.out_proj", {D, H * hd}, l);
      } else {
        std::string mixer = prefix + "." + variant;
        // The recurrence takes its inputs in linac::ref's order; the model names its projections after the
        // kernel's input table. Matched by name, and each plan checked against the reference's input kind.
        for (const ref::Input &declared : ref::inputsOf(variant)) {
          const std::string &name = declared.name;
          ref::InputKind kind = declared.kind;
          auto plan = std::find_if(plans.begin(), plans.end(), [&](const rt::InputPlan &p) { return p.name == name; });
          if (plan == plans.end())
            throw std::invalid_argument("modelref: kernel '" + variant + "' has no input '" + name + "'");
          bool perToken = kind != ref::InputKind::HeadKey;
          int64_t width = kind == ref::InputKind::TokenScalar ? 1 : kind == ref::InputKind::TokenValue ? V : K;
          if (plan->perToken != perToken || plan->width != width)
            throw std::invalid_argument("modelref: input '" + name + "' of '" + variant +
                                        "' is laid out differently in the kernel and in linac::ref");
          std::vector<int64_t> shape = perToken ? std::vector<int64_t>{H * width, D} : std::vector<int64_t>{H, width};
          Input in{name, perToken, width, plan->transform, table.take(mixer + ".in." + name, shape, l)};
          // The short convolution (short_conv taps) is on the inputs the plan marks (a convention, like the plan).
          in.convolved = W > 0 && plan->shortConv;
          if (in.convolved)
            in.conv = table.take(mixer + ".in." + name + ".conv", {H * width, W}, l);
          layer.inputs.push_back(in);
        }
        if (layer.inputs.size() != plans.size())
          throw std::invalid_argument("modelref: kernel '" + variant + "' takes inputs linac::ref does not");
        layer.outNorm = table.take(mixer + ".out_norm", {hd}, l);
        layer.outProj = table.take(mixer + ".out_proj", {D, H * hd}, l);
      }
      layer.norm2 = table.take(prefix + ".norm2", {D}, l);
      layer.gateUp = table.take(prefix + ".mlp.gate_up", {2 * F, D}, l);
      layer.down = table.take(prefix + ".mlp.down", {D, F}, l);
      layers.push_back(std::move(layer));
    }
    finalNorm = table.take("final_norm", {D}, L);
    stageOf = table.finish();
  }

  /// The loss, starting at layer `first` from the residual stream `start` (first = -1: from the embedding).
  /// When `keep` is given it receives the residual stream before every layer and after the last (L + 1 entries).
  double loss(const Vec &p, const int32_t *tokens, const int32_t *targets, int B, int T, int first, const Vec *start,
              std::vector<Vec> *keep) const {
    const int64_t BT = int64_t(B) * T;
    Vec x(size_t(BT * D));
    if (first < 0) {
      for (int64_t n = 0; n < BT; ++n) {
        if (tokens[n] < 0 || tokens[n] >= rt::kVocab)
          throw std::invalid_argument("modelref: token out of range");
        std::copy_n(&p[embed + size_t(tokens[n]) * D], D, &x[n * D]);
      }
      first = 0;
    } else {
      x = *start;
    }
    if (keep)
      keep->assign(size_t(L + 1), Vec());
    Vec normed(x.size()), out(x.size());
    for (int l = first; l < L; ++l) {
      const Layer &layer = layers[l];
      if (keep)
        (*keep)[l] = x;
      rmsnorm(normed.data(), x.data(), &p[layer.norm1], BT, D);
      if (layer.attention)
        softmaxAttention(out.data(), normed.data(), p, layer, B, T);
      else
        linearAttention(out.data(), normed.data(), p, layer, B, T);
      for (size_t i = 0; i < x.size(); ++i)
        x[i] += out[i];
      rmsnorm(normed.data(), x.data(), &p[layer.norm2], BT, D);
      swiglu(out.data(), normed.data(), p, layer, BT);
      for (size_t i = 0; i < x.size(); ++i)
        x[i] += out[i];
    }
    if (keep)
      (*keep)[L] = x;
    rmsnorm(normed.data(), x.data(), &p[finalNorm], BT, D);
    // Tied head: logits = normed * embed^T, then the mean cross-entropy over the counted targets.
    Vec logits(size_t(rt::kVocab));
    Sum total;
    int64_t counted = 0;
    for (int64_t n = 0; n < BT; ++n) {
      if (targets[n] < 0)
        continue;
      linear(logits.data(), &normed[n * D], &p[embed], 1, D, rt::kVocab);
      double top = *std::max_element(logits.begin(), logits.end());
      Sum sum;
      for (double z : logits)
        sum.add(std::exp(z - top));
      total.add(std::log(sum.value()) - (logits[size_t(targets[n])] - top));
      ++counted;
    }
    return counted ? total.value() / double(counted) : 0.0;
  }

  std::string variant;
  int L;
  int64_t D, H, hd, F, W;
  std::vector<Layer> layers;
  size_t embed = 0, finalNorm = 0;
  /// Per tensor of the ParamInfo table: the first layer whose output it changes (-1 embedding, L final norm).
  std::vector<int> stageOf;

private:
  void linearAttention(double *y, const double *x, const Vec &p, const Layer &layer, int B, int T) const {
    const int64_t BT = int64_t(B) * T;
    std::vector<Vec> inputs;
    for (const Input &in : layer.inputs) {
      int64_t rows = in.perToken ? BT * H : H;
      Vec v(size_t(rows * in.width));
      if (in.perToken) // [B*T, H*width] is the reference's [B, T, H, width] (or [B, T, H] for a scalar)
        linear(v.data(), x, &p[in.w], BT, D, H * in.width);
      else
        std::copy_n(&p[in.w], v.size(), v.data());
      if (in.convolved) // causal over each sequence's tokens, per channel: sum_j taps[c, j] v[t - j, c], then SiLU
        shortConvolution(v, &p[in.conv], B, T, H * in.width);
      switch (in.transform) {
      case rt::InputTransform::Plain:
        break;
      case rt::InputTransform::Gate:
        for (double &e : v)
          e = logSigmoid(e) / kGateNormalizer;
        break;
      case rt::InputTransform::Sigmoid:
        for (double &e : v)
          e = sigmoid(e);
        break;
      case rt::InputTransform::UnitRows:
        for (int64_t r = 0; r < rows; ++r) {
          double *row = &v[size_t(r * in.width)], squares = 0;
          for (int64_t c = 0; c < in.width; ++c)
            squares += row[c] * row[c];
          double inv = 1.0 / std::sqrt(squares + kEps);
          for (int64_t c = 0; c < in.width; ++c)
            row[c] *= inv;
        }
        break;
      }
      inputs.push_back(std::move(v));
    }
    ref::Shape shape{B, T, H, hd, hd, {}};
    // Scale 0: the recurrence's default read scale 1/sqrt(K), as the model passes to its kernel.
    Vec core = ref::forward(variant, shape, inputs, nullptr, 0.0).out;
    if (core.size() != size_t(BT * H * hd))
      throw std::logic_error("modelref: recurrence output of unexpected size");
    // Per-head RMSNorm of the output (one gain shared by the heads), then the output projection.
    Vec normed(core.size());
    rmsnorm(normed.data(), core.data(), &p[layer.outNorm], BT * H, hd);
    linear(y, normed.data(), &p[layer.outProj], BT, H * hd, D);
  }

  void softmaxAttention(double *y, const double *x, const Vec &p, const Layer &layer, int B, int T) const {
    const int64_t BT = int64_t(B) * T, E = H * hd;
    Vec qkv(size_t(BT * 3 * E));
    linear(qkv.data(), x, &p[layer.qkv], BT, D, 3 * E);
    // Row n of qkv is [q (H x hd), k (H x hd), v (H x hd)]; rotary embedding on q and k at position t.
    for (int64_t n = 0; n < BT; ++n) {
      double t = double(n % T);
      for (int part = 0; part < 2; ++part)
        for (int64_t h = 0; h < H; ++h) {
          double *row = &qkv[size_t(n * 3 * E + part * E + h * hd)];
          for (int64_t i = 0; i < hd / 2; ++i) {
            double angle = t * std::pow(kRopeBase, -2.0 * double(i) / double(hd));
            double c = std::cos(angle), s = std::sin(angle), a = row[2 * i], b = row[2 * i + 1];
            row[2 * i] = a * c - b * s;
            row[2 * i + 1] = a * s + b * c;
          }
        }
    }
    const double scale = 1.0 / std::sqrt(double(hd));
    Vec att(static_cast<size_t>(BT * E), 0.0), score(static_cast<size_t>(T));
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t t = 0; t < T; ++t) {
          const double *q = &qkv[size_t((b * T + t) * 3 * E + h * hd)];
          double top = -std::numeric_limits<double>::infinity();
          for (int64_t s = 0; s <= t; ++s) {
            const double *k = &qkv[size_t((b * T + s) * 3 * E + E + h * hd)];
            double dot = 0;
            for (int64_t d = 0; d < hd; ++d)
              dot += q[d] * k[d];
            score[s] = dot * scale;
            top = std::max(top, score[s]);
          }
          double sum = 0;
          for (int64_t s = 0; s <= t; ++s)
            sum += (score[s] = std::exp(score[s] - top));
          double *o = &att[size_t((b * T + t) * E + h * hd)];
          for (int64_t s = 0; s <= t; ++s) {
            const double *v = &qkv[size_t((b * T + s) * 3 * E + 2 * E + h * hd)];
            for (int64_t d = 0; d < hd; ++d)
              o[d] += score[s] / sum * v[d];
          }
        }
    linear(y, att.data(), &p[layer.attnOut], BT, E, D);
  }

  /// v [B, T, C] <- silu(sum_{j < W, j <= t} taps[c, j] v[b, t - j, c]), taps stored [C, W].
  void shortConvolution(Vec &v, const double *taps, int B, int T, int64_t C) const {
    Vec in = v;
    for (int64_t b = 0; b < B; ++b)
      for (int64_t t = 0; t < T; ++t)
        for (int64_t c = 0; c < C; ++c) {
          double sum = 0;
          for (int64_t j = 0; j < W && j <= t; ++j)
            sum += taps[c * W + j] * in[size_t(((b * T) + t - j) * C + c)];
          v[size_t((b * T + t) * C + c)] = sum * sigmoid(sum);
        }
  }

  /// (silu(x Wa) * (x Wb)) Wdown, with gate_up = [Wa; Wb] stored [2F, D].
  void swiglu(double *y, const double *x, const Vec &p, const Layer &layer, int64_t BT) const {
    Vec ab(size_t(BT * 2 * F)), hidden(size_t(BT * F));
    linear(ab.data(), x, &p[layer.gateUp], BT, D, 2 * F);
    for (int64_t n = 0; n < BT; ++n)
      for (int64_t f = 0; f < F; ++f) {
        double a = ab[size_t(n * 2 * F + f)], b = ab[size_t(n * 2 * F + F + f)];
        hidden[size_t(n * F + f)] = a * sigmoid(a) * b;
      }
    linear(y, hidden.data(), &p[layer.down], BT, F, D);
  }
};

void checkBuffer(const std::vector<rt::ParamInfo> &info, const std::vector<double> &params) {
  size_t total = 0;
  for (const rt::ParamInfo &p : info)
    total = std::max(total, p.offset + p.size);
  if (params.size() != total)
    throw std::invalid_argument("modelref: " + std::to_string(params.size()) + " parameters for a table of " +
                                std::to_string(total));
}

} // namespace

bool hasReference(const std::string &variant) {
  std::vector<std::string> names = ref::recurrenceNames();
  return std::find(names.begin(), names.end(), variant) != names.end();
}

double referenceLoss(const rt::Config &cfg, const std::vector<rt::ParamInfo> &info, const std::vector<double> &params,
                     const int32_t *tokens, const int32_t *targets, int B, int T) {
  checkBuffer(info, params);
  return Net(cfg, info).loss(params, tokens, targets, B, T, -1, nullptr, nullptr);
}

std::vector<double> referenceGradient(const rt::Config &cfg, const std::vector<rt::ParamInfo> &info,
                                      const std::vector<double> &params, const int32_t *tokens, const int32_t *targets,
                                      int B, int T, const std::vector<size_t> &flatIndices, double h,
                                      std::vector<double> *errors) {
  checkBuffer(info, params);
  const Net net(cfg, info);
  // Which tensor holds each entry, and that tensor's step.
  std::vector<size_t> tensorOf(flatIndices.size());
  std::vector<double> step(info.size());
  for (size_t t = 0; t < info.size(); ++t) {
    double squares = 0;
    for (size_t i = 0; i < info[t].size; ++i)
      squares += params[info[t].offset + i] * params[info[t].offset + i];
    double rms = info[t].size ? std::sqrt(squares / double(info[t].size)) : 0.0;
    step[t] = h * (rms > 0 ? rms : 1.0);
  }
  for (size_t e = 0; e < flatIndices.size(); ++e) {
    auto it = std::find_if(info.begin(), info.end(), [&](const rt::ParamInfo &p) {
      return flatIndices[e] >= p.offset && flatIndices[e] < p.offset + p.size;
    });
    if (it == info.end())
      throw std::invalid_argument("modelref: index " + std::to_string(flatIndices[e]) + " is in no tensor");
    tensorOf[e] = size_t(it - info.begin());
  }
  std::vector<Vec> residuals;
  const double loss0 = net.loss(params, tokens, targets, B, T, -1, nullptr, &residuals);

  std::vector<double> grad(flatIndices.size());
  if (errors)
    errors->assign(flatIndices.size(), 0.0);
  unsigned workers =
      std::max(1u, std::min<unsigned>(std::thread::hardware_concurrency(), unsigned(flatIndices.size())));
  std::vector<std::exception_ptr> failures(workers);
  auto work = [&](unsigned w) {
    try {
      Vec x = params;
      for (size_t e = w; e < flatIndices.size(); e += workers) {
        size_t i = flatIndices[e];
        int first = net.stageOf[tensorOf[e]];
        const Vec *start = first >= 0 ? &residuals[size_t(first)] : nullptr;
        const double saved = x[i];
        auto difference = [&](double offset) { // L(x + offset) - L(x - offset)
          x[i] = saved + offset;
          double up = net.loss(x, tokens, targets, B, T, first, start, nullptr);
          x[i] = saved - offset;
          double down = net.loss(x, tokens, targets, B, T, first, start, nullptr);
          x[i] = saved;
          return up - down;
        };
        // The fourth-order central stencil (8 d(s) - d(2s)) / 12s at step s and at 2s: their difference estimates
        // the truncation error of the finer one, and Richardson's (16 D(s) - D(2s)) / 15 is of sixth order. Each
        // halving of s costs two forwards; truncation falls 16-fold per halving once s is small enough, while
        // rounding noise (the loss is good to about an ulp, and the stencil divides that by s) grows 2-fold. So
        // halve while the truncation estimate exceeds the noise, and keep the value of least estimated error. A
        // first step too large for the asymptotic regime (a norm gain's curvature, at 10x weights) shows as an
        // estimate that does not fall yet: up to two such halvings in a row are passed through.
        auto stencil = [](double near, double far, double s) { return (8 * near - far) / (12 * s); };
        auto noise = [&](double at) { return std::abs(loss0) * std::numeric_limits<double>::epsilon() / at; };
        double s = step[tensorOf[e]], d1 = difference(s), d2 = difference(2 * s), d4 = difference(4 * s);
        double fine = stencil(d1, d2, s), coarse = stencil(d2, d4, 2 * s);
        double value = (16 * fine - coarse) / 15, truncation = std::abs(fine - coarse) / 15;
        double best = value, bestError = truncation + noise(s);
        for (int k = 0, worse = 0;
             k < kMaxHalvings && worse < 3 && truncation > std::max(kConverged * std::abs(value), noise(s)); ++k) {
          double half = s / 2, dHalf = difference(half), finer = stencil(dHalf, d1, half);
          value = (16 * finer - fine) / 15;
          truncation = std::abs(finer - fine) / 15;
          fine = finer;
          d1 = dHalf;
          s = half;
          if (truncation + noise(s) < bestError) {
            best = value;
            bestError = truncation + noise(s);
            worse = 0;
          } else {
            ++worse;
          }
        }
        grad[e] = best;
        if (errors)
          (*errors)[e] = bestError;
      }
    } catch (...) {
      failures[w] = std::current_exception();
    }
  };
  std::vector<std::thread> threads;
  for (unsigned w = 1; w < workers; ++w)
    threads.emplace_back(work, w);
  work(0);
  for (std::thread &t : threads)
    t.join();
  for (const std::exception_ptr &f : failures)
    if (f)
      std::rethrow_exception(f);
  return grad;
}

std::vector<size_t> sampleEntries(const std::vector<rt::ParamInfo> &info, size_t perTensor, uint64_t seed) {
  rt::Rng rng(seed);
  std::vector<size_t> out;
  for (const rt::ParamInfo &p : info) {
    std::vector<size_t> chosen;
    if (p.size <= perTensor) {
      for (size_t i = 0; i < p.size; ++i)
        chosen.push_back(i);
    } else {
      while (chosen.size() < perTensor) {
        size_t i = size_t(rng.below(p.size));
        if (std::find(chosen.begin(), chosen.end(), i) == chosen.end())
          chosen.push_back(i);
      }
      std::sort(chosen.begin(), chosen.end());
    }
    for (size_t i : chosen)
      out.push_back(p.offset + i);
  }
  return out;
}

std::vector<TensorError> sampledErrors(const std::vector<rt::ParamInfo> &info, const std::vector<size_t> &flatIndices,
                                       const float *got, const std::vector<double> &ref,
                                       const std::vector<double> *refErrors) {
  if (ref.size() != flatIndices.size() || (refErrors && refErrors->size() != ref.size()))
    throw std::invalid_argument("modelref: one reference value (and error estimate) per sampled index expected");
  std::vector<TensorError> errors;
  for (const rt::ParamInfo &p : info) {
    TensorError e;
    e.name = p.name;
    double num = 0, den = 0, est = 0;
    bool finite = true;
    for (size_t k = 0; k < flatIndices.size(); ++k) {
      if (flatIndices[k] < p.offset || flatIndices[k] >= p.offset + p.size)
        continue;
      ++e.samples;
      double g = got[flatIndices[k]];
      finite = finite && std::isfinite(g);
      num += (g - ref[k]) * (g - ref[k]);
      den += ref[k] * ref[k];
      if (refErrors)
        est += (*refErrors)[k] * (*refErrors)[k];
    }
    e.refRms = e.samples ? std::sqrt(den / double(e.samples)) : 0.0;
    if (!finite)
      e.error = INFINITY;
    else if (den > 0)
      e.error = std::sqrt(num / den);
    else
      e.error = num > 0 ? INFINITY : 0.0;
    e.refError = den > 0 ? std::sqrt(est / den) : est > 0 ? INFINITY : 0.0;
    errors.push_back(e);
  }
  return errors;
}

rt::Config gpuTestConfig(const std::string &variant) {
  rt::Config cfg;
  cfg.variant = variant;
  cfg.ratio = "3:1";
  cfg.layers = 4;
  cfg.width = 64;
  cfg.heads = 2;
  cfg.headDim = 32;
  cfg.seqLen = 100;
  cfg.batch = 3;
  return cfg;
}

} // namespace linac::modelref
