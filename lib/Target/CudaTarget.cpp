// The GPU path: linac -> tile IR kernels (linac-gpu-chunk) -> thread-parallel
// loops (linac-tile-to-gpu) -> NVVM -> PTX for sm_90a, plus a C++ launcher on
// the CUDA driver API.

#include "lib/Target/CudaTarget.h"
#include "lib/Target/CudaEmulation.h"
#include "dialect/Passes.h"
#include "lib/Conversion/TileLowering.h"

#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/NVVMToLLVM/NVVMToLLVM.h"
#include "mlir/Conversion/Passes.h"
#include "mlir/Conversion/UBToLLVM/UBToLLVM.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
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

#include <map>

using namespace mlir;
using namespace linac;

/// libdevice's `__nv_exp2f` (the fast exponentials: linac-tile-to-fragments' `math.exp2`, which
/// convert-gpu-to-nvvm maps there) as the `llvm.nvvm.ex2.approx.ftz.f32` intrinsic in the kernels `which`
/// selects (CudaKernelOptions::ftzExp2). `__nv_exp2f` is the non-flushing `ex2.approx.f32`, which ptxas expands
/// to a range test and two scalings around the MUFU instruction so that results below 2^-126 come out as
/// denormals; flushed, such a factor is 0 against its operands' 1 to 2^-9, and the MUFU's error (2 ulp) is the
/// same. An intrinsic, unlike inline PTX (v28, measured and reverted), is visible to LLVM's scheduling. The
/// emulation (its own copy of the module, taken before) keeps the host's exp2. "auto": every kernel but the
/// delta rule's backwards. Measured on the H100 (bf16, bench/NOTES.md v30), forward + backward: GLA -5.5%,
/// HGRN-2 -7%, RWKV-6 -5%, RetNet -2.5%, the others level, but Gated DeltaNet +3% (its backward 3.37 -> 3.53 ms
/// by ncu; DeltaNet's level). Why is not known: that backward's ptxas spills fell with it (476 -> 456 bytes).
static void flushingExponentials(ModuleOp module, const std::vector<CudaKernel> &kernels, StringRef which) {
  if (which == "none")
    return;
  module.walk([&](LLVM::LLVMFuncOp fn) {
    auto kernel = llvm::find_if(kernels, [&](const CudaKernel &k) { return k.symbol == fn.getName(); });
    if (kernel == kernels.end() || (which == "forward" && kernel->backward) ||
        (which == "backward" && !kernel->backward) ||
        (which == "auto" && kernel->backward && StringRef(kernel->transition).starts_with("delta")))
      return;
    SmallVector<LLVM::CallOp> calls;
    fn.walk([&](LLVM::CallOp call) {
      if (call.getCallee() == "__nv_exp2f")
        calls.push_back(call);
    });
    for (LLVM::CallOp call : calls) {
      OpBuilder b(call);
      auto ex2 = LLVM::CallIntrinsicOp::create(b, call.getLoc(), call.getResult().getType(),
                                               b.getStringAttr("llvm.nvvm.ex2.approx.ftz.f32"),
                                               call.getArgOperands());
      call.getResult().replaceAllUsesWith(ex2.getResult(0));
      call.erase();
    }
  });
}

