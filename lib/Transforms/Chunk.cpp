// linac-chunk: derive the chunked-parallel algorithm of a recurrence from its
// canonical form (lib/Analysis/ChunkForm.h) and emit it as tile IR. The math
// is in docs/chunked-form.md; each step below names the quantity it builds.

#include "dialect/Passes.h"
#include "lib/Analysis/ChunkForm.h"
#include "lib/Conversion/EntryPoint.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace linac {
#define GEN_PASS_DEF_LINACCHUNK
#include "dialect/Passes.h.inc"
} // namespace linac

using namespace mlir;
using namespace linac;

namespace {

class ChunkEmitter {
public:
  ChunkEmitter(RecurrenceOp rec, const RecurrenceStructure &st, const ChunkForm &form, OpBuilder &b, int64_t chunk)
      : rec(rec), st(st), form(form), b(b), lb(b, rec.getLoc()), loc(rec.getLoc()), chunkSize(chunk) {}

  void emitFunction(ModuleOp module);

private:
  template <typename OpT, typename... Args> Value make(Args &&...args) {
    return OpT::create(b, loc, getTileType(b.getContext()), std::forward<Args>(args)...);
  }
  // Tile helpers. Shapes are (rows, cols) index values.
  Value load(Value buffer, Value offset, Value stride, Value rows, Value cols, Value valid) {
    return make<TileLoadOp>(buffer, offset, stride, rows, cols, valid);
  }
  Value fill(Value scalar, Value rows, Value cols) { return make<TileFillOp>(scalar, rows, cols); }
  Value bcast(Value t, Value rows, Value cols) { return make<TileBroadcastOp>(t, rows, cols); }
  Value maskRows(Value t) { return make<TileMaskRowsOp>(t, valid); }
  Value exp(Value t) { return math::ExpOp::create(b, loc, t); }
  Value add(Value x, Value y) { return arith::AddFOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return arith::SubFOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return arith::MulFOp::create(b, loc, x, y); }
  Value matmul(Value x, Value y, bool transposeLhs = false) {
    auto op = TileMatmulOp::create(b, loc, getTileType(b.getContext()), x, y);
    if (transposeLhs)
      op.setTransposeLhs(true);
    return op;
  }
  Value gatedDot(Value x, Value y, Value gx, Value gy, MaskKind mask) {
    return make<TileGatedDotOp>(x, y, gx, gy, mask);
  }
  /// A per-token gate tile (C x 1 or C x K) widened to C x K.
  Value toKeyWidth(Value gate, bool perKey) { return perKey ? gate : bcast(gate, C, e.K); }

  Value cols(Value v) {
    if (!isa<RankedTensorType>(v.getType()))
      return one;
    return st.dims.lookup(v) == Dim::Key ? e.K : e.V;
  }
  Value tile(Value v);
  void emitChunk(Value head, Value t0, Value seqEnd);
  Value emitMatrixCore();
  Value emitVectorCore();

  RecurrenceOp rec;
  const RecurrenceStructure &st;
  const ChunkForm &form;
  OpBuilder &b;
  LoopBuilder lb;
  Location loc;
  int64_t chunkSize;

