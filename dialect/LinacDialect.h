#ifndef LINAC_DIALECT_LINACDIALECT_H
#define LINAC_DIALECT_LINACDIALECT_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Dialect.h"

#include "dialect/LinacDialect.h.inc"

#endif
