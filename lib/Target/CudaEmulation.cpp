// The CUDA emulation's compiler half: the GPU kernels that linac-tile-to-gpu produced, compiled for the host
// instead of NVPTX, so that the driver emulator (runtime/cuda-emu) can run the launchers and kernels of
// --target=cuda on a machine without a GPU (docs/emulation.md).
//
// Each gpu.func becomes a host function that runs one GPU thread. The few operations that are the GPU's own
// become calls into the emulator (runtime/cuda-emu/CudaEmu.h), which runs every thread of a block as a fiber:
//   gpu.thread_id / block_id / block_dim / grid_dim  -> linac_emu_thread_id(dim) ... (i64)
//   gpu.barrier                                       -> linac_emu_barrier()
//   gpu.shuffle                                       -> linac_emu_shuffle(mode, bits, offset, width)
//   nvvm.mma.sync (tf32 m16n8k8, bf16/f16 m16n8k16)   -> linac_emu_mma(kind, fragments)
//   nvvm.ldmatrix (m8n8 b16, x1/x2/x4, .trans or not)  -> linac_emu_ldmatrix(matrices, transposed, row, fragments)
//   the dynamic shared memory global and its size     -> linac_emu_shared(), linac_emu_shared_size()
//   nvvm.cp.async.shared.global / commit / wait.group -> linac_emu_cp_async(dst, src, bytes),
//                                                        linac_emu_cp_async_commit(), linac_emu_cp_async_wait(n)
// Everything else (arith, math, memref, scf and the LLVM dialect ops the tile lowering emits) is lowered as the
// CPU target lowers its own kernels. Anything else from the gpu or nvvm dialects is refused by name, so a new
// GPU operation cannot be emulated silently wrong.

#include "lib/Target/CudaEmulation.h"
#include "lib/Target/CpuTarget.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Pass/PassManager.h"

#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Module.h"
#include "llvm/Transforms/Utils/ModuleUtils.h"

using namespace mlir;

