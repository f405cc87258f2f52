#include "lib/Transforms/ChunkSplit.h"
#include "lib/Analysis/TileShape.h"

#include "mlir/Transforms/RegionUtils.h"

#include "llvm/Support/ErrorHandling.h"

using namespace mlir;
using namespace linac;

SmallVector<Operation *> linac::captureOps(OpBuilder &b, function_ref<void()> emit) {
  Block *block = b.getInsertionBlock();
  Block::iterator point = b.getInsertionPoint();
  Operation *before = point == block->begin() ? nullptr : &*std::prev(point);
  emit();
  SmallVector<Operation *> ops;
  Block::iterator end = b.getInsertionPoint();
  for (Block::iterator it = before ? std::next(Block::iterator(before)) : block->begin(); it != end; ++it)
    ops.push_back(&*it);
  return ops;
}

static bool isTileOp(Operation *op) { return op->getNumResults() == 1 && isTileType(op->getResult(0).getType()); }

/// Tiles a phase recomputes rather than loads: reading memory or a scalar, or a view of another tile.
static bool isRecomputed(Operation *op) {
  return isa<TileLoadOp, TileFillOp, TileBroadcastOp, TileTransposeOp, TileMaskRowsOp>(op);
}

std::optional<TileExtent> TileExtent::of(Value v, const EntryPoint &e) {
  if (std::optional<int64_t> c = getConstantIntValue(v))
    return TileExtent{Dim::Constant, *c};
  if (v == e.K)
    return TileExtent{Dim::Key, 0};
  if (v == e.Vb || v == e.V)
    return TileExtent{Dim::Value, 0};
  return std::nullopt;
}

Value TileExtent::full(LoopBuilder &lb, const EntryPoint &e) const {
  return dim == Dim::Constant ? lb.idx(constant) : dim == Dim::Key ? e.K : e.V;
}

std::string TileExtent::expression() const {
  return dim == Dim::Constant ? std::to_string(constant) : dim == Dim::Key ? "K" : "V";
}

Value linac::storedSize(ArrayRef<StoredTile> tiles, LoopBuilder &lb, const EntryPoint &e) {
  Value total = lb.idx(0);
  for (const StoredTile &t : tiles)
    total = lb.add(total, lb.mul(t.rows.full(lb, e), t.cols.full(lb, e)));
  return total;
}

std::string linac::storedExpression(ArrayRef<StoredTile> tiles) {
  std::string expression;
  for (const StoredTile &t : tiles)
    expression += (expression.empty() ? "" : " + ") + t.rows.expression() + " * " + t.cols.expression();
  return expression.empty() ? "0" : expression;
}

