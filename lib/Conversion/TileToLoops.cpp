// The tile lowering shared by both back ends (each tile op's loops, written
// against a TileLoopStrategy) and linac-tile-to-loops, the CPU back end: each
// tile becomes a heap buffer (allocated at its definition, freed at the end of
// its block) filled by a loop nest. The GPU strategy is in TileToGpu.cpp.

#include "dialect/Passes.h"
#include "lib/Conversion/LoopBuilder.h"
#include "lib/Conversion/TileLowering.h"
#include "lib/Conversion/EntryPoint.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <functional>

namespace linac {
#define GEN_PASS_DEF_LINACTILETOLOOPS
#include "dialect/Passes.h.inc"
} // namespace linac

using namespace mlir;
using namespace linac;

namespace {

/// A tile's storage, or for a fused tile (see isFusedTile) the code that computes element (r, c) where a reader
/// needs it.
struct Buffer {
  Value memref, rows, cols;
  std::function<Value(Value, Value)> element;
};

} // namespace

bool linac::isTileOp(Operation *op) {
  if (isa<TileStoreOp>(op))
    return true;
  return op->getNumResults() == 1 && isTileType(op->getResult(0).getType());
}

bool linac::isElementwiseTile(Operation *op) {
  return isTileOp(op) && !isa<TileStoreOp>(op) && op->getDialect() &&
         op->getDialect()->getNamespace() != "linac";
}

TileLoadOp linac::loadedTile(Value tile) {
  if (auto mask = tile.getDefiningOp<TileMaskRowsOp>())
    tile = mask.getSource();
  return tile.getDefiningOp<TileLoadOp>();
}

/// The constant a fill tile holds, if `tile` is one of a constant.
static std::optional<double> fillConstant(Value tile) {
  auto fill = tile.getDefiningOp<TileFillOp>();
  FloatAttr value;
  if (!fill || !matchPattern(fill.getValue(), m_Constant(&value)))
    return std::nullopt;
  return value.getValueAsDouble();
}

