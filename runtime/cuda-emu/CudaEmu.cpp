//===- CudaEmu.cpp - a CPU emulator of the CUDA driver API ----------------===//
//
// A stand-in for libcuda on machines without a GPU. Our compiler also compiles every GPU kernel for the
// host; those host copies register themselves here (linac_emu_register, from static constructors) and call
// the linac_emu_* hooks below for thread ids, barriers, warp shuffles and mma.sync. An unmodified CUDA
// driver-API program (test harness, generated launchers) linked against this file instead of libcuda then
// runs its kernels on the CPU:
//
//  * "Device memory" is host memory: a CUdeviceptr is a host address. Memory from cuMemAlloc* is filled with
//    0xFF bytes (a NaN pattern) so reads of memory nobody wrote show up as NaN. Each allocation, and each
//    block's dynamic shared memory, lies between inaccessible guard regions: a kernel's access outside its
//    buffers aborts with a message naming the buffer, kernel, block and thread (a GPU's illegal address).
//  * cp.async reads its source when issued and writes its destination at the wait that covers it.
//  * Streams are ignored: every call completes before it returns.
//  * Each GPU thread of a block runs on its own user-level fiber. A block's scheduler resumes every runnable
//    fiber in turn (ascending thread id, or descending with LINAC_CUDA_EMU_ORDER=reverse); a fiber runs
//    until it reaches a barrier or a warp collective, or exits, and then switches straight to the next
//    runnable fiber (the last one of a pass back to the scheduler). Warp collectives (shuffle, mma) complete when
//    all 32 lanes of the warp wait at them; the barrier completes when every thread of the block waits at it.
//    Lanes that disagree on a collective, a collective with exited lanes, a barrier reached while other
//    threads have exited (unless LINAC_CUDA_EMU_BARRIER=lenient) and deadlocks fail the launch with
//    CUDA_ERROR_LAUNCH_FAILED and a message naming the threads (stderr, cuGetErrorString, and
//    linac_emu_last_error()).
//  * Blocks run on min(LINAC_CUDA_EMU_THREADS (default: hardware threads), blocks) OS threads (the calling
//    thread and persistent helpers), each with its own fiber pool. Variables are read at every launch.
//
// Build: g++ -std=c++17 -O2 -I/usr/local/cuda/include CudaEmu.cpp ... -lpthread. Define LINAC_EMU_UCONTEXT
// to use the <ucontext.h> fiber switch instead of the x86-64 assembly one (the only choice on other hosts).
// AddressSanitizer builds annotate every fiber switch (__sanitizer_start/finish_switch_fiber).
//
//===----------------------------------------------------------------------===//

// Default visibility for the driver API even when built with -fvisibility=hidden (e.g. as libcuda.so): the
// definitions below take it from these declarations.
#pragma GCC visibility push(default)
#include <cuda.h>
#include "CudaEmu.h"
#pragma GCC visibility pop

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <sys/mman.h>
#include <unistd.h>

#if defined(__x86_64__) && !defined(LINAC_EMU_UCONTEXT)
#define LINAC_EMU_ASM_SWITCH 1
#else
#define LINAC_EMU_ASM_SWITCH 0
#include <ucontext.h>
#endif

#if defined(__SANITIZE_ADDRESS__)
#define LINAC_EMU_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LINAC_EMU_ASAN 1
#endif
#endif
#ifndef LINAC_EMU_ASAN
#define LINAC_EMU_ASAN 0
#endif
#if LINAC_EMU_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

#define LINAC_EMU_EXPORT extern "C" __attribute__((visibility("default")))

//===----------------------------------------------------------------------===//
// Context switch
//===----------------------------------------------------------------------===//

#if LINAC_EMU_ASM_SWITCH
// void linac_emu_switch_context(void **save, void *load): pushes the SysV callee-saved registers (rbp, rbx,
// r12-r15) on the current stack, stores rsp to *save, loads rsp from `load`, pops the registers saved there
// and returns on that stack. A new fiber's stack is prepared (initFiber) to look like a suspended switch
// whose return address is linac_emu_fiber_start and whose r12 holds the Fiber.
// linac_emu_fiber_start passes r12 to linac_emu_fiber_main, which never returns. MXCSR and the x87 control
// word are not switched: kernels do not change them, and every fiber inherits the worker thread's values.
extern "C" void linac_emu_switch_context(void **save, void *load) __attribute__((visibility("hidden")));
extern "C" void linac_emu_fiber_start() __attribute__((visibility("hidden")));
asm(R"(
    .text
    .p2align 4
    .globl  linac_emu_switch_context
    .hidden linac_emu_switch_context
    .type   linac_emu_switch_context, @function
linac_emu_switch_context:
    endbr64
    pushq   %rbp
    pushq   %rbx
    pushq   %r12
    pushq   %r13
    pushq   %r14
    pushq   %r15
    movq    %rsp, (%rdi)
    movq    %rsi, %rsp
    popq    %r15
    popq    %r14
    popq    %r13
    popq    %r12
    popq    %rbx
    popq    %rbp
    ret
    .size   linac_emu_switch_context, .-linac_emu_switch_context

    .p2align 4
    .globl  linac_emu_fiber_start
    .hidden linac_emu_fiber_start
    .type   linac_emu_fiber_start, @function
linac_emu_fiber_start:
    .cfi_startproc
    .cfi_undefined rip
    endbr64
    movq    %r12, %rdi
    call    linac_emu_fiber_main@PLT
    ud2
    .cfi_endproc
    .size   linac_emu_fiber_start, .-linac_emu_fiber_start
)");
#endif

extern "C" __attribute__((visibility("hidden"), noreturn, used)) void linac_emu_fiber_main(void *fiber);

namespace {

//===----------------------------------------------------------------------===//
// Limits of the emulated device (an H200, sm_90)
//===----------------------------------------------------------------------===//

constexpr int kMultiprocessors = 132;
constexpr int kSharedOptIn = 232448;      // per-block opt-in maximum of dynamic shared memory
constexpr int kSharedDefault = 49152;     // what a block may take without cuFuncSetAttribute
constexpr int kMaxThreadsPerBlock = 1024;
constexpr int kWarp = 32;
constexpr int kMaxWarps = kMaxThreadsPerBlock / kWarp;
constexpr size_t kStackBytes = 256 * 1024;
constexpr const char *kDeviceName = "linac CPU emulator of sm_90 (H200 limits)";

//===----------------------------------------------------------------------===//
// Fibers and the block scheduler
//===----------------------------------------------------------------------===//

struct Context {
#if LINAC_EMU_ASM_SWITCH
  void *sp = nullptr;
#else
  ucontext_t uc;
#endif
};

inline void rawSwitch(Context &from, Context &to) {
#if LINAC_EMU_ASM_SWITCH
  linac_emu_switch_context(&from.sp, to.sp);
#else
  swapcontext(&from.uc, &to.uc);
#endif
}

enum : uint8_t { kRunnable, kAtBarrier, kAtCollective, kExited };
enum : uint8_t { kShuffle = 1, kMma = 2, kLdmatrix = 3 };

struct Sched;
struct Job;

struct Fiber {
  Context ctx;
  Sched *sched = nullptr;
  char *stackLo = nullptr;
  uint32_t tid = 0;
  uint8_t state = kExited;
  uint8_t coll = 0;    // kShuffle, kMma or kLdmatrix while state == kAtCollective
  int32_t mode = 0;    // shuffle mode, mma kind, or ldmatrix matrices | transposed << 4
  int32_t bits = 0, offset = 0, width = 0;
  uint32_t *frag = nullptr;
  const char *row = nullptr;  // ldmatrix: the row this lane addresses
  int64_t result = 0;  // shuffle result
  // cp.async copies not yet complete, oldest first, and where each committed group ends in them.
  // The source is read when the copy is issued (so a copy no wait follows, e.g. a prefetch issued by a
  // loop's last iteration, still reads its source as the GPU does), the destination written at the wait.
  struct AsyncCopy {
    void *dst;
    unsigned char value[16];
    int32_t bytes;
  };
  std::vector<AsyncCopy> copies;
  std::vector<size_t> groupEnds;
#if LINAC_EMU_ASAN
  void *fakeStack = nullptr;
#endif
};

bool unmapGuarded(char *data);

/// One worker thread's fiber pool and the state of the block it runs.
struct Sched {
  // Fiber pool: `capacity` stacks of kStackBytes, each above a PROT_NONE guard page, in one mapping.
  std::vector<Fiber> fibers;
  char *region = nullptr;
  size_t regionBytes = 0;
  uint32_t capacity = 0;
  Context main;
#if LINAC_EMU_ASAN
  void *mainFakeStack = nullptr;
  const void *mainBottom = nullptr;
  size_t mainSize = 0;
  bool stacksDirty = false;
#endif
  // Dynamic shared memory of the block.
  char *shared = nullptr;  // mapGuarded()
  size_t sharedBytes = 0;
  // The running block.
  const Job *job = nullptr;
  uint32_t blockId[3] = {0, 0, 0};
  uint32_t nthreads = 0;
  bool reverse = false;  // this launch's pass order
  uint32_t exited = 0, atBarrier = 0, atCollective = 0;
  uint8_t warpWaiting[kMaxWarps] = {};
  uint8_t warpExited[kMaxWarps] = {};
  bool failed = false;
  // What the running block did: barriers completed, mma.sync and shuffles completed per warp (trace counts).
  uint64_t barriers = 0, mmas = 0, shuffles = 0;
  char fiberFailure[256] = "";  // set by failFromFiber
  std::string failure;

