#include "Model.h"

#include "Ops.h"

#include <algorithm>
#include <sstream>

namespace linac::rt {

Weight Parameters::add(const std::string &name, std::vector<int64_t> shape, Init init, double stddev) {
  ParamInfo p;
  p.name = name;
  p.shape = std::move(shape);
  p.size = 1;
  for (int64_t d : p.shape)
    p.size *= size_t(d);
  p.offset = total;
  p.decay = p.shape.size() == 2 && init == Init::Normal;
  total += p.size;
  info.push_back(p);
  inits.emplace_back(init, stddev);
  return Weight{p.offset, p.size};
}

void Parameters::allocate(Rng &rng) {
  values.assign(total, 0.0f);
  grads.assign(total, 0.0f);
  for (size_t i = 0; i < info.size(); ++i) {
    float *v = values.data() + info[i].offset;
    for (size_t j = 0; j < info[i].size; ++j)
      v[j] = inits[i].first == Init::Ones ? 1.0f
             : inits[i].first == Init::Zeros ? 0.0f
                                             : float(rng.normal() * inits[i].second);
  }
}

namespace {

using Init = Parameters::Init;

class LinearAttention : public Mixer {
public:
  LinearAttention(Parameters &p, const std::string &prefix, const KernelInfo &kernel, int width, int heads,
                  int headDim, int shortConv, double outStd)
      : p(p), kernel(kernel), D(width), H(heads), K(headDim), V(headDim), outW(headDim), W(shortConv) {
    for (const InputPlan &plan : planInputs(kernel, K, V)) {
      Input in;
      static_cast<InputPlan &>(in) = plan;
      std::string name = prefix + ".in." + in.name;
      in.w = in.perToken ? p.add(name, {H * in.width, D}, Init::Normal) : p.add(name, {H, in.width}, Init::Normal);
      // Taps drawn like a depthwise Conv1d's default (uniform in +-1/sqrt(W): this standard deviation).
      if (convolved(in))
        in.conv = p.add(name + ".conv", {H * in.width, W}, Init::Normal, 1.0 / std::sqrt(3.0 * W));
      inputs.push_back(in);
    }
    normW = p.add(prefix + ".out_norm", {outW}, Init::Ones);
    outProj = p.add(prefix + ".out_proj", {D, H * outW}, Init::Normal, outStd);
  }

  std::string kind() const override { return kernel.name; }

  void forward(const float *x, float *y, int B_, int T_) override {
    B = B_;
    T = T_;
    int64_t BT = int64_t(B) * T;
    input.assign(x, x + BT * D);
    std::vector<const float *> ptrs;
    for (Input &in : inputs) {
      int64_t rows = in.perToken ? BT * H : H;
      in.pre.resize(rows * in.width);
      if (convolved(in)) {
        // The projection goes to the convolution's input, the convolution to the transform's (pre).
        in.projected.resize(in.pre.size());
        in.convPre.resize(in.pre.size());
        matmulForward(in.projected.data(), x, p.value(in.w), BT, D, H * in.width);
        shortConvForward(in.pre.data(), in.convPre.data(), in.projected.data(), p.value(in.conv), B, T,
                         H * in.width, W);
      } else if (in.perToken) {
        matmulForward(in.pre.data(), x, p.value(in.w), BT, D, H * in.width);
      } else {
        std::copy_n(p.value(in.w), in.pre.size(), in.pre.data());
      }
      in.post.resize(in.pre.size());
      switch (in.transform) {
      case Transform::Plain:
        in.post = in.pre;
        break;
      case Transform::Gate:
        gateForward(in.post.data(), in.pre.data(), int64_t(in.pre.size()));
        break;
      case Transform::Sigmoid:
        sigmoidForward(in.post.data(), in.pre.data(), int64_t(in.pre.size()));
        break;
      case Transform::UnitRows:
        in.invNorm.resize(rows);
        l2normForward(in.post.data(), in.invNorm.data(), in.pre.data(), rows, in.width);
        break;
      }
      ptrs.push_back(in.post.data());
    }
    kernelOut.resize(BT * H * outW);
    kernel.forward(ptrs.data(), kernelOut.data(), nullptr, nullptr, nullptr, B, T, H, K, V, 0.0f);
    normed.resize(kernelOut.size());
    rstd.resize(BT * H);
    rmsnormForward(normed.data(), rstd.data(), kernelOut.data(), p.value(normW), BT * H, outW);
    matmulForward(y, normed.data(), p.value(outProj), BT, H * outW, D);
  }

