// A problem-level module without a target: attngen takes --arch.
func.func @user_kernel(%q: memref<?x?x?x64xbf16>, %k: memref<?x?x?x64xbf16>,
                       %v: memref<?x?x?x64xbf16>, %o: memref<?x?x?x64xbf16>) {
  attn.attention %q, %k, %v, %o {causal, scale = 0.2 : f32}
    : memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>
  return
}
