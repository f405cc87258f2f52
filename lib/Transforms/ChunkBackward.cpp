#include "lib/Transforms/ChunkBackward.h"
#include "lib/Transforms/TileAutodiff.h"

using namespace mlir;
using namespace linac;

/// Adds a backward chunk's input gradients into dinputs, at the rows its input tiles were loaded from.
static void storeInputGradients(ChunkBuilder &chunks, const EntryPoint &e, const BackwardChunk &chunk) {
  OpBuilder &b = chunks.builder();
  for (auto [load, gradient] : llvm::zip(chunk.loads, chunk.gradients))
    if (gradient) {
      TileLoadOp in = load.first;
      auto store = TileStoreOp::create(b, chunks.location(), gradient, e.dinputs[load.second], in.getOffset(),
                                       in.getStride(), in.getValid());
      store.setAccumulate(true);
    }
}

void linac::emitBoundaryStates(ChunkBuilder &chunks, const EntryPoint &e, Value n, Value h, Value start, Value end,
                               const SequenceBackwardBuffers &buf) {
  LoopBuilder lb(chunks.builder(), chunks.location());
  Value zero = lb.idx(0);
  lb.ifThenElse(
      e.hasH0, [&] { chunks.copyState(e.h0, stateOffset(lb, e, n, h), buf.state, zero); },
      [&] { chunks.storeState(chunks.zeroState(), buf.state); });
  chunks.emitForward(h, start, end, buf.state, /*storeOutputs=*/false,
                     [&](Value c) { chunks.copyState(buf.state, zero, buf.boundaries, buf.boundaryOffset(c)); });
}

LogicalResult linac::emitSequenceBackward(ChunkBuilder &chunks, const EntryPoint &e, Value n, Value h, Value start,
                                          Value end, const SequenceBackwardBuffers &buf) {
  OpBuilder &b = chunks.builder();
  Location loc = chunks.location();
  LoopBuilder lb(b, loc);
  Type tileTy = getTileType(b.getContext());
  Value zero = lb.idx(0), one = lb.idx(1);
  Value count = chunks.chunkCount(start, end);
  Value base = stateOffset(lb, e, n, h);

  auto recompute = [&] { emitBoundaryStates(chunks, e, n, h, start, end, buf); };
  if (!buf.boundariesGiven && !buf.boundariesSaved) {
    recompute();
  } else if (!buf.boundariesGiven) {
    Value yes = arith::ConstantOp::create(b, loc, b.getBoolAttr(true));
    lb.ifThenElse(arith::XOrIOp::create(b, loc, buf.boundariesSaved, yes), recompute);
  }

  lb.ifThenElse(
      e.hasDht, [&] { chunks.copyState(e.dht, base, buf.stateGrad, zero); },
      [&] { chunks.storeState(chunks.zeroState(), buf.stateGrad); });
  LogicalResult result = success();
  lb.forLoop(zero, count, [&](Value step) {
    Value c = lb.sub(lb.sub(count, one), step);
    chunks.copyState(buf.boundaries, buf.boundaryOffset(c), buf.state, zero);
    auto [t0, valid] = chunks.chunkTokens(c, start, end);
    FailureOr<BackwardChunk> chunk = emitBackwardChunk(chunks, e, h, t0, valid, buf.state, zero, buf.stateGrad, zero);
    if (failed(chunk)) {
      result = failure();
      return;
    }
    storeInputGradients(chunks, e, *chunk);
    Value carried = chunk->program.chainSink;
    chunks.storeState(carried ? carried : chunks.zeroState(), buf.stateGrad);
  });
  lb.ifThenElse(e.hasDh0, [&] { chunks.copyState(buf.stateGrad, zero, e.dh0, base); });
  return result;
}

FailureOr<BackwardChunk> linac::emitBackwardChunk(ChunkBuilder &chunks, const EntryPoint &e, Value h, Value t0,
                                                  Value valid, Value states, Value stateOffset, Value grads,
                                                  Value gradOffset) {
  OpBuilder &b = chunks.builder();
  Location loc = chunks.location();
  LoopBuilder lb(b, loc);
  Type tileTy = getTileType(b.getContext());
  BackwardChunk result;
  LogicalResult status = success();
  result.program.ops = captureOps(b, [&] {
    ChunkBuilder::Chunk chunk;
    SmallVector<Operation *> forward = captureOps(b, [&] { chunk = chunks.emit(h, t0, valid, states, stateOffset); });
    TileShapes shapes(lb.idx(1));
    TileAutodiff ad(b, loc, shapes);
    ad.accumulate(chunk.output, TileLoadOp::create(b, loc, tileTy, e.dout, chunks.outputOffset(t0, h),
                                                   lb.mul(e.H, e.V), chunks.chunkSize(), e.Vb, valid));
    Value carried = chunks.loadState(grads, gradOffset);
    ad.accumulate(chunk.finalState, carried);
    SmallVector<Value> sources = {chunk.initialState};
    for (auto [load, input] : chunks.inputLoads())
      sources.push_back(load.getResult());
    if (failed(ad.run(forward, sources))) {
      status = failure();
      return;
    }
    result.program.carried = carried;
    result.program.chainSink = ad.gradient(chunk.initialState);
    for (auto [load, input] : chunks.inputLoads()) {
      result.loads.push_back({load, input});
      result.gradients.push_back(ad.gradient(load.getResult()));
      if (result.gradients.back())
        result.program.sinks.push_back(result.gradients.back());
    }
  });
  if (failed(status))
    return failure();
  return result;
}

