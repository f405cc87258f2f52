#ifndef LINAC_TRANSFORMS_CHUNKSPLIT_H
#define LINAC_TRANSFORMS_CHUNKSPLIT_H

// The chunk-parallel split (docs/gpu.md): the tile program of one chunk, cut by
// its dependence on the one tile that links consecutive chunks (the state a
// chunk starts from, in the forward; the cotangent of the state it ends in, in
// the backward). Three phases:
//   Before: what the chain reads and that does not depend on the carried tile.
//           Runs for every chunk in parallel and stores those tiles (the
//           frontier) to memory.
//   Chain:  the path from the carried tile to the next chunk's carried tile,
//           chunk after chunk, loading the frontier.
//   After:  the rest of what the caller stores (outputs, input gradients), for
//           every chunk in parallel, from its chunk's carried tile (which the
//           chain saved), loading frontier tiles and recomputing the rest.
// Loads, fills, broadcasts, transposes and row masks are never stored: a phase
// that reads one recomputes it. The split is computed on one emission of the
// program and applies to any later emission of it (the same ops in the same
// order), which is how each phase's loop or kernel gets its own copy.

#include "lib/Conversion/EntryPoint.h"

namespace linac {

enum class ChunkPhase : uint8_t { Before = 1, Chain = 2, After = 4 };

/// A tile extent a phase can size: a constant, the key dim K or the value dim V.
struct TileExtent {
  enum class Dim : uint8_t { Constant, Key, Value };
  Dim dim;
  int64_t constant;
  /// The extent `v` names (K for e.K, V for e.V or the slice width e.Vb), if it is one of those.
  static std::optional<TileExtent> of(mlir::Value v, const EntryPoint &e);
  /// The extent at full value width.
  mlir::Value full(LoopBuilder &lb, const EntryPoint &e) const;
  /// The extent as a C++ expression of K and V, for the launcher.
  std::string expression() const;
  bool isHeadDim() const { return dim != Dim::Constant; }
};

/// A tile one phase stores for each chunk and another loads: the op (by index in the chunk's program) and its
/// extents at full value width.
struct StoredTile {
  unsigned op;
  TileExtent rows, cols;
};

/// Floats `tiles` take a chunk (full value width), as an index value and as a C++ expression of K and V.
mlir::Value storedSize(llvm::ArrayRef<StoredTile> tiles, LoopBuilder &lb, const EntryPoint &e);
std::string storedExpression(llvm::ArrayRef<StoredTile> tiles);

/// Emits ops with `emit` at the builder's insertion point and returns them in program order.
llvm::SmallVector<mlir::Operation *> captureOps(mlir::OpBuilder &b, llvm::function_ref<void()> emit);

/// One emission of a chunk's program and the tiles the split is cut by.
struct ChunkProgram {
  llvm::SmallVector<mlir::Operation *> ops;
  mlir::Value carried, chainSink;
  llvm::SmallVector<mlir::Value> sinks;
};

class ChunkSplit {
public:
  /// Splits `ops` (one chunk's program in order): `carried` links it to the chunk before (forward) or after
  /// (backward), `chainSink` is what it hands on (null if nothing), `sinks` the tiles the caller stores.
  /// `e` tells key-wide from value-wide extents; the program must be emitted at full value width. `one` is
  /// the index 1 the program's row ops use. With `stateSizedInChain`, a tile whose both extents are head
  /// dims (a K x V or K x K tile, the size of the state: for example a chunk's K^T V update) is computed by
  /// the chain from its operands rather than stored in the frontier: the chain then reads the chunk-sized
  /// operands (C x K, C x V) instead of a state-sized tile a chunk, which is what a GPU's memory traffic wants
  /// when C < K (the GPU's split; the CPU keeps the tested default).
  static ChunkSplit analyze(llvm::ArrayRef<mlir::Operation *> ops, mlir::Value carried, mlir::Value chainSink,
                            llvm::ArrayRef<mlir::Value> sinks, const EntryPoint &e, mlir::Value one,
                            bool stateSizedInChain = false);

