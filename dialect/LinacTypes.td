#ifndef LINAC_TYPES_TD
#define LINAC_TYPES_TD

include "dialect/LinacDialect.td"
include "mlir/IR/AttrTypeBase.td"

def Linac_StateType : TypeDef<Linac_Dialect, "State"> {
  let mnemonic = "state";
  let summary = "recurrent state of one head: a K x V matrix or a D vector";
  let description = [{
    `!linac.state<KxVxf32>` is the matrix state of matrix-valued recurrences
    (RetNet, GLA, DeltaNet, ...); `!linac.state<Dxf32>` is the vector state of
    HGRN-style recurrences. Dimensions are fixed integers or `?` (bound when the
    kernel is launched). States are always kept in f32.
  }];
  let parameters = (ins ArrayRefParameter<"int64_t">:$shape, "::mlir::Type":$elementType);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    bool isMatrix() const { return getShape().size() == 2; }
    bool isVector() const { return getShape().size() == 1; }
    /// Rows of the state: K for a matrix, D for a vector.
    int64_t getKeyDim() const { return getShape()[0]; }
    /// Columns of a matrix state; the vector state has none.
    int64_t getValueDim() const { return isMatrix() ? getShape()[1] : getShape()[0]; }
  }];
}

#endif