  ~Sched() {
    if (region)
      munmap(region, regionBytes);
    if (shared)
      unmapGuarded(shared);
  }
};

/// A launch: what every worker needs to run its blocks.
struct Job {
  std::string name;
  void (*entry)(void **) = nullptr;
  void **params = nullptr;
  uint32_t grid[3] = {1, 1, 1};
  uint32_t blockDim = 0;
  uint32_t sharedBytes = 0;
  bool reverse = false;
  bool lenientBarrier = false;
  uint64_t blocks = 0;
  std::atomic<uint64_t> next{0};
  std::atomic<bool> failed{false};
  // Totals over the launch's blocks (LINAC_CUDA_EMU_TRACE): barriers, warp mma.sync and warp shuffles.
  std::atomic<uint64_t> barriers{0}, mmas{0}, shuffles{0};
  std::mutex mu;
  std::string error;
};

// The fiber running on this thread (null outside kernels). Initial-exec: the hooks read it on every call.
thread_local Fiber *tlFiber __attribute__((tls_model("initial-exec"))) = nullptr;

Sched &threadSched() {
  thread_local Sched sched;
  return sched;
}

[[noreturn]] void fatal(const char *what) {
  std::fprintf(stderr, "linac cuda emulator: %s\n", what);
  std::fflush(stderr);
  std::abort();
}

//===----------------------------------------------------------------------===//
// Guarded memory: device allocations and blocks' shared memory between inaccessible regions
//===----------------------------------------------------------------------===//

// Each device allocation and each worker's shared memory is its own mapping: kGuardBytes of PROT_NONE on
// both sides, the data ending where the upper guard begins (its size rounded up to the alignment). A
// kernel's access outside its buffers then faults here, where a GPU reports an illegal address, instead of
// reading whatever host memory lies next to the buffer. The fault handler names the mapping, the kernel, its
// block and thread, and aborts. Not caught: accesses in the data's rounding to its alignment (up to 255
// bytes past the end of a device allocation), in the rest of its first page (before the data), and more than
// kGuardBytes away.
constexpr size_t kGuardBytes = size_t(4) << 20;

struct Guarded {
  char *base = nullptr;  // the whole mapping, guards included
  size_t length = 0;
  char *data = nullptr;
  size_t bytes = 0;  // requested
  const char *what = "";
};

std::mutex gGuardMu;
std::map<uintptr_t, Guarded> gGuarded;  // by base
struct sigaction gPreviousSegv;

void onFault(int sig, siginfo_t *info, void *context) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(info->si_addr);
  char msg[640];
  int n = 0;
  // Not held by the faulting thread (it is running a kernel); another worker may hold it briefly, mapping its
  // shared memory.
  bool locked = false;
  for (int i = 0; i < 1000000 && !(locked = gGuardMu.try_lock()); ++i) {
  }
  if (locked) {
    auto it = gGuarded.upper_bound(a);
    if (it != gGuarded.begin()) {
      const Guarded &g = (--it)->second;
      const uintptr_t data = uintptr_t(g.data), end = data + g.bytes;
      if (a < uintptr_t(g.base) + g.length && (a < data || a >= end))
        n = a < data ? std::snprintf(msg, sizeof msg,
                                     "linac cuda emulator: illegal address %p, %zu bytes before %s of %zu bytes "
                                     "at %p",
                                     info->si_addr, size_t(data - a), g.what, g.bytes, static_cast<void *>(g.data))
                     : std::snprintf(msg, sizeof msg,
                                     "linac cuda emulator: illegal address %p, %zu bytes past the end of %s of %zu "
                                     "bytes at %p",
                                     info->si_addr, size_t(a - end), g.what, g.bytes, static_cast<void *>(g.data));
    }
    gGuardMu.unlock();
  }
  if (n <= 0) {  // not ours: the previous handler (or the default action) takes the fault again
    sigaction(SIGSEGV, &gPreviousSegv, nullptr);
    (void)sig;
    (void)context;
    return;
  }
  if (const Fiber *f = tlFiber; f && f->sched && f->sched->job)
    n += std::snprintf(msg + n, sizeof msg - size_t(n), " in kernel %s, block (%u,%u,%u), thread %u",
                       f->sched->job->name.c_str(), f->sched->blockId[0], f->sched->blockId[1],
                       f->sched->blockId[2], f->tid);
  if (size_t(n) >= sizeof msg - 1)
    n = int(sizeof msg - 2);
  msg[n++] = '\n';
  ssize_t ignored = write(2, msg, size_t(n));
  (void)ignored;
  std::abort();
}

/// A guarded mapping of `bytes` whose data is `align`-aligned (a power of two at most the page size) and
/// filled with 0xFF (NaN in every float, -1 in every integer); null if out of memory.
char *mapGuarded(size_t bytes, size_t align, const char *what) {
  static std::once_flag installed;
  std::call_once(installed, [] {
    struct sigaction action {};
    action.sa_sigaction = onFault;
    action.sa_flags = SA_SIGINFO;
    sigemptyset(&action.sa_mask);
    sigaction(SIGSEGV, &action, &gPreviousSegv);
  });
  const size_t page = size_t(sysconf(_SC_PAGESIZE));
  const size_t rounded = (bytes + align - 1) & ~(align - 1);
  const size_t pages = (rounded + page - 1) & ~(page - 1);
  const size_t length = kGuardBytes + pages + kGuardBytes;
  void *p = mmap(nullptr, length, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED)
    return nullptr;
  char *base = static_cast<char *>(p);
  if (mprotect(base + kGuardBytes, pages, PROT_READ | PROT_WRITE) != 0) {
    munmap(base, length);
    return nullptr;
  }
  char *data = base + kGuardBytes + (pages - rounded);
  std::memset(data, 0xFF, rounded);
  std::lock_guard<std::mutex> lock(gGuardMu);
  gGuarded[uintptr_t(base)] = Guarded{base, length, data, bytes, what};
  return data;
}

/// Unmaps a mapGuarded() mapping by its data pointer; false if `data` is not one.
bool unmapGuarded(char *data) {
  std::lock_guard<std::mutex> lock(gGuardMu);
  auto it = gGuarded.upper_bound(uintptr_t(data));
  if (it == gGuarded.begin() || (--it)->second.data != data)
    return false;
  munmap(it->second.base, it->second.length);
  gGuarded.erase(it);
  return true;
}

inline Fiber *currentFiber(const char *hook) {
  Fiber *f = tlFiber;
  if (__builtin_expect(!f, 0)) {
    std::string msg = std::string(hook) + " called outside a kernel launched by cuLaunchKernel";
    fatal(msg.c_str());
  }
  return f;
}

/// Switches from the scheduler into fiber `f`, the first runnable fiber of a pass. Each fiber that blocks or
/// exits switches straight to the next runnable fiber of the pass (nextRunnable); the last one switches back
/// here.
inline void resume(Sched &s, Fiber &f) {
  tlFiber = &f;
#if LINAC_EMU_ASAN
  __sanitizer_start_switch_fiber(&s.mainFakeStack, f.stackLo, kStackBytes);
#endif
  rawSwitch(s.main, f.ctx);
#if LINAC_EMU_ASAN
  __sanitizer_finish_switch_fiber(s.mainFakeStack, nullptr, nullptr);
#endif
}

/// The runnable fiber after `f` in the pass order, or null.
inline Fiber *nextRunnable(Sched *s, Fiber *f) {
  Fiber *fibers = s->fibers.data();
  if (!s->reverse) {
    for (Fiber *p = f + 1, *end = fibers + s->nthreads; p < end; ++p)
      if (p->state == kRunnable)
        return p;
  } else {
    for (Fiber *p = f; p-- > fibers;)
      if (p->state == kRunnable)
        return p;
  }
  return nullptr;
}

