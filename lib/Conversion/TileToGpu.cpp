// linac-tile-to-gpu: the GPU back end of the tile IR. Tiles get slots sized by
// their shape in shared memory (else global scratch), reused by liveness; each
// tile op's loops are strided over the block's threads and end in a barrier;
// products run on the tensor cores. docs/gpu.md describes it.

#include "dialect/Passes.h"
#include "lib/Analysis/TileShape.h"
#include "lib/Conversion/EntryPoint.h"
#include "lib/Conversion/LoopBuilder.h"
#include "lib/Conversion/TileLowering.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "llvm/ADT/TypeSwitch.h"

#include <functional>
#include <numeric>
#include <optional>
#include <set>

namespace linac {
#define GEN_PASS_DEF_LINACTILETOGPU
#include "dialect/Passes.h.inc"
} // namespace linac

using namespace mlir;
using namespace linac;

namespace {

/// Where each tile of a kernel may reuse the scratch of another: tiles are numbered in program (pre-)order,
/// and a tile is dead once every op that reads it has finished. A read inside a loop (or branch) nested
/// below the tile's own block keeps it alive until that whole loop ends, since the loop reads it on every
/// iteration. A tile's storage is handed on only after the op that reads it last, never to that op's own
/// result: many tile ops read and write different elements at once.
class TileLiveness {
public:
  /// epilogues: whether the lowering takes productEpilogues().
  TileLiveness(Operation *root, bool epilogues)
      : epilogues(epilogues ? productEpilogues(root) : DenseMap<Operation *, Operation *>()) {
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
  /// The last index inside `op`.
  int64_t end(Operation *op) const { return subtreeEnd.lookup(op); }
  const DenseMap<Operation *, Operation *> &epilogueProducts() const { return epilogues; }
  /// The index after which no op reads the result of `def`. A fused tile (isFusedTile) is read where its own
  /// readers run, so its operands are read there too.
  int64_t lastRead(Operation *def) const { return lastReader(def).first; }
  /// lastRead(def), and the op in def's block that reads it last (def itself where nothing reads it).
  std::pair<int64_t, Operation *> lastReader(Operation *def) const {
    int64_t last = index(def);
    Operation *reader = def;
    Block *home = def->getBlock();
    SmallVector<Operation *> readers(def->getUsers().begin(), def->getUsers().end());
    while (!readers.empty()) {
      Operation *user = readers.pop_back_val();
      if (isFusedTile(user)) {
        readers.append(user->getUsers().begin(), user->getUsers().end());
        continue;
      }
      // A product lowered at its store (productEpilogues) reads its operands there.
      if (Operation *store = epilogues.lookup(user))
        user = store;
      Operation *inHome = home->findAncestorOpInBlock(*user);
      int64_t at = inHome ? subtreeEnd.lookup(inHome) : index(user);
      if (at > last) {
        last = at;
        reader = inHome ? inHome : user;
      }
    }
    return {last, reader};
  }
  /// How often the tile `def` defines is written or read when the kernel runs, counting an op inside n loops
  /// kLoopTrips^n times (loop trip counts are launch values; the chunk loop runs many times), each read
  /// weighted by `passes` (how many times the reading op goes over the tile; 1 where not given): the weight of
  /// its slot's claim on shared memory.
  double accesses(Operation *def, const std::function<double(OpOperand &)> &passes = {}) const {
    double n = runs(def);
    SmallVector<OpOperand *> reads;
    for (OpResult r : def->getResults())
      for (OpOperand &use : r.getUses())
        reads.push_back(&use);
    while (!reads.empty()) {
      OpOperand *use = reads.pop_back_val();
      Operation *user = use->getOwner();
      if (isFusedTile(user)) {
        for (OpResult r : user->getResults())
          for (OpOperand &next : r.getUses())
            reads.push_back(&next);
        continue;
      }
      n += runs(user) * (passes ? passes(*use) : 1.0);
    }
    return n;
  }

  /// How often `op` runs: kLoopTrips^n inside n loops.
  static double runs(Operation *op) {
    double n = 1;
    for (Operation *p = op->getParentOp(); p && !isa<gpu::GPUFuncOp>(p); p = p->getParentOp())
      if (isa<LoopLikeOpInterface>(p))
        n *= kLoopTrips;
    return n;
  }

private:
  static constexpr double kLoopTrips = 64;
  DenseMap<Operation *, int64_t> order, subtreeEnd;
  DenseMap<Operation *, Operation *> epilogues;
  int64_t next = 0;
};

/// The plain (not accumulating) tile stores to `memref`.
SmallVector<TileStoreOp> plainStores(Value memref) {
  SmallVector<TileStoreOp> stores;
  for (Operation *user : memref.getUsers())
    if (auto store = dyn_cast<TileStoreOp>(user); store && store.getBuffer() == memref && !store.getAccumulate())
      stores.push_back(store);
  return stores;
}

/// Whether `op` (or an op nested in it) stores to `memref`.
bool storesTo(Operation *op, Value memref) {
  return op
      ->walk([&](TileStoreOp s) { return s.getBuffer() == memref ? WalkResult::interrupt() : WalkResult::advance(); })
      .wasInterrupted();
}

/// Erases `op` if nothing uses it and it has no effects but reads, then so the ops that defined its operands.
void eraseDead(Operation *op) {
  SmallVector<Operation *> dead{op};
  while (!dead.empty()) {
    op = dead.pop_back_val();
    if (!op || !op->use_empty() || !isOpTriviallyDead(op))
      continue;
    SmallVector<Operation *> operands;
    for (Value v : op->getOperands())
      operands.push_back(v.getDefiningOp());
    op->erase();
    llvm::append_range(dead, operands);
  }
}

/// A block's running state (GpuChunk's linac.block_private regions: no other block and no later kernel reads
/// them) lives in memory the kernel owns, so its tile traffic may be simplified before the lowering:
/// - a load that a whole-tile store of the same place precedes in its block, with no store to the buffer
///   between, reads what was stored: its readers take the stored tile (the backward's recomputation stored
///   each chunk's checkpoint to the buffer, then loaded it back);
/// - a store no load can follow (every load of the buffer comes before it, in no loop they share) is dropped,
///   with the tiles only it read.
void simplifyPrivateBuffer(gpu::GPUFuncOp kernel, Value memref, TileShapes &shapes) {
  // The stores first: forwarding erases loads, never stores.
  for (TileStoreOp store : plainStores(memref)) {
    TileShape shape = shapes.get(store.getTile());
    if (!sameIndexValue(store.getValid(), shape.rows))
      continue;
    for (Operation *op = store->getNextNode(); op;) {
      Operation *next = op->getNextNode();
      auto load = dyn_cast<TileLoadOp>(op);
      if (load && load.getBuffer() == memref && sameIndexValue(load.getOffset(), store.getOffset()) &&
          sameIndexValue(load.getStride(), store.getStride()) && sameIndexValue(load.getRows(), shape.rows) &&
          sameIndexValue(load.getCols(), shape.cols) && sameIndexValue(load.getValid(), load.getRows())) {
        load.getResult().replaceAllUsesWith(store.getTile());
        load.erase();
      } else if (storesTo(op, memref)) {
        break;
      }
      op = next;
    }
  }
  DenseMap<Operation *, int64_t> order;
  kernel.walk<WalkOrder::PreOrder>([&](Operation *op) { order[op] = order.size(); });
  SmallVector<Operation *> loads;
  for (Operation *user : memref.getUsers())
    if (isa<TileLoadOp>(user))
      loads.push_back(user);
  auto mayFollow = [&](Operation *load, Operation *store) {
    if (order.lookup(load) > order.lookup(store))
      return true;
    for (Operation *p = store->getParentOp(); p && p != kernel; p = p->getParentOp())
      if (isa<LoopLikeOpInterface>(p) && p->isAncestor(load))
        return true;
    return false;
  };
  SmallVector<TileStoreOp> dead;
  for (Operation *user : memref.getUsers())
    if (auto store = dyn_cast<TileStoreOp>(user);
        store && store.getBuffer() == memref &&
        llvm::none_of(loads, [&](Operation *load) { return mayFollow(load, store); }))
      dead.push_back(store);
  for (TileStoreOp store : dead) {
    Operation *def = store.getTile().getDefiningOp();
    store.erase();
    eraseDead(def);
  }
}

/// Moves the whole-tile `store` to `memref` up to just after the last op before it that reads the buffer (a
/// load of it, or a tile computed from one) or defines its tile or indices, if that is earlier.
void hoistStore(TileStoreOp store, Value memref) {
  auto blocks = [&](Operation *op) {
    if (llvm::any_of(store->getOperands(), [&](Value v) { return v.getDefiningOp() == op; }))
      return true;
    return op
        ->walk([&](Operation *inner) {
          if (llvm::is_contained(inner->getOperands(), memref) ||
              llvm::any_of(inner->getOperands(),
                           [&](Value v) { return isTileType(v.getType()) && readsBuffer(v, memref); }))
            return WalkResult::interrupt();
          return WalkResult::advance();
        })
        .wasInterrupted();
  };
  Operation *after = store->getPrevNode();
  while (after && !blocks(after))
    after = after->getPrevNode();
  if (after && after != store->getPrevNode())
    store->moveAfter(after);
}

/// A running state's update that adds several products, S' = X + A B + C D (the backward's state gradient:
/// dS' = d dS + q^T do + k^T dv, ...), becomes S' = X + A B (one product and a chain over the stored place,
/// lowered at the store: productEpilogues) followed by each remaining product accumulated into the buffer,
/// lowered at that accumulating store: no product keeps a K x V slot (with the copies fused into their stores and
/// the recomputed state's slot reused, Gated DeltaNet's backward holds 2 K x V tiles instead of 4). Runs after
/// simplifyPrivateBuffer, whose store to load forwarding knows only plain stores.
void splitProductSums(Value memref, TileShapes &shapes) {
  for (TileStoreOp store : plainStores(memref)) {
    if (!sameIndexValue(store.getValid(), shapes.get(store.getTile()).rows))
      continue;
    // The terms of the sum: an addf tree of single-use nodes in the store's block; products among its leaves.
    SmallVector<std::pair<TileMatmulOp, arith::AddFOp>> products;
    SmallVector<Value> pending{store.getTile()};
    while (!pending.empty()) {
      Value v = pending.pop_back_val();
      auto add = v.getDefiningOp<arith::AddFOp>();
      if (!add || add->getBlock() != store->getBlock() || !v.hasOneUse())
        continue;
      // Of a sum of two products only one is taken out: the add must keep a term.
      bool taken = false;
      for (Value term : add->getOperands()) {
        if (auto product = term.getDefiningOp<TileMatmulOp>();
            product && !taken && term.hasOneUse() && product->getBlock() == store->getBlock()) {
          products.push_back({product, add});
          taken = true;
        } else {
          pending.push_back(term);
        }
      }
    }
    llvm::sort(products, [](auto &x, auto &y) { return x.first->isBeforeInBlock(y.first); });
    if (products.size() < 2)
      continue;
    for (auto [product, add] : llvm::drop_begin(products)) {
      // add = u + product (either order) becomes u.
      Value other = add.getLhs() == product.getResult() ? add.getRhs() : add.getLhs();
      add.getResult().replaceAllUsesWith(other);
      add.erase();
    }
    hoistStore(store, memref);
    // Each product's accumulating store right after the product (after the sum's store at the earliest): the
    // product's operands die there instead of living to the end of the chunk.
    Operation *last = store;
    for (auto [product, add] : llvm::drop_begin(products)) {
      OpBuilder b(store->getContext());
      Operation *at = last->isBeforeInBlock(product) ? product.getOperation() : last;
      b.setInsertionPointAfter(at);
      auto acc = TileStoreOp::create(b, store.getLoc(), product.getResult(), memref, store.getOffset(),
                                     store.getStride(), store.getValid());
      acc.setAccumulate(true);
      if (at == last)
        last = acc;
    }
  }
}

/// Whether every use of the block-private `memref` is a tile load or store of `rows` rows
/// `stride` floats apart from one column offset: it can then live in a tile slot of rows x (stride + pad).
bool slotShaped(Value memref, TileShapes &shapes, Value &rows, Value &stride) {
  Value offset;
  for (Operation *user : memref.getUsers()) {
    Value r, st, off;
    if (auto load = dyn_cast<TileLoadOp>(user); load && load.getBuffer() == memref) {
      r = load.getRows(), st = load.getStride(), off = load.getOffset();
    } else if (auto store = dyn_cast<TileStoreOp>(user); store && store.getBuffer() == memref) {
      r = shapes.get(store.getTile()).rows, st = store.getStride(), off = store.getOffset();
    } else {
      return false;
    }
    if (!offset)
      offset = off, stride = st, rows = r;
    if (!sameIndexValue(offset, off) || !sameIndexValue(stride, st) || !sameIndexValue(rows, r))
      return false;
  }
  return rows && stride;
}

/// Whether computing an element of `tile` (a fused tile's element code: isFusedTile) reads an element of
/// `source` other than the same (r, c): through a broadcast, transpose or row scatter, or a product lowered
/// there (`epilogues`: productEpilogues). `moved`: an op on the way already reads elsewhere.
bool readsElsewhere(Value tile, Value source, const DenseMap<Operation *, Operation *> &epilogues,
                    bool moved = false) {
  if (tile == source)
    return moved;
  Operation *def = tile.getDefiningOp();
  if (!def || !(isFusedTile(def) || epilogues.count(def)))
    return false;
  bool inPlace = isElementwiseTile(def) || isa<TileMaskRowsOp, TileTrilOp>(def);
  return llvm::any_of(def->getOperands(), [&](Value operand) {
    return isTileType(operand.getType()) && readsElsewhere(operand, source, epilogues, moved || !inPlace);
  });
}

/// One extent of a tile slot: a compile-time constant or a launch-time value defined at kernel entry.
struct SlotDim {
  std::optional<int64_t> constant;
  Value value;
  bool operator==(const SlotDim &o) const { return constant == o.constant && value == o.value; }
};

/// Tiles of one shape share slots; each slot is sized rows x (cols + pad) floats of its shape, with the largest
/// row padding of the tiles it holds.
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

/// The warp tile (fragments down, fragments across) of a product with tm x tn output fragments at `warps` warps:
/// the largest candidate that divides the fragments and still gives every warp work, else one fragment. With
/// `wide`, 2 x 4 and 4 x 2 first: a K x V product (the state update, 128 fragments at K = V = 128) then loads
/// each A fragment for 4 products and each B fragment for 2, not 2 and 2: at C = 32 its shared-memory operand
/// reads fall from 192 to 128 KB a chunk.
std::pair<int64_t, int64_t> warpTile(int64_t tm, int64_t tn, int64_t warps, bool wide) {
  SmallVector<std::pair<int64_t, int64_t>> candidates = {{2, 2}, {1, 2}, {2, 1}};
  if (wide)
    candidates.insert(candidates.begin(), {{2, 4}, {4, 2}});
  for (auto [m, n] : candidates)
    if (tm % m == 0 && tn % n == 0 && (tm / m) * (tn / n) >= warps)
      return {m, n};
  return {1, 1};
}

/// How many times a tensor-core product with an m x n output at `warps` warps reads each operand, warp tiles
/// as product() takes them: the A operand once per warp tile across the output, the B operand once per warp
/// tile down it.
std::pair<int64_t, int64_t> operandRereads(int64_t m, int64_t n, int64_t warps, bool wide) {
  int64_t tm = (m + 15) / 16, tn = (n + 7) / 8;
  auto [bm, bn] = warpTile(tm, tn, warps, wide);
  return {tn / bn, tm / bm};
}

/// How many times the op reading a tile through `use` goes over it (sizes that are not constants count 1): a
/// tensor-core product its A operand once per warp tile across the output and its B operand once per warp tile
/// down it (operandRereads); a per-key gated product, on the CUDA cores, a row of x (and of gx) once per kept
/// pair of its row, a row of y (gy) once per kept pair of its column; any other op once. With the runs of the
/// ops, this is the traffic a tile's slot carries (the kernels record what the slots left in global memory
/// carry as linac.global_slot_kb).
double operandPasses(OpOperand &use, TileShapes &shapes, int64_t warps, bool wide) {
  Operation *user = use.getOwner();
  auto size = [](Value v) { return getConstantIntValue(v).value_or(1); };
  auto rereads = [&](bool lhsRole) {
    TileShape out = shapes.get(user->getResult(0));
    auto [acrossN, downM] = operandRereads(size(out.rows), size(out.cols), warps, wide);
    return double(lhsRole ? acrossN : downM);
  };
  if (auto mm = dyn_cast<TileMatmulOp>(user))
    return rereads(use.getOperandNumber() == 0);
  // Half of a square pair tile is kept (the masks are lower triangles).
  auto half = [&](Value v) { return std::max(1.0, double(size(v)) / 2); };
  if (auto gm = dyn_cast<TileGatedMatmulOp>(user)) {
    TileShape out = shapes.get(gm.getResult());
    if (size(shapes.get(gm.getGx()).cols) == 1)
      return use.get() == gm.getPairs() ? rereads(true) : use.get() == gm.getY() ? rereads(false) : 1.0;
    // Per key: output (a, d) sums its kept pairs of row a (column a, transposed) against column d of y.
    if (use.get() == gm.getPairs())
      return half(out.cols);
    return use.get() == gm.getY() || use.get() == gm.getGy() ? half(out.rows) : 1.0;
  }
  if (auto gd = dyn_cast<TileGatedDotOp>(user)) {
    TileShape out = shapes.get(gd.getResult());
    if (size(shapes.get(gd.getGx()).cols) == 1)
      return use.get() == gd.getX() ? rereads(true) : use.get() == gd.getY() ? rereads(false) : 1.0;
    // Per key: pair (i, j) reads row i of x and gx and row j of y and gy.
    return half(use.get() == gd.getX() || use.get() == gd.getGx() ? out.cols : out.rows);
  }
  return 1.0;
}

/// How many dependent round trips to memory the op reading a tile through `use` makes when the tile is in global
/// memory (sizes that are not constants count 1): a tensor-core product one per k step of `kStep` (its k loop
/// loads each step's fragments and waits for them), a per-key gated product one per term of its sums (a loop
/// over the key channels, or over the pairs for gated_matmul), any other op one (a thread's copies load at
/// once). placeSlots weighs a slot's rounds against its size where placement=latency.
double operandRounds(OpOperand &use, TileShapes &shapes, int64_t kStep) {
  Operation *user = use.getOwner();
  auto size = [](Value v) { return double(getConstantIntValue(v).value_or(1)); };
  auto steps = [&](Value inner) { return std::max(1.0, std::ceil(size(inner) / double(kStep))); };
  if (auto mm = dyn_cast<TileMatmulOp>(user)) {
    TileShape lhs = shapes.get(mm.getLhs());
    return steps(mm.getTransposeLhs() ? lhs.rows : lhs.cols);
  }
  if (auto gd = dyn_cast<TileGatedDotOp>(user)) {
    Value inner = shapes.get(gd.getX()).cols;
    return size(shapes.get(gd.getGx()).cols) == 1 ? steps(inner) : size(inner);
  }
  if (auto gm = dyn_cast<TileGatedMatmulOp>(user)) {
    TileShape pairs = shapes.get(gm.getPairs());
    Value inner = gm.getTranspose() ? pairs.rows : pairs.cols;
    return size(shapes.get(gm.getGx()).cols) == 1 ? steps(inner) : size(inner);
  }
  return 1.0;
}

/// How the tensor-core products read `tile`, directly or through elementwise ops and transposes: each read
/// weighs the shared-memory traffic of that operand (an A operand is read once per warp tile across the output,
/// a B operand once per warp tile down it: M K (tn / bn) and K N (tm / bm) floats for an M x N product over K,
/// warp tiles as product() takes them), positive where the lanes read in the B fragment's pattern (row
/// t = lane % 4, column g = lane / 4: a matmul's rhs, a transposed lhs, gated_matmul's y), negative in the A
/// fragment's (row g, column t: the lhs, gated_dot's operands). The two patterns want different row strides to
/// be free of bank conflicts (GpuStrategy::kRowPad). Sizes that are not constants count 1. Per-key gated
/// products, which do not run on the tensor cores, are not counted.
int64_t fragmentPattern(Value tile, TileShapes &shapes, int64_t warps, bool wide, bool transposed = false,
                        int depth = 0) {
  if (depth > 8)
    return 0;
  int64_t score = 0;
  auto size = [](Value v) { return getConstantIntValue(v).value_or(1); };
  // `lhsRole`: the operand is the product's A (else its B); `bPattern`: its lanes read in the B pattern.
  auto read = [&](Operation *product, Value inner, bool lhsRole, bool bPattern) {
    TileShape out = shapes.get(product->getResult(0));
    int64_t m = size(out.rows), n = size(out.cols), k = size(inner);
    auto [acrossN, downM] = operandRereads(m, n, warps, wide);
    int64_t traffic = lhsRole ? m * k * acrossN : k * n * downM;
    score += (bPattern != transposed) ? traffic : -traffic;
  };
  for (OpOperand &use : tile.getUses()) {
    Operation *user = use.getOwner();
    if (auto mm = dyn_cast<TileMatmulOp>(user)) {
      TileShape lhs = shapes.get(mm.getLhs());
      Value inner = mm.getTransposeLhs() ? lhs.rows : lhs.cols;
      if (use.getOperandNumber() == 0)
        read(user, inner, true, mm.getTransposeLhs());
      else
        read(user, inner, false, !mm.getTransposeRhs());
    } else if (auto gm = dyn_cast<TileGatedMatmulOp>(user)) {
      Value inner = shapes.get(gm.getPairs()).cols;
      if (use.get() == gm.getPairs())
        read(user, inner, true, gm.getTranspose());
      else if (use.get() == gm.getY())
        read(user, inner, false, true);
    } else if (auto gd = dyn_cast<TileGatedDotOp>(user)) {
      if (size(shapes.get(gd.getGx()).cols) != 1)
        continue;
      if (use.get() == gd.getX())
        read(user, shapes.get(gd.getX()).cols, true, false);
      else if (use.get() == gd.getY())
        read(user, shapes.get(gd.getX()).cols, false, false);
    } else if (isa<TileTransposeOp>(user)) {
      score += fragmentPattern(user->getResult(0), shapes, warps, wide, !transposed, depth + 1);
    } else if (isa<TileMaskRowsOp, TileTrilOp>(user) || isElementwiseTile(user)) {
      for (Value r : user->getResults())
        score += fragmentPattern(r, shapes, warps, wide, transposed, depth + 1);
    }
  }
  return score;
}

/// Marks a tensor-core product's loop over k steps (GpuStrategy::product).
constexpr StringLiteral kKLoopAttr = "linac.k_loop";

/// The floats of shared memory a fixed-size kernel's slots may take (staticSharedBytes).
int64_t staticSharedFloats(Operation *kernel) { return staticSharedBytes(kernel) / 4; }

/// Tiles in slots sized by their shape, reused once their tile is dead (TileLiveness) by a tile of the same
/// shape; loops strided over threads, then a barrier, which also orders a slot's last reads before its next
/// writes. placeSlots() lays the slots out at kernel entry: small shapes first, each in the block's dynamic
/// shared memory while it fits (its size is read from %dynamic_smem_size, so a launch with less or none still
/// runs), the rest in the block's region of the global tile scratch. Tiles are addressed through generic
/// pointers, so one lowering serves both places.
class GpuStrategy : public TileLoopStrategy {
public:
  /// Floats of padding after each tile row: with rows a multiple of 32 floats apart, the 8 rows a tensor-core
  /// fragment load touches would all fall in one shared-memory bank; 4 floats more spread them over the banks
  /// for the A fragment's pattern (8 rows g, 4 columns t: banks 4 g + t). The B fragment's pattern (4 rows t,
  /// 8 columns g) then meets 2-way conflicts (banks 4 t + g); 8 floats (8 t + g) serve it (and conflict on the
  /// A pattern), so where `padByPattern` is set a tile that the products read mostly in the B pattern
  /// (fragmentPattern) gets kRowPadB. Its slot, shared with other tiles of its shape, is sized for the largest
  /// padding of the tiles it holds (placed after the lowering), so the slots stay as many as before: with
  /// classes by padding as well, Gated DeltaNet's backward took 461 KB of slots instead of 353, and ran 24%
  /// slower from what no longer fit in shared memory.
  static constexpr int64_t kRowPad = 4, kRowPadB = 8;
  static int64_t padFor(int64_t pattern) { return pattern > 0 ? kRowPadB : kRowPad; }
  /// fragmentPattern of `tile` where `padByPattern` is set, else 0 (every tile kRowPad).
  int64_t pattern(Value tile) const {
    return padByPattern ? fragmentPattern(tile, *shapes, warps(), wideWarpTiles) : 0;
  }
  /// The most fragments a warp computed at once in any product lowered so far.
  int64_t warpTileFragments() const { return widestWarpTile; }
  /// The block's warps where its size is a constant, else 16 (512 threads, the default).
  int64_t warps() const { return getConstantIntValue(threads).value_or(512) / 32; }
  /// How a slot's claim on shared memory is weighed (linac-tile-to-gpu's placement): its accesses (each
  /// touches about all of the slot, so they are the traffic a float of shared memory saves), or the round trips
  /// its accesses would wait for in global memory, per float of the slot (latency: operandRounds).
  enum class Placement { Accesses, Latency };
  /// operandRounds at this kernel's k step (one a read without the tile shapes).
  std::function<double(OpOperand &)> rounds() const {
    if (!shapes)
      return {};
    return [this](OpOperand &use) { return operandRounds(use, *shapes, bf16Operands ? 16 : 8); };
  }
  /// operandPasses under this kernel's warps and warp tiles (one a read without the tile shapes).
  std::function<double(OpOperand &)> passes() const {
    if (!shapes)
      return {};
    return [this](OpOperand &use) { return operandPasses(use, *shapes, warps(), wideWarpTiles); };
  }

