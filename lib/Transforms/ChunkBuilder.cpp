#include "lib/Transforms/ChunkBuilder.h"

#include "mlir/Dialect/Math/IR/Math.h"

using namespace mlir;
using namespace linac;

Value ChunkBuilder::exp(Value t) { return math::ExpOp::create(b, loc, t); }
Value ChunkBuilder::add(Value x, Value y) { return arith::AddFOp::create(b, loc, x, y); }
Value ChunkBuilder::sub(Value x, Value y) { return arith::SubFOp::create(b, loc, x, y); }
Value ChunkBuilder::mul(Value x, Value y) { return arith::MulFOp::create(b, loc, x, y); }

Value ChunkBuilder::sum(ArrayRef<Value> parts) {
  Value total = parts.front();
  for (Value p : parts.drop_front())
    total = add(total, p);
  return total;
}

Value ChunkBuilder::matmul(Value x, Value y, bool transposeLhs) {
  auto op = TileMatmulOp::create(b, loc, getTileType(b.getContext()), x, y);
  if (transposeLhs)
    op.setTransposeLhs(true);
  return op;
}

Value ChunkBuilder::cols(Value v) {
  if (!isa<RankedTensorType>(v.getType()))
    return one;
  return st.dims.lookup(v) == Dim::Key ? e.K : e.Vb;
}

bool ChunkBuilder::isValueWide(Value v) {
  return isa<RankedTensorType>(v.getType()) && st.dims.lookup(v) == Dim::Value;
}

/// The tile of a body value over the chunk's tokens: C x cols, one row per token.
Value ChunkBuilder::tile(Value v) {
  if (Value known = tiles.lookup(v))
    return known;
  Value width = cols(v);
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    unsigned i = arg.getArgNumber() - 1;
    Value buffer = e.inputs[i];
    // Value-wide inputs are rows of V in memory, of which this code takes columns [v0, v0 + Vb).
    bool valueWide = isValueWide(v);
    Value rowWidth = valueWide ? e.V : width, column = valueWide ? e.v0 : lb.idx(0);
    Value loaded = rec.isPerHead(i)
                       ? load(buffer, lb.add(lb.mul(head, rowWidth), column), rowWidth, one, width, one)
                       : load(buffer, lb.add(tokenOffset(lb, e, t0, head, rowWidth), column),
                              lb.mul(e.H, rowWidth), C, width, valid);
    loads.push_back({cast<TileLoadOp>(loaded.getDefiningOp()), i});
    return tiles[v] = rec.isPerHead(i) ? bcast(loaded, C, width) : loaded;
  }
  Operation *op = v.getDefiningOp();
  if (auto constant = dyn_cast<arith::ConstantOp>(op))
    return tiles[v] = fill(arith::ConstantOp::create(b, loc, constant.getValue()), C, one);
  if (isa<HeadIndexOp>(op)) {
    Value i64 = arith::IndexCastOp::create(b, loc, b.getI64Type(), head);
    return tiles[v] = fill(arith::SIToFPOp::create(b, loc, b.getF32Type(), i64), C, one);
  }
  if (auto splat = dyn_cast<SplatOp>(op))
    return tiles[v] = bcast(tile(splat.getScalar()), C, width);
  assert(!isa<ReadOp>(op) && "the read's tile is set by the core");
  SmallVector<Value> operands;
  for (Value operand : op->getOperands())
    operands.push_back(tile(operand));
  OperationState state(op->getLoc(), op->getName(), operands, TypeRange{getTileType(b.getContext())},
                       op->getAttrs());
  return tiles[v] = b.create(state)->getResult(0);
}

ChunkBuilder::Chunk ChunkBuilder::emit(Value h, Value start, Value validRows, Value buffer, Value bufferOffset) {
  head = h;
  t0 = start;
  valid = validRows;
  stateBuffer = buffer;
  stateOffset = bufferOffset ? bufferOffset : lb.idx(0);
  tiles.clear();
  loads.clear();
  Chunk chunk;
  if (form.matrix)
    emitMatrixCore(chunk);
  else
    emitVectorCore(chunk);
  chunk.output = tile(rec.getYield().getOutput());
  return chunk;
}

