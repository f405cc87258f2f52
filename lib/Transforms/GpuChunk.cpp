// linac-gpu-chunk: the chunked forward and the derived backward as GPU
// kernels, from the same ChunkBuilder derivation (and, for the backward, the
// same emitSequenceBackward) as the CPU. One thread block runs one (sequence,
// head): the chunks of a sequence depend on each other only through the
// state, so blocks are independent. Tiles stay tile IR here;
// linac-tile-to-gpu places them in per-block scratch and spreads their loops
// over the block's threads.

#include "dialect/Passes.h"
#include "lib/Transforms/ChunkBackward.h"
#include "lib/Analysis/TileShape.h"
#include "lib/Conversion/TileLowering.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"

namespace linac {
#define GEN_PASS_DEF_LINACGPUCHUNK
#include "dialect/Passes.h.inc"
} // namespace linac

using namespace mlir;
using namespace linac;

namespace {

/// Marks, between emitBackwardKernel and emitStaticCopy, the stores of per-token input gradients (the value:
/// the input's index).
constexpr llvm::StringLiteral kTokenGradient = "linac.token_gradient";

/// "tK,tV,t1,hK,...": per-token or per-head, and K, V or scalar width, of each input (the launcher sizes the
/// gradient buffers it zeroes from this).
std::string inputLayout(RecurrenceOp rec, const RecurrenceStructure &st) {
  std::string layout;
  for (auto [i, input] : llvm::enumerate(rec.getInputArguments())) {
    if (i)
      layout += ',';
    layout += rec.isPerHead(i) ? 'h' : 't';
    layout += !isa<RankedTensorType>(input.getType()) ? '1' : st.dims.lookup(input) == Dim::Key ? 'K' : 'V';
  }
  return layout;
}

/// A kernel of the recurrence with the launcher's argument list:
///   forward:  (inputs..., out, h0, ht, cu_seqlens, state scratch, tile scratch, N, T, H, K, V, scale)
///   backward: (inputs..., dinputs..., h0, dout, dht, dh0, cu_seqlens, boundary scratch, state scratch,
///              tile scratch, N, T, H, K, V, scale)
/// Leaves the builder in its entry block and returns the bound ABI and the scratch pointers.
struct Kernel {
  gpu::GPUFuncOp function;
  EntryPoint entry;
  llvm::SmallVector<Value> scratch;
  /// The block's head (block x) and sequence (block y).
  std::pair<Value, Value> headAndSequence;
};

/// Which kernel createKernel makes: direction, phase of the split ("" for the whole chunked pass), scratch
/// pointers before the tile scratch, and whether blocks take value-column slices (grid z).
struct KernelKind {
  EntryKind kind;
  llvm::StringRef phase;
  unsigned numScratch;
  bool sliced;
  /// Blocks per multiprocessor to leave room for (registers and shared memory); 1: the whole machine's.
  int64_t blocksPerSm = 1;
};

Kernel createKernel(RecurrenceOp rec, const RecurrenceStructure &st, gpu::GPUModuleOp gpuModule, OpBuilder &b,
                    int64_t chunkSize, int64_t blockSize, KernelKind what) {
  MLIRContext *ctx = rec.getContext();
  Location loc = rec.getLoc();
  Type ptrTy = LLVM::LLVMPointerType::get(ctx);
  EntryKind kind = what.kind;
  bool backward = kind == EntryKind::Backward;
  unsigned numInputs = rec.getInputArguments().size();
  unsigned numScratch = what.numScratch + 1;
  unsigned numPointers = (backward ? 2 * numInputs + 5 : numInputs + 4) + numScratch;
  SmallVector<Type> argTypes(numPointers, ptrTy);
  argTypes.append(5, b.getI64Type());
  argTypes.push_back(b.getF32Type());
  b.setInsertionPointToEnd(gpuModule.getBody());
  std::string name = ("linac_" + rec.getSymName() + (backward ? "_backward_chunk" : "_forward_chunk") +
                      std::to_string(chunkSize) + (what.phase.empty() ? "" : "_") + what.phase)
                         .str();
  auto kernel = gpu::GPUFuncOp::create(b, loc, name, b.getFunctionType(argTypes, {}));
  kernel->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
  kernel->setAttr("linac.recurrence", b.getStringAttr(rec.getSymName()));
  kernel->setAttr("linac.direction", b.getStringAttr(backward ? "backward" : "forward"));
  if (!what.phase.empty())
    kernel->setAttr("linac.phase", b.getStringAttr(what.phase));
  kernel->setAttr("linac.chunk_size", b.getI64IntegerAttr(chunkSize));
  // A known block size bounds the registers ptxas may give each thread (65536 per multiprocessor).
  kernel.setKnownBlockSizeAttr(b.getDenseI32ArrayAttr({int32_t(blockSize), 1, 1}));
  if (what.blocksPerSm > 1) {
    kernel->setAttr("nvvm.minctasm", b.getI32IntegerAttr(int32_t(what.blocksPerSm)));
    // Each block's share of the multiprocessor's shared memory (each block also reserves 1 KiB).
    int64_t budget = ((kStaticSharedBytes + 1024) / what.blocksPerSm - 1024) / 16 * 16;
    kernel->setAttr("linac.shared_budget", b.getI64IntegerAttr(budget));
  }
  kernel->setAttr("linac.num_inputs", b.getI64IntegerAttr(numInputs));
  kernel->setAttr("linac.input_layout", b.getStringAttr(inputLayout(rec, st)));
  kernel->setAttr("linac.tile_scratch_arg", b.getI64IntegerAttr(numPointers - 1));
  Block &entry = kernel.getBody().front();
  b.setInsertionPointToStart(&entry);
  auto arg = [&](unsigned i) { return entry.getArgument(i); };

  EntryArguments args;
  unsigned p = 0;
  for (unsigned i = 0; i < numInputs; ++i)
    args.inputs.push_back(arg(p++));
  if (backward) {
    for (unsigned i = 0; i < numInputs; ++i)
      args.dinputs.push_back(arg(p++));
    args.h0 = arg(p++);
    args.dout = arg(p++);
    args.dht = arg(p++);
    args.dh0 = arg(p++);
  } else {
    args.out = arg(p++);
    args.h0 = arg(p++);
    args.ht = arg(p++);
  }
  args.cuSeqlens = arg(p++);
  Kernel k;
  k.function = kernel;
  for (unsigned i = 0; i < numScratch; ++i)
    k.scratch.push_back(arg(p++));
  args.setSizes(entry, p);
  StringRef io = gpuModule->getAttrOfType<StringAttr>("linac.io_type").getValue();
  kernel->setAttr("linac.io_type", b.getStringAttr(io));
  k.entry = bindEntryArguments(b, loc, rec, st, args, ioElementType(b.getContext(), io));
  k.entry.kind = kind;
  if (rec.getStateType().isMatrix() && what.sliced) {
    // Block z of the grid takes value columns [z Vb, min((z + 1) Vb, V)), Vb = ceil(V / gridDim.z).
    LoopBuilder lb(b, loc);
    EntryPoint &e = k.entry;
    Value slice = lb.ceilDiv(e.V, gpu::GridDimOp::create(b, loc, gpu::Dimension::z));
    e.v0 = lb.mul(gpu::BlockIdOp::create(b, loc, gpu::Dimension::z), slice);
    e.Vb = lb.minIndex(slice, lb.sub(e.V, e.v0));
    // A sliced fixed-size copy (emitStaticCopy) replaces the slice width by its constant.
    e.Vb.getDefiningOp()->setAttr("linac.slice_width", b.getUnitAttr());
  }
  // The before and after kernels of the split run one block per chunk slot, which may be more than a grid's
  // y extent allows (65535): their slots are block x, their heads block y.
  bool perSlot = what.phase == "before" || what.phase == "after" || what.phase == "pairs" || what.phase == "tail";
  Value x = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x), y = gpu::BlockIdOp::create(b, loc, gpu::Dimension::y);
  k.headAndSequence = perSlot ? std::make_pair(y, x) : std::make_pair(x, y);
  return k;
}

