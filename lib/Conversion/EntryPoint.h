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

/// Which C ABI a generated function has (linac_abi.h).
enum class EntryKind { Forward, Backward };

struct EntryPoint {
  EntryKind kind = EntryKind::Forward;
  mlir::func::FuncOp function;
  /// Launch sizes as index values; for a vector state V == K. `tokens`: of the whole batch (T with cu_seqlens,
  /// else N T).
  mlir::Value N, T, H, K, V, stateSize, tokens;
  /// The value columns [v0, v0 + Vb) this code computes. The transition of a recurrence acts on the key
  /// dimension only, so the value columns of the state and output are independent: a GPU block may take a
  /// slice of them. The whole width (v0 = 0, Vb = V) unless a lowering narrows it.
  mlir::Value v0, Vb;
  /// The read scale, K^-1/2 when the caller passes scale <= 0.
  mlir::Value scale;
  /// One flat memref<?xf32> per recurrence input, in declaration order.
  llvm::SmallVector<mlir::Value> inputs;
  mlir::Value out, h0, ht, cuSeqlens;
  mlir::Value hasH0, hasHt, hasCuSeqlens;
  /// Backward only: cotangents of the output and final state, gradients of the inputs and initial state.
  mlir::Value dout, dht, dh0, hasDht, hasDh0;
  llvm::SmallVector<mlir::Value> dinputs;
  /// Inserting here puts an op in the entry block, before every loop.
  mlir::OpBuilder::InsertPoint hoistPoint;
};

/// The raw values of an entry point's ABI: pointers (null Values for those the ABI lacks; the pointed-to
/// buffers may still be NULL at run time), sizes as i64, the scale as f32.
struct EntryArguments {
  llvm::SmallVector<mlir::Value> inputs, dinputs;
  mlir::Value out, h0, ht, dout, dht, dh0, cuSeqlens;
  mlir::Value N, T, H, K, V, scale;

  /// Takes N, T, H, K, V and scale from the six block arguments starting at `first`: every ABI ends with them.
  void setSizes(mlir::Block &entry, unsigned first) {
    N = entry.getArgument(first);
    T = entry.getArgument(first + 1);
    H = entry.getArgument(first + 2);
    K = entry.getArgument(first + 3);
    V = entry.getArgument(first + 4);
    scale = entry.getArgument(first + 5);
  }
};

/// Wraps the ABI values as memrefs and index sizes, at the builder's insertion point. Leaves
/// `function`, `kind` and `hoistPoint` of the result unset. `ioType` (f32 if null) is the element type of the
/// per-token inputs, the output and its cotangent; states, per-head inputs and input gradients are f32.
EntryPoint bindEntryArguments(mlir::OpBuilder &b, mlir::Location loc, RecurrenceOp rec,
                              const RecurrenceStructure &st, const EntryArguments &args,
                              mlir::Type ioType = nullptr);

/// A memref<?xelementType> over a raw pointer of the C ABI (the cast folds away in the LLVM lowering).
mlir::Value wrapPointer(mlir::OpBuilder &b, mlir::Location loc, mlir::Value ptr, mlir::Value numElements,
                        mlir::Type elementType);
/// ptr != NULL, as i1.
mlir::Value nonNull(mlir::OpBuilder &b, mlir::Location loc, mlir::Value ptr);

/// Creates `func.func @symbol` with the forward or backward C ABI at the end
/// of `module`, and leaves the builder in its entry block.
/// `ioType` (f32 if null) is the element type of the per-token inputs, `out` and `dout` (bindEntryArguments).
EntryPoint buildEntryPoint(mlir::OpBuilder &b, mlir::ModuleOp module, RecurrenceOp rec,
                           const RecurrenceStructure &st, llvm::StringRef symbol,
                           EntryKind kind = EntryKind::Forward, mlir::Type ioType = nullptr);

/// The element type an `io-type` option names ("f32", "bf16" or "f16"), or null for another word.
mlir::Type ioElementType(mlir::MLIRContext *ctx, llvm::StringRef io);
/// ioElementType for a pass's `io-type` option: emits `<pass>: io-type must be f32, bf16 or f16, not '<io>'` on
/// `module` and fails for another word.
mlir::FailureOr<mlir::Type> parseIoType(mlir::ModuleOp module, llvm::StringRef pass, llvm::StringRef io);

/// Tokens [start, end) of sequence n: from cu_seqlens when given, else [n T, (n + 1) T).
std::pair<mlir::Value, mlir::Value> sequenceBounds(LoopBuilder &lb, const EntryPoint &entry, mlir::Value n);

/// Loops over sequences and heads: body(n, head, start, end) for tokens [start, end).
void forEachSequence(LoopBuilder &lb, const EntryPoint &entry,
                     llvm::function_ref<void(mlir::Value n, mlir::Value head, mlir::Value start, mlir::Value end)> body);

/// Offset of the state of sequence n, head h in an [N, H, state] buffer.
inline mlir::Value stateOffset(LoopBuilder &lb, const EntryPoint &e, mlir::Value n, mlir::Value head) {
  return lb.mul(lb.add(lb.mul(n, e.H), head), e.stateSize);
}

/// dst[dstOffset + i] = src[srcOffset + i] for i < count.
inline void copyBuffer(LoopBuilder &lb, mlir::Value src, mlir::Value srcOffset, mlir::Value dst, mlir::Value dstOffset,
                       mlir::Value count) {
  lb.forLoop(lb.idx(0), count, [&](mlir::Value i) {
    lb.store(lb.load(src, lb.add(srcOffset, i)), dst, lb.add(dstOffset, i));
  });
}

/// buffer[i] = 0 for i < count.
inline void zeroBuffer(LoopBuilder &lb, mlir::Value buffer, mlir::Value count) {
  lb.forLoop(lb.idx(0), count, [&](mlir::Value i) { lb.store(lb.f32(0.0f), buffer, i); });
}

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
