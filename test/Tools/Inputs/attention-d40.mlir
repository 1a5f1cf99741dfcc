// A problem-level module with head dim 40 (not a multiple of 16): the
// kernel pads its tiles to 48 columns and stores 40.
module attributes {attn.target = #attn.target<sm_80>} {
  func.func @d40(%q: memref<?x?x?x40xf16>, %k: memref<?x?x?x40xf16>,
                 %v: memref<?x?x?x40xf16>, %o: memref<?x?x?x40xf16>) {
    attn.attention %q, %k, %v, %o {scale = 0.158 : f32}
      : memref<?x?x?x40xf16>, memref<?x?x?x40xf16>, memref<?x?x?x40xf16>, memref<?x?x?x40xf16>
    return
  }
}
