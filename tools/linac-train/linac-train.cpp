// linac-train: trains and evaluates hybrid language models whose linear-attention
// layers are linacc-compiled kernels (runtime/README.md).
//
//   linac-train prepare [DATA_DIR]                        byte-level shards of /usr/share/common-licenses
//   linac-train train CONFIG [--out DIR] [--resume CKPT]  language modelling on the shards
//   linac-train mqar  CONFIG [--out DIR] [--resume CKPT]  associative recall on synthetic MQAR data
//     (--stop-at STEP: stop after that step, checkpoint written, the schedule still the config's steps; a later
//     --resume goes on from it, with the same or another number of --ranks)
//   linac-train eval  CONFIG --checkpoint CKPT [--report FILE]
//
// Every mode takes --device cpu|cuda (overrides the config's `device`). This file builds twice: linac-train
// (CPU only, no CUDA libraries, so it runs on machines without a driver) and, where CMake finds nvcc,
// linac-train-cuda with LINAC_WITH_CUDA and the runtime/cuda backend.

#include "runtime/Eval.h"
#include "runtime/Train.h"
#ifdef LINAC_WITH_CUDA
#include "runtime/cuda/CudaBackend.h"
#endif
#ifdef LINAC_WITH_NCCL
#include "runtime/cuda/NcclRanks.h"
#endif

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>

using namespace linac::rt;

