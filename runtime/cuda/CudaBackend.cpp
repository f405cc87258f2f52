#include "CudaBackend.h"

#include "CudaKernels.h"
#include "CudaOps.h"

#include <cmath>
#include <cuda_runtime.h>

namespace linac::rt::cuda {

namespace {

/// The device copies of the flat parameter and gradient buffers, and where each named weight lives in them.
struct DeviceParams {
  const Parameters &host;
  Buffer<float> values, grads;

  explicit DeviceParams(const Parameters &host) : host(host) {}
  Weight find(const std::string &name) const {
    for (const ParamInfo &p : host.info)
      if (p.name == name)
        return Weight{p.offset, p.size};
    throw Error("CUDA backend: the model has no parameter '" + name + "' (layout differs from Model.cpp's)");
  }
  float *value(const Weight &w) const { return values.data() + w.offset; }
  float *grad(const Weight &w) const { return grads.data() + w.offset; }
};

void checkLaunch(CUresult status, const GpuKernel &kernel, const char *what) {
  if (status != CUDA_SUCCESS)
    throw Error("CUDA backend: " + kernel.name + " " + what + ": " + kernel.error());
}

/// A token mixer on device buffers, the GPU twin of Model.h's Mixer.
class GpuMixer {
public:
  virtual ~GpuMixer() = default;
  /// x must stay unchanged until backward().
  virtual void forward(const float *x, float *y, int B, int T) = 0;
  virtual void backward(const float *dy, float *dx) = 0;
};

/// Model.cpp's LinearAttention, op for op.
class LinearAttention : public GpuMixer {
public:
  LinearAttention(DeviceParams &p, const std::string &prefix, const KernelInfo &info, const GpuKernel &kernel,
                  int width, int heads, int headDim, int shortConv)
      : p(p), kernel(kernel), D(width), H(heads), K(headDim), V(headDim), outW(headDim), W(shortConv) {
    for (const InputPlan &plan : planInputs(info, K, V)) {
      auto in = std::make_unique<Input>();
      static_cast<InputPlan &>(*in) = plan;
      in->w = p.find(prefix + ".in." + in->name);
      if (convolved(*in))
        in->conv = p.find(prefix + ".in." + in->name + ".conv");
      inputs.push_back(std::move(in));
    }
    normW = p.find(prefix + ".out_norm");
    outProj = p.find(prefix + ".out_proj");
  }

  void forward(const float *x, float *y, int B_, int T_) override {
    B = B_;
    T = T_;
    input = x;
    int64_t BT = int64_t(B) * T;
    std::vector<CUdeviceptr> ptrs;
    for (auto &in : inputs) {
      int64_t rows = in->perToken ? BT * H : H, n = rows * in->width;
      in->pre.resize(size_t(n));
      if (convolved(*in)) {
        // The projection goes to the convolution's input, the convolution to the transform's (pre).
        in->projected.resize(size_t(n));
        in->convPre.resize(size_t(n));
        matmulForward(in->projected.data(), x, p.value(in->w), BT, D, H * in->width);
        shortConvForward(in->pre.data(), in->convPre.data(), in->projected.data(), p.value(in->conv), B, T,
                         H * in->width, W);
      } else if (in->perToken) {
        matmulForward(in->pre.data(), x, p.value(in->w), BT, D, H * in->width);
      } else {
        cudaMemcpy(in->pre.data(), p.value(in->w), size_t(n) * sizeof(float), cudaMemcpyDeviceToDevice);
      }
      in->post.resize(size_t(n));
      switch (in->transform) {
      case Transform::Plain:
        cudaMemcpy(in->post.data(), in->pre.data(), size_t(n) * sizeof(float), cudaMemcpyDeviceToDevice);
        break;
      case Transform::Gate:
        gateForward(in->post.data(), in->pre.data(), n);
        break;
      case Transform::Sigmoid:
        sigmoidForward(in->post.data(), in->pre.data(), n);
        break;
      case Transform::UnitRows:
        in->invNorm.resize(size_t(rows));
        l2normForward(in->post.data(), in->invNorm.data(), in->pre.data(), rows, in->width);
        break;
      }
      ptrs.push_back(CUdeviceptr(in->post.data()));
    }
    check("linear attention inputs");
    kernelOut.resize(size_t(BT * H * outW));
    // The training pair: the forward keeps each chunk's initial state for the backward (which then does not
    // recompute them).
    saved.resize(kernel.savedFloats(B, T, H, K, V, 0));
    checkLaunch(kernel.forwardSaving(nullptr, ptrs.data(), CUdeviceptr(kernelOut.data()), 0, 0, 0, B, T, H, K, V,
                                     0.0f, CUdeviceptr(saved.data())),
                kernel, "forward");
    normed.resize(kernelOut.size());
    rstd.resize(size_t(BT * H));
    rmsnormForward(normed.data(), rstd.data(), kernelOut.data(), p.value(normW), BT * H, outW);
    matmulForward(y, normed.data(), p.value(outProj), BT, H * outW, D);
  }

