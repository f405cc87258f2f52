// linac-lower-sequential: each recurrence becomes a plain loop over
// sequences, heads and time that updates one state buffer in place. This is
// the reference lowering: every other lowering is tested against it.

#include "dialect/Passes.h"
#include "lib/Analysis/Structure.h"
#include "lib/Conversion/EntryPoint.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/IRMapping.h"

namespace linac {
#define GEN_PASS_DEF_LINACLOWERSEQUENTIAL
#include "dialect/Passes.h.inc"
} // namespace linac

using namespace mlir;
using namespace linac;

namespace {

/// A vector of one token: `size` contiguous f32 elements of `memref` from `offset`.
struct VecRef {
  Value memref;
  Value offset;
  Value size;
};

/// Builds the body of one generated function. Index arithmetic is on `index`, data on f32.
class SequentialEmitter {
public:
  SequentialEmitter(RecurrenceOp rec, const RecurrenceStructure &structure, OpBuilder &builder)
      : rec(rec), st(structure), b(builder), lb(builder, rec.getLoc()), loc(rec.getLoc()) {}

  /// `io`: the element type of the per-token inputs and the output (f32, bf16 or f16).
  void emitFunction(ModuleOp module, StringRef symbol, Type io);

private:
  Value idx(int64_t v) { return lb.idx(v); }
  Value f32(float v) { return lb.f32(v); }
  Value add(Value x, Value y) { return lb.add(x, y); }
  Value mul(Value x, Value y) { return lb.mul(x, y); }
  Value fadd(Value x, Value y) { return lb.fadd(x, y); }
  Value fmul(Value x, Value y) { return lb.fmul(x, y); }
  Value load(Value mem, Value i) { return lb.load(mem, i); }
  void store(Value v, Value mem, Value i) { lb.store(v, mem, i); }
  Value elem(const VecRef &v, Value i) { return load(v.memref, add(v.offset, i)); }
  void forLoop(Value lo, Value hi, function_ref<void(Value)> body) { lb.forLoop(lo, hi, body); }
  Value sumLoop(Value hi, function_ref<Value(Value)> term) { return lb.sumLoop(hi, term); }
  Value scratch(Value size);

  // Body emission for one (token, head).
  void emitToken(Value token);
  Value scalar(Value v);
  VecRef vector(Value v);
  void emitDefinition(Operation *op);
  void emitRead(ReadOp read);
  void emitUpdate(Operation *op);
  Value dimSize(Value vec) { return st.dims.lookup(vec) == Dim::Key ? e.K : e.V; }

  RecurrenceOp rec;
  const RecurrenceStructure &st;
  OpBuilder &b;
  LoopBuilder lb;
  Location loc;

  EntryPoint e;
  SmallVector<Value> buffers;
  Value state, head;
  Value K, V, stateSize, scale;

  // Per-token values.
  Value token;
  DenseMap<Value, Value> scalars;
  DenseMap<Value, VecRef> vectors;
};

/// Buffers are allocated once in the entry block and freed at exit.
Value SequentialEmitter::scratch(Value size) {
  OpBuilder::InsertionGuard guard(b);
  b.restoreInsertionPoint(e.hoistPoint);
  auto type = MemRefType::get({ShapedType::kDynamic}, b.getF32Type());
  Value buffer = memref::AllocOp::create(b, loc, type, ValueRange{size});
  buffers.push_back(buffer);
  return buffer;
}

void SequentialEmitter::emitFunction(ModuleOp module, StringRef symbol, Type io) {
  e = buildEntryPoint(b, module, rec, st, symbol, EntryKind::Forward, io);
  K = e.K;
  V = e.V;
  stateSize = e.stateSize;
  scale = e.scale;
  state = scratch(stateSize);
  forEachSequenceAndHead(lb, e, state, [&](Value h, Value start, Value end) {
    head = h;
    forLoop(start, end, [&](Value t) {
      emitToken(t);
      VecRef out = vector(rec.getYield().getOutput());
      Value outBase = tokenOffset(lb, e, t, h, V);
      forLoop(idx(0), V, [&](Value j) { store(elem(out, j), e.out, add(outBase, j)); });
    });
  });
  finishEntryPoint(lb, buffers);
}

void SequentialEmitter::emitToken(Value t) {
  token = t;
  scalars.clear();
  vectors.clear();
  // In-place updates: every read of a state is emitted before the update that consumes it.
  for (auto [i, reads] : llvm::enumerate(st.readsOf)) {
    for (Operation *read : reads)
      emitRead(cast<ReadOp>(read));
    if (i < st.updates.size())
      emitUpdate(st.updates[i]);
  }
}

Value SequentialEmitter::scalar(Value v) {
  if (Value known = scalars.lookup(v))
    return known;
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    unsigned i = arg.getArgNumber() - 1;
    Value at = rec.isPerHead(i) ? head : add(mul(token, e.H), head);
    return scalars[v] = load(e.inputs[i], at);
  }
  emitDefinition(v.getDefiningOp());
  return scalars.lookup(v);
}

