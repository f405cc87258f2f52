#include "lib/Transforms/ChunkBackward.h"
#include "lib/Transforms/TileAutodiff.h"

using namespace mlir;
using namespace linac;

LogicalResult linac::emitSequenceBackward(ChunkBuilder &chunks, const EntryPoint &e, Value n, Value h, Value start,
                                          Value end, const SequenceBackwardBuffers &buf) {
  OpBuilder &b = chunks.builder();
  Location loc = chunks.location();
  LoopBuilder lb(b, loc);
  Type tileTy = getTileType(b.getContext());
  Value zero = lb.idx(0), one = lb.idx(1);
  Value count = chunks.chunkCount(start, end);
  Value base = stateOffset(lb, e, n, h);

  lb.ifThenElse(
      e.hasH0, [&] { chunks.copyState(e.h0, base, buf.state, zero); },
      [&] { chunks.storeState(chunks.zeroState(), buf.state); });
  chunks.emitForward(h, start, end, buf.state, /*storeOutputs=*/false,
                     [&](Value c) { chunks.copyState(buf.state, zero, buf.boundaries, buf.boundaryOffset(c)); });

  lb.ifThenElse(
      e.hasDht, [&] { chunks.copyState(e.dht, base, buf.stateGrad, zero); },
      [&] { chunks.storeState(chunks.zeroState(), buf.stateGrad); });
  LogicalResult result = success();
  lb.forLoop(zero, count, [&](Value step) {
    Value c = lb.sub(lb.sub(count, one), step);
    chunks.copyState(buf.boundaries, buf.boundaryOffset(c), buf.state, zero);
    auto [t0, valid] = chunks.chunkTokens(c, start, end);
    Operation *before = &*std::prev(b.getInsertionPoint());
    ChunkBuilder::Chunk chunk = chunks.emit(h, t0, valid, buf.state);
    SmallVector<Operation *> forward;
    for (Operation *op = before->getNextNode(); op && op != &*b.getInsertionPoint(); op = op->getNextNode())
      forward.push_back(op);

    TileShapes shapes(one);
    TileAutodiff ad(b, loc, shapes);
    ad.accumulate(chunk.output, TileLoadOp::create(b, loc, tileTy, e.dout, chunks.outputOffset(t0, h),
                                                   lb.mul(e.H, e.V), chunks.chunkSize(), e.Vb, valid));
    ad.accumulate(chunk.finalState, chunks.loadState(buf.stateGrad, zero));
    SmallVector<Value> sources = {chunk.initialState};
    for (auto [load, input] : chunks.inputLoads())
      sources.push_back(load.getResult());
    if (failed(ad.run(forward, sources))) {
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
    chunks.storeState(carried ? carried : chunks.zeroState(), buf.stateGrad);
  });
  lb.ifThenElse(e.hasDh0, [&] { chunks.copyState(buf.stateGrad, zero, e.dh0, base); });
  return result;
}
