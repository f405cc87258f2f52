#ifndef LINAC_DIALECT_TD
#define LINAC_DIALECT_TD

include "mlir/IR/OpBase.td"

def Linac_Dialect : Dialect {
  let name = "linac";
  let cppNamespace = "::linac";
  let summary = "Linear-attention recurrences expressed as per-token state updates";
  let description = [{
    A `linac.recurrence` maps the previous state and one token's inputs to the
    new state and the token's output. The state is updated only through ops
    whose algebra the compiler knows (decay, outer-product write, delta rule),
    so that passes can derive the sequential, chunked-parallel and backward
    forms from the same definition.
  }];
  let useDefaultTypePrinterParser = 1;
  let dependentDialects = ["::mlir::arith::ArithDialect", "::mlir::math::MathDialect",
                           "::mlir::tensor::TensorDialect"];
}

class Linac_Op<string mnemonic, list<Trait> traits = []>
    : Op<Linac_Dialect, mnemonic, traits>;

#endif
