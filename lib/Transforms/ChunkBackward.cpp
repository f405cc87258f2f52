#include "lib/Transforms/ChunkBackward.h"
#include "lib/Transforms/TileAutodiff.h"

using namespace mlir;
using namespace linac;

void linac::storeInputGradients(ChunkBuilder &chunks, const EntryPoint &e, const BackwardChunk &chunk) {
  OpBuilder &b = chunks.builder();
  for (auto [load, gradient] : llvm::zip(chunk.loads, chunk.gradients)) {
    TileLoadOp in = load.first;
    auto store = TileStoreOp::create(b, chunks.location(), gradient, e.dinputs[load.second], in.getOffset(),
                                     in.getStride(), in.getValid());
    store.setAccumulate(true);
  }
}

namespace {

/// The terms of a chunk's output (BackwardTerms): the output read as a sum through additions, subtractions,
/// row masks and products with a factor independent of the initial state; each term depends on the initial
/// state or not. part() rebuilds the sum of one kind, reusing the program's ops where a subexpression is
/// wholly of that kind.
class OutputTerms {
public:
  OutputTerms(OpBuilder &b, Location loc, ArrayRef<Operation *> program, Value initialState) : b(b), loc(loc) {
    dependent.insert(initialState);
    for (Operation *op : program)
      if (llvm::any_of(op->getOperands(), [&](Value v) { return dependent.contains(v); }))
        dependent.insert(op->getResults().begin(), op->getResults().end());
  }

  /// The sum of the terms of `v` that depend on the initial state (`state`) or do not; null if none.
  Value part(Value v, bool state) {
    if (!dependent.contains(v))
      return state ? Value() : v;
    Operation *op = v.getDefiningOp();
    if (isa_and_nonnull<arith::AddFOp, arith::SubFOp>(op)) {
      Value x = part(op->getOperand(0), state), y = part(op->getOperand(1), state);
      if (x == op->getOperand(0) && y == op->getOperand(1))
        return v;
      if (x && y)
        return isa<arith::AddFOp>(op) ? arith::AddFOp::create(b, loc, x, y).getResult()
                                      : arith::SubFOp::create(b, loc, x, y).getResult();
      if (y && isa<arith::SubFOp>(op))
        return arith::NegFOp::create(b, loc, y);
      return x ? x : y;
    }
    if (auto mul = dyn_cast_or_null<arith::MulFOp>(op)) {
      for (unsigned i = 0; i < 2; ++i) {
        Value x = mul->getOperand(i), factor = mul->getOperand(1 - i);
        if (dependent.contains(factor))
          continue;
        Value term = part(x, state);
        if (term == x || !term)
          return term == x ? v : Value();
        return i == 0 ? arith::MulFOp::create(b, loc, term, factor).getResult()
                      : arith::MulFOp::create(b, loc, factor, term).getResult();
      }
    }
    if (auto mask = dyn_cast_or_null<TileMaskRowsOp>(op)) {
      Value term = part(mask.getSource(), state);
      if (term == mask.getSource() || !term)
        return term == mask.getSource() ? v : Value();
      return TileMaskRowsOp::create(b, loc, getTileType(b.getContext()), term, mask.getValid());
    }
    return state ? v : Value();
  }

private:
  OpBuilder &b;
  Location loc;
  DenseSet<Value> dependent;
};

} // namespace

void linac::emitBoundaryStates(ChunkBuilder &chunks, const EntryPoint &e, Value n, Value h, Value start, Value end,
                               const SequenceBackwardBuffers &buf) {
  LoopBuilder lb(chunks.builder(), chunks.location());
  Value zero = lb.idx(0);
  lb.ifThenElse(
      e.hasH0, [&] { chunks.copyState(e.h0, stateOffset(lb, e, n, h), buf.state, zero); },
      [&] { chunks.storeState(chunks.zeroState(), buf.state); });
  chunks.emitForward(
      h, start, end, buf.state, /*storeOutputs=*/false,
      [&](Value c) {
        keepBoundary(lb, c, buf.boundaryEvery,
                     [&] { chunks.copyState(buf.state, zero, buf.boundaries, buf.boundaryOffset(c)); });
      },
      [&](Value c, ChunkBuilder::Chunk &chunk) {
        if (buf.solves && chunk.solve)
          chunks.storeSolve(chunk, buf.solves, buf.solveOffset(c));
      });
}

void linac::keepBoundary(LoopBuilder &lb, Value c, int64_t every, function_ref<void()> keep) {
  if (every == 1)
    return keep();
  Value kept = arith::CmpIOp::create(lb.builder(), lb.location(), arith::CmpIPredicate::eq,
                                     arith::RemUIOp::create(lb.builder(), lb.location(), c, lb.idx(every)),
                                     lb.idx(0));
  lb.ifThenElse(kept, keep);
}

