// Every example parses, verifies and prints back to a form that parses to the same IR.
// RUN: for f in hgrn retnet simple_gla gla hgrn2 rwkv6 deltanet gated_deltanet; do \
// RUN:   linac-opt %examples/$f.mlir > %t.$f.1.mlir && linac-opt %t.$f.1.mlir > %t.$f.2.mlir && \
// RUN:   diff %t.$f.1.mlir %t.$f.2.mlir || exit 1; done
// RUN: linac-opt %examples/rwkv6.mlir | FileCheck %s --check-prefix=RWKV
// RUN: linac-opt %examples/hgrn.mlir | FileCheck %s --check-prefix=HGRN

// RWKV-LABEL: linac.recurrence @rwkv6
// RWKV-SAME: tensor<?xf32> {linac.per_head}
// RWKV: %[[O:.*]] = linac.read %arg0, %arg1 bonus(%arg5, %arg2, %arg3)
// RWKV: %[[D:.*]] = linac.decay %arg0, %arg4 : !linac.state<?x?xf32>, tensor<?xf32>
// RWKV: %[[S:.*]] = linac.write %[[D]], %arg2, %arg3
// RWKV: linac.yield %[[S]], %[[O]]

// HGRN-LABEL: linac.recurrence @hgrn(%arg0: !linac.state<?xf32>
// HGRN: linac.write %{{.*}}, %arg1 : !linac.state<?xf32>, tensor<?xf32>
// HGRN: linac.read %{{.*}} : !linac.state<?xf32> -> tensor<?xf32>