FailureOr<std::string> linac::emitCudaPtx(ModuleOp module, const std::vector<int64_t> &chunkSizes,
                                          const CudaKernelOptions &kernelOptions, std::vector<CudaKernel> &kernels,
                                          std::string *emulation) {
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
    LinacGpuChunkOptions options;
    options.chunkSize = size;
    options.blockSize = kernelOptions.blockSize;
    options.backwardBlockSize = kernelOptions.backwardBlockSize;
    options.staticDims.assign(kernelOptions.staticDims.begin(), kernelOptions.staticDims.end());
    options.split = kernelOptions.split;
    options.phaseBlockSize = kernelOptions.phaseBlockSize;
    options.phaseBlocksPerSm = kernelOptions.phaseBlocksPerSm;
    options.pairKernel = kernelOptions.pairKernel;
    options.pairBlockSize = kernelOptions.pairBlockSize;
    options.pairBlocksPerSm = kernelOptions.pairBlocksPerSm;
    options.tailKernel = kernelOptions.tailKernel;
    options.tailBlocksPerSm = kernelOptions.tailBlocksPerSm;
    options.ioType = kernelOptions.io;
    options.staticSlices = kernelOptions.staticSlices;
    options.boundarySlices = kernelOptions.boundarySlices;
    options.boundaryEvery = kernelOptions.boundaryEvery;
    options.saveSolves = kernelOptions.saveSolves;
    tiles.addPass(createLinacGpuChunk(options));
  }
  // Folds the fixed-size kernels' extents to constants before their tiles are placed.
  tiles.addPass(createCanonicalizerPass());
  if (kernelOptions.fragmentWarps) {
    LinacTileToFragmentsOptions fragments;
    fragments.warps = kernelOptions.fragmentWarps;
    fragments.all = kernelOptions.fragmentBackward;
    fragments.prefetch = kernelOptions.fragmentPrefetch;
    // auto: products in the forwards only. Measured on the H100 (bf16, bench/NOTES.md v32, ncu): DeltaNet's
    // forward kernels 12-16% faster, Gated DeltaNet's 7%; in the backwards, which hold 255 registers, the
    // inverse's and the product's registers spill (Gated DeltaNet's 476 -> 690 bytes) and the all-product
    // backwards ran 20% slower (v31).
    fragments.productSolves = kernelOptions.productSolves == "auto" ? "forward" : kernelOptions.productSolves;
    fragments.substitution = kernelOptions.substitution;
    fragments.interleaveTerms = kernelOptions.interleaveTerms;
    tiles.addPass(createLinacTileToFragments(fragments));
  }
  LinacTileToGpuOptions lowering;
  lowering.products = kernelOptions.products;
  lowering.forwardCopies = kernelOptions.forwardCopies;
  lowering.productChains = kernelOptions.productChains;
  lowering.splitK = kernelOptions.splitK;
  lowering.factorGates = kernelOptions.factorGates;
  lowering.padByPattern = kernelOptions.padByPattern;
  lowering.wideWarpTiles = kernelOptions.wideWarpTiles;
  lowering.placement = kernelOptions.placement;
  lowering.unrollGlobalK = kernelOptions.unrollGlobalK;
  lowering.schedule = kernelOptions.schedule;
  tiles.addPass(createLinacTileToGpu(lowering));
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
    k.products = fn->getAttrOfType<StringAttr>("linac.products").str();
    k.io = fn->getAttrOfType<StringAttr>("linac.io_type").str();
    if (auto transition = fn->getAttrOfType<StringAttr>("linac.transition"))
      k.transition = transition.str();
    if (auto phase = fn->getAttrOfType<StringAttr>("linac.phase"))
      k.phase = phase.str();
    if (auto blocks = fn->getAttrOfType<IntegerAttr>("nvvm.minctasm"))
      k.blocksPerSm = blocks.getInt();
    if (auto budget = fn->getAttrOfType<IntegerAttr>("linac.shared_budget"))
      k.sharedBudget = budget.getInt();
    if (auto frontier = fn->getAttrOfType<StringAttr>("linac.frontier_size"))
      k.frontierSize = frontier.str();
    if (auto dims = fn->getAttrOfType<DenseI64ArrayAttr>("linac.static_dims"))
      k.staticDims.assign(dims.asArrayRef().begin(), dims.asArrayRef().end());
    if (auto stored = fn->getAttrOfType<StringAttr>("linac.stored_gradients"))
      k.storedGradients = stored.str();
    if (auto pairs = fn->getAttrOfType<StringAttr>("linac.pair_kernel"))
      k.pairKernel = pairs.str();
    if (auto tail = fn->getAttrOfType<StringAttr>("linac.tail_kernel"))
      k.tailKernel = tail.str();
    if (auto cut = fn->getAttrOfType<StringAttr>("linac.tail_cut"))
      k.tailCut = cut.str();
    if (auto boundaries = fn->getAttrOfType<StringAttr>("linac.boundary_kernel")) {
      k.boundaryKernel = boundaries.str();
      k.boundarySlices = fn->getAttrOfType<IntegerAttr>("linac.boundary_slices").getInt();
    }
    if (auto every = fn->getAttrOfType<IntegerAttr>("linac.boundary_every"))
      k.boundaryEvery = every.getInt();
    k.savedSolves = fn->hasAttr("linac.saved_solves");
    kernels.push_back(k);
  });
  for (RecurrenceOp rec : llvm::make_early_inc_range(module.getOps<RecurrenceOp>())) {
    for (CudaKernel &k : kernels)
      if (k.recurrence == rec.getSymName())
        k.matrixState = rec.getStateType().isMatrix();
    rec.erase();
  }
  if (emulation) {
    ctx->getOrLoadDialect<func::FuncDialect>();
    OwningOpRef<ModuleOp> copy = module.clone();
    FailureOr<std::string> object = emitCudaEmulation(*copy);
    if (failed(object))
      return failure();
    *emulation = std::move(*object);
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
  // The second canonicalization can fold a compare into an arith.constant after arith-to-llvm has run (a
  // masked load's row test in the split's chain kernels of RetNet, DeltaNet and GDN), which the translation to
  // LLVM IR then refuses.
  device.addPass(createArithToLLVMConversionPass());
  device.addPass(createReconcileUnrealizedCastsPass());
  if (failed(pm.run(module)))
    return failure();
  flushingExponentials(module, kernels, kernelOptions.ftzExp2);
  PassManager toBinary(ctx);
  GpuModuleToBinaryPassOptions binary;
  binary.compilationTarget = "isa";
  binary.toolkitPath = "/usr/local/cuda";
  toBinary.addPass(createGpuModuleToBinaryPass(binary));
  if (failed(toBinary.run(module)))
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
/// The training pair's extra parameter (the saved boundary states) and the saved-size query's parameters.
static const char *kSavedParam = ",\n    CUdeviceptr saved";
static const char *kSavedSizeParams = "int64_t N, int64_t T, int64_t H, int64_t K, int64_t V, int varlen";
/// The launchers' parameters as call arguments, for launchers that forward to others.
static const char *kForwardArgs = "stream, inputs, out, h0, ht, cu_seqlens, N, T, H, K, V, scale";
static const char *kBackwardArgs = "stream, inputs, h0, dout, dht, dinputs, dh0, cu_seqlens, N, T, H, K, V, scale";

/// The condition (a C++ expression of the launch's K and V) under which a recurrence's unsuffixed launchers
/// (linac_<name>_cuda_forward / _backward) run chunk 16, and the chunk size they run otherwise, among those
/// compiled (`sizes`, in --chunk-sizes order). A matrix state with per-key gates pays for its exact per-pair
/// exponents O(C K) per token on the CUDA cores and for its state O(K V / C): on the H200 chunk 16 timed 9-14%
/// faster than 32 for GLA and HGRN-2 at K = V = 64 and 128 (RWKV-6: forward 4-12% faster, forward + backward
/// 1-8% slower), and 30-48% slower at 256; so 16 up to K V = 128 x 128 and 32 above. Every other recurrence runs
/// 32 (faster than 16 and 64 for each of them: bench/NOTES.md v8), but for a vector state with per-channel gates
/// (HGRN), whose backward and training pair run 16 (`plainForward` false): H100, bf16, K = 128 (NOTES v30),
/// forward + backward 2.55 -> 2.20 ms, while its forward alone runs 26% slower at 16 (0.51 -> 0.64 ms). Where a
/// preferred size is not compiled, the first compiled one.
static std::pair<std::string, int64_t> chunkChoice(const CudaKernel &k, const std::vector<int64_t> &sizes,
                                                   bool plainForward) {
  int64_t otherwise = llvm::is_contained(sizes, int64_t(32)) ? 32 : sizes.front();
  bool has16 = llvm::is_contained(sizes, int64_t(16));
  if (!k.matrixState && k.transition == "token_per_key" && has16 && !plainForward)
    return {"", 16};
  bool small = k.matrixState && k.transition == "token_per_key" && has16;
  return {small && otherwise != 16 ? "K * V <= 128 * 128" : "", otherwise};
}
/// The chunk sizes compiled for `recurrence`, in order.
static std::vector<int64_t> compiledChunks(const std::vector<CudaKernel> &kernels, const std::string &recurrence) {
  std::vector<int64_t> sizes;
  for (const CudaKernel &k : kernels)
    if (k.recurrence == recurrence && !llvm::is_contained(sizes, k.chunkSize))
      sizes.push_back(k.chunkSize);
  return sizes;
}

/// The C name of the launcher a kernel belongs to: linac_<name>_cuda_<direction>_chunk<C>, distinct from
/// the CPU entry point linac_<name>_<direction>_chunk<C> so that both link into one program.
static std::string launcherName(const CudaKernel &k) {
  return "linac_" + k.recurrence + "_cuda_" + (k.backward ? "backward" : "forward") + "_chunk" +
         std::to_string(k.chunkSize);
}

std::string linac::emitCudaLauncher(const std::vector<CudaKernel> &kernels, const std::string &image,
                                    bool imageIsCubin, const std::string &stem, std::string &header) {
  std::string guard = "LINAC_CUDA_" + llvm::StringRef(stem).upper();
  for (char &c : guard)
    if (!isalnum(static_cast<unsigned char>(c)))
      c = '_';
  llvm::raw_string_ostream h(header);
  h << "/* Generated by linacc --target=cuda. Do not edit. */\n#ifndef " << guard << "\n#define " << guard
    << "\n\n#include <cuda.h>\n#include <stddef.h>\n#include <stdint.h>\n\n"
    << "/* Launchers for the chunked forward and derived backward kernels of " << stem << ".mlir (sm_90a).\n"
    << (kernels.empty() || kernels.front().io == "f32"
            ? std::string("   Pointers are device pointers to fp32 buffers in the layout of linac_abi.h, and the backward "
                          "has the\n")
            : "   Pointers are device pointers in the layout of linac_abi.h: the per-token inputs, out and dout\n   " +
                  kernels.front().io + " (linacc --gpu-io=" + kernels.front().io +
                  "), states, per-head inputs and dinputs fp32; the backward has the\n")
    << "   semantics of linac_backward_fn (dinputs overwritten); h0, ht, dht, dh0 and cu_seqlens may be 0.\n"
       "   Each launch is ordered on `stream` and takes its scratch with cuMemAllocAsync from the stream's\n"
       "   pool. Returns CUDA_SUCCESS or the failing call's error; linac_" << stem << "_cuda_error() then\n"
       "   describes it. */\n"
    << "#ifdef __cplusplus\nextern \"C\" {\n#endif\n"
    << "const char *linac_" << stem << "_cuda_error(void);\n";
  for (const CudaKernel &k : kernels)
    if (k.staticDims.empty() && (k.phase.empty() || k.phase == "before")) {
      h << llvm::formatv("CUresult {0}({1});\n", launcherName(k), k.backward ? kBackwardParams : kForwardParams);
      h << llvm::formatv("CUresult {0}{1}({2}{3});\n", launcherName(k), k.backward ? "_saved" : "_saving",
                         k.backward ? kBackwardParams : kForwardParams, kSavedParam);
      if (!k.backward)
        h << llvm::formatv("size_t {0}_saved_floats({1});\n", launcherName(k), kSavedSizeParams);
    }
  // What each recurrence is, for callers that size work by it (gpu-bench's floor): state rank and transition
  // class (e.g. "delta_token_scalar"); and how its products round, for callers that check its accuracy.
  std::vector<std::string> described;
  for (const CudaKernel &k : kernels)
    if (!llvm::is_contained(described, k.recurrence)) {
      described.push_back(k.recurrence);
      auto describe = [&](bool plainForward) {
        auto [condition, chunk] = chunkChoice(k, compiledChunks(kernels, k.recurrence), plainForward);
        return condition.empty() ? "the chunk" + std::to_string(chunk) + " launchers"
                                 : "chunk 16 where " + condition + ", else chunk " + std::to_string(chunk);
      };
      std::string which = describe(true), training = describe(false);
      if (training != which)
        which = "the forward " + which + ", the backward and the training pair " + training;
      h << llvm::formatv("/* linac_{0}_cuda_forward / _backward run the chunk size linacc chooses for {0}: {1}. */\n",
                         k.recurrence, which)
        << llvm::formatv("CUresult linac_{0}_cuda_forward({1});\nCUresult linac_{0}_cuda_backward({2});\n",
                         k.recurrence, kForwardParams, kBackwardParams)
        << llvm::formatv("/* Training: linac_{0}_cuda_forward_saving also stores each chunk's initial state in\n"
                         "   `saved` (linac_{0}_cuda_saved_floats fp32 values, 16-byte aligned), and\n"
                         "   linac_{0}_cuda_backward_saved, given the same inputs, h0, cu_seqlens and sizes, reads\n"
                         "   them there instead of recomputing them. Where saved_floats is 0 (the split kernels),\n"
                         "   both run as the plain launchers and `saved` may be 0. */\n",
                         k.recurrence)
        << llvm::formatv("CUresult linac_{0}_cuda_forward_saving({1}{3});\n"
                         "CUresult linac_{0}_cuda_backward_saved({2}{3});\n"
                         "size_t linac_{0}_cuda_saved_floats({4});\n",
                         k.recurrence, kForwardParams, kBackwardParams, kSavedParam, kSavedSizeParams);
      h << llvm::formatv("enum {{ linac_{0}_cuda_state_rank = {1} };\n", k.recurrence, k.matrixState ? 2 : 1)
        << llvm::formatv("static const char linac_{0}_cuda_transition[] = \"{1}\";\n", k.recurrence, k.transition)
        << llvm::formatv("static const char linac_{0}_cuda_products[] = \"{1}\";\n", k.recurrence, k.products)
        << llvm::formatv("extern const char linac_{0}_cuda_io[]; /* \"{1}\": the launchers' I/O type */\n",
                         k.recurrence, k.io);
    }
  h << "#ifdef __cplusplus\n}\n#endif\n\n#endif\n";

  std::string out;
  llvm::raw_string_ostream os(out);
  os << "// Generated by linacc --target=cuda. Do not edit.\n#include \"" << stem << "_cuda.h\"\n\n"
     << "#include <algorithm>\n#include <cstdio>\n#include <cstdlib>\n#include <initializer_list>\n#include <mutex>\n#include <string>\n#include <vector>\n\n"
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
  /// A fixed-size kernel's K and V (it lays its tiles out for its shared budget) and the value slices it runs
  /// (staticZ, 1 unless built with linacc --gpu-static-slices); 0 for the generic kernel.
  int64_t staticK, staticV, staticZ;
  /// The shared memory a block may take (bytes), 0 for the device's per-block maximum (kStaticShared for a
  /// fixed-size kernel).
  size_t sharedBudget;
  /// Blocks per multiprocessor it leaves room for; the split's before and after kernels start that many per
  /// multiprocessor and loop over the chunk slots.
  int64_t blocksPerSm;
  /// Per input, '1' where a backward stores that per-token input gradient once (not adding into it): those
  /// are not zeroed ("" if none).
  const char *storedGradients;
  /// The in-order kernels keep the initial state of every boundaryEvery-th chunk (boundarySlots).
  int64_t boundaryEvery;
  /// An in-order delta rule kernel that keeps each chunk's solve (C x V floats) after the boundary states.
  bool savedSolves;
};

/// Whether `k` stores input i's per-token gradient (see Kernel::storedGradients).
bool storesGradient(const Kernel &k, unsigned i) { return k.storedGradients[0] && k.storedGradients[i] == '1'; }


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

/// A generic kernel and its fixed-size copies (null-terminated).
struct Phase {
  const Kernel *generic;
  const Kernel *const *fixed;
};

/// Whether every one of the buffers is 16-byte aligned (null ones are): the fixed-size kernels may assume it
/// (cp.async of 4-byte words, stores of adjacent pairs), so a launch with any other buffer runs the generic one.
bool aligned(const CUdeviceptr *buffers, unsigned n, std::initializer_list<CUdeviceptr> more) {
  for (unsigned i = 0; buffers && i < n; ++i)
    if (buffers[i] % 16)
      return false;
  for (CUdeviceptr b : more)
    if (b % 16)
      return false;
  return true;
}
/// aligned() over a backward's buffers: inputs, their gradients, h0, dout, dht and dh0.
bool backwardAligned(const CUdeviceptr *inputs, const CUdeviceptr *dinputs, unsigned n, CUdeviceptr h0,
                     CUdeviceptr dout, CUdeviceptr dht, CUdeviceptr dh0) {
  return aligned(inputs, n, {h0, dout, dht, dh0}) && aligned(dinputs, n, {});
}

/// The kernel to launch with Z value slices: the fixed-size copy for K, V and Z if there is one, the buffers are
/// aligned and LINAC_CUDA_GENERIC is unset; else the generic kernel.
const Kernel &pick(const Phase &p, int64_t Z, int64_t K, int64_t V, bool alignedBuffers) {
  if (std::getenv("LINAC_CUDA_GENERIC") || !alignedBuffers)
    return *p.generic;
  for (const Kernel *const *f = p.fixed; *f; ++f)
    if ((*f)->staticK == K && (*f)->staticV == V && (*f)->staticZ == Z)
      return **f;
  return *p.generic;
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

/// Device buffers taken in stream order (cuMemAllocAsync from the stream's pool) and freed after everything
/// launched before the destructor runs.
class Scratch {
public:
  explicit Scratch(CUstream stream) : stream(stream) {}
  ~Scratch() {
    for (CUdeviceptr p : held)
      cuMemFreeAsync(p, stream);
  }
  CUresult alloc(const Kernel &k, CUdeviceptr *ptr, size_t floats) {
    if (CUresult s = cuMemAllocAsync(ptr, std::max<size_t>(floats * sizeof(float), 4), stream))
      return fail(s, std::string(k.name) + " (scratch)");
    held.push_back(*ptr);
    return CUDA_SUCCESS;
  }

private:
  CUstream stream;
  std::vector<CUdeviceptr> held;
};

/// Launches `k` on a (gx, gy, Z) grid of blocks of the size it was compiled for, with as much dynamic shared
/// memory as its leading tile slots take and its tile scratch (allocated from `scratch`) in *tileScratch,
/// which `params` points at.
CUresult launch(const Kernel &k, CUstream stream, Scratch &scratch, int64_t gx, int64_t gy, int64_t Z, int64_t K,
                int64_t V, CUdeviceptr *tileScratch, void **params) {
  std::call_once(loaded, [] { loadStatus = cuModuleLoadData(&module, kImage); });
  if (loadStatus != CUDA_SUCCESS)
    return fail(loadStatus, "cuModuleLoadData");
  if (gx > 0x7fffffff || gy > 65535) {
    lastError = std::string(k.name) + ": the launch needs more blocks than a grid has (too many tokens?)";
    return CUDA_ERROR_INVALID_VALUE;
  }
  CUfunction function;
  if (CUresult s = cuModuleGetFunction(&function, module, k.name))
    return fail(s, k.name);
  int64_t perBlock = 0;
  size_t capacity = k.staticK ? (k.sharedBudget ? k.sharedBudget : kStaticShared)
                              : std::min(sharedCapacity(function), k.sharedBudget ? k.sharedBudget : SIZE_MAX);
  size_t shared = placeTiles(k.slotSizes(K, V, Z), capacity, &perBlock);
  if (CUresult s = cuFuncSetAttribute(function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, int(shared)))
    return fail(s, std::string(k.name) + " (shared memory size)");
  if (CUresult s = scratch.alloc(k, tileScratch, size_t(gx * gy * Z) * size_t(perBlock)))
    return s;
  if (CUresult s = cuLaunchKernel(function, unsigned(gx), unsigned(gy), unsigned(Z), k.blockSize, 1, 1,
                                  unsigned(shared), stream, params, nullptr))
    return fail(s, std::string(k.name) + " (launch)");
  return CUDA_SUCCESS;
}

/// A kernel's arguments: the inputs, the input gradients (backward), `pointers`, then the sizes and the scale
/// (all of which must outlive the launch).
std::vector<void *> kernelParams(const Kernel &k, const CUdeviceptr *inputs, const CUdeviceptr *dinputs,
                                 const std::vector<CUdeviceptr *> &pointers, int64_t (&sizes)[5], float &scale) {
  std::vector<void *> params;
  for (unsigned i = 0; i < k.numInputs; ++i)
    params.push_back(const_cast<CUdeviceptr *>(&inputs[i]));
  for (unsigned i = 0; dinputs && i < k.numInputs; ++i)
    params.push_back(const_cast<CUdeviceptr *>(&dinputs[i]));
  for (CUdeviceptr *ptr : pointers)
    params.push_back(ptr);
  for (int64_t &size : sizes)
    params.push_back(&size);
  params.push_back(&scale);
  return params;
}

/// Zeroes the input gradients the kernel adds into: all but the per-token ones it stores, which it still zeroes
/// for cu_seqlens (`varlen`), whose sequences need not cover every token. (A pairs kernel runs after the
/// backward and adds into what it left.)
CUresult zeroGradients(const Kernel &k, CUstream stream, const CUdeviceptr *dinputs, int64_t tokens, int64_t H,
                       int64_t K, int64_t V, bool varlen) {
  int64_t width = k.matrix ? V : K;
  for (unsigned i = 0; i < k.numInputs; ++i) {
    char scope = k.layout[3 * i], dim = k.layout[3 * i + 1];
    int64_t count = (scope == 't' ? tokens * H : H) * (dim == 'K' ? K : dim == 'V' ? width : 1);
    if (!dinputs[i]) {
      lastError = std::string(k.name) + ": gradient buffer " + std::to_string(i) + " is null";
      return CUDA_ERROR_INVALID_VALUE;
    }
    if (scope == 't' && !varlen && storesGradient(k, i))
      continue;
    if (CUresult s = cuMemsetD32Async(dinputs[i], 0, size_t(count), stream))
      return fail(s, std::string(k.name) + " (zeroing gradients)");
  }
  return CUDA_SUCCESS;
}

/// Blocks per head of the split's before and after kernels (block x loops over the chunk slots, block y is
/// the head): as many as the multiprocessors hold at once, at most one per slot. (All heads together as many
/// as the multiprocessors hold timed slower on the H200: GDN forward 10.6 ms against 9.5; bench/NOTES.md.)
int64_t slotBlocks(const Kernel &k, int64_t slots, int64_t) {
  int64_t resident = int64_t(std::max(1, multiprocessors())) * k.blocksPerSm;
  return std::clamp<int64_t>(resident, 1, std::max<int64_t>(slots, 1));
}

/// Chunk slots of a launch: chunk c of sequence n is slot n + start_n / C + c (each sequence may leave one
/// unused), so N + ceil(tokens / C) + 1 cover every chunk.
int64_t chunkSlots(const Kernel &k, int64_t N, int64_t tokens) { return N + (tokens + k.chunk - 1) / k.chunk + 1; }

/// Boundary-state slots of a launch (the saved states, the backward's boundary scratch): the in-order kernels
/// keep every R-th chunk's (R = boundaryEvery) in slot n + start_n / (C R) + c / R, so N + ceil(tokens / CR) + 1
/// cover them.
int64_t boundarySlots(const Kernel &k, int64_t N, int64_t tokens) {
  int64_t span = k.chunk * k.boundaryEvery;
  return N + (tokens + span - 1) / span + 1;
}

/// The floats of the boundary-state buffers (the saved states, the backward's boundary scratch): the kept
/// states, then, for a kernel that keeps its solves, C x V floats per chunk slot and head.
int64_t boundaryFloats(const Kernel &k, int64_t N, int64_t tokens, int64_t H, int64_t stateSize, int64_t V) {
  return boundarySlots(k, N, tokens) * H * stateSize + (k.savedSolves ? chunkSlots(k, N, tokens) * H * k.chunk * V : 0);
}

/// The boundary states a training forward saves (savedFloats of them) must be 16-byte aligned.
CUresult checkSaved(const Kernel &k, CUdeviceptr saved) {
  if (saved % 16 == 0)
    return CUDA_SUCCESS;
  lastError = std::string(k.name) + ": the saved boundary states must be 16-byte aligned";
  return CUDA_ERROR_INVALID_VALUE;
}

/// The fp32 values a training forward saves: every R-th chunk's initial state, in boundarySlots() slots per
/// head.
/// 0 for sizes the launchers refuse (checkSizes, whose message lastError then holds).
int64_t savedFloats(const Kernel &k, int64_t N, int64_t T, int64_t H, int64_t K, int64_t V, bool varlen) {
  if (checkSizes(k, N, T, H, K, V, true) != CUDA_SUCCESS)
    return 0;
  return boundaryFloats(k, N, varlen ? T : N * T, H, k.matrix ? K * V : K, V);
}

/// The in-order forward; with `saved` (the training forward) it also stores each chunk's initial state there.
[[maybe_unused]] CUresult forward(const Phase &p, CUstream stream, const CUdeviceptr *inputs, CUdeviceptr out, CUdeviceptr h0,
                 CUdeviceptr ht, CUdeviceptr cu, int64_t N, int64_t T, int64_t H, int64_t K, int64_t V, float scale,
                 CUdeviceptr saved = 0) {
  if (CUresult s = checkSizes(*p.generic, N, T, H, K, V, inputs && out))
    return s;
  if (CUresult s = checkSaved(*p.generic, saved))
    return s;
  int64_t Z = valueSplits(*p.generic, N, H, V);
  const Kernel &k = pick(p, Z, K, V, aligned(inputs, p.generic->numInputs, {out, h0, ht}));
  int64_t stateSize = k.matrix ? K * V : K;
  Scratch scratch(stream);
  CUdeviceptr stateScratch = 0, tileScratch = 0;
  if (CUresult s = scratch.alloc(k, &stateScratch, size_t(N * H * stateSize)))
    return s;
  int64_t sizes[5] = {N, T, H, K, V};
  std::vector<void *> params =
      kernelParams(k, inputs, nullptr, {&out, &h0, &ht, &cu, &stateScratch, &saved, &tileScratch}, sizes, scale);
  return launch(k, stream, scratch, H, N, Z, K, V, &tileScratch, params.data());
}

/// The in-order backward. With `boundaries` (linacc --gpu-boundary-slices), a kernel of its own first fills the
/// boundary scratch: it runs the state recurrence alone, with `boundarySlices` value slices (where V allows) as
/// that many blocks a multiprocessor; the backward then reads each chunk's initial state there. With `saved`
/// (the training forward's boundary states), the backward reads them there and neither computes them. With
/// `pairs` (linacc --gpu-pair-kernel), the backward derives the gradients of the output's state-dependent terms
/// and that kernel runs after it, over chunk slots, adding those of the state-independent terms. With `tail`
/// (linacc --gpu-tail-kernel), the backward is the head of a tail cut: it runs one value slice and stores each
/// chunk's cut (`cutFloats` a chunk slot and head) in a scratch of its own, and the tail kernel, over chunk
/// slots after it, computes every input gradient from there.
[[maybe_unused]] CUresult backward(const Phase &p, CUstream stream, const CUdeviceptr *inputs, CUdeviceptr h0, CUdeviceptr dout,
                  CUdeviceptr dht, const CUdeviceptr *dinputs, CUdeviceptr dh0, CUdeviceptr cu, int64_t N, int64_t T,
                  int64_t H, int64_t K, int64_t V, float scale, const Phase *boundaries = nullptr,
                  int64_t boundarySlices = 1, CUdeviceptr saved = 0, const Phase *pairs = nullptr,
                  const Phase *tail = nullptr, int64_t (*cutFloats)(int64_t K, int64_t V) = nullptr) {
  if (CUresult s = checkSizes(*p.generic, N, T, H, K, V, inputs && dout && dinputs))
    return s;
  if (CUresult s = checkSaved(*p.generic, saved))
    return s;
  int64_t Z = tail ? 1 : valueSplits(*p.generic, N, H, V);
  bool alignedBuffers = backwardAligned(inputs, dinputs, p.generic->numInputs, h0, dout, dht, dh0);
  const Kernel &k = pick(p, Z, K, V, alignedBuffers);
  int64_t stateSize = k.matrix ? K * V : K, tokens = cu ? T : N * T;
  const Kernel *pk = pairs ? &pick(*pairs, 1, K, V, alignedBuffers) : nullptr;
  const Kernel *tk = tail ? &pick(*tail, 1, K, V, alignedBuffers) : nullptr;
  // The tail computes every gradient (the head none): it says which it stores plainly.
  if (CUresult s = zeroGradients(tk ? *tk : k, stream, dinputs, tokens, H, K, V, cu != 0))
    return s;
  Scratch scratch(stream);
  // The kernel reads the boundary states from its boundary scratch, and recomputes them there unless its
  // `saved` argument (a flag here) is set.
  CUdeviceptr boundaryScratch = saved, stateScratch = 0, tileScratch = 0;
  if (!saved)
    if (CUresult s = scratch.alloc(k, &boundaryScratch, size_t(boundaryFloats(k, N, tokens, H, stateSize, V))))
      return s;
  if (CUresult s = scratch.alloc(k, &stateScratch, size_t(2 * N * H * stateSize)))
    return s;
  CUdeviceptr cutScratch = 0;
  int64_t slots = chunkSlots(k, N, tokens);
  if (tk)
    if (CUresult s = scratch.alloc(k, &cutScratch, size_t(slots * H * cutFloats(K, V))))
      return s;
  int64_t sizes[5] = {N, T, H, K, V};
  // The head and tail of a tail cut take the cut's scratch before the tile scratch.
  std::vector<CUdeviceptr *> pointers = {&h0, &dout, &dht, &dh0, &cu, &boundaryScratch, &stateScratch, &saved};
  if (tk)
    pointers.push_back(&cutScratch);
  pointers.push_back(&tileScratch);
  std::vector<void *> params = kernelParams(k, inputs, dinputs, pointers, sizes, scale);
  if (boundaries && !saved) {
    int64_t Zb = V % boundarySlices == 0 && V / boundarySlices >= 8 ? boundarySlices : Z;
    const Kernel &bk = pick(*boundaries, Zb, K, V, alignedBuffers);
    if (CUresult s = launch(bk, stream, scratch, H, N, Zb, K, V, &tileScratch, params.data()))
      return s;
  }
  if (CUresult s = launch(k, stream, scratch, H, N, Z, K, V, &tileScratch, params.data()); s || !(pk || tk))
    return s;
  const Kernel &after = pk ? *pk : *tk;
  return launch(after, stream, scratch, slotBlocks(after, slots, H), H, 1, K, V, &tileScratch, params.data());
}

/// The kernels of one direction of the chunk-parallel split (linac-gpu-chunk): before and after over chunk
/// slots, the chain over (sequence, head, value slice); `frontier` gives the before kernel's floats per chunk
/// slot and head.
struct Split {
  Phase before, chain, after;
  int64_t (*frontier)(int64_t K, int64_t V);
};

/// Launches the before, chain and (if `withAfter`) after kernels of `s` in stream order with `params`, which
/// point at *tileScratch for each kernel's tile scratch.
CUresult runPhases(const Split &s, CUstream stream, Scratch &scratch, int64_t N, int64_t H, int64_t K, int64_t V,
                   int64_t slots, CUdeviceptr *tileScratch, void **params, bool withAfter, bool alignedBuffers) {
  int64_t Z = valueSplits(*s.chain.generic, N, H, V);
  const Kernel &before = pick(s.before, 1, K, V, alignedBuffers);
  if (CUresult r = launch(before, stream, scratch, slotBlocks(before, slots, H), H, 1, K, V, tileScratch, params))
    return r;
  if (CUresult r = launch(pick(s.chain, Z, K, V, alignedBuffers), stream, scratch, H, N, Z, K, V, tileScratch, params))
    return r;
  if (!withAfter)
    return CUDA_SUCCESS;
  const Kernel &after = pick(s.after, 1, K, V, alignedBuffers);
  return launch(after, stream, scratch, slotBlocks(after, slots, H), H, 1, K, V, tileScratch, params);
}

/// Launches the forward's before and chain kernels (the chain leaves each chunk's initial state in
/// `boundaries`, and ht if that is non-zero) with the forward kernels' arguments.
CUresult runForwardChain(const Split &f, CUstream stream, Scratch &scratch, const CUdeviceptr *inputs, CUdeviceptr out,
                         CUdeviceptr h0, CUdeviceptr ht, CUdeviceptr cu, CUdeviceptr frontier, CUdeviceptr boundaries,
                         CUdeviceptr state, int64_t N, int64_t T, int64_t H, int64_t K, int64_t V, float scale,
                         int64_t slots, bool withAfter) {
  const Kernel &k = *f.before.generic;
  CUdeviceptr tileScratch = 0;
  int64_t sizes[5] = {N, T, H, K, V};
  std::vector<void *> params = kernelParams(
      k, inputs, nullptr, {&out, &h0, &ht, &cu, &frontier, &boundaries, &state, &tileScratch}, sizes, scale);
  return runPhases(f, stream, scratch, N, H, K, V, slots, &tileScratch, params.data(), withAfter,
                   aligned(inputs, k.numInputs, {out, h0, ht}));
}

[[maybe_unused]] CUresult forwardSplit(const Split &f, CUstream stream, const CUdeviceptr *inputs, CUdeviceptr out, CUdeviceptr h0,
                      CUdeviceptr ht, CUdeviceptr cu, int64_t N, int64_t T, int64_t H, int64_t K, int64_t V,
                      float scale) {
  const Kernel &k = *f.before.generic;
  if (CUresult s = checkSizes(k, N, T, H, K, V, inputs && out))
    return s;
  int64_t slots = chunkSlots(k, N, cu ? T : N * T);
  Scratch scratch(stream);
  CUdeviceptr frontier = 0, boundaries = 0, state = 0;
  if (CUresult s = scratch.alloc(k, &frontier, size_t(slots * H * f.frontier(K, V))))
    return s;
  if (CUresult s = scratch.alloc(k, &boundaries, size_t(slots * H * K * V)))
    return s;
  if (CUresult s = scratch.alloc(k, &state, size_t(N * H * K * V)))
    return s;
  return runForwardChain(f, stream, scratch, inputs, out, h0, ht, cu, frontier, boundaries, state, N, T, H, K, V,
                         scale, slots, /*withAfter=*/true);
}

/// The split backward: the forward's before and chain kernels for the chunk boundary states, then the
/// backward's before, chain (chunks in reverse) and after kernels.
[[maybe_unused]] CUresult backwardSplit(const Split &f, const Split &b, CUstream stream, const CUdeviceptr *inputs, CUdeviceptr h0,
                       CUdeviceptr dout, CUdeviceptr dht, const CUdeviceptr *dinputs, CUdeviceptr dh0, CUdeviceptr cu,
                       int64_t N, int64_t T, int64_t H, int64_t K, int64_t V, float scale) {
  const Kernel &k = *b.before.generic;
  if (CUresult s = checkSizes(k, N, T, H, K, V, inputs && dout && dinputs))
    return s;
  int64_t tokens = cu ? T : N * T, slots = chunkSlots(k, N, tokens);
  if (CUresult s = zeroGradients(k, stream, dinputs, tokens, H, K, V, cu != 0))
    return s;
  Scratch scratch(stream);
  // The forward's frontier is dead once its chain has run: the backward's reuses the buffer.
  CUdeviceptr frontier = 0, boundaries = 0, gradBoundaries = 0, state = 0, tileScratch = 0;
  if (CUresult s = scratch.alloc(k, &frontier, size_t(slots * H * std::max(f.frontier(K, V), b.frontier(K, V)))))
    return s;
  for (CUdeviceptr *buffer : {&boundaries, &gradBoundaries})
    if (CUresult s = scratch.alloc(k, buffer, size_t(slots * H * K * V)))
      return s;
  if (CUresult s = scratch.alloc(k, &state, size_t(N * H * K * V)))
    return s;
  if (CUresult s = runForwardChain(f, stream, scratch, inputs, 0, h0, 0, cu, frontier, boundaries, state, N, T, H, K,
                                   V, scale, slots, /*withAfter=*/false))
    return s;
  int64_t sizes[5] = {N, T, H, K, V};
  std::vector<void *> params = kernelParams(
      k, inputs, dinputs,
      {&h0, &dout, &dht, &dh0, &cu, &frontier, &boundaries, &gradBoundaries, &state, &tileScratch}, sizes, scale);
  return runPhases(b, stream, scratch, N, H, K, V, slots, &tileScratch, params.data(), /*withAfter=*/true,
                   backwardAligned(inputs, dinputs, k.numInputs, h0, dout, dht, dh0));
}

} // namespace

)cpp";
  os << "const char *linac_" << stem << "_cuda_error(void) { return lastError.c_str(); }\n";
  auto kernelInit = [](const CudaKernel &k) {
    std::string sizes;
    for (const std::string &size : k.slotSizes)
      sizes += (sizes.empty() ? "" : ", ") + size;
    int64_t staticK = k.staticDims.empty() ? 0 : k.staticDims[0], staticV = k.staticDims.empty() ? 0 : k.staticDims[1];
    int64_t staticZ = k.staticDims.size() > 2 ? k.staticDims[2] : 1;
    return llvm::formatv("{{\"{0}\", {1}, \"{2}\", {3}, {4}, {5},\n"
                         "    [](int64_t K, int64_t V, int64_t Z) {{\n      (void)K, (void)V, (void)Z;\n"
                         "      return std::vector<int64_t>{{{6}};\n    }, {7}, {8}, {11}, {9}, {10}, {12}, {13}, {14}}",
                         k.symbol, k.numInputs, k.inputLayout, k.chunkSize, k.matrixState ? "true" : "false",
                         k.blockSize, sizes, staticK, staticV, k.sharedBudget, k.blocksPerSm, staticZ,
                         "\"" + k.storedGradients + "\"", k.boundaryEvery, k.savedSolves ? "true" : "false")
        .str();
  };
  // Every generic kernel as phase p<i> (with its fixed-size copies), and a split kernel's frontier size.
  std::map<std::string, size_t> phaseOf;
  os << "\nnamespace {\n";
  for (auto [i, k] : llvm::enumerate(kernels)) {
    if (!k.staticDims.empty())
      continue;
    std::string copies;
    for (const CudaKernel &c : kernels)
      if (!c.staticDims.empty() && llvm::StringRef(c.symbol).starts_with(k.symbol + "_k")) {
        std::string id = "k" + std::to_string(i) + "_" + std::to_string(c.staticDims[0]) + "x" +
                         std::to_string(c.staticDims[1]) +
                         (c.staticDims.size() > 2 ? "z" + std::to_string(c.staticDims[2]) : "");
        os << "const Kernel " << id << " = " << kernelInit(c) << ";\n";
        copies += "&" + id + ", ";
      }
    os << "const Kernel k" << i << " = " << kernelInit(k) << ";\n";
    os << "const Kernel *const k" << i << "_fixed[] = {" << copies << "nullptr};\n";
    os << "const Phase p" << i << " = {&k" << i << ", k" << i << "_fixed};\n";
    // Floats a chunk slot and head of the buffers sized by K and V: the split's frontier, a tail cut's cut.
    auto floatsFunction = [&](StringRef name, StringRef expression) {
      os << "int64_t " << name << i << "(int64_t K, int64_t V) {\n  (void)K, (void)V;\n  return " << expression
         << ";\n}\n";
    };
    if (k.phase == "before")
      floatsFunction("frontier", k.frontierSize);
    if (k.phase == "tail")
      floatsFunction("cut", k.tailCut);
    phaseOf[k.symbol] = i;
  }
  os << "} // namespace\n";
  // One launcher per recurrence, direction and chunk size.
  auto split = [&](const std::string &base) {
    size_t i = phaseOf.at(base + "_before");
    return llvm::formatv("{{p{0}, p{1}, p{2}, frontier{0}}", i, phaseOf.at(base + "_chain"),
                         phaseOf.at(base + "_after"))
        .str();
  };
  for (const CudaKernel &k : kernels) {
    if (!k.staticDims.empty() || (!k.phase.empty() && k.phase != "before"))
      continue;
    std::string base = k.phase.empty() ? k.symbol : k.symbol.substr(0, k.symbol.size() - 7);
    // The plain launcher, then the training one (with `saved`): the same body, which passes `saved` on to the
    // in-order kernels (the split's ignore it).
    for (bool training : {false, true}) {
      os << llvm::formatv("\nCUresult {0}{1}({2}{3}) {{\n", launcherName(k),
                          training ? (k.backward ? "_saved" : "_saving") : "",
                          k.backward ? kBackwardParams : kForwardParams, training ? kSavedParam : "");
      std::string saved = training ? ", saved" : "";
      if (training && !k.phase.empty())
        os << "  (void)saved;\n";
      if (k.phase.empty() && k.backward) {
        // backward()'s optional arguments, as far as this launcher needs them: boundaries, their slices, the
        // saved states, the pairs kernel.
        bool boundaries = !k.boundaryKernel.empty(), pairs = !k.pairKernel.empty(), tail = !k.tailKernel.empty();
        std::string optional;
        if (boundaries || training || pairs || tail)
          optional += boundaries ? llvm::formatv(", &p{0}, {1}", phaseOf.at(k.boundaryKernel), k.boundarySlices).str()
                                 : ", nullptr, 1";
        if (training || pairs || tail)
          optional += training ? saved : ", 0";
        if (pairs || tail)
          optional += pairs ? ", &p" + std::to_string(phaseOf.at(k.pairKernel)) : ", nullptr";
        if (tail)
          optional += llvm::formatv(", &p{0}, cut{0}", phaseOf.at(k.tailKernel)).str();
        os << "  return backward(p" << phaseOf.at(k.symbol) << ", " << kBackwardArgs << optional << ");\n}\n";
      } else if (k.phase.empty())
        os << "  return forward(p" << phaseOf.at(k.symbol) << ", " << kForwardArgs << saved << ");\n}\n";
      else if (k.backward) {
        std::string forwardBase = llvm::StringRef(base).str();
        forwardBase.replace(forwardBase.find("_backward_"), 10, "_forward_");
        os << "  static const Split f = " << split(forwardBase) << ", b = " << split(base) << ";\n"
           << "  return backwardSplit(f, b, " << kBackwardArgs << ");\n}\n";
      } else {
        os << "  static const Split f = " << split(base) << ";\n"
           << "  return forwardSplit(f, " << kForwardArgs << ");\n}\n";
      }
    }
    if (!k.backward)
      os << llvm::formatv("\nsize_t {0}_saved_floats({1}) {{\n  return {2};\n}\n", launcherName(k),
                          kSavedSizeParams,
                          k.phase.empty() ? "size_t(savedFloats(k" + std::to_string(phaseOf.at(k.symbol)) +
                                                 ", N, T, H, K, V, varlen != 0))"
                                          : std::string("0; // the split saves nothing\n  (void)N, (void)T, "
                                                        "(void)H, (void)K, (void)V, (void)varlen"));
  }
  // The unsuffixed launchers: the chunk size chosen by shape (chunkChoice).
  std::vector<std::string> dispatched;
  for (const CudaKernel &k : kernels) {
    if (llvm::is_contained(dispatched, k.recurrence))
      continue;
    dispatched.push_back(k.recurrence);
    // forward, backward, the training pair, and the saved states' size: each dispatches to the chunk size's.
    struct Dispatched {
      const char *suffix, *params, *extra, *args, *result;
    };
    const Dispatched dispatchedFns[] = {
        {"forward", kForwardParams, "", kForwardArgs, "CUresult"},
        {"backward", kBackwardParams, "", kBackwardArgs, "CUresult"},
        {"forward_saving", kForwardParams, kSavedParam, kForwardArgs, "CUresult"},
        {"backward_saved", kBackwardParams, kSavedParam, kBackwardArgs, "CUresult"},
        {"saved_floats", kSavedSizeParams, "", "N, T, H, K, V, varlen", "size_t"},
    };
    for (const Dispatched &d : dispatchedFns) {
      bool training = *d.extra != 0;
      auto [condition, chunk] =
          chunkChoice(k, compiledChunks(kernels, k.recurrence), StringRef(d.suffix) == "forward");
      std::string args = std::string(d.args) + (training ? ", saved" : "");
      std::string name = d.suffix;
      // The chunk launchers are <direction>_chunk<C>[_saving|_saved] and forward_chunk<C>_saved_floats.
      auto chunkName = [&](int64_t C) {
        std::string c = "_chunk" + std::to_string(C);
        if (name == "saved_floats")
          return "forward" + c + "_saved_floats";
        size_t cut = name.find('_');
        return cut == std::string::npos ? name + c : name.substr(0, cut) + c + name.substr(cut);
      };
      os << llvm::formatv("\n{0} linac_{1}_cuda_{2}({3}{4}) {{\n", d.result, k.recurrence, name, d.params, d.extra);
      if (!condition.empty())
        os << llvm::formatv("  if ({0})\n    return linac_{1}_cuda_{2}({3});\n", condition, k.recurrence,
                            chunkName(16), args);
      os << llvm::formatv("  return linac_{0}_cuda_{1}({2});\n}\n", k.recurrence, chunkName(chunk), args);
    }
    // Exported (declared extern "C" in the header), so that a program that loads the library can check it.
    os << llvm::formatv("\nconst char linac_{0}_cuda_io[] = \"{1}\";\n", k.recurrence, k.io);
  }
  return out;
}
