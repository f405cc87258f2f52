#ifndef LINAC_CONVERSION_TILELOWERING_H
#define LINAC_CONVERSION_TILELOWERING_H

// Lowering of tile IR to loops, shared by the CPU and GPU back ends: the
// per-op loop bodies are the same, the strategy decides where tiles live and
// how loops are distributed.

#include "dialect/LinacOps.h"
#include "lib/Conversion/LoopBuilder.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "llvm/ADT/DenseMap.h"

namespace linac {

/// Where tiles live and how their element loops run: nested loops over heap
/// buffers on the CPU; thread-strided loops over per-block scratch on the GPU.
class TileLoopStrategy {
public:
  virtual ~TileLoopStrategy() = default;
  /// A rows x cols memref<?x?xf32> for the result of `op`.
  virtual mlir::Value allocate(mlir::OpBuilder &b, mlir::Operation *op, mlir::Value rows, mlir::Value cols) = 0;
  /// Storage the result of the tile load `load` may use as it is (a view of the loaded buffer), or null for a
  /// copy of its own.
  virtual mlir::Value view(mlir::OpBuilder &b, mlir::Operation *load) { return {}; }
  /// The products lowered at their stores (productEpilogues(root), or fewer where the strategy cannot afford
  /// them): the lowering takes this map as it is.
  virtual llvm::DenseMap<mlir::Operation *, mlir::Operation *> epilogues(mlir::Operation *root);
  /// body(r, c) for every element; all of them finished when it returns.
  virtual void parallel2D(LoopBuilder &l, mlir::Value rows, mlir::Value cols, llvm::function_ref<void(mlir::Value, mlir::Value)> body) = 0;
  /// body(i) for i < n; all finished when it returns.
  virtual void parallel1D(LoopBuilder &l, mlir::Value n, llvm::function_ref<void(mlir::Value)> body) = 0;
  /// buffer[indices] += value, for accumulating stores and for ops whose parallel iterations add into shared
  /// elements. Other threads (on the GPU, other blocks too: per-head gradients sum over sequences) may add to
  /// the same element, so the GPU adds atomically.
  virtual void accumulate(LoopBuilder &l, mlir::Value value, mlir::Value buffer, mlir::ValueRange indices) {
    l.store(l.fadd(value, l.load(buffer, indices)), buffer, indices);
  }
  /// A matrix product out(i, j) = sum_k lhs(i, k) rhs(k, j) over i < rows, j < cols, k < inner, handing each
  /// sum to store(i, j, sum); all stores finished when it returns. lhs and rhs are only called in range.
  /// Returns false where the strategy has nothing better than one sum loop per element, which the caller
  /// then emits.
  virtual bool product(LoopBuilder &l, mlir::Value rows, mlir::Value cols, mlir::Value inner,
                       llvm::function_ref<mlir::Value(mlir::Value, mlir::Value)> lhs,
                       llvm::function_ref<mlir::Value(mlir::Value, mlir::Value)> rhs,
                       llvm::function_ref<void(mlir::Value, mlir::Value, mlir::Value)> store) {
    return false;
  }
  /// Whether per-key gated pair products (gated_dot, gated_matmul with one gate per key channel) go in blocks:
  /// pairs within a block of rows exactly (one exponent per pair and channel), pairs across blocks as
  /// product() calls on operands scaled by a reference gate (TileLowering's lowering of those ops). Off by
  /// default on both targets: on the H200 the blocked form was 7-15% slower (the within-block pairs still
  /// diverge across each warp, and the small cross-block products are latency-bound: bench/NOTES.md v8);
  /// `linacc --gpu-factor-gates` / `--cpu-factor-gates` take it, and CI tests it on the CPU.
  virtual bool factorsGatedPairs() { return false; }
  /// add(sum over i < n of term(i)), for reductions with few outputs and many terms: the GPU splits the terms
  /// over all threads and calls `add` (which must accumulate) once per warp; all finished when it returns.
  virtual void blockSum(LoopBuilder &l, mlir::Value n, llvm::function_ref<mlir::Value(mlir::Value)> term,
                        llvm::function_ref<void(mlir::Value)> add) {
    add(l.sumLoop(n, term));
  }
};

/// Tile ops: a tile store, or an op whose one result is a tile.
bool isTileOp(mlir::Operation *op);

/// Tiles that get no storage and no loop: their readers compute their elements in place (elementwise chains
/// fuse into one loop, and a fill, broadcast or mask costs no pass). Index remaps (fill, broadcast, transpose,
/// row mask, tril, row scatter) always fuse, being cheaper to recompute than to load; an elementwise op fuses
/// into its one reader when that reader takes each element once (elementwise, store, row mask, tril, a
/// reduction or row sum: the backward's sum over dS * S needs no K x V tile); a load fuses into the store right
/// after it, its one reader, into another buffer (a state copied in or out needs no tile either). Every reader
/// must sit in the tile's block, so that what the element code reads is still there: a strategy that reuses
/// storage must keep a fused tile's operands alive until its readers have run.
bool isFusedTile(mlir::Operation *op);
/// Whether computing `tile` reads `buffer`: it is a load of it, or a fused tile (isFusedTile) whose element code
/// reads such a load.
bool readsBuffer(mlir::Value tile, mlir::Value buffer);
/// Elementwise arith/math on tiles (the ops without a tile-dialect lowering of their own): element (r, c) of
/// the result reads element (r, c) of each operand only.
bool isElementwiseTile(mlir::Operation *op);
/// The load whose values `tile` holds as loaded (the tile itself, or through mask_rows), else null: exactly what
/// the buffer holds, so a product reading it loses nothing when it rounds its operands to the buffer's element
/// type (bf16 I/O).
TileLoadOp loadedTile(mlir::Value tile);

/// Simplifies the tile ops of `kernel` by exact identities (no rounding added or moved):
/// - with `broadcasts`, an elementwise op of one operand (an exponential, a negation) on a broadcast tile
///   applies to the broadcast's source, and the result is broadcast: the exponential of a chunk's gates
///   broadcast over V columns is C exponentials, not C x V (Gated DeltaNet, simple GLA, RetNet; LLVM had
///   already shared the equal values of a thread's row, so the PTX barely changed: bench/NOTES.md v23). For
///   the register-resident lowering (a column's op is one value a lane); the shared-memory lowering computes
///   such an op in its readers' passes, and would pay a pass and a barrier of its own for it;
/// - tiles that are constant by construction become fills: a broadcast, transpose or row of a fill; the prefix
///   sums or row mask of zeros; exp and exp2 of zeros (ones); and x * 1 = 1 * x = x, x - 0 = x. A recurrence
///   without a gate (DeltaNet: log decay 0) then drops the exponentials and the multiplications by one that its
///   chunk form carries for gated ones;
/// - gated products whose gates are zeros are masked plain products (gated_dot: tril(x y^T); gated_matmul:
///   tril(p) y or tril(p)^T y), exact as the others (every pair's factor exp(0) was 1).
/// Returns how many ops it rewrote (the kernel records the total as linac.tiles_simplified).
int64_t simplifyTiles(mlir::Operation *kernel, bool broadcasts);

/// Whether two index values are equal whatever the launch: the same value, equal constants, or results of the
/// same pure op on such operands (the tile IR recomputes an offset at each use).
bool sameIndexValue(mlir::Value a, mlir::Value b, int depth = 4);

/// Matrix products whose result flows only into one tile store, through elementwise ops of one use each (a
/// state update S' = D + A B, an output o = X + A B): the product is lowered at the store, and its epilogue
/// evaluates the chain and writes the buffer, so the product's result gets no storage and no pass of its own.
/// Maps each such product to its store. Taken only when nothing between the product and the store touches the
/// store's buffer. A strategy that reuses storage must keep the product's operands alive until the store.
llvm::DenseMap<mlir::Operation *, mlir::Operation *> productEpilogues(mlir::Operation *root);

/// The buffer a memref addresses, for telling accesses apart: a block argument (a kernel or function
/// argument) or a GPU tile slot's placeholder, traced through casts, pointer offsets and descriptor building;
/// null where not found (such an access conflicts with every other).
mlir::Value memoryRoot(mlir::Value memref);

/// The attribute scheduleByLevel puts on each op with a pass of its own: its level, numbered across the runs
/// of `root` in the order it visits them (the GPU's slot allocator reuses a slot freed in a level only in a
/// later one).
constexpr llvm::StringLiteral kTileLevelAttr = "linac.level";

/// Orders the tile ops of each run of ops without regions under `root` by level (docs/gpu.md): a tile op with a
/// pass of its own (not fused, isFusedTile, nor a product in `epilogues`) at the earliest level after every
/// pass it depends on through values and through memory (loads and stores of one buffer, memoryRoot; a
/// `linac.block_private` region is a buffer of its own), a level's passes in program order, ops without a pass
/// just before their first reader. Keeps the program's sequential meaning. Returns how many ops moved.
int64_t scheduleByLevel(mlir::Operation *root, const llvm::DenseMap<mlir::Operation *, mlir::Operation *> &epilogues);

/// The shared memory a fixed-size GPU kernel (linac.static_dims) lays its tiles out for: a block's opt-in
/// maximum on sm_90 (227 KiB). The launcher gives such a kernel the shared memory of that layout.
constexpr int64_t kStaticSharedBytes = 232448;

/// The bytes of shared memory a fixed-size kernel may take: its `linac.shared_budget` (its share where several
/// blocks should share a multiprocessor), else the most a block may have on sm_90.
int64_t staticSharedBytes(mlir::Operation *kernel);

/// The block's dynamic shared memory (`linac_tile_smem`, an i8 array in address space 3) in a GPU module, declared
/// on first use. The GPU lowerings (linac-tile-to-gpu, linac-tile-to-fragments) place their tiles in it.
mlir::LLVM::GlobalOp tileSharedMemory(mlir::gpu::GPUModuleOp module);

/// Replaces every tile op under `root` by loops, using `strategy`.
mlir::LogicalResult lowerTiles(mlir::Operation *root, TileLoopStrategy &strategy);

} // namespace linac

#endif