  void backward(const float *dy, float *dx) override {
    int64_t BT = int64_t(B) * T;
    std::vector<float> dnormed(normed.size(), 0.0f), dkernelOut(kernelOut.size(), 0.0f);
    matmulBackward(dnormed.data(), p.grad(outProj), dy, normed.data(), p.value(outProj), BT, H * outW, D);
    rmsnormBackward(dkernelOut.data(), p.grad(normW), dnormed.data(), kernelOut.data(), p.value(normW), rstd.data(),
                    BT * H, outW);
    std::vector<const float *> ptrs;
    std::vector<std::vector<float>> dpost;
    std::vector<float *> dptrs;
    for (Input &in : inputs) {
      ptrs.push_back(in.post.data());
      dpost.emplace_back(in.post.size());
    }
    for (auto &d : dpost)
      dptrs.push_back(d.data());
    kernel.backward(ptrs.data(), nullptr, dkernelOut.data(), nullptr, dptrs.data(), nullptr, nullptr, B, T, H, K, V,
                    0.0f);
    for (size_t i = 0; i < inputs.size(); ++i) {
      Input &in = inputs[i];
      int64_t n = int64_t(in.pre.size());
      std::vector<float> dpre(n, 0.0f);
      switch (in.transform) {
      case Transform::Plain:
        dpre = dpost[i];
        break;
      case Transform::Gate:
        gateBackward(dpre.data(), dpost[i].data(), in.pre.data(), n);
        break;
      case Transform::Sigmoid:
        sigmoidBackward(dpre.data(), dpost[i].data(), in.post.data(), n);
        break;
      case Transform::UnitRows:
        l2normBackward(dpre.data(), dpost[i].data(), in.post.data(), in.invNorm.data(), n / in.width, in.width);
        break;
      }
      if (convolved(in)) {
        std::vector<float> dprojected(n, 0.0f);
        shortConvBackward(dprojected.data(), p.grad(in.conv), dpre.data(), in.convPre.data(), in.projected.data(),
                          p.value(in.conv), B, T, H * in.width, W);
        dpre.swap(dprojected);
      }
      if (in.perToken)
        matmulBackward(dx, p.grad(in.w), dpre.data(), input.data(), p.value(in.w), BT, D, H * in.width);
      else
        axpy(p.grad(in.w), 1.0f, dpre.data(), n);
    }
  }

private:
  using Transform = InputTransform;
  struct Input : InputPlan {
    Weight w, conv;
    /// pre: the transform's input (the projection, or its short convolution); projected and convPre: the
    /// convolution's input and pre-activation.
    std::vector<float> pre, post, invNorm, projected, convPre;
  };
  bool convolved(const Input &in) const { return W > 0 && in.shortConv; }

  Parameters &p;
  const KernelInfo &kernel;
  /// Keys and values are head_dim wide; the output is V wide (matrix state) or K wide (vector state), both head_dim.
  int64_t D, H, K, V, outW;
  /// Short convolution taps (0: none).
  int64_t W;
  std::vector<Input> inputs;
  Weight normW, outProj;
  int B = 0, T = 0;
  std::vector<float> input, kernelOut, normed, rstd;
};

class SoftmaxAttention : public Mixer {
public:
  SoftmaxAttention(Parameters &p, const std::string &prefix, int width, int heads, int headDim, double outStd)
      : p(p), D(width), H(heads), hd(headDim) {
    qkvW = p.add(prefix + ".qkv", {3 * H * hd, D}, Init::Normal);
    outW = p.add(prefix + ".out_proj", {D, H * hd}, Init::Normal, outStd);
  }

  std::string kind() const override { return "attention"; }

  void forward(const float *x, float *y, int B_, int T_) override {
    B = B_;
    T = T_;
    int64_t BT = int64_t(B) * T, E = H * hd;
    input.assign(x, x + BT * D);
    std::vector<float> qkv(BT * 3 * E);
    matmulForward(qkv.data(), x, p.value(qkvW), BT, D, 3 * E);
    q.resize(BT * E);
    k.resize(BT * E);
    v.resize(BT * E);
    for (int64_t n = 0; n < BT; ++n) {
      std::copy_n(&qkv[n * 3 * E], E, &q[n * E]);
      std::copy_n(&qkv[n * 3 * E + E], E, &k[n * E]);
      std::copy_n(&qkv[n * 3 * E + 2 * E], E, &v[n * E]);
    }
    rope(q.data(), B, T, H, hd, 1);
    rope(k.data(), B, T, H, hd, 1);
    prob.resize(int64_t(B) * H * T * T);
    att.resize(BT * E);
    attentionForward(att.data(), prob.data(), q.data(), k.data(), v.data(), B, T, H, hd);
    matmulForward(y, att.data(), p.value(outW), BT, E, D);
  }