  void backward(const float *dy, float *dx) override {
    int64_t BT = int64_t(B) * T;
    dnormed.resize(normed.size());
    dnormed.zero();
    dkernelOut.resize(kernelOut.size());
    dkernelOut.zero();
    matmulBackward(dnormed.data(), p.grad(outProj), dy, normed.data(), p.value(outProj), BT, H * outW, D);
    rmsnormBackward(dkernelOut.data(), p.grad(normW), dnormed.data(), kernelOut.data(), p.value(normW), rstd.data(),
                    BT * H, outW);
    std::vector<CUdeviceptr> ptrs, dptrs;
    for (auto &in : inputs) {
      in->dpost.resize(in->post.size());
      ptrs.push_back(CUdeviceptr(in->post.data()));
      dptrs.push_back(CUdeviceptr(in->dpost.data()));
    }
    checkLaunch(kernel.backwardSaved(nullptr, ptrs.data(), 0, CUdeviceptr(dkernelOut.data()), 0, dptrs.data(), 0, 0,
                                     B, T, H, K, V, 0.0f, CUdeviceptr(saved.data())),
                kernel, "backward");
    for (auto &in : inputs) {
      int64_t n = int64_t(in->pre.size());
      in->dpre.resize(size_t(n));
      in->dpre.zero();
      switch (in->transform) {
      case Transform::Plain:
        add(in->dpre.data(), in->dpre.data(), in->dpost.data(), n);
        break;
      case Transform::Gate:
        gateBackward(in->dpre.data(), in->dpost.data(), in->pre.data(), n);
        break;
      case Transform::Sigmoid:
        sigmoidBackward(in->dpre.data(), in->dpost.data(), in->post.data(), n);
        break;
      case Transform::UnitRows:
        l2normBackward(in->dpre.data(), in->dpost.data(), in->post.data(), in->invNorm.data(), n / in->width,
                       in->width);
        break;
      }
      if (convolved(*in)) {
        in->dprojected.resize(size_t(n));
        in->dprojected.zero();
        in->convScratch.resize(size_t(n));
        shortConvBackward(in->dprojected.data(), p.grad(in->conv), in->convScratch.data(), in->dpre.data(),
                          in->convPre.data(), in->projected.data(), p.value(in->conv), B, T, H * in->width, W);
      }
      // The gradient of the projection: through the convolution where there is one.
      const float *dProjection = convolved(*in) ? in->dprojected.data() : in->dpre.data();
      if (in->perToken)
        matmulBackward(dx, p.grad(in->w), dProjection, input, p.value(in->w), BT, D, H * in->width);
      else
        add(p.grad(in->w), p.grad(in->w), dProjection, n);
    }
  }

private:
  using Transform = InputTransform;
  struct Input : InputPlan {
    Weight w, conv;
    Buffer<float> pre, post, invNorm, dpost, dpre, projected, convPre, dprojected, convScratch;
  };
  bool convolved(const Input &in) const { return W > 0 && in.shortConv; }

