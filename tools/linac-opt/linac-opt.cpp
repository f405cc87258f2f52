// linac-opt: the pass driver for lit tests and for inspecting each lowering step.

#include "lib/InitAll.h"
#include "lib/Target/CpuTarget.h"

#include "mlir/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  linac::registerDialects(registry);
  linac::registerPasses();
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::PassPipelineRegistration<>("linac-cpu-pipeline", "Lower linac recurrences to the LLVM dialect (CPU path)",
                                   [](mlir::OpPassManager &pm) { linac::buildCpuLoweringPipeline(pm); });
  return mlir::asMainReturnCode(mlir::MlirOptMain(argc, argv, "linac optimizer driver\n", registry));
}
