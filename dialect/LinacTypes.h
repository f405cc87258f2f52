#ifndef LINAC_DIALECT_LINACTYPES_H
#define LINAC_DIALECT_LINACTYPES_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Types.h"

#define GET_TYPEDEF_CLASSES
#include "dialect/LinacTypes.h.inc"

#endif
