#ifndef LINAC_DIALECT_LINACOPS_H
#define LINAC_DIALECT_LINACOPS_H

#include "dialect/LinacDialect.h"
#include "dialect/LinacTypes.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialect/LinacEnums.h.inc"

#define GET_OP_CLASSES
#include "dialect/LinacOps.h.inc"

namespace linac {
/// The activations a recurrence input may carry (`linac.activation`, or derived from its role), in the order
/// of `enum linac_activation` in linac_abi.h: the one list the verifier, the ABI header and the input tables
/// (whose entries are indices into it) read.
inline constexpr llvm::StringLiteral kActivations[] = {"none", "log_sigmoid", "sigmoid", "l2_normalize"};
/// The C enumerator of activation `name`: LINAC_ACT_<NAME>.
inline std::string activationEnumerator(llvm::StringRef name) { return "LINAC_ACT_" + name.upper(); }
} // namespace linac

#endif
