// linac-lower-sequential: each recurrence becomes a plain loop over
// sequences, heads and time that updates one state buffer in place. This is
// the reference lowering: every other lowering is tested against it.

#include "dialect/Passes.h"
#include "lib/Analysis/Structure.h"

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
      : rec(rec), st(structure), b(builder), loc(rec.getLoc()) {}

  func::FuncOp emitFunction(ModuleOp module);

private:
  // Small builders.
  Value idx(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value f32(float v) { return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v)); }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return arith::MulIOp::create(b, loc, x, y); }
  Value fadd(Value x, Value y) { return arith::AddFOp::create(b, loc, x, y); }
  Value fmul(Value x, Value y) { return arith::MulFOp::create(b, loc, x, y); }
  Value load(Value mem, Value i) { return memref::LoadOp::create(b, loc, mem, ValueRange{i}); }
  void store(Value v, Value mem, Value i) { memref::StoreOp::create(b, loc, v, mem, ValueRange{i}); }
  Value elem(const VecRef &v, Value i) { return load(v.memref, add(v.offset, i)); }
  void forLoop(Value lb, Value ub, function_ref<void(Value)> body);
  void ifThenElse(Value cond, function_ref<void()> thenBody, function_ref<void()> elseBody = nullptr);
  Value sumLoop(Value ub, function_ref<Value(Value)> term);
  Value wrapPointer(Value ptr, Value numElements, Type elementType);
  Value nonNull(Value ptr);
  Value scratch(Value size);

  // Body emission for one (token, head).
  void emitToken(Value token);
  Value scalar(Value v);
  VecRef vector(Value v);
  void emitDefinition(Operation *op);
  void emitRead(ReadOp read);
  void emitUpdate(Operation *op);
  Value dimSize(Value vec) { return st.dims.lookup(vec) == Dim::Key ? K : V; }

  RecurrenceOp rec;
  const RecurrenceStructure &st;
  OpBuilder &b;
  Location loc;

  // Launch-wide values.
  Value K, V, H, stateSize, scale, head;
  OpBuilder::InsertPoint allocPoint;
  SmallVector<Value> buffers;
  SmallVector<Value> inputMems;
  Value state;

  // Per-token values.
  Value token;
  DenseMap<Value, Value> scalars;
  DenseMap<Value, VecRef> vectors;
};

void SequentialEmitter::forLoop(Value lb, Value ub, function_ref<void(Value)> body) {
  auto loop = scf::ForOp::create(b, loc, lb, ub, idx(1));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  body(loop.getInductionVar());
}

void SequentialEmitter::ifThenElse(Value cond, function_ref<void()> thenBody, function_ref<void()> elseBody) {
  auto op = scf::IfOp::create(b, loc, TypeRange{}, cond, /*withElseRegion=*/static_cast<bool>(elseBody));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(op.thenBlock());
  thenBody();
  if (elseBody) {
    b.setInsertionPointToStart(op.elseBlock());
    elseBody();
  }
}

Value SequentialEmitter::sumLoop(Value ub, function_ref<Value(Value)> term) {
  auto loop = scf::ForOp::create(b, loc, idx(0), ub, idx(1), ValueRange{f32(0.0f)});
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  Value next = fadd(loop.getRegionIterArgs()[0], term(loop.getInductionVar()));
  scf::YieldOp::create(b, loc, next);
  return loop.getResult(0);
}

