// linacc writes the object, the header describing the entry point, and the shared ABI header.
// RUN: rm -rf %t && linacc %examples/rwkv6.mlir --target=cpu -o %t --emit-llvm
// RUN: FileCheck %s --input-file=%t/rwkv6.h
// RUN: FileCheck %s --input-file=%t/linac_abi.h --check-prefix=ABI
// RUN: FileCheck %s --input-file=%t/rwkv6.ll --check-prefix=IR
// RUN: test -s %t/rwkv6.o
// RUN: llvm-nm %t/rwkv6.o | FileCheck %s --check-prefix=SYMBOLS
// RUN: linacc %examples/gla.mlir --target=cpu --chunked --chunk-sizes=32,16 -o %t
// RUN: FileCheck %s --input-file=%t/gla.h --check-prefix=CHUNKED
// RUN: not linacc %examples/gla.mlir --target=cpu --chunk-sizes=0 -o %t 2>&1 | FileCheck %s --check-prefix=BADSIZE
// RUN: linacc %examples/rwkv6.mlir --target=cpu --shared -o %t/so
// RUN: llvm-nm -D %t/so/rwkv6.so | FileCheck %s --check-prefix=SHARED
// RUN: linacc %examples/gla.mlir --target=cpu --no-backward -o %t/nobw
// RUN: llvm-nm %t/nobw/gla.o | FileCheck %s --check-prefix=NOBW
// RUN: linacc %examples/gla.mlir --target=cpu --cpu-io=bf16 -o %t/bf16 --emit-llvm
// RUN: FileCheck %s --input-file=%t/bf16/gla.h --check-prefix=BF16
// RUN: FileCheck %s --input-file=%t/bf16/gla.ll --check-prefix=BF16IR
// RUN: llvm-nm %t/bf16/gla.o | FileCheck %s --check-prefix=BF16SYMBOLS
// RUN: not linacc %examples/gla.mlir --target=cpu --cpu-io=fp8 -o %t/fp8 2>&1 | FileCheck %s --check-prefix=BADIO
// RUN: not linac-opt %examples/gla.mlir -linac-chunk="io-type=fp8" 2>&1 | FileCheck %s --check-prefix=BADCHUNKIO

// NOBW-NOT: backward

// A shared library carries the input table as data, so dlopen users need no header.
// SHARED-DAG: T linac_rwkv6_backward_chunk64
// SHARED-DAG: T linac_rwkv6_forward_chunk64
// SHARED-DAG: R linac_rwkv6_io
// SHARED-DAG: R linac_rwkv6_input_names
// SHARED-DAG: R linac_rwkv6_table

// SYMBOLS-DAG: T linac_rwkv6_forward{{$}}
// SYMBOLS-DAG: T linac_rwkv6_forward_sequential
// SYMBOLS-DAG: T linac_rwkv6_forward_chunk64
// SYMBOLS-DAG: T linac_rwkv6_backward{{$}}
// SYMBOLS-DAG: T linac_rwkv6_backward_chunk64

// CHUNKED: linac_gla_forward runs the chunk32 variant.
// CHUNKED: void linac_gla_forward_chunk32(
// CHUNKED: void linac_gla_forward_chunk16(

// BADSIZE: linacc: error: chunk size 0 is out of range [1, 1024]

// CHECK: #include "linac_abi.h"
// CHECK: linac_rwkv6_forward runs the sequential variant.
// CHECK-NEXT: void linac_rwkv6_forward(const float *const *inputs, float *out, const float *h0,
// CHECK: void linac_rwkv6_forward_sequential(
// CHECK: void linac_rwkv6_forward_chunk64(
// CHECK: linac_rwkv6_backward runs the chunk64 variant.
// CHECK-NEXT: void linac_rwkv6_backward(const float *const *inputs, const float *h0,
// CHECK: void linac_rwkv6_backward_chunk64(
// CHECK: enum { linac_rwkv6_num_inputs = 5, linac_rwkv6_state_rank = 2 };
// CHECK-NEXT: extern const char linac_rwkv6_io[]; /* "f32": the I/O type of every entry point */
// CHECK-NEXT: static const linac_input_desc linac_rwkv6_inputs[] = {
// The decay's gate w is a log decay (log-sigmoid), derived from its role; the others come as they are.
// CHECK-NEXT: {"r", LINAC_TOKEN_KEY, LINAC_ACT_NONE}, /* [B,T,H,K] */
// CHECK-NEXT: {"k", LINAC_TOKEN_KEY, LINAC_ACT_NONE}, /* [B,T,H,K] */
// CHECK-NEXT: {"v", LINAC_TOKEN_VALUE, LINAC_ACT_NONE}, /* [B,T,H,V] */
// CHECK-NEXT: {"w", LINAC_TOKEN_KEY, LINAC_ACT_LOG_SIGMOID}, /* [B,T,H,K] */
// CHECK-NEXT: {"u", LINAC_HEAD_KEY, LINAC_ACT_NONE}, /* [H,K] */

// ABI: enum linac_activation {
// ABI-NEXT: LINAC_ACT_NONE, LINAC_ACT_LOG_SIGMOID, LINAC_ACT_SIGMOID, LINAC_ACT_L2_NORMALIZE
// ABI: enum linac_activation activation;
// ABI: typedef void (*linac_forward_fn)
// ABI: typedef void (*linac_backward_fn)

// IR: define void @linac_rwkv6_forward_sequential(ptr
// IR: call float @llvm.exp.f32
// IR: define void @linac_rwkv6_forward(ptr

// 16-bit I/O on the CPU (--cpu-io): the header says which buffers hold bf16 bits; the object loads them as
// bf16 and widens, rounds the output with integer arithmetic (arith-expand: no __truncsfbf2, which GCC 12's
// libgcc lacks) and needs nothing but libc and libm.
// BF16: 16-bit I/O: the per-token inputs, out and dout are bf16 buffers
// BF16: extern const char linac_gla_io[]; /* "bf16": the I/O type of every entry point */
// BF16IR: define void @linac_gla_forward_chunk64(
// BF16IR: load i16
// BF16SYMBOLS-NOT: bf2
// BADIO: linacc: error: --cpu-io must be f32, bf16 or f16, not 'fp8'
// BADCHUNKIO: linac-chunk: io-type must be f32, bf16 or f16, not 'fp8'
