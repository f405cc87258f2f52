// linac-tile-to-loops: the CPU back end of the tile IR. Each tile becomes a
// heap buffer (allocated at its definition, freed at the end of its block)
// filled by a loop nest. Simple and exact; the GPU back end is where tiles
// map onto tensor cores.

#include "dialect/Passes.h"
#include "lib/Conversion/LoopBuilder.h"
#include "lib/Conversion/TileLowering.h"
#include "lib/Conversion/EntryPoint.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"

#include "llvm/ADT/TypeSwitch.h"

#include <functional>
#include <numeric>
#include <optional>
#include <set>

namespace linac {
#define GEN_PASS_DEF_LINACTILETOLOOPS
#define GEN_PASS_DEF_LINACTILETOGPU
#include "dialect/Passes.h.inc"
} // namespace linac

using namespace mlir;
using namespace linac;

namespace {

/// A tile's storage, or for a fused tile (see isFused) the code that computes element (r, c) where a reader
/// needs it.
struct Buffer {
  Value memref, rows, cols;
  std::function<Value(Value, Value)> element;
};

bool isTileOp(Operation *op) {
  if (isa<TileStoreOp>(op))
    return true;
  return op->getNumResults() == 1 && isTileType(op->getResult(0).getType());
}

/// Elementwise arith/math on tiles (the ops without a tile-dialect lowering of their own).
bool isElementwise(Operation *op) {
  return isTileOp(op) && !isa<TileStoreOp>(op) && op->getDialect() &&
         op->getDialect()->getNamespace() != "linac";
}

/// Tiles that get no storage and no loop: their readers compute their elements in place (elementwise chains
/// fuse into one loop, and a fill, broadcast or mask costs no pass). Index remaps (fill, broadcast, transpose,
/// row mask, tril, row scatter) always fuse, being cheaper to recompute than to load; an elementwise op fuses
/// into its one reader when that reader takes each element once (elementwise, store, row mask, tril). Every
/// reader must sit in the tile's block, so that what the element code reads is still there (TileLiveness keeps
/// a fused tile's operands alive until its readers).
bool isFused(Operation *op) {
  if (!isTileOp(op) || isa<TileStoreOp>(op))
    return false;
  Block *home = op->getBlock();
  for (Operation *user : op->getUsers())
    if (!home->findAncestorOpInBlock(*user))
      return false;
  if (isa<TileFillOp, TileBroadcastOp, TileTransposeOp, TileMaskRowsOp, TileTrilOp, TileScatterRowOp>(op))
    return true;
  if (!isElementwise(op) || !op->hasOneUse())
    return false;
  Operation *user = *op->getUsers().begin();
  return isElementwise(user) || isa<TileStoreOp, TileMaskRowsOp, TileTrilOp>(user);
}

class CpuStrategy : public TileLoopStrategy {
public:
  Value allocate(OpBuilder &b, Operation *op, Value rows, Value cols) override {
    auto type = MemRefType::get({ShapedType::kDynamic, ShapedType::kDynamic}, b.getF32Type());
    Value memref = memref::AllocOp::create(b, op->getLoc(), type, ValueRange{rows, cols});
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(op->getBlock()->getTerminator());
    memref::DeallocOp::create(b, op->getLoc(), memref);
    return memref;
  }
  void parallel2D(LoopBuilder &l, Value rows, Value cols, function_ref<void(Value, Value)> body) override {
    l.forLoop(l.idx(0), rows, [&](Value r) { l.forLoop(l.idx(0), cols, [&](Value c) { body(r, c); }); });
  }
  void parallel1D(LoopBuilder &l, Value n, function_ref<void(Value)> body) override { l.forLoop(l.idx(0), n, body); }
};

class TileLowering {
public:
  /// Rows per block of a triangular solve (see TileTriSolveOp's lowering).
  static constexpr int64_t kSolveRows = 16;
  /// Reductions with at most this many outputs spread each output's terms over all threads.
  static constexpr int64_t kFewOutputs = 16;

  TileLowering(OpBuilder &b, TileLoopStrategy &strategy) : b(b), strategy(strategy) {}

  LogicalResult lower(Operation *op);

private:
  Buffer allocate(Operation *op, Value rows, Value cols);
  Buffer of(Value tile) { return buffers.lookup(tile); }
  Value at(const Buffer &t, Value r, Value c) { return t.element ? t.element(r, c) : lb->load(t.memref, {r, c}); }
  /// Records `op` (isFused) as the element code `element` of a rows x cols tile.
  LogicalResult fuse(Operation *op, Value rows, Value cols, std::function<Value(Value, Value)> element) {
    buffers[op->getResult(0)] = Buffer{Value(), rows, cols, std::move(element)};
    return success();
  }
  LogicalResult lowerFused(Operation *op);
  void set(const Buffer &t, Value r, Value c, Value v) { lb->store(v, t.memref, {r, c}); }
  void forEach(Value rows, Value cols, function_ref<void(Value, Value)> body) {
    strategy.parallel2D(*lb, rows, cols, body);
  }
  void forEach(Value n, function_ref<void(Value)> body) { strategy.parallel1D(*lb, n, body); }
  /// Index into a dimension that broadcasts when its size is 1.
  Value broadcastIndex(Value size, Value i) {
    Value isOne = arith::CmpIOp::create(b, lb->location(), arith::CmpIPredicate::eq, size, lb->idx(1));
    return lb->select(isOne, lb->idx(0), i);
  }
  /// Whether pair (i, j) of a chunk interacts: j <= i, or j < i for a strict mask.
  Value pairKept(Value i, Value j, bool strict) {
    return strict ? lb->lt(j, i) : lb->lt(j, lb->add(i, lb->idx(1)));
  }
  /// exp(gx_i - gy_j) for one gate per row.
  Value scalarGate(const Buffer &gx, const Buffer &gy, Value i, Value j) {
    Value zero = lb->idx(0);
    return math::ExpOp::create(b, lb->location(), lb->fsub(at(gx, i, zero), at(gy, j, zero)));
  }
  static bool isOne(Value v) {
    APInt value;
    return matchPattern(v, m_ConstantInt(&value)) && value == 1;
  }

