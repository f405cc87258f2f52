#ifndef LINAC_DIALECT_LINACOPS_H
#define LINAC_DIALECT_LINACOPS_H

#include "dialect/LinacDialect.h"
#include "dialect/LinacTypes.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialect/LinacEnums.h.inc"

#define GET_OP_CLASSES
#include "dialect/LinacOps.h.inc"

#endif