  DeviceParams &p;
  const GpuKernel &kernel;
  int64_t D, H, K, V, outW, W;
  std::vector<std::unique_ptr<Input>> inputs;
  Weight normW, outProj;
  int B = 0, T = 0;
  const float *input = nullptr;
  Buffer<float> kernelOut, normed, rstd, dnormed, dkernelOut;
  /// The forward's boundary states for the backward (the training pair; empty where the kernel saves none).
  Buffer<float> saved;
};

/// Model.cpp's SoftmaxAttention.
class SoftmaxAttention : public GpuMixer {
public:
  SoftmaxAttention(DeviceParams &p, const std::string &prefix, int width, int heads, int headDim)
      : p(p), D(width), H(heads), hd(headDim) {
    qkvW = p.find(prefix + ".qkv");
    outW = p.find(prefix + ".out_proj");
  }

  void forward(const float *x, float *y, int B_, int T_) override {
    B = B_;
    T = T_;
    input = x;
    int64_t BT = int64_t(B) * T, E = H * hd;
    if (ropeT != T) {
      ropeTable(cosSin, T, hd);
      ropeT = T;
    }
    qkv.resize(size_t(BT * 3 * E));
    matmulForward(qkv.data(), x, p.value(qkvW), BT, D, 3 * E);
    for (Buffer<float> *b : {&q, &k, &v})
      b->resize(size_t(BT * E));
    gatherColumns(q.data(), qkv.data(), BT, 3 * E, 0, E);
    gatherColumns(k.data(), qkv.data(), BT, 3 * E, E, E);
    gatherColumns(v.data(), qkv.data(), BT, 3 * E, 2 * E, E);
    rope(q.data(), cosSin.data(), B, T, H, hd, 1);
    rope(k.data(), cosSin.data(), B, T, H, hd, 1);
    prob.resize(size_t(int64_t(B) * H * T * T));
    att.resize(size_t(BT * E));
    attentionForward(att.data(), prob.data(), q.data(), k.data(), v.data(), B, T, H, hd);
    matmulForward(y, att.data(), p.value(outW), BT, E, D);
  }

  void backward(const float *dy, float *dx) override {
    int64_t BT = int64_t(B) * T, E = H * hd;
    for (Buffer<float> *b : {&datt, &dq, &dk, &dv}) {
      b->resize(size_t(BT * E));
      b->zero();
    }
    dscore.resize(prob.size());
    matmulBackward(datt.data(), p.grad(outW), dy, att.data(), p.value(outW), BT, E, D);
    attentionBackward(dq.data(), dk.data(), dv.data(), dscore.data(), datt.data(), prob.data(), q.data(), k.data(),
                      v.data(), B, T, H, hd);
    rope(dq.data(), cosSin.data(), B, T, H, hd, -1);
    rope(dk.data(), cosSin.data(), B, T, H, hd, -1);
    dqkv.resize(size_t(BT * 3 * E));
    dqkv.zero();
    scatterColumns(dqkv.data(), dq.data(), BT, 3 * E, 0, E);
    scatterColumns(dqkv.data(), dk.data(), BT, 3 * E, E, E);
    scatterColumns(dqkv.data(), dv.data(), BT, 3 * E, 2 * E, E);
    matmulBackward(dx, p.grad(qkvW), dqkv.data(), input, p.value(qkvW), BT, D, 3 * E);
  }

private:
  DeviceParams &p;
  int64_t D, H, hd;
  Weight qkvW, outW;
  int B = 0, T = 0, ropeT = -1;
  const float *input = nullptr;
  Buffer<float> cosSin, qkv, q, k, v, prob, att, datt, dq, dk, dv, dscore, dqkv;
};

/// Model.cpp's SwiGLU.
class SwiGLU : public GpuMixer {
public:
  SwiGLU(DeviceParams &p, const std::string &prefix, int width, int hidden) : p(p), D(width), F(hidden) {
    upW = p.find(prefix + ".gate_up");
    downW = p.find(prefix + ".down");
  }