void ChunkBuilder::storeState(Value state, Value buffer, Value offset) {
  if (!offset)
    offset = lb.idx(0);
  if (form.matrix)
    TileStoreOp::create(b, loc, state, buffer, lb.add(offset, e.v0), e.V, e.K);
  else
    TileStoreOp::create(b, loc, state, buffer, offset, e.K, one);
}

Value ChunkBuilder::loadState(Value buffer, Value offset) {
  if (form.matrix)
    return load(buffer, lb.add(offset, e.v0), e.V, e.K, e.Vb, e.K);
  return load(buffer, offset, e.K, one, e.K, one);
}

Value ChunkBuilder::zeroState() {
  return form.matrix ? fill(lb.f32(0.0f), e.K, e.Vb) : fill(lb.f32(0.0f), one, e.K);
}

Value ChunkBuilder::outputOffset(Value token, Value h) {
  return lb.add(tokenOffset(lb, e, token, h, e.V), e.v0);
}

Value ChunkBuilder::chunkCount(Value start, Value end) { return lb.ceilDiv(lb.sub(end, start), C); }

std::pair<Value, Value> ChunkBuilder::chunkTokens(Value c, Value start, Value end) {
  Value first = lb.add(start, lb.mul(c, C));
  return {first, lb.minIndex(C, lb.sub(end, first))};
}

void ChunkBuilder::storeSolve(const Chunk &chunk, Value buffer, Value offset) {
  assert(chunk.solve && "storeSolve: the chunk has no solve (only the in-order delta rule does)");
  TileStoreOp::create(b, loc, chunk.solve, buffer, lb.add(offset, e.v0), e.V, valid);
}

Value ChunkBuilder::loadSolve(Value buffer, Value offset) {
  return load(buffer, lb.add(offset, e.v0), e.V, C, e.Vb, valid);
}

void ChunkBuilder::giveSolve(Chunk &chunk, Value buffer, Value offset, SmallVectorImpl<Operation *> *ops) {
  Operation *solve = chunk.solve.getDefiningOp();
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(solve);
  Value given = loadSolve(buffer, offset);
  chunk.solve.replaceAllUsesWith(given);
  if (ops) {
    // The load takes the solve's place in the program's order.
    auto at = llvm::find(*ops, solve);
    if (at != ops->end())
      *at = given.getDefiningOp();
  }
  solve->erase();
  chunk.solve = given;
}

void ChunkBuilder::emitForward(Value h, Value start, Value end, Value buffer, bool storeOutputs,
                               function_ref<void(Value)> beforeChunk, function_ref<void(Value, Chunk &)> afterChunk) {
  lb.forLoop(lb.idx(0), chunkCount(start, end), [&](Value c) {
    if (beforeChunk)
      beforeChunk(c);
    auto [first, rows] = chunkTokens(c, start, end);
    Chunk chunk = emit(h, first, rows, buffer);
    storeState(chunk.finalState, buffer);
    if (storeOutputs)
      TileStoreOp::create(b, loc, chunk.output, e.out, outputOffset(first, h), lb.mul(e.H, e.V), rows);
    if (afterChunk)
      afterChunk(c, chunk);
  });
}

ChunkSplit ChunkBuilder::splitForward(Value unit, bool stateSizedInChain) {
  return ChunkSplit::analyze(
      b,
      [&] {
        ChunkProgram program;
        Chunk chunk;
        Value zero = lb.idx(0);
        program.ops = captureOps(b, [&] { chunk = emit(zero, zero, C, e.inputs.front(), zero); });
        program.carried = chunk.initialState;
        program.chainSink = chunk.finalState;
        program.sinks = {chunk.output};
        return program;
      },
      e, unit, stateSizedInChain);
}