  OpBuilder &b;
  TileLoopStrategy &strategy;
  std::optional<LoopBuilder> lb;
  DenseMap<Value, Buffer> buffers;
};

Buffer TileLowering::allocate(Operation *op, Value rows, Value cols) {
  Buffer buffer{strategy.allocate(b, op, rows, cols), rows, cols};
  buffers[op->getResult(0)] = buffer;
  return buffer;
}

/// The element code of a fused tile; it runs at its readers' insertion points, with their loop builder.
LogicalResult TileLowering::lowerFused(Operation *op) {
  Location loc = op->getLoc();
  auto zeroIfNot = [this](Value keep, Value v) { return lb->select(keep, v, lb->f32(0.0f)); };
  if (auto fill = dyn_cast<TileFillOp>(op)) {
    Value v = fill.getValue();
    return fuse(op, fill.getRows(), fill.getCols(), [v](Value, Value) { return v; });
  }
  if (auto bcast = dyn_cast<TileBroadcastOp>(op)) {
    Buffer in = of(bcast.getSource());
    return fuse(op, bcast.getRows(), bcast.getCols(), [this, in](Value r, Value c) {
      return at(in, broadcastIndex(in.rows, r), broadcastIndex(in.cols, c));
    });
  }
  if (auto transpose = dyn_cast<TileTransposeOp>(op)) {
    Buffer in = of(transpose.getSource());
    return fuse(op, in.cols, in.rows, [this, in](Value r, Value c) { return at(in, c, r); });
  }
  if (auto mask = dyn_cast<TileMaskRowsOp>(op)) {
    Buffer in = of(mask.getSource());
    Value valid = mask.getValid();
    return fuse(op, in.rows, in.cols, [this, in, valid, zeroIfNot](Value r, Value c) {
      return zeroIfNot(lb->lt(r, valid), at(in, r, c));
    });
  }
  if (auto tril = dyn_cast<TileTrilOp>(op)) {
    Buffer in = of(tril.getSource());
    bool strict = tril.getStrict();
    return fuse(op, in.rows, in.cols, [this, in, strict, zeroIfNot](Value r, Value c) {
      return zeroIfNot(pairKept(r, c, strict), at(in, r, c));
    });
  }
  if (auto scatter = dyn_cast<TileScatterRowOp>(op)) {
    Buffer in = of(scatter.getSource());
    Value index = scatter.getIndex();
    return fuse(op, scatter.getRows(), in.cols, [this, in, index, zeroIfNot, loc](Value r, Value c) {
      Value isRow = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, r, index);
      return zeroIfNot(isRow, at(in, lb->idx(0), c));
    });
  }
  SmallVector<Buffer> operands;
  for (Value operand : op->getOperands())
    operands.push_back(of(operand));
  OperationName name = op->getName();
  SmallVector<NamedAttribute> attrs(op->getAttrs());
  return fuse(op, operands[0].rows, operands[0].cols, [this, operands, name, attrs, loc](Value r, Value c) {
    SmallVector<Value> elements;
    for (const Buffer &operand : operands)
      elements.push_back(at(operand, r, c));
    OperationState state(loc, name, elements, TypeRange{b.getF32Type()}, attrs);
    return b.create(state)->getResult(0);
  });
}

