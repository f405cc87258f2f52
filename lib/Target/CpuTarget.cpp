// The CPU path: linac -> scf/arith/math/memref -> LLVM dialect -> LLVM IR ->
// optimized host object code.

#include "lib/Target/CpuTarget.h"
#include "dialect/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "mlir/Transforms/Passes.h"

#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"

using namespace mlir;

void linac::buildCpuLoweringPipeline(OpPassManager &pm, const CpuOptions &options) {
  pm.addPass(createLinacLowerSequential(LinacLowerSequentialOptions{options.io}));
  for (int64_t size : options.chunkSizes) {
    pm.addPass(createLinacChunk(LinacChunkOptions{size, options.io}));
    if (options.backward)
      pm.addPass(createLinacAutodiff(LinacAutodiffOptions{size, options.io}));
  }
  std::string backward = options.backward && !options.chunkSizes.empty()
                             ? "chunk" + std::to_string(options.chunkSizes.front())
                             : "";
  pm.addPass(createLinacFinalizeEntryPoints(LinacFinalizeEntryPointsOptions{options.forward, backward}));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  pm.addPass(createLinacTileToLoops(LinacTileToLoopsOptions{options.factorGates, options.schedule}));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  addHostLLVMLowering(pm, /*expandBf16=*/options.io == "bf16");
  pm.addPass(createCanonicalizerPass());
}

void linac::addHostLLVMLowering(OpPassManager &pm, bool expandBf16) {
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createConvertMathToLibmPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  // The f32 <-> bf16 conversions as integer arithmetic (round to nearest even): LLVM lowers them on x86 to
  // calls of __truncsfbf2 and __extendbfsf2, which GCC 12's libgcc lacks.
  if (expandBf16)
    pm.addPass(arith::createArithExpandOpsPass(arith::ArithExpandOpsPassOptions{/*includeBf16=*/true}));
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createUBToLLVMConversionPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

FailureOr<std::string> linac::emitCpuObject(ModuleOp module, const CpuOptions &options, std::string &llvmIR) {
  MLIRContext *ctx = module.getContext();
  PassManager pm(ctx);
  buildCpuLoweringPipeline(pm, options);
  if (failed(pm.run(module)))
    return failure();

  OpBuilder b(ctx);
  b.setInsertionPointToEnd(module.getBody());
  for (const EntryPointInfo &info : options.tables) {
    // linac_<name>_table = {num_inputs, state_rank, kind_0, ..., activation_0, ...}, as in enum
    // linac_input_kind and enum linac_activation.
    static const char *kKinds[] = {"LINAC_TOKEN_KEY", "LINAC_TOKEN_VALUE", "LINAC_TOKEN_SCALAR",
                                   "LINAC_HEAD_KEY",  "LINAC_HEAD_VALUE",  "LINAC_HEAD_SCALAR"};
    SmallVector<int32_t> table = {int32_t(info.inputs.size()), info.matrixState ? 2 : 1};
    std::string names;
    for (const auto &input : info.inputs) {
      table.push_back(int32_t(llvm::find(kKinds, input.kind) - std::begin(kKinds)));
      names += input.name;
      names.push_back('\0');
    }
    for (const auto &input : info.inputs)
      table.push_back(int32_t(llvm::find(kActivations, input.activation) - std::begin(kActivations)));
    auto tableType = RankedTensorType::get({int64_t(table.size())}, b.getI32Type());
    LLVM::GlobalOp::create(b, module.getLoc(), LLVM::LLVMArrayType::get(b.getI32Type(), table.size()),
                           /*isConstant=*/true, LLVM::Linkage::External, "linac_" + info.name + "_table",
                           DenseIntElementsAttr::get(tableType, ArrayRef<int32_t>(table)));
    LLVM::GlobalOp::create(b, module.getLoc(), LLVM::LLVMArrayType::get(b.getI8Type(), names.size()),
                           /*isConstant=*/true, LLVM::Linkage::External, "linac_" + info.name + "_input_names",
                           b.getStringAttr(names));
    // linac_<name>_io: the I/O type of every entry point ("f32", "bf16" or "f16"), so that a program that loads
    // the object cannot pass floats where it takes 16-bit values.
    std::string io = options.io + '\0';
    LLVM::GlobalOp::create(b, module.getLoc(), LLVM::LLVMArrayType::get(b.getI8Type(), io.size()),
                           /*isConstant=*/true, LLVM::Linkage::External, "linac_" + info.name + "_io",
                           b.getStringAttr(io));
  }
  return emitHostObject(module, &llvmIR);
}

FailureOr<std::string> linac::emitHostObject(ModuleOp module, std::string *llvmIR,
                                             llvm::function_ref<void(llvm::Module &)> extend) {
  MLIRContext *ctx = module.getContext();
  registerBuiltinDialectTranslation(*ctx);
  registerLLVMDialectTranslation(*ctx);
  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule = translateModuleToLLVMIR(module, llvmContext, "linac");
  if (!llvmModule)
    return emitError(module.getLoc(), "translation to LLVM IR failed"), failure();

  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  llvm::Triple triple(llvm::sys::getDefaultTargetTriple());
  std::string error;
  const llvm::Target *target = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return emitError(module.getLoc(), "no LLVM target for the host: ") << error, failure();
  // Generic x86-64 code: objects built here run on CI and on the GPU machine's host.
  std::unique_ptr<llvm::TargetMachine> machine(
      target->createTargetMachine(triple, "generic", "", llvm::TargetOptions(), llvm::Reloc::PIC_));
  llvmModule->setDataLayout(machine->createDataLayout());
  llvmModule->setTargetTriple(triple);
  if (extend)
    extend(*llvmModule);

  auto optimize = makeOptimizingTransformer(/*optLevel=*/3, /*sizeLevel=*/0, machine.get());
  if (llvm::Error err = optimize(llvmModule.get()))
    return emitError(module.getLoc(), "LLVM optimization failed: ") << llvm::toString(std::move(err)), failure();
  if (llvmIR) {
    llvm::raw_string_ostream irStream(*llvmIR);
    llvmModule->print(irStream, nullptr);
  }

  llvm::SmallVector<char, 0> object;
  llvm::raw_svector_ostream objectStream(object);
  llvm::legacy::PassManager codegen;
  if (machine->addPassesToEmitFile(codegen, objectStream, nullptr, llvm::CodeGenFileType::ObjectFile))
    return emitError(module.getLoc(), "the host target cannot emit object files"), failure();
  codegen.run(*llvmModule);
  return std::string(object.begin(), object.end());
}
