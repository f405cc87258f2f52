// linac-tile-to-fragments: the register-resident lowering of fixed-size GPU kernels (an experiment, off by
// default; docs/gpu.md "Register-resident kernels"). Every tile of at least 16 x 8 lives in the registers of the
// block's warps in the tensor cores' accumulator layout, vectors (m x 1, 1 x n, 1 x 1) in every warp's lanes;
// elementwise ops, masks and broadcasts run on a thread's own values (broadcasts through warp shuffles), prefix
// sums as warp scans, products on the tensor cores from bf16 copies of their operands in shared memory, and a
// block barrier only where a warp reads what another wrote. A kernel with an op this lowering does not have is
// left to linac-tile-to-gpu.

#include "dialect/Passes.h"
#include "lib/Analysis/TileShape.h"
#include "lib/Conversion/TileLowering.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <map>
#include <numeric>
#include <optional>

namespace linac {
#define GEN_PASS_DEF_LINACTILETOFRAGMENTS
#include "dialect/Passes.h.inc"
} // namespace linac

using namespace mlir;
using namespace linac;

namespace {

/// bf16 elements of padding after each row of an operand copy: rows (k + 8) * 2 bytes apart put the 8 rows a
/// fragment load touches in distinct banks for k a multiple of 64.
constexpr int64_t kCopyPad = 8;
/// fp32 elements of padding after each row of an fp32 scratch tile (a triangular solve's operands).
constexpr int64_t kScratchPad = 4;

/// The most values of the running state a thread holds: it stays in registers for the whole kernel, beside the
/// chunk's tiles and the products' accumulators (a 128 x 128 state at 8 warps is 64 values; at 256 x 256, 256
/// values went to local memory in ptxas).
constexpr int64_t kStateValues = 64;

/// Where a tile's elements live. Frag: the accumulator layout of m16n8 fragments over a grid of warps (each warp
/// owns a block of rows x cols; lane (g, t) holds rows g and g + 8 and columns 2t and 2t + 1 of each of its
/// fragments). Col (m x 1) and Row (1 x n): element e in lane e % 32, value e / 32, the same in every warp.
/// Scalar (1 x 1): one value in every thread.
enum class Kind { Frag, Col, Row, Scalar };

struct Shape {
  int64_t rows = 0, cols = 0;
  Kind kind() const {
    if (rows == 1 && cols == 1)
      return Kind::Scalar;
    if (cols == 1)
      return Kind::Col;
    return rows == 1 ? Kind::Row : Kind::Frag;
  }
  bool operator==(const Shape &o) const { return rows == o.rows && cols == o.cols; }
};

/// The warps' grid over a Frag tile: warpRows x warpCols warps, each owning rows / warpRows x cols / warpCols;
/// where the tile has fewer fragments than the block has warps, the grid repeats (warp w owns the block of warp
/// w % (warpRows x warpCols)), and only its first copy stores.
struct Grid {
  int64_t warpRows = 0, warpCols = 0;
  int64_t size() const { return warpRows * warpCols; }
};

std::optional<Grid> gridFor(Shape s, int64_t warps) {
  if (s.rows % 16 || s.cols % 8)
    return std::nullopt;
  int64_t fragRows = s.rows / 16, fragCols = s.cols / 8;
  int64_t warpRows = std::min(warps, fragRows);
  while (fragRows % warpRows || warps % warpRows)
    --warpRows;
  int64_t warpCols = std::min(warps / warpRows, fragCols);
  while (fragCols % warpCols || (warps / warpRows) % warpCols)
    --warpCols;
  return Grid{warpRows, warpCols};
}

/// A tile's values in one thread.
struct Tile {
  Shape shape;
  SmallVector<Value> values;
};

int64_t valuesOf(Shape s, int64_t warps) {
  switch (s.kind()) {
  case Kind::Scalar:
    return 1;
  case Kind::Col:
    return (s.rows + 31) / 32;
  case Kind::Row:
    return (s.cols + 31) / 32;
  case Kind::Frag: {
    Grid grid = *gridFor(s, warps);
    return (s.rows / grid.warpRows / 16) * (s.cols / grid.warpCols / 8) * 4;
  }
  }
  return 0;
}

/// Lanes that share a channel in the per-key gate gradient of m x d: a power of two dividing m, at most 32, as
/// many as the block's threads allow.
int64_t keyGradParts(int64_t m, int64_t d, int64_t warps) {
  int64_t parts = 1;
  while (parts * 2 * d <= warps * 32 && parts * 2 <= std::min<int64_t>(m, 32) && m % (parts * 2) == 0)
    parts *= 2;
  return parts;
}

std::optional<Shape> constantShape(TileShapes &shapes, Value tile) {
  TileShape s = shapes.get(tile);
  std::optional<int64_t> rows = getConstantIntValue(s.rows), cols = getConstantIntValue(s.cols);
  if (!rows || !cols || *rows < 1 || *cols < 1)
    return std::nullopt;
  return Shape{*rows, *cols};
}

bool isPrivate(Value memref) {
  auto cast = memref.getDefiningOp<UnrealizedConversionCastOp>();
  return cast && cast->hasAttr("linac.block_private");
}

/// Why `kernel` cannot take this lowering (empty: it can).
std::string unsupported(gpu::GPUFuncOp kernel, TileShapes &shapes, int64_t warps) {
  auto io = kernel->getAttrOfType<StringAttr>("linac.io_type");
  if (!io || io.getValue() != "bf16")
    return "inputs not bf16";
  std::string why;
  kernel.walk([&](Operation *op) {
    if (!isTileOp(op) && !isElementwiseTile(op)) {
      // Conditionals around ops that cross threads get a barrier on each side (crossesThreads), which every
      // thread must reach: their conditions must be the same in the whole block. The tile IR has no thread
      // index (the tile ops stand for all threads), so every scalar is; a kernel that had one would not be.
      if (isa<gpu::ThreadIdOp, gpu::LaneIdOp>(op))
        why = "a thread index";
      return why.empty() ? WalkResult::advance() : WalkResult::interrupt();
    }
    for (Value v : op->getOperands())
      if (isTileType(v.getType()) && !constantShape(shapes, v))
        why = "a tile of unknown size";
    for (Value v : op->getResults())
      if (auto s = isTileType(v.getType()) ? constantShape(shapes, v) : std::nullopt;
          isTileType(v.getType()) && (!s || (s->kind() == Kind::Frag && !gridFor(*s, warps))))
        why = "a tile of unknown size or not of 16 x 8 fragments";
    if (!why.empty())
      return WalkResult::interrupt();
    auto shape = [&](Value v) { return *constantShape(shapes, v); };
    auto kind = [&](Value v) { return shape(v).kind(); };
    if (auto store = dyn_cast<TileStoreOp>(op)) {
      if (store.getAccumulate() && (isPrivate(store.getBuffer()) ||
                                    !cast<MemRefType>(store.getBuffer().getType()).getElementType().isF32()))
        why = "an accumulating store to a state or a 16-bit buffer";
    } else if (auto bc = dyn_cast<TileBroadcastOp>(op)) {
      Shape from = shape(bc.getSource()), to = shape(bc.getResult());
      if (from.kind() == Kind::Frag || (from.kind() == Kind::Col && from.rows != to.rows) ||
          (from.kind() == Kind::Row && from.cols != to.cols) ||
          (from.kind() == Kind::Col && to.kind() == Kind::Row) || (from.kind() == Kind::Row && to.kind() == Kind::Col))
        why = "a broadcast of a matrix tile";
    } else if (auto tr = dyn_cast<TileTransposeOp>(op)) {
      if (kind(tr.getSource()) == Kind::Frag)
        why = "a transpose of a matrix tile";
    } else if (auto row = dyn_cast<TileRowOp>(op)) {
      Kind k = kind(row.getSource());
      if ((k == Kind::Frag && !getConstantIntValue(row.getIndex())) ||
          (k == Kind::Row && !isConstantIntValue(row.getIndex(), 0)))
        why = "a row of a matrix tile at a varying index";
    } else if (auto cs = dyn_cast<TileCumsumOp>(op)) {
      if (kind(cs.getSource()) == Kind::Row)
        why = "prefix sums over a row";
    } else if (auto mm = dyn_cast<TileMatmulOp>(op)) {
      Shape lhs = shape(mm.getLhs());
      int64_t inner = mm.getTransposeLhs() ? lhs.rows : lhs.cols;
      if (kind(mm.getLhs()) != Kind::Frag || kind(mm.getRhs()) != Kind::Frag || kind(mm.getResult()) != Kind::Frag ||
          inner % 16)
        why = "a product with a vector operand";
    } else if (auto gd = dyn_cast<TileGatedDotOp>(op)) {
      bool keyGates = kind(gd.getGx()) == Kind::Frag;
      if (kind(gd.getX()) != Kind::Frag || kind(gd.getY()) != Kind::Frag || kind(gd.getGx()) != kind(gd.getGy()) ||
          (!keyGates && kind(gd.getGx()) != Kind::Col) || (!keyGates && shape(gd.getX()).cols % 16))
        why = "a gated product of vectors";
    } else if (auto red = dyn_cast<TileReduceOp>(op)) {
      Kind from = kind(red.getSource()), to = kind(red.getResult());
      if (!(shape(red.getSource()) == shape(red.getResult())) &&
          !(from == Kind::Frag && to != Kind::Frag) && !(from != Kind::Frag && to == Kind::Scalar))
        why = "a reduce to a matrix tile";
    } else if (auto sc = dyn_cast<TileScatterRowOp>(op)) {
      Kind from = kind(sc.getSource()), to = kind(sc.getResult());
      if (!(from == Kind::Scalar && to == Kind::Col) && !(from == Kind::Row && to == Kind::Frag))
        why = "a row scattered into a matrix tile";
    } else if (auto tril = dyn_cast<TileTrilOp>(op)) {
      if (kind(tril.getSource()) != Kind::Frag)
        why = "a triangle of a vector";
    } else if (auto gm = dyn_cast<TileGatedMatmulOp>(op)) {
      // (Per-key: a chunk's pairs against themselves, m x m, with y, the gates and the result m x d.)
      Shape ps = shape(gm.getPairs());
      bool keyGates = kind(gm.getGx()) == Kind::Frag && kind(gm.getGy()) == Kind::Frag &&
                      shape(gm.getGx()) == shape(gm.getY()) && shape(gm.getGy()) == shape(gm.getY()) &&
                      shape(gm.getResult()) == shape(gm.getY()) && ps.rows == ps.cols &&
                      ps.rows == shape(gm.getY()).rows;
      if (kind(gm.getPairs()) != Kind::Frag || kind(gm.getY()) != Kind::Frag ||
          (!keyGates && (kind(gm.getGx()) != Kind::Col || kind(gm.getGy()) != Kind::Col ||
                         shape(gm.getPairs()).rows % 16)))
        why = "a gated matmul of vectors";
    } else if (auto gg = dyn_cast<TileGateGradOp>(op)) {
      int64_t m = shape(gg.getPairs()).rows;
      // (Groups of m lanes per t: m a power of two from 8 to 32, so that the m * m jobs fill whole warps.)
      // (Per-key: m x m pairs; x, y, both gates and the result m x d.)
      Shape out = shape(gg.getResult());
      bool keyGates = kind(gg.getGx()) == Kind::Frag && out.kind() == Kind::Frag && out.rows == m &&
                      shape(gg.getPairs()).cols == m && shape(gg.getX()) == out && shape(gg.getY()) == out &&
                      shape(gg.getGx()) == out && shape(gg.getGy()) == out;
      if (!keyGates && (kind(gg.getGx()) != Kind::Col || kind(gg.getX()) != Kind::Frag || m > 32 || m < 8 ||
                        (m & (m - 1)) || shape(gg.getX()).cols % 16))
        why = "a gate gradient of vectors";
      // (Its lanes sum a channel by shuffles: whole warps only.)
      else if (keyGates && shape(gg.getResult()).cols * keyGradParts(m, shape(gg.getResult()).cols, warps) % 32)
        why = "a gate gradient of fewer channels than a warp";
    } else if (auto sum = dyn_cast<TileRowSumOp>(op)) {
      if (kind(sum.getSource()) != Kind::Frag)
        why = "a row sum of a vector";
    } else if (auto solve = dyn_cast<TileTriSolveOp>(op)) {
      if (kind(solve.getLower()) != Kind::Frag || kind(solve.getRhs()) != Kind::Frag)
        why = "a triangular solve of vectors";
    } else if (!isa<TileLoadOp, TileFillOp, TileMaskRowsOp>(op) && !isElementwiseTile(op)) {
      why = ("'" + op->getName().getStringRef() + "'").str();
    }
    return why.empty() ? WalkResult::advance() : WalkResult::interrupt();
  });
  if (why.empty()) {
    // The running states: one shape each, every access at the same offset (0, or a value slice's first column
    // in the copies that run several: linac-gpu-chunk's static-slices), at most kStateValues values a thread. The
    // lowering keeps each in registers, so the offset and the stride name the block's whole state.
    DenseMap<Value, Shape> stateShapes;
    DenseMap<Value, Value> stateOffsets;
    kernel.walk([&](Operation *op) {
      Value buffer = isa<TileLoadOp>(op) ? cast<TileLoadOp>(op).getBuffer()
                     : isa<TileStoreOp>(op) ? cast<TileStoreOp>(op).getBuffer()
                                            : Value();
      if (!buffer || !isPrivate(buffer))
        return;
      Value offset = isa<TileLoadOp>(op) ? cast<TileLoadOp>(op).getOffset() : cast<TileStoreOp>(op).getOffset();
      Shape s = *constantShape(shapes, isa<TileLoadOp>(op) ? op->getResult(0) : op->getOperand(0));
      auto known = stateShapes.find(buffer);
      auto firstOffset = stateOffsets.try_emplace(buffer, offset).first;
      if (!sameIndexValue(firstOffset->second, offset) || (known != stateShapes.end() && !(known->second == s)))
        why = "a running state read in parts";
      else if (valuesOf(s, warps) > kStateValues)
        why = "a running state of " + std::to_string(valuesOf(s, warps)) + " values a thread";
      stateShapes[buffer] = s;
    });
  }
  return why;
}

/// Whether `op` holds a tile op that reads or writes another thread's values (through shared memory or
/// shuffles): anything but loads, stores, fills, row masks and elementwise ops.
bool crossesThreads(Operation *op) {
  return op
      ->walk([](Operation *inner) {
        bool local = !isTileOp(inner) || isElementwiseTile(inner) ||
                     isa<TileLoadOp, TileStoreOp, TileFillOp, TileMaskRowsOp>(inner);
        return local ? WalkResult::advance() : WalkResult::interrupt();
      })
      .wasInterrupted();
}

/// Moves each op of `block` that is free of memory effects and regions and is not a product (or a row) to just after the
/// last op of the block it depends on (such ops keep their order among themselves), so that the tiles the
/// products read are computed, and their operand copies written, before the first product reads any: one
/// barrier then serves them all. Ops only move earlier, after their operands, so the block keeps its meaning.
void hoistPure(Block &block) {
  SmallVector<Operation *> order;
  DenseSet<Operation *> hoisted;
  for (Operation &op : block.without_terminator()) {
    // Products, and rows (a matrix tile's crosses warps), stay where they are.
    if (!isMemoryEffectFree(&op) || op.getNumRegions() || isa<TileMatmulOp, TileGatedDotOp, TileRowOp>(op)) {
      order.push_back(&op);
      continue;
    }
    size_t at = 0;
    for (Value v : op.getOperands())
      if (Operation *def = v.getDefiningOp(); def && def->getBlock() == &block)
        at = std::max(at, size_t(llvm::find(order, def) - order.begin()) + 1);
    while (at < order.size() && hoisted.count(order[at]))
      ++at;
    order.insert(order.begin() + at, &op);
    hoisted.insert(&op);
  }
  for (Operation *op : order)
    op->moveBefore(block.getTerminator());
}

/// The lowering of one kernel (a clone of it: on failure the clone is dropped).
class FragmentLowering {
public:
  /// `prefetch`: the most words a thread stages per iteration of a loop (-1: no limit, 0: no prefetch).
  /// `solveProducts`: triangular solves as products with the inverse (lowerSolve); `rightLooking`: the others'
  /// substitutions right-looking; `interleaveTerms`: split products' terms issued term by term (product).
  FragmentLowering(gpu::GPUFuncOp kernel, int64_t warps, int64_t prefetch, bool solveProducts, bool rightLooking,
                   bool interleaveTerms)
      : kernel(kernel), warps(warps), prefetch(prefetch), solveProducts(solveProducts), rightLooking(rightLooking),
        interleaveTerms(interleaveTerms),
        b(kernel.getContext()), loc(kernel.getLoc()),
        shapes(makeOne(kernel)) {}