VecRef SequentialEmitter::vector(Value v) {
  if (auto it = vectors.find(v); it != vectors.end())
    return it->second;
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    unsigned i = arg.getArgNumber() - 1;
    Value size = dimSize(v);
    Value row = rec.isPerHead(i) ? head : add(mul(token, e.H), head);
    return vectors[v] = VecRef{e.inputs[i], mul(row, size), size};
  }
  emitDefinition(v.getDefiningOp());
  return vectors.lookup(v);
}

/// Token-local values: constants, the head index and gate math. A vector op
/// becomes a loop applying the same op to f32 elements.
void SequentialEmitter::emitDefinition(Operation *op) {
  assert(!isa<ReadOp>(op) && "reads are scheduled with the state chain");
  if (auto headIndex = dyn_cast<HeadIndexOp>(op)) {
    Value i64 = arith::IndexCastOp::create(b, loc, b.getI64Type(), head);
    scalars[headIndex.getResult()] = arith::SIToFPOp::create(b, loc, b.getF32Type(), i64);
    return;
  }
  if (auto splat = dyn_cast<SplatOp>(op)) {
    Value size = dimSize(splat.getResult());
    Value value = scalar(splat.getScalar());
    Value buffer = scratch(size);
    forLoop(idx(0), size, [&](Value i) { store(value, buffer, i); });
    vectors[splat.getResult()] = VecRef{buffer, idx(0), size};
    return;
  }
  Value result = op->getResult(0);
  if (!isa<RankedTensorType>(result.getType())) {
    IRMapping mapping;
    for (Value operand : op->getOperands())
      mapping.map(operand, scalar(operand));
    Operation *clone = b.clone(*op, mapping);
    scalars[result] = clone->getResult(0);
    return;
  }
  SmallVector<VecRef> vecOperands;
  SmallVector<Value> scalarOperands;
  for (Value operand : op->getOperands()) {
    if (isa<RankedTensorType>(operand.getType()))
      vecOperands.push_back(vector(operand));
    else
      scalarOperands.push_back(scalar(operand));
  }
  Value size = dimSize(result);
  Value buffer = scratch(size);
  forLoop(idx(0), size, [&](Value i) {
    SmallVector<Value> operands;
    unsigned nextVec = 0, nextScalar = 0;
    for (Value operand : op->getOperands())
      operands.push_back(isa<RankedTensorType>(operand.getType()) ? elem(vecOperands[nextVec++], i)
                                                                   : scalarOperands[nextScalar++]);
    OperationState state(op->getLoc(), op->getName(), operands, TypeRange{b.getF32Type()}, op->getAttrs());
    store(b.create(state)->getResult(0), buffer, i);
  });
  vectors[result] = VecRef{buffer, idx(0), size};
}