  /// Analyses a dry-run emission of `emit` at the builder's point, then erases it.
  static ChunkSplit analyze(mlir::OpBuilder &b, llvm::function_ref<ChunkProgram()> emit, const EntryPoint &e,
                            mlir::Value one, bool stateSizedInChain = false);

  /// Floats the before phase stores per chunk (full value width), as an index value.
  mlir::Value frontierSize(LoopBuilder &lb, const EntryPoint &e) const;
  /// The same as a C++ expression of K and V, for the launcher.
  std::string frontierExpression() const;
  /// Tiles in the frontier.
  size_t frontierTiles() const { return frontier.size(); }

  /// Turns `ops`, a fresh emission of the analysed program just emitted at the builder's insertion point,
  /// into `phase`: the before phase stores its frontier at element `base` of `buffer`; the others load
  /// the frontier tiles they read from there (value-wide ones at columns [e.v0, e.v0 + e.Vb)). Ops the
  /// phase does not need are erased; ops created after `ops` (the caller's stores) are kept.
  void apply(ChunkPhase phase, llvm::ArrayRef<mlir::Operation *> ops, mlir::OpBuilder &b, const EntryPoint &e,
             mlir::Value buffer, mlir::Value base) const;

private:
  /// Per op: the phases that keep it (ChunkPhase bits).
  llvm::SmallVector<uint8_t> phases;
  llvm::SmallVector<StoredTile> frontier;
};

/// The in-order backward's tail (docs/gpu.md, "The tail kernel"): the backward program of one chunk, which
/// reads two tiles that link it to the other chunks (the state it starts from and the cotangent of the state it
/// ends in: the carried tiles), cut in two parts.
///   Head: what the in-order loop over the chunks must do: the path to the next chunk's cotangent (the chain
///         sink) and every op that reads a state-sized tile (both extents head dims) computed from a carried
///         tile, with what those ops read. It stores the cut: the chunk-sized tiles it computes from a carried
///         tile that the tail reads.
///   Tail: the rest of the input gradients (the sinks), for every chunk in any order: it loads the cut and
///         recomputes the tiles that depend on no carried tile.
/// So the tail holds no state-sized tile computed from the carried ones: the state work stays in the loop, the
/// chunk-sized rest (solve adjoints, pair products, reductions) leaves it. As with ChunkSplit, the cut is
/// computed on one emission and applies to later emissions of the same program.
enum class TailPart : uint8_t { Head = 1, Tail = 2 };

class TailCut {
public:
  /// Cuts `ops`; fails with the reason where a cut tile is state-sized or of an extent the launcher cannot size,
  /// or where the tail would compute nothing.
  static llvm::FailureOr<TailCut> analyze(llvm::ArrayRef<mlir::Operation *> ops, llvm::ArrayRef<mlir::Value> carried,
                                          mlir::Value chainSink, llvm::ArrayRef<mlir::Value> sinks,
                                          const EntryPoint &e, mlir::Value one, std::string &why);

  /// Floats the head stores per chunk (full value width), as an index value and as a C++ expression of K and V.
  mlir::Value cutSize(LoopBuilder &lb, const EntryPoint &e) const { return storedSize(cut, lb, e); }
  std::string cutExpression() const { return storedExpression(cut); }

  /// Turns `ops`, a fresh emission of the analysed program just emitted at the builder's insertion point, into
  /// `part`: the head stores the cut at element `base` of `buffer`, each tile right after the op computing it
  /// (value-wide tiles at its columns [e.v0, e.v0 + e.Vb)); the tail loads it before the program. `base` must
  /// precede the program. Ops the part does not need are
  /// erased; ops created after `ops` are kept.
  void apply(TailPart part, llvm::ArrayRef<mlir::Operation *> ops, mlir::OpBuilder &b, const EntryPoint &e,
             mlir::Value buffer, mlir::Value base) const;

private:
  /// Per op: the parts that keep it (TailPart bits), and kTileOp for tile ops.
  static constexpr uint8_t kTileOp = 4;
  llvm::SmallVector<uint8_t> parts;
  llvm::SmallVector<StoredTile> cut;
};

} // namespace linac

#endif
