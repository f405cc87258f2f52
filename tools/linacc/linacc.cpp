// linacc: compile linac recurrences into code that links without MLIR.
//
//   linacc examples/gated_deltanet.mlir --target=cpu [--chunked] [--chunk-sizes=16,32,64] -o out/
//
// writes out/gated_deltanet.o, out/gated_deltanet.h (the entry points and
// their input tables) and out/linac_abi.h. Every object holds the sequential
// variant and one chunked variant per chunk size; linac_<name>_forward runs
// the sequential one, or with --chunked the first chunked one. Unless
// --no-backward, each chunk size also gets a derived backward entry point,
// and linac_<name>_backward runs the first. Errors are one line each, `file:line:col: error: ...`,
// and leave no output files behind.

#include "lib/InitAll.h"
#include "lib/Target/CpuTarget.h"
#include "lib/Target/CudaTarget.h"
#include "lib/Target/Header.h"

#include "dialect/LinacOps.h"
#include "mlir/AsmParser/AsmParser.h"
#include "mlir/AsmParser/AsmParserState.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"

using namespace mlir;
namespace cl = llvm::cl;

static cl::opt<std::string> inputFile(cl::Positional, cl::desc("<input .mlir>"), cl::Required);
static cl::opt<std::string> outputDir("o", cl::desc("Output directory"), cl::value_desc("dir"), cl::Required);
static cl::opt<std::string> target("target", cl::desc("Code generation target: cpu or cuda"), cl::init("cpu"));
static cl::opt<bool> chunked("chunked", cl::desc("linac_<name>_forward runs the chunked form (first --chunk-sizes entry)"));
static cl::list<int64_t> chunkSizes("chunk-sizes", cl::desc("Chunk sizes to generate variants for (default 64)"),
                                    cl::CommaSeparated);
static cl::opt<bool> shared("shared", cl::desc("Also link <stem>.so (--target=cuda: <stem>_cuda.so), loadable at "
                                                "run time (dlopen)"));
static cl::opt<bool> noBackward("no-backward", cl::desc("Do not derive the backward entry points"));
static cl::opt<int64_t> gpuBlockSize("gpu-block-size",
                                    cl::desc("--target=cuda: threads per block, a multiple of 32 (default 0: 512, and "
                                             "1024 for a vector state's backward and the split's kernels)"),
                                    cl::init(0));
static cl::opt<int64_t> gpuBackwardBlockSize(
    "gpu-backward-block-size",
    cl::desc("--target=cuda: threads per block of the backward kernels, a multiple of 32 (default 0: at most 512 "
             "for matrix states, 256 for the delta rule up to K V = 128 x 128; --gpu-block-size for vector "
             "states)"),
    cl::init(0));
static cl::list<std::string> gpuStaticDims(
    "gpu-static-dims",
    cl::desc("--target=cuda: head dimensions KxV to also compile fixed-size kernels for (default "
             "64x64,128x128,256x256; 'none' for none)"),
    cl::CommaSeparated);
static cl::opt<bool> gpuSplit("gpu-split",
                              cl::desc("--target=cuda: the chunk-parallel split for matrix states (default false: "
                                       "slower than running the chunks in order at B*H >= the multiprocessors; "
                                       "bench/NOTES.md)"),
                              cl::init(false));
static cl::opt<int64_t> gpuPhaseBlockSize(
    "gpu-phase-block-size",
    cl::desc("--target=cuda: threads per block of the split's before and after kernels (default: --gpu-block-size)"),
    cl::init(0));
static cl::opt<int64_t> gpuPhaseBlocksPerSm(
    "gpu-phase-blocks-per-sm",
    cl::desc("--target=cuda: blocks of the before and after kernels per multiprocessor to leave room for (default 1)"),
    cl::init(1));
static cl::opt<std::string> gpuPairKernel(
    "gpu-pair-kernel",
    cl::desc("--target=cuda: which matrix states' backwards leave the gradients of the output's state-independent "
             "terms (the intra-chunk pairs) to a kernel over chunk slots of their own, launched after: per-key "
             "(default: per-key gates; measured faster there, slower with scalar gates: bench/NOTES.md v25), all "
             "or none"),
    cl::init("per-key"));
