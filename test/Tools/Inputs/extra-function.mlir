// A kernel and a second function beside it: refused, naming the function.
module attributes {attn.target = #attn.target<sm_90a>} {
  func.func @k(%q: memref<?x?x?x64xbf16>, %k: memref<?x?x?x64xbf16>,
               %v: memref<?x?x?x64xbf16>, %o: memref<?x?x?x64xbf16>) {
    attn.attention %q, %k, %v, %o {scale = 0.125 : f32}
      : memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>
    return
  }
  func.func @helper(%x: i32) -> i32 {
    return %x : i32
  }
}
