#ifndef LINAC_PASSES_TD
#define LINAC_PASSES_TD

include "mlir/Pass/PassBase.td"

def LinacLowerSequential : Pass<"linac-lower-sequential", "::mlir::ModuleOp"> {
  let summary = "Lower each linac.recurrence to its sequential loop over time";
  let description = [{
    Replaces every `linac.recurrence @name` by `func.func @linac_<name>_forward`
    with the C ABI of the CPU reference path:

    ```c
    void linac_<name>_forward(const float *const *inputs, float *out,
                              const float *h0, float *ht, const int32_t *cu_seqlens,
                              int64_t N, int64_t T, int64_t H, int64_t K, int64_t V,
                              float scale);
    ```

    Token tensors are row-major `[B, T, H, D]`, states `[N, H, K, V]`. Without
    `cu_seqlens`, `N = B` sequences of `T` tokens; with it, `T` is the total
    token count and sequence `n` is tokens `[cu[n], cu[n+1])`. `h0`, `ht` and
    `cu_seqlens` may be null; `scale <= 0` means `K^-1/2`.

    The body loops over sequences and heads, then over time. The state lives in
    one buffer updated in place, so reads of a state are scheduled before the
    update that consumes it. Vector-valued gate math is scalarised into loops
    over the key or value dimension; the result is plain scf/arith/math/memref.
  }];
  let dependentDialects = ["::mlir::func::FuncDialect", "::mlir::scf::SCFDialect",
                           "::mlir::arith::ArithDialect", "::mlir::math::MathDialect",
                           "::mlir::memref::MemRefDialect", "::mlir::LLVM::LLVMDialect"];
}

#endif
