// linac-autodiff: the backward pass of every recurrence, derived, not written.
//
// For each sequence and head the function first runs the chunked forward,
// saving only the state at each chunk boundary. It then walks the chunks in
// reverse: recompute the chunk's tiles from its saved initial state
// (ChunkBuilder, the same derivation as the forward), seed the output tile
// with dOut and the final-state tile with the state cotangent carried from the
// next chunk, and differentiate the tiles (TileAutodiff). The gradient of the
// initial-state tile is the cotangent carried to the previous chunk; the
// gradients of input tiles are accumulated into the input gradients.

#include "dialect/Passes.h"
#include "lib/Transforms/ChunkBackward.h"

namespace linac {
#define GEN_PASS_DEF_LINACAUTODIFF
#include "dialect/Passes.h.inc"
} // namespace linac

using namespace mlir;
using namespace linac;

namespace {

LogicalResult emitChunkedBackward(RecurrenceOp rec, const RecurrenceStructure &st, const ChunkForm &form,
                                  ModuleOp module, int64_t chunkSize, Type io) {
  OpBuilder b(rec);
  Location loc = rec.getLoc();
  LoopBuilder lb(b, loc);
  EntryPoint e = buildEntryPoint(b, module, rec, st, ("linac_" + rec.getSymName() + "_backward_chunk" +
                                                      std::to_string(chunkSize)).str(),
                                 EntryKind::Backward, io);
  auto bufferType = MemRefType::get({ShapedType::kDynamic}, b.getF32Type());
  Value state, stateGrad, C, one;
  {
    OpBuilder::InsertionGuard guard(b);
    b.restoreInsertionPoint(e.hoistPoint);
    state = memref::AllocOp::create(b, loc, bufferType, ValueRange{e.stateSize});
    stateGrad = memref::AllocOp::create(b, loc, bufferType, ValueRange{e.stateSize});
    C = lb.idx(chunkSize);
    one = lb.idx(1);
  }
  // Gradients accumulate over tokens, chunks and (per-head inputs) sequences.
  for (Value d : e.dinputs)
    zeroBuffer(lb, d, memref::DimOp::create(b, loc, d, 0));

  ChunkBuilder chunks(rec, st, form, b, e, C, one);
  LogicalResult result = success();
  if (form.matrix) {
    // The chunk-parallel split of the forward and of the backward, run as loops (ChunkBackward.h).
    ChunkSplit forward = chunks.splitForward(one);
    FailureOr<ChunkSplit> backward = splitBackward(chunks, e, one);
    if (failed(backward))
      return failure();
    e.function->setAttr("linac.frontier", b.getStringAttr(backward->frontierExpression()));
    forEachSequence(lb, e, [&](Value n, Value h, Value start, Value end) {
      if (failed(emitSplitSequenceBackward(chunks, e, forward, *backward, n, h, start, end, state, stateGrad)))
        result = failure();
    });
    finishEntryPoint(lb, {state, stateGrad});
    return result;
  }
  forEachSequence(lb, e, [&](Value n, Value h, Value start, Value end) {
    // The state at the start of every chunk of this (sequence, head): the only forward values kept.
    Value count = chunks.chunkCount(start, end);
    Value boundaries = memref::AllocOp::create(b, loc, bufferType, ValueRange{lb.mul(count, e.stateSize)});
    auto offset = [&](Value c) { return lb.mul(c, e.stateSize); };
    if (failed(emitSequenceBackward(chunks, e, n, h, start, end, {state, stateGrad, boundaries, offset})))
      result = failure();
    memref::DeallocOp::create(b, loc, boundaries);
  });
  finishEntryPoint(lb, {state, stateGrad});
  return result;
}

struct AutodiffPass : linac::impl::LinacAutodiffBase<AutodiffPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<Type> io = parseIoType(module, "linac-autodiff", ioType);
    if (failed(io))
      return signalPassFailure();
    auto recurrences = analyzeChunkable(module, "linac-autodiff", chunkSize);
    if (failed(recurrences))
      return signalPassFailure();
    for (const ChunkableRecurrence &r : *recurrences)
      if (failed(emitChunkedBackward(r.op, r.structure, r.form, module, chunkSize, *io)))
        return signalPassFailure();
  }
};

} // namespace
