#include "lib/InitAll.h"
#include "dialect/Passes.h"

#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

void linac::registerDialects(mlir::DialectRegistry &registry) {
  registry.insert<LinacDialect, mlir::arith::ArithDialect, mlir::math::MathDialect, mlir::tensor::TensorDialect,
                  mlir::func::FuncDialect, mlir::scf::SCFDialect, mlir::memref::MemRefDialect,
                  mlir::cf::ControlFlowDialect, mlir::LLVM::LLVMDialect, mlir::gpu::GPUDialect,
                  mlir::NVVM::NVVMDialect>();
}

void linac::registerPasses() { registerLinacPasses(); }