namespace {

const char *kUsage = "usage: linac-train prepare [DATA_DIR]\n"
                     "       linac-train train CONFIG [--out DIR] [--resume CKPT] [--stop-at STEP] [--device cpu|cuda] [--ranks N [--reduce host|nccl]]\n"
                     "       linac-train mqar CONFIG [--out DIR] [--resume CKPT] [--stop-at STEP] [--device cpu|cuda] [--ranks N [--reduce host|nccl]]\n"
                     "       linac-train eval CONFIG --checkpoint CKPT [--report FILE] [--device cpu|cuda]\n";

/// "--flag value" pairs after the positional arguments.
std::map<std::string, std::string> parseFlags(int argc, char **argv, int first,
                                              std::initializer_list<const char *> allowed) {
  std::map<std::string, std::string> flags;
  for (int i = first; i < argc; i += 2) {
    bool known = false;
    for (const char *a : allowed)
      known |= std::strcmp(argv[i], a) == 0;
    if (!known)
      throw Error(std::string("unknown argument '") + argv[i] + "'\n" + kUsage);
    if (i + 1 >= argc)
      throw Error(std::string(argv[i]) + " needs a value");
    flags[argv[i]] = argv[i + 1];
  }
  return flags;
}

void writeFile(const std::string &path, const std::string &text) {
  std::ofstream out(path);
  out << text;
  if (!out)
    throw Error(path + ": cannot write");
}

/// The backend of cfg.device, holding the model's parameters and the state's moments from now on.
std::unique_ptr<Backend> makeBackend(Model &model, const TrainState &state) {
  if (model.cfg.device == "cpu")
    return std::make_unique<CpuBackend>(model);
#ifdef LINAC_WITH_CUDA
  return cuda::makeCudaBackend(model, state);
#else
  (void)state;
  throw Error("device = cuda: this is the CPU-only linac-train; use linac-train-cuda (built where CMake finds nvcc)");
#endif
}

/// The step --stop-at names: a whole number in [1, cfg.steps].
int stopStep(const std::string &text, const Config &cfg) {
  size_t used = 0;
  int step = 0;
  try {
    step = std::stoi(text, &used);
  } catch (const std::exception &) {
  }
  if (used != text.size() || step < 1 || step > cfg.steps)
    throw Error("--stop-at '" + text + "' is not a step in [1, " + std::to_string(cfg.steps) + "] (" + cfg.path +
                ": steps = " + std::to_string(cfg.steps) + ")");
  return step;
}

/// One rank's run (reducer null: the only one). Every rank builds the same model and draws the same global
/// batches; the first writes the log, checkpoints and report.
int runTraining(const std::string &mode, const Config &cfg, const std::map<std::string, std::string> &flags,
                Reducer *reducer) {
  bool first = !reducer || reducer->rank() == 0;
  std::string out = flags.count("--out") ? flags.at("--out")
                                         : "runs/" + std::filesystem::path(cfg.path).stem().string() +
                                               (mode == "mqar" ? "-mqar" : "");
  Model model(cfg, cfg.seed);
  TrainState state = initialState(model);
  if (flags.count("--resume")) {
    loadCheckpoint(flags.at("--resume"), model, state);
    if (first)
      std::printf("resumed %s at step %d\n", flags.at("--resume").c_str(), state.step);
  }
  if (first)
    std::printf("model: %s | device %s%s\n", model.describe().c_str(), cfg.device.c_str(),
                reducer ? (" | " + std::to_string(reducer->size()) + " data-parallel ranks").c_str() : "");
  std::unique_ptr<Backend> backend = makeBackend(model, state);
  backend->setReducer(reducer);

  std::unique_ptr<Shard> trainShard, valShard;
  std::unique_ptr<BatchSource> source;
  if (mode == "train") {
    std::string shards = prepareShards(cfg.dataDir);
    if (first)
      std::printf("%s\n", shards.c_str());
    trainShard = std::make_unique<Shard>(cfg.dataDir + "/train.bin");
    valShard = std::make_unique<Shard>(cfg.dataDir + "/val.bin");
    source = std::make_unique<ShardBatches>(*trainShard);
  } else {
    source = std::make_unique<MqarBatches>(cfg.mqarPairs);
  }
  TrainOptions opts;
  opts.outDir = out;
  opts.val = valShard.get();
  opts.quiet = !first;
  opts.writeFiles = first;
  if (flags.count("--stop-at"))
    opts.stopAt = stopStep(flags.at("--stop-at"), cfg);
  TrainResult result = train(*backend, state, *source, opts);
  if (!first)
    return 0;
  std::printf("trained to step %d at %.0f tokens/s; wrote %s/{log.csv,loss.svg,model.ckpt}\n", state.step,
              result.tokensPerSecond, out.c_str());
  std::string report = evaluate(*backend, valShard.get(), out + "/model.ckpt", state.step);
  writeFile(out + "/report.json", report);
  std::printf("wrote %s/report.json\n", out.c_str());
  return 0;
}

int runEval(const Config &cfg, const std::map<std::string, std::string> &flags) {
  if (!flags.count("--checkpoint"))
    throw Error(std::string("eval needs --checkpoint CKPT\n") + kUsage);
  Model model(cfg, cfg.seed);
  TrainState state = initialState(model);
  loadCheckpoint(flags.at("--checkpoint"), model, state);
  std::printf("model: %s | step %d | device %s\n", model.describe().c_str(), state.step, cfg.device.c_str());
  std::unique_ptr<Backend> backend = makeBackend(model, state);
  std::unique_ptr<Shard> val;
  if (std::filesystem::exists(cfg.dataDir + "/val.bin"))
    val = std::make_unique<Shard>(cfg.dataDir + "/val.bin");
  std::string report = evaluate(*backend, val.get(), flags.at("--checkpoint"), state.step);
  std::string path = flags.count("--report") ? flags.at("--report")
                                             : std::filesystem::path(flags.at("--checkpoint")).parent_path().string() +
                                                   "/eval.json";
  writeFile(path, report);
  std::printf("wrote %s\n", path.c_str());
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  try {
    if (argc < 2) {
      std::fputs(kUsage, stderr);
      return 2;
    }
    std::string mode = argv[1];
    if (mode == "prepare") {
      std::printf("%s\n", prepareShards(argc > 2 ? argv[2] : "data").c_str());
      return 0;
    }
    if ((mode != "train" && mode != "mqar" && mode != "eval") || argc < 3) {
      std::fputs(kUsage, stderr);
      return 2;
    }
    Config cfg = loadConfig(argv[2]);
    auto flags = mode == "eval" ? parseFlags(argc, argv, 3, {"--checkpoint", "--report", "--device"})
                                : parseFlags(argc, argv, 3, {"--out", "--resume", "--stop-at", "--device", "--ranks", "--reduce"});
    if (flags.count("--device")) {
      if (flags["--device"] != "cpu" && flags["--device"] != "cuda")
        throw Error("--device '" + flags["--device"] + "' is not one of cpu, cuda");
      cfg.device = flags["--device"];
    }
    if (mode == "eval")
      return runEval(cfg, flags);
    if (flags.count("--stop-at"))
      stopStep(flags["--stop-at"], cfg); // refused here, before any rank starts
    if (!flags.count("--ranks"))
      return runTraining(mode, cfg, flags, nullptr);
    // Data parallelism: N ranks in processes (Parallel.h), each a slice of every global batch.
    int ranks = 0;
    try {
      ranks = std::stoi(flags["--ranks"]);
    } catch (const std::exception &) {
    }
    if (ranks < 1 || ranks > 64)
      throw Error("--ranks '" + flags["--ranks"] + "' is not a number of ranks in [1, 64]");
    if (cfg.batch % ranks)
      throw Error(cfg.path + ": batch = " + std::to_string(cfg.batch) + " does not split over " +
                  std::to_string(ranks) + " ranks");
    std::string reduce = flags.count("--reduce") ? flags["--reduce"] : "host";
    auto body = [&](Reducer &reducer) { return runTraining(mode, cfg, flags, &reducer); };
    if (reduce == "host")
      return runRanks(ranks, body);
    if (reduce != "nccl")
      throw Error("--reduce '" + reduce + "' is not one of host, nccl");
    if (cfg.device != "cuda")
      throw Error("--reduce nccl needs device = cuda");
#ifdef LINAC_WITH_NCCL
    return cuda::runNcclRanks(ranks, body);
#else
    throw Error("--reduce nccl: this linac-train was built without NCCL");
#endif
  } catch (const Error &e) {
    std::fprintf(stderr, "linac-train: error: %s\n", e.what());
    return 1;
  }
}
