// Runtime tests: every layer's backward against central finite differences, the
// whole model's gradient, training, checkpoints, and the error paths.
//
// The dense ops run in double (step 1e-6, agreement to ~1e-7). The linear-attention
// layer and the model call fp32 kernels, so they run in fp32: weights scaled up to
// O(0.1 .. 1), steps 2e-3 and 1e-3 combined by Richardson extrapolation (fp32 rounding
// over such a step is ~1e-3 of the gradient), and a bound of 1e-2 .. 2e-2.

#include "runtime/Eval.h"
#include "runtime/Ops.h"
#include "runtime/Train.h"
#include "runtime/test/TrainerRuns.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>

using namespace linac::rt;

namespace {

std::vector<double> randn(Rng &rng, size_t n, double scale = 1.0) {
  std::vector<double> x(n);
  for (double &v : x)
    v = rng.normal() * scale;
  return x;
}

double sumProduct(const std::vector<double> &a, const std::vector<double> &b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i)
    s += a[i] * b[i];
  return s;
}

/// rms(fd - analytic) / rms(analytic) over every entry of x, by central differences of `loss`.
double gradientError(std::vector<double> &x, const std::vector<double> &analytic, const std::function<double()> &loss,
                     double h = 1e-6) {
  double num = 0, den = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    double saved = x[i];
    x[i] = saved + h;
    double up = loss();
    x[i] = saved - h;
    double down = loss();
    x[i] = saved;
    double fd = (up - down) / (2 * h);
    num += (fd - analytic[i]) * (fd - analytic[i]);
    den += analytic[i] * analytic[i];
  }
  return std::sqrt(num / den);
}

constexpr double kDoubleTol = 1e-6;

TEST(OpsBackward, Matmul) {
  Rng rng(1);
  const int N = 5, C = 7, OC = 3;
  auto x = randn(rng, N * C), w = randn(rng, OC * C), r = randn(rng, N * OC);
  std::vector<double> y(N * OC), dx(N * C, 0), dw(OC * C, 0);
  auto loss = [&] {
    matmulForward(y.data(), x.data(), w.data(), N, C, OC);
    return sumProduct(y, r);
  };
  matmulBackward(dx.data(), dw.data(), r.data(), x.data(), w.data(), N, C, OC);
  EXPECT_LT(gradientError(x, dx, loss), kDoubleTol);
  EXPECT_LT(gradientError(w, dw, loss), kDoubleTol);
}

TEST(OpsBackward, RMSNorm) {
  Rng rng(2);
  const int N = 4, C = 9;
  auto x = randn(rng, N * C), w = randn(rng, C), r = randn(rng, N * C);
  std::vector<double> y(N * C), rstd(N), dx(N * C, 0), dw(C, 0);
  auto loss = [&] {
    rmsnormForward(y.data(), rstd.data(), x.data(), w.data(), N, C);
    return sumProduct(y, r);
  };
  loss();
  rmsnormBackward(dx.data(), dw.data(), r.data(), x.data(), w.data(), rstd.data(), N, C);
  EXPECT_LT(gradientError(x, dx, loss), kDoubleTol);
  EXPECT_LT(gradientError(w, dw, loss), kDoubleTol);
}

TEST(OpsBackward, Embedding) {
  Rng rng(3);
  const int N = 6, C = 4, V = 5;
  std::vector<int32_t> tokens = {0, 3, 3, 4, 1, 3};
  auto table = randn(rng, V * C), r = randn(rng, N * C);
  std::vector<double> y(N * C), dtable(V * C, 0);
  auto loss = [&] {
    embeddingForward(y.data(), tokens.data(), table.data(), N, C);
    return sumProduct(y, r);
  };
  embeddingBackward(dtable.data(), r.data(), tokens.data(), N, C);
  EXPECT_LT(gradientError(table, dtable, loss), kDoubleTol);
}

TEST(OpsBackward, ElementwiseTransforms) {
  Rng rng(4);
  const int N = 3, C = 6;
  auto z = randn(rng, N * C, 3.0), r = randn(rng, N * C);
  std::vector<double> y(N * C), aux(N);
  auto check = [&](auto forward, auto backward) {
    std::vector<double> dz(N * C, 0);
    auto loss = [&] {
      forward();
      return sumProduct(y, r);
    };
    loss();
    backward(dz);
    EXPECT_LT(gradientError(z, dz, loss), kDoubleTol);
  };
  check([&] { gateForward(y.data(), z.data(), N * C); },
        [&](std::vector<double> &dz) { gateBackward(dz.data(), r.data(), z.data(), N * C); });
  check([&] { sigmoidForward(y.data(), z.data(), N * C); },
        [&](std::vector<double> &dz) { sigmoidBackward(dz.data(), r.data(), y.data(), N * C); });
  check([&] { l2normForward(y.data(), aux.data(), z.data(), N, C); },
        [&](std::vector<double> &dz) { l2normBackward(dz.data(), r.data(), y.data(), aux.data(), N, C); });
  for (double g : (gateForward(y.data(), z.data(), N * C), y))
    EXPECT_LE(g, 0.0);
}

