#include "lib/InitAll.h"
#include "dialect/Passes.h"

#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"

void linac::registerDialects(mlir::DialectRegistry &registry) {
  registry.insert<LinacDialect, mlir::arith::ArithDialect, mlir::math::MathDialect, mlir::tensor::TensorDialect,
                  mlir::func::FuncDialect, mlir::scf::SCFDialect, mlir::memref::MemRefDialect,
                  mlir::cf::ControlFlowDialect, mlir::LLVM::LLVMDialect>();
}

void linac::registerPasses() { registerLinacPasses(); }