namespace {

/// Stores `tiles` of `ops` one after another from element `base` of `buffer`. With `sliced`, each right after
/// the op that computes it (`base` must precede the program), a value-wide tile holding this code's columns
/// [e.v0, e.v0 + e.Vb) of its full-width rows; else all at the builder's point, the program having run at full
/// value width.
void storeTiles(ArrayRef<StoredTile> tiles, ArrayRef<Operation *> ops, OpBuilder &b, const EntryPoint &e,
                Value buffer, Value base, bool sliced) {
  OpBuilder::InsertionGuard guard(b);
  Location loc = ops.front()->getLoc();
  LoopBuilder lb(b, loc);
  Value offset = base;
  for (const StoredTile &t : tiles) {
    // A sliced program's tile is stored where it is computed (base precedes the program), which keeps it from
    // living to the program's end; else at the builder's point.
    if (sliced)
      b.setInsertionPointAfter(ops[t.op]);
    Value rows = t.rows.full(lb, e), cols = t.cols.full(lb, e);
    bool valueWide = sliced && t.cols.dim == TileExtent::Dim::Value;
    TileStoreOp::create(b, loc, ops[t.op]->getResult(0), buffer, valueWide ? lb.add(offset, e.v0) : offset, cols,
                        rows);
    offset = lb.add(offset, lb.mul(rows, cols));
  }
}

/// Loads `tiles` (as storeTiles stored them) before the program `ops` and makes their readers read the loads;
/// returns the ops emitted.
SmallVector<Operation *> loadTiles(ArrayRef<StoredTile> tiles, ArrayRef<Operation *> ops, OpBuilder &b,
                                   const EntryPoint &e, Value buffer, Value base) {
  OpBuilder::InsertionGuard guard(b);
  Location loc = ops.front()->getLoc();
  LoopBuilder lb(b, loc);
  Type tileTy = getTileType(b.getContext());
  b.setInsertionPoint(ops.front());
  return captureOps(b, [&] {
    Value offset = base;
    for (const StoredTile &t : tiles) {
      Value rows = t.rows.full(lb, e), cols = t.cols.full(lb, e);
      bool valueWide = t.cols.dim == TileExtent::Dim::Value;
      Value load = TileLoadOp::create(b, loc, tileTy, buffer, valueWide ? lb.add(offset, e.v0) : offset, cols, rows,
                                      valueWide ? e.Vb : cols, rows);
      ops[t.op]->getResult(0).replaceAllUsesWith(load);
      offset = lb.add(offset, lb.mul(rows, cols));
    }
  });
}

/// Erases the tile ops of `ops` whose bit in `kept` lacks `mask` (none may still be read) and the other ops left
/// dead, then the dead ones of `loads` (loads of stored tiles the code does not read, and their index arithmetic).
void eraseUnkept(ArrayRef<Operation *> ops, ArrayRef<uint8_t> kept, uint8_t mask, ArrayRef<Operation *> loads,
                 StringRef who) {
  for (size_t i = ops.size(); i-- > 0;) {
    Operation *op = ops[i];
    if (isTileOp(op) && !(kept[i] & mask)) {
      if (!op->use_empty())
        llvm::report_fatal_error(llvm::Twine(who) + ": a tile the phase drops is still read: " +
                                 op->getName().getStringRef());
      op->erase();
    } else if (!isTileOp(op) && isOpTriviallyDead(op)) {
      op->erase();
    }
  }
  for (Operation *op : llvm::reverse(loads))
    if (isOpTriviallyDead(op))
      op->erase();
}

/// Turns `ops` (an emission of the analysed program, `kept` per op) into the part whose bit is `mask`: with
/// `storing` it stores `tiles` at the builder's point (storeTiles), else it loads them before the program
/// (loadTiles); then erases what the part does not keep.
void applyPart(bool storing, bool sliced, ArrayRef<StoredTile> tiles, ArrayRef<Operation *> ops,
               ArrayRef<uint8_t> kept, uint8_t mask, OpBuilder &b, const EntryPoint &e, Value buffer, Value base,
               StringRef who) {
  if (ops.size() != kept.size())
    llvm::report_fatal_error(llvm::Twine(who) + ": the program differs from the one analysed");
  if (ops.empty())
    return;
  SmallVector<Operation *> loads;
  if (storing)
    storeTiles(tiles, ops, b, e, buffer, base, sliced);
  else
    loads = loadTiles(tiles, ops, b, e, buffer, base);
  eraseUnkept(ops, kept, mask, loads, who);
}

/// Per op of `ops`: whether it is one of `roots` or reads a tile that is (transitively).
/// Where each op of a chunk's program stands in it.
class ProgramIndex {
public:
  explicit ProgramIndex(ArrayRef<Operation *> ops) {
    for (auto [i, op] : llvm::enumerate(ops))
      index[op] = i;
  }
  /// The position of the op defining `v`, if it is one of the program's.
  std::optional<unsigned> of(Value v) const {
    Operation *def = v ? v.getDefiningOp() : nullptr;
    auto it = def ? index.find(def) : index.end();
    return it == index.end() ? std::nullopt : std::optional<unsigned>(it->second);
  }

private:
  DenseMap<Operation *, unsigned> index;
};

SmallVector<bool> dependsOn(ArrayRef<Operation *> ops, const ProgramIndex &index, ArrayRef<Value> roots) {
  SmallVector<bool> dependent(ops.size(), false);
  for (auto [i, op] : llvm::enumerate(ops))
    dependent[i] = llvm::any_of(op->getResults(), [&](Value r) { return llvm::is_contained(roots, r); }) ||
                   llvm::any_of(op->getOperands(), [&](Value v) {
                     std::optional<unsigned> j = index.of(v);
                     return j && dependent[*j];
                   });
  return dependent;
}

} // namespace