TEST(OpsBackward, SwiGLU) {
  Rng rng(5);
  const int N = 4, F = 5;
  auto ab = randn(rng, N * 2 * F), r = randn(rng, N * F);
  std::vector<double> h(N * F), dab(N * 2 * F, 0);
  auto loss = [&] {
    swigluForward(h.data(), ab.data(), N, F);
    return sumProduct(h, r);
  };
  swigluBackward(dab.data(), r.data(), ab.data(), N, F);
  EXPECT_LT(gradientError(ab, dab, loss), kDoubleTol);
}

TEST(OpsBackward, AttentionWithRope) {
  Rng rng(6);
  const int B = 2, T = 5, H = 2, D = 4, n = B * T * H * D;
  auto q = randn(rng, n), k = randn(rng, n), v = randn(rng, n), r = randn(rng, n);
  std::vector<double> out(n), prob(B * H * T * T), qr, kr;
  auto loss = [&] {
    qr = q;
    kr = k;
    rope(qr.data(), B, T, H, D, 1);
    rope(kr.data(), B, T, H, D, 1);
    attentionForward(out.data(), prob.data(), qr.data(), kr.data(), v.data(), B, T, H, D);
    return sumProduct(out, r);
  };
  loss();
  std::vector<double> dq(n, 0), dk(n, 0), dv(n, 0);
  attentionBackward(dq.data(), dk.data(), dv.data(), r.data(), prob.data(), qr.data(), kr.data(), v.data(), B, T, H,
                    D);
  rope(dq.data(), B, T, H, D, -1);
  rope(dk.data(), B, T, H, D, -1);
  EXPECT_LT(gradientError(q, dq, loss), kDoubleTol);
  EXPECT_LT(gradientError(k, dk, loss), kDoubleTol);
  EXPECT_LT(gradientError(v, dv, loss), kDoubleTol);
}

TEST(OpsBackward, CrossEntropyIgnoresNegativeTargets) {
  Rng rng(7);
  const int N = 4, V = 6;
  auto logits = randn(rng, N * V);
  std::vector<int32_t> targets = {2, -1, 5, 0};
  std::vector<double> dlogits(N * V);
  auto loss = [&] { return crossEntropy<double>(nullptr, logits.data(), targets.data(), N, V); };
  crossEntropy(dlogits.data(), logits.data(), targets.data(), N, V);
  EXPECT_LT(gradientError(logits, dlogits, loss), kDoubleTol);
  for (int c = 0; c < V; ++c)
    EXPECT_EQ(dlogits[V + c], 0.0);
}

/// fp32 central differences of loss() over the entries `which` of a float buffer, Richardson-extrapolated
/// from steps h and h / 2 ((4 D(h/2) - D(h)) / 3 cancels the h^2 term): the RMSNorm after a kernel is strongly
/// curved where a head's output is small, and fp32 rounding rules out steps much below 1e-3.
double gradientErrorF32(float *x, const float *analytic, const std::vector<size_t> &which,
                        const std::function<double()> &loss, float h) {
  auto central = [&](size_t i, float step) {
    float saved = x[i];
    x[i] = saved + step;
    double up = loss();
    x[i] = saved - step;
    double down = loss();
    x[i] = saved;
    return (up - down) / (double(saved + step) - double(saved - step));
  };
  double num = 0, den = 0;
  for (size_t i : which) {
    double fd = (4 * central(i, h / 2) - central(i, h)) / 3;
    num += (fd - analytic[i]) * (fd - analytic[i]);
    den += double(analytic[i]) * analytic[i];
  }
  return std::sqrt(num / den);
}

std::vector<size_t> everyNth(size_t n, size_t count) {
  std::vector<size_t> idx;
  for (size_t i = 0; i < n; i += std::max<size_t>(1, n / count))
    idx.push_back(i);
  return idx;
}

