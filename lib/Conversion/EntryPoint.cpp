#include "lib/Conversion/EntryPoint.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"

using namespace mlir;
using namespace linac;

/// The C ABI passes plain pointers; a memref descriptor over them lets the
/// body use memref ops, and the cast folds away after lowering to LLVM.
Value linac::wrapPointer(OpBuilder &b, Location loc, Value ptr, Value numElements, Type elementType) {
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

Value linac::nonNull(OpBuilder &b, Location loc, Value ptr) {
  Value null = LLVM::ZeroOp::create(b, loc, ptr.getType());
  return LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::ne, ptr, null);
}

/// Loads pointer `i` of a `float *const *` array argument.
static Value loadPointer(OpBuilder &b, Location loc, Value array, int32_t i) {
  Type ptrTy = LLVM::LLVMPointerType::get(b.getContext());
  Value slot = LLVM::GEPOp::create(b, loc, ptrTy, ptrTy, array, ArrayRef<LLVM::GEPArg>{i});
  return LLVM::LoadOp::create(b, loc, ptrTy, slot);
}

EntryPoint linac::bindEntryArguments(OpBuilder &b, Location loc, RecurrenceOp rec, const RecurrenceStructure &st,
                                     const EntryArguments &args, Type ioType) {
  Type f32Ty = b.getF32Type();
  if (!ioType)
    ioType = f32Ty;
  LoopBuilder lb(b, loc);
  auto toIndex = [&](Value v) { return arith::IndexCastOp::create(b, loc, b.getIndexType(), v).getResult(); };
  EntryPoint e;
  e.N = toIndex(args.N);
  e.T = toIndex(args.T);
  e.H = toIndex(args.H);
  e.K = toIndex(args.K);
  bool matrix = rec.getStateType().isMatrix();
  // A vector state has one dimension D, passed as K; V is ignored.
  e.V = matrix ? toIndex(args.V) : e.K;
  e.stateSize = matrix ? lb.mul(e.K, e.V) : e.K;
  e.v0 = lb.idx(0);
  e.Vb = e.V;

  Value kf = arith::SIToFPOp::create(b, loc, f32Ty, args.K);
  Value defaultScale = arith::DivFOp::create(b, loc, lb.f32(1.0f), math::SqrtOp::create(b, loc, kf));
  Value useArg = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, args.scale, lb.f32(0.0f));
  e.scale = lb.select(useArg, args.scale, defaultScale);

  e.hasCuSeqlens = nonNull(b, loc, args.cuSeqlens);
  e.tokens = lb.select(e.hasCuSeqlens, e.T, lb.mul(e.N, e.T));
  Value rows = lb.mul(e.tokens, e.H);
  for (auto [i, input] : llvm::enumerate(rec.getInputArguments())) {
    Value perRow = !isa<RankedTensorType>(input.getType()) ? lb.idx(1)
                   : st.dims.lookup(input) == Dim::Key     ? e.K
                                                           : e.V;
    Value count = rec.isPerHead(i) ? lb.mul(e.H, perRow) : lb.mul(rows, perRow);
    e.inputs.push_back(wrapPointer(b, loc, args.inputs[i], count, rec.isPerHead(i) ? f32Ty : ioType));
    if (!args.dinputs.empty())
      e.dinputs.push_back(wrapPointer(b, loc, args.dinputs[i], count, f32Ty));
  }
  Value statesSize = lb.mul(lb.mul(e.N, e.H), e.stateSize);
  Value outSize = lb.mul(rows, e.V);
  // Each pointer present in this ABI becomes a memref and, where it may be NULL, a flag.
  auto bind = [&](Value ptr, Value size, Type element, Value &memref, Value *present) {
    if (!ptr)
      return;
    memref = wrapPointer(b, loc, ptr, size, element);
    if (present)
      *present = nonNull(b, loc, ptr);
  };
  bind(args.h0, statesSize, f32Ty, e.h0, &e.hasH0);
  bind(args.out, outSize, ioType, e.out, nullptr);
  bind(args.ht, statesSize, f32Ty, e.ht, &e.hasHt);
  bind(args.dout, outSize, ioType, e.dout, nullptr);
  bind(args.dht, statesSize, f32Ty, e.dht, &e.hasDht);
  bind(args.dh0, statesSize, f32Ty, e.dh0, &e.hasDh0);
  e.cuSeqlens = wrapPointer(b, loc, args.cuSeqlens, lb.add(e.N, lb.idx(1)), b.getI32Type());
  return e;
}

