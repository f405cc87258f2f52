#ifndef LINAC_RUNTIME_CUDA_CUDABACKEND_H
#define LINAC_RUNTIME_CUDA_CUDABACKEND_H

// The hybrid model of Model.h on one GPU: the same layers, the same flat parameter layout (every weight is found
// by its name in Model::params, so a checkpoint is the same file whichever backend wrote it), the dense ops of
// CudaOps.h and the linacc-compiled recurrence launchers of CudaKernels.h. Parameters, gradients and AdamW
// moments stay on the device between steps; sync() copies them back for checkpoints.

#include "runtime/Train.h"

#include <memory>
#include <vector>

namespace linac::rt::cuda {

class CudaBackend : public Backend {
public:
  /// Uploads model.params.values and state.m / state.v. Throws Error when cfg.variant has no GPU kernel.
  CudaBackend(Model &model, const TrainState &state);
  ~CudaBackend() override;

  Model &model() override;
  double forward(const int32_t *tokens, const int32_t *targets, int B, int T) override;
  const float *logits() override;
  double trainStep(const int32_t *tokens, const int32_t *targets, int B, int T, double lr, int step,
                   TrainState &state, double &gradNorm) override;
  void sync(TrainState &state) override;

  /// The loss of the batch and its parameter gradients (unclipped), in Model::params' layout; for tests.
  double lossAndGradients(const int32_t *tokens, const int32_t *targets, int B, int T, std::vector<float> &grads);

private:
  struct Impl;
  std::unique_ptr<Impl> impl;
};

std::unique_ptr<Backend> makeCudaBackend(Model &model, const TrainState &state);

} // namespace linac::rt::cuda

#endif