  /// splitOperands: three tf32 products per step with split operands (fp32 accuracy), else one of the operands
  /// rounded to tf32 (products=tf32) or, with bf16Operands, to bf16 (products=bf16: m16n8k16).
  /// forwardCopies: the forward's copy budget (0: kForwardCopies); productChains: accumulator chains of a
  /// tf32x3 product (0: by warp tile, see product()).
  /// maxSplitK: most warps that share a warp tile's k steps (product()).
  GpuStrategy(Operation *kernel, Value tid, Value threads, bool splitOperands, bool bf16Operands,
              int64_t forwardCopies = 0, int64_t productChains = 0, int64_t maxSplitK = 1, bool factorGates = false,
              bool padByPattern = false, TileShapes *shapes = nullptr, bool wideWarpTiles = false,
              Placement placement = Placement::Accesses)
      : maxCopies(copyBudget(kernel, threads, forwardCopies)), liveness(kernel, fusesEpilogues(kernel, threads)),
        tid(tid), threads(threads), splitOperands(splitOperands), bf16Operands(bf16Operands),
        productChains(productChains), maxSplitK(maxSplitK), factorGates(factorGates),
        padByPattern(padByPattern && shapes), wideWarpTiles(wideWarpTiles), placement(shapes ? placement : Placement::Accesses),
        shapes(shapes) {}