  void backward(const float *dy, float *dx) override {
    int64_t BT = int64_t(B) * T, E = H * hd;
    std::vector<float> datt(BT * E, 0.0f), dq(BT * E, 0.0f), dk(BT * E, 0.0f), dv(BT * E, 0.0f);
    matmulBackward(datt.data(), p.grad(outW), dy, att.data(), p.value(outW), BT, E, D);
    attentionBackward(dq.data(), dk.data(), dv.data(), datt.data(), prob.data(), q.data(), k.data(), v.data(), B, T,
                      H, hd);
    rope(dq.data(), B, T, H, hd, -1);
    rope(dk.data(), B, T, H, hd, -1);
    std::vector<float> dqkv(BT * 3 * E);
    for (int64_t n = 0; n < BT; ++n) {
      std::copy_n(&dq[n * E], E, &dqkv[n * 3 * E]);
      std::copy_n(&dk[n * E], E, &dqkv[n * 3 * E + E]);
      std::copy_n(&dv[n * E], E, &dqkv[n * 3 * E + 2 * E]);
    }
    matmulBackward(dx, p.grad(qkvW), dqkv.data(), input.data(), p.value(qkvW), BT, D, 3 * E);
  }

private:
  Parameters &p;
  int64_t D, H, hd;
  Weight qkvW, outW;
  int B = 0, T = 0;
  std::vector<float> input, q, k, v, prob, att;
};

class SwiGLU : public Mixer {
public:
  SwiGLU(Parameters &p, const std::string &prefix, int width, int hidden, double outStd)
      : p(p), D(width), F(hidden) {
    upW = p.add(prefix + ".gate_up", {2 * F, D}, Init::Normal);
    downW = p.add(prefix + ".down", {D, F}, Init::Normal, outStd);
  }

  std::string kind() const override { return "swiglu"; }

  void forward(const float *x, float *y, int B, int T) override {
    BT = int64_t(B) * T;
    input.assign(x, x + BT * D);
    ab.resize(BT * 2 * F);
    h.resize(BT * F);
    matmulForward(ab.data(), x, p.value(upW), BT, D, 2 * F);
    swigluForward(h.data(), ab.data(), BT, F);
    matmulForward(y, h.data(), p.value(downW), BT, F, D);
  }