static cl::opt<int64_t> gpuPairBlockSize(
    "gpu-pair-block-size", cl::desc("--target=cuda: threads per block of the pairs kernel (default: the backward's)"),
    cl::init(0));
static cl::opt<int64_t> gpuPairBlocksPerSm(
    "gpu-pair-blocks-per-sm",
    cl::desc("--target=cuda: blocks of the pairs kernel per multiprocessor to leave room for (default 0: 2 with "
             "--gpu-io=bf16, else 1)"),
    cl::init(0));
static cl::opt<std::string> gpuTailKernel(
    "gpu-tail-kernel",
    cl::desc("--target=cuda: which matrix states' in-order backwards leave their state-free tail (every input "
             "gradient, from the chunk-sized tiles the loop computes from the state and its cotangent, which it "
             "stores) to a kernel over chunk slots of its own, launched after: all (where there is no pairs or "
             "boundary kernel) or none (default)"),
    cl::init("none"));
static cl::opt<int64_t> gpuTailBlocksPerSm(
    "gpu-tail-blocks-per-sm",
    cl::desc("--target=cuda: blocks of the tail kernel per multiprocessor to leave room for (default 2)"),
    cl::init(2));
static cl::opt<std::string> gpuProducts(
    "gpu-products",
    cl::desc("--target=cuda: tensor-core products, tf32x3 (default: fp32 accuracy, three tf32 products per step), "
             "tf32 (one product of operands rounded to tf32: the accuracy class of bf16 inputs) or bf16 (one "
             "m16n8k16 product of operands rounded to bf16)"),
    cl::init("tf32x3"));
static cl::opt<std::string> gpuIo(
    "gpu-io",
    cl::desc("--target=cuda: element type of the per-token inputs, the output and its cotangent, f32 (default), "
             "bf16 or f16 (states, per-head inputs and input gradients stay fp32; the products then default to "
             "tf32)"),
    cl::init("f32"));
static cl::opt<int64_t> gpuStaticSlices(
    "gpu-static-slices",
    cl::desc("--target=cuda: an experiment: also fixed-size copies that run this many value slices as as many "
             "blocks a multiprocessor (default 1: none; launched where LINAC_CUDA_VALUE_SPLITS asks for them)"),
    cl::init(1), cl::Hidden);
static cl::opt<int64_t> gpuBoundarySlices(
    "gpu-boundary-slices",
    cl::desc("--target=cuda: an experiment: a matrix state's in-order backward takes its chunks' initial states "
             "from a kernel of its own that runs the state recurrence alone with this many value slices as as many "
             "blocks a multiprocessor (default 0: the backward computes them itself)"),
    cl::init(0), cl::Hidden);
static cl::opt<int64_t> gpuBoundaryEvery(
    "gpu-boundary-every",
    cl::desc("--target=cuda: the in-order kernels keep the initial state of every R-th chunk only (the training "
             "forward's saved states, the backward's boundary scratch: 1/R of the bytes); the backward rebuilds "
             "the others from the kept one with the forward's state recurrence (default 0: 2 for matrix states "
             "at 16-bit I/O without the delta rule or with its solves saved, measured faster on the H100, "
             "bench/NOTES.md v29, v30; else 1)"),
    cl::init(0));
static cl::opt<std::string> gpuSaveSolves(
    "gpu-save-solves",
    cl::desc("--target=cuda: on: the in-order delta rule kernels keep each chunk's solve beside the boundary "
             "states (the training forward's saved values, the backward's scratch: C x V floats a chunk), and the "
             "backward loads them instead of solving again; off: it solves again; auto (default): on for the "
             "delta rule without decay gates at 16-bit I/O (measured on the H100: bench/NOTES.md v30)"),
    cl::init("auto"));
static cl::opt<std::string> gpuFtzExp2(
    "gpu-ftz-exp2",
    cl::desc("--target=cuda: the kernels whose fast exponentials are ex2.approx.ftz.f32 (the NVVM intrinsic) "
             "rather than libdevice's non-flushing exp2: auto (all but the delta rule's backwards, measured "
             "faster on the H100: bench/NOTES.md v30), none, all, forward or backward (default auto)"),
    cl::init("auto"));
