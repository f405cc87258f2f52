#include "lib/Conversion/EntryPoint.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"

using namespace mlir;
using namespace linac;

/// The C ABI passes plain pointers; a memref descriptor over them lets the
/// body use memref ops, and the cast folds away after lowering to LLVM.
static Value wrapPointer(OpBuilder &b, Location loc, Value ptr, Value numElements, Type elementType) {
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

static Value nonNull(OpBuilder &b, Location loc, Value ptr) {
  Value null = LLVM::ZeroOp::create(b, loc, ptr.getType());
  return LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::ne, ptr, null);
}

EntryPoint linac::buildEntryPoint(OpBuilder &b, ModuleOp module, RecurrenceOp rec, const RecurrenceStructure &st,
                                  StringRef symbol) {
  MLIRContext *ctx = b.getContext();
  Location loc = rec.getLoc();
  Type ptrTy = LLVM::LLVMPointerType::get(ctx);
  Type i64 = b.getI64Type();
  Type f32Ty = b.getF32Type();
  auto fnType = FunctionType::get(ctx, {ptrTy, ptrTy, ptrTy, ptrTy, ptrTy, i64, i64, i64, i64, i64, f32Ty}, {});
  b.setInsertionPointToEnd(module.getBody());
  EntryPoint e;
  e.function = func::FuncOp::create(b, loc, symbol, fnType);
  e.function->setAttr("linac.recurrence", b.getStringAttr(rec.getSymName()));
  Block *entry = e.function.addEntryBlock();
  b.setInsertionPointToStart(entry);
  LoopBuilder lb(b, loc);
  auto toIndex = [&](Value v) { return arith::IndexCastOp::create(b, loc, b.getIndexType(), v).getResult(); };
  e.N = toIndex(entry->getArgument(5));
  e.T = toIndex(entry->getArgument(6));
  e.H = toIndex(entry->getArgument(7));
  e.K = toIndex(entry->getArgument(8));
  bool matrix = rec.getStateType().isMatrix();
  // A vector state has one dimension D, passed as K; V is ignored.
  e.V = matrix ? toIndex(entry->getArgument(9)) : e.K;
  e.stateSize = matrix ? lb.mul(e.K, e.V) : e.K;

  Value scaleArg = entry->getArgument(10);
  Value kf = arith::SIToFPOp::create(b, loc, f32Ty, entry->getArgument(8));
  Value defaultScale = arith::DivFOp::create(b, loc, lb.f32(1.0f), math::SqrtOp::create(b, loc, kf));
  Value useArg = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, scaleArg, lb.f32(0.0f));
  e.scale = lb.select(useArg, scaleArg, defaultScale);

  e.hasCuSeqlens = nonNull(b, loc, entry->getArgument(4));
  Value tokens = lb.select(e.hasCuSeqlens, e.T, lb.mul(e.N, e.T));
  Value rows = lb.mul(tokens, e.H);
  for (auto [i, arg] : llvm::enumerate(rec.getInputArguments())) {
    Value slot =
        LLVM::GEPOp::create(b, loc, ptrTy, ptrTy, entry->getArgument(0), ArrayRef<LLVM::GEPArg>{int32_t(i)});
    Value ptr = LLVM::LoadOp::create(b, loc, ptrTy, slot);
    Value perRow = !isa<RankedTensorType>(arg.getType()) ? lb.idx(1)
                   : st.dims.lookup(arg) == Dim::Key     ? e.K
                                                         : e.V;
    Value count = rec.isPerHead(i) ? lb.mul(e.H, perRow) : lb.mul(rows, perRow);
    e.inputs.push_back(wrapPointer(b, loc, ptr, count, f32Ty));
  }
  e.out = wrapPointer(b, loc, entry->getArgument(1), lb.mul(rows, e.V), f32Ty);
  Value statesSize = lb.mul(lb.mul(e.N, e.H), e.stateSize);
  e.hasH0 = nonNull(b, loc, entry->getArgument(2));
  e.hasHt = nonNull(b, loc, entry->getArgument(3));
  e.h0 = wrapPointer(b, loc, entry->getArgument(2), statesSize, f32Ty);
  e.ht = wrapPointer(b, loc, entry->getArgument(3), statesSize, f32Ty);
  e.cuSeqlens = wrapPointer(b, loc, entry->getArgument(4), lb.add(e.N, lb.idx(1)), b.getI32Type());
  Operation *anchor = arith::ConstantIndexOp::create(b, loc, 0);
  e.hoistPoint = OpBuilder::InsertPoint(entry, Block::iterator(anchor));
  return e;
}

void linac::forEachSequenceAndHead(LoopBuilder &lb, const EntryPoint &e, Value state,
                                   function_ref<void(Value, Value, Value)> body) {
  OpBuilder &b = lb.builder();
  Location loc = lb.location();
  lb.forLoop(lb.idx(0), e.N, [&](Value n) {
    auto bounds = scf::IfOp::create(
        b, loc, e.hasCuSeqlens,
        [&](OpBuilder &nb, Location l) {
          auto at = [&](Value i) {
            Value v = memref::LoadOp::create(nb, l, e.cuSeqlens, ValueRange{i});
            return arith::IndexCastOp::create(nb, l, nb.getIndexType(), v).getResult();
          };
          Value next = arith::AddIOp::create(nb, l, n, arith::ConstantIndexOp::create(nb, l, 1));
          scf::YieldOp::create(nb, l, ValueRange{at(n), at(next)});
        },
        [&](OpBuilder &nb, Location l) {
          Value start = arith::MulIOp::create(nb, l, n, e.T);
          scf::YieldOp::create(nb, l, ValueRange{start, arith::AddIOp::create(nb, l, start, e.T)});
        });
    Value start = bounds.getResult(0), end = bounds.getResult(1);
    lb.forLoop(lb.idx(0), e.H, [&](Value h) {
      Value base = lb.mul(lb.add(lb.mul(n, e.H), h), e.stateSize);
      lb.ifThenElse(
          e.hasH0,
          [&] { lb.forLoop(lb.idx(0), e.stateSize, [&](Value i) { lb.store(lb.load(e.h0, lb.add(base, i)), state, i); }); },
          [&] { lb.forLoop(lb.idx(0), e.stateSize, [&](Value i) { lb.store(lb.f32(0.0f), state, i); }); });
      body(h, start, end);
      lb.ifThenElse(e.hasHt, [&] {
        lb.forLoop(lb.idx(0), e.stateSize, [&](Value i) { lb.store(lb.load(state, i), e.ht, lb.add(base, i)); });
      });
    });
  });
}

void linac::finishEntryPoint(LoopBuilder &lb, ArrayRef<Value> buffers) {
  for (Value buffer : buffers)
    memref::DeallocOp::create(lb.builder(), lb.location(), buffer);
  func::ReturnOp::create(lb.builder(), lb.location());
}
