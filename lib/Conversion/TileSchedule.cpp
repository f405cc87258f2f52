// Ordering of tile ops by dependence level, shared by the GPU and CPU tile lowerings (docs/gpu.md): each
// op that gets a pass of its own at the earliest level after what it depends on, one level's passes together.

#include "lib/Conversion/TileLowering.h"
#include "dialect/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace linac;

Value linac::memoryRoot(Value v) {
  while (v) {
    if (isa<BlockArgument>(v))
      return v;
    Operation *def = v.getDefiningOp();
    if (auto cast = dyn_cast<memref::ReinterpretCastOp>(def))
      v = cast.getSource();
    else if (auto cast = dyn_cast<UnrealizedConversionCastOp>(def))
      return cast->getNumOperands() == 0 ? v : memoryRoot(cast->getOperand(0));
    else if (auto insert = dyn_cast<LLVM::InsertValueOp>(def))
      v = insert.getPosition() == ArrayRef<int64_t>{1} ? insert.getValue() : insert.getContainer();
    else if (auto gep = dyn_cast<LLVM::GEPOp>(def))
      v = gep.getBase();
    else
      return Value();
  }
  return Value();
}

/// The memory a tile load or store addresses, for ordering them: a block-private buffer (GpuChunk's distinct
/// regions of the state scratch, `linac.block_private`) is its own; anything else its argument (memoryRoot), or
/// null where not found (conflicts with every access).
static Value scheduleRoot(Value memref) {
  if (auto cast = memref.getDefiningOp<UnrealizedConversionCastOp>(); cast && cast->hasAttr("linac.block_private"))
    return memref;
  return memoryRoot(memref);
}