  /// The shared memory its copies took (after run()).
  int64_t sharedBytesUsed() const { return sharedBytes; }

  /// Set where run() failed because the kernel's copies do not fit in shared memory (the kernel is then left to
  /// linac-tile-to-gpu).
  std::string tooLarge;

  LogicalResult run() {
    Block &entry = kernel.getBody().front();
    b.setInsertionPointToStart(&entry);
    Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
    lane = arith::RemUIOp::create(b, loc, tid, idx(32));
    warp = arith::DivUIOp::create(b, loc, tid, idx(32));
    g = arith::DivUIOp::create(b, loc, lane, idx(4));
    t = arith::RemUIOp::create(b, loc, lane, idx(4));
    // The shared memory base, in the shared address space (32-bit addresses; ld.shared with immediate offsets).
    smem = LLVM::AddressOfOp::create(b, loc, tileSharedMemory(kernel->getParentOfType<gpu::GPUModuleOp>()));
    entryPoint = b.saveInsertionPoint();

    if (failed(lowerBlock(entry)))
      return failure();
    // Erase the tile ops, readers first.
    SmallVector<Operation *> dead;
    kernel.walk([&](Operation *op) {
      if (isTileOp(op) || isElementwiseTile(op))
        dead.push_back(op);
    });
    for (Operation *op : llvm::reverse(dead)) {
      op->dropAllUses();
      op->erase();
    }
    fastExponentials();
    // Blocks a multiprocessor should hold at once (the split's phase kernels may ask for several): each gets
    // its share of the registers, and of shared memory (linac-gpu-chunk's budget for the kernel).
    int64_t blocks = 1;
    if (auto attr = kernel->getAttrOfType<IntegerAttr>("nvvm.minctasm"))
      blocks = std::max<int64_t>(1, attr.getInt());
    sharedBytes = placeRegions();
    if (sharedBytes > staticSharedBytes(kernel)) {
      tooLarge = "operand copies of " + std::to_string(sharedBytes) + " bytes, more than shared memory";
      return failure();
    }
    Builder attrs(kernel.getContext());
    kernel.setKnownBlockSizeAttr(attrs.getDenseI32ArrayAttr({int32_t(warps * 32), 1, 1}));
    // Every register a thread may have at this block size (ptxas's default level otherwise stops some kernels
    // at 64 and spills: GLA's backward at 16 warps spilled 1756 bytes at 64 registers, 992 at 128).
    kernel->setAttr("nvvm.maxnreg",
                    attrs.getI32IntegerAttr(std::min<int64_t>(255, 65536 / (warps * 32 * blocks) / 8 * 8)));
    kernel->setAttr("linac.tile_slot_sizes",
                    attrs.getArrayAttr({attrs.getStringAttr(std::to_string((sharedBytes + 3) / 4))}));
    kernel->setAttr("linac.products", attrs.getStringAttr("bf16"));
    kernel->setAttr("linac.fragments", attrs.getI64IntegerAttr(barriers));
    if (prefetchedWords)
      kernel->setAttr("linac.prefetched", attrs.getI64IntegerAttr(prefetchedWords));
    return success();
  }

private:
  static Value makeOne(gpu::GPUFuncOp kernel) {
    OpBuilder b(kernel.getContext());
    b.setInsertionPointToStart(&kernel.getBody().front());
    return arith::ConstantIndexOp::create(b, kernel.getLoc(), 1);
  }

  Type ptrType() { return LLVM::LLVMPointerType::get(b.getContext()); }
  Value idx(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value f32(float v) { return arith::ConstantFloatOp::create(b, loc, b.getF32Type(), APFloat(v)); }
  Value i32(int64_t v) { return arith::ConstantIntOp::create(b, loc, b.getI32Type(), v); }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  Value add(Value x, int64_t y) { return y ? add(x, idx(y)) : x; }
  Value mul(Value x, int64_t y) { return y == 1 ? x : arith::MulIOp::create(b, loc, x, idx(y)).getResult(); }
  Value mul(Value x, Value y) { return arith::MulIOp::create(b, loc, x, y); }
  Value lt(Value x, Value y) { return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, x, y); }
  Value eq(Value x, int64_t y) { return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, x, idx(y)); }
  Value both(Value x, Value y) { return arith::AndIOp::create(b, loc, x, y); }
  Value select(Value c, Value x, Value y) { return arith::SelectOp::create(b, loc, c, x, y); }
  Value toI32(Value x) { return arith::IndexCastOp::create(b, loc, b.getI32Type(), x); }

  Shape shape(Value tile) { return *constantShape(shapes, tile); }
  Grid grid(Shape s) { return *gridFor(s, warps); }

  /// The first row and column of the thread's values in a Frag tile of shape `s`: (row, col) of value v is
  /// (rowBase + 16 fr + 8 [v % 4 >= 2], colBase + 8 fc + v % 2) with fr, fc its fragment in the warp's block.
  std::pair<Value, Value> bases(Shape s) {
    auto key = std::make_pair(s.rows, s.cols);
    if (auto it = baseCache.find(key); it != baseCache.end())
      return it->second;
    OpBuilder::InsertionGuard guard(b);
    b.restoreInsertionPoint(entryPoint);
    Grid gr = grid(s);
    Value owner = gr.size() < warps ? arith::RemUIOp::create(b, loc, warp, idx(gr.size())).getResult() : warp;
    Value warpRow = arith::DivUIOp::create(b, loc, owner, idx(gr.warpCols));
    Value warpCol = arith::RemUIOp::create(b, loc, owner, idx(gr.warpCols));
    Value row = add(mul(warpRow, s.rows / gr.warpRows), g);
    Value col = add(mul(warpCol, s.cols / gr.warpCols), mul(t, 2));
    entryPoint = b.saveInsertionPoint();
    return baseCache[key] = {row, col};
  }
  /// Value v of a Frag tile: its fragment's row and column offsets within the warp's block.
  std::pair<int64_t, int64_t> offsets(Shape s, int64_t v) {
    Grid gr = grid(s);
    int64_t fragCols = s.cols / gr.warpCols / 8, f = v / 4, e = v % 4;
    return {(f / fragCols) * 16 + (e >= 2 ? 8 : 0), (f % fragCols) * 8 + (e & 1)};
  }
  /// (row, col) of value v of a tile of shape `s`.
  std::pair<Value, Value> coords(Shape s, int64_t v) {
    switch (s.kind()) {
    case Kind::Frag: {
      auto [row, col] = bases(s);
      auto [dr, dc] = offsets(s, v);
      return {add(row, dr), add(col, dc)};
    }
    case Kind::Col:
      return {add(lane, 32 * v), idx(0)};
    case Kind::Row:
      return {idx(0), add(lane, 32 * v)};
    case Kind::Scalar:
      return {idx(0), idx(0)};
    }
    return {};
  }