void SequentialEmitter::emitRead(ReadOp read) {
  Value size = dimSize(read.getResult());
  Value buffer = scratch(size);
  VecRef out{buffer, idx(0), size};
  if (!read.getQuery()) {
    forLoop(idx(0), size, [&](Value i) { store(load(state, i), buffer, i); });
    vectors[read.getResult()] = out;
    return;
  }
  Value readScale = read.getScaleAttr() ? f32(static_cast<float>(read.getScaleAttr().getValueAsDouble())) : scale;
  VecRef q = vector(read.getQuery());
  Value bonus;
  VecRef bonusValue;
  if (!read.getBonus().empty()) {
    VecRef u = vector(read.getBonus()[0]), k = vector(read.getBonus()[1]);
    bonusValue = vector(read.getBonus()[2]);
    bonus = sumLoop(K, [&](Value i) { return fmul(fmul(elem(q, i), elem(u, i)), elem(k, i)); });
  }
  forLoop(idx(0), V, [&](Value j) {
    Value acc = sumLoop(K, [&](Value i) { return fmul(elem(q, i), load(state, add(mul(i, V), j))); });
    if (bonus)
      acc = fadd(acc, fmul(bonus, elem(bonusValue, j)));
    store(fmul(readScale, acc), buffer, j);
  });
  vectors[read.getResult()] = out;
}

void SequentialEmitter::emitUpdate(Operation *op) {
  bool matrix = rec.getStateType().isMatrix();
  if (auto decay = dyn_cast<DecayOp>(op)) {
    Value gate = decay.getGate();
    if (!isa<RankedTensorType>(gate.getType())) {
      Value factor = math::ExpOp::create(b, loc, scalar(gate));
      forLoop(idx(0), stateSize, [&](Value i) { store(fmul(factor, load(state, i)), state, i); });
      return;
    }
    VecRef g = vector(gate);
    forLoop(idx(0), K, [&](Value i) {
      Value factor = math::ExpOp::create(b, loc, elem(g, i));
      Value rowSize = matrix ? V : idx(1);
      forLoop(idx(0), rowSize, [&](Value j) {
        Value at = add(mul(i, rowSize), j);
        store(fmul(factor, load(state, at)), state, at);
      });
    });
    return;
  }
  if (auto write = dyn_cast<WriteOp>(op)) {
    VecRef k = vector(write.getKey());
    Value s = write.getScale() ? scalar(write.getScale()) : Value();
    if (!matrix) {
      forLoop(idx(0), K, [&](Value i) {
        Value x = s ? fmul(s, elem(k, i)) : elem(k, i);
        store(fadd(load(state, i), x), state, i);
      });
      return;
    }
    VecRef v = vector(write.getValue());
    forLoop(idx(0), K, [&](Value i) {
      Value ki = s ? fmul(s, elem(k, i)) : elem(k, i);
      forLoop(idx(0), V, [&](Value j) {
        Value at = add(mul(i, V), j);
        store(fadd(load(state, at), fmul(ki, elem(v, j))), state, at);
      });
    });
    return;
  }
  auto delta = cast<DeltaOp>(op);
  VecRef k = vector(delta.getKey()), v = vector(delta.getValue());
  Value beta = scalar(delta.getBeta());
  // S += beta k (v - S^T k)^T, with the residual computed before S changes.
  Value residual = scratch(V);
  forLoop(idx(0), V, [&](Value j) {
    Value recalled = sumLoop(K, [&](Value i) { return fmul(elem(k, i), load(state, add(mul(i, V), j))); });
    store(arith::SubFOp::create(b, loc, elem(v, j), recalled), residual, j);
  });
  forLoop(idx(0), K, [&](Value i) {
    Value bk = fmul(beta, elem(k, i));
    forLoop(idx(0), V, [&](Value j) {
      Value at = add(mul(i, V), j);
      store(fadd(load(state, at), fmul(bk, load(residual, j))), state, at);
    });
  });
}

struct LowerSequentialPass : linac::impl::LinacLowerSequentialBase<LowerSequentialPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<Type> io = parseIoType(module, "linac-lower-sequential", ioType);
    if (failed(io))
      return signalPassFailure();
    SmallVector<RecurrenceOp> recurrences(module.getOps<RecurrenceOp>());
    for (RecurrenceOp rec : recurrences) {
      std::optional<RecurrenceStructure> structure = RecurrenceStructure::analyze(rec);
      if (!structure)
        return signalPassFailure();
      OpBuilder builder(rec);
      SequentialEmitter(rec, *structure, builder).emitFunction(module, entrySymbol(rec, "sequential"), *io);
    }
  }
};

} // namespace