int64_t linac::simplifyTiles(Operation *kernel, bool broadcasts) {
  MLIRContext *ctx = kernel->getContext();
  OpBuilder b(ctx);
  Type tileType = getTileType(ctx);
  int64_t rewrites = 0;
  for (bool changed = true; changed;) {
    changed = false;
    SmallVector<Operation *> ops;
    kernel->walk([&](Operation *op) {
      if (isTileOp(op) && op->getNumResults() == 1 && !isa<TileLoadOp, TileFillOp>(op))
        ops.push_back(op);
    });
    for (Operation *op : ops) {
      b.setInsertionPoint(op);
      Location loc = op->getLoc();
      Value replacement;
      auto fill = [&](double c, Value rows, Value cols) {
        Value v = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(float(c)));
        return TileFillOp::create(b, loc, tileType, v, rows, cols).getResult();
      };
      bool unary = isElementwiseTile(op) && op->getNumOperands() == 1 && isMemoryEffectFree(op);
      if (auto bc = dyn_cast<TileBroadcastOp>(op)) {
        if (auto c = fillConstant(bc.getSource()))
          replacement = fill(*c, bc.getRows(), bc.getCols());
      } else if (auto tr = dyn_cast<TileTransposeOp>(op)) {
        if (auto c = fillConstant(tr.getSource())) {
          auto f = tr.getSource().getDefiningOp<TileFillOp>();
          replacement = fill(*c, f.getCols(), f.getRows());
        }
      } else if (auto row = dyn_cast<TileRowOp>(op)) {
        if (auto c = fillConstant(row.getSource()))
          replacement = fill(*c, arith::ConstantIndexOp::create(b, loc, 1),
                             row.getSource().getDefiningOp<TileFillOp>().getCols());
      } else if (isa<TileCumsumOp, TileMaskRowsOp>(op)) {
        if (fillConstant(op->getOperand(0)) == 0.0)
          replacement = op->getOperand(0);
      } else if (broadcasts && unary && op->getOperand(0).getDefiningOp<TileBroadcastOp>()) {
        auto bc = op->getOperand(0).getDefiningOp<TileBroadcastOp>();
        Operation *applied = b.clone(*op);
        applied->setOperand(0, bc.getSource());
        replacement = TileBroadcastOp::create(b, loc, tileType, applied->getResult(0), bc.getRows(), bc.getCols());
      } else if (unary && isa<math::ExpOp, math::Exp2Op, arith::NegFOp>(op)) {
        auto f = op->getOperand(0).getDefiningOp<TileFillOp>();
        std::optional<double> c = fillConstant(op->getOperand(0));
        if (c && isa<arith::NegFOp>(op))
          replacement = fill(-*c, f.getRows(), f.getCols());
        else if (c == 0.0)
          replacement = fill(1.0, f.getRows(), f.getCols());
      } else if (auto gd = dyn_cast<TileGatedDotOp>(op)) {
        if (fillConstant(gd.getGx()) == 0.0 && fillConstant(gd.getGy()) == 0.0) {
          auto mm = TileMatmulOp::create(b, loc, tileType, gd.getX(), gd.getY(), false, true);
          replacement = TileTrilOp::create(b, loc, tileType, mm, gd.getMask() == MaskKind::StrictLower);
        }
      } else if (auto gm = dyn_cast<TileGatedMatmulOp>(op)) {
        if (fillConstant(gm.getGx()) == 0.0 && fillConstant(gm.getGy()) == 0.0) {
          Value kept = TileTrilOp::create(b, loc, tileType, gm.getPairs(), gm.getMask() == MaskKind::StrictLower);
          replacement = TileMatmulOp::create(b, loc, tileType, kept, gm.getY(), gm.getTranspose(), false);
        }
      } else if (isa<arith::MulFOp>(op)) {
        for (unsigned i = 0; i < 2 && !replacement; ++i)
          if (fillConstant(op->getOperand(i)) == 1.0)
            replacement = op->getOperand(1 - i);
      } else if (isa<arith::SubFOp>(op)) {
        if (fillConstant(op->getOperand(1)) == 0.0)
          replacement = op->getOperand(0);
      }
      if (!replacement)
        continue;
      op->getResult(0).replaceAllUsesWith(replacement);
      op->erase();
      ++rewrites;
      changed = true;
    }
    // Ops left without users (the broadcasts and fills the rewrites bypassed).
    for (bool erased = true; erased;) {
      erased = false;
      SmallVector<Operation *> dead;
      kernel->walk([&](Operation *op) {
        if ((isTileOp(op) || isa<arith::ConstantOp>(op)) && op->getNumResults() == 1 && op->use_empty() &&
            isMemoryEffectFree(op))
          dead.push_back(op);
      });
      for (Operation *op : dead)
        op->erase();
      erased = !dead.empty();
    }
  }
  if (rewrites) {
    auto before = kernel->getAttrOfType<IntegerAttr>("linac.tiles_simplified");
    kernel->setAttr("linac.tiles_simplified", b.getI64IntegerAttr(rewrites + (before ? before.getInt() : 0)));
  }
  return rewrites;
}

bool linac::isFusedTile(Operation *op) {
  if (!isTileOp(op) || isa<TileStoreOp>(op))
    return false;
  Block *home = op->getBlock();
  for (Operation *user : op->getUsers())
    if (!home->findAncestorOpInBlock(*user))
      return false;
  if (isa<TileFillOp, TileBroadcastOp, TileTransposeOp, TileMaskRowsOp, TileTrilOp, TileScatterRowOp>(op))
    return true;
  // A load copied by the store right after it (an initial state into the running state, a state out).
  if (auto load = dyn_cast<TileLoadOp>(op)) {
    // Into another buffer: fused, the copy's reads and writes interleave across threads.
    auto store = op->hasOneUse() ? dyn_cast<TileStoreOp>(*op->getUsers().begin()) : TileStoreOp();
    if (!store || store.getBuffer() == load.getBuffer())
      return false;
    // Nothing between but index arithmetic.
    Operation *next = op->getNextNode();
    while (next && next != store && isPure(next) && !isTileOp(next))
      next = next->getNextNode();
    return next == store;
  }
  if (!isElementwiseTile(op) || !op->hasOneUse())
    return false;
  Operation *user = *op->getUsers().begin();
  return isElementwiseTile(user) || isa<TileStoreOp, TileMaskRowsOp, TileTrilOp, TileReduceOp, TileRowSumOp>(user);
}