  /// x summed over each group of `lanes` adjacent lanes (a power of two up to 32), in every lane of the group.
  Value xorSum(Value x, int64_t lanes) {
    for (int64_t o = 1; o < lanes; o *= 2)
      x = arith::AddFOp::create(
          b, loc, x, gpu::ShuffleOp::create(b, loc, x, i32(o), i32(32), gpu::ShuffleMode::XOR).getShuffleResult());
    return x;
  }
  /// Inclusive prefix (reverse: suffix) sums of x over `count` positions `stride` lanes apart; `position` is the
  /// lane's position among them.
  Value laneScan(Value x, Value position, int64_t stride, int64_t count, bool reverse) {
    for (int64_t d = 1; d < count; d *= 2) {
      Value y = gpu::ShuffleOp::create(b, loc, x, i32(stride * d), i32(32),
                                       reverse ? gpu::ShuffleMode::DOWN : gpu::ShuffleMode::UP)
                    .getShuffleResult();
      Value take = reverse ? lt(add(position, d), idx(count))
                           : arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, position, idx(d)).getResult();
      x = arith::AddFOp::create(b, loc, x, select(take, y, f32(0.0f)));
    }
    return x;
  }
  /// A vector of shape `out` (Col or Row) of `length` elements, element e from `element(e)`; lanes past the end
  /// ask for the last element and hold 0.
  SmallVector<Value> vectorFrom(Shape out, int64_t length, function_ref<Value(Value)> element) {
    SmallVector<Value> values;
    for (int64_t v = 0, n = valuesOf(out, warps); v < n; ++v) {
      Value e = add(lane, 32 * v), in = lt(e, idx(length));
      values.push_back(select(in, element(select(in, e, idx(length - 1))), f32(0.0f)));
    }
    return values;
  }

  /// Element `e` (a warp-uniform vector slot `slot`, a lane `from`) of a Col or Row tile, in every lane.
  Value shuffleFrom(const Tile &vec, Value slot, Value from) {
    Value v = vec.values[0];
    for (size_t s = 1; s < vec.values.size(); ++s)
      v = select(eq(slot, s), vec.values[s], v);
    return gpu::ShuffleOp::create(b, loc, v, toI32(from), i32(32), gpu::ShuffleMode::IDX).getShuffleResult();
  }
  /// A Col (Row) vector spread over a Frag tile of shape `s`: each value gets its row's (column's) element, each
  /// of the thread's rows (columns) read once from the lane that holds it.
  SmallVector<Value> spread(const Tile &vec, Shape s) {
    bool rows = vec.shape.kind() == Kind::Col;
    std::map<int64_t, Value> cache;
    auto [rowBase, colBase] = bases(s);
    SmallVector<Value> values;
    for (int64_t v = 0, n = valuesOf(s, warps); v < n; ++v) {
      auto [dr, dc] = offsets(s, v);
      int64_t key = rows ? dr : dc;
      Value &x = cache[key];
      if (!x)
        x = element(vec, add(rows ? rowBase : colBase, key));
      values.push_back(x);
    }
    return values;
  }
  /// Element `index` (a value) of a vector tile, for each lane.
  Value element(const Tile &vec, Value index) {
    if (vec.shape.kind() == Kind::Scalar)
      return vec.values[0];
    return shuffleFrom(vec, arith::DivUIOp::create(b, loc, index, idx(32)),
                       arith::RemUIOp::create(b, loc, index, idx(32)));
  }

  /// The members of per-key pair groups lowered together (lowerKeyPairGroup).
  DenseSet<Operation *> fusedPairOps;

  /// Set by the per-key gated products' lowerings (exact pair loops on the CUDA cores): fastExponentials
  /// leaves such a backward's exponentials as they are.
  bool keyPairs = false;

  /// Every fp32 exponential of a forward kernel, and of a backward without per-key pairs, as exp2(x log2 e):
  /// NVPTX's `ex2.approx` and one multiply, where `math.exp` lowers to the correctly rounded expansion (about ten
  /// instructions, half the per-key kernels' instructions). The error, |x| 2^-24 ln 2 from rounding x log2 e
  /// plus ex2's 2^-22, is below 1e-5 relative for |x| < 100, far inside the bf16 I/O this lowering serves (bf16
  /// rounds at 2^-9). The per-key forwards ran 3-13% faster with it (bench/NOTES.md v19). In the whole backwards
  /// with per-key pairs (pair-kernel=none; 255 registers) ptxas spilled about half as much again and GLA's and
  /// RWKV-6's forward + backward ran 19-23% slower (HGRN-2's 4% faster); the other backwards gained 0-5% (NOTES
  /// v23). The pairs kernel (linac.phase "pairs"), whose pair group fits 128 registers without spills, takes
  /// them: 0.5-2% faster forward + backward (NOTES v26, v27).
  void fastExponentials() {
    auto direction = kernel->getAttrOfType<StringAttr>("linac.direction");
    auto phase = kernel->getAttrOfType<StringAttr>("linac.phase");
    bool pairKernel = phase && phase.getValue() == "pairs";
    if (!direction || (direction.getValue() != "forward" && keyPairs && !pairKernel))
      return;
    SmallVector<math::ExpOp> exps;
    kernel.walk([&](math::ExpOp e) {
      if (e.getType().isF32())
        exps.push_back(e);
    });
    for (math::ExpOp e : exps) {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(e);
      Value scaled = arith::MulFOp::create(b, e.getLoc(), e.getOperand(), f32(float(M_LOG2E)));
      e.replaceAllUsesWith(math::Exp2Op::create(b, e.getLoc(), scaled).getResult());
      e.erase();
    }
  }

  // --- shared-memory operand copies and the barriers they need ---
  struct Region {
    int64_t rows = 0, k = 0;
    /// Its index in `hazards` and `placements`.
    size_t id = 0;
    /// Bytes an element (bf16 operand copies 2, fp32 scratch 4), and elements a row.
    int64_t bytes = 2;
    int64_t pitch() const { return k + (bytes == 2 ? kCopyPad : kScratchPad); }
  };
  /// Where a region goes in shared memory, decided after the lowering (placeRegions): its size, the barriers
  /// emitted before its first and its last access (two regions whose accesses a barrier separates may share
  /// bytes), and the constant its pointers add, set then.
  struct Placement {
    int64_t size = 0, first = -1, last = -1;
    arith::ConstantIndexOp offset;
  };
  Region newRegion(int64_t rows, int64_t k, int64_t bytes) {
    Region r{rows, k, hazards.size(), bytes};
    hazards.emplace_back();
    OpBuilder::InsertionGuard guard(b);
    b.restoreInsertionPoint(entryPoint);
    auto offset = arith::ConstantIndexOp::create(b, loc, 0);
    entryPoint = b.saveInsertionPoint();
    placements.push_back({(rows * r.pitch() * bytes + 15) / 16 * 16, -1, -1, offset});
    return r;
  }
  /// Records an access to r in the current barrier interval.
  void touch(const Region &r) {
    Placement &p = placements[r.id];
    if (p.first < 0)
      p.first = barriers;
    p.last = std::max(p.last, barriers);
  }
  /// Lays the regions out, each at the lowest offset where it overlaps no region whose accesses share a barrier
  /// interval with its own, first accessed first; where that takes more bytes than the kernel's shared memory,
  /// also largest first and longest-lived first, keeping the fewest bytes (first-fit in one order can leave holes
  /// that another avoids: Gated DeltaNet's backward with product solves needs 239,616 bytes in the first order,
  /// 228,352 live at once). Kernels that fit in the first order keep it: the other orders moved Gated DeltaNet's
  /// substitution backward (bench/NOTES.md v31: 9% slower). Returns the bytes taken.
  int64_t placeRegions() {
    auto conflicts = [&](size_t x, size_t y) {
      const Placement &p = placements[x], &q = placements[y];
      return !(q.last < p.first || p.last < q.first);
    };
    // First-fit in `order`: the offsets and the bytes taken.
    auto place = [&](ArrayRef<size_t> order, SmallVectorImpl<int64_t> &offsets) {
      offsets.assign(placements.size(), 0);
      SmallVector<size_t> placed;
      int64_t total = 0;
      for (size_t id : order) {
        int64_t size = placements[id].size;
        SmallVector<int64_t> candidates = {0};
        for (size_t other : placed)
          if (conflicts(id, other))
            candidates.push_back(offsets[other] + placements[other].size);
        llvm::sort(candidates);
        int64_t chosen = candidates.back();
        for (int64_t at : candidates)
          if (llvm::none_of(placed, [&](size_t o) {
                return conflicts(id, o) && at < offsets[o] + placements[o].size && offsets[o] < at + size;
              })) {
            chosen = at;
            break;
          }
        offsets[id] = chosen;
        placed.push_back(id);
        total = std::max(total, chosen + size);
      }
      return total;
    };
    SmallVector<size_t> first(placements.size());
    std::iota(first.begin(), first.end(), 0);
    llvm::stable_sort(first, [&](size_t x, size_t y) { return placements[x].first < placements[y].first; });
    SmallVector<size_t> largest = first, longest = first;
    llvm::stable_sort(largest, [&](size_t x, size_t y) { return placements[x].size > placements[y].size; });
    llvm::stable_sort(longest, [&](size_t x, size_t y) {
      return placements[x].last - placements[x].first > placements[y].last - placements[y].first;
    });
    SmallVector<int64_t> best, offsets;
    int64_t total = -1;
    for (ArrayRef<size_t> order : {ArrayRef<size_t>(first), ArrayRef<size_t>(largest), ArrayRef<size_t>(longest)}) {
      int64_t bytes = place(order, offsets);
      if (total < 0 || bytes < total) {
        total = bytes;
        best = offsets;
      }
      if (total <= staticSharedBytes(kernel))
        break;
    }
    for (auto [id, p] : llvm::enumerate(placements))
      p.offset.setValueAttr(IntegerAttr::get(IndexType::get(b.getContext()), best[id]));
    return total;
  }
  /// Per copy: written, and read, since the last barrier.
  struct Hazard {
    bool written = false, read = false;
  };
  /// A product's operand (m x k): a bf16 copy of a tile in the tile's own layout (r.rows x r.k, rows 16-byte
  /// aligned), read as it is (m x k = rows x cols) or transposed (cols x rows) by ldmatrix (.trans).
  /// With `low` (a split operand, see splitsOperand()): a second copy of what bf16 dropped, x - bf16(x) rounded to
  /// bf16, in the same layout.
  struct Operand {
    Region r;
    bool transposed = false;
    std::optional<Region> low;
    int64_t k() const { return transposed ? r.rows : r.k; }
    Operand lowPart() const { return {*low, transposed, std::nullopt}; }
  };
  /// The operand `tile` (transposed: its transpose) from the tile's copy, written once where first needed: one
  /// copy serves both orientations. `split`: with the copy of its low parts too.
  Operand copyOf(Value tile, bool transposed, bool split = false) {
    auto it = regions.find(tile.getAsOpaquePointer());
    if (it == regions.end()) {
      Shape s = shape(tile);
      it = regions.try_emplace(tile.getAsOpaquePointer(), newRegion(s.rows, s.cols, 2)).first;
      writeCopy(it->second, s, tiles.at(tile).values);
    }
    Operand o{it->second, transposed, std::nullopt};
    if (split) {
      auto low = lowRegions.find(tile.getAsOpaquePointer());
      if (low == lowRegions.end()) {
        Shape s = shape(tile);
        low = lowRegions.try_emplace(tile.getAsOpaquePointer(), newRegion(s.rows, s.cols, 2)).first;
        writeCopy(low->second, s, tiles.at(tile).values, /*lowParts=*/true);
      }
      o.low = low->second;
    }
    return o;
  }
  /// Whether a running state (a load of a block-private buffer) read by a backward kernel is `tile`.
  static bool backwardState(Value tile) {
    auto load = tile.getDefiningOp<TileLoadOp>();
    if (!load || !isPrivate(load.getBuffer()))
      return false;
    auto direction = load->getParentOfType<gpu::GPUFuncOp>()->getAttrOfType<StringAttr>("linac.direction");
    return direction && direction.getValue() == "backward";
  }
  /// Whether `tile` is exact in the products' bf16: a bf16 buffer's values as loaded (loadedTile). (An f16 or
  /// fp32 buffer's are not.)
  static bool exactInBf16(Value tile) {
    TileLoadOp load = loadedTile(tile);
    return load && cast<MemRefType>(load.getBuffer().getType()).getElementType().isBF16();
  }
  /// Whether product `mm` splits its operand `i` (copyOf's `split`): in a backward kernel, both operands of a
  /// product that reads a running state (S, dS), but one exact in bf16 already (exactInBf16). There the products'
  /// results are the large terms of gradient sums that cancel (a gate's gradient adds key-by-value products of S
  /// with cotangents, and the chain's own terms nearly undo them), so an operand rounded to bf16 (2^-9 relative)
  /// left Gated DeltaNet's dg at 1e-2 relative rms on some inputs: S in dq's dO S^T, the solve's values U in
  /// U dS^T (docs/gpu.md). Split, x = bf16(x) + bf16(x - bf16(x)), an operand keeps about 16 significant bits
  /// and the product takes one more mma for each split operand (low part against the other's high part). A
  /// forward's reads stay single: they feed outputs rounded to bf16 anyway.
  static bool splitsOperand(TileMatmulOp mm, unsigned i) {
    Value x = mm->getOperand(i), other = mm->getOperand(1 - i);
    if (backwardState(x))
      return true;
    return backwardState(other) && !exactInBf16(x);
  }
  /// The operand from values of a Frag tile of shape `s` (not an IR value: a new copy each time).
  Operand copyOfValues(Shape s, ArrayRef<Value> values, bool transposed) {
    Region r = newRegion(s.rows, s.cols, 2);
    writeCopy(r, s, values);
    return {r, transposed};
  }
  /// A Frag tile's values to its copy: each thread's pairs of adjacent columns as one 32-bit store (at constant
  /// offsets from its first pair; Frag tiles only reach products).
  /// `lowParts`: what the bf16 rounding drops of each value, x - bf16(x) (exact in fp32), rounded to bf16.
  void writeCopy(const Region &r, Shape s, ArrayRef<Value> values, bool lowParts = false) {
    // (Frag tiles are whole 16 x 8 fragments: rows of a multiple of 8 bf16 stay 16-byte aligned for ldmatrix.)
    assert(s.cols % 8 == 0 && "an operand copy's rows must be 16-byte aligned for ldmatrix");
    beforeWrite(r);
    auto [rowBase, colBase] = bases(s);
    Value base = pointer(r, rowBase, colBase);
    for (size_t v = 0; v + 1 < values.size(); v += 2) {
      auto [dr, dc] = offsets(s, int64_t(v));
      Value word = lowParts ? splitBf16Pair(values[v], values[v + 1]).second : packBf16Pair(values[v], values[v + 1]);
      LLVM::StoreOp::create(b, loc, word, at(base, 2 * (dr * r.pitch() + dc)));
    }
  }
  /// fp32 x and y split into two packed bf16 pairs (packBf16Pair): their rounding, and the rounding of what it
  /// drops (x - bf16(x), exact in fp32). The split operands of products (writeCopy's lowParts, inverseOf).
  std::pair<Value, Value> splitBf16Pair(Value x, Value y) {
    Value high = packBf16Pair(x, y);
    auto [hx, hy] = unpackBf16Pair(high);
    return {high, packBf16Pair(arith::SubFOp::create(b, loc, x, hx), arith::SubFOp::create(b, loc, y, hy))};
  }
  /// fp32 x and y rounded to bf16, x in the low 16 bits of the word: one truncation of the pair (NVPTX:
  /// cvt.rn.bf16x2.f32; the host's lowering expands it to integer arithmetic).
  Value packBf16Pair(Value x, Value y) {
    Value narrow = arith::TruncFOp::create(b, loc, VectorType::get({2}, b.getBF16Type()), pairOf(x, y));
    Value halves = arith::BitcastOp::create(b, loc, VectorType::get({2}, b.getI16Type()), narrow);
    return LLVM::BitcastOp::create(b, loc, b.getI32Type(), halves);
  }
  /// The vector (x, y) of two fp32 values.
  Value pairOf(Value x, Value y) {
    Value pair = LLVM::PoisonOp::create(b, loc, VectorType::get({2}, b.getF32Type()));
    pair = LLVM::InsertElementOp::create(b, loc, pair, x, i32(0));
    return LLVM::InsertElementOp::create(b, loc, pair, y, i32(1));
  }
  /// fp32 `x` rounded to bf16, as its 16 bits: no bf16 value is left for the host's LLVM to merge and legalize
  /// through float (x86 calls __truncsfbf2 for that, which GCC 12's libgcc lacks: the emulation would not link).
  Value bf16Bits(Value x) {
    return arith::BitcastOp::create(b, loc, b.getI16Type(), arith::TruncFOp::create(b, loc, b.getBF16Type(), x));
  }
  /// The pointer to element (row, col) of copy r (rows k + kCopyPad bf16 apart).
  Value pointer(const Region &r, Value row, Value col) {
    Value element = add(mul(row, r.pitch()), col);
    Value bytes = arith::IndexCastOp::create(b, loc, b.getI32Type(),
                                             add(mul(element, r.bytes), placements[r.id].offset.getResult()));
    return LLVM::GEPOp::create(b, loc, smem.getType(), b.getI8Type(), smem, ValueRange{bytes});
  }
  /// `base` + `bytes` (a constant: the load or store takes it as its immediate offset).
  Value at(Value base, int64_t bytes) {
    return bytes ? LLVM::GEPOp::create(b, loc, base.getType(), b.getI8Type(), base, ArrayRef<LLVM::GEPArg>{int32_t(bytes)})
                       .getResult()
                 : base;
  }
  /// The fp32 at `base` + `bytes` (scratch copies, the running states' slots).
  Value loadF32(Value base, int64_t bytes = 0) { return LLVM::LoadOp::create(b, loc, b.getF32Type(), at(base, bytes)); }
  void barrier() {
    gpu::BarrierOp::create(b, loc);
    ++barriers;
    hazards.assign(hazards.size(), Hazard());
  }
  bool pending() {
    return llvm::any_of(hazards, [](const Hazard &h) { return h.written || h.read; });
  }
  /// A copy is written only after every warp has read what it held (its readers since the last barrier).
  void beforeWrite(const Region &r) {
    if (hazards[r.id].read)
      barrier();
    hazards[r.id].written = true;
    touch(r);
  }
  /// and read only after every warp has written it.
  void beforeRead(ArrayRef<Region> copies) {
    if (llvm::any_of(copies, [&](const Region &r) { return hazards[r.id].written; }))
      barrier();
    for (const Region &r : copies) {
      hazards[r.id].read = true;
      touch(r);
    }
  }

  /// The row lane l gives ldmatrix for operand `o` (m x k) at m0: row l % 8 of matrix l / 8, which covers the
  /// operand's rows m0 + mOff and k columns kOff (8 each): the copy's row m, column k, or with `o.transposed`
  /// row k, column m (ldmatrix.trans hands each lane the transpose's pairs).
  Value ldmatrixRow(const Operand &o, Value m0, Value mOff, Value kOff) {
    Value j = arith::AndIOp::create(b, loc, lane, idx(7));
    return o.transposed ? pointer(o.r, add(kOff, j), add(m0, mOff)) : pointer(o.r, add(add(m0, mOff), j), kOff);
  }
  /// Bytes from an operand's element (m, k) to (m + dm, k + dk).
  int64_t operandBytes(const Operand &o, int64_t dm, int64_t dk) {
    return 2 * (o.transposed ? dk * o.r.pitch() + dm : dm * o.r.pitch() + dk);
  }
  /// `n` 8 x 8 matrices of `o` by one ldmatrix from the lane's row `row` + `bytes`: the lane's word of each.
  SmallVector<Value, 4> ldmatrix(const Operand &o, Value row, int64_t bytes, int64_t n) {
    Type i32t = b.getI32Type();
    Type type = n == 1 ? i32t : LLVM::LLVMStructType::getLiteral(b.getContext(), SmallVector<Type>(n, i32t));
    Value m = NVVM::LdMatrixOp::create(b, loc, type, at(row, bytes), uint32_t(n),
                                       o.transposed ? NVVM::MMALayout::col : NVVM::MMALayout::row,
                                       NVVM::LdStMatrixShapeAttr::get(b.getContext(), 8, 8),
                                       NVVM::LdStMatrixEltType::B16);
    SmallVector<Value, 4> words;
    for (int64_t i = 0; i < n; ++i)
      words.push_back(n == 1 ? m : LLVM::ExtractValueOp::create(b, loc, m, ArrayRef<int64_t>{i}).getResult());
    return words;
  }

  /// out = A B^T over k from the operands a (m x k) and bt (n x k), into a Frag tile m x n.
  SmallVector<Value> product(Shape out, const Operand &a, const Operand &bt, ArrayRef<Value> init = {}) {
    SmallVector<Region, 4> read = {a.r, bt.r};
    for (const Operand *o : {&a, &bt})
      if (o->low)
        read.push_back(*o->low);
    beforeRead(read);
    Grid gr = grid(out);
    int64_t fragRows = out.rows / gr.warpRows / 16, fragCols = out.cols / gr.warpCols / 8;
    auto [rowBase, colBase] = bases(out);
    // The warp's first row and column: rowBase - g, colBase - 2t.
    Value row0 = arith::SubIOp::create(b, loc, rowBase, g), col0 = arith::SubIOp::create(b, loc, colBase, mul(t, 2));
    Type f32t = b.getF32Type();
    Type accType = LLVM::LLVMStructType::getLiteral(b.getContext(), {f32t, f32t, f32t, f32t});
    SmallVector<Value> acc(init.begin(), init.end());
    if (acc.empty())
      acc.assign(fragRows * fragCols * 4, f32(0.0f));
    // A's 16 x 16 block by one ldmatrix.x4: matrix i = its rows 8 (i % 2), k columns 8 (i / 2), as a0..a3 of the
    // mma's A fragment. B's two 8-column fragments (n x 16 of bt) by one x4: matrix i = bt's rows 8 (i / 2), k
    // columns 8 (i % 2), as b0, b1 of the first and of the second (an odd last one by x2, lanes 0-15's rows).
    // One row pointer each; the blocks' offsets are constants.
    Value i = arith::ShRUIOp::create(b, loc, lane, idx(3));
    Value low = mul(arith::AndIOp::create(b, loc, i, idx(1)), 8), high = mul(arith::ShRUIOp::create(b, loc, i, idx(1)), 8);
    Value aRow = ldmatrixRow(a, row0, low, high), bRow = ldmatrixRow(bt, col0, high, low);
    // Split operands (copyOf's `split`): their low parts' rows, and one more mma for each.
    Value aLowRow = a.low ? ldmatrixRow(a.lowPart(), row0, low, high) : Value();
    Value bLowRow = bt.low ? ldmatrixRow(bt.lowPart(), col0, high, low) : Value();
    // acc[base..base + 4) += A B for the A and B fragments' words.
    auto mma = [&](int64_t base, ArrayRef<Value> aWords, ArrayRef<Value> bWords) {
      SmallVector<Value, 4> c(acc.begin() + base, acc.begin() + base + 4);
      std::array<NVVM::MMATypes, 2> types = {NVVM::MMATypes::bf16, NVVM::MMATypes::bf16};
      std::array<NVVM::MMALayout, 2> layouts = {NVVM::MMALayout::row, NVVM::MMALayout::col};
      OperationState state(loc, NVVM::MmaOp::getOperationName());
      NVVM::MmaOp::build(b, state, accType, aWords, bWords, c, {16, 8, 16}, std::nullopt, std::nullopt, types, layouts);
      Value d = b.create(state)->getResult(0);
      for (int64_t e = 0; e < 4; ++e)
        acc[base + e] = LLVM::ExtractValueOp::create(b, loc, d, ArrayRef<int64_t>{e});
    };
    for (int64_t kk = 0; kk < a.k(); kk += 16) {
      SmallVector<SmallVector<Value, 4>> as(fragRows), aLows(fragRows);
      for (int64_t fr = 0; fr < fragRows; ++fr) {
        as[fr] = ldmatrix(a, aRow, operandBytes(a, fr * 16, kk), 4);
        if (a.low)
          aLows[fr] = ldmatrix(a.lowPart(), aLowRow, operandBytes(a, fr * 16, kk), 4);
      }
      for (int64_t fc = 0; fc < fragCols; fc += 2) {
        int64_t count = std::min<int64_t>(2, fragCols - fc);
        SmallVector<Value, 4> words = ldmatrix(bt, bRow, operandBytes(bt, fc * 8, kk), 2 * count), lowWords;
        if (bt.low)
          lowWords = ldmatrix(bt.lowPart(), bLowRow, operandBytes(bt, fc * 8, kk), 2 * count);
        // Each fragment's terms of this k step: the small ones first, low x high, high x low, then high x high
        // (no low x low: 2^-18 relative). Fragment by fragment, or (interleaveTerms) term by term over the
        // group's fragments, so that consecutive mma go to different accumulators; each accumulator takes its
        // terms in the same order either way.
        struct Term {
          int64_t base;
          SmallVector<Value, 4> a;
          SmallVector<Value, 2> b;
        };
        SmallVector<SmallVector<Term, 3>, 4> fragments;
        for (int64_t h = 0; h < count; ++h) {
          SmallVector<Value, 2> bs = {words[2 * h], words[2 * h + 1]};
          for (int64_t fr = 0; fr < fragRows; ++fr) {
            int64_t base = (fr * fragCols + fc + h) * 4;
            SmallVector<Term, 3> &terms = fragments.emplace_back();
            if (a.low)
              terms.push_back({base, aLows[fr], bs});
            if (bt.low)
              terms.push_back({base, as[fr], {lowWords[2 * h], lowWords[2 * h + 1]}});
            terms.push_back({base, as[fr], bs});
          }
        }
        if (interleaveTerms) {
          for (size_t kind = 0; kind < fragments.front().size(); ++kind)
            for (const SmallVector<Term, 3> &terms : fragments)
              mma(terms[kind].base, terms[kind].a, terms[kind].b);
        } else {
          for (const SmallVector<Term, 3> &terms : fragments)
            for (const Term &term : terms)
              mma(term.base, term.a, term.b);
        }
      }
    }
    return acc;
  }

  // --- chunk inputs loaded one iteration ahead ---
  /// Words a thread stages per iteration, over the kernel's prefetched loops (linac.prefetched).
  int64_t prefetchedWords = 0;
  /// The prefetched loads of the loop being lowered: where their words sit in its staging region.
  struct Staged {
    int64_t slot = 0, words = 0;
    /// bf16 Frag values two to a word (adjacent columns); otherwise a word per value, as fp32.
    bool pairs = false;
  };
  DenseMap<Operation *, Staged> staged;
  Region staging;
  /// The staging row of the current iteration's words (its parity times the words an iteration).
  Value stagingRow;
  Value threadIndex() { return add(mul(warp, 32), lane); }
  /// Whether a tile load reads element (row, col) of a tile of shape `s` (`valid`: its rows that exist, at most
  /// s.rows); the others are 0. A Frag tile's columns are all inside it: the test is per row, shared by the row's
  /// values.
  Value loaded(Shape s, Value row, Value col, Value valid) {
    return s.kind() == Kind::Frag ? lt(row, valid) : both(lt(row, valid), lt(col, idx(s.cols)));
  }

  /// Whether `v` is computed in `loop`'s body from its induction variable and values from outside by pure ops
  /// without regions (so that it can be computed for another iteration).
  static bool computable(Value v, scf::ForOp loop) {
    if (v == loop.getInductionVar())
      return true;
    if (auto arg = dyn_cast<BlockArgument>(v))
      return !loop->isAncestor(arg.getOwner()->getParentOp());
    Operation *def = v.getDefiningOp();
    if (!loop->isProperAncestor(def))
      return true;
    return def->getBlock() == loop.getBody() && def->getNumRegions() == 0 && isPure(def) &&
           llvm::all_of(def->getOperands(), [&](Value o) { return computable(o, loop); });
  }
  /// `v` (computable()) for the iteration `map` gives the induction variable of: its ops cloned here.
  Value cloneFor(Value v, IRMapping &map, scf::ForOp loop) {
    if (Value mapped = map.lookupOrNull(v))
      return mapped;
    Operation *def = v.getDefiningOp();
    if (!def || !loop->isProperAncestor(def))
      return v;
    for (Value operand : def->getOperands())
      cloneFor(operand, map, loop);
    b.clone(*def, map);
    return map.lookup(v);
  }
  /// Whether index `v` is even by construction (a product with an even constant, sums of such).
  static bool even(Value v) {
    if (std::optional<int64_t> c = getConstantIntValue(v))
      return *c % 2 == 0;
    Operation *def = v.getDefiningOp();
    if (!def)
      return false;
    if (isa<arith::MulIOp>(def))
      return even(def->getOperand(0)) || even(def->getOperand(1));
    if (isa<arith::AddIOp, arith::SubIOp>(def))
      return even(def->getOperand(0)) && even(def->getOperand(1));
    if (isa<arith::IndexCastOp, LLVM::SExtOp, LLVM::ZExtOp>(def))
      return even(def->getOperand(0));
    return false;
  }
  /// The aligned pointer of memref `buffer` (a descriptor built by linac's entry code); null if not known.
  static Value alignedPointer(Value buffer) {
    auto cast = buffer.getDefiningOp<UnrealizedConversionCastOp>();
    if (!cast || cast.getNumOperands() != 1)
      return {};
    for (auto insert = cast.getOperand(0).getDefiningOp<LLVM::InsertValueOp>(); insert;
         insert = insert.getContainer().getDefiningOp<LLVM::InsertValueOp>())
      if (insert.getPosition() == ArrayRef<int64_t>{1})
        return insert.getValue();
    return {};
  }
  /// Whether element 0 of memref `buffer` is 16-byte aligned as far as the kernel knows: its aligned pointer is
  /// a kernel argument (the launchers pass 16-byte-aligned buffers to the fixed-size kernels) or one advanced by
  /// an even number of elements of at most 4 bytes (8-byte aligned, which pairs need).
  static bool alignedBase(Value buffer) {
    Value pointer = alignedPointer(buffer);
    if (!pointer)
      return false;
    if (auto gep = pointer.getDefiningOp<LLVM::GEPOp>()) {
      auto indices = gep.getDynamicIndices();
      if (gep.getRawConstantIndices().size() != 1 || indices.size() != 1 || !even(indices[0]))
        return false;
      pointer = gep.getBase();
    }
    return isa<BlockArgument>(pointer);
  }
  /// Whether a Frag tile's adjacent columns at `offset` + row * `stride` + (an even column) of `buffer` can move
  /// as one 32-bit (bf16) or 64-bit (fp32) access: identity layout, an aligned base, even offset and stride.
  static bool pairedColumns(Shape s, Value buffer, Value offset, Value stride) {
    auto type = cast<MemRefType>(buffer.getType());
    return s.kind() == Kind::Frag && (type.getElementType().isBF16() || type.getElementType().isF32()) &&
           type.getLayout().isIdentity() && alignedBase(buffer) && even(offset) && even(stride);
  }
  /// A 32-bit word of two bf16 values (the lower column in the low half) as two fp32 values: each half shifted
  /// into an fp32's high bits.
  std::pair<Value, Value> unpackBf16Pair(Value word) {
    Value low = arith::ShLIOp::create(b, loc, word, i32(16));
    Value high = arith::AndIOp::create(b, loc, word, i32(-65536));
    Type f32Type = b.getF32Type();
    return {arith::BitcastOp::create(b, loc, f32Type, low), arith::BitcastOp::create(b, loc, f32Type, high)};
  }
  /// The kernel argument `buffer` points into (through offsets); null if not known.
  static Value rootArgument(Value buffer) {
    Value pointer = alignedPointer(buffer);
    while (pointer)
      if (auto gep = pointer.getDefiningOp<LLVM::GEPOp>())
        pointer = gep.getBase();
      else
        return isa<BlockArgument>(pointer) ? pointer : Value();
    return {};
  }
  /// Whether `loop` may write memory that `load` reads: a store in it to a buffer in the same kernel argument,
  /// or to one not known. Such a load cannot be issued an iteration early (the split's chain reloads what its
  /// previous iteration stored).
  static bool writtenIn(TileLoadOp load, scf::ForOp loop) {
    Value root = rootArgument(load.getBuffer());
    if (!root)
      return true;
    bool written = false;
    loop.walk([&](Operation *op) {
      if (auto store = dyn_cast<TileStoreOp>(op)) {
        Value other = rootArgument(store.getBuffer());
        written |= !other || other == root;
      } else if (!isa<TileLoadOp>(op) && !isPure(op) && op->getNumRegions() == 0 &&
                 !isa<memref::LoadOp, scf::YieldOp>(op)) {
        written = true;  // any other side effect: assume it writes
      }
    });
    return written;
  }
  /// The global address of element `element` of `buffer` (an identity-layout memref: its aligned pointer is
  /// element 0).
  Value globalAddress(Value buffer, Value element) {
    Type elementType = cast<MemRefType>(buffer.getType()).getElementType();
    Value base = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, buffer);
    Value address = add(base, mul(element, elementType.getIntOrFloatBitWidth() / 8));
    Value i64 = arith::IndexCastOp::create(b, loc, b.getI64Type(), address);
    return LLVM::IntToPtrOp::create(b, loc, LLVM::LLVMPointerType::get(b.getContext(), 1), i64);
  }
  /// Issues the copies of `load` for the iteration `map` names into staging row `row`: cp.async for whole
  /// words (bf16 pairs at even offsets, fp32), rows past `valid` 0; other elements are loaded now and their
  /// stores to staging, (pointer, value) in `late`, left to the caller. `runs`: whether that iteration exists;
  /// where it does not, nothing is read (its offset may lie outside the buffer: a loop over chunks in reverse
  /// order computes chunk -1 after chunk 0) and the words are 0.
  void issue(TileLoadOp load, const Staged &st, IRMapping &map, scf::ForOp loop, Value row, Value runs,
             SmallVectorImpl<std::pair<Value, Value>> &late) {
    Shape s = shape(load.getResult());
    Value offset = cloneFor(load.getOffset(), map, loop), stride = cloneFor(load.getStride(), map, loop);
    Value valid = arith::SelectOp::create(
        b, loc, runs, arith::MinSIOp::create(b, loc, cloneFor(load.getValid(), map, loop), idx(s.rows)), idx(0));
    Value base = pointer(staging, row, threadIndex());
    int64_t pitch = 4 * staging.pitch();
    bool wide = cast<MemRefType>(load.getBuffer().getType()).getElementType().isF32();
    for (int64_t v = 0, n = valuesOf(s, warps); v < n; v += st.pairs ? 2 : 1) {
      auto [r, c] = coords(s, v);
      Value in = loaded(s, r, c, valid);
      Value element = add(offset, add(mul(r, stride), c));
      Value dst = at(base, (st.slot + (st.pairs ? v / 2 : v)) * pitch);
      if (st.pairs || wide) {
        auto branch = scf::IfOp::create(b, loc, in, /*withElseRegion=*/true);
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(branch.elseBlock());
        LLVM::StoreOp::create(b, loc, i32(0), dst);
        b.setInsertionPointToStart(branch.thenBlock());
        NVVM::CpAsyncOp::create(b, loc, dst, globalAddress(load.getBuffer(), element), b.getI32IntegerAttr(4),
                                NVVM::LoadCacheModifierKindAttr::get(b.getContext(), NVVM::LoadCacheModifierKind::CA),
                                Value());
        continue;
      }
      // A 16-bit element: loaded now (in a register through the iteration), stored to staging at its end.
      auto branch = scf::IfOp::create(b, loc, TypeRange{b.getF32Type()}, in, /*withElseRegion=*/true);
      {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(branch.thenBlock());
        Value x = memref::LoadOp::create(b, loc, load.getBuffer(), ValueRange{element});
        scf::YieldOp::create(b, loc, ValueRange{arith::ExtFOp::create(b, loc, b.getF32Type(), x).getResult()});
        b.setInsertionPointToStart(branch.elseBlock());
        scf::YieldOp::create(b, loc, ValueRange{f32(0.0f)});
      }
      late.push_back({dst, branch.getResult(0)});
    }
  }
  /// Loads in `loop`'s body of inputs whose place in the next iteration is computable: their words are staged
  /// in thread-private shared memory (two buffers, by the iteration's parity), the first iteration's issued
  /// before the loop, each iteration issuing the next one's after waiting for its own. Returns false (and
  /// stages nothing) where no load qualifies.
  bool startPrefetch(scf::ForOp loop) {
    int64_t words = 0;
    SmallVector<TileLoadOp> loads;
    for (auto load : loop.getBody()->getOps<TileLoadOp>()) {
      auto type = cast<MemRefType>(load.getBuffer().getType());
      Type element = type.getElementType();
      std::optional<Shape> s = constantShape(shapes, load.getResult());
      if (isPrivate(load.getBuffer()) || !type.getLayout().isIdentity() || !(element.isBF16() || element.isF32()) ||
          !s || (s->kind() != Kind::Frag && s->kind() != Kind::Col) ||
          !llvm::all_of(ValueRange{load.getOffset(), load.getStride(), load.getValid()},
                        [&](Value v) { return computable(v, loop); }) ||
          writtenIn(load, loop))
        continue;
      Staged st;
      st.slot = words;
      st.pairs = element.isBF16() && pairedColumns(*s, load.getBuffer(), load.getOffset(), load.getStride());
      int64_t n = valuesOf(*s, warps);
      st.words = st.pairs ? n / 2 : n;
      if (prefetch >= 0 && words + st.words > prefetch)
        continue;
      words += st.words;
      staged[load] = st;
      loads.push_back(load);
    }
    if (loads.empty())
      return false;
    prefetchedWords += words;
    staging = newRegion(2 * words, warps * 32, 4);
    touch(staging);
    // Before the loop: the first iteration's words into buffer 0.
    Value iv = loop.getInductionVar();
    SmallVector<std::pair<Value, Value>> late;
    {
      IRMapping first;
      first.map(iv, loop.getLowerBound());
      Value runs = lt(loop.getLowerBound(), loop.getUpperBound());
      for (TileLoadOp load : loads)
        issue(load, staged[load], first, loop, idx(0), runs, late);
      for (auto [dst, x] : late)
        LLVM::StoreOp::create(b, loc, x, dst);
      NVVM::CpAsyncCommitGroupOp::create(b, loc);
    }
    // In the body: wait for this iteration's words, then issue the next one's into the other buffer.
    b.setInsertionPointToStart(loop.getBody());
    NVVM::CpAsyncWaitGroupOp::create(b, loc, 0);
    Value trip = arith::DivUIOp::create(b, loc, arith::SubIOp::create(b, loc, iv, loop.getLowerBound()),
                                        loop.getStep());
    Value parity = arith::RemUIOp::create(b, loc, trip, idx(2));
    stagingRow = mul(parity, words);
    Value nextRow = mul(arith::SubIOp::create(b, loc, idx(1), parity), words);
    IRMapping next;
    Value nextIv = arith::AddIOp::create(b, loc, iv, loop.getStep());
    next.map(iv, nextIv);
    Value runs = lt(nextIv, loop.getUpperBound());
    // The 16-bit elements' stores wait for the end of the body (their loads' latency hidden by it).
    for (TileLoadOp load : loads)
      issue(load, staged[load], next, loop, nextRow, runs, lateValues);
    NVVM::CpAsyncCommitGroupOp::create(b, loc);
    return true;
  }
  /// The 16-bit elements staged for the next iteration: (staging pointer, value), stored at the body's end.
  SmallVector<std::pair<Value, Value>> lateValues;
  /// At the end of a prefetching loop's body: the 16-bit elements' stores; the staging region lives through
  /// the whole loop.
  void finishPrefetch() {
    for (auto [dst, x] : lateValues)
      LLVM::StoreOp::create(b, loc, x, dst);
    lateValues.clear();
    touch(staging);
    staged.clear();
  }

  // --- the running states: per-thread arrays that LLVM promotes to registers ---
  Value stateArray(Value buffer, Shape s) {
    Value &array = states[buffer];
    if (array)
      return array;
    OpBuilder::InsertionGuard guard(b);
    b.restoreInsertionPoint(entryPoint);
    int64_t n = valuesOf(s, warps);
    Value count = LLVM::ConstantOp::create(b, loc, b.getI64Type(), b.getI64IntegerAttr(1));
    array = LLVM::AllocaOp::create(b, loc, ptrType(), LLVM::LLVMArrayType::get(b.getF32Type(), n), count);
    entryPoint = b.saveInsertionPoint();
    return array;
  }
  Value stateSlot(Value buffer, Shape s, int64_t v) {
    Value array = stateArray(buffer, s);
    return LLVM::GEPOp::create(b, loc, ptrType(), LLVM::LLVMArrayType::get(b.getF32Type(), valuesOf(s, warps)),
                               array, ArrayRef<LLVM::GEPArg>{0, int32_t(v)});
  }

  // --- the ops ---
  LogicalResult lowerBlock(Block &block) {
    for (Operation &op : llvm::make_early_inc_range(block)) {
      if (auto loop = dyn_cast<scf::ForOp>(&op)) {
        b.setInsertionPoint(loop);
        if (pending())
          barrier();
        int64_t start = barriers;
        hoistPure(*loop.getBody());
        bool prefetched = prefetch != 0 && staged.empty() && startPrefetch(loop);
        if (failed(lowerBlock(*loop.getBody())))
          return failure();
        b.setInsertionPoint(loop.getBody()->getTerminator());
        if (prefetched)
          finishPrefetch();
        // The next iteration rewrites the copies this one read.
        if (pending())
          barrier();
        // A region written before the loop and read in it is read again by every iteration: it lives to the end.
        for (Placement &p : placements)
          if (p.first >= 0 && p.first < start && p.last >= start)
            p.last = std::max(p.last, barriers);
        continue;
      }
      if (auto branch = dyn_cast<scf::IfOp>(&op)) {
        // Around ops that cross threads, a barrier before (nothing pending from outside) and after (nothing
        // pending past it; and the regions used before and after are separated on either path, as the copy
        // placement assumes). The condition is block-uniform (unsupported()): every thread meets both.
        bool crosses = crossesThreads(branch);
        if (crosses) {
          b.setInsertionPoint(branch);
          if (pending())
            barrier();
        }
        for (mlir::Region &region : branch->getRegions())
          for (Block &inner : region) {
            if (crosses)
              hoistPure(inner);
            if (failed(lowerBlock(inner)))
              return failure();
          }
        if (crosses) {
          b.setInsertionPointAfter(branch);
          barrier();
        }
        continue;
      }
      if (!isTileOp(&op) && !isElementwiseTile(&op))
        continue;
      b.setInsertionPoint(&op);
      loc = op.getLoc();
      if (failed(lowerOp(&op)))
        return failure();
      // The operand copies of the tile for the products that read it, written now, so that one barrier
      // serves every copy written before the first product.
      if (op.getNumResults() == 1 && tiles.count(op.getResult(0)))
        for (OpOperand &use : op.getResult(0).getUses()) {
          if (use.getOwner()->getBlock() != op.getBlock())
            continue;
          if (auto mm = dyn_cast<TileMatmulOp>(use.getOwner()))
            copyOf(use.get(), use.getOperandNumber() == 0 ? bool(mm.getTransposeLhs()) : !mm.getTransposeRhs(),
                   splitsOperand(mm, use.getOperandNumber()));
          else if (auto gd = dyn_cast<TileGatedDotOp>(use.getOwner()); gd && shape(gd.getGx()).kind() == Kind::Col) {
            if (use.getOperandNumber() < 2)
              copyOf(use.get(), false);
          } else if (isa<TileGatedDotOp, TileRowOp>(use.getOwner()) && shape(use.get()).kind() == Kind::Frag) {
            // Per-key gated products and rows of a matrix tile read an fp32 copy.
            scratchOf(use.get());
          }
        }
    }
    return success();
  }

  Tile &result(Operation *op, Shape s) {
    Tile &tile = tiles[op->getResult(0)];
    tile.shape = s;
    tile.values.clear();
    return tile;
  }

  LogicalResult lowerOp(Operation *op) {
    if (auto load = dyn_cast<TileLoadOp>(op)) {
      Shape s = shape(load.getResult());
      Tile &out = result(op, s);
      int64_t n = valuesOf(s, warps);
      if (isPrivate(load.getBuffer())) {
        for (int64_t v = 0; v < n; ++v)
          out.values.push_back(loadF32(stateSlot(load.getBuffer(), s, v)));
        return success();
      }
      if (auto it = staged.find(op); it != staged.end()) {
        // Staged by the previous iteration (or before the loop): the thread's own words, rows past `valid` 0.
        const Staged &st = it->second;
        Value base = pointer(staging, stagingRow, threadIndex());
        int64_t pitch = 4 * staging.pitch();
        for (int64_t w = 0; w < st.words; ++w) {
          if (!st.pairs) {
            out.values.push_back(loadF32(base, (st.slot + w) * pitch));
            continue;
          }
          Value word = LLVM::LoadOp::create(b, loc, b.getI32Type(), at(base, (st.slot + w) * pitch));
          auto [low, high] = unpackBf16Pair(word);
          out.values.push_back(low);
          out.values.push_back(high);
        }
        return success();
      }
      Value valid = arith::MinSIOp::create(b, loc, load.getValid(), idx(s.rows));
      // Frag values in pairs of adjacent columns at even offsets: one 32-bit (bf16) or 64-bit (fp32) load each,
      // as the paired stores (a Frag tile's test is per row: the pair shares it).
      bool pairs = pairedColumns(s, load.getBuffer(), load.getOffset(), load.getStride());
      bool bf16 = cast<MemRefType>(load.getBuffer().getType()).getElementType().isBF16();
      for (int64_t v = 0; v < n; ++v) {
        auto [row, col] = coords(s, v);
        Value in = loaded(s, row, col, valid);
        Value at = add(load.getOffset(), add(mul(select(in, row, idx(0)), load.getStride()), select(in, col, idx(0))));
        if (pairs) {
          Value address = globalAddress(load.getBuffer(), at);
          Value first, second;
          if (bf16) {
            std::tie(first, second) =
                unpackBf16Pair(LLVM::LoadOp::create(b, loc, b.getI32Type(), address, /*alignment=*/4));
          } else {
            Value pair = LLVM::LoadOp::create(b, loc, VectorType::get({2}, b.getF32Type()), address, /*alignment=*/8);
            first = LLVM::ExtractElementOp::create(b, loc, pair, i32(0));
            second = LLVM::ExtractElementOp::create(b, loc, pair, i32(1));
          }
          out.values.push_back(select(in, first, f32(0.0f)));
          out.values.push_back(select(in, second, f32(0.0f)));
          ++v;
          continue;
        }
        Value x = memref::LoadOp::create(b, loc, load.getBuffer(), ValueRange{at});
        if (!x.getType().isF32())
          x = arith::ExtFOp::create(b, loc, b.getF32Type(), x);
        out.values.push_back(select(in, x, f32(0.0f)));
      }
      return success();
    }
    if (auto store = dyn_cast<TileStoreOp>(op)) {
      const Tile &tile = tiles.at(store.getTile());
      Shape s = tile.shape;
      if (isPrivate(store.getBuffer())) {
        for (auto [v, x] : llvm::enumerate(tile.values))
          LLVM::StoreOp::create(b, loc, x, stateSlot(store.getBuffer(), s, v));
        return success();
      }
      Type element = cast<MemRefType>(store.getBuffer().getType()).getElementType();
      // Vectors are the same in every warp: the first warp stores them (a scalar, its first lane).
      Value mine = s.kind() == Kind::Frag     ? (grid(s).size() < warps ? lt(warp, idx(grid(s).size())) : Value())
                   : s.kind() == Kind::Scalar ? eq(arith::AddIOp::create(b, loc, warp, lane), 0)
                                              : eq(warp, 0);
      // Frag values in pairs of adjacent columns, at even offsets: one 32-bit (bf16) or 64-bit (fp32) store each.
      bool pairs = !store.getAccumulate() && pairedColumns(s, store.getBuffer(), store.getOffset(), store.getStride());
      for (auto [v, x] : llvm::enumerate(tile.values)) {
        if (pairs && v % 2)
          continue;
        auto [row, col] = coords(s, v);
        Value in = both(lt(row, store.getValid()), both(lt(row, idx(s.rows)), lt(col, idx(s.cols))));
        if (mine)
          in = both(in, mine);
        auto branch = scf::IfOp::create(b, loc, in, /*withElseRegion=*/false);
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(branch.thenBlock());
        Value at = add(store.getOffset(), add(mul(row, store.getStride()), col));
        if (pairs) {
          Value y = tile.values[v + 1];
          Value word = element.isBF16() ? packBf16Pair(x, y) : pairOf(x, y);
          LLVM::StoreOp::create(b, loc, word, globalAddress(store.getBuffer(), at), element.isBF16() ? 4 : 8);
          continue;
        }
        if (store.getAccumulate()) {
          // (fp32 buffers only: refused otherwise.)
          memref::AtomicRMWOp::create(b, loc, arith::AtomicRMWKind::addf, x, store.getBuffer(), ValueRange{at});
          continue;
        }
        Value y = element.isF32() ? x : arith::TruncFOp::create(b, loc, element, x).getResult();
        memref::StoreOp::create(b, loc, y, store.getBuffer(), ValueRange{at});
      }
      return success();
    }
    if (auto fill = dyn_cast<TileFillOp>(op)) {
      Shape s = shape(fill.getResult());
      result(op, s).values.assign(valuesOf(s, warps), fill.getValue());
      return success();
    }
    if (auto mask = dyn_cast<TileMaskRowsOp>(op)) {
      const Tile source = tiles.at(mask.getSource());
      Tile &out = result(op, source.shape);
      for (auto [v, x] : llvm::enumerate(source.values))
        out.values.push_back(select(lt(coords(source.shape, v).first, mask.getValid()), x, f32(0.0f)));
      return success();
    }
    if (auto bc = dyn_cast<TileBroadcastOp>(op)) {
      const Tile source = tiles.at(bc.getSource());
      Shape s = shape(bc.getResult());
      Tile &out = result(op, s);
      Kind from = source.shape.kind();
      if (from == Kind::Scalar) {
        out.values.assign(valuesOf(s, warps), source.values[0]);
      } else if (s.kind() != Kind::Frag) {
        out.values = source.values;
      } else {
        out.values = spread(source, s);
      }
      return success();
    }
    if (auto tr = dyn_cast<TileTransposeOp>(op)) {
      const Tile source = tiles.at(tr.getSource());
      result(op, Shape{source.shape.cols, source.shape.rows}).values = source.values;
      return success();
    }
    if (auto row = dyn_cast<TileRowOp>(op); row && shape(row.getSource()).kind() == Kind::Frag)
      return lowerMatrixRow(row);
    if (auto row = dyn_cast<TileRowOp>(op)) {
      // A Col's element (into a Scalar), or a Row or Scalar itself (row 0).
      const Tile source = tiles.at(row.getSource());
      Tile &out = result(op, Shape{1, source.shape.cols});
      if (source.shape.kind() == Kind::Col)
        out.values = {element(source, row.getIndex())};
      else
        out.values = source.values;
      return success();
    }
    if (auto cs = dyn_cast<TileCumsumOp>(op)) {
      Shape s = shape(cs.getSource());
      if (s.kind() != Kind::Frag)
        return lowerCumsum(cs);
      return grid(s).warpRows == 1 ? lowerWarpCumsum(cs) : lowerMatrixCumsum(cs);
    }
    if (auto mm = dyn_cast<TileMatmulOp>(op)) {
      // op(lhs) is m x k: lhs read as it is, or transposed; op(rhs) is k x n, read as the product's n x k
      // operand: rhs transposed, or as it is.
      Operand a = copyOf(mm.getLhs(), mm.getTransposeLhs(), splitsOperand(mm, 0));
      Operand bt = copyOf(mm.getRhs(), !mm.getTransposeRhs(), splitsOperand(mm, 1));
      Shape s = shape(mm.getResult());
      // A product added to a tile already computed (a state update S' = D + A B, an output X + A B)
      // accumulates onto it: the accumulators start from that tile, and the sum needs no registers of its own.
      SmallVector<Value> init;
      if (mm->hasOneUse() && isa<arith::AddFOp>(*mm->user_begin())) {
        Operation *sum = *mm->user_begin();
        Value other = sum->getOperand(0) == mm.getResult() ? sum->getOperand(1) : sum->getOperand(0);
        if (other != mm.getResult() && sum->getBlock() == mm->getBlock() && tiles.count(other) &&
            tiles.at(other).shape == s) {
          init = tiles.at(other).values;
          accumulated[sum] = mm.getResult();
        }
      }
      result(op, s).values = product(s, a, bt, init);
      return success();
    }
    if (auto gd = dyn_cast<TileGatedDotOp>(op); gd && shape(gd.getGx()).kind() == Kind::Frag)
      return lowerKeyGatedDot(gd);
    if (auto gd = dyn_cast<TileGatedDotOp>(op)) {
      // P_ij = (x y^T)_ij exp(gx_i - gy_j) where the mask keeps (i, j), else 0 (the exponent may overflow where
      // the mask drops the pair: it is selected away, not multiplied).
      Operand a = copyOf(gd.getX(), false), bt = copyOf(gd.getY(), false);
      Shape s = shape(gd.getResult());
      SmallVector<Value> acc = product(s, a, bt);
      auto gates = pairGates(s, tiles.at(gd.getGx()), tiles.at(gd.getGy()),
                             [&](Value i, Value j) { return masked(gd.getMask(), i, j); });
      Tile &out = result(op, s);
      for (auto [v, x] : llvm::enumerate(acc))
        out.values.push_back(select(gates[v].first, arith::MulFOp::create(b, loc, x, gates[v].second), f32(0.0f)));
      return success();
    }
    if (auto it = accumulated.find(op); it != accumulated.end()) {
      Tile sum = tiles.at(it->second);
      result(op, sum.shape).values = sum.values;
      return success();
    }
    if (auto solve = dyn_cast<TileTriSolveOp>(op))
      return lowerSolve(solve);
    if (auto sum = dyn_cast<TileRowSumOp>(op))
      return lowerRowSum(sum.getSource(), sum);
    if (auto red = dyn_cast<TileReduceOp>(op))
      return lowerReduce(red);
    if (auto sc = dyn_cast<TileScatterRowOp>(op)) {
      // One element of a vector set (a Scalar into a Col), or one row of a matrix (a Row into a Frag tile, each
      // of the thread's columns from the lane that holds it): the source where the row is `index`, else 0.
      const Tile source = tiles.at(sc.getSource());
      Shape s = shape(sc.getResult());
      Tile &out = result(op, s);
      SmallVector<Value> spreadRow = s.kind() == Kind::Frag ? spread(source, s) : SmallVector<Value>();
      for (int64_t v = 0, n = valuesOf(s, warps); v < n; ++v) {
        Value x = s.kind() == Kind::Frag ? spreadRow[v] : source.values[0];
        out.values.push_back(select(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, coords(s, v).first,
                                                          sc.getIndex()),
                                    x, f32(0.0f)));
      }
      return success();
    }
    if (auto tril = dyn_cast<TileTrilOp>(op)) {
      const Tile source = tiles.at(tril.getSource());
      Tile &out = result(op, source.shape);
      for (auto [v, x] : llvm::enumerate(source.values)) {
        auto [i, j] = coords(source.shape, v);
        Value keep = arith::CmpIOp::create(b, loc, tril.getStrict() ? arith::CmpIPredicate::slt : arith::CmpIPredicate::sle, j, i);
        out.values.push_back(select(keep, x, f32(0.0f)));
      }
      return success();
    }
    if (isa<TileGatedMatmulOp, TileGateGradOp>(op)) {
      // (Lowered already, with the rest of its per-key pair group.)
      if (fusedPairOps.contains(op))
        return success();
      if (std::optional<KeyPairGroup> group = keyPairGroup(op))
        return lowerKeyPairGroup(*group);
    }
    if (auto gm = dyn_cast<TileGatedMatmulOp>(op))
      return shape(gm.getGx()).kind() == Kind::Frag ? lowerKeyGatedMatmul(gm) : lowerGatedMatmul(gm);
    if (auto gg = dyn_cast<TileGateGradOp>(op))
      return shape(gg.getGx()).kind() == Kind::Frag ? lowerKeyGateGrad(gg) : lowerGateGrad(gg);
    if (isElementwiseTile(op)) {
      SmallVector<const Tile *> operands;
      for (Value v : op->getOperands())
        operands.push_back(&tiles.at(v));
      Shape s = operands.front()->shape;
      SmallVector<Value> values;
      for (size_t v = 0; v < operands.front()->values.size(); ++v) {
        OperationState state(loc, op->getName());
        for (const Tile *operand : operands)
          state.addOperands(operand->values[v]);
        state.addTypes(b.getF32Type());
        state.addAttributes(op->getAttrs());
        values.push_back(b.create(state)->getResult(0));
      }
      result(op, s).values = std::move(values);
      return success();
    }
    return op->emitError("linac-tile-to-fragments: no lowering for this op");
  }

  /// An fp32 copy of Frag tile `tile` in shared memory (rows kScratchPad floats padded), written where first
  /// needed.
  Region scratchOf(Value tile) {
    if (auto it = scratch.find(tile); it != scratch.end())
      return it->second;
    Shape s = shape(tile);
    Region r = newRegion(s.rows, s.cols, 4);
    scratch[tile] = r;
    writeScratch(r, s, tiles.at(tile).values);
    return r;
  }
  /// A thread's values of a Frag tile of shape `s` into fp32 region r.
  void writeScratch(const Region &r, Shape s, ArrayRef<Value> values) {
    beforeWrite(r);
    auto [rowBase, colBase] = bases(s);
    Value base = pointer(r, rowBase, colBase);
    for (auto [v, x] : llvm::enumerate(values)) {
      auto [dr, dc] = offsets(s, v);
      LLVM::StoreOp::create(b, loc, x, at(base, 4 * (dr * r.pitch() + dc)));
    }
  }
  /// (I + L) X = R (transposed: (I + L)^T X = R) in fp32: L and R to shared memory, a thread per column of R
  /// with the column in registers, L's entries read by every thread at once; writes X over R, and each thread
  /// reads its values of X back. Left-looking (the default): row by row, x_i = r_i - sum_j L_ij x_j (j rising;
  /// transposed x_i = r_i - sum_j L_ji x_j, j falling), each row loaded, solved and stored in turn. Right-looking
  /// (`rightLooking`): the column in registers, and as soon as x_j is known every row still to come takes its
  /// term. Each row takes its terms in the same order either way (the same dependence graph, bit-identical X);
  /// what differs is the order a warp issues them in, which it follows: left-looking issues a row's terms back to
  /// back, each waiting on the one before (unless ptxas reorders them, which in the 255-register backwards it
  /// does not fully do: bench/NOTES.md v31 put a solve at about 4,400 cycles), right-looking issues terms of
  /// different rows back to back (bench/NOTES.md v35). Right-looking forward takes rows in blocks of four columns
  /// of L (a row below the block reads its four entries at once: L's rows are 16-byte aligned); transposed reads
  /// L's row j, which holds every term of x_j, four entries at a time.
  LogicalResult lowerSolve(TileTriSolveOp solve) {
    Shape s = shape(solve.getRhs());
    Shape ls = shape(solve.getLower());
    if (solveProducts && ls.rows == ls.cols && ls.rows == s.rows && (ls.rows == 16 || ls.rows == 32)) {
      // X = T R (transposed: T^T R) with T = (I + L)^-1 from inverseOf, on the tensor cores, both operands
      // split (about 16 significant bits each, fp32 accumulation).
      Operand t = inverseOf(solve.getLower());
      t.transposed = solve.getTranspose();
      Operand r = copyOf(solve.getRhs(), /*transposed=*/true, /*split=*/true);
      result(solve, s).values = product(s, t, r);
      return success();
    }
    Region lower = scratchOf(solve.getLower()), rhs = scratchOf(solve.getRhs());
    beforeRead({lower, rhs});
    bool up = solve.getTranspose();
    bool quads = lower.pitch() % 4 == 0;
    forThreads(s.cols, [&](Value col) {
      Value colBase = pointer(rhs, idx(0), col), lBase = pointer(lower, idx(0), idx(0));
      int64_t n = s.rows;
      SmallVector<Value> x(n);
      Type quad = VectorType::get({4}, b.getF32Type());
      // L's entries [c, c + 4) of row r (r, c in L's coordinates), four at a time where aligned.
      auto entries = [&](int64_t r, int64_t c, int64_t count) {
        SmallVector<Value> l;
        if (quads && c % 4 == 0 && count == 4) {
          Value v = LLVM::LoadOp::create(b, loc, quad, at(lBase, 4 * (r * lower.pitch() + c)), /*alignment=*/16);
          for (int64_t k = 0; k < 4; ++k)
            l.push_back(LLVM::ExtractElementOp::create(b, loc, v, i32(k)));
        } else {
          for (int64_t k = 0; k < count; ++k)
            l.push_back(loadF32(lBase, 4 * (r * lower.pitch() + c + k)));
        }
        return l;
      };
      auto term = [&](Value l, Value xj, Value xi) {
        return math::FmaOp::create(b, loc, arith::NegFOp::create(b, loc, l), xj, xi);
      };
      if (!rightLooking) {
        // Each row loaded, solved and stored in turn.
        for (int64_t i0 = 0; i0 < n; ++i0) {
          int64_t i = up ? n - 1 - i0 : i0;
          x[i] = loadF32(colBase, 4 * i * rhs.pitch());
          Value row;
          for (int64_t m = 0; m < i0; ++m) {
            int64_t j = up ? n - 1 - m : m;
            Value l;
            if (!up && quads) {
              if (m % 4 == 0)
                row = LLVM::LoadOp::create(b, loc, quad, at(lBase, 4 * (i * lower.pitch() + j)), /*alignment=*/16);
              l = LLVM::ExtractElementOp::create(b, loc, row, i32(m % 4));
            } else {
              l = loadF32(lBase, 4 * (up ? j * lower.pitch() + i : i * lower.pitch() + j));
            }
            x[i] = term(l, x[j], x[i]);
          }
          LLVM::StoreOp::create(b, loc, x[i], at(colBase, 4 * i * rhs.pitch()));
        }
        return;
      }
      // Right-looking: the whole column in registers first.
      for (int64_t i = 0; i < n; ++i)
        x[i] = loadF32(colBase, 4 * i * rhs.pitch());
      if (!up) {
        for (int64_t j0 = 0; j0 < n; j0 += 4) {
          int64_t j1 = std::min(j0 + 4, n);
          // The block's own rows, in order (x_j final once the rows above it gave their terms).
          for (int64_t i = j0 + 1; i < j1; ++i) {
            SmallVector<Value> l = entries(i, j0, i - j0);
            for (int64_t j = j0; j < i; ++j)
              x[i] = term(l[j - j0], x[j], x[i]);
          }
          // Every row below takes the block's terms.
          for (int64_t i = j1; i < n; ++i) {
            SmallVector<Value> l = entries(i, j0, j1 - j0);
            for (int64_t j = j0; j < j1; ++j)
              x[i] = term(l[j - j0], x[j], x[i]);
          }
        }
      } else {
        for (int64_t j = n - 1; j > 0; --j) {
          // x_j is final; the rows above take its terms from L's row j.
          for (int64_t i0 = 0; i0 < j; i0 += 4) {
            int64_t count = std::min<int64_t>(4, j - i0);
            SmallVector<Value> l = entries(j, i0, count);
            for (int64_t i = i0; i < i0 + count; ++i)
              x[i] = term(l[i - i0], x[j], x[i]);
          }
        }
      }
      for (int64_t i = 0; i < n; ++i)
        LLVM::StoreOp::create(b, loc, x[i], at(colBase, 4 * i * rhs.pitch()));
    });
    // Each column's thread wrote what it read: no other thread's reads to wait for before those writes.
    hazards[rhs.id].written = true;
    beforeRead({rhs});
    result(solve, s).values = readScratch(rhs, s);
    return success();
  }
  /// The operand T = (I + L)^-1 of a triangular solve with L's strictly lower part (C x C, C <= 32), split
  /// (bf16 high parts and what they drop, as copyOf's `split`). One warp computes it, a lane per column j of T
  /// in registers, by columns of L (t_i -= L_im t_m for i > m, m rising: the lanes where m < j hold t_m = 0
  /// and change nothing), every product's L entry read by the warp at once from L's fp32 copy, in fp32 like the
  /// substitution, and writes both copies; the other warps go on to whatever does not read them.
  Operand inverseOf(Value lowerTile) {
    int64_t n = shape(lowerTile).rows;
    Region lower = scratchOf(lowerTile);
    beforeRead({lower});
    Region high = newRegion(n, n, 2), low = newRegion(n, n, 2);
    beforeWrite(high);
    beforeWrite(low);
    auto branch = scf::IfOp::create(b, loc, both(eq(warp, 0), lt(lane, idx(n))), /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(branch.thenBlock());
    Value lBase = pointer(lower, idx(0), idx(0));
    SmallVector<Value> t;
    for (int64_t i = 0; i < n; ++i)
      t.push_back(select(eq(lane, i), f32(1.0f), f32(0.0f)));
    for (int64_t m = 0; m + 1 < n; ++m)
      for (int64_t i = m + 1; i < n; ++i) {
        Value l = loadF32(lBase, 4 * (i * lower.pitch() + m));
        t[i] = math::FmaOp::create(b, loc, arith::NegFOp::create(b, loc, l), t[m], t[i]);
      }
    // Column `lane` of both copies, a 16-bit element a row: bf16(t) and bf16(t - bf16(t)), each the low half
    // of a packed pair.
    Value hBase = pointer(high, idx(0), lane), lowBase = pointer(low, idx(0), lane);
    for (int64_t i = 0; i < n; ++i) {
      auto [word, lowWord] = splitBf16Pair(t[i], f32(0.0f));
      LLVM::StoreOp::create(b, loc, arith::TruncIOp::create(b, loc, b.getI16Type(), word),
                            at(hBase, 2 * i * high.pitch()));
      LLVM::StoreOp::create(b, loc, arith::TruncIOp::create(b, loc, b.getI16Type(), lowWord),
                            at(lowBase, 2 * i * low.pitch()));
    }
    return {high, false, low};
  }
  /// A thread's values of a Frag tile of shape `s` from fp32 scratch region r.
  SmallVector<Value> readScratch(const Region &r, Shape s) {
    auto [rowBase, colBase] = bases(s);
    Value base = pointer(r, rowBase, colBase);
    SmallVector<Value> values;
    for (int64_t v = 0, n = valuesOf(s, warps); v < n; ++v) {
      auto [dr, dc] = offsets(s, v);
      values.push_back(loadF32(base, 4 * (dr * r.pitch() + dc)));
    }
    return values;
  }
  /// Emits `body(j)` for each j < n, j spread over the block's threads (a thread's share unrolled).
  void forThreads(int64_t n, function_ref<void(Value)> body) {
    Value tid = threadIndex();
    for (int64_t j0 = 0; j0 < n; j0 += warps * 32) {
      Value j = add(tid, j0);
      auto branch = scf::IfOp::create(b, loc, lt(j, idx(n)), /*withElseRegion=*/false);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(branch.thenBlock());
      body(j);
    }
  }
  /// Prefix sums down the columns of a Frag tile: a thread per column over the fp32 copy, in place in a copy of
  /// its own (the result's), read back.
  LogicalResult lowerMatrixCumsum(TileCumsumOp cs) {
    Shape s = shape(cs.getSource());
    Region r = newRegion(s.rows, s.cols, 4);
    // The source's values into the result's region, then the scan over it.
    writeScratch(r, s, tiles.at(cs.getSource()).values);
    beforeRead({r});
    bool reverse = cs.getReverse(), exclusive = cs.getExclusive();
    forThreads(s.cols, [&](Value col) {
      Value base = pointer(r, idx(0), col);
      Value sum = f32(0.0f);
      for (int64_t n = 0; n < s.rows; ++n) {
        int64_t i = reverse ? s.rows - 1 - n : n;
        Value p = at(base, 4 * i * r.pitch());
        Value x = loadF32(p);
        Value next = arith::AddFOp::create(b, loc, sum, x);
        LLVM::StoreOp::create(b, loc, exclusive ? sum : next, p);
        sum = next;
      }
    });
    hazards[r.id].written = true;
    scratch[cs.getResult()] = r;
    beforeRead({r});
    result(cs, s).values = readScratch(r, s);
    return success();
  }
  /// Prefix sums down the columns of a Frag tile whose every row is in each owning warp (one warp row): a scan
  /// over the 8 lane groups of each half fragment by shuffles, halves and fragments carried in order (reverse:
  /// from the last row up); the exclusive form takes the row before's sum (the carry at a half's first row).
  LogicalResult lowerWarpCumsum(TileCumsumOp cs) {
    Shape s = shape(cs.getSource());
    const Tile source = tiles.at(cs.getSource());
    Grid gr = grid(s);
    int64_t fragRows = s.rows / 16, fragCols = s.cols / gr.warpCols / 8;
    bool reverse = cs.getReverse(), exclusive = cs.getExclusive();
    Value edge = add(t, reverse ? 0 : 28);
    SmallVector<Value> out(source.values.size());
    for (int64_t fc = 0; fc < fragCols; ++fc)
      for (int64_t c = 0; c < 2; ++c) {
        Value carry = f32(0.0f);
        for (int64_t n = 0; n < fragRows * 2; ++n) {
          int64_t half = reverse ? fragRows * 2 - 1 - n : n;
          int64_t fr = half / 2, h = half % 2;
          int64_t v = (fr * fragCols + fc) * 4 + 2 * h + c;
          // The 8 rows of a half fragment are the lane groups g, 4 lanes apart.
          Value x = arith::AddFOp::create(b, loc, laneScan(source.values[v], g, 4, 8, reverse), carry);
          if (exclusive) {
            Value before = gpu::ShuffleOp::create(b, loc, x, i32(4), i32(32),
                                                  reverse ? gpu::ShuffleMode::DOWN : gpu::ShuffleMode::UP)
                               .getShuffleResult();
            out[v] = select(eq(g, reverse ? 7 : 0), carry, before);
          } else {
            out[v] = x;
          }
          carry = gpu::ShuffleOp::create(b, loc, x, toI32(edge), i32(32), gpu::ShuffleMode::IDX).getShuffleResult();
        }
      }
    result(cs, s).values = std::move(out);
    return success();
  }

  /// Each row's sum of a Frag tile, as a Col vector: a warp sums its values of a row and across its four lanes of
  /// the row (xor shuffles); where the row spans several warps, their partial sums go through shared memory.
  LogicalResult lowerRowSum(Value sourceTile, Operation *sum) {
    Shape s = shape(sourceTile);
    const Tile source = tiles.at(sourceTile);
    Grid gr = grid(s);
    int64_t fragRows = s.rows / gr.warpRows / 16, fragCols = s.cols / gr.warpCols / 8;
    // The thread's partial sums, one per row it holds (fr, half).
    SmallVector<Value> partial(fragRows * 2);
    for (int64_t fr = 0; fr < fragRows; ++fr)
      for (int64_t h = 0; h < 2; ++h) {
        Value x = f32(0.0f);
        for (int64_t fc = 0; fc < fragCols; ++fc)
          for (int64_t c = 0; c < 2; ++c)
            x = arith::AddFOp::create(b, loc, x, source.values[(fr * fragCols + fc) * 4 + 2 * h + c]);
        // and the row's four lanes.
        partial[fr * 2 + h] = xorSum(x, 4);
      }
    Shape out{s.rows, 1};
    Tile &result_ = result(sum, out);
    // Through shared memory: partial sums [row][warp column]; every warp then reads its lanes' rows.
    Region r = newRegion(s.rows, gr.warpCols, 4);
    beforeWrite(r);
    auto [rowBase, colBase] = bases(s);
    Value owner = gr.size() < warps ? arith::RemUIOp::create(b, loc, warp, idx(gr.size())).getResult() : warp;
    Value warpCol = arith::RemUIOp::create(b, loc, owner, idx(gr.warpCols));
    {
      auto branch = scf::IfOp::create(b, loc, eq(t, 0), /*withElseRegion=*/false);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(branch.thenBlock());
      Value base = pointer(r, rowBase, warpCol);
      for (int64_t fr = 0; fr < fragRows; ++fr)
        for (int64_t h = 0; h < 2; ++h)
          LLVM::StoreOp::create(b, loc, partial[fr * 2 + h], at(base, 4 * (fr * 16 + 8 * h) * r.pitch()));
    }
    beforeRead({r});
    result_.values = vectorFrom(out, s.rows, [&](Value e) {
      Value base = pointer(r, e, idx(0));
      Value x = f32(0.0f);
      for (int64_t c = 0; c < gr.warpCols; ++c)
        x = arith::AddFOp::create(b, loc, x, loadF32(base, 4 * c));
      return x;
    });
    return success();
  }

  /// A tile summed down to rows x cols (each 1 or the source's): a Frag tile's row sums (lowerRowSum), column
  /// sums or total, a vector's total.
  LogicalResult lowerReduce(TileReduceOp red) {
    Shape from = shape(red.getSource()), to = shape(red.getResult());
    const Tile source = tiles.at(red.getSource());
    if (from == to) {
      result(red, to).values = source.values;
      return success();
    }
    if (from.kind() == Kind::Frag && to.kind() == Kind::Col)
      return lowerRowSum(red.getSource(), red);
    // A vector's (or, through its row sums, a Frag tile's) total: each lane's values, then the warp.
    auto total = [&](const Tile &vec) {
      Value x = f32(0.0f);
      int64_t length = vec.shape.kind() == Kind::Col ? vec.shape.rows : vec.shape.cols;
      for (auto [v, y] : llvm::enumerate(vec.values))
        x = arith::AddFOp::create(b, loc, x, select(lt(add(lane, 32 * v), idx(length)), y, f32(0.0f)));
      return xorSum(x, 32);
    };
    if (to.kind() == Kind::Scalar && from.kind() != Kind::Frag) {
      result(red, to).values = {total(source)};
      return success();
    }
    if (from.kind() == Kind::Frag && to.kind() == Kind::Row) {
      // Column sums: through the transposed fp32 copy's rows is the same as a row sum of the transpose; here the
      // fp32 copy and a thread per column.
      Region r = scratchOf(red.getSource());
      beforeRead({r});
      result(red, to).values = vectorFrom(to, from.cols, [&](Value e) {
        Value base = pointer(r, idx(0), e);
        Value x = f32(0.0f);
        for (int64_t i = 0; i < from.rows; ++i)
          x = arith::AddFOp::create(b, loc, x, loadF32(base, 4 * i * r.pitch()));
        return x;
      });
      return success();
    }
    if (from.kind() == Kind::Frag && to.kind() == Kind::Scalar) {
      if (failed(lowerRowSum(red.getSource(), red)))
        return failure();
      Tile rows = tiles.at(red.getResult());
      result(red, to).values = {total(rows)};
      return success();
    }
    return red.emitError("linac-tile-to-fragments: no lowering for this reduce");
  }

  /// For each value (i, j) of a Frag pair tile of shape `ps`: whether keep(i, j), and exp(gx_i - gy_j) there (1 for
  /// a dropped pair, whose exponent may overflow), the gates read once per row and column the thread holds.
  SmallVector<std::pair<Value, Value>> pairGates(Shape ps, const Tile &gx, const Tile &gy,
                                                 function_ref<Value(Value, Value)> keep) {
    auto [rowBase, colBase] = bases(ps);
    std::map<int64_t, Value> rows, cols;
    SmallVector<std::pair<Value, Value>> out;
    for (int64_t v = 0, n = valuesOf(ps, warps); v < n; ++v) {
      auto [dr, dc] = offsets(ps, v);
      Value &gi = rows[dr];
      if (!gi)
        gi = element(gx, add(rowBase, dr));
      Value &gj = cols[dc];
      if (!gj)
        gj = element(gy, add(colBase, dc));
      Value kept = keep(add(rowBase, dr), add(colBase, dc));
      out.push_back({kept, math::ExpOp::create(b, loc, select(kept, arith::SubFOp::create(b, loc, gi, gj), f32(0.0f)))});
    }
    return out;
  }
  /// The pairs a mask keeps: j <= i (lower) or j < i (strict lower).
  Value masked(MaskKind mask, Value i, Value j) {
    return arith::CmpIOp::create(b, loc, mask == MaskKind::Lower ? arith::CmpIPredicate::sle : arith::CmpIPredicate::slt,
                                 j, i);
  }

  /// Z = (M . P . exp(gx_i - gy_j)) y, or with `transpose` its transpose times y, for one gate per row: the
  /// pair factors in registers (dropped pairs selected to 0), then a product from bf16 copies.
  LogicalResult lowerGatedMatmul(TileGatedMatmulOp gm) {
    Shape ps = shape(gm.getPairs());
    auto gates = pairGates(ps, tiles.at(gm.getGx()), tiles.at(gm.getGy()),
                           [&](Value i, Value j) { return masked(gm.getMask(), i, j); });
    SmallVector<Value> scaled;
    for (auto [v, x] : llvm::enumerate(tiles.at(gm.getPairs()).values))
      scaled.push_back(select(gates[v].first, arith::MulFOp::create(b, loc, x, gates[v].second), f32(0.0f)));
    // Z (m x d) = A y with A the scaled pairs (transpose: their transpose); y's copy n x k is y transposed.
    Operand a = copyOfValues(ps, scaled, gm.getTranspose());
    Operand bt = copyOf(gm.getY(), true);
    Shape out = shape(gm.getResult());
    result(gm, out).values = product(out, a, bt);
    return success();
  }

  /// The gradient of scalar log-gates through a gated product's pair exponents:
  ///   U_t = sum over j < t <= i - shift of M_ij,  M_ij = P_ij (x_i . y_j) exp(gx_i - gy_j),
  /// summed pair by pair (no differences of prefix sums). M from a product and the pair factors in registers
  /// (pairs outside j < i - shift selected to 0), to an fp32 copy; then for each t a group of m lanes, lane i
  /// adding its row's M_ij over j < t where i >= t + shift, and the group's sum by xor shuffles.
  LogicalResult lowerGateGrad(TileGateGradOp gg) {
    Shape ps = shape(gg.getPairs());
    int64_t m = ps.rows, shift = gg.getShift();
    Operand xa = copyOf(gg.getX(), false), yb = copyOf(gg.getY(), false);
    SmallVector<Value> overlap = product(ps, xa, yb);
    auto gates = pairGates(ps, tiles.at(gg.getGx()), tiles.at(gg.getGy()),
                           [&](Value i, Value j) { return lt(add(j, shift), i); });
    SmallVector<Value> terms;
    for (auto [v, x] : llvm::enumerate(tiles.at(gg.getPairs()).values))
      terms.push_back(select(gates[v].first,
                             arith::MulFOp::create(b, loc, arith::MulFOp::create(b, loc, x, overlap[v]), gates[v].second),
                             f32(0.0f)));
    auto [rowBase, colBase] = bases(ps);
    Region r = newRegion(m, m, 4);
    writeScratch(r, ps, terms);
    beforeRead({r});
    Region u = newRegion(1, m, 4);
    forThreads(m * m, [&](Value job) {
      Value tIndex = arith::DivUIOp::create(b, loc, job, idx(m)), i = arith::RemUIOp::create(b, loc, job, idx(m));
      Value base = pointer(r, i, idx(0));
      Value x = f32(0.0f);
      for (int64_t j = 0; j + 1 < m; ++j)
        x = arith::AddFOp::create(b, loc, x, select(lt(idx(j), tIndex), loadF32(base, 4 * j), f32(0.0f)));
      // Rows i >= t + shift only (M is 0 elsewhere in those rows anyway, but the guard keeps the sum exact).
      x = xorSum(select(lt(add(tIndex, shift - 1), i), x, f32(0.0f)), m);
      storeIf(eq(i, 0), x, [&] { return pointer(u, idx(0), tIndex); });
    });
    beforeWrite(u);
    beforeRead({u});
    result(gg, shape(gg.getResult())).values = vectorFrom(shape(gg.getResult()), m, [&](Value e) {
      return loadF32(pointer(u, idx(0), e));
    });
    return success();
  }

  /// Per-key gates: Z_id = sum_j M_ij p_ij y_jd exp(gx_id - gy_jd), or with `transpose`
  /// Z_jd = sum_i M_ij p_ij y_id exp(gx_id - gy_jd), exactly in fp32 on the CUDA cores. Each thread sums its own
  /// values of Z (the Frag layout, whose own gate - gx, or gy with `transpose` - has Z's shape and so sits in the
  /// same registers) over the m pairs of its row, reading the pairs, y and the other gate from fp32 copies.
  LogicalResult lowerKeyGatedMatmul(TileGatedMatmulOp gm) {
    keyPairs = true;
    Shape out = shape(gm.getResult());
    int64_t m = shape(gm.getPairs()).rows;
    bool tr = gm.getTranspose();
    Region p = scratchOf(gm.getPairs()), y = scratchOf(gm.getY()), g = scratchOf(tr ? gm.getGx() : gm.getGy());
    beforeRead({p, y, g});
    const Tile own = tiles.at(tr ? gm.getGy() : gm.getGx());
    auto [rowBase, colBase] = bases(out);
    // The thread's rows of the pair tile (transposed: its columns), and y's and the gate's columns.
    Value pBase = tr ? pointer(p, idx(0), rowBase) : pointer(p, rowBase, idx(0));
    Value yBase = pointer(y, idx(0), colBase), gBase = pointer(g, idx(0), colBase);
    Tile &z = result(gm, out);
    // Where one warp holds every row, the value's row is dr + (0..7) in every lane: pairs with k past that range
    // (before it, transposed) are dropped by the mask in every lane, and skipped.
    bool oneWarpRow = grid(out).warpRows == 1;
    for (int64_t v = 0, n = valuesOf(out, warps); v < n; ++v) {
      auto [dr, dc] = offsets(out, v);
      Value r = add(rowBase, dr), sum = f32(0.0f);
      int64_t kBegin = oneWarpRow && tr ? dr : 0, kEnd = oneWarpRow && !tr ? std::min<int64_t>(m, dr + 8) : m;
      for (int64_t k = kBegin; k < kEnd; ++k) {
        // Pair (i, j) = (r, k), or (k, r) transposed.
        Value keep = tr ? masked(gm.getMask(), idx(k), r) : masked(gm.getMask(), r, idx(k));
        Value pair = loadF32(pBase, 4 * (tr ? k * p.pitch() + dr : dr * p.pitch() + k));
        Value yk = loadF32(yBase, 4 * (k * y.pitch() + dc)), gk = loadF32(gBase, 4 * (k * g.pitch() + dc));
        Value exponent = tr ? arith::SubFOp::create(b, loc, gk, own.values[v]).getResult()
                            : arith::SubFOp::create(b, loc, own.values[v], gk).getResult();
        // Kept pairs only: a dropped pair's exponent may overflow.
        Value e = math::ExpOp::create(b, loc, select(keep, exponent, f32(0.0f)));
        sum = select(keep, math::FmaOp::create(b, loc, arith::MulFOp::create(b, loc, pair, yk), e, sum), sum);
      }
      z.values.push_back(sum);
    }
    return success();
  }

  /// `value` stored at `address()` (built inside the branch) by the threads where `cond` holds.
  void storeIf(Value cond, Value value, function_ref<Value()> address) {
    auto branch = scf::IfOp::create(b, loc, cond, /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(branch.thenBlock());
    LLVM::StoreOp::create(b, loc, value, address());
  }
  /// A lane of the per-key pair loops that split each channel's keys j over `parts` adjacent lanes
  /// (keyGradParts): job = c parts + part, the lane's j = part + parts q (q < m / parts), its y_j and gy_j read
  /// into registers from the fp32 copies.
  struct ChannelLane {
    Value c, part;
    SmallVector<Value> yj, gj, js;
  };
  ChannelLane channelLane(Value job, int64_t parts, int64_t mine, const Region &y, const Region &gy) {
    ChannelLane l;
    l.c = arith::DivUIOp::create(b, loc, job, idx(parts));
    l.part = arith::RemUIOp::create(b, loc, job, idx(parts));
    Value yBase = pointer(y, l.part, l.c), gyBase = pointer(gy, l.part, l.c);
    for (int64_t q = 0; q < mine; ++q) {
      l.yj.push_back(loadF32(yBase, 4 * q * parts * y.pitch()));
      l.gj.push_back(loadF32(gyBase, 4 * q * parts * gy.pitch()));
      l.js.push_back(add(l.part, q * parts));
    }
    return l;
  }
  /// sum over the lane's j < t of sums[q] (j = part + parts q), summed over the channel's lanes: U_t of the
  /// per-key gate gradient from its C_j. (A q with parts q >= t has no j < t in any lane; U_0 is 0.)
  Value keysBefore(const ChannelLane &l, ArrayRef<Value> sums, int64_t t, int64_t parts) {
    Value total = f32(0.0f);
    for (int64_t q = 0; q < int64_t(sums.size()) && q * parts < t; ++q)
      total = arith::AddFOp::create(b, loc, total, select(lt(l.js[q], idx(t)), sums[q], f32(0.0f)));
    return t ? xorSum(total, parts) : total;
  }

  /// The gradient of per-key log-gates: U_td = sum over j < t <= i - shift of M_ijd,
  /// M_ijd = p_ij x_id y_jd exp(gx_id - gy_jd), exactly and as a sum of terms (no differences). Per channel d,
  /// t runs down from m - 1 keeping C_j = sum over rows i >= t + shift of M_ijd (row t + shift added at step t)
  /// and U_td = sum_{j < t} C_j; a channel's j are split over `parts` adjacent lanes (summed by shuffles), its
  /// y and gy kept in registers, x, gx and the pairs read from fp32 copies; U through an fp32 copy.
  LogicalResult lowerKeyGateGrad(TileGateGradOp gg) {
    keyPairs = true;
    Shape out = shape(gg.getResult());
    int64_t m = out.rows, d = out.cols, shift = gg.getShift();
    Region p = scratchOf(gg.getPairs()), x = scratchOf(gg.getX()), y = scratchOf(gg.getY()),
           gx = scratchOf(gg.getGx()), gy = scratchOf(gg.getGy());
    Region u = newRegion(m, d, 4);
    beforeRead({p, x, y, gx, gy});
    beforeWrite(u);
    int64_t parts = keyGradParts(m, d, warps);
    int64_t mine = m / parts;
    forThreads(d * parts, [&](Value job) {
      ChannelLane l = channelLane(job, parts, mine, y, gy);
      Value c = l.c, part = l.part;
      ArrayRef<Value> yj = l.yj, gj = l.gj, js = l.js;
      SmallVector<Value> sums(mine, f32(0.0f));
      Value xBase = pointer(x, idx(0), c), gxBase = pointer(gx, idx(0), c), pBase = pointer(p, idx(0), part);
      Value uBase = pointer(u, idx(0), c);
      for (int64_t t = m - 1; t >= 0; --t) {
        if (int64_t i = t + shift; i < m) {
          Value xi = loadF32(xBase, 4 * i * x.pitch()), gi = loadF32(gxBase, 4 * i * gx.pitch());
          // (j = part + parts q >= parts q: a q with parts q >= t has no j < t in any lane.)
          for (int64_t q = 0; q < mine && q * parts < t; ++q) {
            Value keep = lt(js[q], idx(t));
            Value e = math::ExpOp::create(b, loc, select(keep, arith::SubFOp::create(b, loc, gi, gj[q]), f32(0.0f)));
            Value pair = loadF32(pBase, 4 * (i * p.pitch() + q * parts));
            Value term = arith::MulFOp::create(b, loc, arith::MulFOp::create(b, loc, pair, xi),
                                               arith::MulFOp::create(b, loc, yj[q], e));
            sums[q] = arith::AddFOp::create(b, loc, sums[q], select(keep, term, f32(0.0f)));
          }
        }
        storeIf(eq(part, 0), keysBefore(l, sums, t, parts), [&] { return at(uBase, 4 * t * u.pitch()); });
      }
    });
    beforeRead({u});
    result(gg, out).values = readScratch(u, out);
    return success();
  }

  /// The three per-key pair products of one pair tile P that a gated product's backward holds:
  ///   rows: Z_id = sum_j P_ij y_jd E_ijd,  cols: Z_jd = sum_i P_ij x_id E_ijd,  grad: U_td = sum over
  ///   j < t <= i - shift of P_ij x_id y_jd E_ijd,  with E_ijd = exp(gx_id - gy_jd) and the products' mask,
  /// each pair and channel's exponential shared by all three (lowerKeyPairGroup).
  struct KeyPairGroup {
    TileGatedMatmulOp rows, cols;
    TileGateGradOp grad;
  };
  /// The group `op` (a per-key gated_matmul or gate_grad) belongs to: P's other readers in the same block, one
  /// of each kind, with the same gates, the products with the same mask, the rows' y the gradient's y and the
  /// columns' y its x, a shift >= 0 (its pairs then lie within either mask), and every operand lowered already.
  std::optional<KeyPairGroup> keyPairGroup(Operation *op) {
    Value pairs = op->getOperand(0);
    KeyPairGroup group;
    for (Operation *user : pairs.getUsers()) {
      if (user->getBlock() != op->getBlock() || user->getOperand(0) != pairs)
        continue;
      if (auto gm = dyn_cast<TileGatedMatmulOp>(user)) {
        TileGatedMatmulOp &slot = gm.getTranspose() ? group.cols : group.rows;
        if (slot)
          return std::nullopt;
        slot = gm;
      } else if (auto gg = dyn_cast<TileGateGradOp>(user)) {
        if (group.grad)
          return std::nullopt;
        group.grad = gg;
      }
    }
    TileGatedMatmulOp rows = group.rows, cols = group.cols;
    TileGateGradOp grad = group.grad;
    if (!rows || !cols || !grad || shape(grad.getGx()).kind() != Kind::Frag || grad.getShift() < 0 ||
        rows.getMask() != cols.getMask())
      return std::nullopt;
    for (TileGatedMatmulOp gm : {rows, cols})
      if (gm.getGx() != grad.getGx() || gm.getGy() != grad.getGy())
        return std::nullopt;
    if (rows.getY() != grad.getY() || cols.getY() != grad.getX())
      return std::nullopt;
    for (Value v : grad->getOperands())
      if (!tiles.count(v))
        return std::nullopt;
    return group;
  }
  /// A KeyPairGroup in one pass over (i, j, channel), exactly in fp32 on the CUDA cores: each channel's j split
  /// over `parts` adjacent lanes (keyGradParts, as lowerKeyGateGrad), its y and gy in registers; rows i run
  /// down, one exponential a kept pair feeding the three sums: the row sum Z_i (summed over the parts by
  /// shuffles), the column sums Z_j (in registers) and the gate gradient's C_j = sum over rows i >= t + shift
  /// of P_ij x_i y_j E_ij, U_t = sum_{j < t} C_j taken once row t + shift is in (sums of terms, no
  /// differences). The three results through fp32 copies. A third of the exponentials of the three separate
  /// lowerings, and no pair loaded three times.
  LogicalResult lowerKeyPairGroup(KeyPairGroup group) {
    keyPairs = true;
    TileGateGradOp gg = group.grad;
    Shape out = shape(gg.getResult());
    int64_t m = out.rows, d = out.cols, shift = gg.getShift();
    bool strict = group.rows.getMask() == MaskKind::StrictLower;
    Region p = scratchOf(gg.getPairs()), x = scratchOf(gg.getX()), y = scratchOf(gg.getY()),
           gx = scratchOf(gg.getGx()), gy = scratchOf(gg.getGy());
    Region zRows = newRegion(m, d, 4), zCols = newRegion(m, d, 4), u = newRegion(m, d, 4);
    beforeRead({p, x, y, gx, gy});
    for (const Region &r : {zRows, zCols, u})
      beforeWrite(r);
    int64_t parts = keyGradParts(m, d, warps), mine = m / parts;
    forThreads(d * parts, [&](Value job) {
      ChannelLane l = channelLane(job, parts, mine, y, gy);
      Value c = l.c, part = l.part;
      ArrayRef<Value> yj = l.yj, gj = l.gj, js = l.js;
      SmallVector<Value> colSums(mine, f32(0.0f)), gateSums(mine, f32(0.0f));
      Value xBase = pointer(x, idx(0), c), gxBase = pointer(gx, idx(0), c), pBase = pointer(p, idx(0), part);
      Value rowBase = pointer(zRows, idx(0), c), uBase = pointer(u, idx(0), c);
      auto store = [&](Value value, Value base, int64_t bytes) {
        storeIf(eq(part, 0), value, [&] { return at(base, bytes); });
      };
      // U_t with no row i >= t + shift.
      for (int64_t t = std::max<int64_t>(0, m - shift); t < m; ++t)
        store(f32(0.0f), uBase, 4 * t * u.pitch());
      for (int64_t i = m - 1; i >= 0; --i) {
        Value xi = loadF32(xBase, 4 * i * x.pitch()), gi = loadF32(gxBase, 4 * i * gx.pitch());
        Value rowSum = f32(0.0f);
        for (int64_t q = 0; q < mine; ++q) {
          // The mask keeps j <= i (strict: j < i): every part's j = parts q + part kept, none, or some.
          int64_t first = q * parts, last = first + parts - 1, bound = strict ? i : i + 1;
          if (first >= bound)
            break;
          Value keep = last < bound ? Value() : lt(js[q], idx(bound));
          // Kept pairs only: a dropped pair's exponent may overflow.
          Value exponent = arith::SubFOp::create(b, loc, gi, gj[q]);
          Value e = math::ExpOp::create(b, loc, keep ? select(keep, exponent, f32(0.0f)) : exponent);
          Value pe = arith::MulFOp::create(b, loc, loadF32(pBase, 4 * (i * p.pitch() + first)), e);
          if (keep)
            pe = select(keep, pe, f32(0.0f));
          rowSum = math::FmaOp::create(b, loc, pe, yj[q], rowSum);
          Value px = arith::MulFOp::create(b, loc, pe, xi);
          colSums[q] = arith::AddFOp::create(b, loc, colSums[q], px);
          gateSums[q] = math::FmaOp::create(b, loc, px, yj[q], gateSums[q]);
        }
        store(xorSum(rowSum, parts), rowBase, 4 * i * zRows.pitch());
        // Every row i >= t + shift is in C: U_t.
        if (int64_t t = i - shift; t >= 0)
          store(keysBefore(l, gateSums, t, parts), uBase, 4 * t * u.pitch());
      }
      Value colBase = pointer(zCols, part, c);
      for (int64_t q = 0; q < mine; ++q)
        LLVM::StoreOp::create(b, loc, colSums[q], at(colBase, 4 * q * parts * zCols.pitch()));
    });
    beforeRead({zRows, zCols, u});
    result(group.rows, out).values = readScratch(zRows, out);
    result(group.cols, out).values = readScratch(zCols, out);
    result(gg, out).values = readScratch(u, out);
    for (Operation *op : {group.rows.getOperation(), group.cols.getOperation(), gg.getOperation()})
      fusedPairOps.insert(op);
    return success();
  }

  /// Row `index` (a constant) of a Frag tile, as a Row vector, from its fp32 copy.
  LogicalResult lowerMatrixRow(TileRowOp row) {
    Shape s = shape(row.getSource());
    std::optional<int64_t> index = getConstantIntValue(row.getIndex());
    Region r = scratchOf(row.getSource());
    beforeRead({r});
    Shape out{1, s.cols};
    result(row, out).values = vectorFrom(out, s.cols, [&](Value e) {
      return loadF32(pointer(r, idx(*index), e));
    });
    return success();
  }
  /// P_ij = sum_d x_id y_jd exp(gx_id - gy_jd) with per-key gates, exactly, on the CUDA cores: each pair's
  /// channels split over `parts` adjacent lanes (summed by shuffles), from fp32 copies of the four tiles;
  /// P through an fp32 copy into the Frag layout.
  LogicalResult lowerKeyGatedDot(TileGatedDotOp gd) {
    keyPairs = true;
    Shape in = shape(gd.getX()), out = shape(gd.getResult());
    Region x = scratchOf(gd.getX()), y = scratchOf(gd.getY()), gx = scratchOf(gd.getGx()),
           gy = scratchOf(gd.getGy());
    Region p = newRegion(out.rows, out.cols, 4);
    beforeRead({x, y, gx, gy});
    // A square pair tile (a chunk's tokens against themselves) enumerates only the pairs its mask keeps: row i
    // holds i + 1 of them (i with a strict mask) from pair first(i) on, so no lane spends exponentials on a pair
    // that is dropped (nearly half of them at C = 16). Others enumerate every pair and select.
    bool strict = gd.getMask() == MaskKind::StrictLower;
    bool compact = out.rows == out.cols;
    int64_t m = out.rows, firstRow = compact && strict ? 1 : 0;
    auto first = [&](int64_t r) { return strict ? r * (r - 1) / 2 : r * (r + 1) / 2; };
    int64_t pairs = compact ? first(m) : out.rows * out.cols, threads = warps * 32;
    int64_t parts = 1;
    while (parts * 2 * pairs <= threads && parts * 2 <= 32 && in.cols % (parts * 2) == 0)
      parts *= 2;
    int64_t span = in.cols / parts, jobs = pairs * parts;
    // Whole warps (a pair's lanes sum by shuffles): jobs past the last one repeat it and store nothing.
    forThreads((jobs + 31) / 32 * 32, [&](Value slot) {
      Value live = lt(slot, idx(jobs)), job = select(live, slot, idx(jobs - 1));
      Value pair = arith::DivUIOp::create(b, loc, job, idx(parts)), part = arith::RemUIOp::create(b, loc, job, idx(parts));
      Value i, j, keep;
      if (compact) {
        // i: the last row whose first pair is at or before this one; j: the pair's place in its row.
        i = idx(firstRow);
        for (int64_t r = firstRow + 1; r < m; ++r)
          i = add(i, select(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, pair, idx(first(r))), idx(1),
                            idx(0)));
        Value rowStart = arith::DivUIOp::create(b, loc, mul(i, strict ? add(i, -1) : add(i, 1)), idx(2));
        j = arith::SubIOp::create(b, loc, pair, rowStart);
        keep = arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1);
      } else {
        i = arith::DivUIOp::create(b, loc, pair, idx(out.cols));
        j = arith::RemUIOp::create(b, loc, pair, idx(out.cols));
        keep = masked(gd.getMask(), i, j);
      }
      Value d0 = mul(part, span);
      Value xb = pointer(x, i, d0), yb = pointer(y, j, d0), gxb = pointer(gx, i, d0), gyb = pointer(gy, j, d0);
      Value sum = f32(0.0f);
      for (int64_t d = 0; d < span; ++d) {
        // Kept pairs only: a dropped pair's exponent may overflow.
        Value exponent = arith::SubFOp::create(b, loc, loadF32(gxb, 4 * d), loadF32(gyb, 4 * d));
        Value e = math::ExpOp::create(b, loc, select(keep, exponent, f32(0.0f)));
        sum = math::FmaOp::create(b, loc, arith::MulFOp::create(b, loc, loadF32(xb, 4 * d), loadF32(yb, 4 * d)), e, sum);
      }
      sum = xorSum(sum, parts);
      auto branch = scf::IfOp::create(b, loc, both(live, eq(part, 0)), /*withElseRegion=*/false);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(branch.thenBlock());
      LLVM::StoreOp::create(b, loc, select(keep, sum, f32(0.0f)), pointer(p, i, j));
    });
    beforeWrite(p);
    beforeRead({p});
    SmallVector<Value> values = readScratch(p, out);
    if (compact)
      for (size_t v = 0; v < values.size(); ++v) {
        // (The dropped pairs were not written.)
        auto [i, j] = coords(out, v);
        values[v] = select(masked(gd.getMask(), i, j), values[v], f32(0.0f));
      }
    result(gd, out).values = std::move(values);
    return success();
  }

  /// Prefix (or, reverse, suffix) sums down a Col tile: a warp scan per value slot, slots carried in order.
  LogicalResult lowerCumsum(TileCumsumOp cs) {
    const Tile source = tiles.at(cs.getSource());
    Shape s = source.shape;
    Tile &out = result(cs, s);
    if (s.kind() != Kind::Col) {
      // A single row: its own sum, or nothing before it.
      for (Value x : source.values)
        out.values.push_back(cs.getExclusive() ? f32(0.0f) : x);
      return success();
    }
    bool reverse = cs.getReverse();
    int64_t slots = source.values.size();
    SmallVector<Value> inclusive(slots);
    Value carry = f32(0.0f);
    for (int64_t k = 0; k < slots; ++k) {
      int64_t slot = reverse ? slots - 1 - k : k;
      Value e = add(lane, 32 * slot);
      Value x = select(lt(e, idx(s.rows)), source.values[slot], f32(0.0f));
      x = arith::AddFOp::create(b, loc, laneScan(x, lane, 1, 32, reverse), carry);
      inclusive[slot] = x;
      // The slot's total (its last lane in order) carries into the next.
      carry = gpu::ShuffleOp::create(b, loc, x, i32(reverse ? 0 : 31), i32(32), gpu::ShuffleMode::IDX)
                  .getShuffleResult();
    }
    if (!cs.getExclusive()) {
      out.values = inclusive;
      return success();
    }
    // Exclusive: the inclusive sum of the neighbour before (after, reverse) in order, exactly.
    for (int64_t slot = 0; slot < slots; ++slot) {
      Value y = gpu::ShuffleOp::create(b, loc, inclusive[slot], i32(1), i32(32),
                                       reverse ? gpu::ShuffleMode::DOWN : gpu::ShuffleMode::UP)
                    .getShuffleResult();
      int64_t neighbour = reverse ? slot + 1 : slot - 1;
      Value across = f32(0.0f);
      if (neighbour >= 0 && neighbour < slots)
        across = gpu::ShuffleOp::create(b, loc, inclusive[neighbour], i32(reverse ? 0 : 31), i32(32),
                                        gpu::ShuffleMode::IDX)
                     .getShuffleResult();
      Value edge = eq(lane, reverse ? 31 : 0);
      out.values.push_back(select(edge, across, y));
    }
    return success();
  }

  gpu::GPUFuncOp kernel;
  int64_t warps;
  int64_t prefetch;
  bool solveProducts, rightLooking, interleaveTerms;
  OpBuilder b;
  Location loc;
  TileShapes shapes;
  Value lane, warp, g, t, smem;
  /// The per-thread arrays of the running states (block-private buffers), by buffer.
  DenseMap<Value, Value> states;
  OpBuilder::InsertPoint entryPoint;
  DenseMap<Value, Tile> tiles;
  std::map<std::pair<int64_t, int64_t>, std::pair<Value, Value>> baseCache;
  /// Each tile's bf16 operand copy.
  DenseMap<const void *, Region> regions;
  /// The low parts' copies of split operands (copyOf's `split`).
  DenseMap<const void *, Region> lowRegions;
  /// Sums whose product accumulated onto the other operand (lowered as that product's result).
  DenseMap<Operation *, Value> accumulated;
  /// fp32 copies of tiles in shared memory (scratchOf).
  DenseMap<Value, Region> scratch;
  std::vector<Hazard> hazards;
  std::vector<Placement> placements;
  int64_t sharedBytes = 0, barriers = 0;
};