static cl::opt<int64_t> gpuForwardCopies(
    "gpu-forward-copies",
    cl::desc("--target=cuda: most unrolled copies of a thread's share of a tile op in a forward kernel (default 0: "
             "16)"),
    cl::init(0), cl::Hidden);
static cl::opt<int64_t> gpuProductChains(
    "gpu-product-chains",
    cl::desc("--target=cuda: accumulator chains of a tf32x3 product's k steps (default 0: by warp tile and "
             "registers; 1: one chain)"),
    cl::init(0), cl::Hidden);
static cl::opt<int64_t> gpuSplitK(
    "gpu-split-k",
    cl::desc("--target=cuda: most warps that share a product's warp tile (its k steps) where fewer warp tiles than "
             "warps have work (a power of two; default 1: none)"),
    cl::init(1), cl::Hidden);
static cl::opt<bool> gpuFactorGates(
    "gpu-factor-gates",
    cl::desc("--target=cuda: per-key gated pair products across 16-row blocks on the tensor cores (default false: "
             "slower with the current code generator)"),
    cl::init(false), cl::Hidden);
static cl::opt<std::string> gpuPadByPattern(
    "gpu-pad-by-pattern",
    cl::desc("--target=cuda: in which kernels (none, forward or all) tiles that the tensor-core products read "
             "mostly in the B fragment's pattern get rows padded by 8 floats instead of 4 (default forward)"),
    cl::init("forward"), cl::Hidden);
static cl::opt<std::string> gpuWideWarpTiles(
    "gpu-wide-warp-tiles",
    cl::desc("--target=cuda: in which kernels (none, forward or all) a warp may take 2 x 4 or 4 x 2 product "
             "fragments (default forward)"),
    cl::init("forward"), cl::Hidden);
static cl::opt<int64_t> gpuFragments(
    "gpu-fragments",
    cl::desc("--target=cuda: lower the fixed-size kernels that it can with tiles in registers, this many warps a "
             "block (bf16 I/O only; default -1: 8 with --gpu-io=bf16, else off; 0: off)"),
    cl::init(-1), cl::Hidden);
static cl::opt<bool> gpuFragmentsBackward(
    "gpu-fragments-backward",
    cl::desc("--target=cuda: with --gpu-fragments, the fixed-size backward kernels too (default true)"),
    cl::init(true), cl::Hidden);
static cl::opt<bool> gpuFragmentsPrefetch(
    "gpu-fragments-prefetch",
    cl::desc("--target=cuda: with --gpu-fragments, load each chunk's inputs one chunk ahead (cp.async into "
             "shared memory; default true)"),
    cl::init(true), cl::Hidden);
static cl::opt<std::string> gpuProductSolves(
    "gpu-product-solves",
    cl::desc("--target=cuda: with --gpu-fragments, the kernels whose triangular solves are products with the "
             "inverse (computed for each solve by one warp) on the tensor cores rather than substitutions (a thread "
             "per column, fp32): auto (the forwards, measured faster on the H100: bench/NOTES.md v31, v32), none, "
             "all, forward or backward (default auto)"),
    cl::init("auto"));
static cl::opt<std::string> gpuSubstitution(
    "gpu-substitution",
    cl::desc("--target=cuda: with --gpu-fragments, the order of the triangular solves' substitutions: left (row "
             "by row, the timed default) or right (each solved row's terms to every later row at once: a "
             "shorter dependence chain, bit-identical results; bench/NOTES.md v35, not yet timed)"),
    cl::init("left"));
static cl::opt<bool> gpuInterleaveTerms(
    "gpu-interleave-terms",
    cl::desc("--target=cuda: with --gpu-fragments, a split product's two or three mma terms of a k step issued term "
             "by term over the warp's fragments, not fragment by fragment (consecutive mma to different "
             "accumulators; bit-identical results; bench/NOTES.md v35, not yet timed; default false)"),
    cl::init(false));
