#include "Config.h"

#include "Kernels.h"

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>

namespace linac::rt {

namespace {

std::string trim(const std::string &s) {
  size_t b = s.find_first_not_of(" \t\r"), e = s.find_last_not_of(" \t\r");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

/// Layers per softmax-attention layer in "N:1", or 0 for "pure", -1 for "transformer", -2 if malformed.
int linearPerAttention(const std::string &ratio) {
  if (ratio == "pure")
    return 0;
  if (ratio == "transformer")
    return -1;
  size_t colon = ratio.find(':');
  if (colon == std::string::npos || ratio.substr(colon) != ":1")
    return -2;
  char *end = nullptr;
  long n = std::strtol(ratio.c_str(), &end, 10);
  return end == ratio.c_str() + colon && n >= 1 && n <= 1000 ? int(n) : -2;
}

} // namespace

std::vector<bool> Config::attentionLayers() const {
  int n = linearPerAttention(ratio);
  std::vector<bool> attention(layers, n == -1);
  if (n > 0) {
    // One attention layer per n + 1 layers, at least one, each closing its group of layers evenly spread
    // over the depth: 3:1 of 8 layers puts attention at 3 and 7.
    int count = std::max(1, layers / (n + 1));
    for (int j = 0; j < count; ++j)
      attention[(j + 1) * layers / count - 1] = true;
  }
  return attention;
}

std::string Config::canonical() const {
  std::ostringstream out;
  out.precision(17);
  out << "variant = " << variant << "\nlayers = " << layers << "\nwidth = " << width << "\nheads = " << heads
      << "\nhead_dim = " << headDim << "\nratio = " << ratio << "\nmlp_hidden = " << hidden()
      << "\nseq_len = " << seqLen << "\nbatch = " << batch << "\nsteps = " << steps << "\nlr = " << lr
      << "\nmin_lr_fraction = " << minLrFraction << "\nwarmup = " << warmup << "\nweight_decay = " << weightDecay
      << "\ngrad_clip = " << gradClip << "\nseed = " << seed << "\n";
  // Only when set, so that the hashes of configs without it (and their checkpoints) stay as they were.
  if (shortConv)
    out << "short_conv = " << shortConv << "\n";
  return out.str();
}

uint64_t Config::hash() const {
  uint64_t h = 0xcbf29ce484222325ull;
  for (char c : canonical())
    h = (h ^ uint8_t(c)) * 0x100000001b3ull;
  return h;
}

Config parseConfig(const std::string &text, const std::string &path) {
  Config cfg;
  cfg.path = path;
  std::map<std::string, int> lineOf;
  auto fail = [&](int line, const std::string &message) -> Error {
    return Error(path + ":" + std::to_string(line) + ": " + message);
  };

  auto integer = [&](int line, const std::string &key, const std::string &value, long lo, long hi) {
    errno = 0;
    char *end = nullptr;
    long v = std::strtol(value.c_str(), &end, 10);
    if (value.empty() || *end || errno || v < lo || v > hi)
      throw fail(line, key + " = '" + value + "' is not an integer in [" + std::to_string(lo) + ", " +
                           std::to_string(hi) + "]");
    return v;
  };
  auto real = [&](int line, const std::string &key, const std::string &value, double lo, double hi) {
    char *end = nullptr;
    double v = std::strtod(value.c_str(), &end);
    if (value.empty() || *end || !(v >= lo && v <= hi))
      throw fail(line, key + " = '" + value + "' is not a number in [" + std::to_string(lo) + ", " +
                           std::to_string(hi) + "]");
    return v;
  };

  using Setter = std::function<void(int, const std::string &, const std::string &)>;
  const std::map<std::string, Setter> setters = {
      {"variant", [&](int, auto &, auto &v) { cfg.variant = v; }},
      {"kernel_library", [&](int, auto &, auto &v) { cfg.kernelLibrary = v; }},
      {"gpu_kernel_library", [&](int, auto &, auto &v) { cfg.gpuKernelLibrary = v; }},
      {"layers", [&](int l, auto &k, auto &v) { cfg.layers = integer(l, k, v, 1, 256); }},
      {"width", [&](int l, auto &k, auto &v) { cfg.width = integer(l, k, v, 1, 1 << 16); }},
      {"heads", [&](int l, auto &k, auto &v) { cfg.heads = integer(l, k, v, 1, 1024); }},
      {"head_dim", [&](int l, auto &k, auto &v) { cfg.headDim = integer(l, k, v, 2, 1024); }},
      {"ratio", [&](int, auto &, auto &v) { cfg.ratio = v; }},
      {"mlp_hidden", [&](int l, auto &k, auto &v) { cfg.mlpHidden = integer(l, k, v, 0, 1 << 18); }},
      {"short_conv", [&](int l, auto &k, auto &v) { cfg.shortConv = integer(l, k, v, 0, 64); }},
      {"seq_len", [&](int l, auto &k, auto &v) { cfg.seqLen = integer(l, k, v, 2, 1 << 16); }},
      {"batch", [&](int l, auto &k, auto &v) { cfg.batch = integer(l, k, v, 1, 1 << 16); }},
      {"steps", [&](int l, auto &k, auto &v) { cfg.steps = integer(l, k, v, 0, 1 << 30); }},
      {"lr", [&](int l, auto &k, auto &v) { cfg.lr = real(l, k, v, 0, 10); }},
      {"min_lr_fraction", [&](int l, auto &k, auto &v) { cfg.minLrFraction = real(l, k, v, 0, 1); }},
      {"warmup", [&](int l, auto &k, auto &v) { cfg.warmup = integer(l, k, v, 0, 1 << 30); }},
      {"weight_decay", [&](int l, auto &k, auto &v) { cfg.weightDecay = real(l, k, v, 0, 10); }},
      {"grad_clip", [&](int l, auto &k, auto &v) { cfg.gradClip = real(l, k, v, 0, 1e9); }},
      {"seed", [&](int l, auto &k, auto &v) { cfg.seed = uint64_t(integer(l, k, v, 0, 1L << 62)); }},
      {"eval_every", [&](int l, auto &k, auto &v) { cfg.evalEvery = integer(l, k, v, 0, 1 << 30); }},
      {"val_batches", [&](int l, auto &k, auto &v) { cfg.valBatches = integer(l, k, v, 1, 1 << 20); }},
      {"checkpoint_every", [&](int l, auto &k, auto &v) { cfg.checkpointEvery = integer(l, k, v, 0, 1 << 30); }},
      {"data_dir", [&](int, auto &, auto &v) { cfg.dataDir = v; }},
      {"eval_samples", [&](int l, auto &k, auto &v) { cfg.evalSamples = integer(l, k, v, 1, 1 << 20); }},
      {"mqar_pairs", [&](int l, auto &k, auto &v) { cfg.mqarPairs = integer(l, k, v, 0, 100); }},
      {"device",
       [&](int l, auto &, auto &v) {
         if (v != "cpu" && v != "cuda")
           throw fail(l, "device = '" + v + "' is not one of cpu, cuda");
         cfg.device = v;
       }},
      {"precision",
       [&](int l, auto &, auto &v) {
         if (v != "fp32" && v != "bf16")
           throw fail(l, "precision = '" + v + "' is not one of fp32, bf16");
         cfg.precision = v;
       }},
      {"eval_lengths",
       [&](int l, auto &k, auto &v) {
         cfg.evalLengths.clear();
         std::stringstream list(v);
         for (std::string item; std::getline(list, item, ',');)
           cfg.evalLengths.push_back(integer(l, k, trim(item), Config::kShortestEvalLength, 1 << 16));
       }},
  };

  std::istringstream in(text);
  int lineNo = 0;
  for (std::string line; std::getline(in, line);) {
    ++lineNo;
    line = trim(line.substr(0, line.find('#')));
    if (line.empty())
      continue;
    size_t eq = line.find('=');
    if (eq == std::string::npos)
      throw fail(lineNo, "expected 'key = value', got '" + line + "'");
    std::string key = trim(line.substr(0, eq)), value = trim(line.substr(eq + 1));
    auto setter = setters.find(key);
    if (setter == setters.end())
      throw fail(lineNo, "unknown key '" + key + "'");
    if (lineOf.count(key))
      throw fail(lineNo, "key '" + key + "' already set on line " + std::to_string(lineOf[key]));
    lineOf[key] = lineNo;
    setter->second(lineNo, key, value);
  }

  // Cross-key checks name the line of the key they blame (0 when the default is at fault).
  auto at = [&](const std::string &key) { return lineOf.count(key) ? lineOf[key] : 0; };
  auto besideConfig = [&](std::string &file) {
    std::filesystem::path library(file);
    if (library.is_relative() && !path.empty())
      library = std::filesystem::path(path).parent_path() / library;
    file = library.string();
  };
  if (!cfg.gpuKernelLibrary.empty())
    besideConfig(cfg.gpuKernelLibrary);
  if (!cfg.kernelLibrary.empty()) {
    besideConfig(cfg.kernelLibrary);
    try {
      loadKernelLibrary(cfg.kernelLibrary, cfg.variant);
    } catch (const Error &e) {
      throw fail(at("kernel_library"), e.what());
    }
  }
  if (!findKernel(cfg.variant))
    throw fail(at("variant"), "variant = '" + cfg.variant + "' is not a compiled recurrence (known: " +
                                  kernelNames() + ")");
  if (linearPerAttention(cfg.ratio) == -2)
    throw fail(at("ratio"), "ratio = '" + cfg.ratio + "' is not one of pure, N:1 (e.g. 24:1, 12:1, 6:1, 3:1), "
                                                      "transformer");
  if (cfg.width % cfg.heads != 0)
    throw fail(at("width"), "width = " + std::to_string(cfg.width) + " is not divisible by heads = " +
                                std::to_string(cfg.heads));
  if (cfg.headDim % 2 != 0)
    throw fail(at("head_dim"), "head_dim = " + std::to_string(cfg.headDim) + " is odd; rotary embeddings need "
                                                                             "pairs");
  if (cfg.warmup > cfg.steps && cfg.steps > 0)
    throw fail(at("warmup"), "warmup = " + std::to_string(cfg.warmup) + " exceeds steps = " +
                                 std::to_string(cfg.steps));
  return cfg;
}

Config loadConfig(const std::string &path) {
  std::ifstream in(path);
  if (!in)
    throw Error(path + ": cannot read config file");
  std::stringstream text;
  text << in.rdbuf();
  return parseConfig(text.str(), path);
}

} // namespace linac::rt
