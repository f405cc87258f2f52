#ifndef LINAC_RUNTIME_KERNELS_H
#define LINAC_RUNTIME_KERNELS_H

// The compiled linear-attention cores the runtime can place in a model, by
// recurrence name. Each is a linacc output (examples/CMakeLists.txt builds them
// into LinacExampleKernels); its input table tells the layer what to project.

#include "linac_abi.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace linac::rt {

struct KernelInfo {
  std::string name;
  const linac_input_desc *inputs;
  int numInputs;
  /// 1: vector state (HGRN), output is K wide; 2: matrix [K, V] state, output is V wide.
  int stateRank;
  linac_forward_fn forward;
  linac_backward_fn backward;
};

/// How the linear-attention layer feeds a kernel input, on every backend: a projection per token (or a learned
/// per-head vector) `width` wide per head, then a transform that keeps the input in the recurrence's domain:
/// gates (named g or w) <= 0 in log space, beta in (0, 1), delta-rule keys of unit length. This is the
/// runtime's layer convention, chosen by input name; the compiler derives nothing from it.
enum class InputTransform { Plain, Gate, Sigmoid, UnitRows };
struct InputPlan {
  std::string name;
  bool perToken = true;
  int64_t width = 0;
  InputTransform transform = InputTransform::Plain;
  /// Whether the layer's short convolution (config short_conv) goes on this input: per-token inputs that are
  /// not gates or rates (q, k, v and the like).
  bool shortConv = false;
};

/// The plan of every input of `kernel`, for key and value widths K and V.
std::vector<InputPlan> planInputs(const KernelInfo &kernel, int64_t K, int64_t V);

/// The kernel named `name` (built in, or loaded by loadKernelLibrary), or null.
const KernelInfo *findKernel(const std::string &name);

/// Loads recurrence `name` from a shared library made by `linacc --target=cpu --shared` (it exports
/// linac_<name>_forward_chunk64, linac_<name>_backward_chunk64 and the input table) and registers it.
/// Throws Error naming the library and what is missing.
const KernelInfo *loadKernelLibrary(const std::string &path, const std::string &name);

/// The checks a library loader (config key `key`: kernel_library or gpu_kernel_library) makes, so that no
/// recurrence is silently ignored or misread. Before loading `name` from `path`: one recurrence per name, so
/// `name` is not built in (`builtIn`) nor loaded from another library (`loadedFrom`: the canonical path it came
/// from, or null); returns `path` made canonical (weakly), to record, and whether `name` came from it already.
std::pair<std::string, bool> claimLibraryName(const std::string &key, const std::string &path, const std::string &name,
                                              bool builtIn, const std::string *loadedFrom);
/// After: the library's I/O type (`io`, exported by linacc) is f32, as the runtime trains; `flag` is the linacc
/// option that set it (--cpu-io or --gpu-io).
void requireFp32Io(const std::string &key, const std::string &path, const std::string &name, const std::string &io,
                   const std::string &flag);
const std::vector<KernelInfo> &allKernels();
/// "hgrn, retnet, ..." for error messages.
std::string kernelNames();

/// A linacc --shared library, opened for the life of the process (its kernels are referenced by models).
/// Errors name the config key that gave the file (kernel_library, gpu_kernel_library) and the file.
class KernelLibrary {
public:
  /// Opens `path`; throws Error when it cannot be loaded.
  KernelLibrary(std::string key, std::string path);
  /// The address of `symbol`; throws Error naming it and `hint` (how the library should have been made).
  void *symbol(const std::string &name, const std::string &hint) const;

private:
  std::string key, path;
  void *handle;
};

} // namespace linac::rt

#endif