bool linac::sameIndexValue(Value a, Value b, int depth) {
  if (a == b)
    return true;
  std::optional<int64_t> x = getConstantIntValue(a), y = getConstantIntValue(b);
  if (x || y)
    return x && y && *x == *y;
  Operation *da = a.getDefiningOp(), *db = b.getDefiningOp();
  if (!da || !db || depth == 0 || da->getName() != db->getName() || !isPure(da) ||
      da->getAttrDictionary() != db->getAttrDictionary() || da->getNumOperands() != db->getNumOperands() ||
      cast<OpResult>(a).getResultNumber() != cast<OpResult>(b).getResultNumber())
    return false;
  for (auto [p, q] : llvm::zip(da->getOperands(), db->getOperands()))
    if (!sameIndexValue(p, q, depth - 1))
      return false;
  return true;
}

bool linac::readsBuffer(Value tile, Value buffer) {
  Operation *def = tile.getDefiningOp();
  if (auto load = dyn_cast_or_null<TileLoadOp>(def))
    return load.getBuffer() == buffer;
  return def && isFusedTile(def) && llvm::any_of(def->getOperands(), [&](Value operand) {
           return isTileType(operand.getType()) && readsBuffer(operand, buffer);
         });
}

DenseMap<Operation *, Operation *> TileLoopStrategy::epilogues(Operation *root) { return productEpilogues(root); }

DenseMap<Operation *, Operation *> linac::productEpilogues(Operation *root) {
  DenseMap<Operation *, Operation *> epilogues;
  root->walk([&](TileMatmulOp matmul) {
    Operation *cur = matmul;
    Block *home = matmul->getBlock();
    TileStoreOp store;
    while (cur->hasOneUse()) {
      Operation *user = *cur->getUsers().begin();
      if (user->getBlock() != home)
        return;
      if (auto s = dyn_cast<TileStoreOp>(user)) {
        if (s.getTile() == cur->getResult(0))
          store = s;
        break;
      }
      if (!isElementwiseTile(user))
        return;
      cur = user;
    }
    // Plain stores whose row count is fixed outside the product's block (a state update, not a chunk's output
    // with its valid rows nor an accumulated gradient): with those too, RetNet's forward went from 1.9 to
    // 2.5 ms on the H200 (bench/NOTES.md v5).
    // An accumulating store takes the product itself (splitProductSums' S += A B), no chain.
    if (!store || (store.getAccumulate() && store.getTile() != matmul->getResult(0)))
      return;
    Operation *validDef = store.getValid().getDefiningOp();
    if (validDef && !getConstantIntValue(store.getValid()) && home->findAncestorOpInBlock(*validDef))
      return;
    Value buffer = store.getBuffer();
    // The epilogue reads the chain's other tiles in the product's output order (on the GPU a fragment's
    // scattered elements), so only chains over the stored place itself (S' = d S + A B, the state read in
    // place) and broadcasts or fills qualify: with another materialized tile in the chain (the backward's
    // dS' = dS + A B + C D) every backward on the H200 was 8-31% slower (bench/NOTES.md v6).
    SmallVector<Value> leaves{store.getTile()};
    while (!leaves.empty()) {
      Value v = leaves.pop_back_val();
      Operation *def = v.getDefiningOp();
      if (!def || def == matmul || isa<TileFillOp, TileBroadcastOp>(def))
        continue;
      if (isElementwiseTile(def)) {
        for (Value operand : def->getOperands())
          if (isTileType(operand.getType()))
            leaves.push_back(operand);
        continue;
      }
      auto load = dyn_cast<TileLoadOp>(def);
      if (!load || load.getBuffer() != buffer || !sameIndexValue(load.getOffset(), store.getOffset()) ||
          !sameIndexValue(load.getStride(), store.getStride()))
        return;
    }
    // Lowered at the store, the product reads its operands there: where an op on the way touches the buffer,
    // only operands that do not read the buffer (through a load or a fused tile's element code) are safe (the
    // accumulating stores of splitProductSums follow the store of the sum's other terms).
    bool safeOperands = !readsBuffer(matmul.getLhs(), buffer) && !readsBuffer(matmul.getRhs(), buffer);
    for (Operation *op = matmul->getNextNode(); op != store; op = op->getNextNode()) {
      bool touches = false;
      op->walk([&](Operation *inner) {
        touches |= llvm::is_contained(inner->getOperands(), buffer);
      });
      if (touches && !(safeOperands && isa<TileStoreOp>(op)))
        return;
    }
    // One product per store: of several feeding one chain (o = A B + C D) the last is lowered at the store.
    for (auto &[product, claimed] : epilogues)
      if (claimed == store) {
        epilogues.erase(product);
        break;
      }
    epilogues[matmul] = store;
  });
  return epilogues;
}