LogicalResult TileLowering::lower(Operation *op) {
  b.setInsertionPoint(op);
  lb.emplace(b, op->getLoc());
  LoopBuilder &l = *lb;
  if (isFused(op))
    return lowerFused(op);

  if (auto load = dyn_cast<TileLoadOp>(op)) {
    Buffer out = allocate(op, load.getRows(), load.getCols());
    forEach(out.rows, out.cols, [&](Value r, Value c) {
      l.ifThenElse(
          l.lt(r, load.getValid()),
          [&] {
            Value at_ = l.add(load.getOffset(), l.add(l.mul(r, load.getStride()), c));
            set(out, r, c, l.load(load.getBuffer(), at_));
          },
          [&] { set(out, r, c, l.f32(0.0f)); });
    });
    return success();
  }
  if (auto store = dyn_cast<TileStoreOp>(op)) {
    Buffer in = of(store.getTile());
    forEach(store.getValid(), in.cols, [&](Value r, Value c) {
      Value at_ = l.add(store.getOffset(), l.add(l.mul(r, store.getStride()), c));
      if (store.getAccumulate())
        strategy.accumulate(l, at(in, r, c), store.getBuffer(), at_);
      else
        l.store(at(in, r, c), store.getBuffer(), at_);
    });
    return success();
  }
  if (auto fill = dyn_cast<TileFillOp>(op)) {
    Buffer out = allocate(op, fill.getRows(), fill.getCols());
    forEach(out.rows, out.cols, [&](Value r, Value c) { set(out, r, c, fill.getValue()); });
    return success();
  }
  if (auto bcast = dyn_cast<TileBroadcastOp>(op)) {
    Buffer in = of(bcast.getSource());
    Buffer out = allocate(op, bcast.getRows(), bcast.getCols());
    forEach(out.rows, out.cols, [&](Value r, Value c) {
      set(out, r, c, at(in, broadcastIndex(in.rows, r), broadcastIndex(in.cols, c)));
    });
    return success();
  }
  if (auto mask = dyn_cast<TileMaskRowsOp>(op)) {
    Buffer in = of(mask.getSource());
    Buffer out = allocate(op, in.rows, in.cols);
    forEach(out.rows, out.cols,
            [&](Value r, Value c) { set(out, r, c, l.select(l.lt(r, mask.getValid()), at(in, r, c), l.f32(0.0f))); });
    return success();
  }
  if (auto transpose = dyn_cast<TileTransposeOp>(op)) {
    Buffer in = of(transpose.getSource());
    Buffer out = allocate(op, in.cols, in.rows);
    forEach(out.rows, out.cols, [&](Value r, Value c) { set(out, r, c, at(in, c, r)); });
    return success();
  }
  if (auto row = dyn_cast<TileRowOp>(op)) {
    Buffer in = of(row.getSource());
    Buffer out = allocate(op, l.idx(1), in.cols);
    forEach(in.cols, [&](Value c) { set(out, l.idx(0), c, at(in, row.getIndex(), c)); });
    return success();
  }
  if (auto rowSum = dyn_cast<TileRowSumOp>(op)) {
    Buffer in = of(rowSum.getSource());
    Buffer out = allocate(op, in.rows, l.idx(1));
    forEach(in.rows, [&](Value r) {
      set(out, r, l.idx(0), l.sumLoop(in.cols, [&](Value c) { return at(in, r, c); }));
    });
    return success();
  }
  if (auto cumsum = dyn_cast<TileCumsumOp>(op)) {
    Buffer in = of(cumsum.getSource());
    Buffer out = allocate(op, in.rows, in.cols);
    bool reverse = cumsum.getReverse(), exclusive = cumsum.getExclusive();
    forEach(in.cols, [&](Value c) {
      auto loop = scf::ForOp::create(b, op->getLoc(), l.idx(0), in.rows, l.idx(1), ValueRange{l.f32(0.0f)});
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(loop.getBody());
      Value r = reverse ? l.sub(l.sub(in.rows, l.idx(1)), loop.getInductionVar()) : loop.getInductionVar();
      Value before = loop.getRegionIterArgs()[0];
      Value running = l.fadd(before, at(in, r, c));
      set(out, r, c, exclusive ? before : running);
      scf::YieldOp::create(b, op->getLoc(), running);
    });
    return success();
  }
  if (auto matmul = dyn_cast<TileMatmulOp>(op)) {
    Buffer x = of(matmul.getLhs()), y = of(matmul.getRhs());
    bool tx = matmul.getTransposeLhs(), ty = matmul.getTransposeRhs();
    Value rows = tx ? x.cols : x.rows, inner = tx ? x.rows : x.cols, cols = ty ? y.rows : y.cols;
    Buffer out = allocate(op, rows, cols);
    auto lhs = [&](Value i, Value k) { return tx ? at(x, k, i) : at(x, i, k); };
    auto rhs = [&](Value k, Value j) { return ty ? at(y, j, k) : at(y, k, j); };
    auto store = [&](Value i, Value j, Value sum) { set(out, i, j, sum); };
    if (!strategy.product(l, rows, cols, inner, lhs, rhs, store))
      forEach(rows, cols, [&](Value i, Value j) {
        store(i, j, l.sumLoop(inner, [&](Value k) { return l.fmul(lhs(i, k), rhs(k, j)); }));
      });
    return success();
  }
  if (auto dot = dyn_cast<TileGatedDotOp>(op)) {
    Buffer x = of(dot.getX()), y = of(dot.getY()), gx = of(dot.getGx()), gy = of(dot.getGy());
    Buffer out = allocate(op, x.rows, y.rows);
    bool scalarGates = isOne(gx.cols);
    bool strict = dot.getMask() == MaskKind::StrictLower;
    // With one gate per row the exponent factors out of the sum over d: a masked, gated matrix product.
    if (scalarGates) {
      auto lhs = [&](Value i, Value d) { return at(x, i, d); };
      auto rhs = [&](Value d, Value j) { return at(y, j, d); };
      auto store = [&](Value i, Value j, Value sum) {
        Value keep = pairKept(i, j, strict);
        Value gate = scalarGate(gx, gy, i, j);
        set(out, i, j, l.select(keep, l.fmul(gate, sum), l.f32(0.0f)));
      };
      if (strategy.product(l, out.rows, out.cols, x.cols, lhs, rhs, store))
        return success();
    }
    forEach(out.rows, out.cols, [&](Value i, Value j) {
      Value keep = pairKept(i, j, strict);
      l.ifThenElse(
          keep,
          [&] {
            Value sum;
            if (scalarGates) {
              Value gate = math::ExpOp::create(b, op->getLoc(),
                                               l.fsub(at(gx, i, l.idx(0)), at(gy, j, l.idx(0))));
              sum = l.fmul(gate, l.sumLoop(x.cols, [&](Value d) { return l.fmul(at(x, i, d), at(y, j, d)); }));
            } else {
              sum = l.sumLoop(x.cols, [&](Value d) {
                Value gate = math::ExpOp::create(b, op->getLoc(), l.fsub(at(gx, i, d), at(gy, j, d)));
                return l.fmul(l.fmul(at(x, i, d), at(y, j, d)), gate);
              });
            }
            set(out, i, j, sum);
          },
          [&] { set(out, i, j, l.f32(0.0f)); });
    });
    return success();
  }
  if (auto scan = dyn_cast<TileGatedScanOp>(op)) {
    Buffer x = of(scan.getX()), g = of(scan.getGates());
    Buffer out = allocate(op, x.rows, x.cols);
    bool reverse = scan.getReverse();
    // Forward: y_i = exp(b_i - b_{i-1}) y_{i-1} + x_i; reverse: z_j = exp(b_{j+1} - b_j) z_{j+1} + x_j. The
    // carried gate starts at the first row visited, so the first factor is exp(0) times a zero partial sum.
    Value last = l.sub(x.rows, l.idx(1));
    forEach(x.cols, [&](Value c) {
      Value firstGate = at(g, reverse ? last : l.idx(0), c);
      auto loop = scf::ForOp::create(b, op->getLoc(), l.idx(0), x.rows, l.idx(1),
                                     ValueRange{l.f32(0.0f), firstGate});
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(loop.getBody());
      Value r = reverse ? l.sub(last, loop.getInductionVar()) : loop.getInductionVar();
      Value bi = at(g, r, c);
      Value exponent = reverse ? l.fsub(loop.getRegionIterArgs()[1], bi) : l.fsub(bi, loop.getRegionIterArgs()[1]);
      Value factor = math::ExpOp::create(b, op->getLoc(), exponent);
      Value y = l.fadd(l.fmul(factor, loop.getRegionIterArgs()[0]), at(x, r, c));
      set(out, r, c, y);
      scf::YieldOp::create(b, op->getLoc(), ValueRange{y, bi});
    });
    return success();
  }
  if (auto solve = dyn_cast<TileTriSolveOp>(op)) {
    Buffer lower = of(solve.getLower()), rhs = of(solve.getRhs());
    Buffer out = allocate(op, rhs.rows, rhs.cols);
    // Substitution in blocks of kSolveRows rows. A block first takes the already solved rows' share,
    //   x_B = r_B - L_{B,solved} x_solved   (a product: tensor cores on the GPU, all threads),
    // then solves within itself column by column, a chain of at most kSolveRows - 1 steps per row:
    //   forward (L):     rows top down,   x_i -= sum_{j in B, j < i} L_ij x_j;
    //   backward (L^T):  rows bottom up,  x_i -= sum_{j in B, j > i} L_ji x_j.
    bool up = solve.getTranspose();
    Value n = rhs.rows, block = l.idx(kSolveRows), zero = l.idx(0), one = l.idx(1);
    Value blocks = l.ceilDiv(n, block);
    l.forLoop(zero, blocks, [&](Value bi) {
      // Forward: rows [b0, b1) with b0 = bi B. Backward: b1 = n - bi B, b0 = max(b1 - B, 0).
      Value b0, b1;
      if (up) {
        b1 = l.sub(n, l.mul(bi, block));
        b0 = arith::MaxSIOp::create(b, op->getLoc(), l.sub(b1, block), zero);
      } else {
        b0 = l.mul(bi, block);
        b1 = l.minIndex(l.add(b0, block), n);
      }
      Value height = l.sub(b1, b0);
      // Solved rows: [0, b0) going down, [b1, n) going up.
      Value solvedFrom = up ? b1 : zero, solvedCount = up ? l.sub(n, b1) : b0;
      auto lhs = [&](Value i, Value k) {
        Value row = l.add(b0, i), col = l.add(solvedFrom, k);
        return up ? at(lower, col, row) : at(lower, row, col);
      };
      auto prior = [&](Value k, Value c) { return at(out, l.add(solvedFrom, k), c); };
      auto store = [&](Value i, Value c, Value sum) {
        Value row = l.add(b0, i);
        set(out, row, c, l.fsub(at(rhs, row, c), sum));
      };
      if (!strategy.product(l, height, rhs.cols, solvedCount, lhs, prior, store))
        forEach(height, rhs.cols, [&](Value i, Value c) {
          store(i, c, l.sumLoop(solvedCount, [&](Value k) { return l.fmul(lhs(i, k), prior(k, c)); }));
        });
      forEach(rhs.cols, [&](Value c) {
        l.forLoop(zero, height, [&](Value step) {
          Value i = up ? l.sub(l.sub(b1, one), step) : l.add(b0, step);
          Value lo = up ? l.add(i, one) : b0, hi = up ? b1 : i;
          Value recalled = l.sumLoop(lo, hi, [&](Value j) {
            return l.fmul(up ? at(lower, j, i) : at(lower, i, j), at(out, j, c));
          });
          set(out, i, c, l.fsub(at(out, i, c), recalled));
        });
      });
    });
    return success();
  }
  if (auto gm = dyn_cast<TileGatedMatmulOp>(op)) {
    Buffer p = of(gm.getPairs()), y = of(gm.getY()), gx = of(gm.getGx()), gy = of(gm.getGy());
    bool transposed = gm.getTranspose();
    bool strict = gm.getMask() == MaskKind::StrictLower;
    bool scalarGates = isOne(gx.cols);
    Buffer out = allocate(op, transposed ? p.cols : p.rows, y.cols);
    // With one gate per row the gated pairs form one matrix, masked and gated as it is read.
    if (scalarGates) {
      auto lhs = [&](Value a, Value c) {
        Value i = transposed ? c : a, j = transposed ? a : c;
        Value keep = pairKept(i, j, strict);
        Value gate = scalarGate(gx, gy, i, j);
        return l.select(keep, l.fmul(at(p, i, j), gate), l.f32(0.0f));
      };
      auto rhs = [&](Value c, Value d) { return at(y, c, d); };
      auto store = [&](Value a, Value d, Value sum) { set(out, a, d, sum); };
      if (strategy.product(l, out.rows, out.cols, transposed ? p.rows : p.cols, lhs, rhs, store))
        return success();
    }
    // The mask becomes the loop bounds: row i pairs with j in [0, i] (or [0, i)); column j with i in [j, m).
    forEach(out.rows, out.cols, [&](Value a, Value d) {
      Value gd = scalarGates ? l.idx(0) : d;
      Value lo = transposed ? (strict ? l.add(a, l.idx(1)) : a) : l.idx(0);
      Value hi = transposed ? p.rows : (strict ? a : l.add(a, l.idx(1)));
      set(out, a, d, l.sumLoop(lo, hi, [&](Value c) {
        Value i = transposed ? c : a, j = transposed ? a : c;
        Value gate = math::ExpOp::create(b, op->getLoc(), l.fsub(at(gx, i, gd), at(gy, j, gd)));
        return l.fmul(l.fmul(at(p, i, j), at(y, c, d)), gate);
      }));
    });
    return success();
  }
  if (auto gg = dyn_cast<TileGateGradOp>(op)) {
    Buffer p = of(gg.getPairs()), x = of(gg.getX()), y = of(gg.getY()), gx = of(gg.getGx()), gy = of(gg.getGy());
    bool scalarGates = isOne(gx.cols);
    int64_t shift = gg.getShift();
    Value m = x.rows;
    Buffer out = allocate(op, m, gx.cols);
    forEach(out.rows, out.cols, [&](Value r, Value c) { set(out, r, c, l.f32(0.0f)); });
    // For each gate channel d and each j: walk t down from m-1 to j+1 with a running sum of M_{t+shift, j},
    // which is exactly the pairs whose exponent spans t, adding it into out[t, d].
    auto walk = [&](Value d, Value j) {
      Value steps = l.sub(l.sub(m, l.idx(1)), j);
      auto loop = scf::ForOp::create(b, op->getLoc(), l.idx(0), steps, l.idx(1), ValueRange{l.f32(0.0f)});
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(loop.getBody());
      Value t = l.sub(l.sub(m, l.idx(1)), loop.getInductionVar());
      Value i = l.add(t, l.idx(shift));
      Value running = loop.getRegionIterArgs()[0];
      // i = t + shift runs past the last row for the first `shift` steps; those terms are zero.
      Value inRange = l.lt(i, m);
      Value row = l.minIndex(i, l.sub(m, l.idx(1)));
      Value gate = math::ExpOp::create(b, op->getLoc(), l.fsub(at(gx, row, d), at(gy, j, d)));
      Value overlap = scalarGates ? l.sumLoop(x.cols, [&](Value e) { return l.fmul(at(x, row, e), at(y, j, e)); })
                                  : l.fmul(at(x, row, d), at(y, j, d));
      Value term = l.select(inRange, l.fmul(l.fmul(at(p, row, j), overlap), gate), l.f32(0.0f));
      Value next = l.fadd(running, term);
      strategy.accumulate(l, next, out.memref, ValueRange{t, d});
      scf::YieldOp::create(b, op->getLoc(), next);
    };
    if (!scalarGates) {
      // A thread per (j, channel): the channels of a warp add into different elements.
      forEach(m, gx.cols, [&](Value j, Value d) { walk(d, j); });
      return success();
    }
    // One gate channel: the walks above sum, for each t, the pair terms
    //   M_ij = P_ij (x_i . y_j) exp(gx_i - gy_j)   over j < t and i >= t + shift,
    // so with the column suffix sums S_ij = sum_{i' >= i} M_i'j:  out_t = sum_{j < t} S_{t+shift, j}.
    // M comes from a product (the tensor cores on the GPU), then two passes of m steps, m threads each.
    Buffer sums{strategy.allocate(b, op, m, m), m, m};
    Value zero = l.idx(0), one = l.idx(1), last = l.sub(m, one);
    auto lhs = [&](Value i, Value e) { return at(x, i, e); };
    auto rhs = [&](Value e, Value j) { return at(y, j, e); };
    auto store = [&](Value i, Value j, Value overlap) {
      Value gate = math::ExpOp::create(b, op->getLoc(), l.fsub(at(gx, i, zero), at(gy, j, zero)));
      set(sums, i, j, l.fmul(l.fmul(at(p, i, j), overlap), gate));
    };
    if (!strategy.product(l, m, m, x.cols, lhs, rhs, store))
      forEach(m, m, [&](Value i, Value j) {
        store(i, j, l.sumLoop(x.cols, [&](Value e) { return l.fmul(lhs(i, e), rhs(e, j)); }));
      });
    forEach(m, [&](Value j) {
      auto loop = scf::ForOp::create(b, op->getLoc(), zero, m, one, ValueRange{l.f32(0.0f)});
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(loop.getBody());
      Value i = l.sub(last, loop.getInductionVar());
      Value running = l.fadd(loop.getRegionIterArgs()[0], at(sums, i, j));
      set(sums, i, j, running);
      scf::YieldOp::create(b, op->getLoc(), running);
    });
    forEach(m, [&](Value t) {
      Value i = l.add(t, l.idx(shift));
      Value row = l.minIndex(i, last);
      Value total = l.sumLoop(zero, t, [&](Value j) { return at(sums, row, j); });
      set(out, t, zero, l.select(l.lt(i, m), total, l.f32(0.0f)));
    });
    return success();
  }
  if (auto reduce = dyn_cast<TileReduceOp>(op)) {
    Buffer in = of(reduce.getSource());
    Buffer out = allocate(op, reduce.getRows(), reduce.getCols());
    // Each output element sums the source rows (columns) that broadcast onto it: all of them where the output
    // has size 1, else its own.
    Value one = l.idx(1);
    Value allRows = arith::CmpIOp::create(b, op->getLoc(), arith::CmpIPredicate::eq, out.rows, one);
    Value allCols = arith::CmpIOp::create(b, op->getLoc(), arith::CmpIPredicate::eq, out.cols, one);
    Value spanRows = l.select(allRows, in.rows, one), spanCols = l.select(allCols, in.cols, one);
    auto origin = [&](Value r, Value c) {
      return std::pair{l.select(allRows, l.idx(0), r), l.select(allCols, l.idx(0), c)};
    };
    // Few outputs (a gate broadcast over a whole tile): each output's terms spread over all threads.
    Value outputs = l.mul(out.rows, out.cols);
    Value few = arith::CmpIOp::create(b, op->getLoc(), arith::CmpIPredicate::ule, outputs, l.idx(kFewOutputs));
    l.ifThenElse(
        few,
        [&] {
          forEach(out.rows, out.cols, [&](Value r, Value c) { set(out, r, c, l.f32(0.0f)); });
          l.forLoop(l.idx(0), outputs, [&](Value e) {
            Value r = arith::DivUIOp::create(b, op->getLoc(), e, out.cols);
            Value c = arith::RemUIOp::create(b, op->getLoc(), e, out.cols);
            auto [r0, c0] = origin(r, c);
            strategy.blockSum(
                *lb, l.mul(spanRows, spanCols),
                [&](Value k) {
                  Value i = arith::DivUIOp::create(b, op->getLoc(), k, spanCols);
                  Value j = arith::RemUIOp::create(b, op->getLoc(), k, spanCols);
                  return at(in, l.add(r0, i), l.add(c0, j));
                },
                [&](Value partial) { strategy.accumulate(*lb, partial, out.memref, ValueRange{r, c}); });
          });
        },
        [&] {
          forEach(out.rows, out.cols, [&](Value r, Value c) {
            auto [r0, c0] = origin(r, c);
            set(out, r, c, l.sumLoop(r0, l.add(r0, spanRows), [&](Value i) {
              return l.sumLoop(c0, l.add(c0, spanCols), [&](Value j) { return at(in, i, j); });
            }));
          });
        });
    return success();
  }
  if (auto scatter = dyn_cast<TileScatterRowOp>(op)) {
    Buffer in = of(scatter.getSource());
    Buffer out = allocate(op, scatter.getRows(), in.cols);
    forEach(out.rows, out.cols, [&](Value r, Value c) {
      Value isRow = arith::CmpIOp::create(b, op->getLoc(), arith::CmpIPredicate::eq, r, scatter.getIndex());
      set(out, r, c, l.select(isRow, at(in, l.idx(0), c), l.f32(0.0f)));
    });
    return success();
  }
  if (auto tril = dyn_cast<TileTrilOp>(op)) {
    Buffer in = of(tril.getSource());
    Buffer out = allocate(op, in.rows, in.cols);
    forEach(out.rows, out.cols, [&](Value r, Value c) {
      Value keep = pairKept(r, c, tril.getStrict());
      set(out, r, c, l.select(keep, at(in, r, c), l.f32(0.0f)));
    });
    return success();
  }
  // Elementwise arith/math on tiles of one shape.
  Buffer first = of(op->getOperand(0));
  Buffer out = allocate(op, first.rows, first.cols);
  forEach(out.rows, out.cols, [&](Value r, Value c) {
    SmallVector<Value> operands;
    for (Value operand : op->getOperands())
      operands.push_back(at(of(operand), r, c));
    OperationState state(op->getLoc(), op->getName(), operands, TypeRange{b.getF32Type()}, op->getAttrs());
    set(out, r, c, b.create(state)->getResult(0));
  });
  return success();
}

} // namespace

