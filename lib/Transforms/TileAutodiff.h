#ifndef LINAC_TRANSFORMS_TILEAUTODIFF_H
#define LINAC_TRANSFORMS_TILEAUTODIFF_H

// Reverse-mode differentiation of straight-line tile IR. Given the ops of one
// chunk (as ChunkBuilder emits them) and cotangents for some of their tiles,
// emits the adjoint ops in reverse order and accumulates a gradient for every
// tile that feeds a seeded one. Each tile op has its own adjoint rule (see
// docs/autodiff.md); exponents in the adjoints of the gated ops stay <= 0.

#include "lib/Analysis/TileShape.h"

#include "mlir/IR/Builders.h"

#include "llvm/ADT/DenseSet.h"

namespace linac {

class TileAutodiff {
public:
  TileAutodiff(mlir::OpBuilder &b, mlir::Location loc, TileShapes &shapes) : b(b), loc(loc), shapes(shapes) {}

  /// Adds `cotangent` to the gradient of `tile`.
  void accumulate(mlir::Value tile, mlir::Value cotangent);

  /// Differentiates `ops` (program order; non-tile ops are skipped) with respect to the tiles in `sources`.
  /// Only tiles that depend on a source get a gradient (activity analysis): the rest, such as a fixed decay
  /// made of constants, cost nothing. Fails with a diagnostic on an op with no rule.
  mlir::LogicalResult run(llvm::ArrayRef<mlir::Operation *> ops, llvm::ArrayRef<mlir::Value> sources);

  /// The accumulated gradient of `tile`, or null if nothing it feeds was seeded.
  mlir::Value gradient(mlir::Value tile) const { return grads.lookup(tile); }

private:
  template <typename OpT, typename... Args> mlir::Value make(Args &&...args) {
    return OpT::create(b, loc, getTileType(b.getContext()), std::forward<Args>(args)...);
  }
  mlir::Value constantLike(double value, mlir::Value like);
  mlir::Value matmul(mlir::Value x, mlir::Value y, bool transposeLhs, bool transposeRhs);
  mlir::LogicalResult adjoint(mlir::Operation *op, mlir::Value g);
  /// When gx and gy are prefix sums of one gate tile g (gy inclusive, gx inclusive or exclusive), returns g
  /// and the shift of gx: the gates' gradient then comes from gate_grad instead of through the prefix sums.
  std::optional<std::pair<mlir::Value, int64_t>> sharedPrefixGates(mlir::Value gx, mlir::Value gy);
  mlir::Value gateGrad(mlir::Value pairs, mlir::Value x, mlir::Value y, mlir::Value gx, mlir::Value gy,
                       int64_t shift);
  mlir::LogicalResult elementwiseAdjoint(mlir::Operation *op, mlir::Value g);

  mlir::OpBuilder &b;
  mlir::Location loc;
  TileShapes &shapes;
  llvm::DenseMap<mlir::Value, mlir::Value> grads;
  /// Tiles that depend on a source; empty until run() computes it.
  llvm::DenseSet<mlir::Value> active;
};

} // namespace linac

#endif