  void backward(const float *dy, float *dx) override {
    std::vector<float> dh(BT * F, 0.0f), dab(BT * 2 * F, 0.0f);
    matmulBackward(dh.data(), p.grad(downW), dy, h.data(), p.value(downW), BT, F, D);
    swigluBackward(dab.data(), dh.data(), ab.data(), BT, F);
    matmulBackward(dx, p.grad(upW), dab.data(), input.data(), p.value(upW), BT, D, 2 * F);
  }

private:
  Parameters &p;
  int64_t D, F, BT = 0;
  Weight upW, downW;
  std::vector<float> input, ab, h;
};

/// GPT-2's scaling of the projections that write into the residual stream, so its variance
/// does not grow with depth.
double residualStd(int layers) { return 0.02 / std::sqrt(2.0 * layers); }

} // namespace

std::unique_ptr<Mixer> makeLinearAttention(Parameters &p, const std::string &prefix, const KernelInfo &kernel,
                                           int width, int heads, int headDim, int shortConv) {
  return std::make_unique<LinearAttention>(p, prefix, kernel, width, heads, headDim, shortConv, 0.02);
}
std::unique_ptr<Mixer> makeSoftmaxAttention(Parameters &p, const std::string &prefix, int width, int heads,
                                            int headDim) {
  return std::make_unique<SoftmaxAttention>(p, prefix, width, heads, headDim, 0.02);
}
std::unique_ptr<Mixer> makeSwiGLU(Parameters &p, const std::string &prefix, int width, int hidden) {
  return std::make_unique<SwiGLU>(p, prefix, width, hidden, 0.02);
}

Model::Model(const Config &config, uint64_t seed) : cfg(config) {
  const KernelInfo *kernel = findKernel(cfg.variant);
  if (!kernel)
    throw Error("unknown recurrence '" + cfg.variant + "' (known: " + kernelNames() + ")");
  double outStd = residualStd(cfg.layers);
  embed = params.add("embed", {kVocab, cfg.width}, Init::Normal);
  std::vector<bool> attention = cfg.attentionLayers();
  blocks.resize(cfg.layers);
  for (int l = 0; l < cfg.layers; ++l) {
    Block &b = blocks[l];
    std::string prefix = "layer" + std::to_string(l);
    b.norm1 = params.add(prefix + ".norm1", {cfg.width}, Init::Ones);
    if (attention[l])
      b.mixer = std::make_unique<SoftmaxAttention>(params, prefix + ".attn", cfg.width, cfg.heads, cfg.headDim,
                                                   outStd);
    else
      b.mixer = std::make_unique<LinearAttention>(params, prefix + "." + cfg.variant, *kernel, cfg.width, cfg.heads,
                                                  cfg.headDim, cfg.shortConv, outStd);
    b.norm2 = params.add(prefix + ".norm2", {cfg.width}, Init::Ones);
    b.mlp = std::make_unique<SwiGLU>(params, prefix + ".mlp", cfg.width, cfg.hidden(), outStd);
  }
  finalNorm = params.add("final_norm", {cfg.width}, Init::Ones);
  Rng rng(seed);
  params.allocate(rng);
}

std::string Model::describe() const {
  std::ostringstream out;
  for (size_t l = 0; l < blocks.size(); ++l)
    out << (l ? " " : "") << blocks[l].mixer->kind();
  out << " | " << params.values.size() << " parameters";
  return out.str();
}

void Model::zeroGrad() { std::fill(params.grads.begin(), params.grads.end(), 0.0f); }

double Model::forward(const int32_t *tokensIn, const int32_t *targetsIn, int B_, int T_) {
  B = B_;
  T = T_;
  int64_t BT = int64_t(B) * T, D = cfg.width;
  tokens.assign(tokensIn, tokensIn + BT);
  targets.assign(BT, -1);
  if (targetsIn)
    targets.assign(targetsIn, targetsIn + BT);
  residual.resize(BT * D);
  embeddingForward(residual.data(), tokens.data(), params.value(embed), BT, D);
  std::vector<float> out(BT * D);
  for (Block &b : blocks) {
    b.in = residual;
    b.normed1.resize(BT * D);
    b.rstd1.resize(BT);
    rmsnormForward(b.normed1.data(), b.rstd1.data(), b.in.data(), params.value(b.norm1), BT, D);
    b.mixer->forward(b.normed1.data(), out.data(), B, T);
    b.mid.resize(BT * D);
    for (int64_t i = 0; i < BT * D; ++i)
      b.mid[i] = b.in[i] + out[i];
    b.normed2.resize(BT * D);
    b.rstd2.resize(BT);
    rmsnormForward(b.normed2.data(), b.rstd2.data(), b.mid.data(), params.value(b.norm2), BT, D);
    b.mlp->forward(b.normed2.data(), out.data(), B, T);
    for (int64_t i = 0; i < BT * D; ++i)
      residual[i] = b.mid[i] + out[i];
  }
  finalNormed.resize(BT * D);
  finalRstd.resize(BT);
  rmsnormForward(finalNormed.data(), finalRstd.data(), residual.data(), params.value(finalNorm), BT, D);
  logitsBuf.resize(BT * kVocab);
  matmulForward(logitsBuf.data(), finalNormed.data(), params.value(embed), BT, D, int64_t(kVocab));
  dlogits.resize(BT * kVocab);
  return crossEntropy(dlogits.data(), logitsBuf.data(), targets.data(), BT, int64_t(kVocab));
}

void Model::backward() {
  int64_t BT = int64_t(B) * T, D = cfg.width;
  std::vector<float> dres(BT * D, 0.0f), dnormed(BT * D, 0.0f);
  matmulBackward(dnormed.data(), params.grad(embed), dlogits.data(), finalNormed.data(), params.value(embed), BT, D,
                 int64_t(kVocab));
  rmsnormBackward(dres.data(), params.grad(finalNorm), dnormed.data(), residual.data(), params.value(finalNorm),
                  finalRstd.data(), BT, D);
  for (auto b = blocks.rbegin(); b != blocks.rend(); ++b) {
    // dres is the gradient at the block output; the residual paths pass it through unchanged.
    std::fill(dnormed.begin(), dnormed.end(), 0.0f);
    b->mlp->backward(dres.data(), dnormed.data());
    rmsnormBackward(dres.data(), params.grad(b->norm2), dnormed.data(), b->mid.data(), params.value(b->norm2),
                    b->rstd2.data(), BT, D);
    std::fill(dnormed.begin(), dnormed.end(), 0.0f);
    b->mixer->backward(dres.data(), dnormed.data());
    rmsnormBackward(dres.data(), params.grad(b->norm1), dnormed.data(), b->in.data(), params.value(b->norm1),
                    b->rstd1.data(), BT, D);
  }
  embeddingBackward(params.grad(embed), dres.data(), tokens.data(), BT, D);
}

} // namespace linac::rt