namespace {

class CpuStrategy : public TileLoopStrategy {
public:
  explicit CpuStrategy(bool factorGates) : factorGates(factorGates) {}
  /// Off by default (one exponent per pair is cheaper than the references on a CPU); on, the CPU computes the
  /// GPU's blocked form (products as sum loops), so the numerics tests check it against fp64.
  bool factorsGatedPairs() override { return factorGates; }
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
  /// Blocks of kBlock x kBlock outputs with their sums in registers: each k step loads kBlock lhs and kBlock rhs
  /// elements for kBlock^2 products, where one sum per element loaded two per product. Every sum still adds
  /// its terms in k order from zero, so results are those of one sum loop per element, bit for bit. Edge
  /// blocks read clamped indices and store only the outputs in range.
  bool product(LoopBuilder &l, Value rows, Value cols, Value inner, function_ref<Value(Value, Value)> lhs,
               function_ref<Value(Value, Value)> rhs, function_ref<void(Value, Value, Value)> store) override {
    OpBuilder &b = l.builder();
    Location loc = l.location();
    // A side known to be shorter than kBlock (a column of outputs) takes blocks of its length.
    auto extent = [](Value n) {
      std::optional<int64_t> c = getConstantIntValue(n);
      return c && *c >= 1 && *c < kBlock ? *c : kBlock;
    };
    int64_t br = extent(rows), bc = extent(cols);
    Value one = l.idx(1), lastRow = l.sub(rows, one), lastCol = l.sub(cols, one);
    auto rowLoop = scf::ForOp::create(b, loc, l.idx(0), rows, l.idx(br));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(rowLoop.getBody());
    Value i0 = rowLoop.getInductionVar();
    auto colLoop = scf::ForOp::create(b, loc, l.idx(0), cols, l.idx(bc));
    b.setInsertionPointToStart(colLoop.getBody());
    Value j0 = colLoop.getInductionVar();
    SmallVector<Value> is, js;
    for (int64_t d = 0; d < br; ++d)
      is.push_back(l.add(i0, l.idx(d)));
    for (int64_t d = 0; d < bc; ++d)
      js.push_back(l.add(j0, l.idx(d)));
    SmallVector<Value> zeros(br * bc, l.f32(0.0f));
    auto kLoop = scf::ForOp::create(b, loc, l.idx(0), inner, one, zeros);
    {
      OpBuilder::InsertionGuard inside(b);
      b.setInsertionPointToStart(kLoop.getBody());
      Value k = kLoop.getInductionVar();
      SmallVector<Value> a, c, next;
      for (Value i : is)
        a.push_back(lhs(l.minIndex(i, lastRow), k));
      for (Value j : js)
        c.push_back(rhs(k, l.minIndex(j, lastCol)));
      for (int64_t r = 0; r < br; ++r)
        for (int64_t q = 0; q < bc; ++q)
          next.push_back(l.fadd(kLoop.getRegionIterArgs()[r * bc + q], l.fmul(a[r], c[q])));
      scf::YieldOp::create(b, loc, next);
    }
    for (int64_t r = 0; r < br; ++r)
      for (int64_t q = 0; q < bc; ++q)
        l.ifThenElse(arith::AndIOp::create(b, loc, l.lt(is[r], rows), l.lt(js[q], cols)),
                     [&] { store(is[r], js[q], kLoop.getResult(r * bc + q)); });
    return true;
  }

private:
  static constexpr int64_t kBlock = 4;
  bool factorGates;
};

class TileLowering {
public:
  /// Rows per block of a triangular solve (see TileTriSolveOp's lowering).
  static constexpr int64_t kSolveRows = 16;
  /// Rows per block of a factored per-key gated product (factorsGatedPairs): one tensor-core fragment's.
  static constexpr int64_t kGateBlock = 16;
  /// Reductions with at most this many outputs spread each output's terms over all threads.
  static constexpr int64_t kFewOutputs = 16;

  TileLowering(OpBuilder &b, TileLoopStrategy &strategy, Operation *root)
      : b(b), strategy(strategy), epilogues(strategy.epilogues(root)) {
    for (auto [product, store] : epilogues)
      productOfStore[store] = product;
  }

