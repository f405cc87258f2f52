#ifndef LINAC_CONVERSION_ENTRYPOINT_H
#define LINAC_CONVERSION_ENTRYPOINT_H

// The C ABI every lowering of a recurrence shares (see linac_abi.h), and the
// loop over sequences and heads that owns the state buffer.

#include "dialect/LinacOps.h"
#include "lib/Analysis/Structure.h"
#include "lib/Conversion/LoopBuilder.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace linac {

/// linac_<name>_forward_<variant>: the symbol of one lowering of `rec`.
inline std::string entrySymbol(RecurrenceOp rec, llvm::StringRef variant) {
  return ("linac_" + rec.getSymName() + "_forward_" + variant).str();
}

struct EntryPoint {
  mlir::func::FuncOp function;
  /// Launch sizes as index values; for a vector state V == K.
  mlir::Value N, T, H, K, V, stateSize;
  /// The read scale, K^-1/2 when the caller passes scale <= 0.
  mlir::Value scale;
  /// One flat memref<?xf32> per recurrence input, in declaration order.
  llvm::SmallVector<mlir::Value> inputs;
  mlir::Value out, h0, ht, cuSeqlens;
  mlir::Value hasH0, hasHt, hasCuSeqlens;
  /// Inserting here puts an op in the entry block, before every loop.
  mlir::OpBuilder::InsertPoint hoistPoint;
};

/// Creates `func.func @symbol` with the forward C ABI at the end of `module`,
/// and leaves the builder in its entry block.
EntryPoint buildEntryPoint(mlir::OpBuilder &b, mlir::ModuleOp module, RecurrenceOp rec,
                           const RecurrenceStructure &st, llvm::StringRef symbol);

/// Loops over sequences and heads. `state` (memref<?xf32> of stateSize) holds
/// h0[n, h] (or zeros) when `body(head, start, end)` runs for tokens
/// [start, end), and is copied to ht[n, h] afterwards.
void forEachSequenceAndHead(LoopBuilder &lb, const EntryPoint &entry, mlir::Value state,
                            llvm::function_ref<void(mlir::Value head, mlir::Value start, mlir::Value end)> body);

/// Finishes the function: frees `buffers` and returns.
void finishEntryPoint(LoopBuilder &lb, llvm::ArrayRef<mlir::Value> buffers);

/// Offset and stride of token `token`, head `head` in an input whose rows are `width` wide.
inline mlir::Value tokenOffset(LoopBuilder &lb, const EntryPoint &e, mlir::Value token, mlir::Value head,
                               mlir::Value width) {
  return lb.mul(lb.add(lb.mul(token, e.H), head), width);
}

} // namespace linac

#endif