FailureOr<ChunkSplit> linac::splitBackward(ChunkBuilder &chunks, const EntryPoint &e, Value one,
                                           bool stateSizedInChain) {
  OpBuilder &b = chunks.builder();
  LoopBuilder lb(b, chunks.location());
  Value zero = lb.idx(0);
  LogicalResult status = success();
  ChunkSplit split = ChunkSplit::analyze(
      b,
      [&] {
        FailureOr<BackwardChunk> chunk =
            emitBackwardChunk(chunks, e, zero, zero, chunks.chunkSize(), e.inputs.front(), zero, e.inputs.front(), zero);
        if (failed(chunk)) {
          status = failure();
          return ChunkProgram();
        }
        return chunk->program;
      },
      e, one, stateSizedInChain);
  if (failed(status))
    return failure();
  return split;
}

LogicalResult linac::emitBackwardPhase(ChunkBuilder &chunks, const EntryPoint &e, const ChunkSplit &split,
                                       ChunkPhase phase, Value h, Value c, Value start, Value end, Value states,
                                       Value stateOffset, Value grads, Value gradOffset, Value frontier,
                                       Value frontierBase) {
  OpBuilder &b = chunks.builder();
  Location loc = chunks.location();
  auto [t0, valid] = chunks.chunkTokens(c, start, end);
  FailureOr<BackwardChunk> chunk = emitBackwardChunk(chunks, e, h, t0, valid, states, stateOffset, grads, gradOffset);
  if (failed(chunk))
    return failure();
  if (phase == ChunkPhase::Chain) {
    Value dS0 = chunk->program.chainSink;
    chunks.storeState(dS0 ? dS0 : chunks.zeroState(), grads);
  }
  if (phase == ChunkPhase::After)
    storeInputGradients(chunks, e, *chunk);
  split.apply(phase, chunk->program.ops, b, e, frontier, frontierBase);
  return success();
}

LogicalResult linac::emitSplitSequenceBackward(ChunkBuilder &chunks, const EntryPoint &e, const ChunkSplit &forward,
                                               const ChunkSplit &backward, Value n, Value h, Value start, Value end,
                                               Value state, Value stateGrad) {
  OpBuilder &b = chunks.builder();
  Location loc = chunks.location();
  LoopBuilder lb(b, loc);
  auto bufferType = MemRefType::get({ShapedType::kDynamic}, b.getF32Type());
  Value zero = lb.idx(0), one = lb.idx(1);
  Value count = chunks.chunkCount(start, end), base = stateOffset(lb, e, n, h);
  Value forwardSize = forward.frontierSize(lb, e), backwardSize = backward.frontierSize(lb, e);
  Value frontier = memref::AllocOp::create(b, loc, bufferType,
                                           ValueRange{lb.mul(count, arith::MaxUIOp::create(b, loc, forwardSize,
                                                                                           backwardSize))});
  Value boundaries = memref::AllocOp::create(b, loc, bufferType, ValueRange{lb.mul(count, e.stateSize)});
  Value gradBoundaries = memref::AllocOp::create(b, loc, bufferType, ValueRange{lb.mul(count, e.stateSize)});
  auto at = [&](Value c, Value size) { return lb.mul(c, size); };

  lb.ifThenElse(
      e.hasH0, [&] { chunks.copyState(e.h0, base, state, zero); },
      [&] { chunks.storeState(chunks.zeroState(), state); });
  chunks.emitSplitChain(forward, h, start, end, state, frontier, forwardSize, boundaries);

  LogicalResult result = success();
  auto phase = [&](ChunkPhase p, Value c, Value grads, Value gradOffset) {
    if (failed(emitBackwardPhase(chunks, e, backward, p, h, c, start, end, boundaries, at(c, e.stateSize), grads,
                                 gradOffset, frontier, at(c, backwardSize))))
      result = failure();
  };
  lb.forLoop(zero, count, [&](Value c) { phase(ChunkPhase::Before, c, stateGrad, zero); });
  lb.ifThenElse(
      e.hasDht, [&] { chunks.copyState(e.dht, base, stateGrad, zero); },
      [&] { chunks.storeState(chunks.zeroState(), stateGrad); });
  lb.forLoop(zero, count, [&](Value step) {
    Value c = lb.sub(lb.sub(count, one), step);
    chunks.copyState(stateGrad, zero, gradBoundaries, at(c, e.stateSize));
    phase(ChunkPhase::Chain, c, stateGrad, zero);
  });
  lb.ifThenElse(e.hasDh0, [&] { chunks.copyState(stateGrad, zero, e.dh0, base); });
  lb.forLoop(zero, count, [&](Value c) { phase(ChunkPhase::After, c, gradBoundaries, at(c, e.stateSize)); });
  for (Value buffer : {frontier, boundaries, gradBoundaries})
    memref::DeallocOp::create(b, loc, buffer);
  return result;
}
