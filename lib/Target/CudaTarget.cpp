// The GPU path: linac -> tile IR kernels (linac-gpu-chunk) -> thread-parallel
// loops (linac-tile-to-gpu) -> NVVM -> PTX for sm_90a, plus a C++ launcher on
// the CUDA driver API.

#include "lib/Target/CudaTarget.h"
#include "dialect/Passes.h"
#include "lib/Conversion/TileLowering.h"

#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/NVVMToLLVM/NVVMToLLVM.h"
#include "mlir/Conversion/Passes.h"
#include "mlir/Conversion/UBToLLVM/UBToLLVM.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Transforms/Passes.h"

#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace linac;

FailureOr<std::string> linac::emitCudaPtx(ModuleOp module, const std::vector<int64_t> &chunkSizes,
                                          int64_t blockSize, const std::vector<int64_t> &staticDims,
                                          std::vector<CudaKernel> &kernels) {
  MLIRContext *ctx = module.getContext();
  DialectRegistry registry;
  NVVM::registerNVVMTargetInterfaceExternalModels(registry);
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  registerNVVMDialectTranslation(registry);
  registerGPUDialectTranslation(registry);
  // convert-gpu-to-nvvm lowers the other dialects in a kernel through their ConvertToLLVM interfaces.
  cf::registerConvertControlFlowToLLVMInterface(registry);
  registerConvertMemRefToLLVMInterface(registry);
  ub::registerConvertUBToLLVMInterface(registry);
  registerConvertNVVMToLLVMInterface(registry);
  ctx->appendDialectRegistry(registry);

  PassManager tiles(ctx);
  for (int64_t size : chunkSizes) {
    LinacGpuChunkOptions options{size, blockSize};
    options.staticDims.assign(staticDims.begin(), staticDims.end());
    tiles.addPass(createLinacGpuChunk(options));
  }
  // Folds the fixed-size kernels' extents to constants before their tiles are placed.
  tiles.addPass(createCanonicalizerPass());
  tiles.addPass(createLinacTileToGpu());
  if (failed(tiles.run(module)))
    return failure();

  module.walk([&](gpu::GPUFuncOp fn) {
    CudaKernel k;
    k.recurrence = fn->getAttrOfType<StringAttr>("linac.recurrence").str();
    k.symbol = fn.getName().str();
    k.chunkSize = fn->getAttrOfType<IntegerAttr>("linac.chunk_size").getInt();
    k.blockSize = (*fn.getKnownBlockSize())[0];
    for (Attribute size : fn->getAttrOfType<ArrayAttr>("linac.tile_slot_sizes"))
      k.slotSizes.push_back(cast<StringAttr>(size).str());
    k.numInputs = fn->getAttrOfType<IntegerAttr>("linac.num_inputs").getInt();
    k.backward = fn->getAttrOfType<StringAttr>("linac.direction").getValue() == "backward";
    k.inputLayout = fn->getAttrOfType<StringAttr>("linac.input_layout").str();
    if (auto dims = fn->getAttrOfType<DenseI64ArrayAttr>("linac.static_dims"))
      k.staticDims.assign(dims.asArrayRef().begin(), dims.asArrayRef().end());
    kernels.push_back(k);
  });
  for (RecurrenceOp rec : llvm::make_early_inc_range(module.getOps<RecurrenceOp>())) {
    for (CudaKernel &k : kernels)
      if (k.recurrence == rec.getSymName())
        k.matrixState = rec.getStateType().isMatrix();
    rec.erase();
  }
  module.walk([&](gpu::GPUModuleOp gm) {
    gm.setTargetsAttr(ArrayAttr::get(ctx, {NVVM::NVVMTargetAttr::get(ctx, /*optLevel=*/3, "nvptx64-nvidia-cuda",
                                                                     "sm_90a", "+ptx80")}));
  });

  PassManager pm(ctx);
  OpPassManager &device = pm.nest<gpu::GPUModuleOp>();
  device.addPass(createCanonicalizerPass());
  device.addPass(createCSEPass());
  device.addPass(createSCFToControlFlowPass());
  device.addPass(memref::createExpandStridedMetadataPass());
  device.addPass(createArithToLLVMConversionPass());
  device.addPass(createConvertIndexToLLVMPass());
  device.addPass(createCanonicalizerPass());
  // Math stays for convert-gpu-to-nvvm, which maps it to libdevice.
  device.addPass(createConvertGpuOpsToNVVMOps());
  device.addPass(createReconcileUnrealizedCastsPass());
  GpuModuleToBinaryPassOptions binary;
  binary.compilationTarget = "isa";
  binary.toolkitPath = "/usr/local/cuda";
  pm.addPass(createGpuModuleToBinaryPass(binary));
  if (failed(pm.run(module)))
    return failure();
  std::string ptx;
  module.walk([&](gpu::BinaryOp binaryOp) {
    for (Attribute object : binaryOp.getObjects())
      ptx += cast<gpu::ObjectAttr>(object).getObject().str();
  });
  if (ptx.empty())
    return emitError(module.getLoc(), "GPU lowering produced no PTX"), failure();
  return ptx;
}