/// The register-resident lowering's warps a block: --gpu-fragments, or its default (8 with bf16 I/O, where
/// it was timed faster than the shared-memory lowering for every example it lowers; off otherwise).
static int64_t fragmentWarps() { return gpuFragments >= 0 ? int64_t(gpuFragments) : gpuIo == "bf16" ? 8 : 0; }
static cl::opt<int64_t> gpuUnrollGlobalK(
    "gpu-unroll-global-k",
    cl::desc("--target=cuda: in fixed-size kernels, unroll by this factor each product's k loop that reads a slot "
             "left in global memory (default 0: none)"),
    cl::init(0), cl::Hidden);
static cl::opt<std::string> gpuPlacement(
    "gpu-placement",
    cl::desc("--target=cuda: how the fixed-size kernels choose the slots that stay in shared memory: accesses or "
             "latency (default accesses)"),
    cl::init("accesses"), cl::Hidden);
static cl::opt<std::string> gpuSchedule(
    "gpu-schedule",
    cl::desc("--target=cuda: in which kernels (none, fit, forward or all) the tile ops are ordered by level, so "
             "that independent passes share a barrier (default fit: the fixed-size kernels whose slots do not grow "
             "past shared memory with it)"),
    cl::init("fit"), cl::Hidden);
static cl::opt<bool> gpuEmulation(
    "gpu-emulation",
    cl::desc("--target=cuda: also <stem>_emu.o, the same kernels compiled for this host, which the CUDA driver "
             "emulator (liblinac-cuda-emu) runs in place of a GPU: for testing without one (docs/emulation.md)"),
    cl::init(false));
static cl::opt<std::string> cpuIo(
    "cpu-io",
    cl::desc("--target=cpu: element type of the per-token inputs, the output and its cotangent: f32 (default), bf16 or "
             "f16; computed in fp32, states and input gradients stay fp32"),
    cl::init("f32"));
static cl::opt<bool> cpuSchedule(
    "cpu-schedule",
    cl::desc("--target=cpu: tile ops ordered by level as the GPU orders them (--gpu-schedule), to test that the "
             "ordering keeps the program's meaning against the fp64 reference on the CPU"),
    cl::init(false));
static cl::opt<bool> cpuFactorGates(
    "cpu-factor-gates",
    cl::desc("--target=cpu: per-key gated pair products in the GPU's blocked form (pairs across 16-row blocks "
             "through reference gates), to test that form against the fp64 reference on the CPU"),
    cl::init(false), cl::Hidden);
static cl::opt<bool> emitLLVM("emit-llvm", cl::desc("Also write the optimized LLVM IR (<stem>.ll)"));

static std::string describe(Location loc) {
  if (auto file = loc->findInstanceOf<FileLineColLoc>())
    return (file.getFilename().str() + ":" + std::to_string(file.getLine()) + ":" + std::to_string(file.getColumn()));
  return inputFile;
}

static int fail(const llvm::Twine &message) {
  llvm::errs() << "linacc: error: " << message << "\n";
  return 1;
}

/// For an option that takes one of `allowed`: "--<option> must be a, b or c, not '<value>'", or "" where it does.
static std::string notOneOf(const cl::opt<std::string> &option, ArrayRef<StringRef> allowed) {
  if (llvm::is_contained(allowed, option.getValue()))
    return "";
  std::string words;
  for (size_t i = 0; i < allowed.size(); ++i)
    words += (i == 0 ? "" : i + 1 == allowed.size() ? " or " : ", ") + allowed[i].str();
  return "--" + option.ArgStr.str() + " must be " + words + ", not '" + option.getValue() + "'";
}

/// SSA names of recurrence arguments become `linac.name` attributes, so the header can name the inputs.
static void recordArgumentNames(ModuleOp module, const AsmParserState &state) {
  module.walk([&](linac::RecurrenceOp rec) {
    const AsmParserState::BlockDefinition *def = state.getBlockDef(&rec.getBody().front());
    if (!def)
      return;
    for (auto [i, arg] : llvm::enumerate(def->arguments)) {
      llvm::SMRange range = arg.loc;
      llvm::StringRef text(range.Start.getPointer(), range.End.getPointer() - range.Start.getPointer());
      rec.setArgAttr(i, "linac.name", StringAttr::get(rec.getContext(), text.ltrim('%')));
    }
  });
}

