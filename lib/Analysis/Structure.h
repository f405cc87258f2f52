#ifndef LINAC_ANALYSIS_STRUCTURE_H
#define LINAC_ANALYSIS_STRUCTURE_H

// What every pass needs to know about a recurrence body: the chain of state
// updates, which dimension (key or value) each vector has, and which values
// depend on the state. Computing it also enforces the rules the derivations
// rely on, so the region verifier runs it and reports its diagnostics.

#include "mlir/IR/Operation.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>

namespace linac {

class RecurrenceOp;

/// The dimension a vector value spans. For a vector state every vector has
/// the state's dimension D, reported as Key.
enum class Dim { Key, Value };

/// How a gate varies, from what it depends on.
enum class Variation {
  Fixed,    ///< a constant
  PerHead,  ///< depends on the head index or per-head parameters only
  PerToken, ///< depends on a token input
};

struct RecurrenceStructure {
  /// states[0] is the state argument; states[i + 1] the result of updates[i].
  llvm::SmallVector<mlir::Value> states;
  llvm::SmallVector<mlir::Operation *> updates;
  /// linac.read ops grouped by the index in `states` of the state they read.
  llvm::SmallVector<llvm::SmallVector<mlir::Operation *>> readsOf;
  /// Dimension of every 1-D tensor value in the body.
  llvm::DenseMap<mlir::Value, Dim> dims;
  /// Values that depend on the state (through a read).
  llvm::DenseSet<mlir::Value> stateDependent;
  /// Values that depend on a per-token input (not only on constants, the head index or per-head parameters).
  llvm::DenseSet<mlir::Value> tokenDependent;

  /// Analyzes `op`. On a rule violation emits an error at the offending op and returns nullopt.
  static std::optional<RecurrenceStructure> analyze(RecurrenceOp op);

  Variation variation(mlir::Value v) const;
};

} // namespace linac

#endif