namespace {

/// Words of the fragment buffer linac_emu_mma reads and writes: A (4), B (2), C (4), then D (4).
constexpr int kFragmentWords = 14;

/// The emulator's hooks, declared in the module.
struct Hooks {
  func::FuncOp threadId, blockId, blockDim, gridDim, barrier, shuffle, mma, ldmatrix, shared, sharedSize, cpAsync,
      cpCommit, cpWait;
};

/// Rewrites the GPU's own operations in `fn` (a former gpu.func) into calls of the emulator's hooks.
LogicalResult rewriteKernel(func::FuncOp fn, const Hooks &hooks, StringRef sharedGlobal) {
  MLIRContext *ctx = fn.getContext();
  OpBuilder b(ctx);
  Type i32 = b.getI32Type(), i64 = b.getI64Type(), ptr = LLVM::LLVMPointerType::get(ctx);
  // One fragment buffer per thread, in the entry block (an alloca in a loop would grow the stack each trip).
  b.setInsertionPointToStart(&fn.getBody().front());
  Value words = arith::ConstantIntOp::create(b, fn.getLoc(), i32, kFragmentWords);
  Value fragments = LLVM::AllocaOp::create(b, fn.getLoc(), ptr, i32, words);
  auto word = [&](Location loc, int index) {
    return LLVM::GEPOp::create(b, loc, ptr, i32, fragments, ArrayRef<LLVM::GEPArg>{index});
  };
  auto call = [&](Location loc, func::FuncOp hook, ValueRange args) {
    return func::CallOp::create(b, loc, hook, args);
  };

  SmallVector<Operation *> ops;
  fn.walk([&](Operation *op) { ops.push_back(op); });
  for (Operation *op : ops) {
    Location loc = op->getLoc();
    b.setInsertionPoint(op);
    auto index = [&](func::FuncOp hook, gpu::Dimension dim) {
      Value d = arith::ConstantIntOp::create(b, loc, i32, int64_t(dim));
      Value id = call(loc, hook, {d}).getResult(0);
      op->getResult(0).replaceAllUsesWith(arith::IndexCastOp::create(b, loc, b.getIndexType(), id).getResult());
      op->erase();
    };
    if (auto o = dyn_cast<gpu::ThreadIdOp>(op)) {
      index(hooks.threadId, o.getDimension());
    } else if (auto o = dyn_cast<gpu::BlockIdOp>(op)) {
      index(hooks.blockId, o.getDimension());
    } else if (auto o = dyn_cast<gpu::BlockDimOp>(op)) {
      index(hooks.blockDim, o.getDimension());
    } else if (auto o = dyn_cast<gpu::GridDimOp>(op)) {
      index(hooks.gridDim, o.getDimension());
    } else if (isa<gpu::BarrierOp>(op)) {
      call(loc, hooks.barrier, {});
      op->erase();
    } else if (auto o = dyn_cast<gpu::ShuffleOp>(op)) {
      Type type = o.getValue().getType();
      if (!type.isF32() && !type.isInteger(32))
        return o.emitError("the CUDA emulation shuffles 32-bit values only, not ") << type;
      // The emulator's modes: 0 xor, 1 up, 2 down, 3 idx.
      int mode = o.getMode() == gpu::ShuffleMode::XOR ? 0 : o.getMode() == gpu::ShuffleMode::UP ? 1
                                                         : o.getMode() == gpu::ShuffleMode::DOWN ? 2
                                                                                                 : 3;
      Value bits = type.isF32() ? arith::BitcastOp::create(b, loc, i32, o.getValue()).getResult() : o.getValue();
      Value m = arith::ConstantIntOp::create(b, loc, i32, mode);
      Value packed = call(loc, hooks.shuffle, {m, bits, o.getOffset(), o.getWidth()}).getResult(0);
      Value low = arith::TruncIOp::create(b, loc, i32, packed);
      Value result = type.isF32() ? arith::BitcastOp::create(b, loc, type, low).getResult() : low;
      Value high = arith::ShRUIOp::create(b, loc, packed, arith::ConstantIntOp::create(b, loc, i64, 32));
      Value valid = arith::TruncIOp::create(b, loc, b.getI1Type(), high);
      o.getShuffleResult().replaceAllUsesWith(result);
      o.getValid().replaceAllUsesWith(valid);
      o.erase();
    } else if (auto o = dyn_cast<NVVM::MmaOp>(op)) {
      NVVM::MMAShapeAttr shape = o.getShape();
      std::optional<NVVM::MMATypes> a = o.getMultiplicandAPtxType();
      int kind = -1;
      if (a == NVVM::MMATypes::tf32 && shape.getM() == 16 && shape.getN() == 8 && shape.getK() == 8)
        kind = 0;
      else if ((a == NVVM::MMATypes::bf16 || a == NVVM::MMATypes::f16) && shape.getM() == 16 &&
               shape.getN() == 8 && shape.getK() == 16)
        kind = a == NVVM::MMATypes::bf16 ? 1 : 2;
      auto resultType = dyn_cast<LLVM::LLVMStructType>(o.getResult().getType());
      auto allOf = [](ValueRange values, size_t n, auto pred) {
        return values.size() == n && llvm::all_of(values, [&](Value v) { return pred(v.getType()); });
      };
      auto isI32 = [](Type t) { return t.isInteger(32); };
      auto isF32 = [](Type t) { return t.isF32(); };
      if (kind < 0 || o.getLayoutA() != NVVM::MMALayout::row || o.getLayoutB() != NVVM::MMALayout::col ||
          !allOf(o.getOperandA(), 4, isI32) || !allOf(o.getOperandB(), 2, isI32) ||
          !allOf(o.getOperandC(), 4, isF32) || !resultType || resultType.getBody().size() != 4 ||
          !llvm::all_of(resultType.getBody(), isF32))
        return o.emitError("the CUDA emulation runs row.col mma.sync of tf32 m16n8k8 or bf16/f16 m16n8k16 with "
                           "32-bit registers and f32 accumulators only");
      int at = 0;
      for (Value v : o.getOperands())
        LLVM::StoreOp::create(b, loc, v, word(loc, at++));
      call(loc, hooks.mma, {arith::ConstantIntOp::create(b, loc, i32, kind), fragments});
      Value result = LLVM::PoisonOp::create(b, loc, resultType);
      for (int i = 0; i < 4; ++i) {
        Value d = LLVM::LoadOp::create(b, loc, b.getF32Type(), word(loc, 10 + i));
        result = LLVM::InsertValueOp::create(b, loc, result, d, ArrayRef<int64_t>{i});
      }
      o.getResult().replaceAllUsesWith(result);
      o.erase();
    } else if (auto o = dyn_cast<NVVM::LdMatrixOp>(op)) {
      int64_t n = o.getNum();
      auto structType = dyn_cast<LLVM::LLVMStructType>(o.getRes().getType());
      bool typed = n == 1 ? o.getRes().getType().isInteger(32)
                          : structType && int64_t(structType.getBody().size()) == n &&
                                llvm::all_of(structType.getBody(), [](Type t) { return t.isInteger(32); });
      if ((n != 1 && n != 2 && n != 4) || !typed || o.getShape().getM() != 8 || o.getShape().getN() != 8 ||
          o.getEltType() != NVVM::LdStMatrixEltType::B16)
        return o.emitError("the CUDA emulation runs ldmatrix of 1, 2 or 4 m8n8 b16 matrices into i32 registers only");
      Value row = LLVM::AddrSpaceCastOp::create(b, loc, ptr, o.getPtr());
      Value transposed = arith::ConstantIntOp::create(b, loc, i32, o.getLayout() == NVVM::MMALayout::col);
      call(loc, hooks.ldmatrix, {arith::ConstantIntOp::create(b, loc, i32, n), transposed, row, fragments});
      Value result;
      if (n == 1) {
        result = LLVM::LoadOp::create(b, loc, i32, word(loc, 0));
      } else {
        result = LLVM::PoisonOp::create(b, loc, structType);
        for (int64_t i = 0; i < n; ++i)
          result = LLVM::InsertValueOp::create(b, loc, result, LLVM::LoadOp::create(b, loc, i32, word(loc, int(i))),
                                               ArrayRef<int64_t>{i});
      }
      o.getRes().replaceAllUsesWith(result);
      o.erase();
    } else if (auto o = dyn_cast<NVVM::CpAsyncOp>(op)) {
      if (o.getCpSize())
        return o.emitError("the CUDA emulation runs cp.async without a source size only");
      Value dst = LLVM::AddrSpaceCastOp::create(b, loc, ptr, o.getDst());
      Value src = LLVM::AddrSpaceCastOp::create(b, loc, ptr, o.getSrc());
      call(loc, hooks.cpAsync, {dst, src, arith::ConstantIntOp::create(b, loc, i32, o.getSize())});
      o.erase();
    } else if (isa<NVVM::CpAsyncCommitGroupOp>(op)) {
      call(loc, hooks.cpCommit, {});
      op->erase();
    } else if (auto o = dyn_cast<NVVM::CpAsyncWaitGroupOp>(op)) {
      call(loc, hooks.cpWait, {arith::ConstantIntOp::create(b, loc, i32, o.getN())});
      o.erase();
    } else if (op->getName().getStringRef() == "nvvm.read.ptx.sreg.dynamic.smem.size") {
      op->getResult(0).replaceAllUsesWith(call(loc, hooks.sharedSize, {}).getResult(0));
      op->erase();
    } else if (auto o = dyn_cast<LLVM::AddressOfOp>(op); o && o.getGlobalName() == sharedGlobal) {
      Value base = call(loc, hooks.shared, {}).getResult(0);
      if (o.getType() != ptr)
        base = LLVM::AddrSpaceCastOp::create(b, loc, o.getType(), base);
      o.getResult().replaceAllUsesWith(base);
      o.erase();
    } else if (auto o = dyn_cast<gpu::ReturnOp>(op)) {
      func::ReturnOp::create(b, loc, o.getOperands());
      o.erase();
    }
  }
  WalkResult left = fn.walk([](Operation *op) {
    StringRef dialect = op->getName().getDialectNamespace();
    if (dialect == "gpu" || dialect == "nvvm") {
      op->emitError("the CUDA emulation cannot run '") << op->getName() << "'";
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return failure(left.wasInterrupted());
}

} // namespace

FailureOr<std::string> linac::emitCudaEmulation(ModuleOp module) {
  MLIRContext *ctx = module.getContext();
  OpBuilder b(ctx);
  Type i32 = b.getI32Type(), i64 = b.getI64Type(), ptr = LLVM::LLVMPointerType::get(ctx);
  b.setInsertionPointToEnd(module.getBody());
  auto declare = [&](StringRef name, TypeRange args, TypeRange results) {
    auto fn = func::FuncOp::create(b, module.getLoc(), name, b.getFunctionType(args, results));
    fn.setPrivate();
    return fn;
  };
  Hooks hooks{declare("linac_emu_thread_id", {i32}, {i64}),
              declare("linac_emu_block_id", {i32}, {i64}),
              declare("linac_emu_block_dim", {i32}, {i64}),
              declare("linac_emu_grid_dim", {i32}, {i64}),
              declare("linac_emu_barrier", {}, {}),
              declare("linac_emu_shuffle", {i32, i32, i32, i32}, {i64}),
              declare("linac_emu_mma", {i32, ptr}, {}),
              declare("linac_emu_ldmatrix", {i32, i32, ptr, ptr}, {}),
              declare("linac_emu_shared", {}, {ptr}),
              declare("linac_emu_shared_size", {}, {i32}),
              declare("linac_emu_cp_async", {ptr, ptr, i32}, {}),
              declare("linac_emu_cp_async_commit", {}, {}),
              declare("linac_emu_cp_async_wait", {i32}, {})};

  // Each kernel's thread function __linac_emu_<kernel>, in the module's body.
  std::vector<std::string> kernels;
  for (gpu::GPUModuleOp gpuModule : llvm::make_early_inc_range(module.getOps<gpu::GPUModuleOp>())) {
    std::string sharedGlobal;
    for (LLVM::GlobalOp global : gpuModule.getOps<LLVM::GlobalOp>())
      if (global.getAddrSpace() == 3)
        sharedGlobal = global.getSymName().str();
    for (gpu::GPUFuncOp kernel : gpuModule.getOps<gpu::GPUFuncOp>()) {
      if (!kernel.isKernel() || kernel.getNumWorkgroupAttributions() || kernel.getNumPrivateAttributions())
        return kernel.emitError("the CUDA emulation runs kernels without memory attributions only"), failure();
      kernels.push_back(kernel.getName().str());
      auto fn = func::FuncOp::create(b, kernel.getLoc(), "__linac_emu_" + kernels.back(), kernel.getFunctionType());
      fn.getBody().takeBody(kernel.getBody());
      if (failed(rewriteKernel(fn, hooks, sharedGlobal)))
        return failure();
    }
    gpuModule.erase();
  }
  if (kernels.empty())
    return emitError(module.getLoc(), "the CUDA emulation found no GPU kernels"), failure();
  module->removeAttr(gpu::GPUDialect::getContainerModuleAttrName());

  // bf16 vectors: x86 legalizes <2 x bfloat> through float and back (calls of __truncsfbf2, which GCC 12's
  // libgcc lacks), so the packing of bf16 operand pairs (arith.truncf to vector<2xbf16>, bitcast to i32) is
  // expanded into integer arithmetic first (round to nearest even, as the GPU's cvt.rn.bf16x2.f32) and the
  // bitcast then reads the integer pair directly.
  PassManager expand(ctx);
  expand.addPass(arith::createArithExpandOpsPass(arith::ArithExpandOpsPassOptions{/*includeBf16=*/true}));
  if (failed(expand.run(module)))
    return failure();
  module.walk([](LLVM::BitcastOp cast) {
    if (auto pair = cast.getArg().getDefiningOp<arith::BitcastOp>())
      if (isa<IntegerType>(getElementTypeOrSelf(pair.getIn().getType())))
        cast.getArgMutable().assign(pair.getIn());
  });
  // The CPU target's lowering to the LLVM dialect (bf16 conversions already expanded above).
  PassManager pm(ctx);
  addHostLLVMLowering(pm, /*expandBf16=*/false);
  if (failed(pm.run(module)))
    return failure();

  // Each kernel's entry __linac_emu_entry_<kernel>(void **params) reads its arguments as cuLaunchKernel passes
  // them (params[i] points at argument i) and runs the thread function; a static constructor registers the
  // entries by the kernels' names.
  return linac::emitHostObject(module, /*llvmIR=*/nullptr, [&](llvm::Module &m) {
    llvm::LLVMContext &c = m.getContext();
    llvm::IRBuilder<> ir(c);
    llvm::Type *voidType = ir.getVoidTy(), *ptrType = ir.getPtrTy();
    auto *entryType = llvm::FunctionType::get(voidType, {ptrType}, false);
    llvm::FunctionCallee registerEntry =
        m.getOrInsertFunction("linac_emu_register", llvm::FunctionType::get(voidType, {ptrType, ptrType}, false));
    auto *ctor = llvm::Function::Create(llvm::FunctionType::get(voidType, false), llvm::Function::InternalLinkage,
                                        "__linac_emu_register_kernels", m);
    llvm::IRBuilder<> init(llvm::BasicBlock::Create(c, "entry", ctor));
    for (const std::string &name : kernels) {
      llvm::Function *thread = m.getFunction("__linac_emu_" + name);
      thread->setLinkage(llvm::Function::InternalLinkage);
      auto *entry = llvm::Function::Create(entryType, llvm::Function::InternalLinkage, "__linac_emu_entry_" + name, m);
      ir.SetInsertPoint(llvm::BasicBlock::Create(c, "entry", entry));
      std::vector<llvm::Value *> args;
      for (llvm::Argument &arg : thread->args()) {
        llvm::Value *slot = ir.CreateConstGEP1_64(ptrType, entry->getArg(0), arg.getArgNo());
        args.push_back(ir.CreateLoad(arg.getType(), ir.CreateLoad(ptrType, slot)));
      }
      ir.CreateCall(thread, args);
      ir.CreateRetVoid();
      init.CreateCall(registerEntry, {init.CreateGlobalString(name), entry});
    }
    init.CreateRetVoid();
    llvm::appendToGlobalCtors(m, ctor, 65535);
  });
}
