#ifndef LINAC_TILE_OPS_TD
#define LINAC_TILE_OPS_TD

// Tile-level IR: what the chunked and backward derivations produce and what
// the CPU and GPU back ends consume. A tile is a rank-2 f32 tensor; its rows
// are tokens of one chunk (or the K rows of a state) and its columns a
// feature dimension (K, V, or 1 for per-token scalars). Tiles live inside one
// chunk iteration; anything carried across chunks goes through memory.

include "dialect/LinacDialect.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/EnumAttr.td"

// Tiles are always tensor<?x?xf32>: shapes are launch-time values (chunk
// size, K, V) carried by the ops that create tiles.
def Linac_Tile : Type<CPred<"::linac::isTileType($_self)">, "tile (tensor<?x?xf32>)", "::mlir::RankedTensorType">,
                 BuildableType<"::linac::getTileType($_builder.getContext())">;
// Flat buffers hold f32, or bf16 / f16 for a kernel's 16-bit I/O (linac-gpu-chunk{io-type=bf16|f16}): a load
// widens each element to f32, a store rounds it to nearest even.
def Linac_Buffer : MemRefRankOf<[F32, BF16, F16], [1]>;

class Linac_TileOp<string mnemonic, list<Trait> traits = []> : Linac_Op<"tile." # mnemonic, traits>;

def Linac_TileLoadOp : Linac_TileOp<"load", [MemoryEffects<[MemRead]>]> {
  let summary = "load a rows x cols tile from a flat buffer, zero past `valid` rows";
  let description = [{
    Element (r, c) is `buffer[offset + r * stride + c]` for `r < valid`, and 0
    for `valid <= r < rows`: the tail of the last chunk reads as padding tokens
    that contribute nothing (zero keys, zero log-gates).
  }];
  let arguments = (ins Linac_Buffer:$buffer, Index:$offset, Index:$stride, Index:$rows, Index:$cols, Index:$valid);
  let results = (outs Linac_Tile:$result);
  let assemblyFormat = [{
    $buffer `[` $offset `]` `stride` $stride `shape` `(` $rows `,` $cols `)` `valid` $valid attr-dict
    `:` type($buffer)
  }];
}

def Linac_TileStoreOp : Linac_TileOp<"store", [MemoryEffects<[MemWrite]>]> {
  let summary = "store (or, with `accumulate`, add) the first `valid` rows of a tile to a flat buffer";
  let arguments = (ins Linac_Tile:$tile, Linac_Buffer:$buffer, Index:$offset, Index:$stride, Index:$valid,
                       UnitAttr:$accumulate);
  let assemblyFormat = [{
    $tile `,` $buffer `[` $offset `]` `stride` $stride `valid` $valid attr-dict `:` type($buffer)
  }];
}

def Linac_TileFillOp : Linac_TileOp<"fill", [Pure]> {
  let summary = "a rows x cols tile with every element equal to a scalar";
  let arguments = (ins F32:$value, Index:$rows, Index:$cols);
  let results = (outs Linac_Tile:$result);
  let assemblyFormat = "$value `shape` `(` $rows `,` $cols `)` attr-dict";
}

def Linac_TileMaskRowsOp : Linac_TileOp<"mask_rows", [Pure]> {
  let summary = "zero every row at or past `valid` (padding tokens of the last chunk)";
  let arguments = (ins Linac_Tile:$source, Index:$valid);
  let results = (outs Linac_Tile:$result);
  let assemblyFormat = "$source `valid` $valid attr-dict";
}

def Linac_TileBroadcastOp : Linac_TileOp<"broadcast", [Pure]> {
  let summary = "repeat a row (1 x n), a column (m x 1) or a 1 x 1 tile to rows x cols";
  let arguments = (ins Linac_Tile:$source, Index:$rows, Index:$cols);
  let results = (outs Linac_Tile:$result);
  let assemblyFormat = "$source `shape` `(` $rows `,` $cols `)` attr-dict";
}

