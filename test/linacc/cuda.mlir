// linacc --target=cuda: PTX for sm_90a, the cubin ptxas makes of it, and a driver-API launcher.
// RUN: rm -rf %t && linacc %examples/gla.mlir --target=cuda --chunk-sizes=64,16 --gpu-static-dims=128x128 --gpu-split --shared -o %t
// RUN: FileCheck %s --input-file=%t/gla.ptx --check-prefix=PTX
// RUN: test -s %t/gla.cubin
// RUN: FileCheck %s --input-file=%t/gla_cuda.h --check-prefix=HEADER
// RUN: FileCheck %s --input-file=%t/gla_cuda.cpp --check-prefix=LAUNCHER
// RUN: nm -D --defined-only %t/gla_cuda.so | FileCheck %s --check-prefix=SO
// The split of a scalar-gate recurrence: its chain kernels' masked loads fold to constants late in the device
// pipeline (arith-to-llvm runs again after convert-gpu-to-nvvm); RetNet, DeltaNet and GDN failed to translate.
// RUN: rm -rf %t.split && linacc %examples/retnet.mlir --target=cuda --chunk-sizes=32 --gpu-static-dims=none --gpu-split -o %t.split
// RUN: test -s %t.split/retnet.cubin
// The default (no split): one kernel per direction and chunk size, the same API.
// RUN: rm -rf %t.whole && linacc %examples/gla.mlir --target=cuda --chunk-sizes=64 --gpu-static-dims=128x128 --gpu-pair-kernel=none -o %t.whole
// RUN: FileCheck %s --input-file=%t.whole/gla_cuda.cpp --check-prefix=WHOLE
// RUN: FileCheck %s --input-file=%t.whole/gla_cuda.cpp --check-prefix=WHOLEOWNS
// The backward after a kernel of its own for the boundary states (an experiment): its launcher runs both.
// RUN: rm -rf %t.bound && linacc %examples/retnet.mlir --target=cuda --chunk-sizes=32 --gpu-static-dims=none --gpu-boundary-slices=2 -o %t.bound
// RUN: FileCheck %s --input-file=%t.bound/retnet_cuda.cpp --check-prefix=BOUND
// RUN: rm -rf %t.every && linacc %examples/retnet.mlir --target=cuda --chunk-sizes=32 --gpu-static-dims=none --gpu-boundary-every=2 -o %t.every
// RUN: FileCheck %s --input-file=%t.every/retnet_cuda.cpp --check-prefix=EVERY
// The delta rule's solves kept beside the boundary states: both in-order kernels say so (the buffers' sizes).
// RUN: rm -rf %t.solves && linacc %examples/gated_deltanet.mlir --target=cuda --chunk-sizes=32 --gpu-static-dims=none --gpu-save-solves=on -o %t.solves
// RUN: FileCheck %s --input-file=%t.solves/gated_deltanet_cuda.cpp --check-prefix=SOLVES
// HGRN (a vector state, per-channel gates): the plain forward at chunk 32, the backward and the training pair at 16.
// RUN: rm -rf %t.hgrn && linacc %examples/hgrn.mlir --target=cuda --chunk-sizes=32,16 --gpu-static-dims=none -o %t.hgrn
// RUN: FileCheck %s --input-file=%t.hgrn/hgrn_cuda.cpp --check-prefix=HGRN
// The fast exponentials (the fragment kernels' exp2) as the ftz intrinsic, but in the delta rule's backwards.
// RUN: rm -rf %t.ftz && linacc %examples/gated_deltanet.mlir --target=cuda --chunk-sizes=32 --gpu-static-dims=64x64 --gpu-io=bf16 -o %t.ftz
// RUN: FileCheck %s --input-file=%t.ftz/gated_deltanet.ptx --check-prefix=FTZ
// RUN: rm -rf %t.pairs && linacc %examples/gla.mlir --target=cuda --chunk-sizes=16 --gpu-static-dims=128x128 -o %t.pairs
// RUN: FileCheck %s --input-file=%t.pairs/gla_cuda.cpp --check-prefix=PAIRS
// bf16 I/O: the header says which buffers are bf16, and the products default to one tf32 product.
// RUN: rm -rf %t.bf16 && linacc %examples/gla.mlir --target=cuda --chunk-sizes=32 --gpu-static-dims=none --gpu-io=bf16 -o %t.bf16
// RUN: FileCheck %s --input-file=%t.bf16/gla_cuda.h --check-prefix=BF16
// RUN: FileCheck %s --input-file=%t.bf16/gla.ptx --check-prefix=BF16PTX
// RUN: rm -rf %t.bf16x3 && linacc %examples/gla.mlir --target=cuda --chunk-sizes=32 --gpu-static-dims=none --gpu-io=bf16 --gpu-products=tf32x3 -o %t.bf16x3
// RUN: FileCheck %s --input-file=%t.bf16x3/gla_cuda.h --check-prefix=BF16X3
// RUN: rm -rf %t.f16 && linacc %examples/gla.mlir --target=cuda --chunk-sizes=32 --gpu-static-dims=none --gpu-io=f16 -o %t.f16
// RUN: FileCheck %s --input-file=%t.f16/gla_cuda.h --check-prefix=F16
// RUN: FileCheck %s --input-file=%t.f16/gla.ptx --check-prefix=F16PTX
// The same kernels for this host, which the CUDA driver emulator runs (docs/emulation.md).
// RUN: rm -rf %t.emu && linacc %examples/retnet.mlir --target=cuda --chunk-sizes=32 --gpu-static-dims=none --gpu-emulation -o %t.emu
// RUN: nm %t.emu/retnet_emu.o | FileCheck %s --check-prefix=EMU
// RUN: not linacc %examples/retnet.mlir --gpu-emulation -o %t.emu 2>&1 | FileCheck %s --check-prefix=EMUCPU
// RUN: not linacc %examples/retnet.mlir --target=cuda --gpu-fragments=16 -o %t.frag 2>&1 | FileCheck %s --check-prefix=FRAGIO
// RUN: not linacc %examples/retnet.mlir --target=cuda --gpu-io=bf16 --gpu-fragments=0 --gpu-fragments-backward -o %t.frag 2>&1 | FileCheck %s --check-prefix=FRAGBACK
// RUN: not linacc %examples/retnet.mlir --target=cuda --gpu-fragments-prefetch -o %t.frag 2>&1 | FileCheck %s --check-prefix=FRAGPRE
// RUN: not linacc %examples/retnet.mlir --target=cuda --gpu-io=bf16 --gpu-fragments=12 -o %t.frag 2>&1 | FileCheck %s --check-prefix=FRAGWARPS
// BF16: the per-token inputs, out and dout
// BF16-NEXT: bf16 (linacc --gpu-io=bf16), states, per-head inputs and dinputs fp32
// BF16: static const char linac_gla_cuda_products[] = "tf32";
// BF16-NEXT: extern const char linac_gla_cuda_io[]; /* "bf16": the launchers' I/O type */
// BF16PTX: ld.global.b16
// BF16PTX: cvt.f32.bf16
// BF16PTX: cvt.rn.bf16.f32
// BF16PTX: st.global.b16
// BF16X3: static const char linac_gla_cuda_products[] = "tf32x3";
// BF16X3-NEXT: extern const char linac_gla_cuda_io[]; /* "bf16": the launchers' I/O type */
// F16: the per-token inputs, out and dout
// F16-NEXT: f16 (linacc --gpu-io=f16), states, per-head inputs and dinputs fp32
// F16: static const char linac_gla_cuda_products[] = "tf32";
// F16-NEXT: extern const char linac_gla_cuda_io[]; /* "f16": the launchers' I/O type */
// F16PTX: ld.global.b16
// F16PTX: cvt.f32.f16
// F16PTX: cvt.rn.f16.f32
// F16PTX: st.global.b16
// The fixed-size backward stores its per-token gradients (the launcher does not zero them); the generic adds.
// WHOLEOWNS: const Kernel k{{[0-9]+}}_128x128 = {"linac_gla_backward_chunk64_k128_v128",
// WHOLEOWNS: }, 128, 128, 1, 0, 1, "1111", 1, false};
// WHOLEOWNS-NEXT: const Kernel k{{[0-9]+}} = {"linac_gla_backward_chunk64",
// WHOLEOWNS: }, 0, 0, 1, 0, 1, "", 1, false};
// BOUND: const Kernel k1 = {"linac_retnet_backward_chunk32_boundaries", 3, "tK,tK,tV", 32, true, 1024,
// BOUND: CUresult linac_retnet_cuda_backward_chunk32(
// BOUND: return backward(p2, stream, {{.*}}, scale, &p1, 2);
// --gpu-boundary-every=R: the in-order kernels record R (the last field), by which the launcher sizes the saved
// states and the backward's boundary scratch (N + ceil(tokens / (C R)) + 1 slots).
// EVERY: int64_t boundarySlots(const Kernel &k, int64_t N, int64_t tokens) {
// EVERY-NEXT: int64_t span = k.chunk * k.boundaryEvery;
// EVERY: int64_t boundaryFloats(const Kernel &k, int64_t N, int64_t tokens, int64_t H, int64_t stateSize, int64_t V) {
// EVERY-NEXT: return boundarySlots(k, N, tokens) * H * stateSize + (k.savedSolves ? chunkSlots(k, N, tokens) * H * k.chunk * V : 0);
// EVERY: return boundaryFloats(k, N, varlen ? T : N * T, H, k.matrix ? K * V : K, V);
// EVERY: scratch.alloc(k, &boundaryScratch, size_t(boundaryFloats(k, N, tokens, H, stateSize, V)))
// EVERY: const Kernel k0 = {"linac_retnet_forward_chunk32",
// EVERY: }, 0, 0, 1, 0, 1, "", 2, false};
// EVERY: const Kernel k1 = {"linac_retnet_backward_chunk32",
// EVERY: }, 0, 0, 1, 0, 1, "", 2, false};
// FTZ: .visible .entry linac_gated_deltanet_forward_chunk32_k64_v64(
// FTZ-NOT: ex2.approx.f32
// FTZ: ex2.approx.ftz.f32
// FTZ-NOT: ex2.approx.f32
// FTZ: .visible .entry linac_gated_deltanet_backward_chunk32_k64_v64(
// FTZ: ex2.approx.f32
// HGRN: CUresult linac_hgrn_cuda_forward(
// HGRN: return linac_hgrn_cuda_forward_chunk32(
// HGRN: CUresult linac_hgrn_cuda_backward(
// HGRN: return linac_hgrn_cuda_backward_chunk16(
// HGRN: CUresult linac_hgrn_cuda_forward_saving(
// HGRN: return linac_hgrn_cuda_forward_chunk16_saving(
// HGRN: CUresult linac_hgrn_cuda_backward_saved(
// HGRN: return linac_hgrn_cuda_backward_chunk16_saved(
// HGRN: size_t linac_hgrn_cuda_saved_floats(
// HGRN: return linac_hgrn_cuda_forward_chunk16_saved_floats(
// SOLVES: const Kernel k0 = {"linac_gated_deltanet_forward_chunk32",
// SOLVES: }, 0, 0, 1, 0, 1, "", 1, true};
// SOLVES: const Kernel k1 = {"linac_gated_deltanet_backward_chunk32",
// SOLVES: }, 0, 0, 1, 0, 1, "", 1, true};
// --gpu-pair-kernel=per-key (the default) for GLA's per-key gates: the backward's launchers run the in-order
// backward (whose fixed-size copy stores every per-token gradient once), then the pairs kernel (which adds into
// them, storing none of its own).
// PAIRS: const Kernel k[[PAIRS:[0-9]+]]_128x128 = {"linac_gla_backward_chunk16_pairs_k128_v128",
// PAIRS: }, 128, 128, 1, 0, 1, "", 1, false};
// PAIRS: const Kernel k[[BACKWARD:[0-9]+]]_128x128 = {"linac_gla_backward_chunk16_k128_v128",
// PAIRS: }, 128, 128, 1, 0, 1, "1111", 1, false};
// PAIRS: CUresult linac_gla_cuda_backward_chunk16(
// PAIRS: return backward(p[[BACKWARD]], stream, {{.*}}, scale, nullptr, 1, 0, &p[[PAIRS]]);
// PAIRS: CUresult linac_gla_cuda_backward_chunk16_saved(
// PAIRS: return backward(p[[BACKWARD]], stream, {{.*}}, scale, nullptr, 1, saved, &p[[PAIRS]]);
// WHOLE: const Kernel k0_128x128 = {"linac_gla_forward_chunk64_k128_v128",
// WHOLE: CUresult linac_gla_cuda_forward_chunk64(
// WHOLE-NEXT: CUdeviceptr ht,
// WHOLE-NEXT: int64_t V, float scale) {
// WHOLE-NEXT: return forward(p0, stream,
// The training pair: the forward stores each chunk's initial state in `saved`, the backward reads them there.
// WHOLE: CUresult linac_gla_cuda_forward_chunk64_saving(
// WHOLE: return forward(p0, stream, {{.*}}, scale, saved);
// WHOLE: size_t linac_gla_cuda_forward_chunk64_saved_floats(int64_t N, int64_t T, int64_t H, int64_t K, int64_t V, int varlen) {
// WHOLE-NEXT: return size_t(savedFloats(k0, N, T, H, K, V, varlen != 0));
// WHOLE: CUresult linac_gla_cuda_backward_chunk64(
// WHOLE: return backward(p{{[0-9]+}}, stream,
// WHOLE: CUresult linac_gla_cuda_backward_chunk64_saved(
// WHOLE: return backward(p{{[0-9]+}}, stream, {{.*}}, scale, nullptr, 1, saved);
// WHOLE: CUresult linac_gla_cuda_backward_saved(
// WHOLE: return linac_gla_cuda_backward_chunk64_saved(stream, inputs, h0, dout, dht, dinputs, dh0, cu_seqlens, N, T, H, K, V, scale, saved);
// WHOLE: size_t linac_gla_cuda_saved_floats(int64_t N, int64_t T, int64_t H, int64_t K, int64_t V, int varlen) {
// WHOLE-NEXT: return linac_gla_cuda_forward_chunk64_saved_floats(N, T, H, K, V, varlen);

