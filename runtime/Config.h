#ifndef LINAC_RUNTIME_CONFIG_H
#define LINAC_RUNTIME_CONFIG_H

// A run's configuration, read from `key = value` lines ('#' starts a comment).
// runtime/configs/ holds examples; README.md lists every key.

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace linac::rt {

/// Every user-facing failure (bad config, unreadable data, refused checkpoint) is one of these;
/// the message is complete and printed as is.
struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Config {
  // Model.
  std::string variant = "gated_deltanet"; ///< recurrence of the linear-attention layers
  /// A linacc --shared library holding `variant`, for recurrences not built in (relative to the config file).
  std::string kernelLibrary;
  /// The `linacc --target=cuda --shared` library of `variant` for device = cuda (relative to the config file).
  std::string gpuKernelLibrary;
  int layers = 4;
  int width = 64;
  int heads = 2;
  int headDim = 32;
  /// "pure" (linear only), "N:1" (N linear layers per softmax-attention layer), "transformer".
  std::string ratio = "3:1";
  int mlpHidden = 0; ///< 0: 8/3 * width rounded up to a multiple of 8
  /// Taps of the causal per-channel convolution (then SiLU) on each linear-attention layer's per-token
  /// projections other than gates (q, k, v and the like); 0: none.
  int shortConv = 0;
  // Data and schedule.
  int seqLen = 128;
  int batch = 8;
  int steps = 200;
  double lr = 3e-3;
  double minLrFraction = 0.1; ///< the cosine decays to lr * this
  int warmup = 20;
  double weightDecay = 0.1;
  double gradClip = 1.0;
  uint64_t seed = 1337;
  int evalEvery = 50; ///< validation loss every this many steps (0: only at the end)
  int valBatches = 8;
  int checkpointEvery = 0; ///< 0: only at the end
  std::string dataDir = "data";
  // Evaluation.
  std::vector<int> evalLengths = {64, 128, 256};
  /// The shortest evaluation length: every recall task's sample fits (variable tracking's eight 4-token
  /// statements, its 3-token query and the answer; the needle's 9 and 8 tokens).
  static constexpr int kShortestEvalLength = 36;
  int evalSamples = 32;
  int mqarPairs = 0; ///< 0: seq_len / 8
  // Execution: where the arithmetic runs, not what is computed, so neither is in hash() and checkpoints move
  // between devices.
  std::string device = "cpu";     ///< "cpu" or "cuda" (linac-train-cuda)
  std::string precision = "fp32"; ///< matmul inputs on cuda: "fp32", or "bf16" with fp32 accumulation

  /// Where this config came from, for messages.
  std::string path;

  int hidden() const { return mlpHidden > 0 ? mlpHidden : (8 * width / 3 + 7) / 8 * 8; }
  /// True where layer i is softmax attention.
  std::vector<bool> attentionLayers() const;
  /// FNV-1a of every key that changes the model or its training trajectory; checkpoints store it.
  uint64_t hash() const;
  /// The keys and values as a config file would hold them.
  std::string canonical() const;
};

/// Parses and validates; throws Error("FILE:LINE: ...") naming the offending key.
Config parseConfig(const std::string &text, const std::string &path);
Config loadConfig(const std::string &path);

} // namespace linac::rt

#endif
