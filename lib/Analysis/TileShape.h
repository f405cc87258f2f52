#ifndef LINAC_ANALYSIS_TILESHAPE_H
#define LINAC_ANALYSIS_TILESHAPE_H

// The (rows, cols) of a tile as index values, read off the ops that made it.
// Tiles are tensor<?x?xf32>; their sizes are launch-time values carried by
// the ops that create tiles (load, fill, broadcast, ...).

#include "dialect/LinacOps.h"

#include "llvm/ADT/DenseMap.h"

namespace linac {

struct TileShape {
  mlir::Value rows, cols;
};

class TileShapes {
public:
  /// `one` is an index constant 1 that dominates every tile.
  explicit TileShapes(mlir::Value one) : one(one) {}

  TileShape get(mlir::Value tile);
  void set(mlir::Value tile, TileShape shape) { cache[tile] = shape; }

private:
  mlir::Value one;
  llvm::DenseMap<mlir::Value, TileShape> cache;
};

} // namespace linac

#endif
