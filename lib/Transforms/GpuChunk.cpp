// linac-gpu-chunk: the chunked forward as a GPU kernel, from the same
// ChunkBuilder derivation as the CPU. One thread block runs one (sequence,
// head): the chunks of a sequence depend on each other only through the
// state, so blocks are independent. Tiles stay tile IR here;
// linac-tile-to-gpu places them in per-block scratch and spreads their loops
// over the block's threads.

#include "dialect/Passes.h"
#include "lib/Transforms/ChunkBuilder.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"

namespace linac {
#define GEN_PASS_DEF_LINACGPUCHUNK
#include "dialect/Passes.h.inc"
} // namespace linac

using namespace mlir;
using namespace linac;

namespace {

void emitKernel(RecurrenceOp rec, const RecurrenceStructure &st, const ChunkForm &form, gpu::GPUModuleOp gpuModule,
                int64_t chunkSize) {
  MLIRContext *ctx = rec.getContext();
  Location loc = rec.getLoc();
  OpBuilder b(ctx);
  Type ptrTy = LLVM::LLVMPointerType::get(ctx);
  Type i64 = b.getI64Type();
  Type f32Ty = b.getF32Type();
  unsigned numInputs = rec.getInputArguments().size();
  // (inputs..., out, h0, ht, cu_seqlens, state scratch, tile scratch, N, T, H, K, V, scale)
  SmallVector<Type> argTypes(numInputs + 6, ptrTy);
  argTypes.append(5, i64);
  argTypes.push_back(f32Ty);
  b.setInsertionPointToEnd(gpuModule.getBody());
  std::string name = ("linac_" + rec.getSymName() + "_forward_chunk" + std::to_string(chunkSize)).str();
  auto kernel = gpu::GPUFuncOp::create(b, loc, name, b.getFunctionType(argTypes, {}));
  kernel->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
  kernel->setAttr("linac.recurrence", b.getStringAttr(rec.getSymName()));
  kernel->setAttr("linac.chunk_size", b.getI64IntegerAttr(chunkSize));
  kernel->setAttr("linac.tile_scratch_arg", b.getI64IntegerAttr(numInputs + 5));
  Block &entry = kernel.getBody().front();
  b.setInsertionPointToStart(&entry);
  LoopBuilder lb(b, loc);
  auto arg = [&](unsigned i) { return entry.getArgument(i); };
  auto toIndex = [&](Value v) { return arith::IndexCastOp::create(b, loc, b.getIndexType(), v).getResult(); };

  EntryPoint e;
  unsigned sizes = numInputs + 6;
  e.N = toIndex(arg(sizes));
  e.T = toIndex(arg(sizes + 1));
  e.H = toIndex(arg(sizes + 2));
  e.K = toIndex(arg(sizes + 3));
  e.V = form.matrix ? toIndex(arg(sizes + 4)) : e.K;
  e.stateSize = form.matrix ? lb.mul(e.K, e.V) : e.K;
  Value kf = arith::SIToFPOp::create(b, loc, f32Ty, arg(sizes + 3));
  Value defaultScale = arith::DivFOp::create(b, loc, lb.f32(1.0f), math::SqrtOp::create(b, loc, kf));
  Value useArg = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, arg(sizes + 5), lb.f32(0.0f));
  e.scale = lb.select(useArg, arg(sizes + 5), defaultScale);
  Value cuPtr = arg(numInputs + 3);
  e.hasCuSeqlens = nonNull(b, loc, cuPtr);
  Value tokens = lb.select(e.hasCuSeqlens, e.T, lb.mul(e.N, e.T));
  Value rows = lb.mul(tokens, e.H);
  for (auto [i, input] : llvm::enumerate(rec.getInputArguments())) {
    Value perRow = !isa<RankedTensorType>(input.getType()) ? lb.idx(1)
                   : st.dims.lookup(input) == Dim::Key     ? e.K
                                                           : e.V;
    Value count = rec.isPerHead(i) ? lb.mul(e.H, perRow) : lb.mul(rows, perRow);
    e.inputs.push_back(wrapPointer(b, loc, arg(i), count, f32Ty));
  }
  Value statesSize = lb.mul(lb.mul(e.N, e.H), e.stateSize);
  e.out = wrapPointer(b, loc, arg(numInputs), lb.mul(rows, e.V), f32Ty);
  e.hasH0 = nonNull(b, loc, arg(numInputs + 1));
  e.h0 = wrapPointer(b, loc, arg(numInputs + 1), statesSize, f32Ty);
  e.hasHt = nonNull(b, loc, arg(numInputs + 2));
  e.ht = wrapPointer(b, loc, arg(numInputs + 2), statesSize, f32Ty);
  e.cuSeqlens = wrapPointer(b, loc, cuPtr, lb.add(e.N, lb.idx(1)), b.getI32Type());