/// Leaves fiber `f` (blocked, exited or failed) for the next runnable fiber of the pass, or the scheduler if
/// there is none (or the block failed). `fakeStack` is f's ASan fake stack slot, null when f has exited.
inline void leave(Fiber *f, void **fakeStack) {
  Sched *s = f->sched;
  Fiber *next = s->failed ? nullptr : nextRunnable(s, f);
  if (next) {
    tlFiber = next;
#if LINAC_EMU_ASAN
    __sanitizer_start_switch_fiber(fakeStack, next->stackLo, kStackBytes);
#endif
    rawSwitch(f->ctx, next->ctx);
  } else {
#if LINAC_EMU_ASAN
    __sanitizer_start_switch_fiber(fakeStack, s->mainBottom, s->mainSize);
#endif
    rawSwitch(f->ctx, s->main);
  }
  (void)fakeStack;
}

/// Blocks fiber `f` (its state already says where); returns when a later pass resumes it.
inline void suspend(Fiber *f) {
#if LINAC_EMU_ASAN
  leave(f, &f->fakeStack);
  __sanitizer_finish_switch_fiber(f->fakeStack, nullptr, nullptr);
#else
  leave(f, nullptr);
#endif
}

/// Fails the block from inside fiber `f` (a hook's misuse); never returns. The message is formatted into
/// the scheduler (printf-style `what` with one int) so that the abandoned fiber owns no heap memory.
[[noreturn]] void failFromFiber(Fiber *f, const char *what, int value) {
  Sched *s = f->sched;
  int len = std::snprintf(s->fiberFailure, sizeof s->fiberFailure, "thread %u: ", f->tid);
  std::snprintf(s->fiberFailure + len, sizeof s->fiberFailure - size_t(len), what, value);
  s->failed = true;
  suspend(f);
  fatal("a failed block's fiber was resumed");
}

#if !LINAC_EMU_ASM_SWITCH
void ucontextEntry() { linac_emu_fiber_main(tlFiber); }
#endif

/// Makes `f` start the kernel entry from the top of its stack when next resumed.
void initFiber(Sched &s, Fiber &f, uint32_t tid) {
  f.sched = &s;
  f.tid = tid;
  f.state = kRunnable;
  f.coll = 0;
#if LINAC_EMU_ASM_SWITCH
  // The frame linac_emu_switch_context pops: r15, r14, r13, r12, rbx, rbp, return address. After its `ret`
  // rsp is top - 16, 16-byte aligned, as the ABI wants before linac_emu_fiber_start's `call`.
  char *top = f.stackLo + kStackBytes;
  uintptr_t *sp = reinterpret_cast<uintptr_t *>(top - 72);
  sp[0] = 0;                                                         // r15
  sp[1] = 0;                                                         // r14
  sp[2] = 0;                                                         // r13
  sp[3] = reinterpret_cast<uintptr_t>(&f);                           // r12: the fiber
  sp[4] = 0;                                                         // rbx
  sp[5] = 0;                                                         // rbp
  sp[6] = reinterpret_cast<uintptr_t>(&linac_emu_fiber_start);       // return address
  f.ctx.sp = sp;
#else
  if (getcontext(&f.ctx.uc) != 0)
    fatal("getcontext failed");
  f.ctx.uc.uc_stack.ss_sp = f.stackLo;
  f.ctx.uc.uc_stack.ss_size = kStackBytes;
  f.ctx.uc.uc_link = nullptr;
  makecontext(&f.ctx.uc, ucontextEntry, 0);
#endif
}

/// Gives the pool at least n fibers (n <= 1024). Only called between blocks.
void ensureFibers(Sched &s, uint32_t n) {
  if (n <= s.capacity)
    return;
  if (s.region)
    munmap(s.region, s.regionBytes);
  const size_t page = size_t(sysconf(_SC_PAGESIZE));
  const size_t slot = kStackBytes + page;
  s.regionBytes = slot * n;
  void *p = mmap(nullptr, s.regionBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                 -1, 0);
  if (p == MAP_FAILED)
    fatal("cannot map fiber stacks");
  s.region = static_cast<char *>(p);
  static std::atomic<bool> warned{false};
  for (uint32_t i = 0; i < n; ++i) {
    char *guard = s.region + i * slot;
    if (mprotect(guard, page, PROT_NONE) != 0 && !warned.exchange(true))
      std::fprintf(stderr, "linac cuda emulator: warning: cannot protect fiber stack guard pages\n");
  }
  s.fibers.assign(n, Fiber());
  for (uint32_t i = 0; i < n; ++i)
    s.fibers[i].stackLo = s.region + i * slot + page;
  s.capacity = n;
}

//===----------------------------------------------------------------------===//
// Failure messages
//===----------------------------------------------------------------------===//

/// "thread 5", "threads 0-511", "threads 0,2,4,... (512 threads)".
std::string describe(const std::vector<uint32_t> &ids, const char *noun) {
  std::string out = noun;
  if (ids.size() != 1)
    out += "s";
  out += " ";
  size_t pieces = 0;
  bool contiguous = true;
  for (size_t i = 0; i < ids.size();) {
    size_t j = i;
    while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1)
      ++j;
    if (i != 0)
      contiguous = false;
    if (pieces == 8) {
      out += ",...";
      break;
    }
    if (pieces)
      out += ",";
    out += std::to_string(ids[i]);
    if (j > i)
      out += "-" + std::to_string(ids[j]);
    ++pieces;
    i = j + 1;
  }
  if (!contiguous)
    out += " (" + std::to_string(ids.size()) + " " + noun + "s)";
  return out;
}

const char *shuffleModeName(int32_t mode) {
  static const char *names[] = {"xor", "up", "down", "idx"};
  return mode >= 0 && mode < 4 ? names[mode] : "?";
}

/// What fiber `f` waits at, for messages.
std::string waitName(const Fiber &f) {
  switch (f.state) {
  case kRunnable:
    return "are runnable";
  case kAtBarrier:
    return "wait at the barrier";
  case kExited:
    return "have exited";
  default:
    if (f.coll == kShuffle)
      return std::string("wait at a warp shuffle (") + shuffleModeName(f.mode) + ")";
    if (f.coll == kLdmatrix)
      return "wait at an ldmatrix (x" + std::to_string(f.mode & 15) + (f.mode >> 4 ? ", transposed)" : ")");
    return "wait at an mma.sync (kind " + std::to_string(f.mode) + ")";
  }
}

/// Groups the fibers [first, first + count) by what they wait at: "threads 0-511 wait at the barrier;
/// threads 512-1023 have exited". Indices are printed relative to `base` with `noun`.
std::string whoWaitsWhere(const Fiber *fibers, uint32_t count, uint32_t base, const char *noun) {
  std::vector<std::pair<std::string, std::vector<uint32_t>>> groups;
  for (uint32_t i = 0; i < count; ++i) {
    std::string what = waitName(fibers[i]);
    auto it = std::find_if(groups.begin(), groups.end(), [&](auto &g) { return g.first == what; });
    if (it == groups.end()) {
      groups.push_back({what, {}});
      it = groups.end() - 1;
    }
    it->second.push_back(fibers[i].tid - base);
  }
  std::string out;
  for (auto &g : groups) {
    if (!out.empty())
      out += "; ";
    std::string verb = g.first;
    if (g.second.size() == 1) {  // singular verbs
      if (verb.compare(0, 4, "are ") == 0)
        verb = "is " + verb.substr(4);
      else if (verb.compare(0, 5, "wait ") == 0)
        verb = "waits " + verb.substr(5);
      else if (verb.compare(0, 5, "have ") == 0)
        verb = "has " + verb.substr(5);
    }
    out += describe(g.second, noun) + " " + verb;
  }
  return out;
}

std::string warpName(uint32_t w) {
  return "warp " + std::to_string(w) + " (threads " + std::to_string(w * kWarp) + "-" +
         std::to_string(w * kWarp + kWarp - 1) + ")";
}

//===----------------------------------------------------------------------===//
// Warp collectives
//===----------------------------------------------------------------------===//