  /// Per-key gated pairs across row blocks on the tensor cores (TileLoopStrategy::factorsGatedPairs).
  bool factorsGatedPairs() override { return factorGates; }

  /// Product epilogues (productEpilogues) keep a warp's sums live while the rest of the chain loads: in the
  /// 1024-thread backward kernels (64 registers a thread) they spilled (RetNet's backward 30% slower on the
  /// H200, its top segment local-memory stores: bench/NOTES.md v6; even a product added to the state gradient
  /// as it is: RetNet 7.5 -> 8.5 ms, v7), so only from 8 copies (128 registers) on: the forward, and the
  /// 512-thread backward of matrix states, 3-15% faster with them (v7).
  static bool fusesEpilogues(Operation *kernel, Value threads) {
    return copyBudget(kernel, threads) >= kEpilogueCopies;
  }

  /// The products liveness was computed for (TileLiveness keeps their operands alive until their stores).
  DenseMap<Operation *, Operation *> epilogues(Operation *) override { return liveness.epilogueProducts(); }

  Value allocate(OpBuilder &b, Operation *op, Value rows, Value cols) override {
    int64_t at = liveness.index(op);
    // A slot is free after its tile's last read; where the ops are ordered by level (scheduleByLevel), only
    // for a later level, so that one level's passes share no slot and need no barrier between them.
    auto released = [&](const Owner &o) {
      if (o.freeAfter >= at)
        return false;
      auto mine = op->getAttrOfType<IntegerAttr>(kTileLevelAttr);
      return !mine || o.level < 0 || o.block != op->getBlock() || o.level < mine.getInt();
    };
    for (const Owner &o : owners)
      if (released(o))
        classes[slots[o.slot].cls].free.insert(o.slot);
    llvm::erase_if(owners, released);
    int64_t pad = padFor(pattern(op->getResult(0)));
    size_t cls = classOf(rows, cols);
    LoopBuilder l(b, op->getLoc());
    Value stride = l.add(cols, l.idx(pad));
    int64_t slot = slots.size();
    if (classes[cls].free.empty()) {
      newSlot(b, op->getLoc(), cls);
    } else {
      slot = *classes[cls].free.begin();
      classes[cls].free.erase(classes[cls].free.begin());
    }
    slots[slot].pad = std::max(slots[slot].pad, pad);
    auto [last, reader] = liveness.lastReader(op);
    auto level = reader->getAttrOfType<IntegerAttr>(kTileLevelAttr);
    owners.push_back({slot, last, level ? level.getInt() : -1, reader->getBlock()});
    count(slots[slot], op);
    Value base = wrapPointer(b, op->getLoc(), slots[slot].pointer.getResult(0), l.mul(rows, stride), b.getF32Type());
    return memref::ReinterpretCastOp::create(b, op->getLoc(), tileType(b), base, OpFoldResult(l.idx(0)),
                                             ArrayRef<OpFoldResult>{rows, cols},
                                             ArrayRef<OpFoldResult>{stride, b.getIndexAttr(1)});
  }
  /// Moves the block-private `memref` (slotShaped: `rows` rows `stride` floats apart) into a slot of its own
  /// for the whole kernel, rows x (stride + kRowPad) and placed by its accesses like any other: its loads and
  /// stores address the slot instead.
  void movePrivateBuffer(Value memref, Value rows, Value stride) {
    Location loc = memref.getLoc();
    Block &entry = memref.getParentRegion()->front();
    SmallVector<Operation *> users(memref.getUsers().begin(), memref.getUsers().end());
    Operation *first = entry.findAncestorOpInBlock(*users.front());
    for (Operation *user : users)
      if (Operation *inEntry = entry.findAncestorOpInBlock(*user); inEntry->isBeforeInBlock(first))
        first = inEntry;
    OpBuilder b(first);
    LoopBuilder l(b, loc);
    double accesses = 0;
    for (Operation *user : users)
      accesses += TileLiveness::runs(user);
    int64_t reads = 0;
    for (Operation *user : users)
      if (auto load = dyn_cast<TileLoadOp>(user))
        reads += pattern(load.getResult());
    int64_t pad = padFor(reads);
    Value padded = l.add(stride, l.idx(pad));
    Slot &s = newSlot(b, loc, classOf(rows, stride));
    s.pad = pad;
    s.accesses = s.traffic = s.rounds = accesses;
    // Free for other tiles of its shape after its last access (the backward's recomputed state is dead once
    // the recomputation ends: the checkpoint loads of the backward pass take its slot).
    int64_t last = 0;
    for (Operation *user : users)
      last = std::max(last, liveness.end(entry.findAncestorOpInBlock(*user)));
    owners.push_back({int64_t(slots.size()) - 1, last, -1, nullptr});
    Value slot = wrapPointer(b, loc, s.pointer.getResult(0), l.mul(rows, padded), b.getF32Type());
    privateSlots[slot] = slots.size() - 1;
    auto retarget = [&](auto access) {
      access.getBufferMutable().assign(slot);
      access.getStrideMutable().assign(padded);
    };
    for (Operation *user : users) {
      if (auto load = dyn_cast<TileLoadOp>(user))
        retarget(load);
      else
        retarget(cast<TileStoreOp>(user));
    }
    eraseDead(memref.getDefiningOp());
  }
  /// A load of a moved private buffer reads it in place while no store to the buffer comes before the tile's
  /// last read, except that last read itself when it is a store in the load's block that writes each element
  /// after reading only that element of the tile (a running state updated in place: S = d S + ...).
  Value view(OpBuilder &b, Operation *op) override {
    auto load = cast<TileLoadOp>(op);
    if (!privateSlots.contains(load.getBuffer()) || !sameIndexValue(load.getValid(), load.getRows()))
      return {};
    int64_t at = liveness.index(op), last = liveness.lastRead(op);
    for (Operation *user : load.getBuffer().getUsers()) {
      auto store = dyn_cast<TileStoreOp>(user);
      if (!store)
        continue;
      int64_t i = liveness.index(store);
      if (i > at && i <= last &&
          (i != last || store->getBlock() != op->getBlock() ||
           readsElsewhere(store.getTile(), load.getResult(), liveness.epilogueProducts())))
        return {};
    }
    // The view's readers read the private buffer's slot (movePrivateBuffer counted the load once; by accesses,
    // that stands for them).
    count(slots[privateSlots.lookup(load.getBuffer())], op, /*counted=*/TileLiveness::runs(op),
          /*placementKey=*/placement != Placement::Accesses);
    return memref::ReinterpretCastOp::create(b, op->getLoc(), tileType(b), load.getBuffer(),
                                             OpFoldResult(load.getOffset()),
                                             ArrayRef<OpFoldResult>{load.getRows(), load.getCols()},
                                             ArrayRef<OpFoldResult>{load.getStride(), b.getIndexAttr(1)});
  }
  /// Element i = r cols + c of a thread goes to i + threads. A thread's share of a tile of known size is
  /// unrolled (share()); otherwise (r, c) advance by (threads / cols, threads % cols) with one carry, so only the
  /// first element of each thread divides.
  void parallel2D(LoopBuilder &l, Value rows, Value cols, function_ref<void(Value, Value)> body) override {
    OpBuilder &b = l.builder();
    Location loc = l.location();
    std::optional<int64_t> r = getConstantIntValue(rows), c = getConstantIntValue(cols);
    if (r && c && unrolls(*r * *c, threads)) {
      share(l, tid, l.idx(*r * *c), threads, [&](Value i) {
        auto [row, col] = divRem(l, i, cols);
        body(row, col);
      });
      gpu::BarrierOp::create(b, loc);
      return;
    }
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
  /// Into a block's own slot (a moved private buffer) every op writes each element from one thread: a plain
  /// read-modify-write. Elsewhere other blocks may add to the same element.
  void accumulate(LoopBuilder &l, Value value, Value buffer, ValueRange indices) override {
    if (privateSlots.contains(buffer)) {
      l.store(l.fadd(l.load(buffer, indices), value), buffer, indices);
      return;
    }
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

  /// Where the slots' extents are constants (a fixed-size kernel), the floats they take and, laid out as
  /// placeSlots does with `capacity` floats of shared memory, what those left in global memory cost: the floats
  /// their accesses move (passes()) and the round trips they wait for (rounds()), loop trips counted as in
  /// TileLiveness::runs, and their placeholders; else floats -1.
  struct Footprint {
    int64_t floats = 0;
    double globalTraffic = 0, globalRounds = 0;
    /// The placeholders of the slots left in global memory.
    DenseSet<Value> global;
  };
  Footprint constantFootprint(int64_t capacity) const {
    Footprint f;
    int64_t inShared = 0;
    for (size_t i : placementOrder()) {
      const SlotClass &cls = classes[slots[i].cls];
      if (!cls.rows.constant || !cls.cols.constant)
        return {-1};
      int64_t size = constantFloats(slots[i]);
      f.floats += size;
      if (inShared + size <= capacity) {
        inShared += size;
      } else {
        f.globalTraffic += slots[i].traffic * double(size);
        f.globalRounds += slots[i].rounds;
        f.global.insert(UnrealizedConversionCastOp(slots[i].pointer).getResult(0));
      }
    }
    return f;
  }
  /// Lays the slots out (see the class comment) and returns their sizes in floats, in layout order, as C++
  /// expressions of the launch's K, V and Z (value slices) for the launcher; fails where a slot's shape is
  /// not known at kernel entry.
  FailureOr<SmallVector<std::string>> placeSlots(gpu::GPUFuncOp kernel, Value scratch, Value K, Value V);

private:
  struct Slot {
    size_t cls;
    UnrealizedConversionCastOp pointer;
    /// TileLiveness::accesses of the tiles it holds (placement=latency: their rounds): the placement's key.
    double accesses = 0;
    /// The same with each read weighted by passes() (Footprint::globalTraffic).
    double traffic = 0;
    /// The same with each read weighted by rounds() (Footprint::globalRounds).
    double rounds = 0;
    /// The largest row padding of the tiles it holds.
    int64_t pad = kRowPad;
  };

  /// The slots in layout order: the most accessed first (each access of a slot touches about all of it, so the
  /// accesses are the traffic a float of shared memory saves; with placement=latency the most round trips a
  /// float first), then small shapes first.
  SmallVector<size_t> placementOrder() const {
    SmallVector<size_t> order(slots.size());
    std::iota(order.begin(), order.end(), 0);
    // With placement=latency, the round trips a float (where the slot's size is a constant).
    auto key = [&](size_t i) {
      const SlotClass &cls = classes[slots[i].cls];
      if (placement != Placement::Latency || !cls.rows.constant || !cls.cols.constant)
        return slots[i].accesses;
      return slots[i].accesses / double(constantFloats(slots[i]));
    };
    std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
      if (key(x) != key(y))
        return key(x) > key(y);
      return classes[slots[x].cls].rank() < classes[slots[y].cls].rank();
    });
    return order;
  }
  /// Adds the accesses of the tile `def` defines (its write and its reads, less `counted` already there) to slot
  /// `s`, under each weighting: traffic by passes(), rounds by rounds(), and the placement's key (accesses: one a
  /// read, or with placement=latency the rounds) where `placementKey`.
  void count(Slot &s, Operation *def, double counted = 0, bool placementKey = true) const {
    double traffic = liveness.accesses(def, passes()), trips = liveness.accesses(def, rounds());
    s.traffic += traffic - counted;
    s.rounds += trips - counted;
    if (placementKey)
      s.accesses += (placement == Placement::Latency ? trips : liveness.accesses(def)) - counted;
  }
  /// A tile's storage: rows x cols floats, rows `stride` apart from an offset into a slot or buffer.
  static MemRefType tileType(OpBuilder &b) {
    int64_t dyn = ShapedType::kDynamic;
    return MemRefType::get({dyn, dyn}, b.getF32Type(), StridedLayoutAttr::get(b.getContext(), dyn, {dyn, 1}));
  }
  /// A slot of class `cls`, its pointer a placeholder at kernel entry until placeSlots lays the slots out.
  Slot &newSlot(OpBuilder &b, Location loc, size_t cls) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&b.getBlock()->getParent()->getParentOfType<gpu::GPUFuncOp>().getBody().front());
    auto placeholder =
        UnrealizedConversionCastOp::create(b, loc, TypeRange{LLVM::LLVMPointerType::get(b.getContext())}, ValueRange{});
    slots.push_back({cls, placeholder});
    return slots.back();
  }
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
  /// The floats slot `s` takes where its extents are constants.
  int64_t constantFloats(const Slot &s) const {
    const SlotClass &cls = classes[s.cls];
    return *cls.rows.constant * (*cls.cols.constant + s.pad);
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
    share(l, tid, n, threads, body);
    gpu::BarrierOp::create(l.builder(), l.location());
  }
  /// Most copies of a loop body share() unrolls into: 16 in a forward kernel (a 128 x 128 tile over 1024
  /// threads), 4 in a 1024-thread backward one, whose live tiles already fill the 64 registers a thread has
  /// there (on the H200, 16 copies made the backward 4-14% slower through spills, 4 made it faster:
  /// bench/NOTES.md v4); a backward kernel of fewer threads gets as many more as its registers allow.
  static constexpr int64_t kForwardCopies = 16, kBackwardCopies = 4;
  /// The copy budget (registers a thread) from which product epilogues pay: 8, a 512-thread backward.
  static constexpr int64_t kEpilogueCopies = 8;
  static int64_t copyBudget(Operation *kernel, Value threads, int64_t forwardCopies = 0) {
    auto direction = kernel->getAttrOfType<StringAttr>("linac.direction");
    if (!direction || direction.getValue() != "backward")
      return forwardCopies > 0 ? forwardCopies : kForwardCopies;
    // The backward's budget scales with the registers a thread has: 64 at 1024 threads, 128 at 512, ...
    int64_t blockSize = getConstantIntValue(threads).value_or(1024);
    return std::min(kForwardCopies, kBackwardCopies * std::max<int64_t>(1, 1024 / blockSize));
  }
  bool unrolls(int64_t n, Value step) const {
    std::optional<int64_t> s = getConstantIntValue(step);
    return s && *s > 0 && n <= maxCopies * *s;
  }
  /// body(i) for i = first, first + step, ... below n, with first < step: one thread's (or warp's) share of
  /// [0, n). Where n and step are constants and the share is at most maxCopies, the loop runs over the copies
  /// (a constant trip count) and is unrolled if its body has no loop of its own: a loop waits for each
  /// iteration's loads before starting the next, copies put them all in flight at once and their indices
  /// fold; the copies' loads go before their stores (loadsFirst). Bodies with inner loops (sums, a product's k
  /// steps) gain nothing and the copies cost registers. (Larger shares as loops over groups of maxCopies copies
  /// made the backward kernels 8-15% slower through spills: bench/NOTES.md v5.)
  void share(LoopBuilder &l, Value first, Value n, Value step, function_ref<void(Value)> body) {
    OpBuilder &b = l.builder();
    std::optional<int64_t> total = getConstantIntValue(n), stride = getConstantIntValue(step);
    if (!total || !unrolls(*total, step)) {
      auto loop = scf::ForOp::create(b, l.location(), first, n, step);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(loop.getBody());
      body(loop.getInductionVar());
      return;
    }
    int64_t trip = (*total + *stride - 1) / *stride;
    auto loop = scf::ForOp::create(b, l.location(), l.idx(0), l.idx(trip), l.idx(1));
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(loop.getBody());
      Value i = l.add(first, l.mul(loop.getInductionVar(), step));
      if (*total % *stride == 0)
        body(i);
      else
        l.ifThenElse(l.lt(i, n), [&] { body(i); });
    }
    bool nested = loop.getBody()
                      ->walk([](LoopLikeOpInterface) { return WalkResult::interrupt(); })
                      .wasInterrupted();
    if (nested)
      return;
    Operation *before = loop->getPrevNode(), *after = loop->getNextNode();
    Block *block = loop->getBlock();
    if (failed(loopUnrollFull(loop)))
      return;
    loadsFirst(before ? std::next(before->getIterator()) : block->begin(),
               after ? after->getIterator() : block->end());
  }
  /// Moves the loads (and the arithmetic that needs no write) of a thread's unrolled copies above their first
  /// write, so that all of the copies' loads are in flight at once. Without it, each copy's store waits for
  /// its own load before the next copy's load may issue: the compiler cannot reorder them, as tile slots and
  /// buffers are generic pointers that might alias. They do not: the copies of one tile op write elements no
  /// other copy reads (a tile op's lowering never reads an element another thread of the same op writes, which
  /// would be a race; a copy that updates its own element still reads it first). Left alone when any op has
  /// a region or effects other than reads and writes of memory.
  static void loadsFirst(Block::iterator begin, Block::iterator end) {
    SmallVector<std::pair<Operation *, bool>> ops; // (op, whether it writes memory)
    for (Operation &op : llvm::make_range(begin, end)) {
      if (op.getNumRegions())
        return;
      bool writes = false;
      if (!isMemoryEffectFree(&op)) {
        auto effects = dyn_cast<MemoryEffectOpInterface>(&op);
        if (!effects)
          return;
        SmallVector<MemoryEffects::EffectInstance> list;
        effects.getEffects(list);
        for (const MemoryEffects::EffectInstance &e : list) {
          if (!isa<MemoryEffects::Read, MemoryEffects::Write>(e.getEffect()))
            return;
          writes |= isa<MemoryEffects::Write>(e.getEffect());
        }
      }
      ops.push_back({&op, writes});
    }
    Operation *firstWrite = nullptr;
    DenseSet<Operation *> pinned; // writes, and ops that use a result of a pinned op
    for (auto [op, writes] : ops) {
      bool usesPinned = llvm::any_of(op->getOperands(), [&](Value v) {
        Operation *def = v.getDefiningOp();
        return def && pinned.contains(def);
      });
      if (writes || usesPinned) {
        pinned.insert(op);
        if (!firstWrite)
          firstWrite = op;
      } else if (firstWrite) {
        op->moveBefore(firstWrite);
      }
    }
  }

  int64_t maxCopies;
  TileLiveness liveness;
  Value tid, threads;
  bool splitOperands, bf16Operands;
  int64_t productChains, maxSplitK;
  bool factorGates, padByPattern, wideWarpTiles;
  Placement placement;
  /// The most fragments a warp computed at once in any product of the kernel (linac.warp_tile_fragments).
  int64_t widestWarpTile = 1;
  /// The kernel's tile shapes (for fragmentPattern).
  TileShapes *shapes;
  /// Fewest k steps a warp's part of a split product has.
  static constexpr int64_t kMinSplitSteps = 4;
  /// The split products' reduction slots (indices into `slots`) by rows (32 floats each), one per shape.
  DenseMap<int64_t, size_t> reductionSlots;
  /// A reduction slot of `rows` x 32 floats (a class of rows x (32 - kRowPad): slots pad their rows), never
  /// freed (allocate() hands out only slots whose owner died); each use counts as a write and a read in the
  /// chunk loop for the placement.
  Value reductionSlot(OpBuilder &b, Location loc, int64_t rows) {
    LoopBuilder l(b, loc);
    auto [it, added] = reductionSlots.try_emplace(rows, slots.size());
    if (added)
      newSlot(b, loc, classOf(l.idx(rows), l.idx(32 - kRowPad)));
    Slot &s = slots[it->second];
    s.accesses += 2 * 64;
    s.traffic += 2 * 64;
    s.rounds += 2 * 64;
    return wrapPointer(b, loc, s.pointer.getResult(0), l.idx(rows * 32), b.getF32Type());
  }
  SmallVector<SlotClass> classes;
  SmallVector<Slot> slots;
  /// The moved private buffers (movePrivateBuffer), as the memrefs their accesses now address.
  DenseMap<Value, size_t> privateSlots;
  /// The slots in use: the slot, the index of its tile's last read, and the level and block of the op that
  /// reads it last (level -1: none to compare). The lowest free slot of a shape is taken first.
  struct Owner {
    int64_t slot, freeAfter, level;
    Block *block;
  };
  SmallVector<Owner> owners;
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
  SmallVector<size_t> order = placementOrder();
  SmallVector<Value> sizes;
  SmallVector<std::string> expressions;
  for (size_t s : order) {
    const SlotClass &cls = classes[slots[s].cls];
    sizes.push_back(l.mul(dimValue(cls.rows), l.add(dimValue(cls.cols), l.idx(slots[s].pad))));
    std::string rows = launchExpression(dimValue(cls.rows), K, V), cols = launchExpression(dimValue(cls.cols), K, V);
    if (rows.empty() || cols.empty())
      return kernel.emitError("linac-tile-to-gpu: a tile extent is not a function of the launch sizes"), failure();
    expressions.push_back(rows + " * (" + cols + " + " + std::to_string(slots[s].pad) + ")");
  }

  // The shared memory of the block, as a generic pointer.
  LLVM::GlobalOp global = tileSharedMemory(kernel->getParentOfType<gpu::GPUModuleOp>());
  Value smem = LLVM::AddrSpaceCastOp::create(b, loc, ptrTy, LLVM::AddressOfOp::create(b, loc, global));
  // A fixed-size kernel (linac.static_dims) assumes the most shared memory a block may have on sm_90, so that
  // the placement folds to constants; the launcher gives it exactly what that placement takes.
  Value capacity;
  if (kernel->hasAttr("linac.static_dims")) {
    capacity = l.idx(staticSharedFloats(kernel));
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

/// The memory a run of ops between two barriers reads and writes, by root: a tile slot (its placeholder
/// pointer, before placeSlots) or a kernel argument. `unknown`: an access whose root is not found, or an op
/// with other effects; it conflicts with everything.
struct Accesses {
  DenseSet<Value> reads, writes;
  bool unknown = false;

  /// The slot or argument a memref addresses, or null.
  static Value root(Value v) { return memoryRoot(v); }
  void add(Operation *op) {
    op->walk([&](Operation *inner) {
      auto note = [&](Value memref, bool write) {
        Value r = root(memref);
        if (!r)
          unknown = true;
        else
          (write ? writes : reads).insert(r);
      };
      if (auto load = dyn_cast<memref::LoadOp>(inner))
        note(load.getMemref(), false);
      else if (auto store = dyn_cast<memref::StoreOp>(inner))
        note(store.getMemref(), true);
      else if (auto rmw = dyn_cast<memref::AtomicRMWOp>(inner))
        note(rmw.getMemref(), true);
      // mma.sync reads and writes registers only (its op declares no effects, so it counts as having any).
      else if (!isMemoryEffectFree(inner) && !isa<memref::ReinterpretCastOp, gpu::BarrierOp, NVVM::MmaOp>(inner) &&
               inner->getNumRegions() == 0)
        unknown = true;
    });
  }
  void add(const Accesses &o) {
    reads.insert(o.reads.begin(), o.reads.end());
    writes.insert(o.writes.begin(), o.writes.end());
    unknown |= o.unknown;
  }
  /// Whether the two runs may not overlap: one writes what the other reads or writes.
  bool conflicts(const Accesses &o) const {
    auto meets = [](const DenseSet<Value> &x, const DenseSet<Value> &y) {
      return llvm::any_of(x, [&](Value v) { return y.contains(v); });
    };
    return unknown || o.unknown || meets(writes, o.reads) || meets(writes, o.writes) || meets(reads, o.writes);
  }
};

/// Removes the barriers between tile ops that do not depend on each other (returns how many): a barrier goes
/// where the run of ops since the last barrier kept and the run up to the next one touch no common slot or
/// argument that either writes (every tile op ends in a barrier; loads of the chunk's inputs, for one, need
/// none between them). Runs with a barrier nested inside (a loop of its own) keep the barriers around them. A
/// block's first run also follows what precedes the block without a barrier: the ops before its parent op back
/// to the last barrier (recursively outward), and for a loop body the body's own last run (the previous
/// iteration).
int64_t dropBarriers(gpu::GPUFuncOp kernel) {
  int64_t dropped = 0;
  auto hasBarrier = [](Operation *op) {
    return op->walk([](gpu::BarrierOp) { return WalkResult::interrupt(); }).wasInterrupted();
  };
  // The accesses that run unsynchronized before the first op of `block`.
  std::function<Accesses(Block *)> before = [&](Block *block) {
    Accesses acc;
    Operation *parent = block->getParentOp();
    if (!parent || isa<gpu::GPUFuncOp>(parent))
      return acc;
    if (isa<LoopLikeOpInterface>(parent))
      for (Operation &op : llvm::reverse(*block)) {
        if (isa<gpu::BarrierOp>(op) || hasBarrier(&op))
          break;
        acc.add(&op);
      }
    for (Operation *op = parent->getPrevNode(); op; op = op->getPrevNode()) {
      if (isa<gpu::BarrierOp>(op) || hasBarrier(op))
        return acc;
      acc.add(op);
    }
    acc.add(before(parent->getBlock()));
    return acc;
  };
  SmallVector<Block *> blocks;
  kernel.walk([&](Block *block) { blocks.push_back(block); });
  for (Block *block : blocks) {
    if (llvm::none_of(*block, [](Operation &op) { return isa<gpu::BarrierOp>(op); }))
      continue;
    // `since`: the run since the last barrier kept (opaque if it holds a nested barrier); `pending`: the
    // barrier that ended it, still to decide; `next`: the run after that barrier.
    Accesses since = before(block), next;
    bool sinceOpaque = false, nextOpaque = false;
    gpu::BarrierOp pending;
    auto decide = [&] {
      if (!sinceOpaque && !nextOpaque && !since.conflicts(next)) {
        pending.erase();
        ++dropped;
        since.add(next);
      } else {
        since = next;
        sinceOpaque = nextOpaque;
      }
      next = Accesses();
      nextOpaque = false;
    };
    for (Operation &op : llvm::make_early_inc_range(*block)) {
      if (auto barrier = dyn_cast<gpu::BarrierOp>(op)) {
        if (pending)
          decide();
        pending = barrier;
        continue;
      }
      Accesses &run = pending ? next : since;
      (pending ? nextOpaque : sinceOpaque) |= hasBarrier(&op);
      run.add(&op);
    }
    // The last run leads to the block's end: a loop's next iteration, or the parent's next ops, which this
    // walk does not see; the last barrier stays.
  }
  return dropped;
}

/// Tensor cores, mma.sync m16n8k8 on tf32, with fp32 accuracy: each operand x splits into a tf32 part
/// hi = x with its low 13 mantissa bits cleared and the rest lo = x - hi (exact), and
/// x y ~ hi_x hi_y + hi_x lo_y + lo_x hi_y, dropping only lo_x lo_y (about 2^-22 relative). Each warp takes
/// 16 x 8 output fragments in turn; operand elements past the edges are read clamped and replaced by zero.
/// Fragment layouts (PTX ISA, mma.m16n8k8 .tf32), with g = lane / 4 and t = lane % 4:
///   A (16 x 8):  a0 (g, t)  a1 (g + 8, t)  a2 (g, t + 4)  a3 (g + 8, t + 4)
///   B (8 x 8):   b0 (t, g)  b1 (t + 4, g)
///   C (16 x 8):  c0 (g, 2t)  c1 (g, 2t + 1)  c2 (g + 8, 2t)  c3 (g + 8, 2t + 1)
/// With bf16Operands (products=bf16), mma.sync m16n8k16 on operands rounded to bf16 (to nearest even), two to a
/// register, the lower column (A) or row (B) in the low half; C as above:
///   A (16 x 16): {(g, 2t), (g, 2t + 1)}  {(g + 8, 2t), (g + 8, 2t + 1)}  {(g, 2t + 8), (g, 2t + 9)}
///                {(g + 8, 2t + 8), (g + 8, 2t + 9)}
///   B (16 x 8):  {(2t, g), (2t + 1, g)}  {(2t + 8, g), (2t + 9, g)}
bool GpuStrategy::product(LoopBuilder &l, Value rows, Value cols, Value inner, function_ref<Value(Value, Value)> lhs,
                          function_ref<Value(Value, Value)> rhs, function_ref<void(Value, Value, Value)> store) {
  OpBuilder &b = l.builder();
  Location loc = l.location();
  MLIRContext *ctx = b.getContext();
  Type f32 = b.getF32Type(), i32 = b.getI32Type();
  auto div = [&](Value x, int64_t d) { return divRem(l, x, l.idx(d)).first; };
  auto rem = [&](Value x, int64_t d) { return divRem(l, x, l.idx(d)).second; };
  auto ceilDiv = [&](Value x, int64_t d) { return div(l.add(x, l.idx(d - 1)), d); };
  std::optional<int64_t> r = getConstantIntValue(rows), c = getConstantIntValue(cols),
                         n = getConstantIntValue(threads);
  Value lane = rem(tid, 32), warp = div(tid, 32);
  Value warps = n ? l.idx(*n / 32) : div(threads, 32);
  Value g = div(lane, 4), t = rem(lane, 4);
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
  // To nearest (ties away from zero): add half of the dropped part's last place, then clear the low 13 bits.
  auto roundToTf32 = [&](Value x) -> Value {
    Value bits = arith::BitcastOp::create(b, loc, i32, x);
    Value half = arith::ConstantIntOp::create(b, loc, i32, int64_t(0x1000));
    return arith::AndIOp::create(b, loc, arith::AddIOp::create(b, loc, bits, half),
                                 arith::ConstantIntOp::create(b, loc, i32, int64_t(0xFFFFE000)));
  };
  // Two operand elements rounded to bf16 and packed in one register, `low` in the low half.
  auto packBf16 = [&](Value low, Value high) -> Value {
    auto pairType = VectorType::get({2}, f32);
    Value pair = LLVM::PoisonOp::create(b, loc, pairType);
    pair = LLVM::InsertElementOp::create(b, loc, pair, low, arith::ConstantIntOp::create(b, loc, i32, 0));
    pair = LLVM::InsertElementOp::create(b, loc, pair, high, arith::ConstantIntOp::create(b, loc, i32, 1));
    Value rounded = arith::TruncFOp::create(b, loc, VectorType::get({2}, b.getBF16Type()), pair);
    return LLVM::BitcastOp::create(b, loc, i32, rounded);
  };
  // k elements per mma step.
  const int64_t kStep = bf16Operands ? 16 : 8;
  Type accType = LLVM::LLVMStructType::getLiteral(ctx, {f32, f32, f32, f32});
  auto mma = [&](ValueRange a, ValueRange bb, ValueRange c) {
    NVVM::MMATypes type = bf16Operands ? NVVM::MMATypes::bf16 : NVVM::MMATypes::tf32;
    std::array<NVVM::MMATypes, 2> types = {type, type};
    std::array<NVVM::MMALayout, 2> layouts = {NVVM::MMALayout::row, NVVM::MMALayout::col};
    OperationState state(loc, NVVM::MmaOp::getOperationName());
    NVVM::MmaOp::build(b, state, accType, a, bb, c, {16, 8, int32_t(kStep)}, std::nullopt, std::nullopt, types,
                       layouts);
    Value d = b.create(state)->getResult(0);
    SmallVector<Value> out;
    for (int64_t i = 0; i < 4; ++i)
      out.push_back(LLVM::ExtractValueOp::create(b, loc, d, ArrayRef<int64_t>{i}));
    return out;
  };

  // A warp takes bm x bn fragments at once where the sizes are known and there are enough to keep every warp
  // busy: per k step it loads bm A and bn B fragments for bm * bn products (one A and one B per product
  // otherwise), so the shared-memory loads that bound the products fall by up to half.
  // The warps' work items, `tiles` in rows of `tilesN`: warp tiles of bm x bn fragments with known sizes
  // (constant counts), else single fragments counted at run time.
  int64_t bm = 1, bn = 1, items = 0;
  Value tiles, tilesN;
  if (r && c && n) {
    int64_t tm = (*r + 15) / 16, tn = (*c + 7) / 8, w = *n / 32;
    std::tie(bm, bn) = warpTile(tm, tn, w, wideWarpTiles);
    items = (tm / bm) * (tn / bn);
    widestWarpTile = std::max(widestWarpTile, bm * bn);
    tiles = l.idx(items);
    tilesN = l.idx(tn / bn);
  } else {
    tilesN = ceilDiv(cols, 8);
    tiles = l.mul(ceilDiv(rows, 16), tilesN);
  }
  // A tf32x3 step's three products, accumulated in one chain, wait for each other (three mma latencies a
  // step); in separate chains, summed after the last step (hi hi + (lo hi + hi lo)), they overlap. A warp tile
  // of several fragments already has independent chains, and the accumulators cost registers: by default
  // three chains only for single-fragment warp tiles in kernels with 128 registers a thread or more.
  int64_t chains = 1;
  if (splitOperands)
    chains = productChains ? productChains : (bm * bn == 1 && maxCopies >= kEpilogueCopies ? 3 : 1);
  int64_t fragments = bm * bn;
  // Split k: where fewer warp tiles than warps have work (a C x C product over the key dimension: 8 fragments
  // for 16 warps at 512 threads), `ways` warps share a warp tile's k steps, each a contiguous part of at least
  // kMinSplitSteps steps; the others' partial sums go through a shared reduction slot to the warp of part 0,
  // which adds them in order (deterministic) and stores. Whole fragments and k steps only (no guards).
  // Where the sizes are known multiples of the warp tile, every output is in range (storeSums).
  bool whole = r && c && *r % (16 * bm) == 0 && *c % (8 * bn) == 0;
  int64_t ways = 1;
  std::optional<int64_t> kk = getConstantIntValue(inner);
  if (items && whole && kk && *kk % kStep == 0)
    while (ways * 2 <= maxSplitK && items * ways * 2 <= *n / 32 && (*kk / kStep) % (ways * 2) == 0 &&
           *kk / kStep / (ways * 2) >= kMinSplitSteps)
      ways *= 2;

  Value zero = l.f32(0.0f);
  // The k steps [kBegin, kBegin + length) of the warp tile at (i0, j0), its sums in fragment order; `guarded`
  // reads clamped and zeroes what lies past an edge. Interior fragments (whole outputs, inner a multiple of the
  // k step) take the unguarded loop.
  auto emitSteps = [&](Value i0, Value j0, bool guarded, Value kBegin, Value length) {
    SmallVector<Value> zeros(4 * fragments * chains, zero);
    auto steps = scf::ForOp::create(b, loc, l.idx(0), length, l.idx(kStep), zeros);
    steps->setAttr(kKLoopAttr, b.getUnitAttr());
    OpBuilder::InsertionGuard inside(b);
    b.setInsertionPointToStart(steps.getBody());
    Value k0 = l.add(kBegin, steps.getInductionVar());
    Value c0 = l.add(k0, t), c1 = l.add(c0, l.idx(4));
    auto read = [&](function_ref<Value(Value, Value)> at, Value i, Value k, Value n, Value m) {
      return guarded ? element(at, i, k, n, m) : at(i, k);
    };
    auto operand = [&](Value x, SmallVector<Value> &hiPart, SmallVector<Value> &loPart) {
      if (!splitOperands) {
        hiPart.push_back(roundToTf32(x));
        return;
      }
      auto [hi, lo] = split(x);
      hiPart.push_back(hi);
      loPart.push_back(lo);
    };
    SmallVector<SmallVector<Value>> aHi(bm), aLo(bm), bHi(bn), bLo(bn);
    if (bf16Operands) {
      // Columns (A) and rows (B) 2t, 2t + 1, 2t + 8, 2t + 9 of the step.
      Value e0 = l.add(k0, l.mul(t, l.idx(2))), e1 = l.add(e0, l.idx(1));
      Value e8 = l.add(e0, l.idx(8)), e9 = l.add(e0, l.idx(9));
      for (int64_t mi = 0; mi < bm; ++mi) {
        Value r0 = l.add(i0, l.add(g, l.idx(16 * mi))), r1 = l.add(r0, l.idx(8));
        auto at = [&](Value r, Value c) { return read(lhs, r, c, rows, inner); };
        for (auto [r, c, c2] : {std::tuple{r0, e0, e1}, std::tuple{r1, e0, e1}, std::tuple{r0, e8, e9},
                                std::tuple{r1, e8, e9}})
          aHi[mi].push_back(packBf16(at(r, c), at(r, c2)));
      }
      for (int64_t nj = 0; nj < bn; ++nj) {
        Value col = l.add(j0, l.add(g, l.idx(8 * nj)));
        auto at = [&](Value k) { return read(rhs, k, col, inner, cols); };
        bHi[nj].push_back(packBf16(at(e0), at(e1)));
        bHi[nj].push_back(packBf16(at(e8), at(e9)));
      }
    } else {
      for (int64_t mi = 0; mi < bm; ++mi) {
        Value r0 = l.add(i0, l.add(g, l.idx(16 * mi))), r1 = l.add(r0, l.idx(8));
        for (auto [r, c] : {std::pair{r0, c0}, std::pair{r1, c0}, std::pair{r0, c1}, std::pair{r1, c1}})
          operand(read(lhs, r, c, rows, inner), aHi[mi], aLo[mi]);
      }
      for (int64_t nj = 0; nj < bn; ++nj) {
        Value col = l.add(j0, l.add(g, l.idx(8 * nj)));
        for (Value k : {c0, c1})
          operand(read(rhs, k, col, inner, cols), bHi[nj], bLo[nj]);
      }
    }
    // Accumulators chain-major: chain ch of fragment fr at 4 * (ch * fragments + fr).
    SmallVector<Value> next(steps.getRegionIterArgs());
    auto acc = [&](int64_t ch, int64_t fr) { return MutableArrayRef<Value>(next).slice(4 * (ch * fragments + fr), 4); };
    auto accumulate = [&](int64_t ch, int64_t fr, ValueRange a, ValueRange bb) {
      SmallVector<Value> sums = mma(a, bb, SmallVector<Value>(acc(ch, fr)));
      llvm::copy(sums, acc(ch, fr).begin());
    };
    for (int64_t mi = 0; mi < bm; ++mi)
      for (int64_t nj = 0; nj < bn; ++nj) {
        int64_t fr = mi * bn + nj;
        if (splitOperands) {
          accumulate(chains - 1, fr, aLo[mi], bHi[nj]);
          accumulate(chains == 3 ? 1 : chains - 1, fr, aHi[mi], bLo[nj]);
        }
        accumulate(0, fr, aHi[mi], bHi[nj]);
      }
    scf::YieldOp::create(b, loc, next);
    // The fragments' sums: hi hi + (the corrections).
    SmallVector<Value> sums;
    b.setInsertionPointAfter(steps);
    for (int64_t i = 0; i < 4 * fragments; ++i) {
      Value sum = steps.getResult(i);
      if (chains == 3)
        sum = l.fadd(sum, l.fadd(steps.getResult(4 * fragments + i), steps.getResult(8 * fragments + i)));
      else if (chains == 2)
        sum = l.fadd(sum, steps.getResult(4 * fragments + i));
      sums.push_back(sum);
    }
    return sums;
  };
  // Stores the warp tile's sums. Where the tile is whole: no guard, and the stores' loads (a product lowered at
  // its store reads the rest of its chain there: productEpilogues) go before the first store (loadsFirst), else
  // each element waits for its own loads in turn.
  auto storeSums = [&](Value i0, Value j0, ValueRange sums) {
    Block *block = b.getInsertionBlock();
    Block::iterator end = b.getInsertionPoint();
    Operation *last = end == block->begin() ? nullptr : &*std::prev(end);
    for (int64_t mi = 0; mi < bm; ++mi)
      for (int64_t nj = 0; nj < bn; ++nj) {
        Value r0 = l.add(i0, l.add(g, l.idx(16 * mi))), r1 = l.add(r0, l.idx(8));
        Value c0 = l.add(j0, l.add(l.mul(t, l.idx(2)), l.idx(8 * nj))), c1 = l.add(c0, l.idx(1));
        std::pair<Value, Value> places[4] = {{r0, c0}, {r0, c1}, {r1, c0}, {r1, c1}};
        for (int64_t e = 0; e < 4; ++e) {
          auto [r, c] = places[e];
          Value sum = sums[4 * (mi * bn + nj) + e];
          if (whole)
            store(r, c, sum);
          else
            l.ifThenElse(both(inRange(r, rows), inRange(c, cols)), [&] { store(r, c, sum); });
        }
      }
    if (whole)
      loadsFirst(last ? std::next(last->getIterator()) : block->begin(), b.getInsertionPoint());
  };
  auto origin = [&](Value f) {
    auto [fi, fj] = divRem(l, f, tilesN);
    return std::pair{l.mul(fi, l.idx(16 * bm)), l.mul(fj, l.idx(8 * bn))};
  };

  if (ways > 1) {
    // Warp w takes warp tile w % items, k part w / items; warps past items * ways idle.
    Value item = rem(warp, items), part = div(warp, items);
    auto [i0, j0] = origin(item);
    int64_t length = *kk / ways, values = 4 * fragments;
    Value kBegin = l.mul(part, l.idx(length));
    Value active = l.lt(warp, l.idx(items * ways));
    auto partial = scf::IfOp::create(b, loc, SmallVector<Type>(values, f32), active, /*withElseRegion=*/true);
    {
      OpBuilder::InsertionGuard inside(b);
      b.setInsertionPointToStart(partial.thenBlock());
      scf::YieldOp::create(b, loc, emitSteps(i0, j0, false, kBegin, l.idx(length)));
      b.setInsertionPointToStart(partial.elseBlock());
      scf::YieldOp::create(b, loc, SmallVector<Value>(values, zero));
    }
    // The reduction slot: one row of 32 lanes per (part - 1, warp tile, value), lanes adjacent (no bank
    // conflicts); one slot per shape for the kernel, its products ordered by their barriers.
    int64_t reductionRows = (ways - 1) * items * values;
    Value reduction = reductionSlot(b, loc, reductionRows);
    auto at = [&](Value p, int64_t v) {
      // ((p - 1) * items + item) * values + v, then the lane.
      Value row = l.add(l.mul(l.add(l.mul(l.sub(p, l.idx(1)), l.idx(items)), item), l.idx(values)), l.idx(v));
      return l.add(l.mul(row, l.idx(32)), lane);
    };
    Value zeroIdx = l.idx(0);
    l.ifThenElse(both(active, arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt, part, zeroIdx)), [&] {
      for (int64_t v = 0; v < values; ++v)
        l.store(partial.getResult(v), reduction, at(part, v));
    });
    gpu::BarrierOp::create(b, loc);
    l.ifThenElse(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, part, zeroIdx), [&] {
      SmallVector<Value> sums(partial.getResults());
      for (int64_t p = 1; p < ways; ++p)
        for (int64_t v = 0; v < values; ++v)
          sums[v] = l.fadd(sums[v], l.load(reduction, at(l.idx(p), v)));
      storeSums(i0, j0, sums);
    });
    gpu::BarrierOp::create(b, loc);
    return true;
  }

  share(l, warp, tiles, warps, [&](Value f) {
    auto [i0, j0] = origin(f);
    Value interior =
        both(both(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sle, l.add(i0, l.idx(16 * bm)), rows),
                  arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sle, l.add(j0, l.idx(8 * bn)), cols)),
             arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, rem(inner, kStep), l.idx(0)));
    SmallVector<Type> accTypes(4 * fragments, f32);
    auto branches = scf::IfOp::create(b, loc, accTypes, interior, /*withElseRegion=*/true);
    for (bool guarded : {false, true}) {
      OpBuilder::InsertionGuard inside(b);
      b.setInsertionPointToStart(guarded ? branches.elseBlock() : branches.thenBlock());
      SmallVector<Value> sums = emitSteps(i0, j0, guarded, l.idx(0), inner);
      scf::YieldOp::create(b, loc, sums);
    }
    storeSums(i0, j0, branches.getResults());
  });
  gpu::BarrierOp::create(b, loc);
  return true;
}