// PTX: .target sm_90a
// The chunk-parallel split: before, chain and after kernels per direction and chunk size.
// PTX-DAG: .entry linac_gla_forward_chunk64_before(
// PTX-DAG: .entry linac_gla_forward_chunk64_chain(
// PTX-DAG: .entry linac_gla_forward_chunk64_after(
// PTX-DAG: .entry linac_gla_forward_chunk16_chain(
// PTX-DAG: .entry linac_gla_backward_chunk64_after(
// PTX-DAG: .entry linac_gla_backward_chunk16_before(
// PTX-DAG: .entry linac_gla_forward_chunk64_chain_k128_v128(
// PTX-DAG: .entry linac_gla_backward_chunk16_after_k128_v128(
// PTX-DAG: bar.sync
// PTX-DAG: atom.global.add.f32

// HEADER: #include <cuda.h>
// HEADER: extern "C" {
// HEADER: const char *linac_gla_cuda_error(void);
// HEADER: CUresult linac_gla_cuda_forward_chunk64(CUstream stream, const CUdeviceptr *inputs, CUdeviceptr out,
// HEADER: CUresult linac_gla_cuda_backward_chunk64(CUstream stream, const CUdeviceptr *inputs, CUdeviceptr h0, CUdeviceptr dout,
// HEADER-NEXT: CUdeviceptr dht, const CUdeviceptr *dinputs, CUdeviceptr dh0, CUdeviceptr cu_seqlens,
// The unsuffixed launchers choose the chunk size: a matrix state with per-key gates runs chunk 16 up to
// K = V = 128 (where it is compiled), else 32, or here, without 32, the first compiled size.
// HEADER: /* linac_gla_cuda_forward / _backward run the chunk size linacc chooses for gla: chunk 16 where K * V <= 128 * 128, else chunk 64. */
// HEADER-NEXT: CUresult linac_gla_cuda_forward(CUstream stream,
// HEADER: CUresult linac_gla_cuda_backward(CUstream stream,
// What the recurrence is, for callers that size work by it: state rank and transition class.
// HEADER: enum { linac_gla_cuda_state_rank = 2 };
// HEADER-NEXT: static const char linac_gla_cuda_transition[] = "token_per_key";
// HEADER-NEXT: static const char linac_gla_cuda_products[] = "tf32x3";
// HEADER-NEXT: extern const char linac_gla_cuda_io[]; /* "f32": the launchers' I/O type */
// The fixed-size copies are the launchers' business, not the API's.
// HEADER-NOT: _k128_v128