TEST(OpsBackward, ShortConvolution) {
  Rng rng(13);
  const int B = 2, T = 6, C = 3, W = 4;
  auto x = randn(rng, B * T * C), w = randn(rng, C * W, 0.5), r = randn(rng, B * T * C);
  std::vector<double> y(B * T * C), pre(B * T * C), dx(B * T * C), dw(C * W);
  auto loss = [&] {
    shortConvForward(y.data(), pre.data(), x.data(), w.data(), B, T, C, W);
    return sumProduct(y, r);
  };
  loss();
  shortConvBackward(dx.data(), dw.data(), r.data(), pre.data(), x.data(), w.data(), B, T, C, W);
  EXPECT_LT(gradientError(x, dx, loss), kDoubleTol);
  EXPECT_LT(gradientError(w, dw, loss), kDoubleTol);
  // Causal and per sequence: the first token of the second sequence sees nothing of the first.
  std::vector<double> y2 = y;
  x[(T - 1) * C] += 1.0;
  loss();
  EXPECT_EQ(y[T * C], y2[T * C]);
  EXPECT_NE(y[(T - 1) * C], y2[(T - 1) * C]);
}

class LinearAttentionBackward : public ::testing::TestWithParam<std::tuple<std::string, int>> {};

TEST_P(LinearAttentionBackward, MatchesFiniteDifferences) {
  const KernelInfo *kernel = findKernel(std::get<0>(GetParam()));
  ASSERT_NE(kernel, nullptr);
  // T = 19: not a multiple of the chunk size, so the tail chunk is exercised.
  const int B = 2, T = 19, D = 12, H = 2, K = 8;
  Parameters params;
  std::unique_ptr<Mixer> layer = makeLinearAttention(params, "la", *kernel, D, H, K, std::get<1>(GetParam()));
  Rng rng(11);
  params.allocate(rng);
  for (float &w : params.values)
    w = float(rng.normal() * 0.4);
  std::vector<float> x(B * T * D), y(B * T * D), dx(B * T * D, 0.0f), r(B * T * D);
  for (float &v : x)
    v = float(rng.normal());
  for (float &v : r)
    v = float(rng.normal());
  auto loss = [&] {
    layer->forward(x.data(), y.data(), B, T);
    double s = 0;
    for (size_t i = 0; i < y.size(); ++i)
      s += double(y[i]) * r[i];
    return s;
  };
  loss();
  layer->backward(r.data(), dx.data());
  EXPECT_LT(gradientErrorF32(x.data(), dx.data(), everyNth(x.size(), 40), loss, 2e-3f), 2e-2) << "input";
  for (const ParamInfo &p : params.info) {
    std::vector<size_t> idx;
    for (size_t i : everyNth(p.size, 24))
      idx.push_back(p.offset + i);
    EXPECT_LT(gradientErrorF32(params.values.data(), params.grads.data(), idx, loss, 2e-3f), 2e-2) << p.name;
  }
}

// Each kernel without and with a 4-tap short convolution on its q, k, v-like inputs.
INSTANTIATE_TEST_SUITE_P(Kernels, LinearAttentionBackward,
                         ::testing::Combine(::testing::Values("hgrn", "retnet", "simple_gla", "gla", "hgrn2", "rwkv6",
                                                              "deltanet", "gated_deltanet"),
                                            ::testing::Values(0, 4)));

TEST(SoftmaxAttentionLayer, MatchesFiniteDifferences) {
  const int B = 2, T = 7, D = 8, H = 2, K = 4;
  Parameters params;
  std::unique_ptr<Mixer> layer = makeSoftmaxAttention(params, "attn", D, H, K);
  Rng rng(12);
  params.allocate(rng);
  for (float &w : params.values)
    w = float(rng.normal() * 0.4);
  std::vector<float> x(B * T * D), y(B * T * D), dx(B * T * D, 0.0f), r(B * T * D);
  for (float &v : x)
    v = float(rng.normal());
  for (float &v : r)
    v = float(rng.normal());
  auto loss = [&] {
    layer->forward(x.data(), y.data(), B, T);
    double s = 0;
    for (size_t i = 0; i < y.size(); ++i)
      s += double(y[i]) * r[i];
    return s;
  };
  loss();
  layer->backward(r.data(), dx.data());
  EXPECT_LT(gradientErrorF32(x.data(), dx.data(), everyNth(x.size(), 40), loss, 1e-2f), 1e-2);
  EXPECT_LT(gradientErrorF32(params.values.data(), params.grads.data(), everyNth(params.values.size(), 60), loss,
                             1e-2f),
            1e-2);
}

