// linac-chunk: the chunked-parallel forward of every recurrence, as tile IR.
// The derivation is in ChunkBuilder (docs/chunked-form.md); this pass wraps it
// in the forward C ABI: a loop over sequences, heads and chunks.

#include "dialect/Passes.h"
#include "lib/Transforms/ChunkBuilder.h"
#include "lib/Transforms/ChunkSplit.h"

namespace linac {
#define GEN_PASS_DEF_LINACCHUNK
#include "dialect/Passes.h.inc"
} // namespace linac

using namespace mlir;
using namespace linac;

namespace {

void emitChunkedForward(RecurrenceOp rec, const RecurrenceStructure &st, const ChunkForm &form, ModuleOp module,
                        int64_t chunkSize, Type io) {
  OpBuilder b(rec);
  LoopBuilder lb(b, rec.getLoc());
  EntryPoint e = buildEntryPoint(b, module, rec, st, entrySymbol(rec, "chunk" + std::to_string(chunkSize)),
                                 EntryKind::Forward, io);
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
  if (!form.matrix) {
    // A vector state's chain is the whole chunk (every output row reads the state): no split.
    forEachSequenceAndHead(lb, e, state, [&](Value h, Value start, Value end) {
      chunks.emitForward(h, start, end, state, /*storeOutputs=*/true);
    });
    finishEntryPoint(lb, {state});
    return;
  }
  // The chunk-parallel split, run as three loops per (sequence, head): what the state chain reads, for every
  // chunk; the chain; the outputs, for every chunk from its initial state. The GPU runs the same phases as
  // three kernels (linac-gpu-chunk).
  ChunkSplit split = chunks.splitForward(one);
  e.function->setAttr("linac.frontier", b.getStringAttr(split.frontierExpression()));
  auto bufferType = MemRefType::get({ShapedType::kDynamic}, b.getF32Type());
  forEachSequenceAndHead(lb, e, state, [&](Value h, Value start, Value end) {
    Value count = chunks.chunkCount(start, end), F = split.frontierSize(lb, e);
    Value frontier = memref::AllocOp::create(b, rec.getLoc(), bufferType, ValueRange{lb.mul(count, F)});
    Value boundaries = memref::AllocOp::create(b, rec.getLoc(), bufferType, ValueRange{lb.mul(count, e.stateSize)});
    chunks.emitSplitChain(split, h, start, end, state, frontier, F, boundaries);
    lb.forLoop(lb.idx(0), count, [&](Value c) {
      chunks.emitPhase(split, ChunkPhase::After, h, c, start, end, boundaries, lb.mul(c, e.stateSize), frontier,
                       lb.mul(c, F));
    });
    memref::DeallocOp::create(b, rec.getLoc(), frontier);
    memref::DeallocOp::create(b, rec.getLoc(), boundaries);
  });
  finishEntryPoint(lb, {state});
}

struct ChunkPass : linac::impl::LinacChunkBase<ChunkPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<Type> io = parseIoType(module, "linac-chunk", ioType);
    if (failed(io))
      return signalPassFailure();
    auto recurrences = analyzeChunkable(module, "linac-chunk", chunkSize);
    if (failed(recurrences))
      return signalPassFailure();
    for (const ChunkableRecurrence &r : *recurrences)
      emitChunkedForward(r.op, r.structure, r.form, module, chunkSize, *io);
  }
};

} // namespace
