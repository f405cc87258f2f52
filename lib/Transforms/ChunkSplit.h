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
  enum class Dim : uint8_t { Constant, Key, Value };
  struct Extent {
    Dim dim;
    int64_t constant;
  };
  struct FrontierTile {
    unsigned op;
    Extent rows, cols;
  };
  static std::optional<Extent> extentOf(mlir::Value v, const EntryPoint &e);
  mlir::Value full(LoopBuilder &lb, const EntryPoint &e, Extent x) const;

  /// Per op: the phases that keep it (ChunkPhase bits).
  llvm::SmallVector<uint8_t> phases;
  llvm::SmallVector<FrontierTile> frontier;
};

} // namespace linac

#endif
