#ifndef LINAC_DIALECT_PASSES_H
#define LINAC_DIALECT_PASSES_H

#include "dialect/LinacOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Pass/Pass.h"

namespace linac {

#define GEN_PASS_DECL
#include "dialect/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "dialect/Passes.h.inc"

} // namespace linac

#endif
