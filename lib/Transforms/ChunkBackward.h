#ifndef LINAC_TRANSFORMS_CHUNKBACKWARD_H
#define LINAC_TRANSFORMS_CHUNKBACKWARD_H

// The chunked backward of one (sequence, head), shared by the CPU entry point
// (linac-autodiff) and the GPU kernel (linac-gpu-chunk): they differ only in
// where the state buffers live and how (sequence, head) pairs are scheduled.

#include "lib/Transforms/ChunkBuilder.h"

namespace linac {

struct SequenceBackwardBuffers {
  /// One state each (memref<?xf32>): the running state, and the state cotangent carried between chunks.
  mlir::Value state, stateGrad;
  /// Holds the state at the start of every chunk; chunk c's is at element boundaryOffset(c).
  mlir::Value boundaries;
  llvm::function_ref<mlir::Value(mlir::Value)> boundaryOffset;
};

/// Emits the backward of tokens [start, end) of sequence n, head h: the chunked forward keeping only the
/// boundary states, then the chunks in reverse, each recomputed from its boundary state and differentiated
/// by TileAutodiff. Input gradients are accumulated (the caller zeroes them); dh0 is written.
mlir::LogicalResult emitSequenceBackward(ChunkBuilder &chunks, const EntryPoint &e, mlir::Value n, mlir::Value h,
                                         mlir::Value start, mlir::Value end, const SequenceBackwardBuffers &buffers);

} // namespace linac

#endif
