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
#include "lib/Transforms/ChunkBuilder.h"
#include "lib/Transforms/TileAutodiff.h"

namespace linac {
#define GEN_PASS_DEF_LINACAUTODIFF
#include "dialect/Passes.h.inc"
} // namespace linac

using namespace mlir;
using namespace linac;

namespace {

LogicalResult emitChunkedBackward(RecurrenceOp rec, const RecurrenceStructure &st, const ChunkForm &form,
                                  ModuleOp module, int64_t chunkSize) {
  OpBuilder b(rec);
  Location loc = rec.getLoc();
  LoopBuilder lb(b, loc);
  EntryPoint e = buildEntryPoint(b, module, rec, st, ("linac_" + rec.getSymName() + "_backward_chunk" +
                                                      std::to_string(chunkSize)).str(),
                                 EntryKind::Backward);
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
  forEachSequence(lb, e, [&](Value n, Value h, Value start, Value end) {
    Value count = chunks.chunkCount(start, end);
    Value base = stateOffset(lb, e, n, h);
    // The state at the start of every chunk: the only forward values the backward keeps.
    Value boundaries = memref::AllocOp::create(b, loc, bufferType, ValueRange{lb.mul(count, e.stateSize)});
    lb.ifThenElse(
        e.hasH0, [&] { copyBuffer(lb, e.h0, base, state, lb.idx(0), e.stateSize); },
        [&] { zeroBuffer(lb, state, e.stateSize); });
    chunks.emitForward(h, start, end, state, /*storeOutputs=*/false, [&](Value c) {
      copyBuffer(lb, state, lb.idx(0), boundaries, lb.mul(c, e.stateSize), e.stateSize);
    });

    lb.ifThenElse(
        e.hasDht, [&] { copyBuffer(lb, e.dht, base, stateGrad, lb.idx(0), e.stateSize); },
        [&] { zeroBuffer(lb, stateGrad, e.stateSize); });
    lb.forLoop(lb.idx(0), count, [&](Value step) {
      Value c = lb.sub(lb.sub(count, one), step);
      copyBuffer(lb, boundaries, lb.mul(c, e.stateSize), state, lb.idx(0), e.stateSize);
      auto [t0, valid] = chunks.chunkTokens(c, start, end);
      Operation *before = &*std::prev(b.getInsertionPoint());
      ChunkBuilder::Chunk chunk = chunks.emit(h, t0, valid, state);
      SmallVector<Operation *> forward;
      for (Operation *op = before->getNextNode(); op && op != &*b.getInsertionPoint(); op = op->getNextNode())
        forward.push_back(op);

      TileShapes shapes(one);
      TileAutodiff ad(b, loc, shapes);
      Value outRows = tokenOffset(lb, e, t0, h, e.V);
      Value outStride = lb.mul(e.H, e.V);
      ad.accumulate(chunk.output, TileLoadOp::create(b, loc, getTileType(b.getContext()), e.dout, outRows, outStride,
                                                     C, e.V, valid));
      TileShape stateShape = shapes.get(chunk.finalState);
      Value stateStride = form.matrix ? e.V : e.K;
      ad.accumulate(chunk.finalState, TileLoadOp::create(b, loc, getTileType(b.getContext()), stateGrad, lb.idx(0),
                                                         stateStride, stateShape.rows, stateShape.cols,
                                                         stateShape.rows));
      if (failed(ad.run(forward))) {
        result = failure();
        return;
      }
      for (auto [load, input] : chunks.inputLoads())
        if (Value g = ad.gradient(load.getResult())) {
          auto store = TileStoreOp::create(b, loc, g, e.dinputs[input], load.getOffset(), load.getStride(),
                                           load.getValid());
          store.setAccumulate(true);
        }
      Value carried = ad.gradient(chunk.initialState);
      if (!carried) {
        TileShape s = shapes.get(chunk.initialState);
        carried = TileFillOp::create(b, loc, getTileType(b.getContext()), lb.f32(0.0f), s.rows, s.cols);
      }
      chunks.storeState(carried, stateGrad);
    });
    lb.ifThenElse(e.hasDh0, [&] { copyBuffer(lb, stateGrad, lb.idx(0), e.dh0, base, e.stateSize); });
    memref::DeallocOp::create(b, loc, boundaries);
  });
  finishEntryPoint(lb, {state, stateGrad});
  return result;
}

struct AutodiffPass : linac::impl::LinacAutodiffBase<AutodiffPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto recurrences = analyzeChunkable(module, "linac-autodiff", chunkSize);
    if (failed(recurrences))
      return signalPassFailure();
    for (const ChunkableRecurrence &r : *recurrences)
      if (failed(emitChunkedBackward(r.op, r.structure, r.form, module, chunkSize)))
        return signalPassFailure();
  }
};

} // namespace
