#include "lib/Analysis/ChunkForm.h"

using namespace mlir;
using namespace linac;

std::optional<ChunkForm> ChunkForm::analyze(RecurrenceOp rec, const RecurrenceStructure &st) {
  ChunkForm form;
  form.matrix = rec.getStateType().isMatrix();

  Operation *write = nullptr;
  for (Operation *update : st.updates) {
    if (auto decay = dyn_cast<DecayOp>(update)) {
      form.gates.push_back(decay.getGate());
      if (write) {
        if (isa<DeltaOp>(write)) {
          InFlightDiagnostic diag = decay.emitOpError(
              "follows the delta rule; the chunked derivation needs every decay of a delta-rule token before "
              "linac.delta, where the transition is (I - beta k k^T) Diag(exp(g))");
          diag.attachNote(write->getLoc()) << "delta rule here";
          return std::nullopt;
        }
        form.postWriteGates.push_back(decay.getGate());
      }
      continue;
    }
    if (write) {
      InFlightDiagnostic diag = update->emitOpError(
          "is a second write of the same token; the chunked derivation handles one linac.write or linac.delta "
          "per token");
      diag.attachNote(write->getLoc()) << "first write here";
      return std::nullopt;
    }
    write = update;
  }
  if (!write) {
    rec.emitOpError("never writes to its state; the chunked derivation needs one linac.write or linac.delta");
    return std::nullopt;
  }
  if (auto w = dyn_cast<WriteOp>(write)) {
    form.key = w.getKey();
    form.value = w.getValue();
    form.writeScale = w.getScale();
  } else {
    auto d = cast<DeltaOp>(write);
    form.delta = true;
    form.key = d.getKey();
    form.value = d.getValue();
    form.beta = d.getBeta();
  }

  SmallVector<std::pair<ReadOp, size_t>> reads;
  for (auto [position, readsHere] : llvm::enumerate(st.readsOf))
    for (Operation *r : readsHere)
      reads.push_back({cast<ReadOp>(r), position});
  if (reads.size() != 1) {
    rec.emitOpError() << "has " << reads.size()
                      << " reads of its state; the chunked derivation handles exactly one";
    return std::nullopt;
  }
  auto [read, position] = reads.front();
  form.read = read;
  if (position == st.states.size() - 1)
    form.point = ReadPoint::AfterUpdate;
  else if (position == 0)
    form.point = ReadPoint::BeforeUpdate;
  else {
    read.emitOpError("reads a state between two updates of the same token; the chunked derivation handles a read "
                     "of the previous state S_{t-1} or of the new state S_t");
    return std::nullopt;
  }
  if (!form.matrix && form.point == ReadPoint::BeforeUpdate) {
    read.emitOpError("reads the previous state of a vector recurrence; the chunked scan derives reads of h_t only");
    return std::nullopt;
  }

  form.gateShape = GateShape::None;
  for (Value g : form.gates)
    form.gateShape = isa<RankedTensorType>(g.getType()) ? GateShape::PerKey
                     : form.gateShape == GateShape::PerKey ? GateShape::PerKey
                                                           : GateShape::Scalar;
  return form;
}

FailureOr<std::vector<ChunkableRecurrence>> linac::analyzeChunkable(ModuleOp module, StringRef pass,
                                                                    int64_t chunkSize) {
  if (chunkSize < 1)
    return module.emitError() << pass << ": chunk-size must be positive, got " << chunkSize;
  std::vector<ChunkableRecurrence> result;
  for (RecurrenceOp rec : module.getOps<RecurrenceOp>()) {
    std::optional<RecurrenceStructure> st = RecurrenceStructure::analyze(rec);
    if (!st)
      return failure();
    std::optional<ChunkForm> form = ChunkForm::analyze(rec, *st);
    if (!form)
      return failure();
    result.push_back({rec, std::move(*st), std::move(*form)});
  }
  return result;
}

std::string linac::transitionClass(const ChunkForm &form, const RecurrenceStructure &st) {
  std::string base;
  if (form.gateShape == GateShape::None) {
    base = "identity";
  } else {
    Variation v = Variation::Fixed;
    for (Value g : form.gates)
      v = std::max(v, st.variation(g));
    base = v == Variation::Fixed ? "fixed" : v == Variation::PerHead ? "head" : "token";
    base += form.gateShape == GateShape::Scalar ? "_scalar" : "_per_key";
  }
  return form.delta ? "delta_" + base : base;
}