LogicalResult linac::lowerTiles(Operation *root, TileLoopStrategy &strategy) {
  SmallVector<Operation *> tileOps;
  root->walk([&](Operation *op) {
    if (isTileOp(op))
      tileOps.push_back(op);
  });
  OpBuilder builder(root->getContext());
  TileLowering lowering(builder, strategy);
  for (Operation *op : tileOps)
    if (failed(lowering.lower(op)))
      return failure();
  for (Operation *op : llvm::reverse(tileOps)) {
    op->dropAllUses();
    op->erase();
  }
  return success();
}

namespace {
struct TileToLoopsPass : linac::impl::LinacTileToLoopsBase<TileToLoopsPass> {
  void runOnOperation() override {
    CpuStrategy cpu;
    for (auto fn : getOperation().getOps<func::FuncOp>())
      if (failed(lowerTiles(fn, cpu)))
        return signalPassFailure();
  }
};
} // namespace

namespace {

/// Where each tile of a kernel may reuse the scratch of another: tiles are numbered in program (pre-)order,
/// and a tile is dead once every op that reads it has finished. A read inside a loop (or branch) nested
/// below the tile's own block keeps it alive until that whole loop ends, since the loop reads it on every
/// iteration. A tile's storage is handed on only after the op that reads it last, never to that op's own
/// result: many tile ops read and write different elements at once.
class TileLiveness {
public:
  explicit TileLiveness(Operation *root) {
    root->walk<WalkOrder::PreOrder>([&](Operation *op) { order[op] = next++; });
    // Last index inside each op's subtree: a post-order walk sees every descendant first.
    root->walk<WalkOrder::PostOrder>([&](Operation *op) {
      int64_t end = order.lookup(op);
      for (Region &region : op->getRegions())
        for (Operation &inner : region.getOps())
          end = std::max(end, subtreeEnd.lookup(&inner));
      subtreeEnd[op] = end;
    });
  }
  int64_t index(Operation *op) const { return order.lookup(op); }
  /// The index after which no op reads the result of `def`. A fused tile (isFused) is read where its own
  /// readers run, so its operands are read there too.
  int64_t lastRead(Operation *def) const {
    int64_t last = index(def);
    Block *home = def->getBlock();
    SmallVector<Operation *> readers(def->getUsers().begin(), def->getUsers().end());
    while (!readers.empty()) {
      Operation *user = readers.pop_back_val();
      if (isFused(user)) {
        readers.append(user->getUsers().begin(), user->getUsers().end());
        continue;
      }
      Operation *inHome = home->findAncestorOpInBlock(*user);
      last = std::max(last, inHome ? subtreeEnd.lookup(inHome) : index(user));
    }
    return last;
  }

private:
  DenseMap<Operation *, int64_t> order, subtreeEnd;
  int64_t next = 0;
};

/// One extent of a tile slot: a compile-time constant or a launch-time value defined at kernel entry.
struct SlotDim {
  std::optional<int64_t> constant;
  Value value;
  bool operator==(const SlotDim &o) const { return constant == o.constant && value == o.value; }
};

/// Tiles of one shape share slots; each slot is sized rows x cols floats of its shape.
struct SlotClass {
  SlotDim rows, cols;
  std::set<int64_t> free;
  /// Runtime extents first by how many there are, then by the constant part: small tiles go first, and
  /// first into shared memory.
  std::pair<int, int64_t> rank() const {
    int dynamic = !rows.constant + !cols.constant;
    return {dynamic, rows.constant.value_or(1) * cols.constant.value_or(1)};
  }
};

/// Tiles in slots sized by their shape, reused once their tile is dead (TileLiveness) by a tile of the same
/// shape; loops strided over threads, then a barrier, which also orders a slot's last reads before its next
/// writes. placeSlots() lays the slots out at kernel entry: small shapes first, each in the block's dynamic
/// shared memory while it fits (its size is read from %dynamic_smem_size, so a launch with less or none still
/// runs), the rest in the block's region of the global tile scratch. Tiles are addressed through generic
/// pointers, so one lowering serves both places.
class GpuStrategy : public TileLoopStrategy {
public:
  /// Floats of padding after each tile row: with rows a multiple of 32 floats apart, the 8 rows a tensor-core
  /// fragment load touches would all fall in one shared-memory bank; 4 floats more spread them over the banks.
  static constexpr int64_t kRowPad = 4;
  /// The shared memory a fixed-size kernel lays its tiles out for: a block's opt-in maximum on sm_90 (227 KiB).
  static constexpr int64_t kStaticSharedBytes = 232448;

