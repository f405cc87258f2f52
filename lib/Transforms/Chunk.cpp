// linac-chunk: the chunked-parallel forward of every recurrence, as tile IR.
// The derivation is in ChunkBuilder (docs/chunked-form.md); this pass wraps it
// in the forward C ABI: a loop over sequences, heads and chunks.

#include "dialect/Passes.h"
#include "lib/Transforms/ChunkBuilder.h"

namespace linac {
#define GEN_PASS_DEF_LINACCHUNK
#include "dialect/Passes.h.inc"
} // namespace linac

using namespace mlir;
using namespace linac;

namespace {

void emitChunkedForward(RecurrenceOp rec, const RecurrenceStructure &st, const ChunkForm &form, ModuleOp module,
                        int64_t chunkSize) {
  OpBuilder b(rec);
  LoopBuilder lb(b, rec.getLoc());
  EntryPoint e = buildEntryPoint(b, module, rec, st, entrySymbol(rec, "chunk" + std::to_string(chunkSize)));
  Value state, C, one;
  {
    OpBuilder::InsertionGuard guard(b);
    b.restoreInsertionPoint(e.hoistPoint);
    state = memref::AllocOp::create(b, rec.getLoc(), MemRefType::get({ShapedType::kDynamic}, b.getF32Type()),
                                    ValueRange{e.stateSize});
    C = lb.idx(chunkSize);
    one = lb.idx(1);
  }
  ChunkBuilder chunks(rec, st, form, b, e, C, one);
  e.function->setAttr("linac.transition", b.getStringAttr(chunks.transitionClass()));
  std::string read = form.point == ReadPoint::AfterUpdate ? "after_update" : "before_update";
  if (!ReadOp(form.read).getBonus().empty())
    read += "+bonus";
  e.function->setAttr("linac.read", b.getStringAttr(read));
  forEachSequenceAndHead(lb, e, state, [&](Value h, Value start, Value end) {
    chunks.emitForward(h, start, end, state, /*storeOutputs=*/true);
  });
  finishEntryPoint(lb, {state});
}

struct ChunkPass : linac::impl::LinacChunkBase<ChunkPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto recurrences = analyzeChunkable(module, "linac-chunk", chunkSize);
    if (failed(recurrences))
      return signalPassFailure();
    for (const ChunkableRecurrence &r : *recurrences)
      emitChunkedForward(r.op, r.structure, r.form, module, chunkSize);
  }
};

} // namespace