void linac::loadBoundary(ChunkBuilder &chunks, Value h, Value start, Value c,
                         const SequenceBackwardBuffers &buf) {
  LoopBuilder lb(chunks.builder(), chunks.location());
  Value zero = lb.idx(0);
  if (buf.boundaryEvery == 1)
    return chunks.copyState(buf.boundaries, buf.boundaryOffset(c), buf.state, zero);
  // The kept chunk at or before c, then the forward's chunks from there up to c (their outputs unused).
  OpBuilder &b = chunks.builder();
  Value kept = lb.sub(c, arith::RemUIOp::create(b, chunks.location(), c, lb.idx(buf.boundaryEvery)));
  chunks.copyState(buf.boundaries, buf.boundaryOffset(kept), buf.state, zero);
  Value C = chunks.chunkSize();
  Value from = lb.add(start, lb.mul(kept, C));
  // With saved solves, each chunk between loads its own (the offset ahead of the chunk, where the load goes).
  Value solveAt;
  chunks.emitForward(
      h, from, lb.add(start, lb.mul(c, C)), buf.state, /*storeOutputs=*/false,
      [&](Value j) {
        if (buf.solves)
          solveAt = buf.solveOffset(lb.add(kept, j));
      },
      [&](Value, ChunkBuilder::Chunk &chunk) {
        if (buf.solves && chunk.solve)
          chunks.giveSolve(chunk, buf.solves, solveAt);
      });
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
    loadBoundary(chunks, h, start, c, buf);
    auto [t0, valid] = chunks.chunkTokens(c, start, end);
    // The head's cut stores go inside the program: their offset ahead of it.
    Value cutAt = buf.tail ? buf.cutOffset(c) : Value();
    FailureOr<BackwardChunk> chunk =
        emitBackwardChunk(chunks, e, h, t0, valid, buf.state, zero, buf.stateGrad, zero, buf.terms, buf.solves,
                          buf.solves ? buf.solveOffset(c) : Value());
    if (failed(chunk)) {
      result = failure();
      return;
    }
    if (buf.tail)
      buf.tail->apply(TailPart::Head, chunk->program.ops, b, e, buf.cut, cutAt);
    else
      storeInputGradients(chunks, e, *chunk);
    Value carried = chunk->program.chainSink;
    chunks.storeState(carried ? carried : chunks.zeroState(), buf.stateGrad);
  });
  lb.ifThenElse(e.hasDh0, [&] { chunks.copyState(buf.stateGrad, zero, e.dh0, base); });
  return result;
}

FailureOr<BackwardChunk> linac::emitBackwardChunk(ChunkBuilder &chunks, const EntryPoint &e, Value h, Value t0,
                                                  Value valid, Value states, Value stateOffset, Value grads,
                                                  Value gradOffset, BackwardTerms terms, Value solves,
                                                  Value solveOffset) {
  OpBuilder &b = chunks.builder();
  Location loc = chunks.location();
  LoopBuilder lb(b, loc);
  Type tileTy = getTileType(b.getContext());
  BackwardChunk result;
  LogicalResult status = success();
  result.program.ops = captureOps(b, [&] {
    ChunkBuilder::Chunk chunk;
    SmallVector<Operation *> forward = captureOps(b, [&] { chunk = chunks.emit(h, t0, valid, states, stateOffset); });
    Value output = chunk.output;
    if (terms != BackwardTerms::All) {
      SmallVector<Operation *> sums = captureOps(b, [&] {
        output = OutputTerms(b, loc, forward, chunk.initialState).part(chunk.output, terms == BackwardTerms::State);
      });
      forward.append(sums);
    }
    TileShapes shapes(lb.idx(1));
    TileAutodiff ad(b, loc, shapes);
    if (output)
      ad.accumulate(output, TileLoadOp::create(b, loc, tileTy, e.dout, chunks.outputOffset(t0, h),
                                               lb.mul(e.H, e.V), chunks.chunkSize(), e.Vb, valid));
    Value carried;
    if (terms != BackwardTerms::Pairs) {
      carried = chunks.loadState(grads, gradOffset);
      ad.accumulate(chunk.finalState, carried);
    }
    SmallVector<Value> sources = {chunk.initialState};
    for (auto [load, input] : chunks.inputLoads())
      sources.push_back(load.getResult());
    if (failed(ad.run(forward, sources))) {
      status = failure();
      return;
    }
    result.program.carried = carried;
    result.initialState = chunk.initialState;
    result.program.chainSink = carried ? ad.gradient(chunk.initialState) : Value();
    for (auto [load, input] : chunks.inputLoads()) {
      Value gradient = ad.gradient(load.getResult());
      if (!gradient)
        continue;
      result.loads.push_back({load, input});
      result.gradients.push_back(gradient);
      result.program.sinks.push_back(gradient);
    }
    if (solves && chunk.solve)
      chunks.giveSolve(chunk, solves, solveOffset, &forward);
    if (terms == BackwardTerms::All)
      return;
    // The recomputed tiles that nothing reads any more (the other part's terms; for Pairs, the state's load
    // and everything computed from it); loads of inputs whose gradient is stored stay (their offsets are read).
    for (Operation *op : llvm::reverse(forward))
      if (op->getNumResults() == 1 && isTileType(op->getResult(0).getType()) && op->use_empty() &&
          !llvm::is_contained(result.program.sinks, op->getResult(0)) &&
          !llvm::any_of(result.loads, [&](auto &l) { return l.first.getOperation() == op; }))
        op->erase();
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

FailureOr<TailCut> linac::cutTail(ChunkBuilder &chunks, const EntryPoint &e, Value h,
                                  const SequenceBackwardBuffers &buf, std::string &why) {
  OpBuilder &b = chunks.builder();
  LoopBuilder lb(b, chunks.location());
  Value zero = lb.idx(0);
  FailureOr<BackwardChunk> chunk = failure();
  SmallVector<Operation *> emitted = captureOps(b, [&] {
    chunk = emitBackwardChunk(chunks, e, h, zero, chunks.chunkSize(), buf.state, zero, buf.stateGrad, zero, buf.terms,
                              buf.solves, buf.solves ? zero : Value());
  });
  FailureOr<TailCut> cut = failure();
  if (failed(chunk))
    why = "the backward could not be derived";
  else if (!chunk->program.carried || !chunk->initialState)
    why = "the chunk carries no state cotangent";
  else
    cut = TailCut::analyze(chunk->program.ops, {chunk->initialState, chunk->program.carried},
                           chunk->program.chainSink, chunk->program.sinks, e, lb.idx(1), why);
  for (Operation *op : llvm::reverse(emitted)) {
    op->dropAllUses();
    op->erase();
  }
  return cut;
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