/// `count` floats at element `offset` of a scratch pointer, as a memref. A block-private region (the running
/// state of a block: no other block and no later kernel reads it) is marked `linac.block_private`, which lets
/// linac-tile-to-gpu give it a tile slot instead (shared memory where it fits).
Value scratchRegion(OpBuilder &b, Location loc, Value scratch, Value offset, Value count, bool blockPrivate = false) {
  Type ptrTy = LLVM::LLVMPointerType::get(b.getContext());
  Value i64Offset = arith::IndexCastOp::create(b, loc, b.getI64Type(), offset);
  Value at = LLVM::GEPOp::create(b, loc, ptrTy, b.getF32Type(), scratch, ValueRange{i64Offset});
  Value region = wrapPointer(b, loc, at, count, b.getF32Type());
  if (blockPrivate)
    region.getDefiningOp()->setAttr("linac.block_private", b.getUnitAttr());
  return region;
}

/// The slot of the first chunk of the sequence n starting at token `start` in the [slot, H, ...] buffers
/// (boundary states, frontiers): n + start / C. Consecutive sequences' slots never overlap, and N +
/// ceil(tokens / C) + 1 slots hold them all.
Value firstChunkSlot(LoopBuilder &lb, Value n, Value start, Value C) {
  return lb.add(n, arith::DivUIOp::create(lb.builder(), lb.location(), start, C));
}

/// Element (slot, h, 0) of a [slots, H, size] buffer (boundary states, solves, frontiers, cuts).
Value slotOffset(LoopBuilder &lb, const EntryPoint &e, Value slot, Value h, Value size) {
  return lb.mul(lb.add(lb.mul(slot, e.H), h), size);
}

/// Where chunk c of sequence n (tokens from `start`), head h keeps its initial state in a [slots, H, state]
/// buffer of boundary states (the backward's scratch, or the training forward's saved states), where every
/// R-th chunk's is kept (c a multiple of R): slot n + start / (C R) + c / R. As with firstChunkSlot,
/// consecutive sequences' slots never overlap (n + floor(s / CR) + floor((ceil(len / C) - 1) / R) < n + 1 +
/// floor((s + len) / CR)), and N + ceil(tokens / CR) + 1 slots hold them all.
Value boundaryOffset(LoopBuilder &lb, const EntryPoint &e, Value n, Value h, Value start, Value C, int64_t every,
                     Value c) {
  Value slot = firstChunkSlot(lb, n, start, lb.mul(C, lb.idx(every)));
  slot = lb.add(slot, every == 1 ? c : arith::DivUIOp::create(lb.builder(), lb.location(), c, lb.idx(every)));
  return slotOffset(lb, e, slot, h, e.stateSize);
}

/// Where chunk c of sequence n (tokens from `start`), head h keeps its solve (ChunkBuilder::Chunk::solve, C x V
/// floats) in the boundary-state buffers: after their N + ceil(tokens / CR) + 1 slots of states (boundaryOffset),
/// in [chunk slot, H, C V] with chunk slot n + start / C + c (firstChunkSlot: N + ceil(tokens / C) + 1 of them).
Value solveOffset(LoopBuilder &lb, const EntryPoint &e, Value n, Value h, Value start, Value C, int64_t every,
                  Value c) {
  Value states = lb.add(lb.add(e.N, lb.ceilDiv(e.tokens, lb.mul(C, lb.idx(every)))), lb.idx(1));
  Value slot = lb.add(firstChunkSlot(lb, n, start, C), c);
  Value solve = slotOffset(lb, e, slot, h, lb.mul(C, e.V));
  return lb.add(lb.mul(lb.mul(states, e.H), e.stateSize), solve);
}

/// Records that a kernel keeps its chunks' solves (solveOffset): the launcher sizes the saved states and the
/// boundary scratch for them.
void markSavedSolves(gpu::GPUFuncOp kernel, bool saves) {
  if (saves)
    kernel->setAttr("linac.saved_solves", UnitAttr::get(kernel.getContext()));
}

/// Marks the kernel's gradient stores of per-token inputs (kTokenGradient), for emitStaticCopy: a block that
/// runs all value columns of its chunks owns those rows.
void markTokenGradientStores(RecurrenceOp rec, const Kernel &k) {
  gpu::GPUFuncOp function = k.function;
  OpBuilder b(function);
  function.walk([&](TileStoreOp store) {
    for (auto [i, dinput] : llvm::enumerate(k.entry.dinputs))
      if (store.getAccumulate() && store.getBuffer() == dinput && !rec.isPerHead(i))
        store->setAttr(kTokenGradient, b.getI64IntegerAttr(int64_t(i)));
  });
}

/// Records R (see boundaryOffset) on a kernel that keeps boundary states, where it is not 1: the launcher
/// sizes the saved states and the boundary scratch by it.
void markBoundaryEvery(gpu::GPUFuncOp kernel, int64_t every) {
  if (every > 1)
    kernel->setAttr("linac.boundary_every", OpBuilder(kernel).getI64IntegerAttr(every));
}