/// The C ABI passes plain pointers; a memref descriptor over them lets the
/// body use memref ops, and the cast folds away after lowering to LLVM.
Value SequentialEmitter::wrapPointer(Value ptr, Value numElements, Type elementType) {
  MLIRContext *ctx = b.getContext();
  Type i64 = b.getI64Type();
  Type ptrTy = LLVM::LLVMPointerType::get(ctx);
  Type arrTy = LLVM::LLVMArrayType::get(i64, 1);
  auto descTy = LLVM::LLVMStructType::getLiteral(ctx, {ptrTy, ptrTy, i64, arrTy, arrTy});
  Value size = arith::IndexCastOp::create(b, loc, i64, numElements);
  Value zero = LLVM::ConstantOp::create(b, loc, i64, b.getI64IntegerAttr(0));
  Value one = LLVM::ConstantOp::create(b, loc, i64, b.getI64IntegerAttr(1));
  Value desc = LLVM::PoisonOp::create(b, loc, descTy);
  desc = LLVM::InsertValueOp::create(b, loc, desc, ptr, ArrayRef<int64_t>{0});
  desc = LLVM::InsertValueOp::create(b, loc, desc, ptr, ArrayRef<int64_t>{1});
  desc = LLVM::InsertValueOp::create(b, loc, desc, zero, ArrayRef<int64_t>{2});
  desc = LLVM::InsertValueOp::create(b, loc, desc, size, ArrayRef<int64_t>{3, 0});
  desc = LLVM::InsertValueOp::create(b, loc, desc, one, ArrayRef<int64_t>{4, 0});
  auto memrefTy = MemRefType::get({ShapedType::kDynamic}, elementType);
  return UnrealizedConversionCastOp::create(b, loc, memrefTy, desc).getResult(0);
}

Value SequentialEmitter::nonNull(Value ptr) {
  Value null = LLVM::ZeroOp::create(b, loc, ptr.getType());
  return LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::ne, ptr, null);
}

/// Buffers are allocated once at function entry and freed at exit.
Value SequentialEmitter::scratch(Value size) {
  OpBuilder::InsertionGuard guard(b);
  b.restoreInsertionPoint(allocPoint);
  auto type = MemRefType::get({ShapedType::kDynamic}, b.getF32Type());
  Value buffer = memref::AllocOp::create(b, loc, type, ValueRange{size});
  allocPoint = b.saveInsertionPoint();
  buffers.push_back(buffer);
  return buffer;
}

