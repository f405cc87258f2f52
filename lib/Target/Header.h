#ifndef LINAC_TARGET_HEADER_H
#define LINAC_TARGET_HEADER_H

#include "dialect/LinacOps.h"

#include <string>

namespace linac {

/// Describes one recurrence's entry points before lowering erases it.
struct EntryPointInfo {
  std::string name;
  std::string sourceFile;
  bool matrixState;
  struct Input {
    std::string name;
    std::string kind; // one of the LINAC_* input kinds
    std::string shape;
    std::string activation; // one of kActivations (see inputActivation)
  };
  std::vector<Input> inputs;
};

EntryPointInfo describeEntryPoint(RecurrenceOp rec, llvm::StringRef sourceFile);

/// How a model should produce input `inputIndex` from its raw projection, one of kActivations: the
/// argument's `linac.activation` if it has one, else from its role in the update: a decay's gate is a log
/// decay (log-sigmoid, so it stays <= 0), the delta rule's beta a rate in (0, 1) (sigmoid) and its key a unit
/// vector (l2-normalized, so that I - beta k k^T stays a contraction); anything else is used as it comes.
std::string inputActivation(RecurrenceOp rec, unsigned inputIndex);

/// linac_abi.h: the types every generated header uses.
std::string emitAbiHeader();

/// A C header declaring the entry points of `entries` (linac_<name>_forward
/// and linac_<name>_forward_<variant> for each of `variants`, likewise
/// linac_<name>_backward for `backwardVariants`) and describing their inputs.
/// `io`: the element type of every entry point's per-token inputs, out and dout ("f32", "bf16" or "f16"),
/// declared as linac_<name>_io.
std::string emitCHeader(llvm::ArrayRef<EntryPointInfo> entries, llvm::ArrayRef<std::string> variants,
                        llvm::StringRef forward, llvm::ArrayRef<std::string> backwardVariants,
                        llvm::StringRef guardStem, llvm::StringRef io = "f32");

} // namespace linac

#endif