  // This block's (sequence, head) and its state in the state scratch.
  Value h = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  Value n = gpu::BlockIdOp::create(b, loc, gpu::Dimension::y);
  Value base = stateOffset(lb, e, n, h);
  Value stateBase = LLVM::GEPOp::create(b, loc, ptrTy, f32Ty, arg(numInputs + 4),
                                        ValueRange{arith::IndexCastOp::create(b, loc, i64, base)});
  Value state = wrapPointer(b, loc, stateBase, e.stateSize, f32Ty);
  auto [start, end] = sequenceBounds(lb, e, n);

  Value C = lb.idx(chunkSize), one = lb.idx(1);
  ChunkBuilder chunks(rec, st, form, b, e, C, one);
  Value stateRows = form.matrix ? e.K : one, stateCols = form.matrix ? e.V : e.K;
  Type tileTy = getTileType(ctx);
  lb.ifThenElse(
      e.hasH0,
      [&] {
        chunks.storeState(TileLoadOp::create(b, loc, tileTy, e.h0, base, stateCols, stateRows, stateCols, stateRows),
                          state);
      },
      [&] { chunks.storeState(TileFillOp::create(b, loc, tileTy, lb.f32(0.0f), stateRows, stateCols), state); });
  Value count = lb.ceilDiv(lb.sub(end, start), C);
  lb.forLoop(lb.idx(0), count, [&](Value c) {
    Value t0 = lb.add(start, lb.mul(c, C));
    Value valid = lb.minIndex(C, lb.sub(end, t0));
    ChunkBuilder::Chunk chunk = chunks.emit(h, t0, valid, state);
    chunks.storeState(chunk.finalState, state);
    TileStoreOp::create(b, loc, chunk.output, e.out, tokenOffset(lb, e, t0, h, e.V), lb.mul(e.H, e.V), valid);
  });
  lb.ifThenElse(e.hasHt, [&] {
    Value final = TileLoadOp::create(b, loc, tileTy, state, lb.idx(0), stateCols, stateRows, stateCols, stateRows);
    TileStoreOp::create(b, loc, final, e.ht, base, stateCols, stateRows);
  });
  gpu::ReturnOp::create(b, loc);
}

struct GpuChunkPass : linac::impl::LinacGpuChunkBase<GpuChunkPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto recurrences = analyzeChunkable(module, "linac-gpu-chunk", chunkSize);
    if (failed(recurrences))
      return signalPassFailure();
    module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(), UnitAttr::get(&getContext()));
    auto gpuModule = module.lookupSymbol<gpu::GPUModuleOp>("linac_kernels");
    if (!gpuModule) {
      OpBuilder b(module.getBodyRegion());
      b.setInsertionPointToEnd(module.getBody());
      gpuModule = gpu::GPUModuleOp::create(b, module.getLoc(), "linac_kernels");
    }
    for (const ChunkableRecurrence &r : *recurrences)
      emitKernel(r.op, r.structure, r.form, gpuModule, chunkSize);
  }
};

} // namespace
