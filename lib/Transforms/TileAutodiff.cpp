#include "lib/Transforms/TileAutodiff.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"

#include <cmath>

using namespace mlir;
using namespace linac;

void TileAutodiff::accumulate(Value tile, Value cotangent) {
  if (!active.empty() && !active.contains(tile))
    return;
  auto [it, inserted] = grads.try_emplace(tile, cotangent);
  if (!inserted)
    it->second = arith::AddFOp::create(b, loc, it->second, cotangent);
}

Value TileAutodiff::constantLike(double value, Value like) {
  TileShape s = shapes.get(like);
  Value scalar = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(static_cast<float>(value)));
  return make<TileFillOp>(scalar, s.rows, s.cols);
}

Value TileAutodiff::matmul(Value x, Value y, bool transposeLhs, bool transposeRhs) {
  auto op = TileMatmulOp::create(b, loc, getTileType(b.getContext()), x, y);
  op.setTransposeLhs(transposeLhs);
  op.setTransposeRhs(transposeRhs);
  return op;
}

LogicalResult TileAutodiff::run(ArrayRef<Operation *> ops, ArrayRef<Value> sources) {
  active.insert(sources.begin(), sources.end());
  for (Operation *op : ops)
    if (op->getNumResults() == 1 && llvm::any_of(op->getOperands(), [&](Value v) { return active.contains(v); }))
      active.insert(op->getResult(0));
  for (Operation *op : llvm::reverse(ops)) {
    if (op->getNumResults() != 1 || !isTileType(op->getResult(0).getType()))
      continue;
    Value g = grads.lookup(op->getResult(0));
    if (!g)
      continue;
    if (failed(adjoint(op, g)))
      return failure();
  }
  return success();
}

std::optional<std::pair<Value, int64_t>> TileAutodiff::sharedPrefixGates(Value gx, Value gy) {
  auto x = gx.getDefiningOp<TileCumsumOp>(), y = gy.getDefiningOp<TileCumsumOp>();
  if (!x || !y || x.getSource() != y.getSource() || x.getReverse() || y.getReverse() || y.getExclusive())
    return std::nullopt;
  return std::make_pair(x.getSource(), int64_t(x.getExclusive() ? 1 : 0));
}

Value TileAutodiff::gateGrad(Value pairs, Value x, Value y, Value gx, Value gy, int64_t shift) {
  return TileGateGradOp::create(b, loc, getTileType(b.getContext()), pairs, x, y, gx, gy, b.getI64IntegerAttr(shift));
}