ChunkSplit ChunkSplit::analyze(ArrayRef<Operation *> ops, Value carried, Value chainSink, ArrayRef<Value> sinks,
                               const EntryPoint &e, Value one, bool stateSizedInChain) {
  ChunkSplit split;
  split.phases.assign(ops.size(), 0);
  ProgramIndex index(ops);
  // Tiles that depend on the carried one.
  SmallVector<bool> dependent = dependsOn(ops, index, carried);
  TileShapes shapes(one);
  // What the after phase may read (every op the sinks depend on): a state-sized tile it reads stays in the
  // frontier even with stateSizedInChain (the after phase would otherwise recompute it, and its operands).
  DenseSet<unsigned> afterReads;
  std::function<void(Value)> reach = [&](Value v) {
    std::optional<unsigned> i = index.of(v);
    if (!i || !afterReads.insert(*i).second)
      return;
    for (Value operand : ops[*i]->getOperands())
      reach(operand);
  };
  if (stateSizedInChain)
    for (Value sink : sinks)
      reach(sink);
  DenseSet<unsigned> inFrontier;
  std::function<void(Value, ChunkPhase)> need = [&](Value v, ChunkPhase phase) {
    std::optional<unsigned> at = index.of(v);
    if (!at)
      return;
    unsigned i = *at;
    Operation *def = ops[i];
    if (split.phases[i] & uint8_t(phase))
      return;
    if (phase != ChunkPhase::Before && isTileOp(def) && !dependent[i]) {
      if (inFrontier.contains(i))
        return;
      if (phase == ChunkPhase::Chain && !isRecomputed(def)) {
        TileShape shape = shapes.get(def->getResult(0));
        std::optional<TileExtent> rows = TileExtent::of(shape.rows, e), cols = TileExtent::of(shape.cols, e);
        // Value-wide rows cannot be cut into the chain's column slices: such tiles are recomputed.
        // With stateSizedInChain, a state-sized tile (both extents head dims) the after phase does not read is
        // computed by the chain from its operands.
        bool chainComputes =
            stateSizedInChain && rows && cols && rows->isHeadDim() && cols->isHeadDim() && !afterReads.contains(i);
        if (rows && cols && rows->dim != TileExtent::Dim::Value && !chainComputes) {
          inFrontier.insert(i);
          split.frontier.push_back({i, *rows, *cols});
          return;
        }
      }
    }
    split.phases[i] |= uint8_t(phase);
    for (Value operand : def->getOperands())
      need(operand, phase);
  };
  need(chainSink, ChunkPhase::Chain);
  for (Value sink : sinks)
    need(sink, ChunkPhase::After);
  llvm::sort(split.frontier, [](const StoredTile &x, const StoredTile &y) { return x.op < y.op; });
  for (const StoredTile &f : split.frontier)
    need(ops[f.op]->getResult(0), ChunkPhase::Before);
  return split;
}

ChunkSplit ChunkSplit::analyze(OpBuilder &b, function_ref<ChunkProgram()> emit, const EntryPoint &e, Value one,
                               bool stateSizedInChain) {
  ChunkProgram program = emit();
  ChunkSplit split = analyze(program.ops, program.carried, program.chainSink, program.sinks, e, one, stateSizedInChain);
  for (Operation *op : llvm::reverse(program.ops)) {
    op->dropAllUses();
    op->erase();
  }
  return split;
}

Value ChunkSplit::frontierSize(LoopBuilder &lb, const EntryPoint &e) const { return storedSize(frontier, lb, e); }

std::string ChunkSplit::frontierExpression() const { return storedExpression(frontier); }

void ChunkSplit::apply(ChunkPhase phase, ArrayRef<Operation *> ops, OpBuilder &b, const EntryPoint &e, Value buffer,
                       Value base) const {
  // The before phase stores after the program (the builder's point), at full value width.
  applyPart(phase == ChunkPhase::Before, /*sliced=*/false, frontier, ops, phases, uint8_t(phase), b, e, buffer, base,
            "ChunkSplit::apply");
}