/// Forward: block (h, n, z) of an (H, N, Z) grid runs every chunk of sequence n, head h in order for value
/// columns slice z, carrying the state in its slot of the state scratch (the Z blocks of one (n, h) touch
/// disjoint columns of it). Where the `saved` argument is not null (the training forward), it also stores
/// the initial state of every `every`-th chunk there, laid out as the backward's boundary scratch, so that the
/// backward given them skips its recomputing pass. With `saveSolves` (the caller's choice, for an in-order delta
/// rule: the chunks have a solve), it stores every chunk's solve there too (solveOffset).
gpu::GPUFuncOp emitForwardKernel(RecurrenceOp rec, const RecurrenceStructure &st, const ChunkForm &form,
                                 gpu::GPUModuleOp gpuModule, int64_t chunkSize, int64_t blockSize, int64_t every,
                                 bool saveSolves) {
  OpBuilder b(rec.getContext());
  Location loc = rec.getLoc();
  Kernel k = createKernel(rec, st, gpuModule, b, chunkSize, blockSize, {EntryKind::Forward, "", 2, true});
  const EntryPoint &e = k.entry;
  LoopBuilder lb(b, loc);
  auto [h, n] = k.headAndSequence;
  Value base = stateOffset(lb, e, n, h);
  Value state = scratchRegion(b, loc, k.scratch[0], base, e.stateSize, /*blockPrivate=*/true);
  Value saving = nonNull(b, loc, k.scratch[1]);
  Value saved = scratchRegion(b, loc, k.scratch[1], lb.idx(0), lb.idx(int64_t(1) << 40));
  auto [start, end] = sequenceBounds(lb, e, n);
  Value C = lb.idx(chunkSize);

  ChunkBuilder chunks(rec, st, form, b, e, C, lb.idx(1));
  chunks.setStateIndependentSolves(false);
  Value zero = lb.idx(0);
  lb.ifThenElse(
      e.hasH0, [&] { chunks.copyState(e.h0, base, state, zero); },
      [&] { chunks.storeState(chunks.zeroState(), state); });
  chunks.emitForward(
      h, start, end, state, /*storeOutputs=*/true,
      [&](Value c) {
        keepBoundary(lb, c, every, [&] {
          lb.ifThenElse(saving, [&] {
            chunks.copyState(state, zero, saved, boundaryOffset(lb, e, n, h, start, C, every, c));
          });
        });
      },
      [&](Value c, ChunkBuilder::Chunk &chunk) {
        if (!saveSolves)
          return;
        lb.ifThenElse(saving, [&] {
          chunks.storeSolve(chunk, saved, solveOffset(lb, e, n, h, start, C, every, c));
        });
      });
  lb.ifThenElse(e.hasHt, [&] { chunks.copyState(state, zero, e.ht, base); });
  gpu::ReturnOp::create(b, loc);
  markBoundaryEvery(k.function, every);
  markSavedSolves(k.function, saveSolves);
  return k.function;
}

/// Which part of the backward a kernel runs: all of it, or (the launcher runs them in this order) the boundary
/// states only, then the rest with those given.
enum class BackwardPart { Whole, Boundaries, GivenBoundaries };

/// Backward: block (h, n, z) runs emitSequenceBackward for sequence n, head h, value columns slice z; the
/// gradients of inputs that every slice reads (q, k, gates, beta) are sums over the slices. Chunk c of a
/// sequence starting at token s keeps its boundary state in slot n + s / C + c of the boundary scratch
/// ([slots, H, state]): the slots of consecutive sequences never overlap, and N + ceil(tokens / C) slots hold
/// them all. Gradient stores are atomic on the GPU, so per-head inputs sum over sequences; the launcher zeroes
/// the gradients first (but the per-token ones of a fixed-size copy, which stores those: emitStaticCopy).
/// `part` Boundaries gives the kernel `<backward>_boundaries` (linac.phase "boundaries"), the forward pass that
/// fills the boundary scratch, with the backward's arguments; GivenBoundaries the backward that reads them. The
/// boundary kernel's work is the state recurrence alone, whose value columns are independent: the launcher
/// runs it with value slices (blocks a multiprocessor) where the backward runs one. Where the `saved` argument
/// (after the two scratch pointers) is not null, the boundary scratch holds the training forward's boundary
/// states (emitForwardKernel): the backward reads them instead of recomputing them.
/// With `pairKernel` (emitPairKernel emitted one), the kernel derives the State terms only (BackwardTerms); the
/// pairs kernel runs after it and adds the rest.
/// With `tail` (and part Whole), the kernel is the head of a tail cut (TailCut; emitTailKernel makes the tail):
/// a fourth scratch pointer before the tile scratch takes its cut ([chunk slot, H, cut floats]), and `*tail`
/// receives the cut; where the analysis fails, `*tail` is left empty, `tailWhy` says why, and the kernel is the
/// whole backward.
FailureOr<gpu::GPUFuncOp> emitBackwardKernel(RecurrenceOp rec, const RecurrenceStructure &st, const ChunkForm &form,
                                             gpu::GPUModuleOp gpuModule, int64_t chunkSize, int64_t blockSize,
                                             int64_t every, bool saveSolves,
                                             BackwardPart part = BackwardPart::Whole, bool pairKernel = false,
                                             std::optional<TailCut> *tail = nullptr, std::string *tailWhy = nullptr) {
  OpBuilder b(rec.getContext());
  Location loc = rec.getLoc();
  bool boundariesOnly = part == BackwardPart::Boundaries;
  Kernel k = createKernel(rec, st, gpuModule, b, chunkSize, blockSize,
                          {EntryKind::Backward, boundariesOnly ? "boundaries" : "", tail ? 4u : 3u, true});
  const EntryPoint &e = k.entry;
  LoopBuilder lb(b, loc);
  auto [h, n] = k.headAndSequence;
  Value base = lb.mul(stateOffset(lb, e, n, h), lb.idx(2));
  Value state = scratchRegion(b, loc, k.scratch[1], base, e.stateSize, /*blockPrivate=*/true);
  Value stateGrad = scratchRegion(b, loc, k.scratch[1], lb.add(base, e.stateSize), e.stateSize, /*blockPrivate=*/true);
  // The launcher passes the saved states as the boundary scratch, and their pointer again as the flag (so the
  // buffer keeps one root: linac-tile-to-fragments' staging tells buffers apart by their kernel argument).
  Value saved = nonNull(b, loc, k.scratch[2]);
  Value boundaries = scratchRegion(b, loc, k.scratch[0], lb.idx(0), lb.idx(int64_t(1) << 40));
  auto [start, end] = sequenceBounds(lb, e, n);
  Value C = lb.idx(chunkSize);
  auto offset = [&](Value c) { return boundaryOffset(lb, e, n, h, start, C, every, c); };

  ChunkBuilder chunks(rec, st, form, b, e, C, lb.idx(1));
  chunks.setStateIndependentSolves(false);
  SequenceBackwardBuffers buffers{state, stateGrad, boundaries, offset, part == BackwardPart::GivenBoundaries,
                                  saved, pairKernel ? BackwardTerms::State : BackwardTerms::All, every};
  // The solves sit beside the boundary states (the same buffer: the training forward's saved values or the
  // backward's scratch).
  auto solveAt = [&](Value c) { return solveOffset(lb, e, n, h, start, C, every, c); };
  if (saveSolves) {
    buffers.solves = boundaries;
    buffers.solveOffset = solveAt;
  }
  std::optional<TailCut> cut;
  auto cutOffset = [&](Value c) {
    Value slot = lb.add(firstChunkSlot(lb, n, start, C), c);
    Value floats = cut->cutSize(lb, e);
    return slotOffset(lb, e, slot, h, floats);
  };
  if (tail) {
    FailureOr<TailCut> analysed = cutTail(chunks, e, h, buffers, *tailWhy);
    if (failed(analysed)) {
      k.function.erase();
      return emitBackwardKernel(rec, st, form, gpuModule, chunkSize, blockSize, every, saveSolves, part, pairKernel);
    }
    cut = *analysed;
    buffers.tail = &*cut;
    buffers.cut = scratchRegion(b, loc, k.scratch[3], lb.idx(0), lb.idx(int64_t(1) << 40));
    buffers.cutOffset = cutOffset;
  }
  if (boundariesOnly)
    emitBoundaryStates(chunks, e, n, h, start, end, buffers);
  else if (failed(emitSequenceBackward(chunks, e, n, h, start, end, buffers)))
    return failure();
  if (cut) {
    k.function->setAttr("linac.tail_cut", b.getStringAttr(cut->cutExpression()));
    *tail = std::move(cut);
  }
  gpu::ReturnOp::create(b, loc);
  markBoundaryEvery(k.function, every);
  markSavedSolves(k.function, saveSolves);
  // The gradient stores of per-token inputs, for emitStaticCopy: a block that runs all value columns owns them
  // (a pairs kernel runs after it and adds into them).
  markTokenGradientStores(rec, k);
  return k.function;
}

