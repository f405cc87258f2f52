#ifndef LINAC_TARGET_CPUTARGET_H
#define LINAC_TARGET_CPUTARGET_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/LLVM.h"

#include <string>

namespace linac {

/// Adds the passes that take a module of linac.recurrence ops to the LLVM dialect.
void buildCpuLoweringPipeline(mlir::OpPassManager &pm);

/// Lowers `module` (linac dialect) to LLVM IR, optimizes it and returns a
/// relocatable object file for the host. Diagnostics go to the context.
mlir::FailureOr<std::string> emitCpuObject(mlir::ModuleOp module, std::string &llvmIR);

} // namespace linac

#endif
