#ifndef LINAC_CONVERSION_LOOPBUILDER_H
#define LINAC_CONVERSION_LOOPBUILDER_H

// Shorthands for the scf/arith/memref code every CPU lowering emits.

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"

namespace linac {

class LoopBuilder {
public:
  LoopBuilder(mlir::OpBuilder &b, mlir::Location loc) : b(b), loc(loc) {}

  mlir::OpBuilder &builder() { return b; }
  mlir::Location location() { return loc; }

  mlir::Value idx(int64_t v) { return mlir::arith::ConstantIndexOp::create(b, loc, v); }
  mlir::Value f32(float v) { return mlir::arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v)); }
  mlir::Value add(mlir::Value x, mlir::Value y) { return mlir::arith::AddIOp::create(b, loc, x, y); }
  mlir::Value sub(mlir::Value x, mlir::Value y) { return mlir::arith::SubIOp::create(b, loc, x, y); }
  mlir::Value mul(mlir::Value x, mlir::Value y) { return mlir::arith::MulIOp::create(b, loc, x, y); }
  mlir::Value minIndex(mlir::Value x, mlir::Value y) { return mlir::arith::MinSIOp::create(b, loc, x, y); }
  mlir::Value ceilDiv(mlir::Value x, mlir::Value y) { return mlir::arith::CeilDivSIOp::create(b, loc, x, y); }
  mlir::Value lt(mlir::Value x, mlir::Value y) {
    return mlir::arith::CmpIOp::create(b, loc, mlir::arith::CmpIPredicate::slt, x, y);
  }
  mlir::Value fadd(mlir::Value x, mlir::Value y) { return mlir::arith::AddFOp::create(b, loc, x, y); }
  mlir::Value fsub(mlir::Value x, mlir::Value y) { return mlir::arith::SubFOp::create(b, loc, x, y); }
  mlir::Value fmul(mlir::Value x, mlir::Value y) { return mlir::arith::MulFOp::create(b, loc, x, y); }
  mlir::Value select(mlir::Value c, mlir::Value x, mlir::Value y) {
    return mlir::arith::SelectOp::create(b, loc, c, x, y);
  }
  /// Element loads and stores compute in f32: a buffer of a narrower float type (bf16 or f16 inputs and outputs
  /// of `linac-gpu-chunk{io-type=bf16|f16}`) is widened on load and rounded to nearest even on store.
  mlir::Value load(mlir::Value mem, mlir::ValueRange i) {
    mlir::Value v = mlir::memref::LoadOp::create(b, loc, mem, i);
    if (v.getType().isBF16() || v.getType().isF16())
      v = mlir::arith::ExtFOp::create(b, loc, b.getF32Type(), v);
    return v;
  }
  void store(mlir::Value v, mlir::Value mem, mlir::ValueRange i) {
    mlir::Type element = mlir::cast<mlir::MemRefType>(mem.getType()).getElementType();
    if ((element.isBF16() || element.isF16()) && v.getType().isF32())
      v = mlir::arith::TruncFOp::create(b, loc, element, v);
    mlir::memref::StoreOp::create(b, loc, v, mem, i);
  }

  /// for (i = lb; i < ub; ++i) body(i)
  void forLoop(mlir::Value lb, mlir::Value ub, llvm::function_ref<void(mlir::Value)> body) {
    auto loop = mlir::scf::ForOp::create(b, loc, lb, ub, idx(1));
    mlir::OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    body(loop.getInductionVar());
  }
  /// sum over i in [0, ub) of term(i), accumulated in order.
  mlir::Value sumLoop(mlir::Value ub, llvm::function_ref<mlir::Value(mlir::Value)> term) {
    return sumLoop(idx(0), ub, term);
  }
  mlir::Value sumLoop(mlir::Value lb, mlir::Value ub, llvm::function_ref<mlir::Value(mlir::Value)> term) {
    auto loop = mlir::scf::ForOp::create(b, loc, lb, ub, idx(1), mlir::ValueRange{f32(0.0f)});
    mlir::OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    mlir::Value next = fadd(loop.getRegionIterArgs()[0], term(loop.getInductionVar()));
    mlir::scf::YieldOp::create(b, loc, next);
    return loop.getResult(0);
  }
  void ifThenElse(mlir::Value cond, llvm::function_ref<void()> thenBody, llvm::function_ref<void()> elseBody = nullptr) {
    auto op = mlir::scf::IfOp::create(b, loc, mlir::TypeRange{}, cond, /*withElseRegion=*/static_cast<bool>(elseBody));
    mlir::OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(op.thenBlock());
    thenBody();
    if (elseBody) {
      b.setInsertionPointToStart(op.elseBlock());
      elseBody();
    }
  }

private:
  mlir::OpBuilder &b;
  mlir::Location loc;
};

} // namespace linac

#endif