/// Orders each run of tile ops by level (`linac-tile-to-gpu{schedule=...}`, `linac-tile-to-loops{schedule=1}`):
/// an op that gets a pass of its own (a tile op that is not fused, isFusedTile, nor a product lowered at its
/// store) goes to the earliest pass after every pass it depends on, through SSA values and through memory (a
/// load after a store of the same buffer, a store after a load's readers or an earlier store), and the passes
/// of one level go together, in their program order. Ops with no pass of their own (fused tiles, index arithmetic) go just before their
/// first reader, so a fused load stays next to its store and a product's epilogue chain next to the product.
/// The tile program's own order puts each op after what it reads but interleaves independent chains, so a
/// barrier follows nearly every op (dropBarriers removes one only between runs that touch no common slot):
/// grouped by level, one barrier may serve a whole level. Runs end at ops with regions or other effects.
/// Returns the number of ops that moved.
int64_t linac::scheduleByLevel(Operation *root, const DenseMap<Operation *, Operation *> &epilogues) {
  auto schedulable = [](Operation *op) {
    return op->getNumRegions() == 0 && !op->hasTrait<OpTrait::IsTerminator>() &&
           (isMemoryEffectFree(op) || isa<TileLoadOp, TileStoreOp>(op));
  };
  int64_t moved = 0, levelBase = 0;
  auto schedule = [&](ArrayRef<Operation *> run) {
    if (run.size() < 2)
      return;
    DenseMap<Operation *, int64_t> position;
    for (auto [i, op] : llvm::enumerate(run))
      position[op] = int64_t(i);
    // The ops with a pass of their own (decided once: nothing moves until the run is ordered).
    DenseSet<Operation *> passOps;
    for (Operation *op : run)
      if (isTileOp(op) && !isFusedTile(op) && !epilogues.count(op))
        passOps.insert(op);
    auto pass = [&](Operation *op) { return passOps.contains(op); };
    // The passes that read `op`'s result, through ops without a pass of their own, among those before `limit`.
    auto passReaders = [&](Operation *op, int64_t limit) {
      SmallVector<Operation *> found, work{op};
      DenseSet<Operation *> seen;
      while (!work.empty()) {
        Operation *cur = work.pop_back_val();
        for (Operation *user : cur->getUsers()) {
          auto it = position.find(user);
          if (it == position.end() || it->second >= limit || !seen.insert(user).second)
            continue;
          if (pass(user))
            found.push_back(user);
          else
            work.push_back(user);
        }
      }
      return found;
    };
    // The passes each value waits for (its own pass, or through ops without one those of their operands), and
    // each pass's predecessors: the passes it must follow, through values and through memory (per root, the
    // earlier loads and stores).
    DenseMap<Value, SmallVector<Operation *>> producers;
    DenseMap<Operation *, SmallVector<Operation *>> preds;
    SmallVector<std::pair<Value, Operation *>> accesses;
    SmallVector<Operation *> passes;
    for (Operation *op : run) {
      SetVector<Operation *> deps;
      for (Value operand : op->getOperands())
        if (auto it = producers.find(operand); it != producers.end())
          deps.insert(it->second.begin(), it->second.end());
      auto load = dyn_cast<TileLoadOp>(op);
      auto store = dyn_cast<TileStoreOp>(op);
      if (load || store) {
        Value root = scheduleRoot(load ? load.getBuffer() : store.getBuffer());
        for (auto [other, earlier] : accesses) {
          if ((root && other && root != other) || (load && isa<TileLoadOp>(earlier)))
            continue;
          if (pass(earlier))
            deps.insert(earlier);
          // A store after a load: also after the load's readers (a view or a fused load is read where they run).
          if (store && isa<TileLoadOp>(earlier))
            for (Operation *reader : passReaders(earlier, position[op]))
              if (reader != op)
                deps.insert(reader);
        }
        accesses.push_back({root, op});
      }
      if (pass(op)) {
        passes.push_back(op);
        preds[op] = SmallVector<Operation *>(deps.begin(), deps.end());
        for (Value result : op->getResults())
          producers[result] = {op};
      } else {
        for (Value result : op->getResults())
          producers[result] = SmallVector<Operation *>(deps.begin(), deps.end());
      }
    }
    // Each pass at the earliest level after its predecessors. (The latest before its readers instead kept
    // more tiles live: Gated DeltaNet's backward 354 -> 462 KB of slots, against 392.)
    DenseMap<Operation *, int64_t> level;
    for (Operation *op : passes) {
      int64_t at = 0;
      for (Operation *p : preds[op])
        at = std::max(at, level[p] + 1);
      level[op] = at;
    }
    DenseMap<Value, int64_t> avail;
    for (Operation *op : run) {
      int64_t at = 0;
      for (Value operand : op->getOperands())
        at = std::max(at, avail.lookup(operand));
      if (pass(op))
        at = level[op] + 1;
      for (Value result : op->getResults())
        avail[result] = at;
    }
    // Keys: a pass's level; an op without a pass just before its first reader in the run.
    DenseMap<Operation *, int64_t> key;
    for (Operation *op : llvm::reverse(run)) {
      if (pass(op)) {
        key[op] = level[op];
        continue;
      }
      std::optional<int64_t> first;
      for (Operation *user : op->getUsers())
        if (key.count(user) && position.count(user))
          first = std::min(first.value_or(key[user]), key[user]);
      int64_t at = 0;
      for (Value result : op->getResults())
        at = std::max(at, avail.lookup(result));
      key[op] = first.value_or(at);
    }
    int64_t top = 0;
    for (auto &[op, l] : level) {
      op->setAttr(kTileLevelAttr, IntegerAttr::get(IntegerType::get(op->getContext(), 64), levelBase + l));
      top = std::max(top, l + 1);
    }
    levelBase += top;
    SmallVector<Operation *> order(run.begin(), run.end());
    std::stable_sort(order.begin(), order.end(), [&](Operation *a, Operation *b) { return key[a] < key[b]; });
    Operation *end = run.back()->getNextNode();
    Block *block = run.back()->getBlock();
    for (auto [i, op] : llvm::enumerate(order)) {
      moved += op != run[i];
      if (end)
        op->moveBefore(end);
      else
        op->moveBefore(block, block->end());
    }
  };
  SmallVector<Block *> blocks;
  root->walk([&](Block *block) { blocks.push_back(block); });
  for (Block *block : blocks) {
    SmallVector<Operation *> run;
    for (Operation &op : *block) {
      if (schedulable(&op)) {
        run.push_back(&op);
        continue;
      }
      schedule(run);
      run.clear();
    }
    schedule(run);
  }
  return moved;
}