def Linac_TileTransposeOp : Linac_TileOp<"transpose", [Pure]> {
  let arguments = (ins Linac_Tile:$source);
  let results = (outs Linac_Tile:$result);
  let assemblyFormat = "$source attr-dict";
}

def Linac_TileRowOp : Linac_TileOp<"row", [Pure]> {
  let summary = "row `index` of a tile, as a 1 x n tile";
  let arguments = (ins Linac_Tile:$source, Index:$index);
  let results = (outs Linac_Tile:$result);
  let assemblyFormat = "$source `[` $index `]` attr-dict";
}

def Linac_TileRowSumOp : Linac_TileOp<"row_sum", [Pure]> {
  let summary = "sum of each row, as an m x 1 tile";
  let arguments = (ins Linac_Tile:$source);
  let results = (outs Linac_Tile:$result);
  let assemblyFormat = "$source attr-dict";
}

def Linac_TileCumsumOp : Linac_TileOp<"cumsum", [Pure, AllTypesMatch<["source", "result"]>]> {
  let summary = "prefix sums down the rows (log-space gates within a chunk)";
  let description = [{
    out_i = sum_{j<=i} x_j; with `exclusive` j < i; with `reverse` the suffix
    sums over j >= i (j > i). The adjoint of each form is the opposite direction
    with the same exclusivity.
  }];
  let arguments = (ins Linac_Tile:$source, UnitAttr:$reverse, UnitAttr:$exclusive);
  let results = (outs Linac_Tile:$result);
  let assemblyFormat = "$source attr-dict";
}