  LogicalResult lower(Operation *op);

private:
  Buffer allocate(Operation *op, Value rows, Value cols);
  Buffer of(Value tile) { return buffers.lookup(tile); }
  Value at(const Buffer &t, Value r, Value c) { return t.element ? t.element(r, c) : lb->load(t.memref, {r, c}); }
  /// Records `op` (isFusedTile) as the element code `element` of a rows x cols tile.
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
  /// The number of kGateBlock-row blocks of a per-key gated product over `rows` pairs when the strategy
  /// factors them (factorsGatedPairs) and the rows are a known multiple of two blocks or more; else 0.
  int64_t gateBlocks(Value rows) {
    std::optional<int64_t> m = getConstantIntValue(rows);
    if (!strategy.factorsGatedPairs() || !m || *m < 2 * kGateBlock || *m % kGateBlock)
      return 0;
    return *m / kGateBlock;
  }
  /// Reference gates for factored pairs: row r (r < blocks - 1) of the result holds, per channel d, the least
  /// gy(j, d) over rows j in [prefix ? 0 : r B, (r + 1) B), B = kGateBlock. A kept pair's exponent
  /// gx_i - gy_j is <= 0, so for pairs (i, j) across blocks with j in those rows gx_i <= R_d <= gy_j, and
  ///   exp(gx_i - gy_j) = exp(gx_i - R_d) exp(R_d - gy_j)
  /// factors into two numbers <= 1 (no overflow whatever the decay; the product of the two has the relative
  /// error of one rounding each). Stored in a slot of the op's own (it lives as long as the op's result).
  Buffer gateReferences(Operation *op, const Buffer &gy, int64_t blocks, bool prefix) {
    LoopBuilder &l = *lb;
    Buffer ref{strategy.allocate(b, op, l.idx(blocks - 1), gy.cols), l.idx(blocks - 1), gy.cols};
    forEach(ref.rows, ref.cols, [&](Value r, Value d) {
      Value end = l.mul(l.add(r, l.idx(1)), l.idx(kGateBlock));
      Value begin = prefix ? l.idx(0) : l.sub(end, l.idx(kGateBlock));
      auto loop = scf::ForOp::create(b, l.location(), begin, end, l.idx(1), ValueRange{at(gy, begin, d)});
      {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(loop.getBody());
        scf::YieldOp::create(b, l.location(), ValueRange{arith::MinimumFOp::create(
                                                   b, l.location(), loop.getRegionIterArgs()[0],
                                                   at(gy, loop.getInductionVar(), d))});
      }
      set(ref, r, d, loop.getResult(0));
    });
    return ref;
  }
  Value expDiff(Value x, Value y) { return math::ExpOp::create(b, lb->location(), lb->fsub(x, y)); }
  static bool isOne(Value v) {
    APInt value;
    return matchPattern(v, m_ConstantInt(&value)) && value == 1;
  }

  /// max(valid - 1, 0) of `load`: the last row it reads.
  Value lastValidRow(TileLoadOp load) {
    return arith::MaxSIOp::create(b, lb->location(), lb->sub(load.getValid(), lb->idx(1)), lb->idx(0));
  }
  /// Element (r, c) of the tile `load` reads: row min(r, lastRow) of its buffer, zero at rows past `valid`.
  Value loadElement(TileLoadOp load, Value lastRow, Value r, Value c) {
    Value row = lb->minIndex(r, lastRow);
    Value at_ = lb->add(load.getOffset(), lb->add(lb->mul(row, load.getStride()), c));
    Value element = lb->load(load.getBuffer(), at_);
    return lb->select(lb->lt(r, load.getValid()), element, lb->f32(0.0f));
  }
  /// out(i, j) = sum_k lhs(i, k) rhs(k, j) of `matmul`, handed to store(i, j, sum).
  void lowerMatmul(TileMatmulOp matmul, function_ref<void(Value, Value, Value)> store);

