#include "Parallel.h"

#include "Config.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace linac::rt {

namespace {

/// Doubles per rank exchanged per round.
constexpr size_t kChunk = size_t(1) << 20;

struct Shared {
  pthread_barrier_t barrier;
};

/// Ranks in forked processes: each writes its chunk to its slot, all wait, each sums the slots in rank order.
class SharedMemoryReducer : public Reducer {
public:
  SharedMemoryReducer(Shared *shared, double *slots, int rank, int size)
      : shared(shared), slots(slots), r(rank), n(size) {}
  int rank() const override { return r; }
  int size() const override { return n; }
  void sum(double *x, size_t count) override {
    for (size_t at = 0; at < count; at += kChunk) {
      size_t len = std::min(kChunk, count - at);
      std::memcpy(slots + size_t(r) * kChunk, x + at, len * sizeof(double));
      pthread_barrier_wait(&shared->barrier);
      for (size_t i = 0; i < len; ++i) {
        double total = 0;
        for (int k = 0; k < n; ++k)
          total += slots[size_t(k) * kChunk + i];
        x[at + i] = total;
      }
      // Nobody overwrites a slot before every rank has read it.
      pthread_barrier_wait(&shared->barrier);
    }
  }
  void sum(float *x, size_t count) override {
    std::vector<double> wide(std::min(kChunk, count));
    for (size_t at = 0; at < count; at += kChunk) {
      size_t len = std::min(kChunk, count - at);
      std::copy(x + at, x + at + len, wide.begin());
      sum(wide.data(), len);
      std::transform(wide.begin(), wide.begin() + long(len), x + at, [](double v) { return float(v); });
    }
  }

private:
  Shared *shared;
  double *slots;
  int r, n;
};

} // namespace

int runRanks(int ranks, const std::function<int(Reducer &)> &body) {
  if (ranks < 1 || ranks > 64)
    throw Error("ranks must be in [1, 64], not " + std::to_string(ranks));
  size_t bytes = sizeof(Shared) + size_t(ranks) * kChunk * sizeof(double);
  void *region = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (region == MAP_FAILED)
    throw Error("data parallelism: cannot map " + std::to_string(bytes >> 20) + " MiB of shared memory");
  auto *shared = static_cast<Shared *>(region);
  pthread_barrierattr_t attr;
  pthread_barrierattr_init(&attr);
  pthread_barrierattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
  pthread_barrier_init(&shared->barrier, &attr, unsigned(ranks));
  auto *slots = reinterpret_cast<double *>(static_cast<char *>(region) + sizeof(Shared));

  std::fflush(stdout);
  std::fflush(stderr);
  std::vector<pid_t> children;
  for (int r = 0; r < ranks; ++r) {
    pid_t pid = fork();
    if (pid < 0)
      throw Error("data parallelism: fork failed for rank " + std::to_string(r));
    if (pid == 0) {
      int code = 1;
      try {
        SharedMemoryReducer reducer(shared, slots, r, ranks);
        code = body(reducer);
      } catch (const std::exception &e) {
        std::fprintf(stderr, "rank %d: error: %s\n", r, e.what());
      }
      std::fflush(stdout);
      std::fflush(stderr);
      _exit(code);
    }
    children.push_back(pid);
  }
  int result = 0;
  for (size_t alive = children.size(); alive > 0; --alive) {
    int status = 0;
    pid_t pid = wait(&status);
    if (pid < 0)
      break;
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (code != 0 && result == 0) {
      result = code;
      // The others would wait at the barrier for it forever.
      for (pid_t other : children)
        if (other != pid)
          kill(other, SIGTERM);
    }
  }
  // After a failure the barrier may still count the stopped ranks as waiting, and destroying it would wait for
  // them; the mapping goes away with the memory either way.
  if (result == 0)
    pthread_barrier_destroy(&shared->barrier);
  munmap(region, bytes);
  return result;
}

RankSlice rankSlice(const Reducer &reducer, int B) {
  if (B % reducer.size())
    throw Error("batch = " + std::to_string(B) + " does not split over " + std::to_string(reducer.size()) +
                " ranks (each takes batch / ranks sequences of the global batch)");
  int rows = B / reducer.size();
  return {reducer.rank() * rows, rows};
}

double scoredTargets(const int32_t *targets, size_t n) {
  return double(std::count_if(targets, targets + n, [](int32_t t) { return t >= 0; }));
}

RankBatch rankBatch(const Reducer *reducer, const int32_t *tokens, const int32_t *targets, int B, int T) {
  if (!reducer)
    return {tokens, targets, B, 0.0};
  RankSlice slice = rankSlice(*reducer, B);
  size_t offset = size_t(slice.first) * T;
  return {tokens + offset, targets + offset, slice.rows,
          scoredTargets(targets + offset, size_t(slice.rows) * T)};
}

void reduceGradients(Reducer &reducer, float *grads, size_t n, double &loss, double scored) {
  // Each rank's loss and gradient are means over its scored targets; the global batch's are their
  // scored-weighted sums over the total.
  double totals[2] = {scored > 0 ? loss * scored : 0.0, scored};
  for (size_t i = 0; i < n; ++i)
    grads[i] = scored > 0 ? float(double(grads[i]) * scored) : 0.0f;
  reducer.sum(totals, 2);
  reducer.sum(grads, n);
  double inverse = totals[1] > 0 ? 1.0 / totals[1] : 0.0;
  for (size_t i = 0; i < n; ++i)
    grads[i] = float(double(grads[i]) * inverse);
  loss = totals[0] * inverse;
}

} // namespace linac::rt