inline float bitsToFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline uint32_t floatToBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float tf32ToFloat(uint32_t u) { return bitsToFloat(u & 0xFFFFE000u); }
inline float bf16ToFloat(uint16_t h) { return bitsToFloat(uint32_t(h) << 16); }
float f16ToFloat(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1Fu;
  const uint32_t mantissa = h & 0x3FFu;
  if (exponent == 0) {  // zero or subnormal: mantissa * 2^-24, exact in float
    float v = std::ldexp(float(mantissa), -24);
    return sign ? -v : v;
  }
  if (exponent == 31)  // inf or NaN
    return bitsToFloat(sign | 0x7F800000u | (mantissa << 13));
  return bitsToFloat(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

/// Warp shuffle for all 32 lanes, following PTX shfl.sync with the c operand CUDA's __shfl_*_sync(width)
/// passes (segmask = 32 - width; clamp 0 for up, 31 otherwise). Each lane uses its own offset and width.
void completeShuffle(Fiber *lanes) {
  for (uint32_t lane = 0; lane < kWarp; ++lane) {
    const Fiber &f = lanes[lane];
    const int32_t b = f.offset & 31;
    const int32_t segmask = (kWarp - f.width) & 31;
    const int32_t clamp = f.mode == 1 ? 0 : 31;
    const int32_t maxLane = (int32_t(lane) & segmask) | (clamp & ~segmask);
    const int32_t minLane = int32_t(lane) & segmask;
    int32_t j = 0;
    bool valid = false;
    switch (f.mode) {
    case 0:  // bfly
      j = int32_t(lane) ^ b;
      valid = j <= maxLane;
      break;
    case 1:  // up
      j = int32_t(lane) - b;
      valid = j >= maxLane;
      break;
    case 2:  // down
      j = int32_t(lane) + b;
      valid = j <= maxLane;
      break;
    default:  // idx
      j = minLane | (b & ~segmask & 31);
      valid = j <= maxLane;
      break;
    }
    if (!valid)
      j = int32_t(lane);
    lanes[lane].result = (int64_t(valid) << 32) | int64_t(uint32_t(lanes[j].bits));
  }
}

/// One mma.sync for the warp. Fragment layouts (g = lane >> 2, t = lane % 4), as in the PTX ISA, section
/// "Matrix Fragments for mma.m16n8k8" (tf32) and "mma.m16n8k16 with floating point type" (f16/bf16):
///   m16n8k8 tf32:  a0 = A[g][t], a1 = A[g+8][t], a2 = A[g][t+4], a3 = A[g+8][t+4];
///                  b0 = B[t][g], b1 = B[t+4][g].
///   m16n8k16 16-bit: a0 = A[g][2t..2t+1], a1 = A[g+8][2t..2t+1], a2 = A[g][2t+8..2t+9],
///                  a3 = A[g+8][2t+8..2t+9]; b0 = B[2t..2t+1][g], b1 = B[2t+8..2t+9][g]
///                  (the lower 16 bits hold the lower column (A) or row (B) index).
///   C, D (16x8 f32): c0 = C[g][2t], c1 = C[g][2t+1], c2 = C[g+8][2t], c3 = C[g+8][2t+1].
/// The A layouts and the row/col formulas (row = groupID for a0,a2 / a0,a1 ...; col = threadID_in_group ...)
/// were checked against the PTX ISA text (sections 9.7.14.5.7 and 9.7.14.5.8); the B and C/D layouts against
/// MLIR's NVGPU lane-to-coordinate maps for mma.sync (mlir/lib/Dialect/NVGPU/Utils/MMAUtils.cpp,
/// getLaneIdAndValueIdToOperandCoord), which give the same formulas.
/// D = A * B + C with exact products, summed in double and rounded once to float.
void completeMma(Fiber *lanes, int32_t kind) {
  float A[16][16], B[16][8], C[16][8];
  const int K = kind == 0 ? 8 : 16;
  for (uint32_t lane = 0; lane < kWarp; ++lane) {
    const uint32_t *fr = lanes[lane].frag;
    const int g = int(lane >> 2), t = int(lane & 3);
    if (kind == 0) {
      A[g][t] = tf32ToFloat(fr[0]);
      A[g + 8][t] = tf32ToFloat(fr[1]);
      A[g][t + 4] = tf32ToFloat(fr[2]);
      A[g + 8][t + 4] = tf32ToFloat(fr[3]);
      B[t][g] = tf32ToFloat(fr[4]);
      B[t + 4][g] = tf32ToFloat(fr[5]);
    } else {
      auto cvt = [kind](uint32_t word, int half) {
        uint16_t h = uint16_t(half ? word >> 16 : word & 0xFFFFu);
        return kind == 1 ? bf16ToFloat(h) : f16ToFloat(h);
      };
      A[g][2 * t] = cvt(fr[0], 0);
      A[g][2 * t + 1] = cvt(fr[0], 1);
      A[g + 8][2 * t] = cvt(fr[1], 0);
      A[g + 8][2 * t + 1] = cvt(fr[1], 1);
      A[g][2 * t + 8] = cvt(fr[2], 0);
      A[g][2 * t + 9] = cvt(fr[2], 1);
      A[g + 8][2 * t + 8] = cvt(fr[3], 0);
      A[g + 8][2 * t + 9] = cvt(fr[3], 1);
      B[2 * t][g] = cvt(fr[4], 0);
      B[2 * t + 1][g] = cvt(fr[4], 1);
      B[2 * t + 8][g] = cvt(fr[5], 0);
      B[2 * t + 9][g] = cvt(fr[5], 1);
    }
    C[g][2 * t] = bitsToFloat(fr[6]);
    C[g][2 * t + 1] = bitsToFloat(fr[7]);
    C[g + 8][2 * t] = bitsToFloat(fr[8]);
    C[g + 8][2 * t + 1] = bitsToFloat(fr[9]);
  }
  float D[16][8];
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 8; ++j) {
      double sum = C[i][j];
      for (int k = 0; k < K; ++k)
        sum += double(A[i][k]) * double(B[k][j]);
      D[i][j] = float(sum);
    }
  for (uint32_t lane = 0; lane < kWarp; ++lane) {
    uint32_t *fr = lanes[lane].frag;
    const int g = int(lane >> 2), t = int(lane & 3);
    fr[10] = floatToBits(D[g][2 * t]);
    fr[11] = floatToBits(D[g][2 * t + 1]);
    fr[12] = floatToBits(D[g + 8][2 * t]);
    fr[13] = floatToBits(D[g + 8][2 * t + 1]);
  }
}

/// One ldmatrix.m8n8.b16 for the warp (PTX ISA, "Warp-level matrix load instruction: ldmatrix"): matrix i's
/// eight rows of eight 16-bit elements start at the addresses lanes 8i .. 8i + 7 give; lane (g = lane >> 2,
/// t = lane % 4) receives in word i row g, elements 2t and 2t + 1 of matrix i (the lower one in the lower
/// 16 bits), or with .trans elements 2t and 2t + 1 of column g (rows 2t and 2t + 1, element g). Only the
/// addresses of lanes below 8 x matrices are read, as on the GPU.
void completeLdmatrix(Fiber *lanes, int32_t mode) {
  const int matrices = mode & 15;
  const bool transposed = mode >> 4;
  auto half = [&](int line, int element) {
    uint16_t h;
    std::memcpy(&h, lanes[line].row + 2 * element, 2);
    return uint32_t(h);
  };
  for (uint32_t lane = 0; lane < kWarp; ++lane) {
    const int g = int(lane >> 2), t = int(lane & 3);
    for (int i = 0; i < matrices; ++i)
      lanes[lane].frag[i] = transposed ? half(8 * i + 2 * t, g) | half(8 * i + 2 * t + 1, g) << 16
                                       : half(8 * i + g, 2 * t) | half(8 * i + g, 2 * t + 1) << 16;
  }
}

/// Completes the collective all 32 lanes of warp w wait at; false (with s.failure) if they disagree.
bool completeCollective(Sched &s, uint32_t w) {
  Fiber *lanes = &s.fibers[w * kWarp];
  for (uint32_t lane = 1; lane < kWarp; ++lane)
    if (lanes[lane].coll != lanes[0].coll || lanes[lane].mode != lanes[0].mode) {
      s.failure = warpName(w) + ": lanes disagree on the warp collective: " +
                  whoWaitsWhere(lanes, kWarp, w * kWarp, "lane");
      return false;
    }
  if (lanes[0].coll == kShuffle) {
    completeShuffle(lanes);
    ++s.shuffles;
  } else if (lanes[0].coll == kLdmatrix) {
    completeLdmatrix(lanes, lanes[0].mode);
  } else {
    completeMma(lanes, lanes[0].mode);
    ++s.mmas;
  }
  for (uint32_t lane = 0; lane < kWarp; ++lane)
    lanes[lane].state = kRunnable;
  s.warpWaiting[w] = 0;
  s.atCollective -= kWarp;
  return true;
}

//===----------------------------------------------------------------------===//
// Running blocks
//===----------------------------------------------------------------------===//

/// Runs block `linear` of the job on this worker; false (with s.failure) if the block fails.
bool runBlock(Sched &s, const Job &job, uint64_t linear) {
  const uint32_t n = job.blockDim;
  s.blockId[0] = uint32_t(linear % job.grid[0]);
  s.blockId[1] = uint32_t((linear / job.grid[0]) % job.grid[1]);
  s.blockId[2] = uint32_t(linear / (uint64_t(job.grid[0]) * job.grid[1]));
  ensureFibers(s, n);
#if LINAC_EMU_ASAN
  if (s.stacksDirty) {  // fibers abandoned mid-call leave poisoned frames behind
    __asan_unpoison_memory_region(s.region, s.regionBytes);
    s.stacksDirty = false;
  }
#endif
  // Exactly the launch's dynamic shared memory (rounded to 16 bytes), guarded: reads and writes past it fault.
  const size_t sharedBytes = (std::max<size_t>(job.sharedBytes, 16) + 15) & ~size_t(15);
  if (sharedBytes != s.sharedBytes) {
    if (s.shared)
      unmapGuarded(s.shared);
    s.shared = mapGuarded(sharedBytes, 16, "the block's shared memory");
    if (!s.shared)
      fatal("cannot allocate shared memory");
    s.sharedBytes = sharedBytes;
  } else {
    std::memset(s.shared, 0xFF, sharedBytes);
  }

  s.job = &job;
  s.nthreads = n;
  s.reverse = job.reverse;
  s.exited = s.atBarrier = s.atCollective = 0;
  std::memset(s.warpWaiting, 0, sizeof s.warpWaiting);
  std::memset(s.warpExited, 0, sizeof s.warpExited);
  s.failed = false;
  s.failure.clear();
  s.barriers = s.mmas = s.shuffles = 0;
  for (uint32_t i = 0; i < n; ++i)
    initFiber(s, s.fibers[i], i);

  Fiber *fibers = s.fibers.data();
  const uint32_t warps = n / kWarp;
  bool ok = true;
  for (;;) {
    // A pass: every runnable fiber, in order, runs until it blocks or exits.
    Fiber *first = nullptr;
    if (!s.reverse) {
      for (uint32_t i = 0; i < n && !first; ++i)
        if (fibers[i].state == kRunnable)
          first = &fibers[i];
    } else {
      for (uint32_t i = n; i-- > 0 && !first;)
        if (fibers[i].state == kRunnable)
          first = &fibers[i];
    }
    if (first)
      resume(s, *first);
    if (s.failed) {
      s.failure = s.fiberFailure;
      ok = false;
      break;
    }
    if (s.exited == n)
      break;
    uint32_t woken = 0;
    // Warp collectives whose lanes have all arrived.
    if (s.atCollective)
      for (uint32_t w = 0; w < warps; ++w) {
        if (!s.warpWaiting[w] || s.warpWaiting[w] + s.warpExited[w] != kWarp)
          continue;
        if (s.warpExited[w]) {
          s.failure = warpName(w) + ": a warp collective with exited lanes: " +
                      whoWaitsWhere(&fibers[w * kWarp], kWarp, w * kWarp, "lane");
          ok = false;
          break;
        }
        if (!completeCollective(s, w)) {
          ok = false;
          break;
        }
        woken += kWarp;
      }
    if (!ok)
      break;
    // The barrier, once every thread that has not exited waits at it.
    if (s.atBarrier && s.atBarrier + s.exited == n) {
      if (s.exited && !job.lenientBarrier) {
        std::vector<uint32_t> waiting, gone;
        for (uint32_t i = 0; i < n; ++i)
          (fibers[i].state == kAtBarrier ? waiting : gone).push_back(i);
        s.failure = "barrier reached by " + describe(waiting, "thread") + " while " + describe(gone, "thread") +
                    (gone.size() == 1 ? " has" : " have") + " exited";
        ok = false;
        break;
      }
      for (uint32_t i = 0; i < n; ++i)
        if (fibers[i].state == kAtBarrier)
          fibers[i].state = kRunnable;
      woken += s.atBarrier;
      s.atBarrier = 0;
      ++s.barriers;
    }
    if (!woken) {
      s.failure = "deadlock: " + whoWaitsWhere(fibers, n, 0, "thread");
      ok = false;
      break;
    }
  }
  tlFiber = nullptr;
  s.job = nullptr;
  if (!ok) {
#if LINAC_EMU_ASAN
    s.stacksDirty = true;
#endif
    s.failure = "linac cuda emulator: " + job.name + ": block (" + std::to_string(s.blockId[0]) + "," +
                std::to_string(s.blockId[1]) + "," + std::to_string(s.blockId[2]) + "): " + s.failure;
  }
  return ok;
}

/// Runs blocks of the job until none are left or one fails.
void runJob(Job &job) {
  Sched &s = threadSched();
  while (!job.failed.load(std::memory_order_relaxed)) {
    const uint64_t i = job.next.fetch_add(1, std::memory_order_relaxed);
    if (i >= job.blocks)
      break;
    const bool ok = runBlock(s, job, i);
    job.barriers += s.barriers;
    job.mmas += s.mmas;
    job.shuffles += s.shuffles;
    if (!ok) {
      std::lock_guard<std::mutex> lock(job.mu);
      if (!job.failed.load())
        job.error = s.failure;
      job.failed.store(true);
      break;
    }
  }
}

/// Persistent helper threads; the launching thread is worker 0. Never destroyed (helpers may still wait on
/// it while the process exits).
struct Pool {
  std::mutex mu;
  std::condition_variable wake, finished;
  uint64_t generation = 0;
  Job *job = nullptr;
  unsigned threads = 0, wanted = 0, running = 0;
};

Pool &pool() {
  static Pool *p = new Pool;
  return *p;
}

void helperMain(unsigned index) {
  Pool &p = pool();
  uint64_t seen = 0;
  std::unique_lock<std::mutex> lock(p.mu);
  for (;;) {
    p.wake.wait(lock, [&] { return p.generation != seen; });
    seen = p.generation;
    if (index >= p.wanted)
      continue;
    Job *job = p.job;
    lock.unlock();
    runJob(*job);
    lock.lock();
    if (--p.running == 0)
      p.finished.notify_all();
  }
}

void runOnWorkers(Job &job, unsigned workers) {
  if (workers <= 1) {
    runJob(job);
    return;
  }
  Pool &p = pool();
  const unsigned helpers = workers - 1;
  {
    std::lock_guard<std::mutex> lock(p.mu);
    while (p.threads < helpers) {
      std::thread(helperMain, p.threads).detach();
      ++p.threads;
    }
    p.job = &job;
    p.wanted = helpers;
    p.running = helpers;
    ++p.generation;
  }
  p.wake.notify_all();
  runJob(job);
  std::unique_lock<std::mutex> lock(p.mu);
  p.finished.wait(lock, [&] { return p.running == 0; });
  p.job = nullptr;
}

//===----------------------------------------------------------------------===//
// Driver objects
//===----------------------------------------------------------------------===//

using Entry = void (*)(void **);

struct Registry {
  std::mutex mu;
  std::map<std::string, Entry> kernels;
};

Registry &registry() {
  static Registry *r = new Registry;  // used from static constructors; never destroyed
  return *r;
}

struct State {
  std::mutex mu;
  std::map<uintptr_t, size_t> allocations;  // address -> requested bytes
  std::set<CUmodule> modules;
  std::set<CUfunction> functions;
  std::set<CUevent> events;
  std::mutex launchMu;  // one launch at a time
  std::mutex errorMu;
  char lastError[2048] = "";         // last launch failure or launch configuration error
  char lastFailure[2048] = "";       // last CUDA_ERROR_LAUNCH_FAILED message
  char lastFailureText[2200] = "";
};

State &state() {
  static State *s = new State;
  return *s;
}

std::atomic<bool> gInitialized{false};
thread_local CUcontext tlContext = nullptr;

void saveError(const std::string &msg, bool launchFailure) {
  State &st = state();
  {
    std::lock_guard<std::mutex> lock(st.errorMu);
    std::snprintf(st.lastError, sizeof st.lastError, "%s", msg.c_str());
    if (launchFailure)
      std::snprintf(st.lastFailure, sizeof st.lastFailure, "%s", msg.c_str());
  }
  bool print = true;
  if (print) {
    std::fprintf(stderr, "%s\n", msg.c_str());
    std::fflush(stderr);
  }
}

/// The allocation that holds [p, p + n); false if none does.
bool inAllocation(uintptr_t p, size_t n) {
  State &st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  auto it = st.allocations.upper_bound(p);
  if (it == st.allocations.begin())
    return false;
  --it;
  const size_t offset = p - it->first;
  return offset < it->second && n <= it->second - offset;
}

CUresult allocate(CUdeviceptr *dptr, size_t bytes) {
  if (!dptr || bytes == 0)
    return CUDA_ERROR_INVALID_VALUE;
  if (bytes > (size_t(1) << 46))
    return CUDA_ERROR_OUT_OF_MEMORY;
  void *p = mapGuarded(bytes, 256, "a device allocation");
  if (!p)
    return CUDA_ERROR_OUT_OF_MEMORY;
  State &st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  st.allocations[reinterpret_cast<uintptr_t>(p)] = bytes;
  *dptr = CUdeviceptr(reinterpret_cast<uintptr_t>(p));
  return CUDA_SUCCESS;
}

CUresult release(CUdeviceptr dptr) {
  if (dptr == 0)
    return CUDA_SUCCESS;
  State &st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  auto it = st.allocations.find(uintptr_t(dptr));
  if (it == st.allocations.end())
    return CUDA_ERROR_INVALID_VALUE;
  st.allocations.erase(it);
  unmapGuarded(reinterpret_cast<char *>(uintptr_t(dptr)));
  return CUDA_SUCCESS;
}

CUresult memsetRange(CUdeviceptr dst, unsigned value, size_t n, size_t elementBytes) {
  if (n == 0)
    return CUDA_SUCCESS;
  if (n > SIZE_MAX / elementBytes || uintptr_t(dst) % elementBytes != 0 ||
      !inAllocation(uintptr_t(dst), n * elementBytes))
    return CUDA_ERROR_INVALID_VALUE;
  if (elementBytes == 1) {
    std::memset(reinterpret_cast<void *>(uintptr_t(dst)), int(value & 0xFF), n);
  } else {
    uint32_t *p = reinterpret_cast<uint32_t *>(uintptr_t(dst));
    std::fill(p, p + n, uint32_t(value));
  }
  return CUDA_SUCCESS;
}

unsigned envWorkers() {
  unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  if (const char *v = std::getenv("LINAC_CUDA_EMU_THREADS")) {
    char *end = nullptr;
    long n = std::strtol(v, &end, 10);
    if (end != v && n > 0)
      return unsigned(std::min<long>(n, 1024));
  }
  return hw;
}

} // namespace