/// Chunk slot s (block x of the before and after kernels): the sequence n with firstSlot(n) <= s <
/// firstSlot(n + 1), by binary search over the (at most 65535) sequences; its chunk c = s - firstSlot(n), a
/// chunk where c < chunks(n) (each sequence leaves one slot unused).
struct SlotChunk {
  Value n, c, start, end, isChunk;
};
SlotChunk locateSlot(ChunkBuilder &chunks, LoopBuilder &lb, const EntryPoint &e, Value s) {
  OpBuilder &b = lb.builder();
  Location loc = lb.location();
  auto firstSlot = [&](Value n) {
    return firstChunkSlot(lb, n, sequenceBounds(lb, e, n).first, chunks.chunkSize());
  };
  auto search = scf::ForOp::create(b, loc, lb.idx(0), lb.idx(17), lb.idx(1), ValueRange{lb.idx(0), e.N});
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(search.getBody());
    Value lo = search.getRegionIterArgs()[0], hi = search.getRegionIterArgs()[1];
    Value mid = arith::DivUIOp::create(b, loc, lb.add(lo, hi), lb.idx(2));
    Value below = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ule, firstSlot(mid), s);
    scf::YieldOp::create(b, loc, ValueRange{lb.select(below, mid, lo), lb.select(below, hi, mid)});
  }
  Value n = search.getResult(0);
  auto [start, end] = sequenceBounds(lb, e, n);
  Value c = lb.sub(s, firstChunkSlot(lb, n, start, chunks.chunkSize()));
  return {n, c, start, end, lb.lt(c, chunks.chunkCount(start, end))};
}

/// The persistent loop of the kernels over chunk slots (the split's before and after kernels, the pairs
/// kernel): block x takes slots x, x + gridDim.x, ... from `first` (its block x; the launcher starts as many
/// blocks as the multiprocessors hold), so that entry work and tile scratch scale with the blocks that run at
/// once, not with the chunks. `body(at, s)` runs for slot s where it holds a chunk. Leaves the builder after
/// the loop.
void emitSlotLoop(ChunkBuilder &chunks, LoopBuilder &lb, const EntryPoint &e, Value first,
                  function_ref<void(const SlotChunk &, Value)> body) {
  OpBuilder &b = lb.builder();
  Location loc = lb.location();
  Value slots = lb.add(lb.add(e.N, lb.ceilDiv(e.tokens, chunks.chunkSize())), lb.idx(1));
  auto loop = scf::ForOp::create(b, loc, first, slots, gpu::GridDimOp::create(b, loc, gpu::Dimension::x));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  Value s = loop.getInductionVar();
  SlotChunk at = locateSlot(chunks, lb, e, s);
  lb.ifThenElse(at.isChunk, [&] { body(at, s); });
}

/// emitSlotLoop for the kernels that run a part of each chunk's backward without reading either state buffer
/// (the pairs and tail kernels): `part(at, s, t0, valid, none)` emits the part of the chunk at slot s (tokens
/// from t0, `valid` of them; `none`, a region of the tile scratch, stands in for the state buffers). Fails where
/// a part failed.
LogicalResult emitBackwardParts(ChunkBuilder &chunks, LoopBuilder &lb, const Kernel &k, Value first,
                                function_ref<LogicalResult(const SlotChunk &, Value, Value, Value, Value)> part) {
  LogicalResult result = success();
  emitSlotLoop(chunks, lb, k.entry, first, [&](const SlotChunk &at, Value s) {
    auto [t0, valid] = chunks.chunkTokens(at.c, at.start, at.end);
    Value none = scratchRegion(lb.builder(), lb.location(), k.scratch.back(), lb.idx(0), k.entry.stateSize);
    if (failed(part(at, s, t0, valid, none)))
      result = failure();
  });
  return result;
}

/// The backward's pair terms (BackwardTerms::Pairs) as a kernel of their own, `<backward>_pairs`, over chunk
/// slots like the split's before and after kernels (block x takes slots x, x + gridDim.x, ...; block y is the
/// head), with the backward's arguments: each block runs one chunk's pair terms for every value column. It
/// runs after the in-order backward (which stores the state's terms) and adds into its gradients atomically
/// (no other block touches a chunk's per-token rows then, but the atomic adds measured 0.5-1% faster than
/// plain reads, adds and writes: bench/NOTES.md v27). It reads neither the boundary states nor any state
/// cotangent, so its chunks are independent. Returns null (and emits nothing) where the output has no
/// state-independent terms.
FailureOr<gpu::GPUFuncOp> emitPairKernel(RecurrenceOp rec, const RecurrenceStructure &st, const ChunkForm &form,
                                         gpu::GPUModuleOp gpuModule, int64_t chunkSize, int64_t blockSize,
                                         int64_t blocksPerSm) {
  OpBuilder b(rec.getContext());
  Location loc = rec.getLoc();
  Kernel k = createKernel(rec, st, gpuModule, b, chunkSize, blockSize,
                          {EntryKind::Backward, "pairs", 3, false, blocksPerSm});
  const EntryPoint &e = k.entry;
  LoopBuilder lb(b, loc);
  auto [h, x] = k.headAndSequence;
  ChunkBuilder chunks(rec, st, form, b, e, lb.idx(chunkSize), lb.idx(1));
  chunks.setStateIndependentSolves(false);
  // Neither state buffer is read (the state's load is dead and erased).
  LogicalResult result = emitBackwardParts(chunks, lb, k, x, [&](const SlotChunk &, Value, Value t0, Value valid,
                                                                 Value none) {
    FailureOr<BackwardChunk> chunk =
        emitBackwardChunk(chunks, e, h, t0, valid, none, lb.idx(0), none, lb.idx(0), BackwardTerms::Pairs);
    if (failed(chunk))
      return failure();
    storeInputGradients(chunks, e, *chunk);
    return success();
  });
  if (failed(result))
    return failure();
  gpu::ReturnOp::create(b, loc);
  bool any = false;
  k.function.walk([&](TileStoreOp) { any = true; });
  if (!any) {
    k.function.erase();
    return gpu::GPUFuncOp();
  }
  return k.function;
}