def Linac_TileMatmulOp : Linac_TileOp<"matmul", [Pure]> {
  let summary = "op(a) * op(b), with op a transpose where asked";
  let arguments = (ins Linac_Tile:$lhs, Linac_Tile:$rhs, UnitAttr:$transpose_lhs, UnitAttr:$transpose_rhs);
  let results = (outs Linac_Tile:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict";
}

def Linac_MaskKind : I32EnumAttr<"MaskKind", "which (i, j) pairs of a chunk interact", [
    I32EnumAttrCase<"Lower", 0, "lower">,           // j <= i
    I32EnumAttrCase<"StrictLower", 1, "strict_lower"> // j < i
  ]> {
  let cppNamespace = "::linac";
}

def Linac_TileGatedDotOp : Linac_TileOp<"gated_dot", [Pure]> {
  let summary = "masked gated products P_ij = sum_d x_id y_jd exp(gx_id - gy_jd)";
  let description = [{
    The intra-chunk interaction of token i with token j under the decay
    accumulated between them. `gx` and `gy` are log-space cumulative gates:
    m x 1 (a scalar gate per token) or m x d (one per key channel). The
    exponent is formed per pair, and is <= 0 wherever the mask keeps the pair,
    so no gate strength overflows; masked pairs are exactly 0.
  }];
  let arguments = (ins Linac_Tile:$x, Linac_Tile:$y, Linac_Tile:$gx, Linac_Tile:$gy, Linac_MaskKind:$mask);
  let results = (outs Linac_Tile:$result);
  let assemblyFormat = [{
    $x `,` $y `gates` `(` $gx `,` $gy `)` `mask` $mask attr-dict
  }];
}

def Linac_TileGatedScanOp : Linac_TileOp<"gated_scan", [Pure, AllTypesMatch<["x", "result"]>]> {
  let summary = "per-column gated prefix sums Y_i = sum_{j<=i} exp(b_i - b_j) x_j (vector states)";
  let description = [{
    With `reverse`, the suffix form Z_j = sum_{i>=j} exp(b_i - b_j) x_i, the adjoint of the prefix form.
  }];
  let arguments = (ins Linac_Tile:$x, Linac_Tile:$gates, UnitAttr:$reverse);
  let results = (outs Linac_Tile:$result);
  let assemblyFormat = "$x `gates` $gates attr-dict";
}

def Linac_TileTriSolveOp : Linac_TileOp<"tri_solve", [Pure, AllTypesMatch<["rhs", "result"]>]> {
  let summary = "solve (I + L) X = R for strictly lower-triangular L (the delta rule's UT transform)";
  let description = [{ With `transpose`, solves (I + L)^T X = R (back substitution), the adjoint solve. }];
  let arguments = (ins Linac_Tile:$lower, Linac_Tile:$rhs, UnitAttr:$transpose);
  let results = (outs Linac_Tile:$result);
  let assemblyFormat = "$lower `,` $rhs attr-dict";
}

def Linac_TileGatedMatmulOp : Linac_TileOp<"gated_matmul", [Pure]> {
  let summary = "products of a masked pair tile with gated rows: the adjoints of gated_dot";
  let description = [{
    Z_id = sum_j M_ij p_ij y_jd exp(gx_id - gy_jd), or with `transpose`
    Z_jd = sum_i M_ij p_ij y_id exp(gx_id - gy_jd); gates are m x 1 or m x d as
    in gated_dot, and M is the mask. Exponents are <= 0 wherever M keeps a pair.
  }];
  let arguments = (ins Linac_Tile:$pairs, Linac_Tile:$y, Linac_Tile:$gx, Linac_Tile:$gy, Linac_MaskKind:$mask,
                       UnitAttr:$transpose);
  let results = (outs Linac_Tile:$result);
  let assemblyFormat = "$pairs `,` $y `gates` `(` $gx `,` $gy `)` `mask` $mask attr-dict";
}

def Linac_TileGateGradOp : Linac_TileOp<"gate_grad", [Pure]> {
  let summary = "gradient of the log-gates g through the pair exponents of a gated product";
  let description = [{
    For a gated product whose gates are prefix sums of one gate tile g,
    gx_i = sum_{s <= i - shift} g_s and gy_j = sum_{s <= j} g_s, the exponent of
    pair (i, j) is the sum of g_t over j < t <= i - shift. Its gradient is

      U_t = sum over kept pairs (i, j) with j < t <= i - shift of M_ij,
      M_ij = p_ij x_i . y_j exp(gx_i - gy_j)     (per channel for m x d gates)

    accumulated as a sum over pairs, never as a difference of prefix sums, so
    no cancellation loses the small gradients of strong decays. The result is
    m x 1 for scalar gates and m x d for per-key gates.
  }];
  let arguments = (ins Linac_Tile:$pairs, Linac_Tile:$x, Linac_Tile:$y, Linac_Tile:$gx, Linac_Tile:$gy,
                       I64Attr:$shift);
  let results = (outs Linac_Tile:$result);
  let assemblyFormat = "$pairs `,` $x `,` $y `gates` `(` $gx `,` $gy `)` `shift` $shift attr-dict";
}

def Linac_TileReduceOp : Linac_TileOp<"reduce", [Pure]> {
  let summary = "sum a tile down to rows x cols, each 1 or the source's size (the adjoint of broadcast)";
  let arguments = (ins Linac_Tile:$source, Index:$rows, Index:$cols);
  let results = (outs Linac_Tile:$result);
  let assemblyFormat = "$source `to` `shape` `(` $rows `,` $cols `)` attr-dict";
}

def Linac_TileScatterRowOp : Linac_TileOp<"scatter_row", [Pure]> {
  let summary = "a rows x n tile of zeros with row `index` set to a 1 x n tile (the adjoint of row)";
  let arguments = (ins Linac_Tile:$source, Index:$rows, Index:$index);
  let results = (outs Linac_Tile:$result);
  let assemblyFormat = "$source `rows` $rows `at` $index attr-dict";
}

def Linac_TileTrilOp : Linac_TileOp<"tril", [Pure, AllTypesMatch<["source", "result"]>]> {
  let summary = "keep the lower triangle (j <= i, or j < i with `strict`), zero the rest";
  let arguments = (ins Linac_Tile:$source, UnitAttr:$strict);
  let results = (outs Linac_Tile:$result);
  let assemblyFormat = "$source attr-dict";
}

#endif
