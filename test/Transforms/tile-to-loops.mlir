// RUN: linac-opt %s -linac-tile-to-loops | FileCheck %s
// RUN: linac-opt %s -linac-tile-to-loops | FileCheck %s --check-prefix=FUSED
// RUN: linac-opt %s -linac-tile-to-loops | FileCheck %s --check-prefix=BLOCKED
// RUN: linac-opt %s -linac-tile-to-loops | FileCheck %s --check-prefix=EPILOGUE

// CHECK-LABEL: func.func @tiles
// Each tile is a heap buffer freed at the end of its block.
// CHECK: %[[X:.*]] = memref.alloc(%{{.*}}, %{{.*}}) : memref<?x?xf32>
// Loads zero-fill rows at or past `valid`: they read row valid - 1 (no branch per element) and select zero.
// CHECK: %[[LAST:.*]] = arith.maxsi
// CHECK: scf.for
// CHECK: arith.minsi %{{.*}}, %[[LAST]]
// CHECK: %[[V:.*]] = memref.load %arg0
// CHECK: %[[IN:.*]] = arith.cmpi slt
// CHECK: arith.select %[[IN]], %[[V]], %cst
// The cumulative sum runs down each column with a carried partial sum.
// CHECK: scf.for {{.*}} iter_args
// Per-key gated products: exp(gx - gy) inside the reduction, masked to j < i.
// CHECK: arith.cmpi slt
// CHECK: scf.if
// CHECK: scf.for {{.*}} iter_args
// CHECK: arith.subf
// CHECK: math.exp
// Forward substitution for the unit lower-triangular solve in blocks of 16 rows: the solved rows' share as
// a product, then within the block columns independent, rows in order.
// CHECK: arith.ceildivsi %{{.*}}, %c16
// CHECK: scf.for
// CHECK: scf.for {{.*}} iter_args
// CHECK: arith.subf
// CHECK: scf.for
// CHECK: scf.for {{.*}} iter_args
// Elementwise ops apply to elements.
// CHECK: arith.mulf {{.*}} : f32
// CHECK: memref.dealloc
// CHECK-NOT: linac.tile
// CHECK-NOT: tensor<
func.func @tiles(%buf: memref<?xf32>, %n: index, %k: index, %valid: index) {
  %c0 = arith.constant 0 : index
  %x = linac.tile.load %buf[%c0] stride %k shape(%n, %k) valid %valid : memref<?xf32>
  %b = linac.tile.cumsum %x
  %a = linac.tile.gated_dot %x, %x gates(%b, %b) mask strict_lower
  %w = linac.tile.tri_solve %a, %x
  %p = arith.mulf %w, %x : tensor<?x?xf32>
  linac.tile.store %p, %buf[%c0] stride %k valid %valid : memref<?xf32>
  return
}

// The elementwise product has one reader, the store: it gets no buffer and no loop of its own, the store's loop
// computes it (four buffers: x, b, a, w).
// FUSED-COUNT-4: memref.alloc
// FUSED-NOT: memref.alloc
// FUSED: func.func @blocked_product

// CPU products in 4 x 4 blocks of outputs with their sums in registers (16 loop-carried sums, 4 + 4 loads per
// k step), each sum still in k order from zero; a side of known length below 4 takes blocks of that length.
// BLOCKED-LABEL: func.func @blocked_product
// BLOCKED: %[[C4:.*]] = arith.constant 4 : index
// BLOCKED: scf.for {{.*}} step %[[C4]]
// BLOCKED: scf.for {{.*}} step %[[C4]]
// BLOCKED: scf.for {{.*}} iter_args(%{{[^,]*}} = %{{[^,]*}}, %{{[^,]*}} = %{{[^,]*}}, %{{[^,]*}} = %{{[^,]*}}, %{{[^,]*}} = %{{[^,]*}}, %{{[^,]*}} = %{{[^,]*}}, %{{[^,]*}} = %{{[^,]*}}, %{{[^,]*}} = %{{[^,]*}}, %{{[^,]*}} = %{{[^,]*}}, %{{[^,]*}} = %{{[^,]*}}, %{{[^,]*}} = %{{[^,]*}}, %{{[^,]*}} = %{{[^,]*}}, %{{[^,]*}} = %{{[^,]*}}, %{{[^,]*}} = %{{[^,]*}}, %{{[^,]*}} = %{{[^,]*}}, %{{[^,]*}} = %{{[^,]*}}, %{{[^,]*}} = %{{[^,]*}}) -> (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)
// BLOCKED-COUNT-16: arith.addf
// BLOCKED: scf.yield
// BLOCKED-COUNT-16: scf.if
func.func @blocked_product(%buf: memref<?xf32>, %n: index, %k: index) {
  %c0 = arith.constant 0 : index
  %a = linac.tile.load %buf[%c0] stride %k shape(%n, %k) valid %n : memref<?xf32>
  %p = linac.tile.matmul %a, %a {transpose_rhs}
  linac.tile.store %p, %buf[%c0] stride %n valid %n : memref<?xf32>
  return
}

// A product whose result flows only into a store, through elementwise ops of one use each, over no other tile
// than the stored place itself (a state update S' = S + A^T B), is lowered at the store: its epilogue adds S
// and writes the buffer, and the product gets no buffer of its own (three: the loads a, b and S).
// EPILOGUE-LABEL: func.func @product_epilogue
// EPILOGUE-COUNT-3: memref.alloc
// EPILOGUE-NOT: memref.alloc
// EPILOGUE: %[[SUM:.*]]:16 = scf.for {{.*}} iter_args
// EPILOGUE: scf.if
// EPILOGUE: %[[D:.*]] = memref.load %alloc_{{[0-9]+}}
// EPILOGUE-NEXT: %[[OUT:.*]] = arith.addf %[[D]], %[[SUM]]#0
// EPILOGUE-NEXT: memref.store %[[OUT]], %arg0
func.func @product_epilogue(%buf: memref<?xf32>, %n: index, %k: index) {
  %c0 = arith.constant 0 : index
  %a = linac.tile.load %buf[%k] stride %k shape(%n, %k) valid %n : memref<?xf32>
  %b = linac.tile.load %buf[%n] stride %k shape(%n, %k) valid %n : memref<?xf32>
  %d = linac.tile.load %buf[%c0] stride %k shape(%k, %k) valid %k : memref<?xf32>
  %p = linac.tile.matmul %a, %b {transpose_lhs}
  %s = arith.addf %d, %p : tensor<?x?xf32>
  linac.tile.store %s, %buf[%c0] stride %k valid %k : memref<?xf32>
  return
}