Config tinyConfig(const std::string &variant, const std::string &ratio) {
  return parseConfig("variant = " + variant + "\nratio = " + ratio +
                         "\nlayers = 2\nwidth = 16\nheads = 2\nhead_dim = 8\nseq_len = 24\nbatch = 2\n"
                         "steps = 6\nwarmup = 2\nlr = 1e-2\neval_every = 0\nval_batches = 2\n",
                     "tiny.cfg");
}

TEST(ModelGradient, HybridMatchesFiniteDifferences) {
  Config cfg = tinyConfig("gated_deltanet", "1:1");
  Model model(cfg, 3);
  ASSERT_EQ(model.describe().substr(0, 25), "gated_deltanet attention ");
  // Larger weights than the 0.02 initialisation give gradients far above fp32 rounding.
  for (float &w : model.params.values)
    w *= 10.0f;
  Rng rng(4);
  const int B = 2, T = 11;
  std::vector<int32_t> tokens(B * T), targets(B * T);
  for (int i = 0; i < B * T; ++i) {
    tokens[i] = int32_t(rng.below(kVocab));
    targets[i] = int32_t(rng.below(kVocab));
  }
  auto loss = [&] { return model.forward(tokens.data(), targets.data(), B, T); };
  model.zeroGrad();
  loss();
  model.backward();
  // A few entries of every parameter tensor.
  std::vector<size_t> idx;
  for (const ParamInfo &p : model.params.info)
    for (size_t i : everyNth(p.size, 3))
      idx.push_back(p.offset + i);
  EXPECT_LT(gradientErrorF32(model.params.values.data(), model.params.grads.data(), idx, loss, 2e-3f), 2e-2);
}

/// The shards live in the test's working directory; built on first use.
const Shard &trainShard() {
  static std::string line = prepareShards("data");
  static Shard shard("data/train.bin");
  return shard;
}

TEST(Training, FewStepsLowerTheLoss) {
  Config cfg = tinyConfig("gla", "1:1");
  cfg.steps = 30;
  cfg.warmup = 3;
  Model model(cfg, cfg.seed);
  TrainState state = initialState(model);
  ShardBatches source(trainShard());
  std::vector<int32_t> tokens(cfg.batch * cfg.seqLen), targets(cfg.batch * cfg.seqLen);
  Rng fixed(99);
  source.next(fixed, cfg.batch, cfg.seqLen, tokens.data(), targets.data());
  double before = model.forward(tokens.data(), targets.data(), cfg.batch, cfg.seqLen);
  TrainOptions opts;
  opts.outDir = "train-test";
  opts.quiet = true;
  train(model, state, source, opts);
  double after = model.forward(tokens.data(), targets.data(), cfg.batch, cfg.seqLen);
  EXPECT_NEAR(before, std::log(256.0), 0.1);
  EXPECT_LT(after, before - 1.0);
  EXPECT_TRUE(std::filesystem::exists("train-test/loss.svg"));
}

// A recurrence from no paper, compiled by linacc --shared at build time (runtime/test/CMakeLists.txt) and
// loaded from its config: the path from a new .mlir to a trained model needs no code change.
TEST(KernelLibrary, NovelRecurrenceTrainsFromItsConfig) {
  Config cfg = parseConfig("variant = keyed_gated_delta\nkernel_library = " LINAC_NOVEL_LIBRARY "\n"
                           "ratio = pure\nlayers = 2\nwidth = 32\nheads = 2\nhead_dim = 16\nseq_len = 32\n"
                           "batch = 4\nsteps = 30\nwarmup = 3\n",
                           "novel.cfg");
  const KernelInfo *kernel = findKernel("keyed_gated_delta");
  ASSERT_NE(kernel, nullptr);
  ASSERT_EQ(kernel->numInputs, 6);
  EXPECT_STREQ(kernel->inputs[5].name, "z");
  EXPECT_EQ(kernel->inputs[3].kind, LINAC_TOKEN_KEY);
  // Activations from each input's role in the update: the decay's gate, the delta rule's key and beta; the
  // output gate z is used as it comes (the recurrence applies its own sigmoid).
  EXPECT_EQ(kernel->inputs[1].activation, LINAC_ACT_L2_NORMALIZE);
  EXPECT_EQ(kernel->inputs[3].activation, LINAC_ACT_LOG_SIGMOID);
  EXPECT_EQ(kernel->inputs[4].activation, LINAC_ACT_SIGMOID);
  EXPECT_EQ(kernel->inputs[5].activation, LINAC_ACT_NONE);
  Model model(cfg, cfg.seed);
  TrainState state = initialState(model);
  ShardBatches source(trainShard());
  std::vector<int32_t> tokens(cfg.batch * cfg.seqLen), targets(cfg.batch * cfg.seqLen);
  Rng fixed(7);
  source.next(fixed, cfg.batch, cfg.seqLen, tokens.data(), targets.data());
  double before = model.forward(tokens.data(), targets.data(), cfg.batch, cfg.seqLen);
  TrainOptions opts;
  opts.outDir = "novel-test";
  opts.quiet = true;
  train(model, state, source, opts);
  EXPECT_LT(model.forward(tokens.data(), targets.data(), cfg.batch, cfg.seqLen), before - 0.5);
}