  GpuStrategy(Operation *kernel, Value tid, Value threads) : liveness(kernel), tid(tid), threads(threads) {}

  Value allocate(OpBuilder &b, Operation *op, Value rows, Value cols) override {
    int64_t at = liveness.index(op);
    for (auto &[slot, freeAfter] : owners)
      if (freeAfter < at)
        classes[slots[slot].cls].free.insert(slot);
    llvm::erase_if(owners, [&](const std::pair<int64_t, int64_t> &o) { return o.second < at; });
    size_t cls = classOf(rows, cols);
    int64_t slot;
    if (classes[cls].free.empty()) {
      slot = slots.size();
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(&op->getParentOfType<gpu::GPUFuncOp>().getBody().front());
      auto placeholder = UnrealizedConversionCastOp::create(b, op->getLoc(),
                                                            TypeRange{LLVM::LLVMPointerType::get(b.getContext())},
                                                            ValueRange{});
      slots.push_back({cls, placeholder});
    } else {
      slot = *classes[cls].free.begin();
      classes[cls].free.erase(classes[cls].free.begin());
    }
    owners.push_back({slot, liveness.lastRead(op)});
    LoopBuilder l(b, op->getLoc());
    Value stride = l.add(cols, l.idx(kRowPad));
    Value base = wrapPointer(b, op->getLoc(), slots[slot].pointer.getResult(0), l.mul(rows, stride), b.getF32Type());
    int64_t dyn = ShapedType::kDynamic;
    auto type = MemRefType::get({dyn, dyn}, b.getF32Type(), StridedLayoutAttr::get(b.getContext(), dyn, {dyn, 1}));
    return memref::ReinterpretCastOp::create(b, op->getLoc(), type, base, OpFoldResult(l.idx(0)),
                                             ArrayRef<OpFoldResult>{rows, cols},
                                             ArrayRef<OpFoldResult>{stride, b.getIndexAttr(1)});
  }
  /// Element i = r cols + c of a thread goes to i + threads: (r, c) advance by (threads / cols, threads % cols)
  /// with one carry, so only the first element of each thread divides.
  void parallel2D(LoopBuilder &l, Value rows, Value cols, function_ref<void(Value, Value)> body) override {
    OpBuilder &b = l.builder();
    Location loc = l.location();
    auto [r0, c0] = divRem(l, tid, cols);
    auto [dr, dc] = divRem(l, threads, cols);
    auto loop = scf::ForOp::create(b, loc, tid, l.mul(rows, cols), threads, ValueRange{r0, c0});
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(loop.getBody());
      Value r = loop.getRegionIterArgs()[0], c = loop.getRegionIterArgs()[1];
      body(r, c);
      Value nextC = l.add(c, dc), nextR = l.add(r, dr);
      Value carry = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, nextC, cols);
      scf::YieldOp::create(b, loc,
                           ValueRange{l.select(carry, l.add(nextR, l.idx(1)), nextR),
                                      l.select(carry, l.sub(nextC, cols), nextC)});
    }
    gpu::BarrierOp::create(b, loc);
  }
  void parallel1D(LoopBuilder &l, Value n, function_ref<void(Value)> body) override { strided(l, n, body); }
  void accumulate(LoopBuilder &l, Value value, Value buffer, ValueRange indices) override {
    memref::AtomicRMWOp::create(l.builder(), l.location(), arith::AtomicRMWKind::addf, value, buffer, indices);
  }
  bool product(LoopBuilder &l, Value rows, Value cols, Value inner, function_ref<Value(Value, Value)> lhs,
               function_ref<Value(Value, Value)> rhs, function_ref<void(Value, Value, Value)> store) override;
  /// Each thread sums its strided share, the warp adds its lanes (butterfly shuffles), lane 0 adds the result.
  void blockSum(LoopBuilder &l, Value n, function_ref<Value(Value)> term, function_ref<void(Value)> add) override {
    OpBuilder &b = l.builder();
    Location loc = l.location();
    auto loop = scf::ForOp::create(b, loc, tid, n, threads, ValueRange{l.f32(0.0f)});
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(loop.getBody());
      scf::YieldOp::create(b, loc, l.fadd(loop.getRegionIterArgs()[0], term(loop.getInductionVar())));
    }
    Value sum = loop.getResult(0);
    for (int32_t offset = 16; offset > 0; offset /= 2)
      sum = l.fadd(sum, gpu::ShuffleOp::create(b, loc, sum, offset, 32, gpu::ShuffleMode::XOR).getShuffleResult());
    Value lane = arith::RemUIOp::create(b, loc, tid, l.idx(32));
    l.ifThenElse(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, lane, l.idx(0)), [&] { add(sum); });
    gpu::BarrierOp::create(b, loc);
  }

  /// Lays the slots out (see the class comment) and returns their sizes in floats, in layout order, as C++
  /// expressions of the launch's K, V and Z (value slices) for the launcher; fails where a slot's shape is
  /// not known at kernel entry.
  FailureOr<SmallVector<std::string>> placeSlots(gpu::GPUFuncOp kernel, Value scratch, Value K, Value V);