void ChunkBuilder::emitPhase(const ChunkSplit &split, ChunkPhase phase, Value h, Value c, Value start, Value end,
                             Value buffer, Value offset, Value frontier, Value frontierBase) {
  auto [first, rows] = chunkTokens(c, start, end);
  // Every emission gets its operands from outside, so that it has the ops of the analysed one.
  Value at = offset ? offset : lb.idx(0);
  Chunk chunk;
  SmallVector<Operation *> ops = captureOps(b, [&] { chunk = emit(h, first, rows, buffer, at); });
  if (phase == ChunkPhase::Chain)
    storeState(chunk.finalState, buffer);
  if (phase == ChunkPhase::After)
    TileStoreOp::create(b, loc, chunk.output, e.out, outputOffset(first, h), lb.mul(e.H, e.V), rows);
  split.apply(phase, ops, b, e, frontier, frontierBase);
}

void ChunkBuilder::emitSplitChain(const ChunkSplit &split, Value h, Value start, Value end, Value state,
                                  Value frontier, Value frontierSize, Value boundaries) {
  Value count = chunkCount(start, end), zero = lb.idx(0);
  lb.forLoop(zero, count, [&](Value c) {
    emitPhase(split, ChunkPhase::Before, h, c, start, end, state, nullptr, frontier, lb.mul(c, frontierSize));
  });
  lb.forLoop(zero, count, [&](Value c) {
    copyState(state, zero, boundaries, lb.mul(c, e.stateSize));
    emitPhase(split, ChunkPhase::Chain, h, c, start, end, state, nullptr, frontier, lb.mul(c, frontierSize));
  });
}

Value ChunkBuilder::writeKey() {
  Value key = tile(form.key);
  if (form.writeScale)
    key = mul(key, bcast(tile(form.writeScale), C, e.K));
  if (!form.postWriteGates.empty()) {
    SmallVector<Value> post;
    for (Value g : form.postWriteGates)
      post.push_back(toKeyWidth(tile(g), isa<RankedTensorType>(g.getType())));
    key = mul(key, exp(sum(post)));
  }
  return maskRows(key);
}