struct TileToGpuPass : linac::impl::LinacTileToGpuBase<TileToGpuPass> {
  using LinacTileToGpuBase::LinacTileToGpuBase;
  void runOnOperation() override {
    // The options that take one of a few words; those that name kernels by direction (schedule also takes fit).
    static constexpr StringLiteral kProducts[] = {"tf32x3", "tf32", "bf16"};
    static constexpr StringLiteral kModes[] = {"none", "forward", "all"};
    static constexpr StringLiteral kScheduleModes[] = {"none", "fit", "forward", "all"};
    static constexpr StringLiteral kPlacements[] = {"accesses", "latency"};
    for (auto [name, mode, allowed] : {std::tuple<StringRef, StringRef, ArrayRef<StringLiteral>>{
                                           "products", products, kProducts},
                                       {"pad-by-pattern", padByPattern, kModes},
                                       {"wide-warp-tiles", wideWarpTiles, kModes},
                                       {"schedule", schedule, kScheduleModes},
                                       {"placement", placement, kPlacements}})
      if (!llvm::is_contained(allowed, mode)) {
        InFlightDiagnostic error = getOperation().emitError("linac-tile-to-gpu: ") << name << " must be ";
        for (auto [i, word] : llvm::enumerate(allowed))
          error << (i == 0 ? "" : i + 1 == allowed.size() ? " or " : ", ") << word;
        error << ", not '" << mode << "'";
        return signalPassFailure();
      }
    SmallVector<gpu::GPUFuncOp> kernels;
    getOperation().walk([&](gpu::GPUFuncOp kernel) {
      // linac-tile-to-fragments' kernels have no tile ops left.
      if (kernel->getAttrOfType<IntegerAttr>("linac.tile_scratch_arg") &&
          kernel->getAttrOfType<IntegerAttr>("linac.chunk_size") && !kernel->hasAttr("linac.fragments"))
        kernels.push_back(kernel);
    });
    for (gpu::GPUFuncOp kernel : kernels) {
      auto direction = kernel->getAttrOfType<StringAttr>("linac.direction");
      bool forward = direction && direction.getValue() == "forward";
      bool fixedSize = kernel->hasAttr("linac.static_dims");
      if (schedule != "fit" || !fixedSize) {
        bool scheduled = schedule == "all" || (schedule == "forward" && forward);
        if (failed(lowerKernel(kernel, scheduled, nullptr)))
          return signalPassFailure();
        continue;
      }
      // fit: lower the kernel both ways and keep the ordered one unless its slots take more memory than the
      // program order's where that pushes tiles out of shared memory. Ordering by level keeps more tiles live
      // at once; where they overflow it cost the K = V = 256 forwards 5-31% and the delta rule's K = V = 128
      // backward (DeltaNet) 4.5% on the H200, though Gated DeltaNet's (354 -> 392 KB) gained 5.5%: no rule
      // from the slots alone gets every kernel right (bench/NOTES.md v11). The generic kernels keep program
      // order (ordered, the Gated DeltaNet one was 8% slower).
      OpBuilder after(kernel);
      after.setInsertionPointAfter(kernel);
      auto trial = cast<gpu::GPUFuncOp>(after.clone(*kernel));
      trial.setName((kernel.getName() + "_scheduled").str());
      int64_t plain = 0, ordered = 0;
      if (failed(lowerKernel(kernel, false, &plain)) || failed(lowerKernel(trial, true, &ordered)))
        return signalPassFailure();
      int64_t capacity = staticSharedFloats(kernel);
      if (plain >= 0 && ordered >= 0 && ordered <= std::max(plain, capacity)) {
        trial.setName(kernel.getName());
        kernel.erase();
      } else {
        trial.erase();
      }
    }
  }