func::FuncOp SequentialEmitter::emitFunction(ModuleOp module) {
  MLIRContext *ctx = b.getContext();
  Type ptrTy = LLVM::LLVMPointerType::get(ctx);
  Type i64 = b.getI64Type();
  Type f32Ty = b.getF32Type();
  auto fnType = FunctionType::get(ctx, {ptrTy, ptrTy, ptrTy, ptrTy, ptrTy, i64, i64, i64, i64, i64, f32Ty}, {});
  b.setInsertionPointToEnd(module.getBody());
  auto fn = func::FuncOp::create(b, loc, ("linac_" + rec.getSymName() + "_forward").str(), fnType);
  fn->setAttr("linac.recurrence", b.getStringAttr(rec.getSymName()));
  Block *entry = fn.addEntryBlock();
  b.setInsertionPointToStart(entry);
  Value inputsPtr = entry->getArgument(0), outPtr = entry->getArgument(1), h0Ptr = entry->getArgument(2),
        htPtr = entry->getArgument(3), cuPtr = entry->getArgument(4);
  auto toIndex = [&](Value v) { return arith::IndexCastOp::create(b, loc, b.getIndexType(), v).getResult(); };
  Value N = toIndex(entry->getArgument(5)), T = toIndex(entry->getArgument(6));
  H = toIndex(entry->getArgument(7));
  K = toIndex(entry->getArgument(8));
  StateType stateType = rec.getStateType();
  bool matrix = stateType.isMatrix();
  // A vector state has one dimension D, passed as K; V is ignored.
  V = matrix ? toIndex(entry->getArgument(9)) : K;
  stateSize = matrix ? mul(K, V) : K;

  // scale <= 0 selects the default K^-1/2.
  Value scaleArg = entry->getArgument(10);
  Value kf = arith::SIToFPOp::create(b, loc, f32Ty, entry->getArgument(8));
  Value defaultScale = arith::DivFOp::create(b, loc, f32(1.0f), math::SqrtOp::create(b, loc, kf));
  Value useArg = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, scaleArg, f32(0.0f));
  scale = arith::SelectOp::create(b, loc, useArg, scaleArg, defaultScale);

  Value hasCu = nonNull(cuPtr);
  Value tokens = arith::SelectOp::create(b, loc, hasCu, T, mul(N, T));
  Value rows = mul(tokens, H);
  for (auto [i, arg] : llvm::enumerate(rec.getInputArguments())) {
    Value slot = LLVM::GEPOp::create(b, loc, ptrTy, ptrTy, inputsPtr, ArrayRef<LLVM::GEPArg>{int32_t(i)});
    Value ptr = LLVM::LoadOp::create(b, loc, ptrTy, slot);
    Value perRow = isa<RankedTensorType>(arg.getType()) ? dimSize(arg) : idx(1);
    Value count = rec.isPerHead(i) ? mul(H, perRow) : mul(rows, perRow);
    inputMems.push_back(wrapPointer(ptr, count, f32Ty));
  }
  Value outMem = wrapPointer(outPtr, mul(rows, V), f32Ty);
  Value statesSize = mul(mul(N, H), stateSize);
  Value hasH0 = nonNull(h0Ptr), hasHt = nonNull(htPtr);
  Value h0Mem = wrapPointer(h0Ptr, statesSize, f32Ty);
  Value htMem = wrapPointer(htPtr, statesSize, f32Ty);
  Value cuMem = wrapPointer(cuPtr, add(N, idx(1)), b.getI32Type());
  // Scratch buffers are allocated in front of this op, so they dominate the loops below.
  Operation *allocAnchor = arith::ConstantIndexOp::create(b, loc, 0);
  allocPoint = OpBuilder::InsertPoint(entry, Block::iterator(allocAnchor));
  state = scratch(stateSize);

  forLoop(idx(0), N, [&](Value n) {
    auto bounds = scf::IfOp::create(
        b, loc, hasCu,
        [&](OpBuilder &nb, Location l) {
          auto at = [&](Value i) {
            Value v = memref::LoadOp::create(nb, l, cuMem, ValueRange{i});
            return arith::IndexCastOp::create(nb, l, nb.getIndexType(), v).getResult();
          };
          Value next = arith::AddIOp::create(nb, l, n, arith::ConstantIndexOp::create(nb, l, 1));
          scf::YieldOp::create(nb, l, ValueRange{at(n), at(next)});
        },
        [&](OpBuilder &nb, Location l) {
          Value start = arith::MulIOp::create(nb, l, n, T);
          scf::YieldOp::create(nb, l, ValueRange{start, arith::AddIOp::create(nb, l, start, T)});
        });
    Value start = bounds.getResult(0), end = bounds.getResult(1);
    forLoop(idx(0), H, [&](Value h) {
      head = h;
      Value base = mul(add(mul(n, H), h), stateSize);
      ifThenElse(
          hasH0, [&] { forLoop(idx(0), stateSize, [&](Value i) { store(load(h0Mem, add(base, i)), state, i); }); },
          [&] { forLoop(idx(0), stateSize, [&](Value i) { store(f32(0.0f), state, i); }); });
      forLoop(start, end, [&](Value t) {
        emitToken(t);
        VecRef out = vector(rec.getYield().getOutput());
        Value outBase = mul(add(mul(t, H), h), V);
        forLoop(idx(0), V, [&](Value j) { store(elem(out, j), outMem, add(outBase, j)); });
      });
      ifThenElse(hasHt,
                 [&] { forLoop(idx(0), stateSize, [&](Value i) { store(load(state, i), htMem, add(base, i)); }); });
    });
  });
  for (Value buffer : buffers)
    memref::DeallocOp::create(b, loc, buffer);
  func::ReturnOp::create(b, loc);
  return fn;
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
    Value at = rec.isPerHead(i) ? head : add(mul(token, H), head);
    return scalars[v] = load(inputMems[i], at);
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
    Value row = rec.isPerHead(i) ? head : add(mul(token, H), head);
    return vectors[v] = VecRef{inputMems[i], mul(row, size), size};
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
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<RecurrenceOp> recurrences(module.getOps<RecurrenceOp>());
    for (RecurrenceOp rec : recurrences) {
      std::optional<RecurrenceStructure> structure = RecurrenceStructure::analyze(rec);
      if (!structure)
        return signalPassFailure();
      OpBuilder builder(rec);
      SequentialEmitter(rec, *structure, builder).emitFunction(module);
      rec.erase();
    }
  }
};

} // namespace
