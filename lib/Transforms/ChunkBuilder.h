#ifndef LINAC_TRANSFORMS_CHUNKBUILDER_H
#define LINAC_TRANSFORMS_CHUNKBUILDER_H

// Emits the tile IR of one chunk of a recurrence in canonical form (see
// docs/chunked-form.md). The forward pass (linac-chunk) stores its outputs;
// the backward pass (linac-autodiff) recomputes chunks with it and
// differentiates the tiles.

#include "lib/Analysis/ChunkForm.h"
#include "lib/Conversion/EntryPoint.h"
#include "lib/Transforms/ChunkSplit.h"

namespace linac {

class ChunkBuilder {
public:
  ChunkBuilder(RecurrenceOp rec, const RecurrenceStructure &st, const ChunkForm &form, mlir::OpBuilder &b,
               const EntryPoint &entry, mlir::Value chunkSize, mlir::Value one)
      : rec(rec), st(st), form(form), b(b), lb(b, rec.getLoc()), loc(rec.getLoc()), e(entry), C(chunkSize),
        one(one) {}

  struct Chunk {
    /// The state the chunk starts from, loaded from the state buffer.
    mlir::Value initialState;
    /// C x V outputs (vector states: C x K), after the body's post-processing.
    mlir::Value output;
    /// The state after the chunk's last token.
    mlir::Value finalState;
    /// The in-order delta rule's pseudo-values W (C x V: its one triangular solve, with S_0 in the right-hand
    /// side; see setStateIndependentSolves), which the training forward can save (storeSolve) so that the
    /// backward loads them instead of solving again (giveSolve); null elsewhere.
    mlir::Value solve;
  };

  /// Emits tokens [t0, t0 + valid) of `head`, from the state at element `stateOffset` (default 0) of
  /// `stateBuffer` (memref<?xf32>). Stores nothing.
  Chunk emit(mlir::Value head, mlir::Value t0, mlir::Value valid, mlir::Value stateBuffer,
             mlir::Value stateOffset = nullptr);

  /// Stores a state tile of emit() to `stateBuffer` at element `offset` (default 0: a one-state buffer).
  void storeState(mlir::Value state, mlir::Value stateBuffer, mlir::Value offset = nullptr);
  /// The state at element `offset` of `buffer` as a tile (K x V, or 1 x K for vector states).
  mlir::Value loadState(mlir::Value buffer, mlir::Value offset);
  /// A state tile of zeros.
  mlir::Value zeroState();
  /// dst[dstOffset ...] = src[srcOffset ...], one state, through a tile (so it runs on every back end).
  void copyState(mlir::Value src, mlir::Value srcOffset, mlir::Value dst, mlir::Value dstOffset) {
    storeState(loadState(src, srcOffset), dst, dstOffset);
  }

  /// Stores the last emitted chunk's `solve` (its valid rows) to `buffer` at element `offset`, rows of V floats
  /// (this slice's columns [v0, v0 + Vb)); loadSolve reads it back, the rows past the chunk's valid ones 0.
  void storeSolve(const Chunk &chunk, mlir::Value buffer, mlir::Value offset);
  mlir::Value loadSolve(mlir::Value buffer, mlir::Value offset);
  /// Replaces the last emitted chunk's solve by its saved values (loadSolve at the solve's place) and erases
  /// the solve; drops it from `ops` if given. What only the solve read is left dead (the right-hand side's
  /// product with S_0 where no gradient needs it), for the canonicalizer.
  void giveSolve(Chunk &chunk, mlir::Value buffer, mlir::Value offset,
                 llvm::SmallVectorImpl<mlir::Operation *> *ops = nullptr);

  /// Chunks of tokens [start, end), and the first token and valid rows of chunk c.
  mlir::Value chunkCount(mlir::Value start, mlir::Value end);
  std::pair<mlir::Value, mlir::Value> chunkTokens(mlir::Value c, mlir::Value start, mlir::Value end);

  /// The chunked forward of one (sequence, head): every chunk in order, each starting from and updating
  /// `stateBuffer`. `beforeChunk(c)` runs ahead of chunk c, `afterChunk(c, chunk)` after its stores; outputs go
  /// to the entry point's `out` unless `storeOutputs` is false.
  void emitForward(mlir::Value head, mlir::Value start, mlir::Value end, mlir::Value stateBuffer, bool storeOutputs,
                   llvm::function_ref<void(mlir::Value)> beforeChunk = nullptr,
                   llvm::function_ref<void(mlir::Value, Chunk &)> afterChunk = nullptr);

