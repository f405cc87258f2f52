#ifndef LINAC_DIALECT_LINACTYPES_H
#define LINAC_DIALECT_LINACTYPES_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Types.h"

#define GET_TYPEDEF_CLASSES
#include "dialect/LinacTypes.h.inc"

namespace linac {
/// Tiles of the tile-level IR: rank-2 f32 tensors of dynamic shape.
inline mlir::RankedTensorType getTileType(mlir::MLIRContext *ctx) {
  return mlir::RankedTensorType::get({mlir::ShapedType::kDynamic, mlir::ShapedType::kDynamic},
                                     mlir::Float32Type::get(ctx));
}
inline bool isTileType(mlir::Type t) { return t == getTileType(t.getContext()); }
} // namespace linac

#endif