  OpBuilder &b;
  TileLoopStrategy &strategy;
  std::optional<LoopBuilder> lb;
  DenseMap<Value, Buffer> buffers;
  /// productEpilogues(), the other way round, and the sum a deferred product's element code stands for while
  /// its epilogue runs.
  DenseMap<Operation *, Operation *> epilogues, productOfStore;
  DenseMap<Operation *, Value> productValue;
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
  if (auto load = dyn_cast<TileLoadOp>(op)) {
    // As lower() loads, at the store.
    return fuse(op, load.getRows(), load.getCols(),
                [this, load](Value r, Value c) { return loadElement(load, lastValidRow(load), r, c); });
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
  if (isFusedTile(op))
    return lowerFused(op);

  if (auto load = dyn_cast<TileLoadOp>(op)) {
    // Rows past `valid` read row valid - 1 (a row of the window: a load runs only for a chunk that has a
    // token) and take zero. No branch per element: the loads of a thread's copies can all be in flight.
    if (Value view = strategy.view(b, op)) {
      buffers[load.getResult()] = Buffer{view, load.getRows(), load.getCols()};
      return success();
    }
    Buffer out = allocate(op, load.getRows(), load.getCols());
    Value lastRow = lastValidRow(load);
    forEach(out.rows, out.cols, [&](Value r, Value c) { set(out, r, c, loadElement(load, lastRow, r, c)); });
    return success();
  }
  if (auto store = dyn_cast<TileStoreOp>(op)) {
    Buffer in = of(store.getTile());
    if (Operation *product = productOfStore.lookup(op)) {
      // The product's epilogue: each sum through the elementwise chain into the buffer (or added to it: the
      // product alone), rows below `valid`.
      Value valid = store.getValid();
      std::optional<int64_t> full = getConstantIntValue(valid), rows = getConstantIntValue(in.rows);
      lowerMatmul(cast<TileMatmulOp>(product), [&](Value i, Value j, Value sum) {
        productValue[product] = sum;
        auto write = [&] {
          Value at_ = l.add(store.getOffset(), l.add(l.mul(i, store.getStride()), j));
          if (store.getAccumulate())
            strategy.accumulate(l, at(in, i, j), store.getBuffer(), at_);
          else
            l.store(at(in, i, j), store.getBuffer(), at_);
        };
        if (valid == in.rows || (full && rows && *full >= *rows))
          write();
        else
          l.ifThenElse(l.lt(i, valid), write);
      });
      return success();
    }
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
    Value rows = matmul.getTransposeLhs() ? x.cols : x.rows, cols = matmul.getTransposeRhs() ? y.rows : y.cols;
    if (epilogues.count(op)) {
      // Lowered at its store (productEpilogues); its readers' element code reads the sum at hand there.
      return fuse(op, rows, cols, [this, op](Value, Value) { return productValue.lookup(op); });
    }
    Buffer out = allocate(op, rows, cols);
    lowerMatmul(matmul, [&](Value i, Value j, Value sum) { set(out, i, j, sum); });
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
    // Per-key gates in blocks (factorsGatedPairs): pairs within a block exactly, below the block diagonal the
    // products P[I, 0:I0] = (x e^{gx - R_I})[I] (y e^{R_I - gy})[0:I0]^T for each block row I starting at I0,
    // R_I = min over rows j < I0 of gy (gateReferences).
    int64_t blocks = scalarGates ? 0 : gateBlocks(out.rows);
    Value blockRows = l.idx(kGateBlock);
    Buffer ref;
    if (blocks && sameIndexValue(out.rows, out.cols))
      ref = gateReferences(op, gy, blocks, /*prefix=*/true);
    else
      blocks = 0;
    forEach(out.rows, out.cols, [&](Value i, Value j) {
      Value keep = pairKept(i, j, strict);
      if (blocks) {
        // Below the block diagonal: the products' (written after this pass).
        Value bi = arith::DivUIOp::create(b, op->getLoc(), i, blockRows);
        Value bj = arith::DivUIOp::create(b, op->getLoc(), j, blockRows);
        keep = arith::AndIOp::create(b, op->getLoc(), keep,
                                     arith::CmpIOp::create(b, op->getLoc(), arith::CmpIPredicate::eq, bi, bj));
        Value notBelow = arith::CmpIOp::create(b, op->getLoc(), arith::CmpIPredicate::uge, bj, bi);
        l.ifThenElse(notBelow, [&] {
          l.ifThenElse(
              keep,
              [&] {
                set(out, i, j, l.sumLoop(x.cols, [&](Value d) {
                  return l.fmul(l.fmul(at(x, i, d), at(y, j, d)), expDiff(at(gx, i, d), at(gy, j, d)));
                }));
              },
              [&] { set(out, i, j, l.f32(0.0f)); });
        });
        return;
      }
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
    for (int64_t block = 1; block < blocks; ++block) {
      Value i0 = l.idx(block * kGateBlock), r = l.idx(block - 1);
      auto lhs = [&](Value i, Value d) {
        Value row = l.add(i0, i);
        return l.fmul(at(x, row, d), expDiff(at(gx, row, d), at(ref, r, d)));
      };
      auto rhs = [&](Value d, Value j) { return l.fmul(at(y, j, d), expDiff(at(ref, r, d), at(gy, j, d))); };
      auto store = [&](Value i, Value j, Value sum) { set(out, l.add(i0, i), j, sum); };
      if (!strategy.product(l, blockRows, i0, x.cols, lhs, rhs, store))
        forEach(blockRows, i0, [&](Value i, Value j) {
          store(i, j, l.sumLoop(x.cols, [&](Value d) { return l.fmul(lhs(i, d), rhs(d, j)); }));
        });
    }
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
    // Rows a multiple of the block: every block has kSolveRows rows, and its chain unrolls.
    std::optional<int64_t> knownRows = getConstantIntValue(n);
    bool unrolled = knownRows && *knownRows % kSolveRows == 0;
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
      if (unrolled) {
        // The block's rows of column c in registers: row s of the chain is rowOf(s), and x_s - sum_{t < s}
        // L(s, t) x_t needs no load of a solved value, only the (uniform) entries of L.
        auto rowOf = [&](int64_t s) { return up ? l.sub(b1, l.idx(s + 1)) : l.add(b0, l.idx(s)); };
        forEach(rhs.cols, [&](Value c) {
          SmallVector<Value> rowsAt, x;
          for (int64_t s = 0; s < kSolveRows; ++s) {
            rowsAt.push_back(rowOf(s));
            x.push_back(at(out, rowsAt.back(), c));
          }
          for (int64_t s = 1; s < kSolveRows; ++s) {
            Value recalled = l.f32(0.0f);
            for (int64_t t = 0; t < s; ++t) {
              Value entry = up ? at(lower, rowsAt[t], rowsAt[s]) : at(lower, rowsAt[s], rowsAt[t]);
              recalled = l.fadd(recalled, l.fmul(entry, x[t]));
            }
            x[s] = l.fsub(x[s], recalled);
            set(out, rowsAt[s], c, x[s]);
          }
        });
        return;
      }
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
    // The mask as loop bounds: row i pairs with j in [0, i] (or [0, i)); column j with i in [j, m) (or (j, m)).
    auto pairRange = [&](Value a) -> std::pair<Value, Value> {
      if (transposed)
        return {strict ? l.add(a, l.idx(1)) : a, p.rows};
      return {l.idx(0), strict ? a : l.add(a, l.idx(1))};
    };
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
      Value inner = transposed ? p.rows : p.cols;
      if (strategy.product(l, out.rows, out.cols, inner, lhs, rhs, store))
        return success();
      // One exponent per pair, not per pair and column of y: the gated, masked pairs first, then their product.
      Buffer gated{strategy.allocate(b, op, out.rows, inner), out.rows, inner};
      forEach(out.rows, inner, [&](Value a, Value c) { set(gated, a, c, lhs(a, c)); });
      forEach(out.rows, out.cols, [&](Value a, Value d) {
        auto [lo, hi] = pairRange(a);
        set(out, a, d, l.sumLoop(lo, hi, [&](Value c) { return l.fmul(at(gated, a, c), rhs(c, d)); }));
      });
      return success();
    }
    // Per-key gates: the exponent depends on the column d too. In blocks (factorsGatedPairs) the pairs within
    // a block of rows go here, the pairs across blocks below (gateReferences).
    int64_t blocks = gateBlocks(p.rows);
    if (blocks && !sameIndexValue(p.rows, p.cols))
      blocks = 0;
    Value blockRows = l.idx(kGateBlock);
    forEach(out.rows, out.cols, [&](Value a, Value d) {
      auto [lo, hi] = pairRange(a);
      if (blocks) {
        // Within a's block: [start, a] going down (the block's first row), [a, end) going up.
        Value start = l.mul(arith::DivUIOp::create(b, op->getLoc(), a, blockRows), blockRows);
        if (transposed)
          hi = l.minIndex(hi, l.add(start, blockRows));
        else
          lo = arith::MaxSIOp::create(b, op->getLoc(), lo, start);
      }
      set(out, a, d, l.sumLoop(lo, hi, [&](Value c) {
        Value i = transposed ? c : a, j = transposed ? a : c;
        Value gate = math::ExpOp::create(b, op->getLoc(), l.fsub(at(gx, i, d), at(gy, j, d)));
        return l.fmul(l.fmul(at(p, i, j), at(y, c, d)), gate);
      }));
    });
    if (!blocks)
      return success();
    // Across blocks. Not transposed, block row I (rows from I0) adds
    //   Z[I, d] += e^{gx - R_I}[I, d] * (P[I, 0:I0] (y e^{R_I - gy})[0:I0])[., d],  R_I = min_{j < I0} gy;
    // transposed, block J (rows [J0, J1)) adds
    //   Z[J, d] += e^{R_J - gy}[J, d] * (P[J1:, J]^T (y e^{gx - R_J})[J1:])[., d],  R_J = min_{j in J} gy.
    Buffer ref = gateReferences(op, gy, blocks, /*prefix=*/!transposed);
    Value m = p.rows;
    for (int64_t block = transposed ? 0 : 1; block < (transposed ? blocks - 1 : blocks); ++block) {
      Value r = l.idx(transposed ? block : block - 1);
      Value first = l.idx(block * kGateBlock);
      Value after = l.idx((block + 1) * kGateBlock);
      Value inner = transposed ? l.sub(m, after) : first;
      auto lhs = [&](Value a, Value c) {
        return transposed ? at(p, l.add(after, c), l.add(first, a)) : at(p, l.add(first, a), c);
      };
      auto rhs = [&](Value c, Value d) {
        if (transposed) {
          Value i = l.add(after, c);
          return l.fmul(at(y, i, d), expDiff(at(gx, i, d), at(ref, r, d)));
        }
        return l.fmul(at(y, c, d), expDiff(at(ref, r, d), at(gy, c, d)));
      };
      auto store = [&](Value a, Value d, Value sum) {
        Value row = l.add(first, a);
        Value scale = transposed ? expDiff(at(ref, r, d), at(gy, row, d)) : expDiff(at(gx, row, d), at(ref, r, d));
        set(out, row, d, l.fadd(at(out, row, d), l.fmul(scale, sum)));
      };
      if (!strategy.product(l, blockRows, out.cols, inner, lhs, rhs, store))
        forEach(blockRows, out.cols, [&](Value a, Value d) {
          store(a, d, l.sumLoop(inner, [&](Value c) { return l.fmul(lhs(a, c), rhs(c, d)); }));
        });
    }
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

void TileLowering::lowerMatmul(TileMatmulOp matmul, function_ref<void(Value, Value, Value)> store) {
  LoopBuilder &l = *lb;
  Buffer x = of(matmul.getLhs()), y = of(matmul.getRhs());
  bool tx = matmul.getTransposeLhs(), ty = matmul.getTransposeRhs();
  Value rows = tx ? x.cols : x.rows, inner = tx ? x.rows : x.cols, cols = ty ? y.rows : y.cols;
  auto lhs = [&](Value i, Value k) { return tx ? at(x, k, i) : at(x, i, k); };
  auto rhs = [&](Value k, Value j) { return ty ? at(y, j, k) : at(y, k, j); };
  if (!strategy.product(l, rows, cols, inner, lhs, rhs, store))
    forEach(rows, cols, [&](Value i, Value j) {
      store(i, j, l.sumLoop(inner, [&](Value k) { return l.fmul(lhs(i, k), rhs(k, j)); }));
    });
}

} // namespace

LogicalResult linac::lowerTiles(Operation *root, TileLoopStrategy &strategy) {
  SmallVector<Operation *> tileOps;
  root->walk([&](Operation *op) {
    if (isTileOp(op))
      tileOps.push_back(op);
  });
  OpBuilder builder(root->getContext());
  TileLowering lowering(builder, strategy, root);
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
  using LinacTileToLoopsBase::LinacTileToLoopsBase;
  void runOnOperation() override {
    CpuStrategy cpu(factorGates);
    for (auto fn : getOperation().getOps<func::FuncOp>()) {
      // The GPU's ordering by level (schedule), here so that the CPU numerics tests check that it keeps the
      // program's meaning.
      if (schedule)
        scheduleByLevel(fn, productEpilogues(fn));
      if (failed(lowerTiles(fn, cpu)))
        return signalPassFailure();
    }
  }
};
} // namespace