  /// The split of the forward chunk program (matrix states; see ChunkSplit.h): carried by the initial state,
  /// handing on the final state, storing the output. Analysed on a dry-run emission at the builder's point.
  /// (stateSizedInChain: ChunkSplit::analyze.)
  ChunkSplit splitForward(mlir::Value one, bool stateSizedInChain = false);
  /// Phase `phase` of the forward chunk program for chunk c of tokens [start, end) of `head`: the chain
  /// reads and writes the state at element 0 of `stateBuffer`, the after phase reads it at `stateOffset`
  /// and stores the outputs; the frontier is at element `frontierBase` of `frontier`.
  void emitPhase(const ChunkSplit &split, ChunkPhase phase, mlir::Value head, mlir::Value c, mlir::Value start,
                 mlir::Value end, mlir::Value stateBuffer, mlir::Value stateOffset, mlir::Value frontier,
                 mlir::Value frontierBase);

  /// The delta rule's solves: state-independent (the WY form W = U - Wk S_0, two solves; the default, which
  /// the chunk-parallel split needs) or one solve with S_0 in the right-hand side (cheaper when the chunks run
  /// in order anyway).
  void setStateIndependentSolves(bool independent) { stateIndependentSolves = independent; }

  /// The split forward's before and chain loops over the chunks of tokens [start, end) of `head`: chunk c's
  /// frontier at element c * frontierSize of `frontier`, the state carried at element 0 of `state`, and each
  /// chunk's initial state saved at c * stateSize of `boundaries` (for the after phase or the backward).
  void emitSplitChain(const ChunkSplit &split, mlir::Value head, mlir::Value start, mlir::Value end,
                      mlir::Value state, mlir::Value frontier, mlir::Value frontierSize, mlir::Value boundaries);

  /// Tiles that emit() loaded from input `i`, with the load op, for routing their gradients.
  llvm::ArrayRef<std::pair<TileLoadOp, unsigned>> inputLoads() const { return loads; }

  std::string transitionClass() const;

  /// Element offset of token `token`, head `h`, column v0 in the output (and its cotangent).
  mlir::Value outputOffset(mlir::Value token, mlir::Value h);

  mlir::OpBuilder &builder() { return b; }
  mlir::Location location() const { return loc; }
  mlir::Value chunkSize() const { return C; }

private:
  template <typename OpT, typename... Args> mlir::Value make(Args &&...args) {
    return OpT::create(b, loc, getTileType(b.getContext()), std::forward<Args>(args)...);
  }
  mlir::Value load(mlir::Value buffer, mlir::Value offset, mlir::Value stride, mlir::Value rows, mlir::Value cols,
                   mlir::Value valid) {
    return make<TileLoadOp>(buffer, offset, stride, rows, cols, valid);
  }
  mlir::Value fill(mlir::Value scalar, mlir::Value rows, mlir::Value cols) { return make<TileFillOp>(scalar, rows, cols); }
  mlir::Value bcast(mlir::Value t, mlir::Value rows, mlir::Value cols) { return make<TileBroadcastOp>(t, rows, cols); }
  mlir::Value maskRows(mlir::Value t) { return make<TileMaskRowsOp>(t, valid); }
  mlir::Value exp(mlir::Value t);
  mlir::Value add(mlir::Value x, mlir::Value y);
  mlir::Value sub(mlir::Value x, mlir::Value y);
  mlir::Value mul(mlir::Value x, mlir::Value y);
  mlir::Value sum(llvm::ArrayRef<mlir::Value> parts);
  mlir::Value matmul(mlir::Value x, mlir::Value y, bool transposeLhs = false);
  mlir::Value gatedDot(mlir::Value x, mlir::Value y, mlir::Value gx, mlir::Value gy, MaskKind mask) {
    return make<TileGatedDotOp>(x, y, gx, gy, mask);
  }
  /// A per-token gate tile (C x 1 or C x K) widened to C x K.
  mlir::Value toKeyWidth(mlir::Value gate, bool perKey) { return perKey ? gate : bcast(gate, C, e.K); }
  mlir::Value cols(mlir::Value v);
  /// Whether body value `v` is a vector of the value dimension (a slice [v0, v0 + Vb) of it in tiles).
  bool isValueWide(mlir::Value v);
  mlir::Value tile(mlir::Value v);
  /// The write's key with its scale and the decays after it folded in (diagonal transitions).
  mlir::Value writeKey();
  void emitMatrixCore(Chunk &chunk);
  void emitVectorCore(Chunk &chunk);

  RecurrenceOp rec;
  const RecurrenceStructure &st;
  const ChunkForm &form;
  mlir::OpBuilder &b;
  LoopBuilder lb;
  mlir::Location loc;
  const EntryPoint &e;
  mlir::Value C, one;
  bool stateIndependentSolves = true;

  // Per-chunk values.
  mlir::Value head, t0, valid, stateBuffer, stateOffset;
  llvm::DenseMap<mlir::Value, mlir::Value> tiles;
  llvm::SmallVector<std::pair<TileLoadOp, unsigned>> loads;
};

} // namespace linac

#endif
