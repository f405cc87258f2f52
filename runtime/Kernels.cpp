#include "Kernels.h"
#include "Config.h"

#include <cstring>
#include <deque>
#include <dlfcn.h>
#include <filesystem>

#include "deltanet.h"
#include "gated_deltanet.h"
#include "gla.h"
#include "hgrn.h"
#include "hgrn2.h"
#include "retnet.h"
#include "rwkv6.h"
#include "simple_gla.h"

namespace linac::rt {

// Training uses the chunked forms at chunk size 64: the forward is parallel over a
// chunk and the backward keeps one state per chunk boundary (linac_abi.h).
#define LINAC_KERNEL(name)                                                                                             \
  KernelInfo {                                                                                                         \
    #name, linac_##name##_inputs, linac_##name##_num_inputs, linac_##name##_state_rank,                                \
        linac_##name##_forward_chunk64, linac_##name##_backward_chunk64                                                \
  }

const std::vector<KernelInfo> &allKernels() {
  static const std::vector<KernelInfo> kernels = {
      LINAC_KERNEL(hgrn),  LINAC_KERNEL(retnet), LINAC_KERNEL(simple_gla), LINAC_KERNEL(gla),
      LINAC_KERNEL(hgrn2), LINAC_KERNEL(rwkv6),  LINAC_KERNEL(deltanet),   LINAC_KERNEL(gated_deltanet),
  };
  return kernels;
}

std::vector<InputPlan> planInputs(const KernelInfo &kernel, int64_t K, int64_t V) {
  std::vector<InputPlan> plans;
  for (int i = 0; i < kernel.numInputs; ++i) {
    InputPlan in;
    in.name = kernel.inputs[i].name;
    linac_input_kind kind = kernel.inputs[i].kind;
    in.perToken = kind == LINAC_TOKEN_KEY || kind == LINAC_TOKEN_VALUE || kind == LINAC_TOKEN_SCALAR;
    in.width = kind == LINAC_TOKEN_KEY || kind == LINAC_HEAD_KEY       ? K
               : kind == LINAC_TOKEN_VALUE || kind == LINAC_HEAD_VALUE ? V
                                                                       : 1;
    // The activation linacc derived from the input's role (or the .mlir gave); see enum linac_activation.
    switch (kernel.inputs[i].activation) {
    case LINAC_ACT_LOG_SIGMOID:
      in.transform = InputTransform::Gate;
      break;
    case LINAC_ACT_SIGMOID:
      in.transform = InputTransform::Sigmoid;
      break;
    case LINAC_ACT_L2_NORMALIZE:
      in.transform = InputTransform::UnitRows;
      break;
    default:
      in.transform = InputTransform::Plain;
    }
    in.shortConv = in.perToken && (in.transform == InputTransform::Plain || in.transform == InputTransform::UnitRows);
    plans.push_back(in);
  }
  return plans;
}

namespace {

/// Kernels loaded at run time; a deque keeps their addresses stable.
struct LoadedKernel {
  /// The library it came from (weakly canonical).
  std::string path;
  KernelInfo info;
  std::vector<linac_input_desc> inputs;
  std::vector<std::string> names;
};
std::deque<LoadedKernel> &loadedKernels() {
  static std::deque<LoadedKernel> loaded;
  return loaded;
}

} // namespace

const KernelInfo *findKernel(const std::string &name) {
  for (const KernelInfo &k : allKernels())
    if (k.name == name)
      return &k;
  for (const LoadedKernel &k : loadedKernels())
    if (k.info.name == name)
      return &k.info;
  return nullptr;
}

std::pair<std::string, bool> claimLibraryName(const std::string &key, const std::string &path, const std::string &name,
                                              bool builtIn, const std::string *loadedFrom) {
  if (builtIn)
    throw Error(key + " = '" + path + "': '" + name +
                "' is a built-in recurrence; a library is for recurrences that are not (rename it in its .mlir)");
  std::string canonical = std::filesystem::weakly_canonical(path).string();
  if (loadedFrom && *loadedFrom != canonical)
    throw Error(key + " = '" + path + "': '" + name + "' is already loaded from '" + *loadedFrom + "'");
  return {canonical, loadedFrom != nullptr};
}

void requireFp32Io(const std::string &key, const std::string &path, const std::string &name, const std::string &io,
                   const std::string &flag) {
  // A library with 16-bit I/O would read the runtime's float buffers as 16-bit values.
  if (io != "f32")
    throw Error(key + " = '" + path + "': '" + name + "' was compiled with " + io + " I/O (linacc " + flag + "=" +
                io + "); the runtime trains in fp32: compile it without " + flag);
}

const KernelInfo *loadKernelLibrary(const std::string &path, const std::string &name) {
  bool builtIn = false;
  for (const KernelInfo &k : allKernels())
    builtIn = builtIn || k.name == name;
  const LoadedKernel *loaded = nullptr;
  for (const LoadedKernel &k : loadedKernels())
    if (k.info.name == name)
      loaded = &k;
  auto [canonical, again] = claimLibraryName("kernel_library", path, name, builtIn, loaded ? &loaded->path : nullptr);
  if (again)
    return &loaded->info;
  KernelLibrary library("kernel_library", path);
  auto symbol = [&](const std::string &suffix) {
    return library.symbol("linac_" + name + suffix,
                          "is '" + name + "' a recurrence in it, compiled by linacc --shared with chunk size 64?");
  };
  const int32_t *table = static_cast<const int32_t *>(symbol("_table"));
  const char *names = static_cast<const char *>(symbol("_input_names"));
  requireFp32Io("kernel_library", path, name, static_cast<const char *>(symbol("_io")), "--cpu-io");
  LoadedKernel &k = loadedKernels().emplace_back();
  k.path = canonical;
  for (int i = 0; i < table[0]; ++i, names += std::strlen(names) + 1)
    k.names.push_back(names);
  for (int i = 0; i < table[0]; ++i)
    k.inputs.push_back({k.names[i].c_str(), static_cast<linac_input_kind>(table[2 + i]),
                        static_cast<linac_activation>(table[2 + table[0] + i])});
  k.info = {name,
            k.inputs.data(),
            table[0],
            table[1],
            reinterpret_cast<linac_forward_fn>(symbol("_forward_chunk64")),
            reinterpret_cast<linac_backward_fn>(symbol("_backward_chunk64"))};
  return &k.info;
}

std::string kernelNames() {
  std::string names;
  for (const KernelInfo &k : allKernels())
    names += (names.empty() ? "" : ", ") + k.name;
  for (const LoadedKernel &k : loadedKernels())
    names += ", " + k.info.name;
  return names;
}

KernelLibrary::KernelLibrary(std::string key, std::string path)
    : key(std::move(key)), path(std::move(path)), handle(dlopen(this->path.c_str(), RTLD_NOW | RTLD_LOCAL)) {
  if (!handle)
    throw Error(this->key + " = '" + this->path + "': cannot load: " + dlerror());
}

void *KernelLibrary::symbol(const std::string &name, const std::string &hint) const {
  void *address = dlsym(handle, name.c_str());
  if (!address)
    throw Error(key + " = '" + path + "' has no " + name + " (" + hint + ")");
  return address;
}

} // namespace linac::rt