/// Writes every file or none: each goes to a temporary first and is renamed once all are written.
static bool writeAll(llvm::ArrayRef<std::pair<std::string, std::string>> files) {
  std::vector<std::string> temps;
  auto cleanup = [&] {
    for (const std::string &t : temps)
      llvm::sys::fs::remove(t);
  };
  for (const auto &[path, contents] : files) {
    std::string temp = path + ".tmp";
    std::error_code ec;
    llvm::raw_fd_ostream os(temp, ec);
    if (ec) {
      cleanup();
      fail("cannot write '" + temp + "': " + ec.message());
      return false;
    }
    temps.push_back(temp);
    os << contents;
    os.close();
    if (os.has_error()) {
      cleanup();
      fail("cannot write '" + temp + "'");
      return false;
    }
  }
  for (size_t i = 0; i < files.size(); ++i)
    if (std::error_code ec = llvm::sys::fs::rename(temps[i], files[i].first)) {
      cleanup();
      fail("cannot write '" + files[i].first + "': " + ec.message());
      return false;
    }
  return true;
}

static std::string outputPath(llvm::StringRef suffix) {
  llvm::SmallString<256> p(outputDir);
  llvm::sys::path::append(p, llvm::sys::path::stem(inputFile) + suffix);
  return std::string(p);
}

/// --shared: links `library` with `driver` ("cc", "c++": the kind of compiler driver, for the message) from
/// `args`, through a temporary file so that a failed link leaves no library. Returns the exit code.
static int linkShared(llvm::StringRef driver, llvm::StringRef kind, const std::string &library,
                      const std::vector<std::string> &args) {
  llvm::ErrorOr<std::string> program = llvm::sys::findProgramByName(driver);
  if (!program)
    return fail("--shared needs " + kind + " compiler driver ('" + driver + "') to link " + library);
  std::string temp = library + ".tmp", errors;
  std::vector<llvm::StringRef> argv = {*program, "-shared", "-o", temp};
  argv.insert(argv.end(), args.begin(), args.end());
  int rc = llvm::sys::ExecuteAndWait(*program, argv, std::nullopt, {}, 0, 0, &errors);
  if (rc != 0 || llvm::sys::fs::rename(temp, library)) {
    llvm::sys::fs::remove(temp);
    return fail("linking " + library + " failed" + (errors.empty() ? "" : ": " + errors));
  }
  return 0;
}