struct CUctx_st {
  int refs = 0;
};
struct CUfunc_st {
  std::string name;
  Entry entry = nullptr;
  int maxDynamicShared = kSharedDefault;
  int carveout = -1;
};
struct CUmod_st {
  std::map<std::string, CUfunction> functions;
};
struct CUevent_st {
  unsigned flags = 0;
  bool recorded = false;
  std::chrono::steady_clock::time_point when;
};

namespace {
CUctx_st gPrimary;
} // namespace

/// The fiber trampoline's C half: runs one GPU thread of the kernel, marks it exited and leaves the fiber for
/// good (to the next runnable fiber of the pass, or the scheduler).
extern "C" void linac_emu_fiber_main(void *fiber) {
  Fiber *f = static_cast<Fiber *>(fiber);
  Sched *s = f->sched;
#if LINAC_EMU_ASAN
  // The first fiber a worker ever starts is entered from the scheduler: learn the scheduler's stack.
  if (!s->mainBottom)
    __sanitizer_finish_switch_fiber(nullptr, &s->mainBottom, &s->mainSize);
  else
    __sanitizer_finish_switch_fiber(nullptr, nullptr, nullptr);
#endif
  f->copies.clear();
  f->groupEnds.clear();
  s->job->entry(s->job->params);
  f->state = kExited;
  ++s->exited;
  ++s->warpExited[f->tid / kWarp];
  leave(f, nullptr);
  fatal("an exited fiber was resumed");
}

