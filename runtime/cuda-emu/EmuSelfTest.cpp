//===- EmuSelfTest.cpp - self-test of the CUDA driver emulator ------------===//
//
// Hand-written "kernels" (functions that run one GPU thread and call the linac_emu_* hooks) launched through
// the driver API of CudaEmu.cpp. Exit code 0 if every check passes.
//
//   g++ -std=c++17 -O2 -I/usr/local/cuda/include runtime/cuda-emu/CudaEmu.cpp
//       runtime/cuda-emu/EmuSelfTest.cpp -o /tmp/emutest -lpthread && /tmp/emutest
//
//===----------------------------------------------------------------------===//

#include "CudaEmu.h"

#include <cuda.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <csignal>
#include <sys/wait.h>
#include <unistd.h>


namespace {

int failures = 0;

void check(bool ok, const char *what) {
  std::printf("  [%s] %s\n", ok ? "ok" : "FAILED", what);
  if (!ok)
    ++failures;
}

#define CU(call)                                                                                              \
  do {                                                                                                        \
    CUresult s_ = (call);                                                                                     \
    if (s_ != CUDA_SUCCESS) {                                                                                 \
      const char *t_ = nullptr;                                                                               \
      cuGetErrorString(s_, &t_);                                                                              \
      std::printf("  [FAILED] %s: %s\n", #call, t_ ? t_ : "?");                                               \
      ++failures;                                                                                             \
    }                                                                                                         \
  } while (0)

template <class T> T &arg(void **params, int i) { return **reinterpret_cast<T **>(&params[i]); }
template <class T> T *ptr(void **params, int i) {
  return reinterpret_cast<T *>(uintptr_t(*static_cast<CUdeviceptr *>(params[i])));
}

uint32_t fbits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float bitsf(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

/// (1) ids[...] = per-thread ids; sums[block] = block-wide tree reduction in shared memory.
/// params: CUdeviceptr ids (int64 x 8 per thread), CUdeviceptr sums (int64 per block), CUdeviceptr flags.
void kIdsAndReduce(void **params) {
  int64_t *ids = ptr<int64_t>(params, 0);
  int64_t *sums = ptr<int64_t>(params, 1);
  int32_t *flags = ptr<int32_t>(params, 2);
  const int64_t tid = linac_emu_thread_id(0), n = linac_emu_block_dim(0);
  const int64_t bx = linac_emu_block_id(0), by = linac_emu_block_id(1), bz = linac_emu_block_id(2);
  const int64_t gx = linac_emu_grid_dim(0), gy = linac_emu_grid_dim(1);
  const int64_t block = bx + gx * (by + gy * bz);
  int64_t *mine = ids + (block * n + tid) * 8;
  mine[0] = tid;
  mine[1] = bx;
  mine[2] = by;
  mine[3] = bz;
  mine[4] = n;
  mine[5] = gx * 100 + gy * 10 + linac_emu_grid_dim(2);
  mine[6] = linac_emu_thread_id(1) + linac_emu_thread_id(2) + linac_emu_block_dim(1) * 10 + linac_emu_block_dim(2);
  int64_t *sh = static_cast<int64_t *>(linac_emu_shared());
  // Shared memory starts as 0xFF bytes, 16-byte aligned, with the launch's size.
  if (sh[tid] != -1 || (uintptr_t(sh) & 15) || linac_emu_shared_size() != int32_t(n * 8))
    flags[block] = 1;
  sh[tid] = tid + 1000 * block;
  linac_emu_barrier();
  for (int64_t s = n / 2; s > 0; s /= 2) {
    if (tid < s)
      sh[tid] += sh[tid + s];
    linac_emu_barrier();
  }
  if (tid == 0)
    sums[block] = sh[0];
}

/// (2) out[case * n + tid] = the shuffle hook's result for case `case` (modes/offsets/widths below).
struct ShuffleCase {
  int32_t mode, offset, width;
  bool laneOffset;  // offset = (31 - lane) + offset
};
const ShuffleCase kShuffleCases[] = {
    {0, 1, 32, false}, {0, 16, 32, false}, {0, 5, 16, false}, {0, 3, 8, false},  {1, 1, 32, false},
    {1, 3, 16, false}, {1, 17, 32, false}, {2, 2, 32, false}, {2, 9, 16, false}, {2, 31, 32, false},
    {3, 7, 32, false}, {3, 3, 16, false},  {3, 0, 32, true},  {3, 0, 16, true},  {0, 0, 32, true},
};
constexpr int kNumShuffleCases = sizeof kShuffleCases / sizeof kShuffleCases[0];

void kShuffle(void **params) {
  int64_t *out = ptr<int64_t>(params, 0);
  const int64_t tid = linac_emu_thread_id(0), n = linac_emu_block_dim(0);
  const int32_t lane = int32_t(tid % 32);
  const int32_t value = int32_t(tid * 7 + 3);
  for (int c = 0; c < kNumShuffleCases; ++c) {
    const ShuffleCase &k = kShuffleCases[c];
    int32_t offset = k.laneOffset ? (31 - lane) % k.width + k.offset : k.offset;
    if (k.mode == 0 && k.laneOffset)
      offset = lane % k.width == 0 ? 0 : 1;  // per-lane xor offsets
    out[c * n + tid] = linac_emu_shuffle(k.mode, value, offset, k.width);
  }
}

/// Reference shuffle (segment arithmetic), for offsets within the segment.
int64_t referenceShuffle(int tid, const ShuffleCase &k) {
  const int lane = tid % 32, warpBase = tid - lane;
  int offset = k.laneOffset ? (31 - lane) % k.width + k.offset : k.offset;
  if (k.mode == 0 && k.laneOffset)
    offset = lane % k.width == 0 ? 0 : 1;
  const int seg = lane / k.width * k.width;
  int src = lane;
  bool valid = true;
  switch (k.mode) {
  case 0: src = lane ^ offset; valid = src / k.width == lane / k.width; break;
  case 1: src = lane - offset; valid = src >= seg; break;
  case 2: src = lane + offset; valid = src < seg + k.width; break;
  case 3: src = seg + offset % k.width; break;
  }
  if (!valid)
    src = lane;
  return (int64_t(valid) << 32) | uint32_t((warpBase + src) * 7 + 3);
}

/// (3) One mma.sync per warp. params: int kind, CUdeviceptr A (16xK floats), B (Kx8), C (16x8, one per
/// warp), D (16x8, one per warp).
uint16_t toBf16(float f) { return uint16_t(fbits(f) >> 16); }  // exact for the test's values
uint16_t toF16(float f) {                                        // exact for the test's values
  if (f == 0)
    return std::signbit(f) ? 0x8000 : 0;
  uint16_t sign = f < 0 ? 0x8000 : 0;
  float a = std::fabs(f);
  int e;
  float m = std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
  int exponent = e - 1 + 15;
  if (exponent <= 0)  // subnormal: a = mant * 2^-24
    return uint16_t(sign | uint16_t(std::ldexp(a, 24)));
  return uint16_t(sign | (exponent << 10) | (uint16_t(std::ldexp(m * 2 - 1, 10)) & 0x3FF));
}

void kMma(void **params) {
  const int32_t kind = arg<int32_t>(params, 0);
  const float *A = ptr<float>(params, 1), *B = ptr<float>(params, 2);
  const float *C = ptr<float>(params, 3);
  float *D = ptr<float>(params, 4);
  const int64_t tid = linac_emu_thread_id(0);
  const int warp = int(tid / 32), lane = int(tid % 32), g = lane >> 2, t = lane & 3;
  const int K = kind == 0 ? 8 : 16;
  C += warp * 128;
  D += warp * 128;
  auto a = [&](int r, int c) { return A[r * K + c]; };
  auto b = [&](int r, int c) { return B[r * 8 + c]; };
  auto pack = [&](float lo, float hi) {
    return kind == 1 ? uint32_t(toBf16(lo)) | uint32_t(toBf16(hi)) << 16
                     : uint32_t(toF16(lo)) | uint32_t(toF16(hi)) << 16;
  };
  uint32_t frag[14];
  if (kind == 0) {
    frag[0] = fbits(a(g, t));
    frag[1] = fbits(a(g + 8, t));
    frag[2] = fbits(a(g, t + 4));
    frag[3] = fbits(a(g + 8, t + 4));
    frag[4] = fbits(b(t, g));
    frag[5] = fbits(b(t + 4, g));
  } else {
    frag[0] = pack(a(g, 2 * t), a(g, 2 * t + 1));
    frag[1] = pack(a(g + 8, 2 * t), a(g + 8, 2 * t + 1));
    frag[2] = pack(a(g, 2 * t + 8), a(g, 2 * t + 9));
    frag[3] = pack(a(g + 8, 2 * t + 8), a(g + 8, 2 * t + 9));
    frag[4] = pack(b(2 * t, g), b(2 * t + 1, g));
    frag[5] = pack(b(2 * t + 8, g), b(2 * t + 9, g));
  }
  frag[6] = fbits(C[g * 8 + 2 * t]);
  frag[7] = fbits(C[g * 8 + 2 * t + 1]);
  frag[8] = fbits(C[(g + 8) * 8 + 2 * t]);
  frag[9] = fbits(C[(g + 8) * 8 + 2 * t + 1]);
  frag[10] = frag[11] = frag[12] = frag[13] = 0;
  linac_emu_mma(kind, frag);
  D[g * 8 + 2 * t] = bitsf(frag[10]);
  D[g * 8 + 2 * t + 1] = bitsf(frag[11]);
  D[(g + 8) * 8 + 2 * t] = bitsf(frag[12]);
  D[(g + 8) * 8 + 2 * t + 1] = bitsf(frag[13]);
}

/// (3b) ldmatrix: a 16 x 24 16-bit matrix M in shared memory (rows 48 bytes apart, element (r, c) = 64 r + c);
/// lane l addresses row l % 16 at column 8 (l / 16): matrix i is M's 8 x 8 block at rows 8 (i % 2), columns
/// 8 (i / 2). Each lane stores its words of x4, x4.trans, x2 and x1: out[(warp * 32 + lane) * 11 + word].
constexpr int kLdPitch = 24;
void kLdmatrix(void **params) {
  uint32_t *out = ptr<uint32_t>(params, 0);
  const int64_t tid = linac_emu_thread_id(0), lane = tid % 32;
  auto *sh = static_cast<uint16_t *>(linac_emu_shared());
  for (int64_t e = tid; e < 16 * kLdPitch; e += linac_emu_block_dim(0))
    sh[e] = uint16_t(64 * (e / kLdPitch) + e % kLdPitch);
  linac_emu_barrier();
  const uint16_t *row = sh + (lane % 16) * kLdPitch + 8 * (lane / 16);
  uint32_t *mine = out + tid * 11;
  linac_emu_ldmatrix(4, 0, row, mine);
  linac_emu_ldmatrix(4, 1, row, mine + 4);
  linac_emu_ldmatrix(2, 0, row, mine + 8);
  linac_emu_ldmatrix(1, 0, row, mine + 10);
}
void kLdmatrixMisaligned(void **) {
  auto *sh = static_cast<char *>(linac_emu_shared());
  uint32_t words[4];
  linac_emu_ldmatrix(4, 0, sh + 16 * (linac_emu_thread_id(0) % 32) + 4, words);
}
void kLdmatrixOutside(void **) {  // lane 31's row is past the block's 512 bytes; lanes 16-31 are read by x4 only
  auto *sh = static_cast<char *>(linac_emu_shared());
  uint32_t words[4];
  const int64_t lane = linac_emu_thread_id(0) % 32;
  const char *row = sh + 16 * lane + (lane == 31 ? 512 : 0);
  linac_emu_ldmatrix(2, 0, row, words);
  linac_emu_ldmatrix(4, 0, row, words);
}

/// (4) Broken kernels.
void kBarrierEvenOnly(void **) {
  if (linac_emu_thread_id(0) % 2 == 0)
    linac_emu_barrier();
}
void kBarrierVsShuffle(void **) {  // even threads at the barrier, odd threads at a shuffle: deadlock
  if (linac_emu_thread_id(0) % 2 == 0)
    linac_emu_barrier();
  else
    linac_emu_shuffle(0, 1, 1, 32);
}
void kShuffleHalfWarp(void **) {  // lanes 16-31 exit, lanes 0-15 shuffle
  if (linac_emu_thread_id(0) % 32 < 16)
    linac_emu_shuffle(2, 1, 1, 16);
}
void kShuffleVsMma(void **) {  // lanes disagree on the collective
  uint32_t frag[14] = {};
  if (linac_emu_thread_id(0) % 32 < 16)
    linac_emu_shuffle(2, 1, 1, 16);
  else
    linac_emu_mma(0, frag);
}
void kBadWidth(void **) { linac_emu_shuffle(0, 1, 1, 12); }

/// (5) A missing barrier: out[t] = shared[t - 1] right after writing shared[t].
void kMissingBarrier(void **params) {
  int32_t *out = ptr<int32_t>(params, 0);
  const int64_t tid = linac_emu_thread_id(0), n = linac_emu_block_dim(0);
  int32_t *sh = static_cast<int32_t *>(linac_emu_shared());
  sh[tid] = int32_t(tid);
  out[tid] = sh[(tid + n - 1) % n];
}
void kWithBarrier(void **params) {
  int32_t *out = ptr<int32_t>(params, 0);
  const int64_t tid = linac_emu_thread_id(0), n = linac_emu_block_dim(0);
  int32_t *sh = static_cast<int32_t *>(linac_emu_shared());
  sh[tid] = int32_t(tid);
  linac_emu_barrier();
  out[tid] = sh[(tid + n - 1) % n];
}

/// (6) out[t] = 1 if in[t] is NaN.
void kIsNan(void **params) {
  const float *in = ptr<float>(params, 0);
  int32_t *out = ptr<int32_t>(params, 1);
  const int64_t tid = linac_emu_thread_id(0);
  out[tid] = std::isnan(in[tid]) ? 1 : 0;
}

/// (7) Touches all of its dynamic shared memory.
void kBigShared(void **params) {
  int32_t *out = ptr<int32_t>(params, 0);
  const int64_t tid = linac_emu_thread_id(0), n = linac_emu_block_dim(0);
  unsigned char *sh = static_cast<unsigned char *>(linac_emu_shared());
  const int32_t size = linac_emu_shared_size();
  int32_t bad = 0;
  for (int32_t i = int32_t(tid); i < size; i += int32_t(n))
    bad += sh[i] != 0xFF;
  linac_emu_barrier();
  for (int32_t i = int32_t(tid); i < size; i += int32_t(n))
    sh[i] = uint8_t(i);
  linac_emu_barrier();
  for (int32_t i = int32_t(tid); i < size; i += int32_t(n))
    bad += sh[(i + 1) % size] != uint8_t((i + 1) % size);
  out[tid] = bad;
  if (tid == 0)
    out[n] = size;
}

/// (8) `iterations` barriers, then `iterations` shuffles.
void kManyBarriers(void **params) {
  const int32_t iterations = arg<int32_t>(params, 0);
  for (int32_t i = 0; i < iterations; ++i)
    linac_emu_barrier();
}
void kManyShuffles(void **params) {
  const int32_t iterations = arg<int32_t>(params, 0);
  int32_t *out = ptr<int32_t>(params, 1);
  uint32_t v = uint32_t(linac_emu_thread_id(0));
  for (int32_t i = 0; i < iterations; ++i)
    v += uint32_t(linac_emu_shuffle(0, int32_t(v), 1 << (i % 5), 32));
  out[linac_emu_thread_id(0)] = int32_t(v);
}

/// Multi-worker: each block adds its threads' ids to total with atomics; uses expf on the fiber stack.
void kAtomicSum(void **params) {
  int64_t *total = ptr<int64_t>(params, 0);
  float *scratch = ptr<float>(params, 1);
  const int64_t tid = linac_emu_thread_id(0), block = linac_emu_block_id(0);
  volatile double big[64];  // some stack use around an SSE library call
  for (int i = 0; i < 64; ++i)
    big[i] = i;
  scratch[block * linac_emu_block_dim(0) + tid] = std::exp(float(tid % 7) * 0.1f) + float(big[tid % 64]) * 0;
  __atomic_fetch_add(total, tid + block, __ATOMIC_RELAXED);
  linac_emu_barrier();
}

/// cp.async: each thread copies its word of src into shared memory in two groups; it records what the
/// destination held before any wait (the NaN pattern), after waiting for all but the newest group (the first
/// group's word only), and after waiting for all.
void kCpAsync(void **params) {
  const uint32_t *src = ptr<uint32_t>(params, 0);
  uint32_t *out = ptr<uint32_t>(params, 1);
  const int64_t tid = linac_emu_thread_id(0), n = linac_emu_block_dim(0);
  auto *shared = static_cast<uint32_t *>(linac_emu_shared());
  linac_emu_cp_async(&shared[tid], &src[tid], 4);
  linac_emu_cp_async_commit();
  linac_emu_cp_async(&shared[n + tid], &src[n + tid], 4);
  linac_emu_cp_async_commit();
  out[tid] = shared[tid];
  linac_emu_cp_async_wait(1);
  out[n + tid] = shared[tid];
  out[2 * n + tid] = shared[n + tid];
  linac_emu_cp_async_wait(0);
  out[3 * n + tid] = shared[n + tid];
}

/// Reads element `at` (a kernel argument, may be out of range) of a float buffer (where == 0) or of the
/// block's shared memory (where == 1) and stores it to out[0]; where == 2: copies the buffer's element to
/// shared memory by cp.async and exits without waiting for it.
void kReadAt(void **params) {
  const float *src = ptr<float>(params, 0);
  float *out = ptr<float>(params, 1);
  const int64_t at = arg<int64_t>(params, 2), where = arg<int64_t>(params, 3);
  if (where == 2) {
    linac_emu_cp_async(linac_emu_shared(), &src[at], 4);
    linac_emu_cp_async_commit();
    return;
  }
  const float *from = where == 0 ? src : static_cast<const float *>(linac_emu_shared());
  out[0] = *const_cast<volatile const float *>(&from[at]);
}

struct Registrar {  // mimics the static constructors of host-compiled kernel objects
  Registrar() {
    linac_emu_register("read_at", kReadAt);
    linac_emu_register("ids_reduce", kIdsAndReduce);
    linac_emu_register("shuffle", kShuffle);
    linac_emu_register("mma", kMma);
    linac_emu_register("ldmatrix", kLdmatrix);
    linac_emu_register("ldmatrix_misaligned", kLdmatrixMisaligned);
    linac_emu_register("ldmatrix_outside", kLdmatrixOutside);
    linac_emu_register("barrier_even_only", kBarrierEvenOnly);
    linac_emu_register("barrier_vs_shuffle", kBarrierVsShuffle);
    linac_emu_register("shuffle_half_warp", kShuffleHalfWarp);
    linac_emu_register("shuffle_vs_mma", kShuffleVsMma);
    linac_emu_register("bad_width", kBadWidth);
    linac_emu_register("missing_barrier", kMissingBarrier);
    linac_emu_register("with_barrier", kWithBarrier);
    linac_emu_register("is_nan", kIsNan);
    linac_emu_register("big_shared", kBigShared);
    linac_emu_register("many_barriers", kManyBarriers);
    linac_emu_register("many_shuffles", kManyShuffles);
    linac_emu_register("atomic_sum", kAtomicSum);
    linac_emu_register("cp_async", kCpAsync);
    linac_emu_register("ids_reduce", kIdsAndReduce);  // same entry again: silently accepted
  }
} registrar;

//===----------------------------------------------------------------------===//
// Host side
//===----------------------------------------------------------------------===//

CUmodule module;

CUfunction function(const char *name) {
  CUfunction f = nullptr;
  CU(cuModuleGetFunction(&f, module, name));
  return f;
}

CUdeviceptr alloc(size_t bytes) {
  CUdeviceptr p = 0;
  CU(cuMemAlloc(&p, bytes));
  return p;
}

template <class T> std::vector<T> download(CUdeviceptr p, size_t count) {
  std::vector<T> v(count);
  CU(cuMemcpyDtoH(v.data(), p, count * sizeof(T)));
  return v;
}

CUresult launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned shared,
                std::vector<void *> params) {
  return cuLaunchKernel(f, gx, gy, gz, bx, 1, 1, shared, nullptr, params.data(), nullptr);
}

std::string errorText(CUresult s) {
  const char *t = nullptr;
  cuGetErrorString(s, &t);
  return t ? t : "?";
}

void testDriver() {
  std::printf("driver API basics\n");
  CUdevice dev = -1;
  check(cuDeviceGet(&dev, 0) == CUDA_ERROR_NOT_INITIALIZED, "cuDeviceGet before cuInit: NOT_INITIALIZED");
  CU(cuInit(0));
  CU(cuDeviceGet(&dev, 0));
  check(cuDeviceGet(&dev, 1) == CUDA_ERROR_INVALID_DEVICE, "cuDeviceGet(1): INVALID_DEVICE");
  char name[128];
  CU(cuDeviceGetName(name, sizeof name, dev));
  std::printf("  device: %s\n", name);
  int sms = 0, optIn = 0, cc = 0, warp = 0;
  CU(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
  CU(cuDeviceGetAttribute(&optIn, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, dev));
  CU(cuDeviceGetAttribute(&cc, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
  CU(cuDeviceGetAttribute(&warp, CU_DEVICE_ATTRIBUTE_WARP_SIZE, dev));
  check(sms == 132 && optIn == 232448 && cc == 9 && warp == 32, "device attributes (132 SMs, 232448 B, sm_9x)");
  int dummy;
  check(cuDeviceGetAttribute(&dummy, CU_DEVICE_ATTRIBUTE_ECC_ENABLED, dev) == CUDA_ERROR_INVALID_VALUE,
        "unknown device attribute: INVALID_VALUE");
  CUdeviceptr p;
  check(cuMemAlloc(&p, 16) == CUDA_ERROR_INVALID_CONTEXT, "cuMemAlloc without a current context");
  CUcontext ctx;
  CU(cuDevicePrimaryCtxRetain(&ctx, dev));
  CU(cuCtxSetCurrent(ctx));
  CUdevice current = -1;
  CU(cuCtxGetDevice(&current));
  check(current == 0, "cuCtxGetDevice");
  CU(cuModuleLoadData(&module, "ignored image"));
  CUfunction f;
  check(cuModuleGetFunction(&f, module, "no_such_kernel") == CUDA_ERROR_NOT_FOUND,
        "cuModuleGetFunction of an unregistered name: NOT_FOUND");
  int attr = -1;
  CU(cuFuncGetAttribute(&attr, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, function("mma")));
  check(attr == 0, "CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 0");
  CUdeviceptr buf = alloc(1000);
  check(buf % 256 == 0, "allocations are 256-byte aligned");
  std::vector<uint32_t> host(250, 7);
  CU(cuMemcpyHtoD(buf, host.data(), 1000));
  check(cuMemcpyHtoD(buf + 8, host.data(), 1000) == CUDA_ERROR_INVALID_VALUE,
        "cuMemcpyHtoD past the allocation's end: INVALID_VALUE");
  CU(cuMemsetD32Async(buf + 4, 0x12345678u, 10, nullptr));
  CU(cuMemsetD8(buf + 100, 0xAB, 4));
  auto back = download<uint32_t>(buf, 250);
  check(back[0] == 7 && back[1] == 0x12345678u && back[10] == 0x12345678u && back[11] == 7 &&
            back[25] == 0xABABABABu && back[26] == 7,
        "cuMemcpy / cuMemsetD32Async / cuMemsetD8 round trip");
  check(cuMemsetD32(buf + 2, 0, 1) == CUDA_ERROR_INVALID_VALUE, "misaligned cuMemsetD32: INVALID_VALUE");
  CUdeviceptr other;
  CU(cuMemAllocAsync(&other, 1000, nullptr));
  CU(cuMemcpyDtoD(other, buf, 1000));
  check(download<uint32_t>(other, 250) == back, "cuMemcpyDtoD");
  CU(cuMemFreeAsync(other, nullptr));
  CU(cuMemFree(buf));
  check(cuMemFree(buf) == CUDA_ERROR_INVALID_VALUE, "double cuMemFree: INVALID_VALUE");
  const char *ename = nullptr;
  CU(cuGetErrorName(CUDA_ERROR_LAUNCH_FAILED, &ename));
  check(ename && std::strcmp(ename, "CUDA_ERROR_LAUNCH_FAILED") == 0, "cuGetErrorName");
}

void testIds() {
  std::printf("(1) thread/block ids and a shared-memory reduction, grid 3x2x1, block 1024\n");
  const unsigned gx = 3, gy = 2, n = 1024, blocks = gx * gy;
  CUdeviceptr ids = alloc(blocks * n * 8 * 8), sums = alloc(blocks * 8), flags = alloc(blocks * 4);
  CU(cuMemsetD32(flags, 0, blocks));
  CU(launch(function("ids_reduce"), gx, gy, 1, n, n * 8, {&ids, &sums, &flags}));
  auto hid = download<int64_t>(ids, blocks * n * 8);
  auto hsum = download<int64_t>(sums, blocks);
  auto hflag = download<int32_t>(flags, blocks);
  bool idsOk = true, sumsOk = true, flagsOk = true;
  for (unsigned b = 0; b < blocks; ++b) {
    for (unsigned t = 0; t < n; ++t) {
      const int64_t *m = &hid[(b * n + t) * 8];
      idsOk &= m[0] == t && m[1] == b % gx && m[2] == b / gx && m[3] == 0 && m[4] == n && m[5] == 321 &&
               m[6] == 11;
    }
    sumsOk &= hsum[b] == int64_t(n) * (n - 1) / 2 + 1000 * int64_t(b) * n;
    flagsOk &= hflag[b] == 0;
  }
  check(idsOk, "every thread saw its thread id, block id, block dim and grid dim");
  check(flagsOk, "shared memory: 0xFF at block start, 16-byte aligned, linac_emu_shared_size = 8192");
  check(sumsOk, "block-wide reductions with 11 barriers per block");
  CU(cuMemFree(ids));
  CU(cuMemFree(sums));
  CU(cuMemFree(flags));
}

void testShuffle() {
  std::printf("(2) warp shuffles (xor/up/down/idx, widths 32/16/8, valid flags), block 64\n");
  const unsigned n = 64;
  CUdeviceptr out = alloc(kNumShuffleCases * n * 8);
  CU(launch(function("shuffle"), 1, 1, 1, n, 0, {&out}));
  auto h = download<int64_t>(out, kNumShuffleCases * n);
  const char *modes[] = {"xor", "up", "down", "idx"};
  for (int c = 0; c < kNumShuffleCases; ++c) {
    const ShuffleCase &k = kShuffleCases[c];
    int wrong = 0, invalid = 0;
    for (unsigned t = 0; t < n; ++t) {
      wrong += h[c * n + t] != referenceShuffle(int(t), k);
      invalid += (h[c * n + t] >> 32) == 0;
    }
    char what[160];
    std::snprintf(what, sizeof what, "%-4s offset %s%-2d width %-2d: %u lanes match the reference, %d invalid",
                  modes[k.mode], k.laneOffset ? "per-lane+" : "", k.offset, k.width, n - wrong, invalid);
    check(wrong == 0, what);
  }
  CU(cuMemFree(out));
}

void testMma() {
  std::printf("(3) mma.sync against a reference product, 2 warps each\n");
  const char *names[] = {"m16n8k8 tf32", "m16n8k16 bf16", "m16n8k16 f16"};
  for (int kind = 0; kind < 3; ++kind) {
    const int K = kind == 0 ? 8 : 16;
    std::vector<float> A(16 * K), B(K * 8), C(2 * 128);
    for (int i = 0; i < 16; ++i)
      for (int k = 0; k < K; ++k) {
        float v = float((i * 3 + k * 5) % 11 - 5) * 0.5f;
        if (kind == 0)
          v += std::ldexp(1.0f, -20) * float(k % 3);  // below tf32 precision: must be ignored
        if (kind == 2 && i == 3 && k == 2)
          v = std::ldexp(1.0f, -20);  // an f16 subnormal
        A[i * K + k] = v;
      }
    for (int k = 0; k < K; ++k)
      for (int j = 0; j < 8; ++j)
        B[k * 8 + j] = float((k * 7 + j * 3) % 9 - 4) * 0.25f + (kind == 2 && k == 2 && j == 5 ? 1024.0f : 0.0f);
    for (int i = 0; i < 256; ++i)
      C[i] = float(i % 13) - 6.0f + (i >= 128 ? 100.0f : 0.0f);
    CUdeviceptr dA = alloc(A.size() * 4), dB = alloc(B.size() * 4), dC = alloc(C.size() * 4),
                dD = alloc(C.size() * 4);
    CU(cuMemcpyHtoD(dA, A.data(), A.size() * 4));
    CU(cuMemcpyHtoD(dB, B.data(), B.size() * 4));
    CU(cuMemcpyHtoD(dC, C.data(), C.size() * 4));
    int32_t k32 = kind;
    CU(launch(function("mma"), 1, 1, 1, 64, 0, {&k32, &dA, &dB, &dC, &dD}));
    auto D = download<float>(dD, 256);
    int wrong = 0;
    double maxErr = 0;
    for (int w = 0; w < 2; ++w)
      for (int i = 0; i < 16; ++i)
        for (int j = 0; j < 8; ++j) {
          double ref = C[w * 128 + i * 8 + j];
          for (int k = 0; k < K; ++k) {
            float a = A[i * K + k], b = B[k * 8 + j];
            if (kind == 0) {
              a = bitsf(fbits(a) & 0xFFFFE000u);
              b = bitsf(fbits(b) & 0xFFFFE000u);
            }
            ref += double(a) * double(b);
          }
          float got = D[w * 128 + i * 8 + j];
          maxErr = std::max(maxErr, std::fabs(double(got) - double(float(ref))));
          wrong += got != float(ref);
        }
    char what[160];
    std::snprintf(what, sizeof what, "kind %d (%s): %d of 256 outputs differ from the reference (max error %g)",
                  kind, names[kind], wrong, maxErr);
    check(wrong == 0, what);
    CU(cuMemFree(dA));
    CU(cuMemFree(dB));
    CU(cuMemFree(dC));
    CU(cuMemFree(dD));
  }
}

void testLdmatrix() {
  std::printf("(3b) ldmatrix.m8n8.b16 x4, x4.trans, x2, x1, 2 warps\n");
  CUdeviceptr out = alloc(64 * 11 * 4);
  CU(launch(function("ldmatrix"), 1, 1, 1, 64, 16 * kLdPitch * 2, {&out}));
  auto words = download<uint32_t>(out, 64 * 11);
  auto m = [](int r, int c) { return uint32_t(64 * r + c); };
  int wrong = 0;
  for (int tid = 0; tid < 64; ++tid) {
    const int g = (tid % 32) / 4, t = tid % 4;
    const uint32_t *w = &words[size_t(tid) * 11];
    for (int i = 0; i < 4; ++i) {
      const int r0 = 8 * (i % 2), c0 = 8 * (i / 2);
      // Row g of block i, elements 2t and 2t + 1; transposed: column g, rows 2t and 2t + 1.
      uint32_t plain = m(r0 + g, c0 + 2 * t) | m(r0 + g, c0 + 2 * t + 1) << 16;
      uint32_t trans = m(r0 + 2 * t, c0 + g) | m(r0 + 2 * t + 1, c0 + g) << 16;
      wrong += w[i] != plain;
      wrong += w[4 + i] != trans;
      if (i < 2)
        wrong += w[8 + i] != plain;
      if (i < 1)
        wrong += w[10] != plain;
    }
  }
  char what[120];
  std::snprintf(what, sizeof what, "%d of %d words differ from M's blocks", wrong, 64 * 11);
  check(wrong == 0, what);
  CU(cuMemFree(out));
  CUresult s = launch(function("ldmatrix_misaligned"), 1, 1, 1, 32, 512, {});
  check(s == CUDA_ERROR_LAUNCH_FAILED && errorText(s).find("not 16-byte aligned") != std::string::npos,
        "a row address off 16 bytes fails the launch");
  s = launch(function("ldmatrix_outside"), 1, 1, 1, 32, 512, {});
  std::printf("         cuGetErrorString: %s\n", errorText(s).c_str());
  check(s == CUDA_ERROR_LAUNCH_FAILED && errorText(s).find("thread 31: ldmatrix row address 1008 bytes") != std::string::npos,
        "x2 ignores lane 31's row; x4 reads it, past shared memory: the launch fails");
}

void testFailures() {
  std::printf("(4) broken kernels fail the launch, later launches still work\n");
  struct Case {
    const char *kernel, *what;
  } cases[] = {
      {"barrier_even_only", "barrier on even threads only"},
      {"barrier_vs_shuffle", "even threads at the barrier, odd threads at a shuffle"},
      {"shuffle_half_warp", "shuffle with half of the warp exited"},
      {"shuffle_vs_mma", "lanes disagree (shuffle vs mma)"},
      {"bad_width", "shuffle width 12"},
  };
  for (const Case &c : cases) {
    CUresult s = launch(function(c.kernel), 2, 1, 1, 64, 0, {});
    check(s == CUDA_ERROR_LAUNCH_FAILED, c.what);
    std::printf("         cuGetErrorString: %s\n", errorText(s).c_str());
  }
  setenv("LINAC_CUDA_EMU_BARRIER", "lenient", 1);
  check(launch(function("barrier_even_only"), 2, 1, 1, 64, 0, {}) == CUDA_SUCCESS,
        "LINAC_CUDA_EMU_BARRIER=lenient: the even-only barrier is released (exited threads count as arrived)");
  unsetenv("LINAC_CUDA_EMU_BARRIER");
}

void testRecovery() {
  CUdeviceptr ids = alloc(64 * 8 * 8), sums = alloc(8), flags = alloc(4);
  CU(cuMemsetD32(flags, 0, 1));
  CU(launch(function("ids_reduce"), 1, 1, 1, 64, 64 * 8, {&ids, &sums, &flags}));
  check(download<int64_t>(sums, 1)[0] == 64 * 63 / 2 && download<int32_t>(flags, 1)[0] == 0,
        "a correct launch after the failures gives the right reduction");
  CU(cuMemFree(ids));
  CU(cuMemFree(sums));
  CU(cuMemFree(flags));
}

void testOrder() {
  std::printf("(5) LINAC_CUDA_EMU_ORDER=reverse (read at each launch), block 256\n");
  const unsigned n = 256;
  CUdeviceptr out = alloc(n * 4);
  auto stale = [&](const char *kernel) {
    CU(launch(function(kernel), 1, 1, 1, n, n * 4, {&out}));
    auto h = download<int32_t>(out, n);
    int count = 0;
    for (unsigned t = 0; t < n; ++t)
      count += h[t] != int32_t((t + n - 1) % n);
    return count;
  };
  unsetenv("LINAC_CUDA_EMU_ORDER");
  int fwd = stale("missing_barrier");
  setenv("LINAC_CUDA_EMU_ORDER", "reverse", 1);
  int rev = stale("missing_barrier");
  int revOk = stale("with_barrier");
  unsetenv("LINAC_CUDA_EMU_ORDER");
  int fwdOk = stale("with_barrier");
  int fwdAgain = stale("missing_barrier");
  std::printf("         missing barrier: %d stale reads ascending, %d reversed, %d ascending again\n", fwd, rev,
              fwdAgain);
  check(fwd == 1 && rev == int(n) - 1 && fwdAgain == 1, "a missing barrier shows in both orders");
  check(fwdOk == 0 && revOk == 0, "with the barrier both orders read every value");
  CU(cuMemFree(out));
}

void testNan() {
  std::printf("(6) fresh cuMemAlloc memory reads as NaN\n");
  const unsigned n = 1024;
  CUdeviceptr in = alloc(n * 4), out = alloc(n * 4);
  auto host = download<float>(in, n);
  bool allNan = true;
  for (float v : host)
    allNan &= std::isnan(v);
  check(allNan, "cuMemcpyDtoH of fresh memory: every float is NaN");
  CU(launch(function("is_nan"), 1, 1, 1, n, 0, {&in, &out}));
  auto flags = download<int32_t>(out, n);
  int nans = 0;
  for (int32_t v : flags)
    nans += v;
  check(nans == int(n), "a kernel reading fresh memory sees NaN in every thread");
  CU(cuMemFree(in));
  CU(cuMemFree(out));
}

void testShared() {
  std::printf("(7) 100000 bytes of dynamic shared memory need cuFuncSetAttribute\n");
  CUfunction f = function("big_shared");
  CUdeviceptr out = alloc(257 * 4);
  CUresult s = launch(f, 1, 1, 1, 256, 100000, {&out});
  check(s == CUDA_ERROR_INVALID_VALUE, "without the attribute: CUDA_ERROR_INVALID_VALUE");
  check(cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 232449) == CUDA_ERROR_INVALID_VALUE,
        "cuFuncSetAttribute(232449): INVALID_VALUE");
  CU(cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 100000));
  int attr = 0;
  CU(cuFuncGetAttribute(&attr, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, f));
  check(attr == 100000, "cuFuncGetAttribute returns the stored limit");
  s = launch(f, 2, 1, 1, 256, 100000, {&out});
  check(s == CUDA_SUCCESS, "with the attribute the launch succeeds");
  auto h = download<int32_t>(out, 257);
  int bad = 0;
  for (int i = 0; i < 256; ++i)
    bad += h[i];
  check(bad == 0 && h[256] == 100000, "all 100000 bytes start as 0xFF and are usable");
  check(launch(f, 1, 1, 1, 256, 232449, {&out}) == CUDA_ERROR_INVALID_VALUE, "232449 bytes: INVALID_VALUE");
  check(launch(f, 1, 1, 1, 100, 0, {&out}) == CUDA_ERROR_INVALID_VALUE, "block of 100 threads: INVALID_VALUE");
  check(cuLaunchKernel(f, 1, 1, 1, 64, 2, 1, 0, nullptr, nullptr, nullptr) == CUDA_ERROR_INVALID_VALUE,
        "blockDim.y = 2: INVALID_VALUE");
  CU(cuMemFree(out));
}

void testTiming() {
  std::printf("(8) switch cost\n");
  CUevent start, stop;
  CU(cuEventCreate(&start, CU_EVENT_DEFAULT));
  CU(cuEventCreate(&stop, CU_EVENT_DEFAULT));
  setenv("LINAC_CUDA_EMU_THREADS", "1", 1);
  int32_t iterations = 1000;
  CU(launch(function("many_barriers"), 1, 1, 1, 1024, 0, {&iterations}));  // warm the stacks
  CU(cuEventRecord(start, nullptr));
  auto t0 = std::chrono::steady_clock::now();
  CU(launch(function("many_barriers"), 1, 1, 1, 1024, 0, {&iterations}));
  auto t1 = std::chrono::steady_clock::now();
  CU(cuEventRecord(stop, nullptr));
  CU(cuEventSynchronize(stop));
  float ms = 0;
  CU(cuEventElapsedTime(&ms, start, stop));
  double secs = std::chrono::duration<double>(t1 - t0).count();
  double resumes = 1024.0 * (iterations + 1);
  std::printf("         1024 threads x %d barriers = %.3g fiber resumes in %.1f ms (cuEventElapsedTime %.1f ms):"
              " %.1f ns per resume (a switch in and out)\n",
              iterations, resumes, secs * 1e3, ms, secs * 1e9 / resumes);
#ifndef LINAC_EMU_UCONTEXT
  check(secs < 1.0, "1e6 barrier-separated switches take well under a second");
#else
  std::printf("  [--] ucontext fallback build: swapcontext makes a system call per switch; no time limit\n");
#endif
  CUdeviceptr out = alloc(1024 * 4);
  t0 = std::chrono::steady_clock::now();
  CU(launch(function("many_shuffles"), 1, 1, 1, 1024, 0, {&iterations, &out}));
  t1 = std::chrono::steady_clock::now();
  secs = std::chrono::duration<double>(t1 - t0).count();
  std::printf("         1024 threads x %d shuffles = %.3g warp collectives in %.1f ms: %.1f ns per lane-shuffle\n",
              iterations, 32.0 * iterations, secs * 1e3, secs * 1e9 / (1024.0 * iterations));
  unsetenv("LINAC_CUDA_EMU_THREADS");
  CU(cuMemFree(out));
  CU(cuEventDestroy(start));
  CU(cuEventDestroy(stop));
}

void testCpAsync() {
  std::printf("cp.async: copies complete at wait_group, not before\n");
  const unsigned n = 64;
  std::vector<uint32_t> host(2 * n);
  for (unsigned i = 0; i < 2 * n; ++i)
    host[i] = 1000 + i;
  CUdeviceptr src = alloc(2 * n * 4), out = alloc(4 * n * 4);
  CU(cuMemcpyHtoD(src, host.data(), 2 * n * 4));
  CU(launch(function("cp_async"), 1, 1, 1, n, 2 * n * 4, {&src, &out}));
  auto o = download<uint32_t>(out, 4 * n);
  bool ok = true;
  for (unsigned t = 0; t < n; ++t)
    ok &= o[t] == 0xffffffffu && o[n + t] == host[t] && o[2 * n + t] == 0xffffffffu && o[3 * n + t] == host[n + t];
  check(ok, "a destination reads NaN bits until its group is waited for, then the source's word");
  CU(cuMemFree(src));
  CU(cuMemFree(out));
}

/// Launches read_at in a child process (one block, one worker); returns its stderr and whether it aborted.
std::string readAtChild(int64_t at, int64_t where, bool &aborted) {
  int pipeFds[2];
  if (pipe(pipeFds) != 0)
    return "pipe failed";
  std::fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(pipeFds[1], 2);
    close(pipeFds[0]);
    setenv("LINAC_CUDA_EMU_THREADS", "1", 1);
    CUdeviceptr src = alloc(100 * 4), out = alloc(4);
    CU(launch(function("read_at"), 1, 1, 1, 32, 64, {&src, &out, &at, &where}));
    _exit(0);
  }
  close(pipeFds[1]);
  std::string text;
  char buffer[512];
  for (ssize_t n; (n = read(pipeFds[0], buffer, sizeof buffer)) > 0;)
    text.append(buffer, size_t(n));
  close(pipeFds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  aborted = WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT;
  return text;
}

void testGuards() {
  std::printf("guarded memory: reads outside a device allocation or the shared memory (cp.async too) abort "
              "with a message\n");
  struct Case {
    int64_t at, where;
    bool faults;
    const char *expect;
  } cases[] = {
      {99, 0, false, ""},  // the last element
      {100, 0, false, ""},  // in the allocation's rounding to 256 bytes: not caught
      {128, 0, true, "112 bytes past the end of a device allocation of 400 bytes"},
      {-8192, 0, true, "32768 bytes before a device allocation of 400 bytes"},
      {15, 1, false, ""},  // the last word of 64 bytes of shared memory
      {16, 1, true, "0 bytes past the end of the block's shared memory of 64 bytes"},
      {99, 2, false, ""},
      {-1024, 2, true, "4096 bytes before a device allocation of 400 bytes"},  // no wait follows the copy
  };
  for (const Case &c : cases) {
    bool aborted = false;
    std::string text = readAtChild(c.at, c.where, aborted);
    char what[200];
    const char *space = c.where == 0 ? "global" : c.where == 1 ? "shared" : "cp.async of global";
    std::snprintf(what, sizeof what, "%s element %lld: %s", space, (long long)c.at,
                  c.faults ? c.expect : "no fault");
    bool ok = c.faults ? aborted && text.find(c.expect) != std::string::npos &&
                             text.find("in kernel read_at, block (0,0,0), thread 0") != std::string::npos
                       : !aborted && text.empty();
    if (!ok)
      std::printf("    child stderr: %s\n", text.c_str());
    check(ok, what);
  }
}

void testWorkers() {
  std::printf("worker threads: grid 97 blocks of 128 threads with atomics and expf\n");
  for (const char *threads : {"1", "2", "4"}) {
    setenv("LINAC_CUDA_EMU_THREADS", threads, 1);
    const unsigned blocks = 97, n = 128;
    CUdeviceptr total = alloc(8), scratch = alloc(blocks * n * 4);
    CU(cuMemsetD32(total, 0, 2));
    CU(launch(function("atomic_sum"), blocks, 1, 1, n, 0, {&total, &scratch}));
    int64_t expected = int64_t(blocks) * n * (n - 1) / 2 + int64_t(n) * blocks * (blocks - 1) / 2;
    auto s = download<float>(scratch, blocks * n);
    bool expOk = true;
    for (unsigned i = 0; i < blocks * n; ++i)
      expOk &= std::fabs(s[i] - std::exp(float(i % n % 7) * 0.1f)) < 1e-6f;
    char what[128];
    std::snprintf(what, sizeof what, "LINAC_CUDA_EMU_THREADS=%s: atomic total and expf results", threads);
    check(download<int64_t>(total, 1)[0] == expected && expOk, what);
    CU(cuMemFree(total));
    CU(cuMemFree(scratch));
  }
  unsetenv("LINAC_CUDA_EMU_THREADS");
}

} // namespace

int main() {
  testDriver();
  testIds();
  testShuffle();
  testMma();
  testLdmatrix();
  testFailures();
  testRecovery();
  testOrder();
  testNan();
  testCpAsync();
  testGuards();
  testShared();
  testWorkers();
  testTiming();
  CU(cuModuleUnload(module));
  std::printf("%s (%d failed checks)\n", failures ? "FAILED" : "PASSED", failures);
  return failures ? 1 : 0;
}
