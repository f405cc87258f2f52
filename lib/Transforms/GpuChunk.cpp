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

  EntryArguments args;
  for (unsigned i = 0; i < numInputs; ++i)
    args.inputs.push_back(arg(i));
  args.out = arg(numInputs);
  args.h0 = arg(numInputs + 1);
  args.ht = arg(numInputs + 2);
  args.cuSeqlens = arg(numInputs + 3);
  unsigned sizes = numInputs + 6;
  args.N = arg(sizes);
  args.T = arg(sizes + 1);
  args.H = arg(sizes + 2);
  args.K = arg(sizes + 3);
  args.V = arg(sizes + 4);
  args.scale = arg(sizes + 5);
  EntryPoint e = bindEntryArguments(b, loc, rec, st, args);

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
  chunks.emitForward(h, start, end, state, /*storeOutputs=*/true);
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
