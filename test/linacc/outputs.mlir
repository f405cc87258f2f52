// linacc writes the object, the header describing the entry point, and the shared ABI header.
// RUN: rm -rf %t && linacc %examples/rwkv6.mlir --target=cpu -o %t --emit-llvm
// RUN: FileCheck %s --input-file=%t/rwkv6.h
// RUN: FileCheck %s --input-file=%t/linac_abi.h --check-prefix=ABI
// RUN: FileCheck %s --input-file=%t/rwkv6.ll --check-prefix=IR
// RUN: test -s %t/rwkv6.o

// CHECK: #include "linac_abi.h"
// CHECK: void linac_rwkv6_forward(const float *const *inputs, float *out, const float *h0, float *ht,
// CHECK: enum { linac_rwkv6_num_inputs = 5, linac_rwkv6_state_rank = 2 };
// CHECK-NEXT: static const linac_input_desc linac_rwkv6_inputs[] = {
// CHECK-NEXT: {"r", LINAC_TOKEN_KEY}, /* [B,T,H,K] */
// CHECK-NEXT: {"k", LINAC_TOKEN_KEY}, /* [B,T,H,K] */
// CHECK-NEXT: {"v", LINAC_TOKEN_VALUE}, /* [B,T,H,V] */
// CHECK-NEXT: {"w", LINAC_TOKEN_KEY}, /* [B,T,H,K] */
// CHECK-NEXT: {"u", LINAC_HEAD_KEY}, /* [H,K] */

// ABI: typedef void (*linac_forward_fn)

// IR: define void @linac_rwkv6_forward(ptr
// IR: call float @llvm.exp.f32