static const char *kForwardParams = "CUstream stream, const CUdeviceptr *inputs, CUdeviceptr out, CUdeviceptr h0,\n"
                                    "    CUdeviceptr ht, CUdeviceptr cu_seqlens, int64_t N, int64_t T, int64_t H, int64_t K,\n"
                                    "    int64_t V, float scale";
static const char *kBackwardParams =
    "CUstream stream, const CUdeviceptr *inputs, CUdeviceptr h0, CUdeviceptr dout,\n"
    "    CUdeviceptr dht, const CUdeviceptr *dinputs, CUdeviceptr dh0, CUdeviceptr cu_seqlens, int64_t N,\n"
    "    int64_t T, int64_t H, int64_t K, int64_t V, float scale";

std::string linac::emitCudaLauncher(const std::vector<CudaKernel> &kernels, const std::string &image,
                                    bool imageIsCubin, const std::string &stem, std::string &header) {
  std::string guard = "LINAC_CUDA_" + llvm::StringRef(stem).upper();
  for (char &c : guard)
    if (!isalnum(static_cast<unsigned char>(c)))
      c = '_';
  llvm::raw_string_ostream h(header);
  h << "/* Generated by linacc --target=cuda. Do not edit. */\n#ifndef " << guard << "\n#define " << guard
    << "\n\n#include <cuda.h>\n#include <stdint.h>\n\n"
    << "/* Launchers for the chunked forward and derived backward kernels of " << stem << ".mlir (sm_90a).\n"
       "   Pointers are device pointers to fp32 buffers in the layout of linac_abi.h, and the backward has the\n"
       "   semantics of linac_backward_fn (dinputs overwritten); h0, ht, dht, dh0 and cu_seqlens may be 0.\n"
       "   Each launch is ordered on `stream` and takes its scratch with cuMemAllocAsync from the stream's\n"
       "   pool. Returns CUDA_SUCCESS or the failing call's error; linac_" << stem << "_cuda_error() then\n"
       "   describes it. */\n"
    << "#ifdef __cplusplus\nextern \"C\" {\n#endif\n"
    << "const char *linac_" << stem << "_cuda_error(void);\n";
  for (const CudaKernel &k : kernels)
    if (k.staticDims.empty())
      h << llvm::formatv("CUresult {0}({1});\n", k.symbol, k.backward ? kBackwardParams : kForwardParams);
  h << "#ifdef __cplusplus\n}\n#endif\n\n#endif\n";

  std::string out;
  llvm::raw_string_ostream os(out);
  os << "// Generated by linacc --target=cuda. Do not edit.\n#include \"" << stem << "_cuda.h\"\n\n"
     << "#include <algorithm>\n#include <cstdio>\n#include <cstdlib>\n#include <mutex>\n#include <string>\n#include <vector>\n\n"
     << "namespace {\n\n";
  os << "// The " << (imageIsCubin ? "cubin" : "PTX") << " image, " << image.size() << " bytes.\n";
  os << "const unsigned char kImage[] = {";
  for (size_t i = 0; i < image.size(); ++i)
    os << (i % 16 == 0 ? "\n  " : "") << unsigned(static_cast<unsigned char>(image[i])) << ",";
  os << (imageIsCubin ? "" : "\n  0,") << "\n};\n\n";
  os << "/// The shared memory a fixed-size kernel's tile layout assumes (sm_90's per-block opt-in maximum).\n"
     << "constexpr size_t kStaticShared = " << kStaticSharedBytes << ";\n\n";
  os << R"cpp(thread_local std::string lastError;
CUmodule module = nullptr;
std::once_flag loaded;
CUresult loadStatus = CUDA_SUCCESS;

CUresult fail(CUresult status, const std::string &what) {
  const char *text = nullptr;
  cuGetErrorString(status, &text);
  lastError = what + ": " + (text ? text : "unknown CUDA error");
  return status;
}

/// What every kernel of this file shares: sizes, the module, the tile scratch.
struct Kernel {
  const char *name;
  unsigned numInputs;
  const char *layout;
  int64_t chunk;
  bool matrix;
  unsigned blockSize;
  /// The sizes in floats of the kernel's tile slots, in its layout order, for K, V and Z value slices.
  std::vector<int64_t> (*slotSizes)(int64_t K, int64_t V, int64_t Z);
  /// A fixed-size kernel's K and V (it runs one value slice and lays its tiles out for kStaticShared bytes of
  /// shared memory); 0 for the generic kernel.
  int64_t staticK, staticV;
};


CUresult checkSizes(const Kernel &k, int64_t N, int64_t T, int64_t H, int64_t K, int64_t V, bool pointersOk) {
  if (N < 1 || T < 0 || H < 1 || K < 1 || (k.matrix && V < 1) || !pointersOk) {
    lastError = std::string(k.name) + ": bad arguments (N, H, K, V must be positive; inputs, outputs and "
                "gradients non-null)";
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (N > 65535) {
    lastError = std::string(k.name) + ": at most 65535 sequences per launch";
    return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

/// Multiprocessors of the current context's device (0 if it cannot be read).
int multiprocessors() {
  static int count = [] {
    CUdevice device;
    int n = 0;
    if (cuCtxGetDevice(&device) != CUDA_SUCCESS ||
        cuDeviceGetAttribute(&n, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device) != CUDA_SUCCESS)
      return 0;
    return n;
  }();
  return count;
}

/// Value-column slices per (sequence, head) (matrix states): each slice is a block that repeats the key-side
/// work of its chunk, so slices pay only when there are fewer (sequence, head) pairs than multiprocessors.
/// Slices keep at least 32 columns, and are at most 8 so that ceil(V / Z) columns per slice leave none empty
/// ((Z - 1)^2 < V).
/// LINAC_CUDA_VALUE_SPLITS overrides the choice (tests use it to reach the fixed-size kernels with few
/// sequences), within the same limits.
int64_t valueSplits(const Kernel &k, int64_t N, int64_t H, int64_t V) {
  if (!k.matrix)
    return 1;
  int64_t wanted = std::max<int64_t>(1, multiprocessors() / (N * H));
  if (const char *forced = std::getenv("LINAC_CUDA_VALUE_SPLITS")) {
    int64_t z = std::clamp<int64_t>(std::atoll(forced), 1, 8);
    return (z - 1) * (z - 1) < V ? z : 1;
  }
  return std::clamp<int64_t>(std::min(wanted, V / 32), 1, 8);
}

/// The fixed-size copy of `k` for these sizes, if it has one and the launch runs one value slice (and
/// LINAC_CUDA_GENERIC is unset); else `k`.
const Kernel &choose(const Kernel &k, const Kernel *const *fixed, int64_t N, int64_t H, int64_t K, int64_t V) {
  if (std::getenv("LINAC_CUDA_GENERIC") || valueSplits(k, N, H, V) != 1)
    return k;
  for (; *fixed; ++fixed)
    if ((*fixed)->staticK == K && (*fixed)->staticV == V)
      return **fixed;
  return k;
}

/// Shared memory one block of `function` may take (bytes): the device's opt-in limit less the kernel's static
/// shared memory, or LINAC_CUDA_SMEM_LIMIT if that is set and smaller (0 puts every tile in global memory).
size_t sharedCapacity(CUfunction function) {
  CUdevice device;
  int optIn = 0, fixed = 0;
  if (cuCtxGetDevice(&device) != CUDA_SUCCESS ||
      cuDeviceGetAttribute(&optIn, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, device) != CUDA_SUCCESS ||
      cuFuncGetAttribute(&fixed, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, function) != CUDA_SUCCESS)
    return 0;
  size_t capacity = size_t(std::max(0, optIn - fixed));
  if (const char *limit = std::getenv("LINAC_CUDA_SMEM_LIMIT"))
    capacity = std::min<size_t>(capacity, std::strtoull(limit, nullptr, 10));
  return capacity;
}

/// Where the kernel puts its tile slots (the same rule as its entry code): in layout order, each in shared
/// memory while it fits in `capacity` bytes. Returns the shared bytes used; *perBlock gets the floats of one
/// block's region of the global tile scratch (every slot has room there).
size_t placeTiles(const std::vector<int64_t> &sizes, size_t capacity, int64_t *perBlock) {
  size_t shared = 0;
  *perBlock = 0;
  for (int64_t size : sizes) {
    if (shared + size_t(size) * sizeof(float) <= capacity)
      shared += size_t(size) * sizeof(float);
    *perBlock += size;
  }
  return shared;
}

/// Allocates `bytes[i]` of scratch into *slots[i] (stream-ordered) and the tile scratch into *tileScratch,
/// launches `k` on an (H, N, splits) grid of blocks of the size it was compiled for with `params` and as much
/// dynamic shared memory as its leading tile slots take, and frees the scratch after it on the stream.
CUresult launchWithScratch(const Kernel &k, CUstream stream, int64_t N, int64_t H, int64_t splits, int64_t K,
                           int64_t V, std::vector<size_t> bytes, std::vector<CUdeviceptr *> slots,
                           CUdeviceptr *tileScratch, void **params) {
  std::call_once(loaded, [] { loadStatus = cuModuleLoadData(&module, kImage); });
  if (loadStatus != CUDA_SUCCESS)
    return fail(loadStatus, "cuModuleLoadData");
  CUfunction function;
  if (CUresult s = cuModuleGetFunction(&function, module, k.name))
    return fail(s, k.name);
  int64_t perBlock = 0;
  size_t shared =
      placeTiles(k.slotSizes(K, V, splits), k.staticK ? kStaticShared : sharedCapacity(function), &perBlock);
  if (CUresult s = cuFuncSetAttribute(function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, int(shared)))
    return fail(s, std::string(k.name) + " (shared memory size)");
  bytes.push_back(size_t(N * H * splits) * size_t(perBlock) * sizeof(float));
  slots.push_back(tileScratch);
  size_t allocated = 0;
  CUresult status = CUDA_SUCCESS;
  for (; allocated < bytes.size(); ++allocated)
    if ((status = cuMemAllocAsync(slots[allocated], std::max<size_t>(bytes[allocated], 4), stream)))
      break;
  if (status == CUDA_SUCCESS)
    status = cuLaunchKernel(function, unsigned(H), unsigned(N), unsigned(splits), k.blockSize, 1, 1,
                            unsigned(shared), stream, params, nullptr);
  for (size_t i = 0; i < allocated; ++i)
    cuMemFreeAsync(*slots[i], stream);
  return status == CUDA_SUCCESS ? status : fail(status, std::string(k.name) + " (scratch or launch)");
}

/// Appends the kernel arguments every kernel ends with: the sizes and the scale (which must outlive the launch).
void appendSizes(std::vector<void *> &params, int64_t (&sizes)[5], float &scale) {
  for (int64_t &s : sizes)
    params.push_back(&s);
  params.push_back(&scale);
}

CUresult forward(const Kernel &k, CUstream stream, const CUdeviceptr *inputs, CUdeviceptr out, CUdeviceptr h0,
                 CUdeviceptr ht, CUdeviceptr cu, int64_t N, int64_t T, int64_t H, int64_t K, int64_t V, float scale) {
  if (CUresult s = checkSizes(k, N, T, H, K, V, inputs && out))
    return s;
  int64_t stateSize = k.matrix ? K * V : K;
  CUdeviceptr stateScratch = 0, tileScratch = 0;
  std::vector<void *> params;
  for (unsigned i = 0; i < k.numInputs; ++i)
    params.push_back(const_cast<CUdeviceptr *>(&inputs[i]));
  for (CUdeviceptr *ptr : {&out, &h0, &ht, &cu, &stateScratch, &tileScratch})
    params.push_back(ptr);
  int64_t sizes[5] = {N, T, H, K, V};
  appendSizes(params, sizes, scale);
  int64_t splits = valueSplits(k, N, H, V);
  return launchWithScratch(k, stream, N, H, splits, K, V, {size_t(N * H * stateSize) * sizeof(float)},
                           {&stateScratch}, &tileScratch, params.data());
}

CUresult backward(const Kernel &k, CUstream stream, const CUdeviceptr *inputs, CUdeviceptr h0, CUdeviceptr dout,
                  CUdeviceptr dht, const CUdeviceptr *dinputs, CUdeviceptr dh0, CUdeviceptr cu, int64_t N, int64_t T,
                  int64_t H, int64_t K, int64_t V, float scale) {
  if (CUresult s = checkSizes(k, N, T, H, K, V, inputs && dout && dinputs))
    return s;
  int64_t stateSize = k.matrix ? K * V : K, width = k.matrix ? V : K;
  int64_t tokens = cu ? T : N * T;
  // Gradients accumulate atomically in the kernel.
  for (unsigned i = 0; i < k.numInputs; ++i) {
    char scope = k.layout[3 * i], dim = k.layout[3 * i + 1];
    int64_t count = (scope == 't' ? tokens * H : H) * (dim == 'K' ? K : dim == 'V' ? width : 1);
    if (!dinputs[i]) {
      lastError = std::string(k.name) + ": gradient buffer " + std::to_string(i) + " is null";
      return CUDA_ERROR_INVALID_VALUE;
    }
    if (CUresult s = cuMemsetD32Async(dinputs[i], 0, size_t(count), stream))
      return fail(s, std::string(k.name) + " (zeroing gradients)");
  }
  int64_t slots = N + (tokens + k.chunk - 1) / k.chunk + 1;
  CUdeviceptr boundaryScratch = 0, stateScratch = 0, tileScratch = 0;
  std::vector<void *> params;
  for (unsigned i = 0; i < k.numInputs; ++i)
    params.push_back(const_cast<CUdeviceptr *>(&inputs[i]));
  for (unsigned i = 0; i < k.numInputs; ++i)
    params.push_back(const_cast<CUdeviceptr *>(&dinputs[i]));
  for (CUdeviceptr *ptr : {&h0, &dout, &dht, &dh0, &cu, &boundaryScratch, &stateScratch, &tileScratch})
    params.push_back(ptr);
  int64_t sizes[5] = {N, T, H, K, V};
  appendSizes(params, sizes, scale);
  int64_t splits = valueSplits(k, N, H, V);
  return launchWithScratch(k, stream, N, H, splits, K, V,
                           {size_t(slots * H * stateSize) * sizeof(float), size_t(2 * N * H * stateSize) * sizeof(float)},
                           {&boundaryScratch, &stateScratch}, &tileScratch, params.data());
}

} // namespace

)cpp";
  os << "const char *linac_" << stem << "_cuda_error(void) { return lastError.c_str(); }\n";
  auto kernelInit = [](const CudaKernel &k) {
    std::string sizes;
    for (const std::string &size : k.slotSizes)
      sizes += (sizes.empty() ? "" : ", ") + size;
    int64_t staticK = k.staticDims.empty() ? 0 : k.staticDims[0], staticV = k.staticDims.empty() ? 0 : k.staticDims[1];
    return llvm::formatv("{{\"{0}\", {1}, \"{2}\", {3}, {4}, {5},\n"
                         "    [](int64_t K, int64_t V, int64_t Z) {{\n      (void)K, (void)V, (void)Z;\n"
                         "      return std::vector<int64_t>{{{6}};\n    }, {7}, {8}}",
                         k.symbol, k.numInputs, k.inputLayout, k.chunkSize, k.matrixState ? "true" : "false",
                         k.blockSize, sizes, staticK, staticV)
        .str();
  };
  for (const CudaKernel &k : kernels) {
    if (!k.staticDims.empty())
      continue;
    os << llvm::formatv("\nCUresult {0}({1}) {{\n  static const Kernel k = {2};\n", k.symbol,
                        k.backward ? kBackwardParams : kForwardParams, kernelInit(k));
    // Its fixed-size copies, which the launch takes where the sizes match.
    std::string copies;
    for (const CudaKernel &c : kernels)
      if (!c.staticDims.empty() && llvm::StringRef(c.symbol).starts_with(k.symbol + "_k")) {
        os << "  static const Kernel k" << c.staticDims[0] << "x" << c.staticDims[1] << " = " << kernelInit(c)
           << ";\n";
        copies += "&k" + std::to_string(c.staticDims[0]) + "x" + std::to_string(c.staticDims[1]) + ", ";
      }
    os << "  static const Kernel *const fixed[] = {" << copies << "nullptr};\n";
    if (k.backward)
      os << "  return backward(choose(k, fixed, N, H, K, V), stream, inputs, h0, dout, dht, dinputs, dh0, cu_seqlens, "
            "N, T, H, K, V,\n                  scale);\n}\n";
    else
      os << "  return forward(choose(k, fixed, N, H, K, V), stream, inputs, out, h0, ht, cu_seqlens, N, T, H, K, V, "
            "scale);\n}\n";
  }
  return out;
}