FailureOr<TailCut> TailCut::analyze(ArrayRef<Operation *> ops, ArrayRef<Value> carried, Value chainSink,
                                    ArrayRef<Value> sinks, const EntryPoint &e, Value one, std::string &why) {
  TailCut cutter;
  cutter.parts.assign(ops.size(), 0);
  for (auto [i, op] : llvm::enumerate(ops))
    if (isTileOp(op))
      cutter.parts[i] = kTileOp;
  ProgramIndex index(ops);
  SmallVector<bool> dependent = dependsOn(ops, index, carried);
  TileShapes shapes(one);
  auto extents = [&](unsigned i) {
    TileShape shape = shapes.get(ops[i]->getResult(0));
    return std::make_pair(TileExtent::of(shape.rows, e), TileExtent::of(shape.cols, e));
  };
  auto stateSized = [&](unsigned i) {
    if (!isTileOp(ops[i]))
      return false;
    auto [rows, cols] = extents(i);
    return rows && cols && rows->isHeadDim() && cols->isHeadDim();
  };
  auto carriesState = [&](unsigned i) { return isTileOp(ops[i]) && dependent[i] && stateSized(i); };

  // The head: the chain, and every op that reads a state-sized tile computed from a carried one, with what
  // they read.
  std::function<void(Value)> head = [&](Value v) {
    std::optional<unsigned> i = index.of(v);
    if (!i || (cutter.parts[*i] & uint8_t(TailPart::Head)))
      return;
    cutter.parts[*i] |= uint8_t(TailPart::Head);
    for (Value operand : ops[*i]->getOperands())
      head(operand);
  };
  head(chainSink);
  for (auto [i, op] : llvm::enumerate(ops))
    if (isTileOp(op) && !carriesState(i) && llvm::any_of(op->getOperands(), [&](Value v) {
          std::optional<unsigned> j = index.of(v);
          return j && carriesState(*j);
        }))
      head(op->getResult(0));

  // The tail: what the sinks need, stopping at the head's tiles computed from the carried ones (the cut).
  DenseSet<unsigned> inCut;
  std::function<LogicalResult(Value)> tail = [&](Value v) -> LogicalResult {
    std::optional<unsigned> i = index.of(v);
    if (!i || (cutter.parts[*i] & uint8_t(TailPart::Tail)) || inCut.contains(*i))
      return success();
    Operation *def = ops[*i];
    if (isTileOp(def) && carriesState(*i)) {
      why = (Twine("the gradients need a state-sized tile computed from the carried ones outside a product (") +
             def->getName().getStringRef() + ")")
                .str();
      return failure();
    }
    if (isTileOp(def) && dependent[*i] && (cutter.parts[*i] & uint8_t(TailPart::Head)) && !isRecomputed(def)) {
      auto [rows, cols] = extents(*i);
      if (!rows || !cols) {
        why = (Twine("a cut tile (") + def->getName().getStringRef() + ") has an extent the launcher cannot size")
                  .str();
        return failure();
      }
      inCut.insert(*i);
      cutter.cut.push_back({*i, *rows, *cols});
      return success();
    }
    cutter.parts[*i] |= uint8_t(TailPart::Tail);
    for (Value operand : def->getOperands())
      if (failed(tail(operand)))
        return failure();
    return success();
  };
  for (Value sink : sinks)
    if (failed(tail(sink)))
      return failure();
  // An elementwise cut tile whose operands computed from the carried tiles are all in the cut is recomputed by
  // the tail from them (one tile fewer to store and load: a scaled copy of another cut tile, say).
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t c = 0; c < cutter.cut.size(); ++c) {
      unsigned i = cutter.cut[c].op;
      Operation *op = ops[i];
      if (!op->hasTrait<OpTrait::Elementwise>() || !llvm::all_of(op->getOperands(), [&](Value v) {
            std::optional<unsigned> j = index.of(v);
            return !j || !dependent[*j] || inCut.contains(*j);
          }))
        continue;
      cutter.cut.erase(cutter.cut.begin() + c);
      inCut.erase(i);
      cutter.parts[i] |= uint8_t(TailPart::Tail);
      for (Value operand : op->getOperands())
        if (failed(tail(operand)))
          return failure();
      changed = true;
      break;
    }
  }
  llvm::sort(cutter.cut, [](const StoredTile &x, const StoredTile &y) { return x.op < y.op; });
  // A tail that computes no tile op the head does not is no cut.
  uint8_t both = uint8_t(TailPart::Head) | uint8_t(TailPart::Tail);
  if (llvm::none_of(cutter.parts, [&](uint8_t p) { return (p & kTileOp) && (p & both) == uint8_t(TailPart::Tail); })) {
    why = "the tail would compute nothing the head does not";
    return failure();
  }
  return cutter;
}

void TailCut::apply(TailPart part, ArrayRef<Operation *> ops, OpBuilder &b, const EntryPoint &e, Value buffer,
                    Value base) const {
  applyPart(part == TailPart::Head, /*sliced=*/true, cut, ops, parts, uint8_t(part), b, e, buffer, base,
            "TailCut::apply");
}