Type linac::ioElementType(MLIRContext *ctx, StringRef io) {
  Builder b(ctx);
  if (io == "f32")
    return b.getF32Type();
  if (io == "bf16")
    return b.getBF16Type();
  if (io == "f16")
    return b.getF16Type();
  return nullptr;
}

FailureOr<Type> linac::parseIoType(ModuleOp module, StringRef pass, StringRef io) {
  if (Type t = ioElementType(module.getContext(), io))
    return t;
  module.emitError() << pass << ": io-type must be f32, bf16 or f16, not '" << io << "'";
  return failure();
}

EntryPoint linac::buildEntryPoint(OpBuilder &b, ModuleOp module, RecurrenceOp rec, const RecurrenceStructure &st,
                                  StringRef symbol, EntryKind kind, Type ioType) {
  MLIRContext *ctx = b.getContext();
  Location loc = rec.getLoc();
  Type ptrTy = LLVM::LLVMPointerType::get(ctx);
  bool backward = kind == EntryKind::Backward;
  // forward:  (inputs, out, h0, ht, cu_seqlens, N, T, H, K, V, scale)
  // backward: (inputs, h0, dout, dht, dinputs, dh0, cu_seqlens, N, T, H, K, V, scale)
  unsigned numPointers = backward ? 7 : 5;
  SmallVector<Type> argTypes(numPointers, ptrTy);
  argTypes.append(5, b.getI64Type());
  argTypes.push_back(b.getF32Type());
  b.setInsertionPointToEnd(module.getBody());
  func::FuncOp function = func::FuncOp::create(b, loc, symbol, FunctionType::get(ctx, argTypes, {}));
  function->setAttr("linac.recurrence", b.getStringAttr(rec.getSymName()));
  Block *entry = function.addEntryBlock();
  b.setInsertionPointToStart(entry);
  auto arg = [&](unsigned i) { return entry->getArgument(i); };

  EntryArguments args;
  for (unsigned i = 0, e = rec.getInputArguments().size(); i < e; ++i) {
    args.inputs.push_back(loadPointer(b, loc, arg(0), i));
    if (backward)
      args.dinputs.push_back(loadPointer(b, loc, arg(4), i));
  }
  if (backward) {
    args.h0 = arg(1);
    args.dout = arg(2);
    args.dht = arg(3);
    args.dh0 = arg(5);
    args.cuSeqlens = arg(6);
  } else {
    args.out = arg(1);
    args.h0 = arg(2);
    args.ht = arg(3);
    args.cuSeqlens = arg(4);
  }
  args.setSizes(*entry, numPointers);
  EntryPoint e = bindEntryArguments(b, loc, rec, st, args, ioType);
  e.kind = kind;
  e.function = function;
  Operation *anchor = arith::ConstantIndexOp::create(b, loc, 0);
  e.hoistPoint = OpBuilder::InsertPoint(entry, Block::iterator(anchor));
  return e;
}

void linac::forEachSequenceAndHead(LoopBuilder &lb, const EntryPoint &e, Value state,
                                   function_ref<void(Value, Value, Value)> body) {
  forEachSequence(lb, e, [&](Value n, Value h, Value start, Value end) {
    Value base = stateOffset(lb, e, n, h);
    lb.ifThenElse(
        e.hasH0, [&] { copyBuffer(lb, e.h0, base, state, lb.idx(0), e.stateSize); },
        [&] { zeroBuffer(lb, state, e.stateSize); });
    body(h, start, end);
    lb.ifThenElse(e.hasHt, [&] { copyBuffer(lb, state, lb.idx(0), e.ht, base, e.stateSize); });
  });
}

std::pair<Value, Value> linac::sequenceBounds(LoopBuilder &lb, const EntryPoint &e, Value n) {
  auto bounds = scf::IfOp::create(
      lb.builder(), lb.location(), e.hasCuSeqlens,
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
  return {bounds.getResult(0), bounds.getResult(1)};
}

void linac::forEachSequence(LoopBuilder &lb, const EntryPoint &e, function_ref<void(Value, Value, Value, Value)> body) {
  lb.forLoop(lb.idx(0), e.N, [&](Value n) {
    auto [start, end] = sequenceBounds(lb, e, n);
    lb.forLoop(lb.idx(0), e.H, [&](Value h) { body(n, h, start, end); });
  });
}

void linac::finishEntryPoint(LoopBuilder &lb, ArrayRef<Value> buffers) {
  for (Value buffer : buffers)
    memref::DeallocOp::create(lb.builder(), lb.location(), buffer);
  func::ReturnOp::create(lb.builder(), lb.location());
}
