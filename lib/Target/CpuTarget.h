#ifndef LINAC_TARGET_CPUTARGET_H
#define LINAC_TARGET_CPUTARGET_H

#include "mlir/IR/BuiltinOps.h"
#include "lib/Target/Header.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/LLVM.h"

#include <string>

namespace llvm {
class Module;
}

namespace linac {

struct CpuOptions {
  /// A chunked variant linac_<name>_forward_chunk<C> is generated for each size.
  std::vector<int64_t> chunkSizes;
  /// What linac_<name>_forward runs: "sequential" or "chunk<C>".
  std::string forward = "sequential";
  /// Also derive linac_<name>_backward_chunk<C> for each chunk size; linac_<name>_backward runs the first.
  bool backward = true;
  /// linac-tile-to-loops' factor-gates: the GPU's blocked per-key gated products (for testing them).
  bool factorGates = false;
  /// linac-tile-to-loops' schedule: tile ops ordered by level, as on the GPU.
  bool schedule = false;
  /// The element type of every entry point's per-token inputs, output and output cotangent: "f32", "bf16" or
  /// "f16" (the io-type of linac-lower-sequential, linac-chunk and linac-autodiff).
  std::string io = "f32";
  /// Input tables to export as data symbols (linac_<name>_table, linac_<name>_input_names), so a program
  /// that loads the object as a shared library needs no header.
  std::vector<EntryPointInfo> tables;
};

/// Adds the passes that take a module of linac.recurrence ops to the LLVM
/// dialect: every entry point variant, then the shared lowering to LLVM.
void buildCpuLoweringPipeline(mlir::OpPassManager &pm, const CpuOptions &options);

/// The host's lowering of scf, math, memref, arith, index, func and cf to the LLVM dialect (CPU kernels and
/// the GPU kernels' host copies, CudaEmulation); `expandBf16` turns bf16 conversions into integer arithmetic.
void addHostLLVMLowering(mlir::OpPassManager &pm, bool expandBf16);

/// Lowers `module` (linac dialect) to LLVM IR, optimizes it and returns a
/// relocatable object file for the host. Diagnostics go to the context.
mlir::FailureOr<std::string> emitCpuObject(mlir::ModuleOp module, const CpuOptions &options, std::string &llvmIR);

/// Translates `module` (LLVM dialect only) to LLVM IR, lets `extend` add to it, optimizes it (-O3, generic
/// x86-64) and returns a relocatable object file for the host; `llvmIR`, if given, gets the optimized IR.
mlir::FailureOr<std::string> emitHostObject(mlir::ModuleOp module, std::string *llvmIR,
                                            llvm::function_ref<void(llvm::Module &)> extend = nullptr);

} // namespace linac

#endif