void ChunkBuilder::emitMatrixCore(Chunk &chunk) {
  ReadOp read = form.read;
  bool perKey = form.gateShape == GateShape::PerKey;
  Value gateCols = perKey ? e.K : one;
  // g_i: every decay of token i, summed in log space; zero on padding rows.
  SmallVector<Value> gateTiles;
  for (Value g : form.gates)
    gateTiles.push_back(perKey ? toKeyWidth(tile(g), isa<RankedTensorType>(g.getType())) : tile(g));
  Value G = gateTiles.empty() ? fill(lb.f32(0.0f), C, one) : maskRows(sum(gateTiles));
  // b_i = sum_{j<=i} g_j.
  Value B = make<TileCumsumOp>(G);
  Value BK = toKeyWidth(B, perKey);
  Value S0 = loadState(stateBuffer, stateOffset);
  chunk.initialState = S0;

  // Key and pseudo-values w of S_i = Diag(exp(b_i)) S_0 + sum_{j<=i} Diag(exp(b_i - b_j)) k_j w_j^T.
  Value key, W;
  if (form.delta) {
    key = maskRows(tile(form.key));
    Value beta = maskRows(tile(form.beta));
    Value V = tile(form.value);
    // (I + diag(beta) A) W = diag(beta) (V - (exp(b) k) S_0),  A_ij = sum_d k_id k_jd exp(b_id - b_jd), j < i.
    // By linearity W = U - Wk S_0 with U and Wk solved from diag(beta) V and diag(beta) exp(b) k: both solves
    // leave the chain from S_0 to the next chunk's state, which is then two products (docs/gpu.md). Code that
    // runs the chunks in order (no split) solves once, with S_0 in the right-hand side: one solve, not two.
    Value A = gatedDot(key, key, B, B, MaskKind::StrictLower);
    Value L = mul(bcast(beta, C, C), A);
    Value decayedKeys = mul(key, exp(BK));
    if (stateIndependentSolves) {
      Value U = make<TileTriSolveOp>(L, mul(bcast(beta, C, e.Vb), V));
      Value Wk = make<TileTriSolveOp>(L, mul(bcast(beta, C, e.K), decayedKeys));
      W = sub(U, matmul(Wk, S0));
    } else {
      W = make<TileTriSolveOp>(L, mul(bcast(beta, C, e.Vb), sub(V, matmul(decayedKeys, S0))));
      chunk.solve = W;
    }
  } else {
    key = writeKey();
    W = tile(form.value);
  }

  // o_i = scale * ((exp(b) q)_i S_0 + sum_j P_ij w_j): S_t uses b_i and j <= i, S_{t-1} uses b_{i-1} and j < i.
  Value q = tile(read.getQuery());
  bool before = form.point == ReadPoint::BeforeUpdate;
  // b_{i-1} as its own prefix sum (not b_i - g_i), so each exponent is a sum of the gates it spans.
  Value Bq = B;
  if (before) {
    auto exclusive = TileCumsumOp::create(b, loc, getTileType(b.getContext()), G);
    exclusive.setExclusive(true);
    Bq = exclusive;
  }
  Value P = gatedDot(q, key, Bq, B, before ? MaskKind::StrictLower : MaskKind::Lower);
  Value O = add(matmul(mul(q, exp(toKeyWidth(Bq, perKey))), S0), matmul(P, W));
  if (!read.getBonus().empty()) {
    // (q_i . (u * k_i)) v_i
    Value u = tile(read.getBonus()[0]), kb = tile(read.getBonus()[1]), vb = tile(read.getBonus()[2]);
    Value coefficient = make<TileRowSumOp>(mul(mul(q, u), kb));
    O = add(O, mul(bcast(coefficient, C, e.Vb), vb));
  }
  Value scale = read.getScaleAttr() ? lb.f32(static_cast<float>(read.getScaleAttr().getValueAsDouble())) : e.scale;
  tiles[read.getResult()] = mul(O, fill(scale, C, e.Vb));

  // S_C = Diag(exp(b_C)) S_0 + sum_j (exp(b_C - b_j) k_j) w_j^T; padding rows have g = 0, so b_C is the last row.
  Value bLast = make<TileRowOp>(B, lb.sub(C, one));
  // b_C - b_j = sum_{s>j} g_s, summed directly.
  auto rest = TileCumsumOp::create(b, loc, getTileType(b.getContext()), G);
  rest.setReverse(true);
  rest.setExclusive(true);
  Value toEnd = exp(rest);
  Value carried = mul(bcast(make<TileTransposeOp>(exp(bLast)), e.K, e.Vb), S0);
  TileMatmulOp update = TileMatmulOp::create(b, loc, getTileType(b.getContext()),
                                             mul(key, toKeyWidth(toEnd, perKey)), W);
  update.setTransposeLhs(true);
  chunk.finalState = add(carried, update);
}

void ChunkBuilder::emitVectorCore(Chunk &chunk) {
  // h_i = exp(b_i) h_0 + sum_{j<=i} exp(b_i - b_j) x_j, per channel.
  SmallVector<Value> gateTiles;
  for (Value g : form.gates)
    gateTiles.push_back(toKeyWidth(tile(g), isa<RankedTensorType>(g.getType())));
  Value G = gateTiles.empty() ? fill(lb.f32(0.0f), C, e.K) : maskRows(sum(gateTiles));
  Value B = make<TileCumsumOp>(G);
  Value x = writeKey();
  Value h0 = loadState(stateBuffer, stateOffset);
  chunk.initialState = h0;
  Value Hs = add(mul(bcast(h0, C, e.K), exp(B)), make<TileGatedScanOp>(x, B));
  tiles[ReadOp(form.read).getResult()] = Hs;
  chunk.finalState = make<TileRowOp>(Hs, lb.sub(C, one));
}

std::string ChunkBuilder::transitionClass() const { return linac::transitionClass(form, st); }
