#ifndef LINAC_RUNTIME_PARALLEL_H
#define LINAC_RUNTIME_PARALLEL_H

// Data parallelism: R ranks each take a slice of every global batch, sum their gradients and take the same
// optimiser step, so a run matches one rank at the same global batch (to rounding). runRanks starts the ranks
// as processes meeting in shared memory: CPU ranks, or ranks sharing a GPU through host copies. (Gradient sums
// over NCCL, one GPU per rank, are not built yet: no machine with several GPUs has been lent.)

#include <cstddef>
#include <cstdint>
#include <functional>

namespace linac::rt {

class Reducer {
public:
  virtual ~Reducer() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// x[i] <- the sum over ranks of x[i], summed in rank order in double, so every rank gets the same bits.
  /// Every rank must call it with the same n.
  virtual void sum(double *x, size_t n) = 0;
  virtual void sum(float *x, size_t n) = 0;
};

/// Runs body(reducer) in `ranks` forked processes and waits for them. Returns 0 when every rank returned 0;
/// when a rank fails (non-zero return, exception, signal) the others are stopped and its code returned.
/// Call it before anything starts threads or a CUDA context: each rank makes its own.
int runRanks(int ranks, const std::function<int(Reducer &)> &body);

/// Rows [first, first + rows) of a global batch of B rows that `reducer`'s rank trains on; throws Error unless
/// B divides by the rank count.
struct RankSlice {
  int first = 0, rows = 0;
};
RankSlice rankSlice(const Reducer &reducer, int B);

/// Targets that count in the loss (not -1) among n.
double scoredTargets(const int32_t *targets, size_t n);

/// The part of a global batch of B rows of T tokens that a backend trains on: all of it without a reducer,
/// else the rank's slice (rankSlice) and its scored targets (for reduceGradients).
struct RankBatch {
  const int32_t *tokens, *targets;
  int rows;
  double scored;
};
RankBatch rankBatch(const Reducer *reducer, const int32_t *tokens, const int32_t *targets, int B, int T);

/// Combines the ranks' gradients of their slices into the gradient of the global batch's mean loss: each
/// rank's mean-loss gradient weighs by its scored targets. `grads` (n floats) and `loss` come in as this rank's
/// and leave as the global batch's, identical on every rank.
void reduceGradients(Reducer &reducer, float *grads, size_t n, double &loss, double scored);

} // namespace linac::rt

#endif