private:
  struct Slot {
    size_t cls;
    UnrealizedConversionCastOp pointer;
  };

  size_t classOf(Value rows, Value cols) {
    auto dim = [](Value v) {
      if (std::optional<int64_t> c = getConstantIntValue(v))
        return SlotDim{c, Value()};
      return SlotDim{std::nullopt, v};
    };
    SlotDim r = dim(rows), c = dim(cols);
    for (auto [i, cls] : llvm::enumerate(classes))
      if (cls.rows == r && cls.cols == c)
        return i;
    classes.push_back({r, c, {}});
    return classes.size() - 1;
  }

  /// x / y and x % y in 32 bits (a tile has far fewer than 2^31 elements): 64-bit division is a long
  /// software sequence on the GPU, and every element of a 2-D tile loop does one.
  static std::pair<Value, Value> divRem(LoopBuilder &l, Value x, Value y) {
    OpBuilder &b = l.builder();
    Location loc = l.location();
    auto narrow = [&](Value v) { return arith::IndexCastUIOp::create(b, loc, b.getI32Type(), v).getResult(); };
    auto widen = [&](Value v) { return arith::IndexCastUIOp::create(b, loc, b.getIndexType(), v).getResult(); };
    Value x32 = narrow(x), y32 = narrow(y);
    return {widen(arith::DivUIOp::create(b, loc, x32, y32)), widen(arith::RemUIOp::create(b, loc, x32, y32))};
  }
  void strided(LoopBuilder &l, Value n, function_ref<void(Value)> body) {
    auto loop = scf::ForOp::create(l.builder(), l.location(), tid, n, threads);
    {
      OpBuilder::InsertionGuard guard(l.builder());
      l.builder().setInsertionPointToStart(loop.getBody());
      body(loop.getInductionVar());
    }
    gpu::BarrierOp::create(l.builder(), l.location());
  }

  TileLiveness liveness;
  Value tid, threads;
  SmallVector<SlotClass> classes;
  SmallVector<Slot> slots;
  /// (slot, index of its tile's last read) of the slots in use; the lowest free slot of a shape is taken first.
  SmallVector<std::pair<int64_t, int64_t>> owners;
};

/// `v` (an index computed at kernel entry from the launch sizes, the kernel arguments K and V) as a C++
/// expression of K, V and Z, the value slices (gridDim.z); block 0's value where it depends on the block.
/// Empty if `v` is anything else.
std::string launchExpression(Value v, Value K, Value V) {
  if (std::optional<int64_t> c = getConstantIntValue(v))
    return std::to_string(*c);
  if (v == K)
    return "K";
  if (v == V)
    return "V";
  Operation *op = v.getDefiningOp();
  if (!op)
    return "";
  if (auto dim = dyn_cast<gpu::GridDimOp>(op))
    return dim.getDimension() == gpu::Dimension::z ? "Z" : "";
  if (isa<gpu::BlockIdOp>(op))
    return "0";
  if (isa<arith::IndexCastOp, arith::IndexCastUIOp, arith::ExtSIOp, arith::ExtUIOp, arith::TruncIOp>(op))
    return launchExpression(op->getOperand(0), K, V);
  if (op->getNumOperands() != 2)
    return "";
  std::string x = launchExpression(op->getOperand(0), K, V), y = launchExpression(op->getOperand(1), K, V);
  if (x.empty() || y.empty())
    return "";
  auto infix = [&](const char *o) { return "(" + x + " " + o + " " + y + ")"; };
  auto call = [&](const char *f) { return std::string(f) + "(" + x + ", " + y + ")"; };
  return llvm::TypeSwitch<Operation *, std::string>(op)
      .Case<arith::AddIOp>([&](auto) { return infix("+"); })
      .Case<arith::SubIOp>([&](auto) { return infix("-"); })
      .Case<arith::MulIOp>([&](auto) { return infix("*"); })
      .Case<arith::DivUIOp, arith::DivSIOp>([&](auto) { return infix("/"); })
      .Case<arith::CeilDivSIOp, arith::CeilDivUIOp>([&](auto) { return "((" + x + " + " + y + " - 1) / " + y + ")"; })
      .Case<arith::MinSIOp, arith::MinUIOp>([&](auto) { return call("std::min<int64_t>"); })
      .Case<arith::MaxSIOp, arith::MaxUIOp>([&](auto) { return call("std::max<int64_t>"); })
      .Default([](Operation *) { return std::string(); });
}

