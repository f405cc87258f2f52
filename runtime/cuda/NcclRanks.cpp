#include "NcclRanks.h"

#include "runtime/Config.h"

#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <nccl.h>
#include <string>
#include <vector>

namespace linac::rt::cuda {

namespace {

/// libnccl.so.2, opened when NCCL ranks start: linac-train-cuda does not depend on it otherwise.
struct Nccl {
  decltype(&ncclGetUniqueId) getUniqueId;
  decltype(&ncclCommInitRank) commInitRank;
  decltype(&ncclAllReduce) allReduce;
  decltype(&ncclCommDestroy) commDestroy;
  decltype(&ncclGetErrorString) getErrorString;
};

const Nccl &nccl() {
  static const Nccl loaded = [] {
    void *library = dlopen("libnccl.so.2", RTLD_NOW | RTLD_GLOBAL);
    if (!library)
      throw Error(std::string("--reduce nccl: cannot load libnccl.so.2 (") + dlerror() +
                  "); put its folder on LD_LIBRARY_PATH");
    auto symbol = [&](const char *name) {
      void *address = dlsym(library, name);
      if (!address)
        throw Error(std::string("--reduce nccl: libnccl.so.2 has no ") + name);
      return address;
    };
    return Nccl{reinterpret_cast<decltype(&ncclGetUniqueId)>(symbol("ncclGetUniqueId")),
                reinterpret_cast<decltype(&ncclCommInitRank)>(symbol("ncclCommInitRank")),
                reinterpret_cast<decltype(&ncclAllReduce)>(symbol("ncclAllReduce")),
                reinterpret_cast<decltype(&ncclCommDestroy)>(symbol("ncclCommDestroy")),
                reinterpret_cast<decltype(&ncclGetErrorString)>(symbol("ncclGetErrorString"))};
  }();
  return loaded;
}

void check(cudaError_t status, const char *what) {
  if (status != cudaSuccess)
    throw Error(std::string(what) + ": " + cudaGetErrorString(status));
}

void check(ncclResult_t status, const char *what) {
  if (status != ncclSuccess)
    throw Error(std::string(what) + ": " + nccl().getErrorString(status));
}

/// Sums through a device buffer and ncclAllReduce; NCCL gives every rank the same result.
class NcclReducer : public Reducer {
public:
  NcclReducer(ncclComm_t comm, int rank, int size) : comm(comm), r(rank), n(size) {}
  ~NcclReducer() override { cudaFree(buffer); }
  int rank() const override { return r; }
  int size() const override { return n; }
  void sum(double *x, size_t count) override { allReduce(x, count, sizeof(double), ncclDouble); }
  void sum(float *x, size_t count) override { allReduce(x, count, sizeof(float), ncclFloat); }

private:
  void allReduce(void *host, size_t count, size_t element, ncclDataType_t type) {
    size_t bytes = count * element;
    if (bytes > capacity) {
      cudaFree(buffer);
      buffer = nullptr;
      check(cudaMalloc(&buffer, bytes), "NCCL staging buffer");
      capacity = bytes;
    }
    check(cudaMemcpy(buffer, host, bytes, cudaMemcpyHostToDevice), "NCCL staging upload");
    check(nccl().allReduce(buffer, buffer, count, type, ncclSum, comm, nullptr), "ncclAllReduce");
    check(cudaMemcpy(host, buffer, bytes, cudaMemcpyDeviceToHost), "NCCL staging download");
  }

  ncclComm_t comm;
  int r, n;
  void *buffer = nullptr;
  size_t capacity = 0;
};

} // namespace

int runNcclRanks(int ranks, const std::function<int(Reducer &)> &body) {
  // The processes meet in shared memory (runRanks) only to pass rank 0's NCCL id to the others.
  return runRanks(ranks, [&](Reducer &host) {
    setenv("NCCL_NVLS_ENABLE", "0", 1);
    int devices = 0;
    check(cudaGetDeviceCount(&devices), "cudaGetDeviceCount");
    if (devices < ranks)
      throw Error("NCCL ranks need a GPU each: " + std::to_string(ranks) + " ranks, " + std::to_string(devices) +
                  " GPUs (several ranks on one GPU: leave out --reduce nccl)");
    check(cudaSetDevice(host.rank()), "cudaSetDevice");
    ncclUniqueId id;
    std::memset(&id, 0, sizeof id);
    if (host.rank() == 0)
      check(nccl().getUniqueId(&id), "ncclGetUniqueId");
    std::vector<double> bytes(sizeof id.internal);
    for (size_t i = 0; i < bytes.size(); ++i)
      bytes[i] = double(static_cast<unsigned char>(id.internal[i]));
    host.sum(bytes.data(), bytes.size());
    for (size_t i = 0; i < bytes.size(); ++i)
      id.internal[i] = char(static_cast<unsigned char>(bytes[i]));
    ncclComm_t comm;
    check(nccl().commInitRank(&comm, ranks, id, host.rank()), "ncclCommInitRank");
    int code;
    {
      NcclReducer reducer(comm, host.rank(), ranks);
      code = body(reducer);
    }
    nccl().commDestroy(comm);
    return code;
  });
}

} // namespace linac::rt::cuda
