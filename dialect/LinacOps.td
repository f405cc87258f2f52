#ifndef LINAC_OPS_TD
#define LINAC_OPS_TD

include "dialect/LinacDialect.td"
include "dialect/LinacTypes.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/FunctionInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/OpAsmInterface.td"
include "dialect/LinacTileOps.td"

def Linac_F32Vector : 1DTensorOf<[F32]>;

def Linac_RecurrenceOp : Linac_Op<"recurrence", [
    FunctionOpInterface, IsolatedFromAbove, Symbol]> {
  let summary = "one linear-attention layer type, defined by its per-token update";
  let description = [{
    The body maps the previous state (first argument) and one token's inputs
    (the other arguments) to the new state and the token's output:

    ```mlir
    linac.recurrence @deltanet(%S: !linac.state<?x?xf32>, %q: tensor<?xf32>,
        %k: tensor<?xf32>, %v: tensor<?xf32>, %beta: f32)
        -> (!linac.state<?x?xf32>, tensor<?xf32>) {
      %S1 = linac.delta %S, %k, %v, %beta : !linac.state<?x?xf32>, tensor<?xf32>, tensor<?xf32>
      %o = linac.read %S1, %q : !linac.state<?x?xf32>, tensor<?xf32> -> tensor<?xf32>
      linac.yield %S1, %o : !linac.state<?x?xf32>, tensor<?xf32>
    }
    ```

    Inputs are per-token vectors (`tensor<?xf32>`, key or value dimension,
    inferred from their uses) or per-token scalars (`f32`). An argument marked
    `{linac.per_head}` is a learned parameter shared by all tokens of a head
    (e.g. the RWKV-6 bonus `u`). Gate math uses elementwise `arith`/`math` ops.
    The verifier rejects bodies that are not linear in the state.
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       TypeAttrOf<FunctionType>:$function_type,
                       OptionalAttr<DictArrayAttr>:$arg_attrs,
                       OptionalAttr<DictArrayAttr>:$res_attrs);
  let regions = (region SizedRegion<1>:$body);
  let hasCustomAssemblyFormat = 1;
  let hasRegionVerifier = 1;
  let extraClassDeclaration = [{
    ::llvm::ArrayRef<::mlir::Type> getArgumentTypes() { return getFunctionType().getInputs(); }
    ::llvm::ArrayRef<::mlir::Type> getResultTypes() { return getFunctionType().getResults(); }
    ::mlir::Region *getCallableRegion() { return &getBody(); }
    StateType getStateType() { return ::llvm::cast<StateType>(getArgumentTypes().front()); }
    ::mlir::BlockArgument getStateArgument() { return getBody().getArgument(0); }
    /// Token inputs and per-head parameters, in declaration order (all arguments but the state).
    ::llvm::ArrayRef<::mlir::BlockArgument> getInputArguments() { return getBody().getArguments().drop_front(); }
    bool isPerHead(unsigned inputIndex);
    class YieldOp getYield();
  }];
}

def Linac_DecayOp : Linac_Op<"decay", [Pure, AllTypesMatch<["state", "result"]>]> {
  let summary = "multiply the state by exp(gate), a scalar or a per-key diagonal";
  let description = [{
    `S' = exp(g) S` for a scalar gate, `S' = Diag(exp(g)) S` for a vector gate
    of the key dimension. The gate is in log space (g <= 0 for a decay).
    Whether the gate is fixed, per head or per token is derived from what it
    depends on.
  }];
  let arguments = (ins Linac_StateType:$state, AnyTypeOf<[F32, Linac_F32Vector]>:$gate);
  let results = (outs Linac_StateType:$result);
  let assemblyFormat = "$state `,` $gate attr-dict `:` qualified(type($state)) `,` type($gate)";
  let hasVerifier = 1;
}

def Linac_WriteOp : Linac_Op<"write", [Pure, AttrSizedOperandSegments, AllTypesMatch<["state", "result"]>]> {
  let summary = "add an outer product (matrix state) or a vector (vector state)";
  let description = [{
    Matrix state: `S' = S + s * k v^T`; vector state: `h' = h + s * x`, where
    `s` is the optional scalar `scale` (1 when absent).
  }];
  let arguments = (ins Linac_StateType:$state, Linac_F32Vector:$key,
                       Optional<Linac_F32Vector>:$value, Optional<F32>:$scale);
  let results = (outs Linac_StateType:$result);
  let assemblyFormat = [{
    $state `,` $key (`,` $value^)? (`scale` $scale^)? attr-dict `:` qualified(type($state)) `,` type($key) (`,` type($value)^)?
  }];
  let hasVerifier = 1;
}

def Linac_DeltaOp : Linac_Op<"delta", [Pure, AllTypesMatch<["state", "result"]>]> {
  let summary = "delta-rule update: erase the value stored at k, then write v";
  let description = [{
    `S' = (I - beta k k^T) S + beta k v^T = S + beta k (v - S^T k)^T`.
  }];
  let arguments = (ins Linac_StateType:$state, Linac_F32Vector:$key,
                       Linac_F32Vector:$value, F32:$beta);
  let results = (outs Linac_StateType:$result);
  let assemblyFormat = "$state `,` $key `,` $value `,` $beta attr-dict `:` qualified(type($state)) `,` type($key) `,` type($value)";
  let hasVerifier = 1;
}

def Linac_ReadOp : Linac_Op<"read", [Pure, AttrSizedOperandSegments]> {
  let summary = "read the state: scale * S^T q, optionally with an RWKV-style bonus";
  let description = [{
    Matrix state: `o = scale * (S^T q + (q . (u * k)) v)`, the bonus term being
    present when `bonus(%u, %k, %v)` is given. Vector state: `o = h` (no query).
    `scale` defaults to the launch's scale, itself K^-1/2 unless set.
  }];
  let arguments = (ins Linac_StateType:$state, Optional<Linac_F32Vector>:$query,
                       Variadic<Linac_F32Vector>:$bonus, OptionalAttr<F64Attr>:$scale);
  let results = (outs Linac_F32Vector:$result);
  let assemblyFormat = [{
    $state (`,` $query^)? (`bonus` `(` $bonus^ `)`)? attr-dict `:` qualified(type($state)) (`,` type($query)^)? (`,` type($bonus)^)? `->` type($result)
  }];
  let hasVerifier = 1;
}

def Linac_SplatOp : Linac_Op<"splat", [Pure, AllTypesMatch<["like", "result"]>]> {
  let summary = "broadcast a scalar to a vector shaped like another";
  let arguments = (ins F32:$scalar, Linac_F32Vector:$like);
  let results = (outs Linac_F32Vector:$result);
  let assemblyFormat = "$scalar `like` $like attr-dict `:` type($result)";
}

def Linac_HeadIndexOp : Linac_Op<"head_index", [Pure]> {
  let summary = "index of the head being computed, as f32 (for per-head fixed gates)";
  let results = (outs F32:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
}

def Linac_YieldOp : Linac_Op<"yield", [Pure, Terminator, HasParent<"RecurrenceOp">]> {
  let summary = "return the new state and the token's output";
  let arguments = (ins Variadic<AnyType>:$values);
  let assemblyFormat = "($values^ `:` type($values))? attr-dict";
  let extraClassDeclaration = [{
    ::mlir::Value getState() { return getValues().size() > 0 ? getValues()[0] : ::mlir::Value(); }
    ::mlir::Value getOutput() { return getValues().size() > 1 ? getValues()[1] : ::mlir::Value(); }
  }];
}

#endif
