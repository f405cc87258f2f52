// The fp32 CPU model (runtime/Model.h) against the independent fp64 reference of the whole model
// (ModelReference.h): the loss, and the gradient of every parameter tensor at sampled entries against fp64 finite
// differences of the reference. Each fp32 computation is measured against the truth, not against another fp32
// computation: runtime-gpu-test measures the GPU backend against the same reference.
//
// Bounds: the loss within 1e-6 (relative) and, per parameter tensor, rms(fp32 - fp64) / rms(fp64) over its
// sampled entries within 1e-4, the tolerance of the GPU model test. The finite differences must themselves be far
// inside that: their own error estimate within 1e-5 (10% of the bound) wherever they judge, and
// FiniteDifferencesConverge asserts that two starting steps agree to 1e-6 (1%).

#include "runtime/test/ModelReference.h"

#include "runtime/Model.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

using namespace linac::rt;
namespace mr = linac::modelref;

namespace {

constexpr double kLossTol = 1e-6;
constexpr double kGradTol = 1e-4;
/// referenceGradient's first step, relative to each tensor's rms; it halves the step where truncation needs it.
/// Large, because rounding noise (about an ulp of the loss, divided by the step) is what limits the differences
/// of the weights whose gradients are small (the softmax attention's query and key weights at initialisation).
constexpr double kStep = 4e-2;

/// A two-layer hybrid (the recurrence, then softmax attention) small enough for thousands of fp64 forwards.
/// T = 40: not a multiple of the kernels' chunk size 64, so the tail chunk is exercised.
Config smallHybrid(const std::string &variant) {
  Config cfg;
  cfg.variant = variant;
  cfg.ratio = "1:1";
  cfg.layers = 2;
  cfg.width = 32;
  cfg.heads = 2;
  cfg.headDim = 16;
  cfg.seqLen = 40;
  cfg.batch = 2;
  return cfg;
}


/// Random tokens, and targets of which about one in five is ignored (-1), as in the recall tasks.
void randomBatch(uint64_t seed, int n, std::vector<int32_t> &tokens, std::vector<int32_t> &targets) {
  Rng rng(seed);
  tokens.resize(size_t(n));
  targets.resize(size_t(n));
  for (int i = 0; i < n; ++i) {
    tokens[i] = int32_t(rng.below(kVocab));
    targets[i] = rng.below(5) == 0 ? -1 : int32_t(rng.below(kVocab));
  }
}

double seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

/// The model `cfg` at initialisation `seed`, its weight matrices scaled by `matrixScale`, on one random batch: fp32
/// loss and gradients against the reference at `perTensor` entries of every tensor. Prints the worst tensor, and
/// every tensor when one misses.
void expectMatchesReference(const Config &cfg, uint64_t seed, size_t perTensor, float matrixScale = 1.0f) {
  const int B = cfg.batch, T = cfg.seqLen;
  Model model(cfg, seed);
  for (const ParamInfo &p : model.params.info)
    if (p.shape.size() == 2)
      for (size_t i = 0; i < p.size; ++i)
        model.params.values[p.offset + i] *= matrixScale;
  std::vector<int32_t> tokens, targets;
  randomBatch(seed + 1, B * T, tokens, targets);
  model.zeroGrad();
  double loss32 = model.forward(tokens.data(), targets.data(), B, T);
  model.backward();

  auto start = std::chrono::steady_clock::now();
  const std::vector<double> params(model.params.values.begin(), model.params.values.end());
  const std::vector<ParamInfo> &info = model.params.info;
  double loss64 = mr::referenceLoss(cfg, info, params, tokens.data(), targets.data(), B, T);
  std::vector<size_t> entries = mr::sampleEntries(info, perTensor, seed + 2);
  std::vector<double> estimate;
  std::vector<double> grad64 =
      mr::referenceGradient(cfg, info, params, tokens.data(), targets.data(), B, T, entries, kStep, &estimate);
  double took = seconds(start);

  double lossError = std::abs(loss32 - loss64) / loss64;
  std::vector<mr::TensorError> errors = mr::sampledErrors(info, entries, model.params.grads.data(), grad64, &estimate);
  const mr::TensorError *worst = &errors[0];
  double worstFd = 0;
  for (const mr::TensorError &e : errors) {
    EXPECT_GT(e.samples, 0u) << e.name;
    EXPECT_GT(e.refRms, 0.0) << e.name << ": no sampled entry has a gradient, nothing is measured";
    EXPECT_LT(e.error, kGradTol) << e.name << " (fp32 CPU vs fp64, " << e.samples << " entries)";
    // The finite differences' own error must leave the bound to fp32 (a miss here is the reference's, not the
    // model's).
    EXPECT_LT(e.refError, kGradTol / 10) << e.name << ": the finite differences are not accurate enough to judge by";
    if (!(e.error <= worst->error))
      worst = &e;
    worstFd = std::max(worstFd, e.refError);
  }
  EXPECT_LT(lossError, kLossTol);
  std::printf("  %-14s x%-2g conv %d loss fp32 %.10f fp64 %.10f (rel %.2g) | worst gradient %.3g (%s) | finite "
              "differences within %.2g | %zu entries in %.2f s\n",
              cfg.variant.c_str(), double(matrixScale), cfg.shortConv, loss32, loss64, lossError, worst->error,
              worst->name.c_str(), worstFd, entries.size(), took);
  if (!(worst->error < kGradTol))
    for (const mr::TensorError &e : errors)
      std::printf("    %-32s %.3g (rms %.3g)\n", e.name.c_str(), e.error, e.refRms);
}

class ModelReference : public ::testing::TestWithParam<std::string> {};

// At initialisation, with the weight matrices 10 times larger (gates far from their midpoint, peaked attention,
// large pre-activations, where a reference that mirrored the model only to first order would show), and with a
// 4-tap short convolution on the recurrence's inputs.
TEST_P(ModelReference, Fp32CpuModelMatchesFp64) {
  ASSERT_TRUE(mr::hasReference(GetParam()));
  expectMatchesReference(smallHybrid(GetParam()), 7, 8);
  expectMatchesReference(smallHybrid(GetParam()), 8, 8, 10.0f);
  Config conv = smallHybrid(GetParam());
  conv.shortConv = 4;
  expectMatchesReference(conv, 9, 4);
}

INSTANTIATE_TEST_SUITE_P(Recurrences, ModelReference,
                         ::testing::Values("hgrn", "retnet", "simple_gla", "gla", "hgrn2", "rwkv6", "deltanet",
                                           "gated_deltanet"));

// runtime-gpu-test's own model for HGRN-2, whose first-layer projections are where the GPU test missed 1e-4 against
// the CPU about once in 25 runs: here the CPU's side of that comparison against the truth.
TEST(ModelReferenceGpuConfig, Hgrn2Fp32CpuModelMatchesFp64) { expectMatchesReference(mr::gpuTestConfig("hgrn2"), 3, 3); }

// The finite differences are converged: started from two steps 1.5 apart (so that no evaluation is shared; the
// halvings of steps a power of 2 apart meet), the gradients agree per tensor to 1e-6 relative, 1% of the bound they
// serve. Truncation alone would agree far closer; what is left is rounding noise, about an ulp of the loss divided
// by the step, which the entries with small gradients feel most.
TEST(ModelReference, FiniteDifferencesConverge) {
  for (const char *variant : {"hgrn2", "gated_deltanet"}) {
    Config cfg = smallHybrid(variant);
    const int B = cfg.batch, T = cfg.seqLen;
    Model model(cfg, 11);
    std::vector<int32_t> tokens, targets;
    randomBatch(12, B * T, tokens, targets);
    const std::vector<double> params(model.params.values.begin(), model.params.values.end());
    const std::vector<ParamInfo> &info = model.params.info;
    std::vector<size_t> entries = mr::sampleEntries(info, 4, 13);
    std::vector<double> estimate;
    std::vector<double> a =
        mr::referenceGradient(cfg, info, params, tokens.data(), targets.data(), B, T, entries, kStep, &estimate);
    std::vector<double> b =
        mr::referenceGradient(cfg, info, params, tokens.data(), targets.data(), B, T, entries, 1.5 * kStep);
    double worst = 0, worstEstimate = 0;
    std::string worstName;
    for (const ParamInfo &p : info) {
      double num = 0, den = 0, est = 0;
      for (size_t k = 0; k < entries.size(); ++k)
        if (entries[k] >= p.offset && entries[k] < p.offset + p.size) {
          num += (a[k] - b[k]) * (a[k] - b[k]);
          den += b[k] * b[k];
          est += estimate[k] * estimate[k];
        }
      ASSERT_GT(den, 0.0) << p.name;
      double e = std::sqrt(num / den);
      EXPECT_LT(e, kGradTol / 100) << variant << " " << p.name;
      worstEstimate = std::max(worstEstimate, std::sqrt(est / den));
      if (e >= worst) {
        worst = e;
        worstName = p.name;
      }
    }
    std::printf("  %-14s steps %g and %g: worst difference %.2g (%s), worst error estimate %.2g\n", variant, kStep,
                1.5 * kStep, worst, worstName.c_str(), worstEstimate);
  }
}

// The reference is the model's definition, read from the parameter table: a table it cannot account for is refused,
// not half-used.
TEST(ModelReference, RefusesWhatItDoesNotMirror) {
  Config cfg = smallHybrid("gla");
  Model model(cfg, 1);
  std::vector<double> params(model.params.values.begin(), model.params.values.end());
  std::vector<int32_t> tokens(4, 1), targets(4, 2);
  auto refused = [&](std::vector<ParamInfo> info) {
    try {
      mr::referenceLoss(cfg, info, params, tokens.data(), targets.data(), 1, 4);
    } catch (const std::invalid_argument &e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  std::vector<ParamInfo> renamed = model.params.info;
  renamed.back().name = "final_norm_2";
  EXPECT_NE(refused(renamed).find("has no parameter 'final_norm'"), std::string::npos) << refused(renamed);
  std::vector<ParamInfo> unknown = model.params.info;
  unknown.push_back(ParamInfo{"layer0.gla.bias", {0}, params.size(), 0, false});
  EXPECT_NE(refused(unknown).find("'layer0.gla.bias' is not part of the reference model"), std::string::npos)
      << refused(unknown);
  std::vector<ParamInfo> reshaped = model.params.info;
  reshaped[1].shape = {cfg.width / 2, 2};
  EXPECT_NE(refused(reshaped).find("has shape [16, 2], expected [32]"), std::string::npos) << refused(reshaped);
  Config novel = cfg;
  novel.variant = "keyed_gated_delta";
  EXPECT_FALSE(mr::hasReference(novel.variant));
  EXPECT_THROW(mr::referenceLoss(novel, model.params.info, params, tokens.data(), targets.data(), 1, 4),
               std::invalid_argument);
}

} // namespace
