#ifndef LINAC_TRANSFORMS_CHUNKBACKWARD_H
#define LINAC_TRANSFORMS_CHUNKBACKWARD_H

// The chunked backward of one (sequence, head), shared by the CPU entry point
// (linac-autodiff) and the GPU kernel (linac-gpu-chunk): they differ only in
// where the state buffers live and how (sequence, head) pairs are scheduled.

#include "lib/Transforms/ChunkBuilder.h"

namespace linac {

/// Which part of a chunk's backward to derive. The chunk's output is a sum of terms (through additions,
/// subtractions, row masks and products with factors that do not depend on the state); those that do not
/// depend on the state the chunk starts from (the intra-chunk pair terms, such as GLA's gated q k^T v) have
/// gradients that depend on neither carried tile. Pairs: the backward of those terms alone, seeded by the
/// output cotangent only (no state, no state cotangent: any chunk in any order); State: the backward of the
/// rest of the output and of the final state. Their input gradients sum to All's (exactly in real arithmetic).
enum class BackwardTerms { All, State, Pairs };

struct SequenceBackwardBuffers {
  /// One state each (memref<?xf32>): the running state, and the state cotangent carried between chunks.
  mlir::Value state, stateGrad;
  /// Holds the state at the start of every `boundaryEvery`-th chunk (chunks 0, R, 2R, ...); chunk c's (c a
  /// multiple of R) is at element boundaryOffset(c).
  mlir::Value boundaries;
  llvm::function_ref<mlir::Value(mlir::Value)> boundaryOffset;
  /// The boundary states are already in `boundaries` (emitBoundaryStates ran before, in another kernel).
  bool boundariesGiven = false;
  /// Where set (an i1), the boundary states are in `boundaries` when it is true at run time (the training
  /// forward saved them).
  mlir::Value boundariesSaved = {};
  /// All, or State where another kernel or loop adds the Pairs gradients.
  BackwardTerms terms = BackwardTerms::All;
  /// R: only every R-th chunk's initial state is kept; the reverse loop rebuilds chunk c's from chunk
  /// c - c mod R's by running the forward's state recurrence over the c mod R chunks between (1: every chunk's
  /// is kept).
  int64_t boundaryEvery = 1;
  /// Where set: every chunk's solve (ChunkBuilder::Chunk::solve, the in-order delta rule's) is in `solves` at
  /// element solveOffset(c), stored by the pass that computes the boundary states (or the training forward),
  /// and the backward loads it instead of solving again, in the reverse loop and in the rebuilds.
  mlir::Value solves = {};
  llvm::function_ref<mlir::Value(mlir::Value)> solveOffset = nullptr;
  /// Where set, the loop runs the head of each chunk's backward (TailCut, from cutTail with these buffers): it
  /// stores chunk c's cut at element cutOffset(c) of `cut` instead of the input gradients, which a tail kernel
  /// computes after it.
  const TailCut *tail = nullptr;
  mlir::Value cut = {};
  llvm::function_ref<mlir::Value(mlir::Value)> cutOffset = nullptr;
};

/// The chunked forward of tokens [start, end) of head h, keeping only the initial state of every
/// `boundaryEvery`-th chunk in `boundaries` (from h0 if the entry point has one, else zero); `state` holds the
/// running state.
void emitBoundaryStates(ChunkBuilder &chunks, const EntryPoint &e, mlir::Value n, mlir::Value h, mlir::Value start,
                        mlir::Value end, const SequenceBackwardBuffers &buffers);

/// Runs `keep` where chunk c's initial state is kept (c a multiple of `every`; always where `every` is 1).
void keepBoundary(LoopBuilder &lb, mlir::Value c, int64_t every, llvm::function_ref<void()> keep);

/// Puts chunk c's initial state (tokens from `start`, head h) in `buffers.state`: the kept one at or before it
/// from `boundaries`, then the forward's state recurrence over the chunks between.
void loadBoundary(ChunkBuilder &chunks, mlir::Value h, mlir::Value start, mlir::Value c,
                  const SequenceBackwardBuffers &buffers);

/// Emits the backward of tokens [start, end) of sequence n, head h: the chunked forward keeping only the
/// boundary states (emitBoundaryStates, unless boundariesGiven or, at run time, boundariesSaved), then the
/// chunks in reverse, each recomputed from its boundary state and differentiated by TileAutodiff. Input
/// gradients are accumulated (the caller zeroes them); dh0 is written.
mlir::LogicalResult emitSequenceBackward(ChunkBuilder &chunks, const EntryPoint &e, mlir::Value n, mlir::Value h,
                                         mlir::Value start, mlir::Value end, const SequenceBackwardBuffers &buffers);

/// The backward program of one chunk (matrix states): chunk c of tokens [start, end) of `head` recomputed
/// from the state at `stateOffset` of `states`, differentiated with the output cotangent and with the
/// cotangent of its final state at `gradOffset` of `grads`. Carried by that cotangent, it hands on the
/// initial state's (the chain sink; null if none) and stores the input gradients.
struct BackwardChunk {
  ChunkProgram program;
  /// The recomputed chunk's initial state (the tile loaded from the state buffer).
  mlir::Value initialState;
  /// Input tiles that have a gradient, and those gradients: the after phase adds them into dinputs.
  llvm::SmallVector<std::pair<TileLoadOp, unsigned>> loads;
  llvm::SmallVector<mlir::Value> gradients;
};
/// With `terms` State or Pairs, the part of it that BackwardTerms says (Pairs reads neither `states` nor
/// `grads`, and hands on nothing); the recomputed tiles no gradient needs are erased. With `solves`, the chunk's
/// solve is loaded from there at `solveOffset` after differentiation (ChunkBuilder::giveSolve): its adjoint
/// reads its result, not how it was computed.
mlir::FailureOr<BackwardChunk> emitBackwardChunk(ChunkBuilder &chunks, const EntryPoint &e, mlir::Value head,
                                                 mlir::Value t0, mlir::Value valid, mlir::Value states,
                                                 mlir::Value stateOffset, mlir::Value grads, mlir::Value gradOffset,
                                                 BackwardTerms terms = BackwardTerms::All, mlir::Value solves = {},
                                                 mlir::Value solveOffset = {});

/// Adds a backward chunk's input gradients into dinputs at the rows its input tiles were loaded from.
void storeInputGradients(ChunkBuilder &chunks, const EntryPoint &e, const BackwardChunk &chunk);

/// The split of the backward chunk program, analysed on a dry-run emission at the builder's point.
mlir::FailureOr<ChunkSplit> splitBackward(ChunkBuilder &chunks, const EntryPoint &e, mlir::Value one,
                                          bool stateSizedInChain = false);

/// The tail cut of the in-order backward's chunk program of head h as emitSequenceBackward emits it with
/// `buffers` (their tail unset), analysed on a dry-run emission at the builder's point; fails with the reason
/// in `why`.
mlir::FailureOr<TailCut> cutTail(ChunkBuilder &chunks, const EntryPoint &e, mlir::Value h,
                                 const SequenceBackwardBuffers &buffers, std::string &why);

/// Phase `phase` of the backward of chunk c (see emitBackwardChunk): the chain stores the initial state's
/// cotangent at element 0 of `grads`; the after phase adds the input gradients into dinputs.
mlir::LogicalResult emitBackwardPhase(ChunkBuilder &chunks, const EntryPoint &e, const ChunkSplit &split,
                                      ChunkPhase phase, mlir::Value head, mlir::Value c, mlir::Value start,
                                      mlir::Value end, mlir::Value states, mlir::Value stateOffset, mlir::Value grads,
                                      mlir::Value gradOffset, mlir::Value frontier, mlir::Value frontierBase);

/// The split backward of tokens [start, end) of sequence n, head h, as loops (the CPU's schedule of the
/// phases): the forward's before and chain loops keep every chunk's initial state in `boundaries` (one
/// state per chunk), then the backward's before loop, its chain in reverse (carrying the cotangent in
/// `stateGrad`, saving each chunk's in `gradBoundaries`) and its after loop. dh0 is written.
mlir::LogicalResult emitSplitSequenceBackward(ChunkBuilder &chunks, const EntryPoint &e, const ChunkSplit &forward,
                                              const ChunkSplit &backward, mlir::Value n, mlir::Value h,
                                              mlir::Value start, mlir::Value end, mlir::Value state,
                                              mlir::Value stateGrad);

} // namespace linac

#endif