  EntryPoint e;
  Value state, C, one;
  // Per-chunk values.
  Value head, t0, valid;
  DenseMap<Value, Value> tiles;
};

/// The tile of a body value over the chunk's tokens: C x cols, one row per token.
Value ChunkEmitter::tile(Value v) {
  if (Value known = tiles.lookup(v))
    return known;
  Value width = cols(v);
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    unsigned i = arg.getArgNumber() - 1;
    Value buffer = e.inputs[i];
    if (rec.isPerHead(i))
      return tiles[v] = bcast(load(buffer, lb.mul(head, width), width, one, width, one), C, width);
    Value rowStride = lb.mul(e.H, width);
    return tiles[v] = load(buffer, tokenOffset(lb, e, t0, head, width), rowStride, C, width, valid);
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

/// The class of the transition A_t, e.g. "token_scalar" (Mamba-2) or "delta_token_per_key".
static std::string transitionClass(const ChunkForm &form, const RecurrenceStructure &st) {
  std::string base;
  if (form.gateShape == GateShape::None) {
    base = "identity";
  } else {
    Variation v = Variation::Fixed;
    for (Value g : form.gates)
      v = std::max(v, st.variation(g));
    base = v == Variation::Fixed ? "fixed" : v == Variation::PerHead ? "head" : "token";
    base += form.gateShape == GateShape::Scalar ? "_scalar" : "_per_key";
  }
  return form.delta ? "delta_" + base : base;
}

void ChunkEmitter::emitFunction(ModuleOp module) {
  e = buildEntryPoint(b, module, rec, st, entrySymbol(rec, "chunk" + std::to_string(chunkSize)));
  e.function->setAttr("linac.transition", b.getStringAttr(transitionClass(form, st)));
  std::string read = form.point == ReadPoint::AfterUpdate ? "after_update" : "before_update";
  if (!ReadOp(form.read).getBonus().empty())
    read += "+bonus";
  e.function->setAttr("linac.read", b.getStringAttr(read));
  {
    OpBuilder::InsertionGuard guard(b);
    b.restoreInsertionPoint(e.hoistPoint);
    state = memref::AllocOp::create(b, loc, MemRefType::get({ShapedType::kDynamic}, b.getF32Type()),
                                    ValueRange{e.stateSize});
    C = lb.idx(chunkSize);
    one = lb.idx(1);
  }
  forEachSequenceAndHead(lb, e, state, [&](Value h, Value start, Value end) {
    Value chunks = lb.ceilDiv(lb.sub(end, start), C);
    lb.forLoop(lb.idx(0), chunks, [&](Value c) { emitChunk(h, lb.add(start, lb.mul(c, C)), end); });
  });
  finishEntryPoint(lb, {state});
}

void ChunkEmitter::emitChunk(Value h, Value start, Value seqEnd) {
  head = h;
  t0 = start;
  valid = lb.minIndex(C, lb.sub(seqEnd, start));
  tiles.clear();
  Value out = form.matrix ? emitMatrixCore() : emitVectorCore();
  tiles[ReadOp(form.read).getResult()] = out;
  Value result = tile(rec.getYield().getOutput());
  TileStoreOp::create(b, loc, result, e.out, tokenOffset(lb, e, t0, head, e.V), lb.mul(e.H, e.V), valid);
}

/// The chunk's log-gate tile g (C x 1, or C x K for per-key gates), zero on padding rows.
static Value sumTiles(ArrayRef<Value> parts, function_ref<Value(Value, Value)> add) {
  Value total = parts.front();
  for (Value p : parts.drop_front())
    total = add(total, p);
  return total;
}

Value ChunkEmitter::emitMatrixCore() {
  ReadOp read = form.read;
  bool perKey = form.gateShape == GateShape::PerKey;
  Value gateCols = perKey ? e.K : one;
  // g_i: every decay of token i, summed in log space.
  SmallVector<Value> gateTiles;
  for (Value g : form.gates)
    gateTiles.push_back(perKey ? toKeyWidth(tile(g), isa<RankedTensorType>(g.getType())) : tile(g));
  Value G = gateTiles.empty() ? fill(lb.f32(0.0f), C, one) : maskRows(sumTiles(gateTiles, [&](Value x, Value y) {
    return add(x, y);
  }));
  // b_i = sum_{j<=i} g_j.
  Value B = make<TileCumsumOp>(G);
  Value BK = toKeyWidth(B, perKey);
  Value S0 = load(state, lb.idx(0), e.V, e.K, e.V, e.K);

  // Key and pseudo-values w of S_i = Diag(exp(b_i)) S_0 + sum_{j<=i} Diag(exp(b_i - b_j)) k_j w_j^T.
  Value key, W;
  if (form.delta) {
    key = maskRows(tile(form.key));
    Value beta = maskRows(tile(form.beta));
    Value V = tile(form.value);
    // (I + diag(beta) A) W = diag(beta) (V - (exp(b) k) S_0),  A_ij = sum_d k_id k_jd exp(b_id - b_jd), j < i.
    Value A = gatedDot(key, key, B, B, MaskKind::StrictLower);
    Value L = mul(bcast(beta, C, C), A);
    Value decayedKeys = mul(key, exp(BK));
    Value R = mul(bcast(beta, C, e.V), sub(V, matmul(decayedKeys, S0)));
    W = make<TileTriSolveOp>(L, R);
  } else {
    key = tile(form.key);
    if (form.writeScale)
      key = mul(key, bcast(tile(form.writeScale), C, e.K));
    if (!form.postWriteGates.empty()) {
      SmallVector<Value> post;
      for (Value g : form.postWriteGates)
        post.push_back(toKeyWidth(tile(g), isa<RankedTensorType>(g.getType())));
      key = mul(key, exp(sumTiles(post, [&](Value x, Value y) { return add(x, y); })));
    }
    key = maskRows(key);
    W = tile(form.value);
  }

  // o_i = scale * ((exp(b) q)_i S_0 + sum_j P_ij w_j): S_t uses b_i and j <= i, S_{t-1} uses b_{i-1} and j < i.
  Value q = tile(read.getQuery());
  bool before = form.point == ReadPoint::BeforeUpdate;
  Value Bq = before ? sub(B, G) : B;
  Value P = gatedDot(q, key, Bq, B, before ? MaskKind::StrictLower : MaskKind::Lower);
  Value O = add(matmul(mul(q, exp(toKeyWidth(Bq, perKey))), S0), matmul(P, W));
  if (!read.getBonus().empty()) {
    // (q_i . (u * k_i)) v_i
    Value u = tile(read.getBonus()[0]), kb = tile(read.getBonus()[1]), vb = tile(read.getBonus()[2]);
    Value coefficient = make<TileRowSumOp>(mul(mul(q, u), kb));
    O = add(O, mul(bcast(coefficient, C, e.V), vb));
  }
  Value scale = read.getScaleAttr()
                    ? lb.f32(static_cast<float>(read.getScaleAttr().getValueAsDouble()))
                    : e.scale;
  O = mul(O, fill(scale, C, e.V));

  // S_C = Diag(exp(b_C)) S_0 + sum_j (exp(b_C - b_j) k_j) w_j^T; padding rows have g = 0, so b_C is the last row.
  Value bLast = make<TileRowOp>(B, lb.sub(C, one));
  Value toEnd = exp(sub(bcast(bLast, C, gateCols), B));
  Value carried = mul(bcast(make<TileTransposeOp>(exp(bLast)), e.K, e.V), S0);
  Value S = add(carried, matmul(mul(key, toKeyWidth(toEnd, perKey)), W, /*transposeLhs=*/true));
  TileStoreOp::create(b, loc, S, state, lb.idx(0), e.V, e.K);
  return O;
}

Value ChunkEmitter::emitVectorCore() {
  // h_i = exp(b_i) h_0 + sum_{j<=i} exp(b_i - b_j) x_j, per channel.
  SmallVector<Value> gateTiles;
  for (Value g : form.gates)
    gateTiles.push_back(toKeyWidth(tile(g), isa<RankedTensorType>(g.getType())));
  Value G = gateTiles.empty() ? fill(lb.f32(0.0f), C, e.K) : maskRows(sumTiles(gateTiles, [&](Value x, Value y) {
    return add(x, y);
  }));
  Value B = make<TileCumsumOp>(G);
  Value x = tile(form.key);
  if (form.writeScale)
    x = mul(x, bcast(tile(form.writeScale), C, e.K));
  if (!form.postWriteGates.empty()) {
    SmallVector<Value> post;
    for (Value g : form.postWriteGates)
      post.push_back(toKeyWidth(tile(g), isa<RankedTensorType>(g.getType())));
    x = mul(x, exp(sumTiles(post, [&](Value p, Value q) { return add(p, q); })));
  }
  x = maskRows(x);
  Value h0 = load(state, lb.idx(0), e.K, one, e.K, one);
  Value Hs = add(mul(bcast(h0, C, e.K), exp(B)), make<TileGatedScanOp>(x, B));
  TileStoreOp::create(b, loc, make<TileRowOp>(Hs, lb.sub(C, one)), state, lb.idx(0), e.K, one);
  return Hs;
}

struct ChunkPass : linac::impl::LinacChunkBase<ChunkPass> {
  using Base::Base;
  void runOnOperation() override {
    if (chunkSize < 1) {
      getOperation().emitError() << "linac-chunk: chunk-size must be positive, got " << chunkSize;
      return signalPassFailure();
    }
    ModuleOp module = getOperation();
    SmallVector<RecurrenceOp> recurrences(module.getOps<RecurrenceOp>());
    for (RecurrenceOp rec : recurrences) {
      std::optional<RecurrenceStructure> st = RecurrenceStructure::analyze(rec);
      if (!st)
        return signalPassFailure();
      std::optional<ChunkForm> form = ChunkForm::analyze(rec, *st);
      if (!form)
        return signalPassFailure();
      OpBuilder builder(rec);
      ChunkEmitter(rec, *st, *form, builder, chunkSize).emitFunction(module);
    }
  }
};

} // namespace