/// The tail of the in-order backward (TailCut: what its head, the in-order kernel, leaves) as a kernel of its
/// own, `<backward>_tail` (linac.phase "tail", the head's arguments), over chunk slots like the pairs kernel:
/// each block runs one chunk's tail for every value column, loading the cut the head stored for it (in
/// [chunk slot, H, cut floats] at the fourth scratch pointer) and recomputing the tiles that depend on no
/// carried tile; with saved solves, it loads the chunk's solve where the head does. It computes every input
/// gradient (the head stores none): each chunk's per-token rows once, so its fixed-size copy stores them
/// plainly (emitStaticCopy), and the per-head ones atomically.
FailureOr<gpu::GPUFuncOp> emitTailKernel(RecurrenceOp rec, const RecurrenceStructure &st, const ChunkForm &form,
                                         gpu::GPUModuleOp gpuModule, int64_t chunkSize, int64_t blockSize,
                                         int64_t blocksPerSm, int64_t every, bool saveSolves, const TailCut &cut) {
  OpBuilder b(rec.getContext());
  Location loc = rec.getLoc();
  Kernel k = createKernel(rec, st, gpuModule, b, chunkSize, blockSize,
                          {EntryKind::Backward, "tail", 4, false, blocksPerSm});
  const EntryPoint &e = k.entry;
  LoopBuilder lb(b, loc);
  auto [h, x] = k.headAndSequence;
  Value C = lb.idx(chunkSize), zero = lb.idx(0), everything = lb.idx(int64_t(1) << 40);
  ChunkBuilder chunks(rec, st, form, b, e, C, lb.idx(1));
  chunks.setStateIndependentSolves(false);
  Value solves = saveSolves ? scratchRegion(b, loc, k.scratch[0], zero, everything) : Value();
  Value cutBuffer = scratchRegion(b, loc, k.scratch[3], zero, everything);
  // Neither state buffer is read (the tail loads no carried tile).
  LogicalResult result = emitBackwardParts(chunks, lb, k, x, [&](const SlotChunk &at, Value s, Value t0, Value valid,
                                                                 Value none) {
    Value solveAt = saveSolves ? solveOffset(lb, e, at.n, h, at.start, C, every, at.c) : Value();
    // The cut's offset ahead of the program (its loads go there).
    Value base = slotOffset(lb, e, s, h, cut.cutSize(lb, e));
    FailureOr<BackwardChunk> chunk =
        emitBackwardChunk(chunks, e, h, t0, valid, none, zero, none, zero, BackwardTerms::All, solves, solveAt);
    if (failed(chunk))
      return failure();
    storeInputGradients(chunks, e, *chunk);
    cut.apply(TailPart::Tail, chunk->program.ops, b, e, cutBuffer, base);
    return success();
  });
  if (failed(result))
    return failure();
  gpu::ReturnOp::create(b, loc);
  markBoundaryEvery(k.function, every);
  markSavedSolves(k.function, saveSolves);
  k.function->setAttr("linac.tail_cut", b.getStringAttr(cut.cutExpression()));
  markTokenGradientStores(rec, k);
  return k.function;
}

/// The forward (backward) of a matrix state as the three kernels of the chunk-parallel split; the before
/// kernel analyses the chunk program for all three. Buffers are laid out [slot, head, ...]: the frontier
/// (F floats per chunk), boundaries (the state each chunk starts from) and, backward, grad_boundaries (the
/// cotangent of each chunk's final state).
LogicalResult emitSplitKernels(RecurrenceOp rec, const RecurrenceStructure &st, const ChunkForm &form,
                               gpu::GPUModuleOp gpuModule, int64_t chunkSize, int64_t blockSize,
                               int64_t phaseBlockSize, int64_t phaseBlocksPerSm, EntryKind kind,
                               SmallVectorImpl<gpu::GPUFuncOp> &kernels) {
  bool backward = kind == EntryKind::Backward;
  std::optional<ChunkSplit> split;
  for (ChunkPhase phase : {ChunkPhase::Before, ChunkPhase::Chain, ChunkPhase::After}) {
    OpBuilder b(rec.getContext());
    Location loc = rec.getLoc();
    bool chain = phase == ChunkPhase::Chain;
    StringRef name = phase == ChunkPhase::Before ? "before" : chain ? "chain" : "after";
    Kernel k = createKernel(rec, st, gpuModule, b, chunkSize, chain ? blockSize : phaseBlockSize,
                            {kind, name, backward ? 4u : 3u, chain, chain ? 1 : phaseBlocksPerSm});
    const EntryPoint &e = k.entry;
    LoopBuilder lb(b, loc);
    auto [h, y] = k.headAndSequence;
    Value everything = lb.idx(int64_t(1) << 40), zero = lb.idx(0);
    Value frontier = scratchRegion(b, loc, k.scratch[0], zero, everything);
    Value boundaries = scratchRegion(b, loc, k.scratch[1], zero, everything);
    Value gradBoundaries = backward ? scratchRegion(b, loc, k.scratch[2], zero, everything) : Value();
    Value running = k.scratch[backward ? 3 : 2];
    ChunkBuilder chunks(rec, st, form, b, e, lb.idx(chunkSize), lb.idx(1));
    if (!split) {
      if (backward) {
        // The chain computes the state-sized tiles it reads (a chunk's K^T V update) from chunk-sized operands
        // instead of loading them from the frontier (ChunkSplit::analyze; bench/NOTES.md v16).
        FailureOr<ChunkSplit> analysed = splitBackward(chunks, e, lb.idx(1), /*stateSizedInChain=*/true);
        if (failed(analysed))
          return failure();
        split = *analysed;
      } else {
        split = chunks.splitForward(lb.idx(1), /*stateSizedInChain=*/true);
      }
    }
    Value F = split->frontierSize(lb, e);
    auto slotBase = [&](Value slot, Value size) { return slotOffset(lb, e, slot, h, size); };
    LogicalResult result = success();
    auto runPhase = [&](Value c, Value start, Value end, Value slot, Value carried) {
      if (!backward) {
        chunks.emitPhase(*split, phase, h, c, start, end, chain ? carried : boundaries,
                         chain ? nullptr : slotBase(slot, e.stateSize), frontier, slotBase(slot, F));
        return;
      }
      Value grads = chain ? carried : gradBoundaries, gradOffset = chain ? zero : slotBase(slot, e.stateSize);
      if (failed(emitBackwardPhase(chunks, e, *split, phase, h, c, start, end, boundaries,
                                   slotBase(slot, e.stateSize), grads, gradOffset, frontier, slotBase(slot, F))))
        result = failure();
    };
    if (chain) {
      // Block (h, n, z): the chunks of sequence n in order (backward: in reverse), carrying the state (its
      // cotangent) in this block's slot of the state scratch, and saving it per chunk for the after kernel.
      Value n = y, base = stateOffset(lb, e, n, h);
      Value carried = scratchRegion(b, loc, running, base, e.stateSize);
      auto [start, end] = sequenceBounds(lb, e, n);
      Value firstSlot = firstChunkSlot(lb, n, start, chunks.chunkSize());
      Value initial = backward ? e.dht : e.h0, hasInitial = backward ? e.hasDht : e.hasH0;
      lb.ifThenElse(
          hasInitial, [&] { chunks.copyState(initial, base, carried, zero); },
          [&] { chunks.storeState(chunks.zeroState(), carried); });
      Value count = chunks.chunkCount(start, end);
      lb.forLoop(zero, count, [&](Value step) {
        Value c = backward ? lb.sub(lb.sub(count, lb.idx(1)), step) : step;
        Value slot = lb.add(firstSlot, c);
        chunks.copyState(carried, zero, backward ? gradBoundaries : boundaries, slotBase(slot, e.stateSize));
        runPhase(c, start, end, slot, carried);
      });
      Value final = backward ? e.dh0 : e.ht, hasFinal = backward ? e.hasDh0 : e.hasHt;
      lb.ifThenElse(hasFinal, [&] { chunks.copyState(carried, zero, final, base); });
    } else {
      emitSlotLoop(chunks, lb, e, y,
                   [&](const SlotChunk &at, Value s) { runPhase(at.c, at.start, at.end, s, Value()); });
    }
    if (failed(result))
      return failure();
    gpu::ReturnOp::create(b, loc);
    k.function->setAttr("linac.frontier_size", b.getStringAttr(split->frontierExpression()));
    kernels.push_back(k.function);
  }
  return success();
}