struct TileToFragmentsPass : linac::impl::LinacTileToFragmentsBase<TileToFragmentsPass> {
  using LinacTileToFragmentsBase::LinacTileToFragmentsBase;
  void runOnOperation() override {
    if (warps < 1 || warps > 32 || (warps & (warps - 1))) {
      getOperation().emitError("linac-tile-to-fragments: warps must be a power of two in [1, 32], not ") << int64_t(warps);
      return signalPassFailure();
    }
    if (substitution != "left" && substitution != "right") {
      getOperation().emitError("linac-tile-to-fragments: substitution must be left or right, not '")
          << substitution << "'";
      return signalPassFailure();
    }
    if (!llvm::is_contained({"none", "forward", "backward", "all"}, productSolves)) {
      getOperation().emitError("linac-tile-to-fragments: product-solves must be none, forward, backward or all, not '")
          << productSolves << "'";
      return signalPassFailure();
    }
    SmallVector<gpu::GPUFuncOp> kernels;
    getOperation().walk([&](gpu::GPUFuncOp kernel) {
      auto direction = kernel->getAttrOfType<StringAttr>("linac.direction");
      if (kernel->hasAttr("linac.static_dims") && direction &&
          (direction.getValue() == "forward" || all))
        kernels.push_back(kernel);
    });
    for (gpu::GPUFuncOp kernel : kernels) {
      // A kernel may name its own warps (linac-gpu-chunk's pair-block-size).
      int64_t warps = this->warps;
      if (auto own = kernel->getAttrOfType<IntegerAttr>("linac.fragment_warps")) {
        warps = own.getInt();
        if (warps < 1 || warps > 32 || (warps & (warps - 1))) {
          kernel.emitError("linac-tile-to-fragments: ") << kernel.getName()
              << "'s block size must be a power of two from 32 to 1024 threads here, not " << warps * 32;
          return signalPassFailure();
        }
      }
      // Every kernel that reaches here has a direction (forward or backward: pairs kernels are backward).
      StringRef direction = kernel->getAttrOfType<StringAttr>("linac.direction").getValue();
      bool solveProducts = productSolves == "all" || productSolves == direction;
      std::string why;
      {
        OpBuilder b(kernel.getContext());
        b.setInsertionPointToStart(&kernel.getBody().front());
        auto one = arith::ConstantIndexOp::create(b, kernel.getLoc(), 1);
        TileShapes shapes(one);
        why = unsupported(kernel, shapes, warps);
        if (one->use_empty())
          one->erase();
      }
      if (!why.empty()) {
        kernel->setAttr("linac.fragments_skipped", StringAttr::get(kernel.getContext(), why));
        continue;
      }
      // With prefetch, a kernel whose copies and staging do not fit is lowered again with as many staged words
      // as the shared memory left beside its copies holds, or none.
      auto lower = [&](int64_t words, std::string &tooLarge, int64_t *bytes) -> FailureOr<gpu::GPUFuncOp> {
        OpBuilder b(kernel);
        b.setInsertionPointAfter(kernel);
        auto copy = cast<gpu::GPUFuncOp>(b.clone(*kernel));
        simplifyTiles(copy, /*broadcasts=*/true);
        FragmentLowering lowering(copy, warps, words, solveProducts, substitution == "right", interleaveTerms);
        if (succeeded(lowering.run())) {
          if (bytes)
            *bytes = lowering.sharedBytesUsed();
          return copy;
        }
        copy.erase();
        tooLarge = lowering.tooLarge;
        if (tooLarge.empty())
          return failure();
        return gpu::GPUFuncOp();
      };
      std::string tooLarge;
      FailureOr<gpu::GPUFuncOp> lowered = lower(prefetch ? -1 : 0, tooLarge, nullptr);
      if (failed(lowered))
        return signalPassFailure();
      if (!*lowered && prefetch) {
        int64_t bytes = 0;
        lowered = lower(0, tooLarge, &bytes);
        if (failed(lowered))
          return signalPassFailure();
        // Two buffers of a word per thread (rows padded by 4 words), 16 bytes of alignment each.
        int64_t words = *lowered ? (staticSharedBytes(kernel) - bytes - 16) / (2 * (warps * 32 + 4) * 4) : 0;
        if (words > 0) {
          std::string ignored;
          FailureOr<gpu::GPUFuncOp> staged = lower(words, ignored, nullptr);
          if (failed(staged))
            return signalPassFailure();
          if (*staged) {
            lowered->erase();
            lowered = staged;
          }
        }
      }
      if (!*lowered) {
        kernel->setAttr("linac.fragments_skipped", StringAttr::get(kernel.getContext(), tooLarge));
        continue;
      }
      std::string name = kernel.getName().str();
      kernel.erase();
      lowered->setName(name);
    }
  }
};

} // namespace
