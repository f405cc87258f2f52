#include "lib/Analysis/TileShape.h"

using namespace mlir;
using namespace linac;

TileShape TileShapes::get(Value tile) {
  if (auto it = cache.find(tile); it != cache.end())
    return it->second;
  Operation *op = tile.getDefiningOp();
  assert(op && "tiles are op results");
  TileShape shape;
  if (auto load = dyn_cast<TileLoadOp>(op))
    shape = {load.getRows(), load.getCols()};
  else if (auto fill = dyn_cast<TileFillOp>(op))
    shape = {fill.getRows(), fill.getCols()};
  else if (auto bcast = dyn_cast<TileBroadcastOp>(op))
    shape = {bcast.getRows(), bcast.getCols()};
  else if (auto reduce = dyn_cast<TileReduceOp>(op))
    shape = {reduce.getRows(), reduce.getCols()};
  else if (auto scatter = dyn_cast<TileScatterRowOp>(op))
    shape = {scatter.getRows(), get(scatter.getSource()).cols};
  else if (auto transpose = dyn_cast<TileTransposeOp>(op))
    shape = {get(transpose.getSource()).cols, get(transpose.getSource()).rows};
  else if (auto row = dyn_cast<TileRowOp>(op))
    shape = {one, get(row.getSource()).cols};
  else if (auto rowSum = dyn_cast<TileRowSumOp>(op))
    shape = {get(rowSum.getSource()).rows, one};
  else if (auto matmul = dyn_cast<TileMatmulOp>(op)) {
    TileShape l = get(matmul.getLhs()), r = get(matmul.getRhs());
    shape = {matmul.getTransposeLhs() ? l.cols : l.rows, matmul.getTransposeRhs() ? r.rows : r.cols};
  } else if (auto dot = dyn_cast<TileGatedDotOp>(op))
    shape = {get(dot.getX()).rows, get(dot.getY()).rows};
  else if (auto gm = dyn_cast<TileGatedMatmulOp>(op)) {
    TileShape p = get(gm.getPairs());
    shape = {gm.getTransposeAttr() ? p.cols : p.rows, get(gm.getY()).cols};
  } else if (auto gg = dyn_cast<TileGateGradOp>(op)) {
    shape = {get(gg.getX()).rows, get(gg.getGx()).cols};
  } else if (auto solve = dyn_cast<TileTriSolveOp>(op))
    shape = get(solve.getRhs());
  else
    // Shape-preserving ops: cumsum, mask_rows, tril, gated_scan and elementwise arith/math.
    shape = get(op->getOperand(0));
  cache[tile] = shape;
  return shape;
}