//===----------------------------------------------------------------------===//
// Hooks called by host-compiled kernels
//===----------------------------------------------------------------------===//

LINAC_EMU_EXPORT void linac_emu_register(const char *name, void (*entry)(void **params)) {
  if (!name || !entry)
    return;
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto inserted = r.kernels.emplace(name, entry);
  if (!inserted.second && inserted.first->second != entry)
    std::fprintf(stderr,
                 "linac cuda emulator: warning: kernel %s registered twice with different code; keeping the "
                 "first\n",
                 name);
}

LINAC_EMU_EXPORT int64_t linac_emu_thread_id(int32_t dim) {
  Fiber *f = currentFiber("linac_emu_thread_id");
  return dim == 0 ? int64_t(f->tid) : 0;
}

LINAC_EMU_EXPORT int64_t linac_emu_block_id(int32_t dim) {
  Fiber *f = currentFiber("linac_emu_block_id");
  return dim >= 0 && dim < 3 ? int64_t(f->sched->blockId[dim]) : 0;
}

LINAC_EMU_EXPORT int64_t linac_emu_block_dim(int32_t dim) {
  Fiber *f = currentFiber("linac_emu_block_dim");
  return dim == 0 ? int64_t(f->sched->job->blockDim) : 1;
}

LINAC_EMU_EXPORT int64_t linac_emu_grid_dim(int32_t dim) {
  Fiber *f = currentFiber("linac_emu_grid_dim");
  return dim >= 0 && dim < 3 ? int64_t(f->sched->job->grid[dim]) : 1;
}

LINAC_EMU_EXPORT void linac_emu_barrier(void) {
  Fiber *f = currentFiber("linac_emu_barrier");
  f->state = kAtBarrier;
  ++f->sched->atBarrier;
  suspend(f);
}

namespace {
/// The fiber waits at warp collective `coll` (its operands already in the fiber) until its whole warp arrives.
void waitAtCollective(Fiber *f, uint8_t coll, int32_t mode) {
  f->coll = coll;
  f->mode = mode;
  f->state = kAtCollective;
  ++f->sched->warpWaiting[f->tid / kWarp];
  ++f->sched->atCollective;
  suspend(f);
}
} // namespace

LINAC_EMU_EXPORT int64_t linac_emu_shuffle(int32_t mode, int32_t bits, int32_t offset, int32_t width) {
  Fiber *f = currentFiber("linac_emu_shuffle");
  if (mode < 0 || mode > 3)
    failFromFiber(f, "warp shuffle with unknown mode %d", mode);
  if (width < 1 || width > kWarp || (width & (width - 1)))
    failFromFiber(f, "warp shuffle width %d is not a power of two in 1..32", width);
  f->bits = bits;
  f->offset = offset;
  f->width = width;
  waitAtCollective(f, kShuffle, mode);
  return f->result;
}

LINAC_EMU_EXPORT void linac_emu_mma(int32_t kind, uint32_t *frag) {
  Fiber *f = currentFiber("linac_emu_mma");
  if (kind < 0 || kind > 2)
    failFromFiber(f, "mma.sync of unknown kind %d", kind);
  if (!frag)
    failFromFiber(f, "mma.sync with a null fragment%.0d", 0);
  f->frag = frag;
  waitAtCollective(f, kMma, kind);
}

LINAC_EMU_EXPORT void linac_emu_ldmatrix(int32_t matrices, int32_t transposed, const void *row, uint32_t *out) {
  Fiber *f = currentFiber("linac_emu_ldmatrix");
  if (matrices != 1 && matrices != 2 && matrices != 4)
    failFromFiber(f, "ldmatrix of %d matrices (1, 2 or 4)", matrices);
  const Sched *s = f->sched;
  const auto *p = static_cast<const char *>(row);
  // The rows of the lanes whose address the instruction reads: 16-byte aligned, inside the block's shared memory.
  if (f->tid % kWarp < uint32_t(8 * matrices)) {
    if (reinterpret_cast<uintptr_t>(p) % 16)
      failFromFiber(f, "ldmatrix row address not 16-byte aligned%.0d", 0);
    if (p < s->shared || p + 16 > s->shared + s->job->sharedBytes)
      failFromFiber(f, "ldmatrix row address %d bytes from the start of the block's shared memory, outside it",
                    int(p - s->shared));
  }
  f->row = p;
  f->frag = out;
  waitAtCollective(f, kLdmatrix, matrices | (transposed ? 16 : 0));
}

LINAC_EMU_EXPORT void linac_emu_cp_async(void *dst, const void *src, int32_t bytes) {
  Fiber *f = currentFiber("linac_emu_cp_async");
  if (bytes != 4 && bytes != 8 && bytes != 16)
    failFromFiber(f, "cp.async of %d bytes (4, 8 or 16)", bytes);
  if (reinterpret_cast<uintptr_t>(dst) % bytes || reinterpret_cast<uintptr_t>(src) % bytes)
    failFromFiber(f, "cp.async of %d bytes at an address not aligned to them", bytes);
  Fiber::AsyncCopy copy{dst, {}, bytes};
  std::memcpy(copy.value, src, size_t(bytes));
  // Until the thread waits for it, the destination holds what no copy would: all ones bits (a NaN).
  std::memset(dst, 0xff, size_t(bytes));
  f->copies.push_back(copy);
}

LINAC_EMU_EXPORT void linac_emu_cp_async_commit(void) {
  Fiber *f = currentFiber("linac_emu_cp_async_commit");
  f->groupEnds.push_back(f->copies.size());
}

LINAC_EMU_EXPORT void linac_emu_cp_async_wait(int32_t n) {
  Fiber *f = currentFiber("linac_emu_cp_async_wait");
  if (n < 0)
    failFromFiber(f, "cp.async.wait_group %d", n);
  if (f->groupEnds.size() <= size_t(n))
    return;
  size_t done = f->groupEnds[f->groupEnds.size() - size_t(n) - 1];
  for (size_t i = 0; i < done; ++i)
    std::memcpy(f->copies[i].dst, f->copies[i].value, size_t(f->copies[i].bytes));
  f->copies.erase(f->copies.begin(), f->copies.begin() + long(done));
  f->groupEnds.erase(f->groupEnds.begin(), f->groupEnds.end() - n);
  for (size_t &end : f->groupEnds)
    end -= done;
}

LINAC_EMU_EXPORT void *linac_emu_shared(void) { return currentFiber("linac_emu_shared")->sched->shared; }

