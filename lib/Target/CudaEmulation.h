#ifndef LINAC_TARGET_CUDAEMULATION_H
#define LINAC_TARGET_CUDAEMULATION_H

#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace linac {

/// The GPU kernels of `module` (gpu.func ops as linac-tile-to-gpu leaves them, before the NVVM lowering)
/// compiled for the host, as a relocatable object that the CUDA driver emulator (runtime/cuda-emu) runs: each
/// kernel becomes a function that runs one GPU thread, its thread and block indices, barriers, warp shuffles,
/// tensor-core products and dynamic shared memory calls into the emulator (docs/emulation.md), and a static
/// constructor registers it by the kernel's name, which the launchers' cuModuleGetFunction asks for.
/// Consumes `module` (pass a clone). Diagnostics name any GPU operation the emulator cannot run.
mlir::FailureOr<std::string> emitCudaEmulation(mlir::ModuleOp module);

} // namespace linac

#endif