  void forward(const float *x, float *y, int B, int T) override {
    BT = int64_t(B) * T;
    input = x;
    ab.resize(size_t(BT * 2 * F));
    h.resize(size_t(BT * F));
    matmulForward(ab.data(), x, p.value(upW), BT, D, 2 * F);
    swigluForward(h.data(), ab.data(), BT, F);
    matmulForward(y, h.data(), p.value(downW), BT, F, D);
  }

  void backward(const float *dy, float *dx) override {
    dh.resize(size_t(BT * F));
    dh.zero();
    dab.resize(size_t(BT * 2 * F));
    dab.zero();
    matmulBackward(dh.data(), p.grad(downW), dy, h.data(), p.value(downW), BT, F, D);
    swigluBackward(dab.data(), dh.data(), ab.data(), BT, F);
    matmulBackward(dx, p.grad(upW), dab.data(), input, p.value(upW), BT, D, 2 * F);
  }

private:
  DeviceParams &p;
  int64_t D, F, BT = 0;
  Weight upW, downW;
  const float *input = nullptr;
  Buffer<float> ab, h, dh, dab;
};

} // namespace

struct CudaBackend::Impl {
  Model &model;
  const Config &cfg;
  DeviceParams params;
  Buffer<float> m, v;
  Buffer<double> normSquared;

  struct Block {
    Weight norm1, norm2;
    std::unique_ptr<GpuMixer> mixer, mlp;
    Buffer<float> in, normed1, rstd1, mid, normed2, rstd2;
  };
  std::vector<Block> blocks;
  Weight embed, finalNorm;
  int B = 0, T = 0;
  int64_t counted = 0;
  Buffer<int32_t> tokens, targets;
  Buffer<float> residual, out, finalNormed, finalRstd, logits, dlogits, lossRows, dres, dnormed;
  std::vector<float> hostLogits, hostLoss;

  Impl(Model &model, const TrainState &state) : model(model), cfg(model.cfg), params(model.params) {
    const KernelInfo *info = findKernel(cfg.variant);
    const GpuKernel *kernel = cfg.gpuKernelLibrary.empty() ? findGpuKernel(cfg.variant)
                                                           : loadGpuKernelLibrary(cfg.gpuKernelLibrary, cfg.variant);
    if (!info || !kernel)
      throw Error("device = cuda: recurrence '" + cfg.variant +
                  "' has no GPU kernel (built in: the examples; others need gpu_kernel_library = a linacc "
                  "--target=cuda --shared library)");
    // The runtime API's first call makes the device's primary context current, which the driver-API
    // launchers then use.
    cudaFree(nullptr);
    check("CUDA initialisation");
    setMatmulPrecision(cfg.precision == "bf16");
    params.values.upload(model.params.values.data(), model.params.values.size());
    params.grads.resize(model.params.values.size());
    m.upload(state.m.data(), state.m.size());
    v.upload(state.v.data(), state.v.size());
    normSquared.resize(1);
    embed = params.find("embed");
    finalNorm = params.find("final_norm");
    std::vector<bool> attention = cfg.attentionLayers();
    blocks.resize(size_t(cfg.layers));
    for (int l = 0; l < cfg.layers; ++l) {
      Block &b = blocks[size_t(l)];
      std::string prefix = "layer" + std::to_string(l);
      b.norm1 = params.find(prefix + ".norm1");
      b.norm2 = params.find(prefix + ".norm2");
      if (attention[size_t(l)])
        b.mixer = std::make_unique<SoftmaxAttention>(params, prefix + ".attn", cfg.width, cfg.heads, cfg.headDim);
      else
        b.mixer = std::make_unique<LinearAttention>(params, prefix + "." + cfg.variant, *info, *kernel, cfg.width,
                                                    cfg.heads, cfg.headDim, cfg.shortConv);
      b.mlp = std::make_unique<SwiGLU>(params, prefix + ".mlp", cfg.width, cfg.hidden());
    }
  }