/// A copy of `kernel` for fixed K and V and one value slice, after it in the module: the launch sizes K and V
/// become constants, the grid's z extent 1 and its z index 0, so that after canonicalization every tile
/// extent, stride and slot size is a constant. The launcher takes it for launches with these sizes and no
/// value slices. Returns the copy.
/// With Z > 1 slices (V a multiple of Z; an experiment, `static-slices`) the copy runs Z value slices of V / Z
/// columns, block z the z-th: the grid's z extent is Z, the slice width V / Z, and it is compiled for Z blocks a
/// multiprocessor (threads / Z, at most 128 registers a thread at Z = 2, a 1/Z share of shared memory).
gpu::GPUFuncOp emitStaticCopy(gpu::GPUFuncOp kernel, int64_t K, int64_t V, int64_t Z = 1) {
  OpBuilder b(kernel);
  b.setInsertionPointAfter(kernel);
  auto copy = cast<gpu::GPUFuncOp>(b.clone(*kernel));
  copy.setName((kernel.getName() + "_k" + Twine(K) + "_v" + Twine(V) + (Z > 1 ? "_z" + Twine(Z) : Twine())).str());
  copy->setAttr("linac.static_dims",
                Z > 1 ? b.getDenseI64ArrayAttr({K, V, Z}) : b.getDenseI64ArrayAttr({K, V}));
  Block &entry = copy.getBody().front();
  Location loc = kernel.getLoc();
  b.setInsertionPointToStart(&entry);
  EntryArguments args;
  args.setSizes(entry, kernel->getAttrOfType<IntegerAttr>("linac.tile_scratch_arg").getInt() + 1);
  args.K.replaceAllUsesWith(arith::ConstantIntOp::create(b, loc, b.getI64Type(), K));
  args.V.replaceAllUsesWith(arith::ConstantIntOp::create(b, loc, b.getI64Type(), V));
  if (Z > 1) {
    Value slices = arith::ConstantIndexOp::create(b, loc, Z), width = arith::ConstantIndexOp::create(b, loc, V / Z);
    copy.walk([&](gpu::GridDimOp op) {
      if (op.getDimension() == gpu::Dimension::z)
        op.replaceAllUsesWith(slices);
    });
    copy.walk([&](Operation *op) {
      if (op->hasAttr("linac.slice_width"))
        op->getResult(0).replaceAllUsesWith(width);
    });
    int64_t threads = std::max<int64_t>(128, (*copy.getKnownBlockSize())[0] / Z);
    copy.setKnownBlockSizeAttr(b.getDenseI32ArrayAttr({int32_t(threads), 1, 1}));
    copy->setAttr("nvvm.minctasm", b.getI32IntegerAttr(int32_t(Z)));
    copy->setAttr("linac.shared_budget", b.getI64IntegerAttr(((kStaticSharedBytes + 1024) / Z - 1024) / 16 * 16));
    return copy;
  }
  // One block runs every value column of its (sequence, head), and the chunks of a sequence partition its
  // tokens: each per-token gradient row is written once, by one tile store, so the store need not add
  // (atomically, into gradients the launcher zeroed first). The launcher leaves those gradients unzeroed.
  std::string stored(kernel->getAttrOfType<IntegerAttr>("linac.num_inputs").getInt(), '0');
  bool ownsGradients = false;
  copy.walk([&](TileStoreOp store) {
    if (auto input = store->getAttrOfType<IntegerAttr>(kTokenGradient)) {
      store->removeAttr(kTokenGradient);
      store.setAccumulate(false);
      stored[input.getInt()] = '1';
      ownsGradients = true;
    }
  });
  if (ownsGradients)
    copy->setAttr("linac.stored_gradients", b.getStringAttr(stored));
  Value one = arith::ConstantIndexOp::create(b, loc, 1), zero = arith::ConstantIndexOp::create(b, loc, 0);
  copy.walk([&](gpu::GridDimOp op) {
    if (op.getDimension() == gpu::Dimension::z)
      op.replaceAllUsesWith(one);
  });
  copy.walk([&](gpu::BlockIdOp op) {
    if (op.getDimension() == gpu::Dimension::z)
      op.replaceAllUsesWith(zero);
  });
  return copy;
}

/// Takes scalar factors out of product operands: a product (matmul) whose operand is a loaded tile times a
/// fill, (c X) Y or X^T (c Y), reads the loaded tile itself, and c multiplies the product's result, or, where
/// the result is added to another tile (the update that accumulates onto it) and the other operand is not
/// loaded, that operand. The tensor-core lowerings round each operand to bf16 (or tf32): a loaded bf16 tile is
/// exact there, c X is not (c = 1/sqrt(K) is not a power of two at K = 128). The backward's output cotangent
/// reaches its products as dO times the read's scale; rounded, Gated DeltaNet's gate gradient lost up to 4% at
/// single tokens (gpu-check K = V = 128, one value slice: dg 1.28e-2 relative rms; docs/gpu.md). The kernel
/// records how many operands it rewrote (linac.scales_factored).
void factorScalesOutOfProducts(gpu::GPUFuncOp kernel) {
  OpBuilder b(kernel.getContext());
  b.setInsertionPointToStart(&kernel.getBody().front());
  TileShapes shapes(arith::ConstantIndexOp::create(b, kernel.getLoc(), 1));
  SmallVector<TileMatmulOp> products;
  kernel.walk([&](TileMatmulOp mm) { products.push_back(mm); });
  int64_t factored = 0;
  for (TileMatmulOp mm : products)
    for (unsigned i = 0; i < 2; ++i) {
      auto scaled = mm->getOperand(i).getDefiningOp<arith::MulFOp>();
      if (!scaled)
        continue;
      auto fill = scaled.getRhs().getDefiningOp<TileFillOp>();
      Value x = scaled.getLhs();
      if (!fill) {
        fill = scaled.getLhs().getDefiningOp<TileFillOp>();
        x = scaled.getRhs();
      }
      Value other = mm->getOperand(1 - i);
      if (!fill || !loadedTile(x) || other == scaled.getResult())
        continue;
      Location loc = mm.getLoc();
      b.setInsertionPoint(mm);
      mm->setOperand(i, x);
      auto tile = [&](Value v, TileShape s) {
        Value c = TileFillOp::create(b, loc, getTileType(b.getContext()), fill.getValue(), s.rows, s.cols);
        return arith::MulFOp::create(b, loc, v, c);
      };
      if (mm->hasOneUse() && isa<arith::AddFOp>(*mm->user_begin()) && !loadedTile(other)) {
        mm->setOperand(1 - i, tile(other, shapes.get(other)));
      } else {
        b.setInsertionPointAfter(mm);
        arith::MulFOp result = tile(mm.getResult(), shapes.get(mm.getResult()));
        mm.getResult().replaceAllUsesExcept(result, result);
      }
      if (scaled->use_empty())
        scaled->erase();
      ++factored;
    }
  if (factored)
    kernel->setAttr("linac.scales_factored", b.getI64IntegerAttr(factored));
}