  /// Lowers the tiles of `kernel` (ordered by level first where `scheduled`); `slotFloats`, where given, gets
  /// the floats its slots take (a fixed-size kernel's, where every extent is a constant).
  LogicalResult lowerKernel(gpu::GPUFuncOp kernel, bool scheduled, int64_t *slotFloats) {
    auto scratchArg = kernel->getAttrOfType<IntegerAttr>("linac.tile_scratch_arg");
    Block &entry = kernel.getBody().front();
    OpBuilder b(&entry, entry.begin());
    Location loc = kernel.getLoc();
    EntryArguments args;
    args.setSizes(entry, scratchArg.getInt() + 1);
    Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
    // The block size as a constant where the kernel fixes it: thread-strided loops over tiles of known size
    // then unroll (GpuStrategy::share).
    std::optional<ArrayRef<int32_t>> known = kernel.getKnownBlockSize();
    Value threads = known ? arith::ConstantIndexOp::create(b, loc, (*known)[0]).getResult()
                          : gpu::BlockDimOp::create(b, loc, gpu::Dimension::x).getResult();
    // The block-private running states (simplifyPrivateBuffer, then slots of their own where slotShaped).
    SmallVector<Value> privateBuffers;
    kernel.walk([&](UnrealizedConversionCastOp cast) {
      if (cast->hasAttr("linac.block_private"))
        privateBuffers.push_back(cast.getResult(0));
    });
    TileShapes shapes(arith::ConstantIndexOp::create(b, loc, 1));
    for (Value memref : privateBuffers) {
      simplifyPrivateBuffer(kernel, memref, shapes);
      if (GpuStrategy::fusesEpilogues(kernel, threads))
        splitProductSums(memref, shapes);
    }
    // Pattern padding and wide warp tiles where asked by direction (by default the forward kernels, whose
    // limiter is shared-memory bandwidth: bench/NOTES.md v10), in fixed-size kernels (the padding weighs
    // each read by its operand traffic, which needs the sizes; wide warp tiles need them anyway).
    auto direction = kernel->getAttrOfType<StringAttr>("linac.direction");
    auto applies = [&](StringRef mode) {
      return kernel->hasAttr("linac.static_dims") &&
             (mode == "all" || (mode == "forward" && direction && direction.getValue() == "forward"));
    };
    if (scheduled) {
      DenseMap<Operation *, Operation *> epilogues;
      if (GpuStrategy::fusesEpilogues(kernel, threads))
        epilogues = productEpilogues(kernel);
      kernel->setAttr("linac.ops_scheduled", b.getI64IntegerAttr(scheduleByLevel(kernel, epilogues)));
    }
    // The weights of the placement apply where the sizes are constants (fixed-size kernels).
    GpuStrategy::Placement placementMode = GpuStrategy::Placement::Accesses;
    if (kernel->hasAttr("linac.static_dims") && placement == "latency")
      placementMode = GpuStrategy::Placement::Latency;
    GpuStrategy strategy(kernel, tid, threads, products == "tf32x3", products == "bf16", forwardCopies,
                         productChains, splitK, factorGates, applies(padByPattern), &shapes,
                         applies(wideWarpTiles), placementMode);
    for (Value memref : privateBuffers) {
      Value rows, stride;
      if (!memref.use_empty() && slotShaped(memref, shapes, rows, stride))
        strategy.movePrivateBuffer(memref, rows, stride);
    }
    kernel->setAttr("linac.products", b.getStringAttr(products));
    if (failed(lowerTiles(kernel, strategy)))
      return failure();
    kernel->setAttr("linac.barriers_dropped", b.getI64IntegerAttr(dropBarriers(kernel)));
    kernel->setAttr("linac.warp_tile_fragments", b.getI64IntegerAttr(strategy.warpTileFragments()));
    GpuStrategy::Footprint footprint = strategy.constantFootprint(staticSharedFloats(kernel));
    if (slotFloats)
      *slotFloats = footprint.floats;
    // What the slots left in global memory carry a chunk (a tile op in the chunk loop counts 64 runs), by the
    // placement's own weights: a diagnostic for comparing lowerings of one kernel.
    if (footprint.floats >= 0) {
      kernel->setAttr("linac.global_slot_kb",
                      b.getI64IntegerAttr(int64_t(footprint.globalTraffic / 64 * 4 / 1024 + 0.5)));
      kernel->setAttr("linac.global_slot_rounds", b.getI64IntegerAttr(int64_t(footprint.globalRounds / 64 + 0.5)));
    }
    // A product's k loop that reads a slot left in global memory waits one global round trip a step (its
    // loads are the step's); unrolled by unrollGlobalK, a step's loads go out with the next ones'.
    if (unrollGlobalK > 1 && !footprint.global.empty()) {
      SmallVector<scf::ForOp> loops;
      kernel.walk([&](scf::ForOp loop) {
        if (!loop->hasAttr(kKLoopAttr))
          return;
        bool global = loop.getBody()
                          ->walk([&](memref::LoadOp load) {
                            return footprint.global.contains(memoryRoot(load.getMemRef())) ? WalkResult::interrupt()
                                                                                            : WalkResult::advance();
                          })
                          .wasInterrupted();
        if (global)
          loops.push_back(loop);
      });
      for (scf::ForOp loop : loops)
        if (failed(loopUnrollByFactor(loop, unrollGlobalK)))
          return kernel.emitError("linac-tile-to-gpu: could not unroll a product's k loop"), failure();
      kernel->setAttr("linac.k_loops_unrolled", b.getI64IntegerAttr(loops.size()));
    }
    Value scratch = entry.getArgument(scratchArg.getInt());
    FailureOr<SmallVector<std::string>> slotSizes = strategy.placeSlots(kernel, scratch, args.K, args.V);
    if (failed(slotSizes))
      return failure();
    kernel->setAttr("linac.tile_slots", b.getI64IntegerAttr(slotSizes->size()));
    SmallVector<Attribute> exprs;
    for (const std::string &e : *slotSizes)
      exprs.push_back(b.getStringAttr(e));
    kernel->setAttr("linac.tile_slot_sizes", b.getArrayAttr(exprs));
    return success();
  }
};

} // namespace

int64_t linac::staticSharedBytes(Operation *kernel) {
  auto budget = kernel->getAttrOfType<IntegerAttr>("linac.shared_budget");
  return budget ? budget.getInt() : kStaticSharedBytes;
}

LLVM::GlobalOp linac::tileSharedMemory(gpu::GPUModuleOp module) {
  if (auto global = module.lookupSymbol<LLVM::GlobalOp>("linac_tile_smem"))
    return global;
  OpBuilder top(module.getBodyRegion());
  return LLVM::GlobalOp::create(top, module.getLoc(), LLVM::LLVMArrayType::get(top.getI8Type(), 0),
                                /*isConstant=*/false, LLVM::Linkage::External, "linac_tile_smem", Attribute(),
                                /*alignment=*/16, /*addrSpace=*/3);
}