  /// Model::forward: the mean cross-entropy, activations kept for backward(), logits left on the device.
  double forward(const int32_t *tokensIn, const int32_t *targetsIn, int B_, int T_) {
    B = B_;
    T = T_;
    int64_t BT = int64_t(B) * T, D = cfg.width;
    tokens.upload(tokensIn, size_t(BT));
    std::vector<int32_t> hostTargets(size_t(BT), -1);
    if (targetsIn)
      hostTargets.assign(targetsIn, targetsIn + BT);
    targets.upload(hostTargets.data(), size_t(BT));
    counted = 0;
    for (int32_t t : hostTargets)
      counted += t >= 0;
    residual.resize(size_t(BT * D));
    out.resize(size_t(BT * D));
    embeddingForward(residual.data(), tokens.data(), params.value(embed), BT, D);
    for (Block &b : blocks) {
      for (Buffer<float> *buf : {&b.in, &b.normed1, &b.mid, &b.normed2})
        buf->resize(size_t(BT * D));
      b.rstd1.resize(size_t(BT));
      b.rstd2.resize(size_t(BT));
      cudaMemcpy(b.in.data(), residual.data(), size_t(BT * D) * sizeof(float), cudaMemcpyDeviceToDevice);
      rmsnormForward(b.normed1.data(), b.rstd1.data(), b.in.data(), params.value(b.norm1), BT, D);
      b.mixer->forward(b.normed1.data(), out.data(), B, T);
      add(b.mid.data(), b.in.data(), out.data(), BT * D);
      rmsnormForward(b.normed2.data(), b.rstd2.data(), b.mid.data(), params.value(b.norm2), BT, D);
      b.mlp->forward(b.normed2.data(), out.data(), B, T);
      add(residual.data(), b.mid.data(), out.data(), BT * D);
    }
    finalNormed.resize(size_t(BT * D));
    finalRstd.resize(size_t(BT));
    rmsnormForward(finalNormed.data(), finalRstd.data(), residual.data(), params.value(finalNorm), BT, D);
    logits.resize(size_t(BT * kVocab));
    matmulForward(logits.data(), finalNormed.data(), params.value(embed), BT, D, kVocab);
    dlogits.resize(logits.size());
    lossRows.resize(size_t(BT));
    crossEntropy(dlogits.data(), lossRows.data(), logits.data(), targets.data(), BT, kVocab, std::max<int64_t>(1, counted));
    hostLoss.resize(size_t(BT));
    lossRows.download(hostLoss.data(), hostLoss.size());
    double loss = 0;
    for (float l : hostLoss)
      loss += l;
    return counted ? loss / double(counted) : 0.0;
  }

  /// Model::backward, adding into params.grads.
  void backward() {
    int64_t BT = int64_t(B) * T, D = cfg.width;
    dres.resize(size_t(BT * D));
    dres.zero();
    dnormed.resize(size_t(BT * D));
    dnormed.zero();
    matmulBackward(dnormed.data(), params.grad(embed), dlogits.data(), finalNormed.data(), params.value(embed), BT, D,
                   kVocab);
    rmsnormBackward(dres.data(), params.grad(finalNorm), dnormed.data(), residual.data(), params.value(finalNorm),
                    finalRstd.data(), BT, D);
    for (auto b = blocks.rbegin(); b != blocks.rend(); ++b) {
      dnormed.zero();
      b->mlp->backward(dres.data(), dnormed.data());
      rmsnormBackward(dres.data(), params.grad(b->norm2), dnormed.data(), b->mid.data(), params.value(b->norm2),
                      b->rstd2.data(), BT, D);
      dnormed.zero();
      b->mixer->backward(dres.data(), dnormed.data());
      rmsnormBackward(dres.data(), params.grad(b->norm1), dnormed.data(), b->in.data(), params.value(b->norm1),
                      b->rstd1.data(), BT, D);
    }
    embeddingBackward(params.grad(embed), dres.data(), tokens.data(), BT, D);
  }