/// Threads per block of the in-order kernels unless the options say otherwise (but a vector state's backward).
constexpr int64_t kDefaultBlockSize = 512;
/// A delta rule's backward (matrix state) where the options leave it open: 256 threads, so 255 registers a
/// thread, up to K V = 128 x 128; its fixed-size copies above that keep kDefaultBlockSize. Its backward has no
/// per-pair exponents on the CUDA cores that need the threads, and the registers hold more of its products'
/// fragments. Measured on the H200 (bench/NOTES.md v9, bf16 I/O, forward + backward against 512): Gated
/// DeltaNet -6% at K = V = 128 and -19% at 64, DeltaNet -3% and -11%; at 256 +6% and +11%. The per-key gated
/// recurrences lose about 20% at 256 (v7e), so they keep 512.
constexpr int64_t kDeltaBackwardBlockSize = 256;

struct GpuChunkPass : linac::impl::LinacGpuChunkBase<GpuChunkPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    // A block size is 0 (by kernel, below) or a multiple of 32 in [32, 1024].
    auto badBlockSize = [&](const char *name, int64_t n) {
      if (n == 0 || (n >= 32 && n <= 1024 && n % 32 == 0))
        return false;
      module.emitError("linac-gpu-chunk: ") << name << " must be 0 or a multiple of 32 in [32, 1024], not " << n;
      return true;
    };
    if (badBlockSize("block-size", blockSize) || badBlockSize("backward-block-size", backwardBlockSize) ||
        badBlockSize("phase-block-size", phaseBlockSize) || badBlockSize("pair-block-size", pairBlockSize))
      return signalPassFailure();
    if (phaseBlocksPerSm < 1 || phaseBlocksPerSm > 32) {
      module.emitError("linac-gpu-chunk: phase-blocks-per-sm must be in [1, 32], not ") << int64_t(phaseBlocksPerSm);
      return signalPassFailure();
    }
    if (pairBlocksPerSm < 0 || pairBlocksPerSm > 32) {
      module.emitError("linac-gpu-chunk: pair-blocks-per-sm must be 0 (by I/O type) or in [1, 32], not ")
          << int64_t(pairBlocksPerSm);
      return signalPassFailure();
    }
    if (staticDims.size() % 2 || llvm::any_of(staticDims, [](int64_t d) { return d < 1; })) {
      module.emitError("linac-gpu-chunk: static-dims takes pairs K, V of positive head dimensions");
      return signalPassFailure();
    }
    if (boundarySlices < 0 || boundarySlices > 8) {
      module.emitError("linac-gpu-chunk: boundary-slices must be in [0, 8], not ") << int64_t(boundarySlices);
      return signalPassFailure();
    }
    if (boundaryEvery < 0 || boundaryEvery > 64) {
      module.emitError("linac-gpu-chunk: boundary-every must be in [0, 64], not ") << int64_t(boundaryEvery);
      return signalPassFailure();
    }
    if (saveSolves != "auto" && saveSolves != "on" && saveSolves != "off") {
      module.emitError("linac-gpu-chunk: save-solves must be auto, on or off, not '") << saveSolves << "'";
      return signalPassFailure();
    }
    if (staticSlices < 1 || staticSlices > 8) {
      module.emitError("linac-gpu-chunk: static-slices must be in [1, 8], not ") << int64_t(staticSlices);
      return signalPassFailure();
    }
    if (failed(parseIoType(module, "linac-gpu-chunk", ioType)))
      return signalPassFailure();
    if (tailKernel != "all" && tailKernel != "none") {
      module.emitError("linac-gpu-chunk: tail-kernel must be all or none, not '") << tailKernel << "'";
      return signalPassFailure();
    }
    if (tailBlocksPerSm < 1 || tailBlocksPerSm > 32) {
      module.emitError("linac-gpu-chunk: tail-blocks-per-sm must be in [1, 32], not ") << int64_t(tailBlocksPerSm);
      return signalPassFailure();
    }
    if (pairKernel != "per-key" && pairKernel != "all" && pairKernel != "none") {
      module.emitError("linac-gpu-chunk: pair-kernel must be per-key, all or none, not '") << pairKernel << "'";
      return signalPassFailure();
    }
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
    // One element type for the module's I/O (createKernel binds its buffers with it; the launchers' header
    // states it): each chunk size's run of this pass must agree.
    if (auto io = gpuModule->getAttrOfType<StringAttr>("linac.io_type"); io && io.getValue() != ioType) {
      module.emitError("linac-gpu-chunk: io-type ")
          << ioType << " differs from the kernels already built (" << io.getValue() << ")";
      return signalPassFailure();
    }
    gpuModule->setAttr("linac.io_type", StringAttr::get(&getContext(), ioType));
    // Threads per block where the options leave them open (0), as measured on the H200 (bench/NOTES.md v7): 512
    // for the forward and a matrix state's backward (128 registers a thread: room for product epilogues and the
    // in-place sums; the forwards 0-14% faster than at 1024, the backwards 4-15%), 1024 for a vector state's
    // backward (HGRN's, 15% slower at 512) and for the split's kernels (measured at 1024, v3); the delta rule's
    // backward: kDeltaBackwardBlockSize.
    int64_t forwardThreads = blockSize ? blockSize : kDefaultBlockSize;
    int64_t splitThreads = blockSize ? blockSize : 1024;
    for (const ChunkableRecurrence &r : *recurrences) {
      bool matrix = RecurrenceOp(r.op).getStateType().isMatrix();
      // The in-order delta rule backward's threads where the options leave them open, for head dims K V (any
      // if unknown), else 0: see kDeltaBackwardBlockSize.
      auto deltaThreads = [&](std::optional<int64_t> keyValue) -> int64_t {
        if (!matrix || split || !r.form.delta || blockSize || backwardBlockSize)
          return 0;
        return keyValue && *keyValue > 128 * 128 ? kDefaultBlockSize : kDeltaBackwardBlockSize;
      };
      // Boundary states kept every `every` chunks where the options leave it open (0): 2 where the state is a
      // matrix whose rebuild is one decayed k^T w product (no delta rule, or its solves saved: w is loaded),
      // against 64 KB of fp32 state at K = V = 128, and the I/O is 16-bit (the kernels measured): H100, bf16,
      // forward + backward (bench/NOTES.md v29): GLA -6%, RetNet -5%, RWKV-6 -4%, HGRN-2 -3%, simple GLA level;
      // Gated DeltaNet +13% (its rebuild solving again); HGRN +6% (a vector state: nothing to save). 1 elsewhere.
      // The delta rule's solves kept (save-solves auto) where the chunk update has no decay gates, at 16-bit
      // I/O: H100, bf16, forward + backward (NOTES v30): DeltaNet -5% (3.81-3.88 -> 3.65-3.67), and -10% with
      // R = 2 below (3.45: its rebuild is then one k^T w product); Gated DeltaNet +6% (its backward 3.37 -> 3.61
      // ms; ptxas spills 476 -> 540 bytes), +31% with R = 2.
      // Only the in-order delta rule has a solve to keep (ChunkBuilder::Chunk::solve).
      bool solves = matrix && r.form.delta &&
                    (saveSolves == "on" || (saveSolves == "auto" && r.form.gates.empty() && ioType != "f32"));
      int64_t every = boundaryEvery                                               ? int64_t(boundaryEvery)
                      : matrix && (!r.form.delta || solves) && ioType != "f32" ? 2
                                                                                 : 1;
      SmallVector<gpu::GPUFuncOp> kernels;
      if (matrix && split) {
        for (EntryKind kind : {EntryKind::Forward, EntryKind::Backward})
          if (failed(emitSplitKernels(r.op, r.structure, r.form, gpuModule, chunkSize, splitThreads,
                                      phaseBlockSize ? phaseBlockSize : splitThreads, phaseBlocksPerSm, kind,
                                      kernels)))
            return signalPassFailure();
      } else {
        kernels.push_back(
            emitForwardKernel(r.op, r.structure, r.form, gpuModule, chunkSize, forwardThreads, every, solves));
        int64_t delta = deltaThreads(std::nullopt);
        int64_t threads = backwardBlockSize ? backwardBlockSize
                          : delta           ? delta
                          : matrix          ? std::min<int64_t>(forwardThreads, kDefaultBlockSize)
                          : blockSize       ? blockSize
                                            : 1024;
        bool boundaryKernel = matrix && boundarySlices > 0;
        // The pairs kernel first: whether there is one decides which terms the backward derives.
        std::string pairsName;
        if (matrix && (pairKernel == "all" || (pairKernel == "per-key" && r.form.gateShape == GateShape::PerKey))) {
          FailureOr<gpu::GPUFuncOp> pairs =
              emitPairKernel(r.op, r.structure, r.form, gpuModule, chunkSize, pairBlockSize ? pairBlockSize : threads,
                             pairBlocksPerSm ? pairBlocksPerSm : ioType == "bf16" ? 2 : 1);
          if (failed(pairs))
            return signalPassFailure();
          if (*pairs) {
            // An explicit block size holds for the fragment lowering too (its warps are one per pass otherwise).
            if (pairBlockSize)
              (*pairs)->setAttr("linac.fragment_warps", OpBuilder(*pairs).getI64IntegerAttr(pairBlockSize / 32));
            kernels.push_back(*pairs);
            pairsName = pairs->getName().str();
          }
        }
        gpu::GPUFuncOp boundaries;
        if (boundaryKernel) {
          // 1024 threads, so that its copy with Z slices runs 1024 / Z threads a block, Z blocks a multiprocessor.
          FailureOr<gpu::GPUFuncOp> kernel = emitBackwardKernel(r.op, r.structure, r.form, gpuModule, chunkSize,
                                                                1024, every, solves, BackwardPart::Boundaries);
          if (failed(kernel))
            return signalPassFailure();
          boundaries = *kernel;
          kernels.push_back(boundaries);
        }
        // The tail cut where asked for and possible (the head's arguments have no room for a pairs or boundary
        // kernel's).
        bool wantTail = matrix && tailKernel == "all" && pairsName.empty() && !boundaryKernel;
        std::optional<TailCut> tail;
        std::string tailWhy;
        FailureOr<gpu::GPUFuncOp> backward =
            emitBackwardKernel(r.op, r.structure, r.form, gpuModule, chunkSize, threads, every, solves,
                               boundaryKernel ? BackwardPart::GivenBoundaries : BackwardPart::Whole,
                               !pairsName.empty(), wantTail ? &tail : nullptr, &tailWhy);
        if (failed(backward))
          return signalPassFailure();
        if (wantTail && !tail)
          r.op->emitRemark("linac-gpu-chunk: no tail kernel: ") << tailWhy;
        if (tail) {
          FailureOr<gpu::GPUFuncOp> tailKernelFn = emitTailKernel(r.op, r.structure, r.form, gpuModule, chunkSize,
                                                                  threads, tailBlocksPerSm, every, solves, *tail);
          if (failed(tailKernelFn))
            return signalPassFailure();
          kernels.push_back(*tailKernelFn);
          (*backward)->setAttr("linac.tail_kernel", OpBuilder(&getContext()).getStringAttr(tailKernelFn->getName()));
        }
        if (!pairsName.empty())
          (*backward)->setAttr("linac.pair_kernel", OpBuilder(&getContext()).getStringAttr(pairsName));
        if (boundaryKernel) {
          OpBuilder attrs(&getContext());
          (*backward)->setAttr("linac.boundary_kernel", attrs.getStringAttr(boundaries.getName()));
          (*backward)->setAttr("linac.boundary_slices", attrs.getI64IntegerAttr(boundarySlices));
        }
        kernels.push_back(*backward);
      }
      for (gpu::GPUFuncOp kernel : kernels) {
        simplifyTiles(kernel, /*broadcasts=*/false);
        factorScalesOutOfProducts(kernel);
      }
      for (gpu::GPUFuncOp kernel : kernels)
        kernel->setAttr("linac.transition",
                        StringAttr::get(&getContext(), transitionClass(r.form, r.structure)));
      // Vector states have no V (the launcher passes K for it).
      for (size_t i = 0; i + 1 < staticDims.size(); i += 2)
        if (matrix || staticDims[i] == staticDims[i + 1])
          for (gpu::GPUFuncOp kernel : kernels) {
            gpu::GPUFuncOp copy = emitStaticCopy(kernel, staticDims[i], staticDims[i + 1]);
            int64_t copyThreads = deltaThreads(staticDims[i] * staticDims[i + 1]);
            if (copyThreads && copy->getAttrOfType<StringAttr>("linac.direction").getValue() == "backward")
              copy.setKnownBlockSizeAttr(OpBuilder(copy).getDenseI32ArrayAttr({int32_t(copyThreads), 1, 1}));
            auto phase = kernel->getAttrOfType<StringAttr>("linac.phase");
            // The pairs and tail kernels run one chunk a block; a head of a tail cut runs one value slice.
            bool unsliced = (phase && (phase.getValue() == "pairs" || phase.getValue() == "tail")) ||
                            kernel->hasAttr("linac.tail_kernel");
            if (matrix && !unsliced && staticSlices > 1 && staticDims[i + 1] % staticSlices == 0)
              emitStaticCopy(kernel, staticDims[i], staticDims[i + 1], staticSlices);
            if (phase && phase.getValue() == "boundaries" && boundarySlices > 1 && boundarySlices != staticSlices &&
                staticDims[i + 1] % boundarySlices == 0)
              emitStaticCopy(kernel, staticDims[i], staticDims[i + 1], boundarySlices);
          }
    }
    // Kernels that may run several value slices keep adding their gradients.
    module.walk([](TileStoreOp store) { store->removeAttr(kTokenGradient); });
  }
};

} // namespace
