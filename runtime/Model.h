#ifndef LINAC_RUNTIME_MODEL_H
#define LINAC_RUNTIME_MODEL_H

// A hybrid language model in fp32 on the CPU, forward and hand-written backward:
//
//   x = embed[tokens]
//   per layer:  x += mixer(rmsnorm(x))      mixer: linear attention (a compiled kernel) or softmax attention
//               x += swiglu(rmsnorm(x))
//   logits = rmsnorm(x) * embed^T           (tied head), loss = cross-entropy
//
// Parameters live in one flat buffer (and their gradients in another of the
// same layout), so the optimizer and checkpoints treat them as one vector.

#include "Config.h"
#include "Kernels.h"
#include "Rng.h"

#include <memory>
#include <string>
#include <vector>

namespace linac::rt {

constexpr int kVocab = 256;

struct ParamInfo {
  std::string name;
  std::vector<int64_t> shape;
  size_t offset = 0, size = 0;
  /// Weight decay applies to matrices, not to norm gains or per-head vectors.
  bool decay = false;
};

/// A parameter's place in the flat buffers.
struct Weight {
  size_t offset = 0, size = 0;
};

class Parameters {
public:
  enum class Init { Normal, Ones, Zeros };
  Weight add(const std::string &name, std::vector<int64_t> shape, Init init, double stddev = 0.02);
  /// Sizes the buffers and draws the initial values in declaration order.
  void allocate(Rng &rng);

  float *value(const Weight &w) { return values.data() + w.offset; }
  float *grad(const Weight &w) { return grads.data() + w.offset; }

  std::vector<ParamInfo> info;
  std::vector<float> values, grads;

private:
  std::vector<std::pair<Init, double>> inits;
  size_t total = 0;
};

/// One layer's token mixer: y[B*T, width] = f(x[B*T, width]).
class Mixer {
public:
  virtual ~Mixer() = default;
  virtual void forward(const float *x, float *y, int B, int T) = 0;
  /// Adds dL/dx into dx and the parameter gradients into the model's gradient buffer.
  virtual void backward(const float *dy, float *dx) = 0;
  virtual std::string kind() const = 0;
};

/// The projections feeding a compiled recurrence (with a short convolution of `shortConv` taps, 0 for none), the
/// kernel, a per-head output RMSNorm and the output projection.
std::unique_ptr<Mixer> makeLinearAttention(Parameters &p, const std::string &prefix, const KernelInfo &kernel,
                                           int width, int heads, int headDim, int shortConv = 0);
/// Causal softmax attention with rotary embeddings.
std::unique_ptr<Mixer> makeSoftmaxAttention(Parameters &p, const std::string &prefix, int width, int heads,
                                            int headDim);
/// SwiGLU feed-forward: (silu(x W1) * (x W3)) W2.
std::unique_ptr<Mixer> makeSwiGLU(Parameters &p, const std::string &prefix, int width, int hidden);

class Model {
public:
  Model(const Config &cfg, uint64_t seed);
  Model(const Model &) = delete;
  Model &operator=(const Model &) = delete;

  /// Runs tokens [B, T]; returns the mean cross-entropy against targets [B, T] (negative entries ignored),
  /// or 0 when targets is null. Keeps the activations for backward() and the logits for logits().
  double forward(const int32_t *tokens, const int32_t *targets, int B, int T);
  /// Gradients of the last forward's loss, added to params.grads (call zeroGrad() first).
  void backward();
  void zeroGrad();
  /// [B, T, 256] of the last forward.
  const float *logits() const { return logitsBuf.data(); }
  /// "L0 gated_deltanet, L1 gated_deltanet, L2 gated_deltanet, L3 attention" and the parameter count.
  std::string describe() const;

  Config cfg;
  Parameters params;

private:
  struct Block {
    Weight norm1, norm2;
    std::unique_ptr<Mixer> mixer, mlp;
    std::vector<float> in, normed1, rstd1, mid, normed2, rstd2;
  };
  std::vector<Block> blocks;
  Weight embed, finalNorm;
  int B = 0, T = 0;
  std::vector<int32_t> tokens, targets;
  std::vector<float> residual, finalNormed, finalRstd, logitsBuf, dlogits;
};

} // namespace linac::rt

#endif
