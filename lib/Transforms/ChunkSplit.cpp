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

std::optional<ChunkSplit::Extent> ChunkSplit::extentOf(Value v, const EntryPoint &e) {
  if (std::optional<int64_t> c = getConstantIntValue(v))
    return Extent{Dim::Constant, *c};
  if (v == e.K)
    return Extent{Dim::Key, 0};
  if (v == e.Vb || v == e.V)
    return Extent{Dim::Value, 0};
  return std::nullopt;
}

Value ChunkSplit::full(LoopBuilder &lb, const EntryPoint &e, Extent x) const {
  return x.dim == Dim::Constant ? lb.idx(x.constant) : x.dim == Dim::Key ? e.K : e.V;
}

ChunkSplit ChunkSplit::analyze(ArrayRef<Operation *> ops, Value carried, Value chainSink, ArrayRef<Value> sinks,
                               const EntryPoint &e, Value one, bool stateSizedInChain) {
  ChunkSplit split;
  split.phases.assign(ops.size(), 0);
  DenseMap<Operation *, unsigned> index;
  for (auto [i, op] : llvm::enumerate(ops))
    index[op] = i;
  // Tiles that depend on the carried one.
  SmallVector<bool> dependent(ops.size(), false);
  for (auto [i, op] : llvm::enumerate(ops))
    dependent[i] = llvm::is_contained(op->getResults(), carried) ||
                   llvm::any_of(op->getOperands(), [&](Value v) {
                     Operation *def = v.getDefiningOp();
                     auto it = def ? index.find(def) : index.end();
                     return it != index.end() && dependent[it->second];
                   });
  TileShapes shapes(one);
  // What the after phase may read (every op the sinks depend on): a state-sized tile it reads stays in the
  // frontier even with stateSizedInChain (the after phase would otherwise recompute it, and its operands).
  DenseSet<unsigned> afterReads;
  std::function<void(Value)> reach = [&](Value v) {
    Operation *def = v ? v.getDefiningOp() : nullptr;
    auto it = def ? index.find(def) : index.end();
    if (it == index.end() || !afterReads.insert(it->second).second)
      return;
    for (Value operand : def->getOperands())
      reach(operand);
  };
  if (stateSizedInChain)
    for (Value sink : sinks)
      reach(sink);
  DenseSet<unsigned> inFrontier;
  std::function<void(Value, ChunkPhase)> need = [&](Value v, ChunkPhase phase) {
    Operation *def = v ? v.getDefiningOp() : nullptr;
    auto it = def ? index.find(def) : index.end();
    if (it == index.end())
      return;
    unsigned i = it->second;
    if (split.phases[i] & uint8_t(phase))
      return;
    if (phase != ChunkPhase::Before && isTileOp(def) && !dependent[i]) {
      if (inFrontier.contains(i))
        return;
      if (phase == ChunkPhase::Chain && !isRecomputed(def)) {
        TileShape shape = shapes.get(def->getResult(0));
        std::optional<Extent> rows = extentOf(shape.rows, e), cols = extentOf(shape.cols, e);
        // Value-wide rows cannot be cut into the chain's column slices: such tiles are recomputed.
        // With stateSizedInChain, a state-sized tile (both extents head dims) the after phase does not read is
        // computed by the chain from its operands.
        bool chainComputes = stateSizedInChain && rows && cols && rows->dim != Dim::Constant &&
                             cols->dim != Dim::Constant && !afterReads.contains(i);
        if (rows && cols && rows->dim != Dim::Value && !chainComputes) {
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
  llvm::sort(split.frontier, [](const FrontierTile &x, const FrontierTile &y) { return x.op < y.op; });
  for (const FrontierTile &f : split.frontier)
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

Value ChunkSplit::frontierSize(LoopBuilder &lb, const EntryPoint &e) const {
  Value total = lb.idx(0);
  for (const FrontierTile &f : frontier)
    total = lb.add(total, lb.mul(full(lb, e, f.rows), full(lb, e, f.cols)));
  return total;
}

std::string ChunkSplit::frontierExpression() const {
  auto name = [](Extent x) { return x.dim == Dim::Constant ? std::to_string(x.constant) : x.dim == Dim::Key ? "K" : "V"; };
  std::string expression;
  for (const FrontierTile &f : frontier)
    expression += (expression.empty() ? "" : " + ") + name(f.rows) + " * " + name(f.cols);
  return expression.empty() ? "0" : expression;
}

void ChunkSplit::apply(ChunkPhase phase, ArrayRef<Operation *> ops, OpBuilder &b, const EntryPoint &e, Value buffer,
                       Value base) const {
  if (ops.size() != phases.size())
    llvm::report_fatal_error("ChunkSplit::apply: the program differs from the one analysed");
  OpBuilder::InsertionGuard guard(b);
  Location loc = ops.empty() ? b.getUnknownLoc() : ops.front()->getLoc();
  LoopBuilder lb(b, loc);
  Type tileTy = getTileType(b.getContext());
  SmallVector<Operation *> loads;
  if (phase == ChunkPhase::Before) {
    // The stores go after the program (the builder's point).
    Value offset = base;
    for (const FrontierTile &f : frontier) {
      Value rows = full(lb, e, f.rows), cols = full(lb, e, f.cols);
      TileStoreOp::create(b, loc, ops[f.op]->getResult(0), buffer, offset, cols, rows);
      offset = lb.add(offset, lb.mul(rows, cols));
    }
  } else if (!ops.empty()) {
    // The loads go before the program; value-wide tiles are read at this code's columns.
    b.setInsertionPoint(ops.front());
    loads = captureOps(b, [&] {
      Value offset = base;
      for (const FrontierTile &f : frontier) {
        Value rows = full(lb, e, f.rows), cols = full(lb, e, f.cols);
        bool valueWide = f.cols.dim == Dim::Value;
        Value load = TileLoadOp::create(b, loc, tileTy, buffer, valueWide ? lb.add(offset, e.v0) : offset, cols,
                                        rows, valueWide ? e.Vb : cols, rows);
        ops[f.op]->getResult(0).replaceAllUsesWith(load);
        offset = lb.add(offset, lb.mul(rows, cols));
      }
    });
  }
  for (size_t i = ops.size(); i-- > 0;) {
    Operation *op = ops[i];
    if (isTileOp(op) && !(phases[i] & uint8_t(phase))) {
      if (!op->use_empty())
        llvm::report_fatal_error(llvm::Twine("ChunkSplit::apply: a tile the phase drops is still read: ") +
                                 op->getName().getStringRef());
      op->erase();
    } else if (!isTileOp(op) && isOpTriviallyDead(op)) {
      op->erase();
    }
  }
  // Loads of frontier tiles this phase does not read, and the index arithmetic only they used.
  for (Operation *op : llvm::reverse(loads))
    if (isOpTriviallyDead(op))
      op->erase();
}
