#ifndef LINAC_TARGET_CUDATARGET_H
#define LINAC_TARGET_CUDATARGET_H

#include "mlir/IR/BuiltinOps.h"

#include <string>
#include <vector>

namespace linac {

/// One generated kernel and what its launcher must know.
struct CudaKernel {
  std::string recurrence, symbol;
  /// blockSize: threads per block the kernel was compiled for (its known block size).
  int64_t chunkSize = 0, blockSize = 0;
  /// Each tile slot's size in floats, in the kernel's layout order, as a C++ expression of K, V and Z (value
  /// slices); the launcher places the leading ones in shared memory as the kernel does.
  std::vector<std::string> slotSizes;
  /// {K, V} for a fixed-size copy (symbol <generic>_k<K>_v<V>), {K, V, Z} for one that runs Z value slices
  /// (<generic>_k<K>_v<V>_z<Z>), empty for the generic kernel.
  std::vector<int64_t> staticDims;
  unsigned numInputs = 0;
  bool matrixState = true;
  bool backward = false;
  /// Per input, per-token ('t') or per-head ('h') and width ('K', 'V' or '1'): "tK,tV,h1".
  std::string inputLayout;
  /// The phase of the chunk-parallel split ("before", "chain", "after"), of an in-order backward's helper
  /// kernels ("boundaries", "pairs", "tail"), or empty for a whole chunked pass; and a split kernel's frontier floats
  /// per chunk slot and head, a C++ expression of K and V.
  std::string phase, frontierSize;
  /// The recurrence's transition class (linac.transition, see transitionClass in ChunkForm.h).
  std::string transition;
  /// How its tensor-core products round (linac.products: "tf32x3" fp32-accurate, or "tf32").
  std::string products;
  /// The element type of the per-token inputs, out and dout (linac.io_type: "f32", "bf16" or "f16").
  std::string io;
  /// Shared memory a block may take (bytes; linac.shared_budget), 0 for the device's per-block maximum.
  int64_t sharedBudget = 0;
  /// Blocks per multiprocessor the kernel was compiled to allow (nvvm.minctasm; 1 if unset).
  int64_t blocksPerSm = 1;
  /// Per input, '1' where a backward writes that per-token input gradient once with plain stores
  /// (linac.stored_gradients; empty if none): the launcher does not zero those.
  std::string storedGradients;
  /// An in-order backward that leaves the pair terms to a kernel launched after it (linac.pair_kernel: its
  /// symbol), which adds them into its gradients.
  std::string pairKernel;
  /// An in-order backward that is the head of a tail cut (linac.tail_kernel: the tail's symbol, launched after
  /// it over chunk slots, which computes every input gradient); on both, the cut's floats per chunk slot and
  /// head, a C++ expression of K and V (linac.tail_cut).
  std::string tailKernel, tailCut;
  /// An in-order backward whose boundary states another kernel computes first (linac.boundary_kernel: its
  /// symbol), launched with boundarySlices value slices.
  std::string boundaryKernel;
  int64_t boundarySlices = 0;
  /// An in-order kernel that keeps the initial state of every boundaryEvery-th chunk only (linac.boundary_every).
  int64_t boundaryEvery = 1;
  /// An in-order kernel that keeps each chunk's solve beside its boundary states (linac.saved_solves).
  bool savedSolves = false;
};

/// Lowers `module` (linac dialect) to GPU kernels for sm_90a: a chunked
/// forward and a derived backward kernel per recurrence and chunk size, returned as PTX.
/// `staticDims` holds pairs K, V to also compile fixed-size kernels for (see linac-gpu-chunk).
/// How linac-gpu-chunk builds the kernels (see its options).
struct CudaKernelOptions {
  /// Threads per block (0: by kernel, see linac-gpu-chunk's options).
  int64_t blockSize = 0;
  /// Threads per block of the in-order backward kernels (0: by state kind, see linac-gpu-chunk's options).
  int64_t backwardBlockSize = 0;
  std::vector<int64_t> staticDims;
  bool split = false;
  int64_t phaseBlockSize = 0, phaseBlocksPerSm = 1;
  /// linac-gpu-chunk's pair-kernel, pair-block-size and pair-blocks-per-sm.
  std::string pairKernel = "per-key";
  int64_t pairBlockSize = 0, pairBlocksPerSm = 0;
  /// linac-gpu-chunk's tail-kernel and tail-blocks-per-sm.
  std::string tailKernel = "none";
  int64_t tailBlocksPerSm = 2;
  /// linac-tile-to-gpu's products: "tf32x3" or "tf32".
  std::string products = "tf32x3";
  /// linac-tile-to-gpu's forward-copies and product-chains (0: their defaults).
  int64_t forwardCopies = 0, productChains = 0;
  /// linac-tile-to-gpu's split-k.
  int64_t splitK = 1;
  /// linac-tile-to-gpu's unroll-global-k.
  int64_t unrollGlobalK = 0;
  /// linac-tile-to-gpu's factor-gates.
  bool factorGates = false;
  /// linac-tile-to-gpu's pad-by-pattern and wide-warp-tiles ("none", "forward" or "all"), schedule (also
  /// "fit") and placement ("accesses" or "latency").
  std::string padByPattern = "forward", wideWarpTiles = "forward", schedule = "fit", placement = "accesses";
  /// linac-tile-to-fragments' warps a block (an experiment; 0: the pass does not run).
  int64_t fragmentWarps = 0;
  /// linac-tile-to-fragments' all: the backward kernels too.
  bool fragmentBackward = false;
  /// linac-tile-to-fragments' prefetch: chunk inputs loaded one iteration ahead.
  bool fragmentPrefetch = false;
  /// linac-tile-to-fragments' product-solves: "none", "forward", "backward", "all", or "auto" (the forwards, as
  /// measured).
  std::string productSolves = "auto";
  /// linac-tile-to-fragments' substitution: "left" or "right".
  std::string substitution = "left";
  /// linac-tile-to-fragments' interleave-terms.
  bool interleaveTerms = false;
  /// linac-gpu-chunk's io-type: "f32", "bf16" or "f16".
  std::string io = "f32";
  /// linac-gpu-chunk's static-slices (an experiment; 1: none) and boundary-slices (an experiment; 0: none).
  int64_t staticSlices = 1, boundarySlices = 0;
  /// linac-gpu-chunk's boundary-every (1: every chunk's initial state kept; 0: by recurrence and I/O).
  int64_t boundaryEvery = 0;
  /// linac-gpu-chunk's save-solves: "auto", "on" or "off".
  std::string saveSolves = "auto";
  /// Which kernels take the fast exponentials (linac-tile-to-fragments' exp2) as ex2.approx.ftz.f32 through
  /// the NVVM intrinsic rather than libdevice's non-flushing __nv_exp2f: "auto" (all but the delta rule's
  /// backwards, as measured), "none", "all", "forward" or "backward" (the backward kernels, pairs kernels
  /// included).
  std::string ftzExp2 = "auto";
};
/// With `emulation`, also the same kernels compiled for the host (emitCudaEmulation) into *emulation.
mlir::FailureOr<std::string> emitCudaPtx(mlir::ModuleOp module, const std::vector<int64_t> &chunkSizes,
                                         const CudaKernelOptions &options, std::vector<CudaKernel> &kernels,
                                         std::string *emulation = nullptr);

/// The C++ launcher (CUDA driver API, no MLIR) for `kernels`, embedding `image` (a cubin or PTX).
std::string emitCudaLauncher(const std::vector<CudaKernel> &kernels, const std::string &image, bool imageIsCubin,
                             const std::string &stem, std::string &header);

} // namespace linac

#endif