LINAC_EMU_EXPORT int32_t linac_emu_shared_size(void) {
  return int32_t(currentFiber("linac_emu_shared_size")->sched->job->sharedBytes);
}

/// The message of the last failed launch (or launch configuration error); "" if none.
LINAC_EMU_EXPORT const char *linac_emu_last_error(void) { return state().lastError; }

//===----------------------------------------------------------------------===//
// The driver API
//===----------------------------------------------------------------------===//

#define EMU_REQUIRE_INIT()                                                                                    \
  do {                                                                                                        \
    if (!gInitialized.load(std::memory_order_acquire))                                                        \
      return CUDA_ERROR_NOT_INITIALIZED;                                                                      \
  } while (0)
#define EMU_REQUIRE_CONTEXT()                                                                                 \
  do {                                                                                                        \
    EMU_REQUIRE_INIT();                                                                                       \
    if (!tlContext)                                                                                           \
      return CUDA_ERROR_INVALID_CONTEXT;                                                                      \
  } while (0)

namespace {
struct ErrorText {
  CUresult code;
  const char *name;
  const char *text;
};
const ErrorText kErrors[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {CUDA_ERROR_DEINITIALIZED, "CUDA_ERROR_DEINITIALIZED", "driver shutting down"},
    {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {CUDA_ERROR_INVALID_IMAGE, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
    {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {CUDA_ERROR_NOT_READY, "CUDA_ERROR_NOT_READY", "device not ready"},
    {CUDA_ERROR_LAUNCH_FAILED, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
    {CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", "too many resources requested for launch"},
    {CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN", "unknown error"},
};
const ErrorText *findError(CUresult code) {
  for (const ErrorText &e : kErrors)
    if (e.code == code)
      return &e;
  return nullptr;
}
} // namespace

extern "C" {

CUresult CUDAAPI cuGetErrorString(CUresult error, const char **pStr) {
  if (!pStr)
    return CUDA_ERROR_INVALID_VALUE;
  const ErrorText *e = findError(error);
  if (!e) {
    *pStr = nullptr;
    return CUDA_ERROR_INVALID_VALUE;
  }
  *pStr = e->text;
  if (error == CUDA_ERROR_LAUNCH_FAILED) {
    State &st = state();
    std::lock_guard<std::mutex> lock(st.errorMu);
    if (st.lastFailure[0]) {
      std::snprintf(st.lastFailureText, sizeof st.lastFailureText, "%s (%s)", e->text, st.lastFailure);
      *pStr = st.lastFailureText;
    }
  }
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGetErrorName(CUresult error, const char **pStr) {
  if (!pStr)
    return CUDA_ERROR_INVALID_VALUE;
  const ErrorText *e = findError(error);
  *pStr = e ? e->name : nullptr;
  return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult CUDAAPI cuInit(unsigned int Flags) {
  if (Flags != 0)
    return CUDA_ERROR_INVALID_VALUE;
  gInitialized.store(true, std::memory_order_release);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGet(CUdevice *device, int ordinal) {
  EMU_REQUIRE_INIT();
  if (!device)
    return CUDA_ERROR_INVALID_VALUE;
  if (ordinal != 0)
    return CUDA_ERROR_INVALID_DEVICE;
  *device = 0;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetName(char *name, int len, CUdevice dev) {
  EMU_REQUIRE_INIT();
  if (dev != 0)
    return CUDA_ERROR_INVALID_DEVICE;
  if (!name || len <= 0)
    return CUDA_ERROR_INVALID_VALUE;
  std::snprintf(name, size_t(len), "%s", kDeviceName);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev) {
  EMU_REQUIRE_INIT();
  if (dev != 0)
    return CUDA_ERROR_INVALID_DEVICE;
  if (!pi)
    return CUDA_ERROR_INVALID_VALUE;
  int v;
  switch (attrib) {
  case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: v = kMultiprocessors; break;
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: v = kSharedOptIn; break;
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: v = kSharedDefault; break;
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: v = 233472; break;
  case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: v = kMaxThreadsPerBlock; break;
  case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: v = 2048; break;
  case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X: v = 1024; break;
  case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: v = 1024; break;
  case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: v = 64; break;
  case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: v = 0x7FFFFFFF; break;
  case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: v = 65535; break;
  case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: v = 65535; break;
  case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK: v = 65536; break;
  case CU_DEVICE_ATTRIBUTE_WARP_SIZE: v = kWarp; break;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: v = 9; break;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: v = 0; break;
  case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: v = 1; break;
  case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED: v = 1; break;
  default: return CUDA_ERROR_INVALID_VALUE;
  }
  *pi = v;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev) {
  EMU_REQUIRE_INIT();
  if (dev != 0)
    return CUDA_ERROR_INVALID_DEVICE;
  if (!pctx)
    return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(state().mu);
  ++gPrimary.refs;
  *pctx = &gPrimary;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice dev) {
  EMU_REQUIRE_INIT();
  if (dev != 0)
    return CUDA_ERROR_INVALID_DEVICE;
  std::lock_guard<std::mutex> lock(state().mu);
  if (gPrimary.refs <= 0)
    return CUDA_ERROR_INVALID_CONTEXT;
  --gPrimary.refs;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxSetCurrent(CUcontext ctx) {
  EMU_REQUIRE_INIT();
  if (ctx && ctx != &gPrimary)
    return CUDA_ERROR_INVALID_CONTEXT;
  tlContext = ctx;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxGetDevice(CUdevice *device) {
  EMU_REQUIRE_CONTEXT();
  if (!device)
    return CUDA_ERROR_INVALID_VALUE;
  *device = 0;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxSynchronize(void) {
  EMU_REQUIRE_CONTEXT();
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemAlloc(CUdeviceptr *dptr, size_t bytesize) {
  EMU_REQUIRE_CONTEXT();
  return allocate(dptr, bytesize);
}

CUresult CUDAAPI cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream) {
  (void)hStream;
  EMU_REQUIRE_CONTEXT();
  return allocate(dptr, bytesize);
}

CUresult CUDAAPI cuMemFree(CUdeviceptr dptr) {
  EMU_REQUIRE_CONTEXT();
  return release(dptr);
}

CUresult CUDAAPI cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream) {
  (void)hStream;
  EMU_REQUIRE_CONTEXT();
  return release(dptr);
}

CUresult CUDAAPI cuMemcpyHtoD(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount) {
  EMU_REQUIRE_CONTEXT();
  if (ByteCount == 0)
    return CUDA_SUCCESS;
  if (!srcHost || !inAllocation(uintptr_t(dstDevice), ByteCount))
    return CUDA_ERROR_INVALID_VALUE;
  std::memcpy(reinterpret_cast<void *>(uintptr_t(dstDevice)), srcHost, ByteCount);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemcpyDtoH(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount) {
  EMU_REQUIRE_CONTEXT();
  if (ByteCount == 0)
    return CUDA_SUCCESS;
  if (!dstHost || !inAllocation(uintptr_t(srcDevice), ByteCount))
    return CUDA_ERROR_INVALID_VALUE;
  std::memcpy(dstHost, reinterpret_cast<const void *>(uintptr_t(srcDevice)), ByteCount);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemcpyDtoD(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount) {
  EMU_REQUIRE_CONTEXT();
  if (ByteCount == 0)
    return CUDA_SUCCESS;
  if (!inAllocation(uintptr_t(dstDevice), ByteCount) || !inAllocation(uintptr_t(srcDevice), ByteCount))
    return CUDA_ERROR_INVALID_VALUE;
  std::memmove(reinterpret_cast<void *>(uintptr_t(dstDevice)),
               reinterpret_cast<const void *>(uintptr_t(srcDevice)), ByteCount);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemsetD8(CUdeviceptr dstDevice, unsigned char uc, size_t N) {
  EMU_REQUIRE_CONTEXT();
  return memsetRange(dstDevice, uc, N, 1);
}

CUresult CUDAAPI cuMemsetD32(CUdeviceptr dstDevice, unsigned int ui, size_t N) {
  EMU_REQUIRE_CONTEXT();
  return memsetRange(dstDevice, ui, N, 4);
}

CUresult CUDAAPI cuMemsetD8Async(CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream) {
  (void)hStream;
  EMU_REQUIRE_CONTEXT();
  return memsetRange(dstDevice, uc, N, 1);
}

CUresult CUDAAPI cuMemsetD32Async(CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream) {
  (void)hStream;
  EMU_REQUIRE_CONTEXT();
  return memsetRange(dstDevice, ui, N, 4);
}

CUresult CUDAAPI cuModuleLoadData(CUmodule *module, const void *image) {
  (void)image;  // the kernels come from the registry
  EMU_REQUIRE_CONTEXT();
  if (!module)
    return CUDA_ERROR_INVALID_VALUE;
  CUmodule m = new CUmod_st;
  State &st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  st.modules.insert(m);
  *module = m;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuModuleUnload(CUmodule hmod) {
  EMU_REQUIRE_INIT();
  State &st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  if (!st.modules.erase(hmod))
    return CUDA_ERROR_INVALID_HANDLE;
  for (auto &entry : hmod->functions) {
    st.functions.erase(entry.second);
    delete entry.second;
  }
  delete hmod;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name) {
  EMU_REQUIRE_INIT();
  if (!hfunc || !name)
    return CUDA_ERROR_INVALID_VALUE;
  Entry entry = nullptr;
  {
    Registry &r = registry();
    std::lock_guard<std::mutex> lock(r.mu);
    auto it = r.kernels.find(name);
    if (it != r.kernels.end())
      entry = it->second;
  }
  State &st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  if (!st.modules.count(hmod))
    return CUDA_ERROR_INVALID_HANDLE;
  if (!entry)
    return CUDA_ERROR_NOT_FOUND;
  CUfunction &f = hmod->functions[name];
  if (!f) {
    f = new CUfunc_st;
    f->name = name;
    f->entry = entry;
    st.functions.insert(f);
  }
  *hfunc = f;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib, int value) {
  EMU_REQUIRE_INIT();
  State &st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  if (!st.functions.count(hfunc))
    return CUDA_ERROR_INVALID_HANDLE;
  switch (attrib) {
  case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
    if (value < 0 || value > kSharedOptIn)
      return CUDA_ERROR_INVALID_VALUE;
    hfunc->maxDynamicShared = value;
    return CUDA_SUCCESS;
  case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
    if (value < -1 || value > 100)
      return CUDA_ERROR_INVALID_VALUE;
    hfunc->carveout = value;
    return CUDA_SUCCESS;
  default:
    return CUDA_ERROR_INVALID_VALUE;
  }
}

CUresult CUDAAPI cuFuncGetAttribute(int *pi, CUfunction_attribute attrib, CUfunction hfunc) {
  EMU_REQUIRE_INIT();
  if (!pi)
    return CUDA_ERROR_INVALID_VALUE;
  State &st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  if (!st.functions.count(hfunc))
    return CUDA_ERROR_INVALID_HANDLE;
  switch (attrib) {
  case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *pi = kMaxThreadsPerBlock; break;
  case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES: *pi = 0; break;
  case CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES: *pi = 0; break;
  case CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES: *pi = 0; break;
  case CU_FUNC_ATTRIBUTE_NUM_REGS: *pi = 0; break;
  case CU_FUNC_ATTRIBUTE_PTX_VERSION: *pi = 90; break;
  case CU_FUNC_ATTRIBUTE_BINARY_VERSION: *pi = 90; break;
  case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: *pi = hfunc->maxDynamicShared; break;
  case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT: *pi = hfunc->carveout; break;
  default: return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
                                unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
                                unsigned int sharedMemBytes, CUstream hStream, void **kernelParams,
                                void **extra) {
  (void)hStream;
  EMU_REQUIRE_CONTEXT();
  State &st = state();
  std::string name;
  Entry entry;
  int maxDynamicShared;
  {
    std::lock_guard<std::mutex> lock(st.mu);
    if (!st.functions.count(f))
      return CUDA_ERROR_INVALID_HANDLE;
    name = f->name;
    entry = f->entry;
    maxDynamicShared = f->maxDynamicShared;
  }
  auto invalid = [&](const std::string &why) {
    saveError("linac cuda emulator: cuLaunchKernel(" + name + "): " + why, false);
    return CUDA_ERROR_INVALID_VALUE;
  };
  if (gridDimX == 0 || gridDimY == 0 || gridDimZ == 0 || gridDimX > 0x7FFFFFFFu || gridDimY > 65535 ||
      gridDimZ > 65535)
    return invalid("grid (" + std::to_string(gridDimX) + "," + std::to_string(gridDimY) + "," +
                   std::to_string(gridDimZ) + ") is empty or too large");
  if (blockDimY != 1 || blockDimZ != 1 || blockDimX < 1 || blockDimX > unsigned(kMaxThreadsPerBlock) ||
      blockDimX % kWarp != 0)
    return invalid("block (" + std::to_string(blockDimX) + "," + std::to_string(blockDimY) + "," +
                   std::to_string(blockDimZ) + "): the emulator takes (32k,1,1) blocks of at most 1024 threads");
  if (extra)
    return invalid("the extra launch argument is not supported; pass kernelParams");
  if (sharedMemBytes > unsigned(kSharedOptIn) ||
      (sharedMemBytes > unsigned(kSharedDefault) && sharedMemBytes > unsigned(maxDynamicShared)))
    return invalid(std::to_string(sharedMemBytes) + " bytes of dynamic shared memory exceed " +
                   (sharedMemBytes > unsigned(kSharedOptIn)
                        ? "the device's limit of " + std::to_string(kSharedOptIn)
                        : "the function's limit of " + std::to_string(maxDynamicShared) +
                              " (raise CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)"));

  std::lock_guard<std::mutex> launchLock(st.launchMu);
  Job job;
  job.name = name;
  job.entry = entry;
  job.params = kernelParams;
  job.grid[0] = gridDimX;
  job.grid[1] = gridDimY;
  job.grid[2] = gridDimZ;
  job.blockDim = blockDimX;
  job.sharedBytes = sharedMemBytes;
  const char *order = std::getenv("LINAC_CUDA_EMU_ORDER");
  job.reverse = order && std::strcmp(order, "reverse") == 0;
  const char *barrier = std::getenv("LINAC_CUDA_EMU_BARRIER");
  job.lenientBarrier = barrier && std::strcmp(barrier, "lenient") == 0;
  job.blocks = uint64_t(gridDimX) * gridDimY * gridDimZ;
  const unsigned workers = unsigned(std::min<uint64_t>(envWorkers(), job.blocks));
  runOnWorkers(job, workers);
  // LINAC_CUDA_EMU_TRACE=1: one line per launch on stderr: which kernel, its launch configuration, and what
  // its blocks did (barriers, warp mma.sync and warp shuffles, summed over the blocks).
  if (const char *trace = std::getenv("LINAC_CUDA_EMU_TRACE"); trace && std::strcmp(trace, "0") != 0)
    std::fprintf(stderr,
                 "linac cuda emulator: launch %s grid (%u,%u,%u) block %u shared %u: barriers %llu mma %llu "
                 "shuffles %llu\n",
                 name.c_str(), gridDimX, gridDimY, gridDimZ, blockDimX, sharedMemBytes,
                 (unsigned long long)job.barriers.load(), (unsigned long long)job.mmas.load(),
                 (unsigned long long)job.shuffles.load());
  if (job.failed.load()) {
    saveError(job.error, true);
    return CUDA_ERROR_LAUNCH_FAILED;
  }
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventCreate(CUevent *phEvent, unsigned int Flags) {
  EMU_REQUIRE_CONTEXT();
  if (!phEvent || (Flags & ~0x7u) || ((Flags & CU_EVENT_INTERPROCESS) && !(Flags & CU_EVENT_DISABLE_TIMING)))
    return CUDA_ERROR_INVALID_VALUE;
  CUevent e = new CUevent_st;
  e->flags = Flags;
  State &st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  st.events.insert(e);
  *phEvent = e;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventDestroy(CUevent hEvent) {
  EMU_REQUIRE_INIT();
  State &st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  if (!st.events.erase(hEvent))
    return CUDA_ERROR_INVALID_HANDLE;
  delete hEvent;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventRecord(CUevent hEvent, CUstream hStream) {
  (void)hStream;
  EMU_REQUIRE_CONTEXT();
  State &st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  if (!st.events.count(hEvent))
    return CUDA_ERROR_INVALID_HANDLE;
  hEvent->recorded = true;
  hEvent->when = std::chrono::steady_clock::now();
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventSynchronize(CUevent hEvent) {
  EMU_REQUIRE_INIT();
  State &st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  return st.events.count(hEvent) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult CUDAAPI cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd) {
  EMU_REQUIRE_INIT();
  if (!pMilliseconds)
    return CUDA_ERROR_INVALID_VALUE;
  State &st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  if (!st.events.count(hStart) || !st.events.count(hEnd))
    return CUDA_ERROR_INVALID_HANDLE;
  if ((hStart->flags | hEnd->flags) & CU_EVENT_DISABLE_TIMING)
    return CUDA_ERROR_INVALID_HANDLE;
  if (!hStart->recorded || !hEnd->recorded)
    return CUDA_ERROR_INVALID_HANDLE;
  *pMilliseconds = std::chrono::duration<float, std::milli>(hEnd->when - hStart->when).count();
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamSynchronize(CUstream hStream) {
  (void)hStream;
  EMU_REQUIRE_CONTEXT();
  return CUDA_SUCCESS;
}

} // extern "C"
