// RUN: attngen-opt %s -split-input-file -verify-diagnostics | FileCheck %s

// A kernel's launch grid rule prints and parses back.
// CHECK-LABEL: func.func @grid
// CHECK-SAME: attn.grid = #attn.grid<tiles = [#attn.grid_dim<size = nq, tile = 128>, #attn.grid_dim<size = num_heads, tile = 1>, #attn.grid_dim<size = batch, tile = 1>], ctas_per_sm = 0>
func.func @grid() attributes {attn.grid = #attn.grid<tiles = [#attn.grid_dim<size = nq, tile = 128>, #attn.grid_dim<size = num_heads, tile = 1>, #attn.grid_dim<size = batch, tile = 1>], ctas_per_sm = 0>} {
  return
}

// -----

// CHECK-LABEL: func.func @persistent
// CHECK-SAME: #attn.grid<tiles = [#attn.grid_dim<size = nq, tile = 64>], ctas_per_sm = 1>
func.func @persistent() attributes {attn.grid = #attn.grid<tiles = [#attn.grid_dim<size = nq, tile = 64>], ctas_per_sm = 1>} {
  return
}

// -----

// expected-error @+2 {{grid_dim of nq needs a positive tile, got 0}}
// expected-error @+1 {{failed to parse Attn_GridAttr parameter 'tiles'}}
func.func @zero_tile() attributes {attn.grid = #attn.grid<tiles = [#attn.grid_dim<size = nq, tile = 0>], ctas_per_sm = 0>} {
  return
}

// -----

// expected-error @+1 {{grid needs 1 to 3 tile dimensions, got 0}}
func.func @no_tiles() attributes {attn.grid = #attn.grid<tiles = [], ctas_per_sm = 0>} {
  return
}

// -----

// expected-error @+1 {{grid tiles must be #attn.grid_dim attributes, got 128 : i64}}
func.func @not_a_dim() attributes {attn.grid = #attn.grid<tiles = [128], ctas_per_sm = 0>} {
  return
}

// -----

// expected-error @+1 {{grid ctas_per_sm must be 0 (one CTA per tile) or positive (persistent), got -1}}
func.func @negative_ctas() attributes {attn.grid = #attn.grid<tiles = [#attn.grid_dim<size = nq, tile = 64>], ctas_per_sm = -1>} {
  return
}

// -----

// expected-error @+3 {{expected ::mlir::attn::SizeKind to be one of: batch, nq, nk, num_heads, num_kv_heads}}
// expected-error @+2 {{failed to parse Attn_GridDimAttr parameter 'size'}}
// expected-error @+1 {{failed to parse Attn_GridAttr parameter 'tiles'}}
func.func @unknown_size() attributes {attn.grid = #attn.grid<tiles = [#attn.grid_dim<size = rows, tile = 64>], ctas_per_sm = 0>} {
  return
}