LogicalResult TileAutodiff::adjoint(Operation *op, Value g) {
  // Leaves: loads are routed by the caller; fills are constants.
  if (isa<TileLoadOp, TileFillOp>(op))
    return success();
  auto sub = [&](Value x, Value y) { return arith::SubFOp::create(b, loc, x, y).getResult(); };
  auto mul = [&](Value x, Value y) { return arith::MulFOp::create(b, loc, x, y).getResult(); };
  auto neg = [&](Value x) { return arith::NegFOp::create(b, loc, x).getResult(); };
  auto reduceLike = [&](Value t, Value like) {
    TileShape s = shapes.get(like);
    return make<TileReduceOp>(t, s.rows, s.cols);
  };

  if (auto bcast = dyn_cast<TileBroadcastOp>(op)) {
    accumulate(bcast.getSource(), reduceLike(g, bcast.getSource()));
    return success();
  }
  if (auto mask = dyn_cast<TileMaskRowsOp>(op)) {
    accumulate(mask.getSource(), make<TileMaskRowsOp>(g, mask.getValid()));
    return success();
  }
  if (auto transpose = dyn_cast<TileTransposeOp>(op)) {
    accumulate(transpose.getSource(), make<TileTransposeOp>(g));
    return success();
  }
  if (auto row = dyn_cast<TileRowOp>(op)) {
    accumulate(row.getSource(), make<TileScatterRowOp>(g, shapes.get(row.getSource()).rows, row.getIndex()));
    return success();
  }
  if (auto rowSum = dyn_cast<TileRowSumOp>(op)) {
    TileShape s = shapes.get(rowSum.getSource());
    accumulate(rowSum.getSource(), make<TileBroadcastOp>(g, s.rows, s.cols));
    return success();
  }
  if (auto cumsum = dyn_cast<TileCumsumOp>(op)) {
    auto adj = TileCumsumOp::create(b, loc, getTileType(b.getContext()), g);
    adj.setReverse(!cumsum.getReverse());
    adj.setExclusive(cumsum.getExclusive());
    accumulate(cumsum.getSource(), adj);
    return success();
  }
  if (auto mm = dyn_cast<TileMatmulOp>(op)) {
    // C = op(A) op(B): dop(A) = dC op(B)^T, dop(B) = op(A)^T dC, transposed back where op is a transpose.
    Value A = mm.getLhs(), B = mm.getRhs();
    bool tA = mm.getTransposeLhs(), tB = mm.getTransposeRhs();
    accumulate(A, tA ? matmul(B, g, tB, true) : matmul(g, B, false, !tB));
    accumulate(B, tB ? matmul(g, A, true, tA) : matmul(A, g, !tA, false));
    return success();
  }
  if (auto dot = dyn_cast<TileGatedDotOp>(op)) {
    // P_ij = sum_d x_id y_jd exp(gx_id - gy_jd): dx and dy are gated products with dP; the gates' gradients
    // follow from d exp(u)/du = exp(u): dgx = x * dx, dgy = -y * dy, summed to the gates' width.
    Value x = dot.getX(), y = dot.getY(), gx = dot.getGx(), gy = dot.getGy();
    Value dx = make<TileGatedMatmulOp>(g, y, gx, gy, dot.getMask());
    auto dyOp = TileGatedMatmulOp::create(b, loc, getTileType(b.getContext()), g, x, gx, gy, dot.getMask());
    dyOp.setTranspose(true);
    Value dy = dyOp;
    accumulate(x, dx);
    accumulate(y, dy);
    if (std::optional<std::pair<Value, int64_t>> span = sharedPrefixGates(gx, gy)) {
      accumulate(span->first, gateGrad(g, x, y, gx, gy, span->second));
      return success();
    }
    accumulate(gx, reduceLike(mul(x, dx), gx));
    accumulate(gy, neg(reduceLike(mul(y, dy), gy)));
    return success();
  }
  if (auto scan = dyn_cast<TileGatedScanOp>(op)) {
    if (scan.getReverse())
      return op->emitOpError("linac-autodiff: the reverse gated scan only appears in adjoints");
    // Y_i = sum_{j<=i} exp(b_i - b_j) x_j: dx = Z (the reverse scan of dY); db = dY * Y - x * Z.
    auto z = TileGatedScanOp::create(b, loc, getTileType(b.getContext()), g, scan.getGates());
    z.setReverse(true);
    accumulate(scan.getX(), z);
    if (std::optional<std::pair<Value, int64_t>> span = sharedPrefixGates(scan.getGates(), scan.getGates())) {
      // The scan is a gated product with every pair weight 1: M_ij = dY_i x_j exp(b_i - b_j).
      TileShape s = shapes.get(scan.getX());
      Value ones = make<TileFillOp>(arith::ConstantOp::create(b, loc, b.getF32FloatAttr(1.0f)), s.rows, s.rows);
      accumulate(span->first, gateGrad(ones, g, scan.getX(), scan.getGates(), scan.getGates(), 0));
      return success();
    }
    accumulate(scan.getGates(), sub(mul(g, scan.getResult()), mul(scan.getX(), z)));
    return success();
  }
  if (auto solve = dyn_cast<TileTriSolveOp>(op)) {
    if (solve.getTranspose())
      return op->emitOpError("linac-autodiff: the transposed solve only appears in adjoints");
    // X = (I + L)^-1 R: dR = (I + L)^-T dX, dL = -tril_strict(dR X^T).
    auto dR = TileTriSolveOp::create(b, loc, getTileType(b.getContext()), solve.getLower(), g);
    dR.setTranspose(true);
    accumulate(solve.getRhs(), dR);
    auto lower = TileTrilOp::create(b, loc, getTileType(b.getContext()), matmul(dR, solve.getResult(), false, true));
    lower.setStrict(true);
    accumulate(solve.getLower(), neg(lower));
    return success();
  }
  if (isa<arith::ArithDialect, math::MathDialect>(op->getDialect()))
    return elementwiseAdjoint(op, g);
  return op->emitOpError("linac-autodiff: no adjoint rule for this tile op");
}

LogicalResult TileAutodiff::elementwiseAdjoint(Operation *op, Value g) {
  Value y = op->getResult(0);
  auto mul = [&](Value x, Value z) { return arith::MulFOp::create(b, loc, x, z).getResult(); };
  auto div = [&](Value x, Value z) { return arith::DivFOp::create(b, loc, x, z).getResult(); };
  auto add = [&](Value x, Value z) { return arith::AddFOp::create(b, loc, x, z).getResult(); };
  auto neg = [&](Value x) { return arith::NegFOp::create(b, loc, x).getResult(); };
  Value a = op->getOperand(0);
  if (isa<arith::AddFOp>(op)) {
    accumulate(a, g);
    accumulate(op->getOperand(1), g);
  } else if (isa<arith::SubFOp>(op)) {
    accumulate(a, g);
    accumulate(op->getOperand(1), neg(g));
  } else if (isa<arith::MulFOp>(op)) {
    accumulate(a, mul(g, op->getOperand(1)));
    accumulate(op->getOperand(1), mul(g, a));
  } else if (isa<arith::DivFOp>(op)) {
    Value d = op->getOperand(1);
    accumulate(a, div(g, d));
    accumulate(d, neg(div(mul(g, y), d)));
  } else if (isa<arith::NegFOp>(op)) {
    accumulate(a, neg(g));
  } else if (isa<math::ExpOp>(op)) {
    accumulate(a, mul(g, y));
  } else if (isa<math::Exp2Op>(op)) {
    accumulate(a, mul(mul(g, y), constantLike(std::log(2.0), y)));
  } else if (isa<math::LogOp>(op)) {
    accumulate(a, div(g, a));
  } else if (isa<math::Log2Op>(op)) {
    accumulate(a, div(g, mul(a, constantLike(std::log(2.0), a))));
  } else if (isa<math::Log1pOp>(op)) {
    accumulate(a, div(g, add(a, constantLike(1.0, a))));
  } else if (isa<math::SqrtOp>(op)) {
    accumulate(a, div(mul(g, constantLike(0.5, y)), y));
  } else if (isa<math::TanhOp>(op)) {
    accumulate(a, mul(g, arith::SubFOp::create(b, loc, constantLike(1.0, y), mul(y, y))));
  } else {
    return op->emitOpError("linac-autodiff: no derivative rule for this op; supported: addf, subf, mulf, divf, "
                           "negf, exp, exp2, log, log2, log1p, sqrt, tanh");
  }
  return success();
}
