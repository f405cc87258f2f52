#ifndef LINAC_RUNTIME_CUDA_NCCLRANKS_H
#define LINAC_RUNTIME_CUDA_NCCLRANKS_H

// Data parallelism over NCCL: rank r in its own process on GPU r, sums by ncclAllReduce. Built where CMake finds
// NCCL (it ships with the CUDA toolkit); not yet run: it needs a machine with several GPUs (NCCL refuses two ranks
// on one GPU), which has not been lent. One GPU shared by several ranks takes runRanks (host sums) instead.

#include "runtime/Parallel.h"

namespace linac::rt::cuda {

/// As runRanks (Parallel.h), with each rank on device `rank` and its Reducer summing over NCCL (host arrays
/// staged through the device). NVLink multicast stays off (NCCL_NVLS_ENABLE=0). Call before any CUDA use.
int runNcclRanks(int ranks, const std::function<int(Reducer &)> &body);

} // namespace linac::rt::cuda

#endif