FailureOr<SmallVector<std::string>> GpuStrategy::placeSlots(gpu::GPUFuncOp kernel, Value scratch, Value K,
                                                            Value V) {
  Block &entry = kernel.getBody().front();
  Location loc = kernel.getLoc();
  // The layout goes after the last entry-level op that defines a slot extent, and must come before every use.
  Operation *after = nullptr;
  for (const SlotClass &cls : classes)
    for (const SlotDim &d : {cls.rows, cls.cols}) {
      if (d.constant || isa<BlockArgument>(d.value))
        continue;
      Operation *def = d.value.getDefiningOp();
      if (def->getBlock() != &entry)
        return kernel.emitError("linac-tile-to-gpu: a tile extent is not computed at kernel entry"), failure();
      if (!after || after->isBeforeInBlock(def))
        after = def;
    }
  OpBuilder b(kernel.getContext());
  if (after)
    b.setInsertionPointAfter(after);
  else
    b.setInsertionPoint(&entry, std::find_if(entry.begin(), entry.end(), [](Operation &op) {
                          return !isa<UnrealizedConversionCastOp>(op);
                        }));
  for (const Slot &s : slots)
    for (Operation *user : s.pointer->getUsers()) {
      Operation *inEntry = entry.findAncestorOpInBlock(*user);
      if (inEntry && &*b.getInsertionPoint() != inEntry && inEntry->isBeforeInBlock(&*b.getInsertionPoint()))
        return kernel.emitError("linac-tile-to-gpu: a tile is used before its extents are known"), failure();
    }

  LoopBuilder l(b, loc);
  MLIRContext *ctx = kernel.getContext();
  Type ptrTy = LLVM::LLVMPointerType::get(ctx), i64 = b.getI64Type(), f32 = b.getF32Type();
  // Every block lays its slots out for block 0's extents (the largest: a last value slice may be narrower),
  // so the blocks' global regions have one stride, the one the launcher allocates.
  IRMapping blockZero;
  kernel.walk([&](gpu::BlockIdOp id) { blockZero.map(id.getResult(), l.idx(0)); });
  std::function<Value(Value)> atBlockZero = [&](Value v) -> Value {
    if (Value known = blockZero.lookupOrNull(v))
      return known;
    Operation *def = v.getDefiningOp();
    if (!def || def->getNumRegions() || llvm::none_of(def->getOperands(), [&](Value o) { return atBlockZero(o) != o; }))
      return v;
    Value mapped = b.clone(*def, blockZero)->getResult(cast<OpResult>(v).getResultNumber());
    blockZero.map(v, mapped);
    return mapped;
  };
  auto dimValue = [&](const SlotDim &d) { return d.constant ? l.idx(*d.constant) : atBlockZero(d.value); };
  SmallVector<size_t> order(slots.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t x, size_t y) { return classes[slots[x].cls].rank() < classes[slots[y].cls].rank(); });
  SmallVector<Value> sizes;
  SmallVector<std::string> expressions;
  for (size_t s : order) {
    const SlotClass &cls = classes[slots[s].cls];
    sizes.push_back(l.mul(dimValue(cls.rows), l.add(dimValue(cls.cols), l.idx(kRowPad))));
    std::string rows = launchExpression(dimValue(cls.rows), K, V), cols = launchExpression(dimValue(cls.cols), K, V);
    if (rows.empty() || cols.empty())
      return kernel.emitError("linac-tile-to-gpu: a tile extent is not a function of the launch sizes"), failure();
    expressions.push_back(rows + " * (" + cols + " + " + std::to_string(kRowPad) + ")");
  }

  // The shared memory of the block, as a generic pointer.
  auto module = kernel->getParentOfType<gpu::GPUModuleOp>();
  auto global = module.lookupSymbol<LLVM::GlobalOp>("linac_tile_smem");
  if (!global) {
    OpBuilder top(module.getBodyRegion());
    global = LLVM::GlobalOp::create(top, loc, LLVM::LLVMArrayType::get(b.getI8Type(), 0), /*isConstant=*/false,
                                    LLVM::Linkage::External, "linac_tile_smem", Attribute(), /*alignment=*/16,
                                    /*addrSpace=*/3);
  }
  Value smem = LLVM::AddrSpaceCastOp::create(b, loc, ptrTy, LLVM::AddressOfOp::create(b, loc, global));
  // A fixed-size kernel (linac.static_dims) assumes the most shared memory a block may have on sm_90, so that
  // the placement folds to constants; the launcher gives it exactly what that placement takes.
  Value capacity;
  if (kernel->hasAttr("linac.static_dims")) {
    capacity = l.idx(kStaticSharedBytes / 4);
  } else {
    Value bytes = NVVM::DynamicSmemSize::create(b, loc, b.getI32Type());
    capacity = arith::DivUIOp::create(b, loc, arith::IndexCastUIOp::create(b, loc, b.getIndexType(), bytes), l.idx(4));
  }
  // The block's region of the global scratch holds every slot (those in shared memory leave theirs unused).
  Value total = l.idx(0);
  for (Value size : sizes)
    total = l.add(total, size);
  auto id = [&](gpu::Dimension d) { return gpu::BlockIdOp::create(b, loc, d).getResult(); };
  auto dim = [&](gpu::Dimension d) { return gpu::GridDimOp::create(b, loc, d).getResult(); };
  Value block = l.add(l.mul(l.add(l.mul(id(gpu::Dimension::z), dim(gpu::Dimension::y)), id(gpu::Dimension::y)),
                            dim(gpu::Dimension::x)),
                      id(gpu::Dimension::x));
  auto offsetPointer = [&](Value base, Value floats) {
    Value offset = arith::IndexCastOp::create(b, loc, i64, floats);
    return LLVM::GEPOp::create(b, loc, ptrTy, f32, base, ValueRange{offset}).getResult();
  };
  Value global0 = offsetPointer(scratch, l.mul(block, total));
  Value inShared = l.idx(0), inGlobal = l.idx(0);
  for (auto [s, size] : llvm::zip(order, sizes)) {
    Value end = l.add(inShared, size);
    Value fits = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ule, end, capacity);
    Value pointer = LLVM::SelectOp::create(b, loc, fits, offsetPointer(smem, inShared), offsetPointer(global0, inGlobal));
    slots[s].pointer.getResult(0).replaceAllUsesWith(pointer);
    slots[s].pointer.erase();
    inShared = arith::SelectOp::create(b, loc, fits, end, inShared);
    inGlobal = arith::SelectOp::create(b, loc, fits, inGlobal, l.add(inGlobal, size));
  }
  return expressions;
}

