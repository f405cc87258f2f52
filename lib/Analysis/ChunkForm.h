#ifndef LINAC_ANALYSIS_CHUNKFORM_H
#define LINAC_ANALYSIS_CHUNKFORM_H

// The canonical form the chunked derivation works on, read off a verified
// recurrence body:
//
//   S_t = (I - beta_t k_t k_t^T)? Diag(exp(g_t)) S_{t-1} + k~_t w_t^T
//   o_t = f(scale * read(S_t or S_{t-1}, q_t) [+ bonus], token-local values)
//
// g_t is the sum of every decay gate of the token (scalar, per-key or none).
// Without the delta factor, decays after the write fold into the key
// (D2 (D1 S + k v^T) = D2 D1 S + (D2 k) v^T) and w_t = v_t; with it, the
// pseudo-values w come from the UT transform.

#include "lib/Analysis/Structure.h"

#include "dialect/LinacOps.h"

#include <vector>

namespace linac {

enum class GateShape { None, Scalar, PerKey };
enum class ReadPoint { AfterUpdate, BeforeUpdate };

struct ChunkForm {
  bool matrix = true;
  bool delta = false;
  GateShape gateShape = GateShape::None;
  /// Every decay gate of the token, in chain order.
  llvm::SmallVector<mlir::Value> gates;
  /// The decays applied after the write (diagonal transitions only).
  llvm::SmallVector<mlir::Value> postWriteGates;
  /// The write: key and value (vector states: the added vector as key), and
  /// the write's scale (linac.write) or beta (linac.delta), if any.
  mlir::Value key, value, writeScale, beta;
  ReadOp read;
  ReadPoint point = ReadPoint::AfterUpdate;

  /// Reduces `rec` to the canonical form, or emits why the derivation cannot handle it.
  static std::optional<ChunkForm> analyze(RecurrenceOp rec, const RecurrenceStructure &st);
};

/// The transition's class, named by what the chunked derivation does with it: "identity", or
/// "fixed"/"head"/"token" (how the decay varies) + "_scalar"/"_per_key" (its shape), with "delta_" in front
/// for the delta rule (e.g. "delta_token_scalar" for Gated DeltaNet).
std::string transitionClass(const ChunkForm &form, const RecurrenceStructure &st);

/// The structure and canonical form of every recurrence in `module`, for the
/// passes built on the chunked derivation; emits the reason and returns
/// failure when one cannot be chunked, or when `chunkSize` is not positive.
struct ChunkableRecurrence {
  RecurrenceOp op;
  RecurrenceStructure structure;
  ChunkForm form;
};
mlir::FailureOr<std::vector<ChunkableRecurrence>> analyzeChunkable(mlir::ModuleOp module, llvm::StringRef pass,
                                                                   int64_t chunkSize);

} // namespace linac

#endif