  double lossAndGradients(const int32_t *tokensIn, const int32_t *targetsIn, int B_, int T_) {
    params.grads.zero();
    double loss = forward(tokensIn, targetsIn, B_, T_);
    backward();
    return loss;
  }

  /// Train.cpp's clipGradients + adamwStep: the global norm in double, the clip factor folded into AdamW.
  double step(double lr, int step) {
    size_t n = params.grads.size();
    normSquared.zero();
    sumSquares(normSquared.data(), params.grads.data(), int64_t(n));
    double sum = 0;
    normSquared.download(&sum, 1);
    double norm = std::sqrt(sum);
    float scale = cfg.gradClip > 0 && norm > cfg.gradClip ? float(cfg.gradClip / norm) : 1.0f;
    double c1 = 1.0 - std::pow(0.9, step), c2 = 1.0 - std::pow(0.95, step);
    for (const ParamInfo &p : model.params.info)
      adamw(params.values.data() + p.offset, m.data() + p.offset, v.data() + p.offset,
            params.grads.data() + p.offset, int64_t(p.size), scale, lr, p.decay ? cfg.weightDecay : 0.0, c1, c2);
    return norm;
  }
};

CudaBackend::CudaBackend(Model &model, const TrainState &state) : impl(std::make_unique<Impl>(model, state)) {}
CudaBackend::~CudaBackend() = default;

Model &CudaBackend::model() { return impl->model; }

double CudaBackend::forward(const int32_t *tokens, const int32_t *targets, int B, int T) {
  double loss = impl->forward(tokens, targets, B, T);
  impl->hostLogits.resize(impl->logits.size());
  impl->logits.download(impl->hostLogits.data(), impl->hostLogits.size());
  return loss;
}

const float *CudaBackend::logits() { return impl->hostLogits.data(); }

double CudaBackend::trainStep(const int32_t *tokens, const int32_t *targets, int B, int T, double lr, int step,
                              TrainState &, double &gradNorm) {
  RankBatch part = rankBatch(reducer, tokens, targets, B, T);
  double loss = impl->lossAndGradients(part.tokens, part.targets, part.rows, T);
  if (reducer) {
    // Data parallelism through host copies of the gradients (ranks in processes, sharing a GPU or not).
    std::vector<float> grads(impl->params.grads.size());
    impl->params.grads.download(grads.data(), grads.size());
    reduceGradients(*reducer, grads.data(), grads.size(), loss, part.scored);
    impl->params.grads.upload(grads.data(), grads.size());
  }
  gradNorm = impl->step(lr, step);
  return loss;
}

void CudaBackend::sync(TrainState &state) {
  Parameters &host = impl->model.params;
  impl->params.values.download(host.values.data(), host.values.size());
  state.m.resize(host.values.size());
  state.v.resize(host.values.size());
  impl->m.download(state.m.data(), state.m.size());
  impl->v.download(state.v.data(), state.v.size());
}

double CudaBackend::lossAndGradients(const int32_t *tokens, const int32_t *targets, int B, int T,
                                     std::vector<float> &grads) {
  double loss = impl->lossAndGradients(tokens, targets, B, T);
  grads.resize(impl->params.grads.size());
  impl->params.grads.download(grads.data(), grads.size());
  return loss;
}

std::unique_ptr<Backend> makeCudaBackend(Model &model, const TrainState &state) {
  return std::make_unique<CudaBackend>(model, state);
}

} // namespace linac::rt::cuda