/// Tensor cores, mma.sync m16n8k8 on tf32, with fp32 accuracy: each operand x splits into a tf32 part
/// hi = x with its low 13 mantissa bits cleared and the rest lo = x - hi (exact), and
/// x y ~ hi_x hi_y + hi_x lo_y + lo_x hi_y, dropping only lo_x lo_y (about 2^-22 relative). Each warp takes
/// 16 x 8 output fragments in turn; operand elements past the edges are read clamped and replaced by zero.
/// Fragment layouts (PTX ISA, mma.m16n8k8 .tf32), with g = lane / 4 and t = lane % 4:
///   A (16 x 8):  a0 (g, t)  a1 (g + 8, t)  a2 (g, t + 4)  a3 (g + 8, t + 4)
///   B (8 x 8):   b0 (t, g)  b1 (t + 4, g)
///   C (16 x 8):  c0 (g, 2t)  c1 (g, 2t + 1)  c2 (g + 8, 2t)  c3 (g + 8, 2t + 1)
bool GpuStrategy::product(LoopBuilder &l, Value rows, Value cols, Value inner, function_ref<Value(Value, Value)> lhs,
                          function_ref<Value(Value, Value)> rhs, function_ref<void(Value, Value, Value)> store) {
  OpBuilder &b = l.builder();
  Location loc = l.location();
  MLIRContext *ctx = b.getContext();
  Type f32 = b.getF32Type(), i32 = b.getI32Type();
  auto div = [&](Value x, int64_t d) { return divRem(l, x, l.idx(d)).first; };
  auto rem = [&](Value x, int64_t d) { return divRem(l, x, l.idx(d)).second; };
  auto ceilDiv = [&](Value x, int64_t d) { return div(l.add(x, l.idx(d - 1)), d); };
  Value lane = rem(tid, 32), warp = div(tid, 32), warps = div(threads, 32);
  Value g = div(lane, 4), t = rem(lane, 4);
  Value tilesN = ceilDiv(cols, 8), tiles = l.mul(ceilDiv(rows, 16), tilesN);
  Value last = l.idx(-1);
  auto inRange = [&](Value i, Value n) { return l.lt(i, n); };
  auto clamp = [&](Value i, Value n) { return l.minIndex(i, l.add(n, last)); };
  auto both = [&](Value p, Value q) { return arith::AndIOp::create(b, loc, p, q).getResult(); };
  // Element (i, k) of an operand, zero outside [0, n) x [0, m).
  auto element = [&](function_ref<Value(Value, Value)> at, Value i, Value k, Value n, Value m) {
    Value v = at(clamp(i, n), clamp(k, m));
    return l.select(both(inRange(i, n), inRange(k, m)), v, l.f32(0.0f));
  };
  auto split = [&](Value x) -> std::pair<Value, Value> {
    Value bits = arith::BitcastOp::create(b, loc, i32, x);
    Value hiBits = arith::AndIOp::create(b, loc, bits, arith::ConstantIntOp::create(b, loc, i32, int64_t(0xFFFFE000)));
    Value hi = arith::BitcastOp::create(b, loc, f32, hiBits);
    Value lo = arith::BitcastOp::create(b, loc, i32, l.fsub(x, hi));
    return {hiBits, lo};
  };
  Type accType = LLVM::LLVMStructType::getLiteral(ctx, {f32, f32, f32, f32});
  auto mma = [&](ValueRange a, ValueRange bb, ValueRange c) {
    std::array<NVVM::MMATypes, 2> types = {NVVM::MMATypes::tf32, NVVM::MMATypes::tf32};
    std::array<NVVM::MMALayout, 2> layouts = {NVVM::MMALayout::row, NVVM::MMALayout::col};
    OperationState state(loc, NVVM::MmaOp::getOperationName());
    NVVM::MmaOp::build(b, state, accType, a, bb, c, {16, 8, 8}, std::nullopt, std::nullopt, types, layouts);
    Value d = b.create(state)->getResult(0);
    SmallVector<Value> out;
    for (int64_t i = 0; i < 4; ++i)
      out.push_back(LLVM::ExtractValueOp::create(b, loc, d, ArrayRef<int64_t>{i}));
    return out;
  };

  auto fragments = scf::ForOp::create(b, loc, warp, tiles, warps);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(fragments.getBody());
    Value f = fragments.getInductionVar();
    auto [fi, fj] = divRem(l, f, tilesN);
    Value i0 = l.mul(fi, l.idx(16)), j0 = l.mul(fj, l.idx(8));
    Value zero = l.f32(0.0f);
    // The k steps of the fragment; `guarded` reads clamped and zeroes what lies past an edge. Interior
    // fragments (whole 16 x 8 output, inner a multiple of 8) take the unguarded loop.
    auto emitSteps = [&](bool guarded) {
      auto steps = scf::ForOp::create(b, loc, l.idx(0), inner, l.idx(8), ValueRange{zero, zero, zero, zero});
      OpBuilder::InsertionGuard inside(b);
      b.setInsertionPointToStart(steps.getBody());
      Value k0 = steps.getInductionVar();
      Value r0 = l.add(i0, g), r1 = l.add(r0, l.idx(8)), c0 = l.add(k0, t), c1 = l.add(c0, l.idx(4));
      Value col = l.add(j0, g);
      auto read = [&](function_ref<Value(Value, Value)> at, Value i, Value k, Value n, Value m) {
        return guarded ? element(at, i, k, n, m) : at(i, k);
      };
      SmallVector<Value> aHi, aLo, bHi, bLo;
      for (auto [r, c] : {std::pair{r0, c0}, std::pair{r1, c0}, std::pair{r0, c1}, std::pair{r1, c1}}) {
        auto [hi, lo] = split(read(lhs, r, c, rows, inner));
        aHi.push_back(hi);
        aLo.push_back(lo);
      }
      for (Value k : {c0, c1}) {
        auto [hi, lo] = split(read(rhs, k, col, inner, cols));
        bHi.push_back(hi);
        bLo.push_back(lo);
      }
      SmallVector<Value> acc(steps.getRegionIterArgs());
      acc = mma(aLo, bHi, acc);
      acc = mma(aHi, bLo, acc);
      acc = mma(aHi, bHi, acc);
      scf::YieldOp::create(b, loc, acc);
      return steps;
    };
    Value interior = both(both(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sle, l.add(i0, l.idx(16)), rows),
                               arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sle, l.add(j0, l.idx(8)), cols)),
                          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, rem(inner, 8), l.idx(0)));
    SmallVector<Type> accTypes(4, f32);
    auto branches = scf::IfOp::create(b, loc, accTypes, interior, /*withElseRegion=*/true);
    for (bool guarded : {false, true}) {
      OpBuilder::InsertionGuard inside(b);
      b.setInsertionPointToStart(guarded ? branches.elseBlock() : branches.thenBlock());
      scf::YieldOp::create(b, loc, emitSteps(guarded).getResults());
    }
    auto steps = branches;
    Value r0 = l.add(i0, g), r1 = l.add(r0, l.idx(8));
    Value c0 = l.add(j0, l.mul(t, l.idx(2))), c1 = l.add(c0, l.idx(1));
    std::pair<Value, Value> places[4] = {{r0, c0}, {r0, c1}, {r1, c0}, {r1, c1}};
    for (int64_t e = 0; e < 4; ++e) {
      auto [r, c] = places[e];
      l.ifThenElse(both(inRange(r, rows), inRange(c, cols)), [&] { store(r, c, steps.getResult(e)); });
    }
  }
  gpu::BarrierOp::create(b, loc);
  return true;
}

struct TileToGpuPass : linac::impl::LinacTileToGpuBase<TileToGpuPass> {
  void runOnOperation() override {
    getOperation().walk([&](gpu::GPUFuncOp kernel) {
      auto scratchArg = kernel->getAttrOfType<IntegerAttr>("linac.tile_scratch_arg");
      if (!scratchArg || !kernel->getAttrOfType<IntegerAttr>("linac.chunk_size"))
        return;
      Block &entry = kernel.getBody().front();
      OpBuilder b(&entry, entry.begin());
      Location loc = kernel.getLoc();
      unsigned sizes = scratchArg.getInt() + 1;
      Value K = entry.getArgument(sizes + 3), V = entry.getArgument(sizes + 4);
      Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
      Value threads = gpu::BlockDimOp::create(b, loc, gpu::Dimension::x);
      GpuStrategy strategy(kernel, tid, threads);
      if (failed(lowerTiles(kernel, strategy)))
        return signalPassFailure();
      Value scratch = entry.getArgument(scratchArg.getInt());
      FailureOr<SmallVector<std::string>> slotSizes = strategy.placeSlots(kernel, scratch, K, V);
      if (failed(slotSizes))
        return signalPassFailure();
      kernel->setAttr("linac.tile_slots", b.getI64IntegerAttr(slotSizes->size()));
      SmallVector<Attribute> exprs;
      for (const std::string &e : *slotSizes)
        exprs.push_back(b.getStringAttr(e));
      kernel->setAttr("linac.tile_slot_sizes", b.getArrayAttr(exprs));
    });
  }
};

} // namespace
