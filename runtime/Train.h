#ifndef LINAC_RUNTIME_TRAIN_H
#define LINAC_RUNTIME_TRAIN_H

// Training: AdamW with decoupled weight decay, linear warm-up then cosine decay,
// global-norm gradient clipping, checkpoints that resume bit-identically, a CSV
// loss log and an SVG plot of it.

#include "Data.h"
#include "Model.h"
#include "Parallel.h"

#include <string>
#include <utility>
#include <vector>

namespace linac::rt {

/// Everything besides the parameters that a resumed run needs to continue exactly.
struct TrainState {
  int step = 0;
  Rng dataRng;
  std::vector<float> m, v; ///< AdamW moments, laid out like the parameters
};

TrainState initialState(const Model &model);

double learningRate(const Config &cfg, int step);
/// Scales the gradients to global norm cfg.gradClip when above it; returns the norm before clipping.
double clipGradients(std::vector<float> &grads, double maxNorm);
/// One AdamW update (beta1 0.9, beta2 0.95, eps 1e-8) at `step` (1-based, for bias correction).
void adamwStep(Model &model, TrainState &state, double lr, int step);

/// Checkpoint layout (little-endian): "LINACKPT", uint32 version 1, uint32 0, uint64 config hash, uint64 step,
/// uint64 data RNG state, uint64 parameter count n, uint64 layout hash (parameter names and shapes),
/// float[n] parameters, float[n] m, float[n] v, uint64 FNV-1a checksum of all bytes before it.
void saveCheckpoint(const std::string &path, Model &model, const TrainState &state);
/// Throws Error naming the file and what is wrong: not a checkpoint, truncated, corrupt, or from another config.
void loadCheckpoint(const std::string &path, Model &model, TrainState &state);

/// Where a model's arithmetic runs. The parameters, the AdamW moments and the step have their home in Model and
/// TrainState on the host whatever the backend, so data, schedule, logs, checkpoints and evaluation are shared
/// and a checkpoint written by one backend resumes on the other. A GPU backend (runtime/cuda) works on device
/// copies and writes them back in sync().
class Backend {
public:
  virtual ~Backend() = default;
  virtual Model &model() = 0;
  /// As Model::forward; logits() then holds the [B, T, 256] logits on the host.
  virtual double forward(const int32_t *tokens, const int32_t *targets, int B, int T) = 0;
  virtual const float *logits() = 0;
  /// One optimisation step on the batch: gradients of its loss, clipped to global norm cfg.gradClip, then AdamW
  /// at lr (step 1-based). Returns the loss; gradNorm gets the norm before clipping.
  virtual double trainStep(const int32_t *tokens, const int32_t *targets, int B, int T, double lr, int step,
                           TrainState &state, double &gradNorm) = 0;
  /// Makes model().params.values, state.m and state.v current.
  virtual void sync(TrainState &state) = 0;
  /// Data parallelism (Parallel.h): trainStep then trains on this rank's slice of each global batch and sums
  /// the gradients over the ranks before clipping and the update, which every rank takes alike.
  void setReducer(Reducer *r) { reducer = r; }

protected:
  Reducer *reducer = nullptr;
};

/// The reference: Model's own loops, the moments in TrainState.
class CpuBackend : public Backend {
public:
  explicit CpuBackend(Model &model) : m(model) {}
  Model &model() override { return m; }
  double forward(const int32_t *tokens, const int32_t *targets, int B, int T) override;
  const float *logits() override { return m.logits(); }
  double trainStep(const int32_t *tokens, const int32_t *targets, int B, int T, double lr, int step,
                   TrainState &state, double &gradNorm) override;
  void sync(TrainState &) override {}

private:
  Model &m;
};

/// Mean loss over cfg.valBatches fixed batches of the validation shard.
double validationLoss(Backend &backend, const Shard &val);

struct TrainOptions {
  std::string outDir;             ///< log.csv, loss.svg and model.ckpt go here
  const Shard *val = nullptr;     ///< validation loss every cfg.evalEvery steps when set
  int stopAt = -1;                ///< stop after this step instead of cfg.steps (tests, interrupted runs)
  bool quiet = false;
  bool writeFiles = true;         ///< false: no log, plot or checkpoint (data-parallel ranks but the first)
};

struct TrainResult {
  std::vector<double> losses; ///< per step run in this call
  double tokensPerSecond = 0;
  double lastValLoss = 0;
};

/// Runs steps state.step .. cfg.steps (or stopAt), appending to the log when resuming.
TrainResult train(Backend &backend, TrainState &state, BatchSource &source, const TrainOptions &opts);
/// The same on the CPU.
TrainResult train(Model &model, TrainState &state, BatchSource &source, const TrainOptions &opts);

/// The (step, loss) points of a log.csv that train() writes: every step's training loss, and the validation loss
/// where one was taken.
struct LossLog {
  std::vector<std::pair<double, double>> train, val;
};
LossLog readLossLog(const std::string &csvPath);

/// Plots the train (and validation) loss columns of a log written by train().
void writeLossPlot(const std::string &csvPath, const std::string &svgPath, const std::string &title);

} // namespace linac::rt

#endif