TEST(KernelLibrary, MissingLibraryOrRecurrenceIsNamed) {
  auto message = [](const std::string &text) {
    try {
      parseConfig(text, "lib.cfg");
    } catch (const Error &e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_NE(message("variant = x\nkernel_library = /no/such.so\n").find("lib.cfg:2: kernel_library = '/no/such.so': "
                                                                         "cannot load"),
            std::string::npos);
  EXPECT_NE(message("variant = nothing_here\nkernel_library = " LINAC_NOVEL_LIBRARY "\n")
                .find("has no linac_nothing_here_table"),
            std::string::npos);
  // One recurrence per name: not a built-in one's, not one loaded from another library.
  EXPECT_NE(message("variant = gla\nkernel_library = " LINAC_NOVEL_LIBRARY "\n")
                .find("'gla' is a built-in recurrence; a library is for recurrences that are not"),
            std::string::npos);
  EXPECT_EQ(message("variant = keyed_gated_delta\nkernel_library = " LINAC_NOVEL_LIBRARY "\n"), "(no error)");
  EXPECT_NE(message("variant = keyed_gated_delta\nkernel_library = " LINAC_NOVEL_BF16_LIBRARY "\n")
                .find("'keyed_gated_delta' is already loaded from '"),
            std::string::npos);
  // A library with 16-bit I/O (linacc --cpu-io=bf16) would read the runtime's floats as bf16 values.
  EXPECT_NE(message("variant = sandwich_decay\nkernel_library = " LINAC_NOVEL_BF16_LIBRARY "\n")
                .find("'sandwich_decay' was compiled with bf16 I/O (linacc --cpu-io=bf16); the runtime trains in "
                      "fp32"),
            std::string::npos);
}

TEST(Checkpoint, ResumeGivesIdenticalLosses) {
  Config cfg = tinyConfig("rwkv6", "1:1");
  ShardBatches source(trainShard());
  TrainOptions opts;
  opts.quiet = true;

  Model straight(cfg, cfg.seed);
  TrainState s1 = initialState(straight);
  opts.outDir = "ckpt-straight";
  TrainResult all = train(straight, s1, source, opts);

  Model first(cfg, cfg.seed);
  TrainState s2 = initialState(first);
  opts.outDir = "ckpt-split";
  opts.stopAt = 3;
  train(first, s2, source, opts);

  Model resumed(cfg, cfg.seed + 1); // different initialisation: everything must come from the checkpoint
  TrainState s3 = initialState(resumed);
  loadCheckpoint("ckpt-split/model.ckpt", resumed, s3);
  EXPECT_EQ(s3.step, 3);
  opts.stopAt = -1;
  TrainResult rest = train(resumed, s3, source, opts);
  ASSERT_EQ(rest.losses.size(), 3u);
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(rest.losses[i], all.losses[3 + i]) << "step " << 4 + i;
  EXPECT_EQ(resumed.params.values, straight.params.values);
}

// Data parallelism (Parallel.h) on the CPU: ranks in forked processes, each a slice of every global batch.
namespace dp {

/// Losses of `steps` steps of a 4-sequence-batch model, one rank or `ranks`; the first rank writes them to
/// `path` (one per line) and its checkpoint to `dir`. Resumes from `resume` when given.
void trainRanks(int ranks, int stopAt, const std::string &dir, const std::string &path,
                const std::string &resume = "") {
  Config cfg = parseConfig("variant = gated_deltanet\nratio = 1:1\nlayers = 2\nwidth = 16\nheads = 2\n"
                           "head_dim = 8\nseq_len = 24\nbatch = 4\nsteps = 6\nwarmup = 2\nlr = 1e-2\n"
                           "eval_every = 0\n",
                           "dp.cfg");
  auto body = [&](Reducer *reducer) {
    Model model(cfg, cfg.seed);
    TrainState state = initialState(model);
    if (!resume.empty())
      loadCheckpoint(resume, model, state);
    CpuBackend backend(model);
    backend.setReducer(reducer);
    ShardBatches source(trainShard());
    TrainOptions opts;
    opts.quiet = true;
    opts.outDir = dir;
    opts.stopAt = stopAt;
    opts.writeFiles = !reducer || reducer->rank() == 0;
    TrainResult result = train(backend, state, source, opts);
    if (opts.writeFiles) {
      std::ofstream out(path);
      out.precision(17);
      for (double loss : result.losses)
        out << loss << "\n";
    }
    return 0;
  };
  if (ranks == 1)
    body(nullptr);
  else
    ASSERT_EQ(runRanks(ranks, [&](Reducer &r) { return body(&r); }), 0);
}

std::vector<double> readLosses(const std::string &path) {
  std::ifstream in(path);
  std::vector<double> losses;
  for (double v; in >> v;)
    losses.push_back(v);
  return losses;
}

} // namespace dp

// Two and four ranks follow one rank at the same global batch: the same sequences, gradients summed in a fixed
// order, so only fp32 rounding differs (the losses agree to about 1e-6 after six AdamW steps).
TEST(DataParallel, RanksFollowOneRankAtTheSameGlobalBatch) {
  dp::trainRanks(1, -1, "dp-one", "dp-one.txt");
  std::vector<double> one = dp::readLosses("dp-one.txt");
  ASSERT_EQ(one.size(), 6u);
  for (int ranks : {2, 4}) {
    std::string name = "dp-" + std::to_string(ranks);
    dp::trainRanks(ranks, -1, name, name + ".txt");
    std::vector<double> many = dp::readLosses(name + ".txt");
    ASSERT_EQ(many.size(), one.size()) << ranks << " ranks";
    for (size_t i = 0; i < one.size(); ++i)
      EXPECT_NEAR(many[i], one[i], 1e-5 * one[i]) << ranks << " ranks, step " << i + 1;
  }
}

// A checkpoint written by a two-rank run resumes on one rank (and the other way round) on the same curve.
TEST(DataParallel, CheckpointsMoveBetweenRankCounts) {
  dp::trainRanks(1, -1, "dp-ref", "dp-ref.txt");
  std::vector<double> ref = dp::readLosses("dp-ref.txt");
  dp::trainRanks(2, 3, "dp-split2", "dp-head2.txt");
  dp::trainRanks(1, -1, "dp-rest1", "dp-tail1.txt", "dp-split2/model.ckpt");
  dp::trainRanks(1, 3, "dp-split1", "dp-head1.txt");
  dp::trainRanks(2, -1, "dp-rest2", "dp-tail2.txt", "dp-split1/model.ckpt");
  for (const char *tail : {"dp-tail1.txt", "dp-tail2.txt"}) {
    std::vector<double> rest = dp::readLosses(tail);
    ASSERT_EQ(rest.size(), 3u) << tail;
    for (size_t i = 0; i < 3; ++i)
      EXPECT_NEAR(rest[i], ref[3 + i], 1e-5 * ref[3 + i]) << tail << ", step " << 4 + i;
  }
}

// The same through linac-train's command line (beside this program): --ranks, --stop-at, then --resume with
// another rank count follows one whole run; a step outside the schedule is refused before any rank starts.
TEST(DataParallel, CommandLineStopsAndResumesOnOtherRankCounts) {
  const std::string trainer = "linac-train",
                    config = "variant = gated_deltanet\nratio = 1:1\nlayers = 2\nwidth = 32\nheads = 2\n"
                             "head_dim = 16\nseq_len = 64\nbatch = 4\nsteps = 6\nwarmup = 6\nlr = 1e-3\n"
                             "eval_every = 50\nval_batches = 1\neval_lengths = 36\neval_samples = 2\n";
  test::TrainerRun whole = test::runTrainer(trainer, "whole", config, "");
  ASSERT_EQ(whole.status, 0) << whole.output;
  ASSERT_EQ(whole.losses.size(), 6u) << whole.output;
  test::TrainerRun two = test::runTrainer(trainer, "two", config, "--ranks 2");
  ASSERT_EQ(two.status, 0) << two.output;
  test::expectSameCurve(two, whole, 1e-5, "--ranks 2");
  test::expectResumedRunFollows(trainer, config, whole, 3, "--ranks 2", "", 1e-5);
  test::expectResumedRunFollows(trainer, config, whole, 3, "", "--ranks 2", 1e-5);
  for (const char *bad : {"7", "0", "3x"}) {
    test::TrainerRun refused = test::runTrainer(trainer, "refused", config, std::string("--ranks 2 --stop-at ") + bad);
    EXPECT_NE(refused.status, 0) << bad;
    EXPECT_NE(refused.output.find("--stop-at '" + std::string(bad) + "' is not a step in [1, 6]"), std::string::npos)
        << refused.output;
  }
}

// Edge values of the config keys train or are refused with an error, never crash (TrainerRuns.h).
TEST(CommandLine, EdgeConfigsRunOrAreRefused) { test::expectEdgeConfigsRunOrAreRefused("linac-train", ""); }

// A failing rank stops the run with its code instead of leaving the others waiting; a batch that does not
// split over the ranks is refused by name.
TEST(DataParallel, FailuresAndBadSplitsAreReported) {
  EXPECT_EQ(runRanks(3, [](Reducer &r) {
              if (r.rank() == 1)
                return 7;
              double x = 1;
              r.sum(&x, 1); // would wait for rank 1 forever
              return 0;
            }),
            7);
  EXPECT_EQ(runRanks(2, [](Reducer &r) {
              double x[2] = {double(r.rank()), 1.0};
              r.sum(x, 2);
              return x[0] == 1.0 && x[1] == 2.0 ? 0 : 1;
            }),
            0);
  EXPECT_EQ(runRanks(3, [](Reducer &r) {
              try {
                rankSlice(r, 4);
              } catch (const Error &e) {
                return std::string(e.what()) == "batch = 4 does not split over 3 ranks (each takes batch / ranks "
                                                "sequences of the global batch)"
                           ? 0
                           : 2;
              }
              return 1;
            }),
            0);
}

std::string errorOf(const std::function<void()> &f) {
  try {
    f();
  } catch (const Error &e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Checkpoint, RefusesCorruptTruncatedAndMismatched) {
  Config cfg = tinyConfig("deltanet", "pure");
  Model model(cfg, 1);
  TrainState state = initialState(model);
  saveCheckpoint("good.ckpt", model, state);
  std::ifstream in("good.ckpt", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto write = [](const std::string &path, const std::string &data) {
    std::ofstream(path, std::ios::binary) << data;
  };
  auto load = [&](const std::string &path) {
    return errorOf([&] {
      Model m(cfg, 1);
      TrainState s = initialState(m);
      loadCheckpoint(path, m, s);
    });
  };
  EXPECT_EQ(load("good.ckpt"), "(no error)");
  std::string corrupt = bytes;
  corrupt[bytes.size() / 2] ^= 0x40;
  write("corrupt.ckpt", corrupt);
  EXPECT_EQ(load("corrupt.ckpt"), "corrupt.ckpt: checkpoint refused: corrupt: checksum mismatch");
  write("truncated.ckpt", bytes.substr(0, bytes.size() - 100));
  EXPECT_EQ(load("truncated.ckpt"), "truncated.ckpt: checkpoint refused: truncated: " +
                                        std::to_string(bytes.size() - 100) + " bytes, expected " +
                                        std::to_string(bytes.size()));
  write("junk.ckpt", "hello, world: this is not a checkpoint at all, just text");
  EXPECT_EQ(load("junk.ckpt"), "junk.ckpt: checkpoint refused: not a linac checkpoint (bad magic)");
  EXPECT_EQ(load("missing.ckpt"), "missing.ckpt: cannot open checkpoint");

  Config other = tinyConfig("deltanet", "pure");
  other.lr = 5e-3;
  Model m(other, 1);
  TrainState s = initialState(m);
  EXPECT_NE(errorOf([&] { loadCheckpoint("good.ckpt", m, s); }).find("written for a different config"),
            std::string::npos);
}

TEST(ConfigFile, ErrorsNameFileLineAndKey) {
  auto error = [](const std::string &text) { return errorOf([&] { parseConfig(text, "bad.cfg"); }); };
  EXPECT_EQ(error("layers = 2\nfoo = 1\n"), "bad.cfg:2: unknown key 'foo'");
  // Recurrences loaded by earlier tests (kernel_library) are listed after the built-in ones.
  std::string unknown = error("variant = mamba\n");
  EXPECT_EQ(unknown.rfind("bad.cfg:1: variant = 'mamba' is not a compiled recurrence (known: hgrn, retnet, "
                          "simple_gla, gla, hgrn2, rwkv6, deltanet, gated_deltanet",
                          0),
            0u)
      << unknown;
  EXPECT_EQ(error("heads = 3\n# comment\nwidth = 64\n"), "bad.cfg:3: width = 64 is not divisible by heads = 3");
  EXPECT_EQ(error("ratio = 2:3\n"),
            "bad.cfg:1: ratio = '2:3' is not one of pure, N:1 (e.g. 24:1, 12:1, 6:1, 3:1), transformer");
  EXPECT_EQ(error("layers = four\n"), "bad.cfg:1: layers = 'four' is not an integer in [1, 256]");
  // Every recall task's sample must fit (a shorter one was written past its row).
  EXPECT_EQ(error("eval_lengths = 64, 32\n"), "bad.cfg:1: eval_lengths = '32' is not an integer in [36, 65536]");
  EXPECT_EQ(error("lr 0.1\n"), "bad.cfg:1: expected 'key = value', got 'lr 0.1'");
  EXPECT_EQ(error("seed = 1\nseed = 2\n"), "bad.cfg:2: key 'seed' already set on line 1");
  EXPECT_EQ(errorOf([] { loadConfig("no-such.cfg"); }), "no-such.cfg: cannot read config file");
}

TEST(ConfigFile, HybridLayouts) {
  auto layout = [](const std::string &ratio, int layers) {
    Config c = parseConfig("ratio = " + ratio + "\nlayers = " + std::to_string(layers) + "\n", "x.cfg");
    std::string s;
    for (bool a : c.attentionLayers())
      s += a ? 'A' : 'L';
    return s;
  };
  EXPECT_EQ(layout("pure", 4), "LLLL");
  EXPECT_EQ(layout("transformer", 3), "AAA");
  EXPECT_EQ(layout("3:1", 8), "LLLALLLA");
  EXPECT_EQ(layout("6:1", 14), "LLLLLLALLLLLLA");
  EXPECT_EQ(layout("12:1", 26), "LLLLLLLLLLLLALLLLLLLLLLLLA");
  EXPECT_EQ(layout("24:1", 4), "LLLA");
}

TEST(Tasks, AnswersAreWhereTheyShouldBe) {
  Rng rng(5);
  const int T = 64;
  std::vector<int32_t> tokens(T), targets(T);
  mqarSample(rng, T, 8, tokens.data(), targets.data());
  int answers = 0;
  for (int t = 0; t < T; ++t)
    if (targets[t] >= 0) {
      ++answers;
      EXPECT_EQ(tokens[t + 1], targets[t]);
      for (int i = 0; i < 8; ++i) // the queried key's value is the one stored with it
        if (tokens[2 * i] == tokens[t])
          EXPECT_EQ(tokens[2 * i + 1], targets[t]);
    }
  EXPECT_EQ(answers, 8);
  variableTrackingSample(rng, T, nullptr, tokens.data(), targets.data());
  std::string text(tokens.begin(), tokens.end());
  EXPECT_NE(text.find('?'), std::string::npos);
  needleSample(rng, T, nullptr, tokens.data(), targets.data());
  text.assign(tokens.begin(), tokens.end());
  EXPECT_EQ(text.substr(T - 8, 4), "key=");
  EXPECT_EQ(text.find(text.substr(T - 8, 8) + ";") != std::string::npos, true);
}

// The shortest rows each task fits take a whole sample, answer last; one token less is refused, not overrun.
TEST(Tasks, ShortRowsFitOrAreRefused) {
  Rng rng(6);
  for (int T : {Config::kShortestEvalLength, 17}) {
    std::vector<int32_t> tokens(T), targets(T);
    if (T == Config::kShortestEvalLength) {
      variableTrackingSample(rng, T, nullptr, tokens.data(), targets.data());
      EXPECT_GE(targets[T - 2], '0');
    }
    needleSample(rng, T, nullptr, tokens.data(), targets.data());
    std::string text(tokens.begin(), tokens.end());
    EXPECT_EQ(text.substr(T - 8, 4), "key=") << T;
    EXPECT_NE(text.find(text.substr(T - 8, 8) + ";"), std::string::npos) << T;
  }
  std::vector<int32_t> tokens(64), targets(64);
  EXPECT_EQ(errorOf([&] { variableTrackingSample(rng, 35, nullptr, tokens.data(), targets.data()); }),
            "variable tracking: a sample needs 36 tokens, the sequence has 35");
  EXPECT_EQ(errorOf([&] { needleSample(rng, 16, nullptr, tokens.data(), targets.data()); }),
            "needle: a sample needs 17 tokens, the sequence has 16");
  mqarSample(rng, 4, 8, tokens.data(), targets.data()); // one pair: key, value, key, value
  EXPECT_EQ(tokens[2], tokens[0]);
  EXPECT_EQ(targets[2], tokens[1]);
  EXPECT_EQ(errorOf([&] { mqarSample(rng, 3, 8, tokens.data(), targets.data()); }),
            "MQAR: a sample needs 4 tokens, the sequence has 3");
}

} // namespace
