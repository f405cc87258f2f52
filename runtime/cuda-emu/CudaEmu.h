// The CUDA driver emulator's hooks: what the host copies of the GPU kernels (linacc --gpu-emulation,
// lib/Target/CudaEmulation.cpp, which declares the same signatures in MLIR) call in place of the GPU's own
// operations. docs/emulation.md.
#ifndef LINAC_RUNTIME_CUDA_EMU_CUDAEMU_H
#define LINAC_RUNTIME_CUDA_EMU_CUDAEMU_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Registers a kernel's entry under its name (static constructors of the <stem>_emu.o objects); entry(params)
/// runs one GPU thread, reading its arguments as cuLaunchKernel's kernelParams.
void linac_emu_register(const char *name, void (*entry)(void **params));
/// The calling thread's index, its block's, the block's size and the grid's, for dim 0, 1, 2 = x, y, z.
int64_t linac_emu_thread_id(int32_t dim);
int64_t linac_emu_block_id(int32_t dim);
int64_t linac_emu_block_dim(int32_t dim);
int64_t linac_emu_grid_dim(int32_t dim);
/// __syncthreads for the whole block.
void linac_emu_barrier(void);
/// A warp shuffle of 32-bit `bits` (mode 0 xor, 1 up, 2 down, 3 idx; PTX shfl.sync's lane rules):
/// (valid << 32) | result bits.
int64_t linac_emu_shuffle(int32_t mode, int32_t bits, int32_t offset, int32_t width);
/// A warp's mma.sync (kind 0: m16n8k8 tf32, 1: m16n8k16 bf16, 2: m16n8k16 f16; row.col, f32 accumulators):
/// frag[0..3] A, [4..5] B, [6..9] C, and D written to [10..13], with the PTX fragment layouts.
void linac_emu_mma(int32_t kind, uint32_t *frag);
/// A warp's ldmatrix.m8n8.b16 of `matrices` (1, 2, 4) 8 x 8 matrices, transposed (.trans) or not: `row` is the
/// shared-memory address of the row this lane gives (lanes 8i .. 8i + 7: matrix i's rows); out[i] receives the
/// lane's word of matrix i (PTX fragment layout).
void linac_emu_ldmatrix(int32_t matrices, int32_t transposed, const void *row, uint32_t *out);
/// The block's dynamic shared memory and its size in bytes.
void *linac_emu_shared(void);
int32_t linac_emu_shared_size(void);
/// cp.async of `bytes` (4, 8 or 16) from global `src` to shared `dst`: the destination reads as all ones bits (a
/// NaN) until the thread waits for the copy's group; then it holds the source's bytes.
void linac_emu_cp_async(void *dst, const void *src, int32_t bytes);
/// cp.async.commit_group: the thread's copies since the last commit form a group.
void linac_emu_cp_async_commit(void);
/// cp.async.wait_group n: every group but the newest n is complete.
void linac_emu_cp_async_wait(int32_t n);
/// The last launch failure's description (also printed and returned by cuGetErrorString).
const char *linac_emu_last_error(void);

#ifdef __cplusplus
}
#endif

#endif