// --shared links the launchers into gla_cuda.so (for the runtime's gpu_kernel_library), C symbols named apart
// from the CPU entry points (linac_gla_forward_chunk64), so that both link into one program.
// SO-DAG: T linac_gla_cuda_backward
// SO-DAG: T linac_gla_cuda_forward
// SO-DAG: T linac_gla_cuda_backward_chunk16
// SO-DAG: T linac_gla_cuda_backward_chunk64
// SO-DAG: T linac_gla_cuda_error
// SO-DAG: T linac_gla_cuda_forward_chunk16
// SO-DAG: T linac_gla_cuda_forward_chunk64
// SO-DAG: R linac_gla_cuda_io

// LAUNCHER: // The cubin image,
// LAUNCHER: cuModuleLoadData
// LAUNCHER: CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
// LAUNCHER: cuLaunchKernel(function, unsigned(gx), unsigned(gy), unsigned(Z), k.blockSize, 1, 1,
// LAUNCHER-NEXT: unsigned(shared)
// LAUNCHER: if (scope == 't' && !varlen && storesGradient(k, i))
// LAUNCHER-NEXT: continue;
// LAUNCHER: cuMemsetD32Async(dinputs[i], 0
// Each kernel knows its tile slots' sizes as functions of K, V and the value slices Z, in layout order; the
// input layout sizes the gradients the backward zeroes: q, k, v per token; the per-key gate g per token.
// The fixed-size copy for K = V = 128 comes first: every slot size a constant; launches with those sizes
// and one value slice take it.
// LAUNCHER: const Kernel k0_128x128 = {"linac_gla_forward_chunk64_before_k128_v128", 4, "tK,tK,tV,tK", 64, true, 1024,
// LAUNCHER: }, 128, 128, 1, 0, 1, "", 1, false};
// LAUNCHER: const Kernel k0 = {"linac_gla_forward_chunk64_before", 4, "tK,tK,tV,tK", 64, true, 1024,
// LAUNCHER: return std::vector<int64_t>{
// LAUNCHER: const Kernel *const k0_fixed[] = {&k0_128x128, nullptr};
// The before kernel's frontier: GLA's chain reads the chunk's decay (1 x K) and the decayed keys (C x K) it
// forms its K x V update from (a state-sized tile is computed by the chain, not stored a chunk).
// LAUNCHER: int64_t frontier0(int64_t K, int64_t V) {
// LAUNCHER-NEXT: (void)K, (void)V;
// LAUNCHER-NEXT: return 1 * K + 64 * K;
// LAUNCHER: CUresult linac_gla_cuda_forward_chunk64(
// LAUNCHER: static const Split f = {p0, p2, p4, frontier0};
// LAUNCHER-NEXT: return forwardSplit(f, stream,
// The backward runs the forward's before and chain kernels for the boundary states, then its own three.
// The split saves nothing: its training pair runs as the plain launchers.
// LAUNCHER: size_t linac_gla_cuda_forward_chunk64_saved_floats(
// LAUNCHER-NEXT: return 0;
// LAUNCHER: CUresult linac_gla_cuda_backward_chunk64(
// LAUNCHER: static const Split f = {p0, p2, p4, frontier0}, b = {p6, p8, p10, frontier6};
// LAUNCHER-NEXT: return backwardSplit(f, b, stream,
// LAUNCHER: CUresult linac_gla_cuda_backward_chunk64_saved(
// LAUNCHER: (void)saved;
// LAUNCHER: return backwardSplit(f, b, stream,
// LAUNCHER: CUresult linac_gla_cuda_forward(CUstream stream,
// LAUNCHER: if (K * V <= 128 * 128)
// LAUNCHER-NEXT: return linac_gla_cuda_forward_chunk16(stream, inputs, out, h0, ht, cu_seqlens, N, T, H, K, V, scale);
// LAUNCHER-NEXT: return linac_gla_cuda_forward_chunk64(stream, inputs, out, h0, ht, cu_seqlens, N, T, H, K, V, scale);
// LAUNCHER: CUresult linac_gla_cuda_backward(CUstream stream,
// LAUNCHER: return linac_gla_cuda_backward_chunk64(

// EMU-DAG: t __linac_emu_entry_linac_retnet_forward_chunk32
// EMU-DAG: t __linac_emu_entry_linac_retnet_backward_chunk32
// EMU-DAG: U linac_emu_register
// EMU-DAG: U linac_emu_barrier
// EMU-DAG: U linac_emu_mma
// EMU-DAG: U linac_emu_thread_id
// EMUCPU: error: --gpu-emulation compiles the GPU kernels for this host as well: it needs --target=cuda

// FRAGIO: --gpu-fragments takes bf16 kernels only: add --gpu-io=bf16
// FRAGBACK: --gpu-fragments-backward needs --gpu-fragments=W (on by default with --gpu-io=bf16)
// FRAGPRE: --gpu-fragments-prefetch needs --gpu-fragments=W (on by default with --gpu-io=bf16)
// FRAGWARPS: --gpu-fragments must be 0 (off) or a power of two up to 32, not 12