/// --target=cuda: <stem>.ptx, <stem>.cubin (when ptxas is found), <stem>_cuda.h and <stem>_cuda.cpp.
static int compileCuda(ModuleOp module, const std::vector<int64_t> &chunkSizes) {
  std::vector<linac::CudaKernel> kernels;
  std::vector<int64_t> staticDims;
  std::vector<std::string> dims(gpuStaticDims.begin(), gpuStaticDims.end());
  if (dims.empty())
    dims = {"64x64", "128x128", "256x256"};
  for (const std::string &d : dims) {
    if (d == "none")
      continue;
    llvm::StringRef k, v;
    std::tie(k, v) = llvm::StringRef(d).split('x');
    int64_t K = 0, V = 0;
    if (k.getAsInteger(10, K) || v.getAsInteger(10, V) || K < 1 || V < 1 || K > 1024 || V > 1024)
      return fail("--gpu-static-dims takes KxV pairs of head dimensions in [1, 1024], not '" + d + "'");
    staticDims.push_back(K);
    staticDims.push_back(V);
  }
  linac::CudaKernelOptions options;
  options.blockSize = gpuBlockSize;
  options.backwardBlockSize = gpuBackwardBlockSize;
  options.staticDims = staticDims;
  options.split = gpuSplit;
  if (std::string error = notOneOf(gpuIo, {"f32", "bf16", "f16"}); !error.empty())
    return fail(error);
  options.io = gpuIo;
  options.staticSlices = gpuStaticSlices;
  options.boundarySlices = gpuBoundarySlices;
  options.boundaryEvery = gpuBoundaryEvery;
  options.ftzExp2 = gpuFtzExp2;
  options.saveSolves = gpuSaveSolves;
  // bf16 inputs carry 8 significant bits, f16 11: fp32-accurate products (three per step) buy nothing the
  // DESIGN.md tolerance of 16-bit inputs asks for, so they default to one tf32 product (11 bits).
  options.products = gpuProducts.getNumOccurrences() || gpuIo == "f32" ? std::string(gpuProducts) : "tf32";
  options.forwardCopies = gpuForwardCopies;
  options.productChains = gpuProductChains;
  options.splitK = gpuSplitK;
  options.factorGates = gpuFactorGates;
  options.padByPattern = gpuPadByPattern;
  options.wideWarpTiles = gpuWideWarpTiles;
  options.placement = gpuPlacement;
  options.unrollGlobalK = gpuUnrollGlobalK;
  options.fragmentWarps = fragmentWarps();
  options.fragmentBackward = gpuFragmentsBackward;
  options.fragmentPrefetch = gpuFragmentsPrefetch;
  options.productSolves = gpuProductSolves;
  options.substitution = gpuSubstitution;
  options.interleaveTerms = gpuInterleaveTerms;
  options.schedule = gpuSchedule;
  options.phaseBlockSize = gpuPhaseBlockSize;
  options.phaseBlocksPerSm = gpuPhaseBlocksPerSm;
  if (std::string error = notOneOf(gpuPairKernel, {"per-key", "all", "none"}); !error.empty())
    return fail(error);
  options.pairKernel = gpuPairKernel;
  options.tailKernel = gpuTailKernel;
  options.tailBlocksPerSm = gpuTailBlocksPerSm;
  options.pairBlockSize = gpuPairBlockSize;
  options.pairBlocksPerSm = gpuPairBlocksPerSm;
  std::string emulation;
  FailureOr<std::string> ptx =
      linac::emitCudaPtx(module, chunkSizes, options, kernels, gpuEmulation ? &emulation : nullptr);
  if (failed(ptx))
    return 1;
  if (std::error_code ec = llvm::sys::fs::create_directories(outputDir))
    return fail("cannot create '" + outputDir + "': " + ec.message());
  std::string stem = llvm::sys::path::stem(inputFile).str();
  std::string image = *ptx;
  bool cubin = false;
  // ptxas checks the PTX and makes the sm_90a cubin; without it the driver JIT-compiles the PTX at load time.
  llvm::ErrorOr<std::string> ptxas = llvm::sys::findProgramByName("ptxas", {"/usr/local/cuda/bin"});
  if (ptxas) {
    llvm::SmallString<128> ptxFile, cubinFile;
    llvm::sys::fs::createTemporaryFile("linacc", "ptx", ptxFile);
    llvm::sys::fs::createTemporaryFile("linacc", "cubin", cubinFile);
    {
      std::error_code ec;
      llvm::raw_fd_ostream os(ptxFile, ec);
      os << *ptx;
    }
    std::string errors;
    int rc = llvm::sys::ExecuteAndWait(*ptxas, {*ptxas, "-arch=sm_90a", "-O3", ptxFile.str(), "-o", cubinFile.str()},
                                       std::nullopt, {}, 0, 0, &errors);
    auto buffer = llvm::MemoryBuffer::getFile(cubinFile);
    llvm::sys::fs::remove(ptxFile);
    if (rc != 0 || !buffer) {
      llvm::sys::fs::remove(cubinFile);
      return fail("ptxas rejected the generated PTX" + (errors.empty() ? std::string() : ": " + errors));
    }
    image = (*buffer)->getBuffer().str();
    cubin = true;
    llvm::sys::fs::remove(cubinFile);
  }
  std::string header;
  std::string launcher = linac::emitCudaLauncher(kernels, image, cubin, stem, header);
  std::vector<std::pair<std::string, std::string>> files = {
      {outputPath(".ptx"), *ptx}, {outputPath("_cuda.h"), header}, {outputPath("_cuda.cpp"), launcher}};
  if (cubin)
    files.push_back({outputPath(".cubin"), image});
  if (gpuEmulation)
    files.push_back({outputPath("_emu.o"), emulation});
  if (!writeAll(files))
    return 1;
  if (shared) {
    // <stem>_cuda.so: the launchers for dlopen (the runtime's gpu_kernel_library), linked against the driver
    // API (the toolkit's stub at build time, the driver's libcuda.so.1 at run time).
    return linkShared("c++", "a C++", outputPath("_cuda.so"),
                      {"-std=c++17", "-O2", "-fPIC", "-I/usr/local/cuda/include", "-I" + outputDir,
                       outputPath("_cuda.cpp"), "-L/usr/local/cuda/lib64/stubs", "-lcuda"});
  }
  return 0;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::ParseCommandLineOptions(argc, argv, "linac compiler driver\n");
  if (target != "cpu" && target != "cuda")
    return fail("unsupported target '" + target + "' (supported: cpu, cuda)");
  if (gpuEmulation && target != "cuda")
    return fail("--gpu-emulation compiles the GPU kernels for this host as well: it needs --target=cuda");

  auto buffer = llvm::MemoryBuffer::getFile(inputFile);
  if (!buffer)
    return fail("cannot open '" + inputFile + "': " + buffer.getError().message());

  DialectRegistry registry;
  linac::registerDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  context.printOpOnDiagnostic(false);
  int errors = 0;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
    if (diag.getSeverity() == DiagnosticSeverity::Error)
      ++errors;
    const char *kind = diag.getSeverity() == DiagnosticSeverity::Error     ? "error"
                       : diag.getSeverity() == DiagnosticSeverity::Warning ? "warning"
                                                                           : "note";
    llvm::errs() << describe(diag.getLocation()) << ": " << kind << ": " << diag.str() << "\n";
    for (Diagnostic &note : diag.getNotes())
      llvm::errs() << describe(note.getLocation()) << ": note: " << note.str() << "\n";
    return success();
  });

  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(*buffer), llvm::SMLoc());
  OwningOpRef<ModuleOp> module = ModuleOp::create(FileLineColLoc::get(&context, inputFile, 1, 1));
  AsmParserState asmState;
  if (failed(parseAsmSourceFile(sourceMgr, module->getBody(), ParserConfig(&context), &asmState)) ||
      failed(verify(*module)))
    return 1;
  if (module->getBody()->getOperations().size() == 1)
    if (auto inner = dyn_cast<ModuleOp>(module->getBody()->front())) {
      inner->remove();
      module = inner;
    }
  recordArgumentNames(*module, asmState);

  std::vector<linac::EntryPointInfo> entries;
  for (auto rec : module->getOps<linac::RecurrenceOp>())
    entries.push_back(linac::describeEntryPoint(rec, inputFile));
  if (entries.empty())
    return fail("'" + inputFile + "' defines no linac.recurrence");

  linac::CpuOptions options;
  options.tables = entries;
  options.chunkSizes.assign(chunkSizes.begin(), chunkSizes.end());
  if (options.chunkSizes.empty())
    options.chunkSizes = {64};
  for (int64_t size : options.chunkSizes)
    if (size < 1 || size > 1024)
      return fail("chunk size " + std::to_string(size) + " is out of range [1, 1024]");
  std::vector<std::string> variants = {"sequential"};
  for (int64_t size : options.chunkSizes)
    variants.push_back("chunk" + std::to_string(size));
  options.forward = chunked ? variants[1] : variants[0];
  options.backward = !noBackward;
  options.factorGates = cpuFactorGates;
  options.schedule = cpuSchedule;
  options.io = cpuIo;
  std::vector<std::string> backwardVariants;
  if (options.backward)
    backwardVariants.assign(variants.begin() + 1, variants.end());

  if (target == "cuda") {
    // A block size is a multiple of 32 in [32, 1024], or 0 (by kernel: see the options).
    auto validBlockSize = [](int64_t n) { return n >= 32 && n <= 1024 && n % 32 == 0; };
    if (gpuBlockSize && !validBlockSize(gpuBlockSize))
      return fail("--gpu-block-size must be 0 or a multiple of 32 in [32, 1024], not " + std::to_string(gpuBlockSize));
    if (gpuBackwardBlockSize && !validBlockSize(gpuBackwardBlockSize))
      return fail("--gpu-backward-block-size must be 0 or a multiple of 32 in [32, 1024], not " +
                  std::to_string(gpuBackwardBlockSize));
    if (gpuForwardCopies < 0 || gpuForwardCopies > 64)
      return fail("--gpu-forward-copies must be in [0, 64], not " + std::to_string(gpuForwardCopies));
    if (gpuProductChains < 0 || gpuProductChains > 3)
      return fail("--gpu-product-chains must be 0 (by warp tile), 1, 2 or 3, not " + std::to_string(gpuProductChains));
    // The options that take one of a few words; those that name kernels by direction (--gpu-schedule also
    // takes fit).
    const SmallVector<StringRef> modes = {"none", "forward", "all"}, scheduleModes = {"none", "fit", "forward", "all"},
                                 placements = {"accesses", "latency"}, directions = {"auto", "none", "all", "forward", "backward"},
                                 switches = {"auto", "on", "off"}, orders = {"left", "right"};
    for (auto [option, allowed] : {std::pair{&gpuPadByPattern, &modes}, {&gpuWideWarpTiles, &modes},
                                   {&gpuSchedule, &scheduleModes}, {&gpuPlacement, &placements},
                                   {&gpuFtzExp2, &directions}, {&gpuSaveSolves, &switches},
                                   {&gpuProductSolves, &directions}, {&gpuSubstitution, &orders}})
      if (std::string error = notOneOf(*option, *allowed); !error.empty())
        return fail(error);
    if (gpuUnrollGlobalK < 0 || gpuUnrollGlobalK > 16)
      return fail("--gpu-unroll-global-k must be in [0, 16], not " + std::to_string(gpuUnrollGlobalK));
    if (gpuFragments < -1 || gpuFragments > 32 || (gpuFragments > 0 && (gpuFragments & (gpuFragments - 1))))
      return fail("--gpu-fragments must be 0 (off) or a power of two up to 32, not " + std::to_string(gpuFragments));
    // Without these the option would lower nothing (its products are bf16: the 16-bit I/O class).
    if (gpuFragments > 0 && gpuIo != "bf16")
      return fail("--gpu-fragments takes bf16 kernels only: add --gpu-io=bf16");
    if (gpuFragmentsBackward.getNumOccurrences() && gpuFragmentsBackward && !fragmentWarps())
      return fail("--gpu-fragments-backward needs --gpu-fragments=W (on by default with --gpu-io=bf16)");
    if (gpuFragmentsPrefetch.getNumOccurrences() && gpuFragmentsPrefetch && !fragmentWarps())
      return fail("--gpu-fragments-prefetch needs --gpu-fragments=W (on by default with --gpu-io=bf16)");
    if (gpuSplitK < 1 || gpuSplitK > 32 || (gpuSplitK & (gpuSplitK - 1)))
      return fail("--gpu-split-k must be a power of two in [1, 32], not " + std::to_string(gpuSplitK));
    return compileCuda(*module, options.chunkSizes);
  }

  if (std::string error = notOneOf(cpuIo, {"f32", "bf16", "f16"}); !error.empty())
    return fail(error);
  std::string llvmIR;
  FailureOr<std::string> object = linac::emitCpuObject(*module, options, llvmIR);
  if (failed(object) || errors)
    return 1;

  if (std::error_code ec = llvm::sys::fs::create_directories(outputDir))
    return fail("cannot create '" + outputDir + "': " + ec.message());
  std::string stem = llvm::sys::path::stem(inputFile).str();
  auto path = [&](llvm::StringRef ext) {
    llvm::SmallString<256> p(outputDir);
    llvm::sys::path::append(p, stem + ext);
    return std::string(p);
  };
  std::vector<std::pair<std::string, std::string>> files = {{path(".o"), *object},
                                                            {path(".h"), linac::emitCHeader(entries, variants, options.forward, backwardVariants, stem, cpuIo)}};
  llvm::SmallString<256> abiPath(outputDir);
  llvm::sys::path::append(abiPath, "linac_abi.h");
  files.push_back({std::string(abiPath), linac::emitAbiHeader()});
  if (emitLLVM)
    files.push_back({path(".ll"), llvmIR});
  if (!writeAll(files))
    return 1;
  return shared ? linkShared("cc", "a C", path(".so"), {path(".o"), "-lm"}) : 0;
}
