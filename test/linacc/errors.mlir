// Bad input gives one line per error, with its location, a non-zero exit code and no output files.
// RUN: rm -rf %t && mkdir -p %t
// RUN: not linacc %s --target=cpu -o %t/out 2>&1 | FileCheck %s --check-prefix=VERIFY
// RUN: not linacc %s --target=cpu -o %t/out 2>&1 | count 1
// RUN: not test -e %t/out/errors.o
// RUN: not test -e %t/out/errors.h
// RUN: not linacc %t/missing.mlir --target=cpu -o %t/out 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: echo 'linac.recurrence @broken(%%S: !linac.state<?x?xf32>' > %t/parse.mlir
// RUN: not linacc %t/parse.mlir --target=cpu -o %t/out 2>&1 | FileCheck %s --check-prefix=PARSE
// RUN: not linacc %examples/gla.mlir --target=tpu -o %t/out 2>&1 | FileCheck %s --check-prefix=TARGET
// RUN: echo 'func.func @f() { return }' > %t/empty.mlir
// RUN: not linacc %t/empty.mlir --target=cpu -o %t/out 2>&1 | FileCheck %s --check-prefix=EMPTY
// RUN: not linacc %examples/gla.mlir --target=cuda --gpu-block-size=100 -o %t/out 2>&1 | FileCheck %s --check-prefix=BLOCK
// RUN: not linacc %examples/gla.mlir --target=cuda --gpu-static-dims=128 -o %t/out 2>&1 | FileCheck %s --check-prefix=STATIC
// RUN: not linacc %examples/gla.mlir --target=cuda --gpu-split-k=3 -o %t/out 2>&1 | FileCheck %s --check-prefix=SPLITK
// RUN: not linacc %examples/gla.mlir --target=cuda --gpu-wide-warp-tiles=some -o %t/out 2>&1 | FileCheck %s --check-prefix=WIDE
// RUN: not linacc %examples/gla.mlir --target=cuda --gpu-schedule=early -o %t/out 2>&1 | FileCheck %s --check-prefix=SCHEDULE
// RUN: not linacc %examples/gla.mlir --target=cuda --gpu-placement=traffic -o %t/out 2>&1 | FileCheck %s --check-prefix=PLACEMENT
// RUN: not linacc %examples/gla.mlir --target=cuda --gpu-product-solves=cholesky -o %t/out 2>&1 | FileCheck %s --check-prefix=SOLVE
// RUN: not linacc %examples/gla.mlir --target=cuda --gpu-substitution=up -o %t/out 2>&1 | FileCheck %s --check-prefix=SUBST
// RUN: not linacc %examples/gla.mlir --target=cuda --gpu-unroll-global-k=99 -o %t/out 2>&1 | FileCheck %s --check-prefix=UNROLLK
// RUN: not linacc %examples/gla.mlir --target=cuda --gpu-product-chains=4 -o %t/out 2>&1 | FileCheck %s --check-prefix=CHAINS
// RUN: not linacc %examples/gla.mlir --target=cuda --gpu-forward-copies=-1 -o %t/out 2>&1 | FileCheck %s --check-prefix=COPIES
// RUN: not linacc %examples/gla.mlir --target=cuda --gpu-io=fp8 -o %t/out 2>&1 | FileCheck %s --check-prefix=IO
// RUN: not test -e %t/out

// VERIFY: errors.mlir:[[@LINE+20]]:8: error: 'linac.write' op makes the recurrence non-linear in the state
// MISSING: linacc: error: cannot open '{{.*}}missing.mlir': No such file or directory
// PARSE: parse.mlir:1:{{[0-9]+}}: error: expected
// TARGET: linacc: error: unsupported target 'tpu' (supported: cpu, cuda)
// EMPTY: linacc: error: '{{.*}}empty.mlir' defines no linac.recurrence
// BLOCK: linacc: error: --gpu-block-size must be 0 or a multiple of 32 in [32, 1024], not 100
// SPLITK: linacc: error: --gpu-split-k must be a power of two in [1, 32], not 3
// WIDE: linacc: error: --gpu-wide-warp-tiles must be none, forward or all, not 'some'
// SCHEDULE: linacc: error: --gpu-schedule must be none, fit, forward or all, not 'early'
// PLACEMENT: linacc: error: --gpu-placement must be accesses or latency, not 'traffic'
// SOLVE: linacc: error: --gpu-product-solves must be auto, none, all, forward or backward, not 'cholesky'
// SUBST: linacc: error: --gpu-substitution must be left or right, not 'up'
// UNROLLK: linacc: error: --gpu-unroll-global-k must be in [0, 16], not 99
// CHAINS: linacc: error: --gpu-product-chains must be 0 (by warp tile), 1, 2 or 3, not 4
// COPIES: linacc: error: --gpu-forward-copies must be in [0, 64], not -1
// IO: linacc: error: --gpu-io must be f32, bf16 or f16, not 'fp8'
// STATIC: linacc: error: --gpu-static-dims takes KxV pairs of head dimensions in [1, 1024], not '128'
linac.recurrence @bad(%S: !linac.state<?x?xf32>, %q: tensor<?xf32>, %k: tensor<?xf32>)
    -> (!linac.state<?x?xf32>, tensor<?xf32>) {
  %r = linac.read %S, %q : !linac.state<?x?xf32>, tensor<?xf32> -> tensor<?xf32>
  %n = linac.write %S, %k, %r : !linac.state<?x?xf32>, tensor<?xf32>, tensor<?xf32>
  %o = linac.read %n, %q : !linac.state<?x?xf32>, tensor<?xf32> -> tensor<?xf32>
  linac.yield %n, %o : !linac.state<?x?xf32>, tensor<?xf32>
}
