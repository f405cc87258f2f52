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
  mlir::PassPipelineRegistration<>(
      "linac-cpu-pipeline", "Lower linac recurrences to the LLVM dialect (sequential and chunk-64 variants)",
      [](mlir::OpPassManager &pm) {
        linac::CpuOptions options;
        options.chunkSizes = {64};
        linac::buildCpuLoweringPipeline(pm, options);
      });
  return mlir::asMainReturnCode(mlir::MlirOptMain(argc, argv, "linac optimizer driver\n", registry));
}
