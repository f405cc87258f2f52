#ifndef LINAC_RUNTIME_TEST_TRAINERRUNS_H
#define LINAC_RUNTIME_TEST_TRAINERRUNS_H

// Runs a trainer program (linac-train, or linac-train-cuda on a GPU machine) from beside the test program, the
// way a user does: the command line's data parallelism, --stop-at and --resume. runtime-test (CPU, in CI) and
// runtime-gpu-test's GpuDataParallel (GPU) share these runs and their checks.

#include "runtime/Train.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <utility>
#include <sys/wait.h>
#include <system_error>
#include <unistd.h>
#include <vector>

namespace linac::rt::test {

struct TrainerRun {
  int status = -1;
  std::string output;                            ///< its stdout and stderr
  std::vector<std::pair<double, double>> losses; ///< (step, training loss) from its log.csv
  std::filesystem::path dir;                     ///< where it ran; its --out is dir / "run"
  std::string checkpoint() const { return (dir / "run" / "model.ckpt").string(); }
};

/// This process's folder for trainer runs, <tmp>/linac-cli-<pid> (test programs on one machine keep apart),
/// removed when the program exits (forked ranks leave by _exit, so only the test program's own exit removes it).
inline const std::filesystem::path &trainerRunsRoot() {
  static const struct Root {
    std::filesystem::path path =
        std::filesystem::temp_directory_path() / ("linac-cli-" + std::to_string(::getpid()));
    ~Root() {
      std::error_code ignored;
      std::filesystem::remove_all(path, ignored);
    }
  } root;
  return root.path;
}

/// Runs `<trainer> <mode> run.cfg --out run <args>` in a fresh folder trainerRunsRoot() / `name` holding `config`
/// as run.cfg (its shards are prepared there too unless the config names a data_dir). `trainer` is a file name
/// beside this test program.
inline TrainerRun runTrainer(const std::string &trainer, const std::string &name, const std::string &config,
                             const std::string &args, const std::string &mode = "train") {
  namespace fs = std::filesystem;
  TrainerRun r;
  r.dir = trainerRunsRoot() / name;
  fs::remove_all(r.dir);
  fs::create_directories(r.dir);
  std::ofstream(r.dir / "run.cfg") << config;
  fs::path exe = fs::canonical("/proc/self/exe").parent_path() / trainer;
  std::string command =
      "cd '" + r.dir.string() + "' && '" + exe.string() + "' " + mode + " run.cfg --out run " + args + " > out.txt 2>&1";
  r.status = std::system(command.c_str());
  std::ifstream log(r.dir / "out.txt");
  r.output.assign(std::istreambuf_iterator<char>(log), {});
  if (fs::exists(r.dir / "run" / "log.csv"))
    r.losses = readLossLog((r.dir / "run" / "log.csv").string()).train;
  return r;
}

/// Expects `got`'s losses at `want`'s steps within `relative` (log.csv keeps six significant digits).
inline void expectSameCurve(const TrainerRun &got, const TrainerRun &want, double relative, const std::string &what) {
  ASSERT_FALSE(got.losses.empty()) << what << "\n" << got.output;
  for (const auto &[step, loss] : got.losses) {
    auto same = std::find_if(want.losses.begin(), want.losses.end(), [&](const auto &w) { return w.first == step; });
    ASSERT_NE(same, want.losses.end()) << what << ": step " << step << " is not in the whole run";
    std::printf("  %-40s step %2.0f: loss %.6f (whole run %.6f)\n", what.c_str(), step, loss, same->second);
    EXPECT_NEAR(loss, same->second, relative * same->second) << what << ", step " << step;
  }
}

/// A run stopped after step `stop` by `head` arguments (--stop-at), resumed from its checkpoint by `tail`
/// arguments, follows `whole` (the same config in one run) from the step after `stop`.
inline void expectResumedRunFollows(const std::string &trainer, const std::string &config, const TrainerRun &whole,
                                    int stop, const std::string &head, const std::string &tail, double relative) {
  std::string tag = head + " | " + tail;
  TrainerRun first = runTrainer(trainer, "head", config, head + " --stop-at " + std::to_string(stop));
  ASSERT_EQ(first.status, 0) << tag << "\n" << first.output;
  ASSERT_EQ(first.losses.size(), size_t(stop)) << tag << "\n" << first.output;
  TrainerRun rest = runTrainer(trainer, "tail", config, tail + " --resume '" + first.checkpoint() + "'");
  ASSERT_EQ(rest.status, 0) << tag << "\n" << rest.output;
  ASSERT_EQ(rest.losses.size(), whole.losses.size() - stop) << tag << "\n" << rest.output;
  EXPECT_EQ(rest.losses.front().first, stop + 1) << tag;
  expectSameCurve(rest, whole, relative, tag);
}

/// Edge values of the config keys, one at a time, in both modes (train, mqar), through `trainer` with `args`: each
/// run trains or is refused with "linac-train: error: ...", never crashes. Two used to write past a row
/// (eval_lengths below 36, seq_len below 4 in mqar mode; found by this sweep's first run, 2026-12-07).
inline void expectEdgeConfigsRunOrAreRefused(const std::string &trainer, const std::string &args) {
  const std::string base = "variant = gated_deltanet\nratio = 1:1\nlayers = 2\nwidth = 16\nheads = 2\nhead_dim = 8\n"
                           "seq_len = 40\nbatch = 2\nsteps = 2\nwarmup = 1\neval_every = 1\nval_batches = 1\n"
                           "eval_lengths = 36\neval_samples = 1\ndata_dir = " +
                           (trainerRunsRoot() / "data").string() + "\n";
  const std::vector<std::pair<std::string, std::string>> edges = {
      {"layers", "1"},         {"width", "2"},          {"heads", "1"},         {"head_dim", "2"},
      {"head_dim", "3"},       {"mlp_hidden", "0"},     {"mlp_hidden", "1"},    {"short_conv", "1"},
      {"short_conv", "64"},    {"seq_len", "2"},        {"seq_len", "3"},       {"seq_len", "4"},
      {"batch", "1"},          {"steps", "0"},          {"warmup", "0"},        {"eval_every", "0"},
      {"mqar_pairs", "1"},     {"mqar_pairs", "100"},   {"ratio", "pure"},      {"ratio", "transformer"},
      {"ratio", "24:1"},       {"variant", "hgrn"},     {"variant", "rwkv6"},   {"grad_clip", "0"},
      {"lr", "0"},             {"precision", "bf16"},   {"eval_lengths", "36, 300"}};
  int refused = 0;
  for (const char *mode : {"train", "mqar"})
    for (const auto &[key, value] : edges) {
      // A key set twice is refused by the parser, so the edge replaces the base's line.
      std::string config, line;
      std::istringstream lines(base);
      while (std::getline(lines, line))
        if (line.rfind(key + " =", 0) != 0)
          config += line + "\n";
      config += key + " = " + value + "\n";
      TrainerRun r = runTrainer(trainer, "edge", config, args, mode);
      std::string what = std::string(mode) + " with " + key + " = " + value;
      EXPECT_TRUE(r.status == 0 || (WIFEXITED(r.status) && WEXITSTATUS(r.status) == 1)) << what << "\n" << r.output;
      if (r.status != 0) {
        ++refused;
        EXPECT_NE(r.output.find("linac-train: error: "), std::string::npos) << what << "\n" << r.output;
      }
    }
  EXPECT_EQ(refused, 4); // head_dim = 3 (both modes), seq_len = 2 and 3 (mqar)
}

} // namespace linac::rt::test

#endif
