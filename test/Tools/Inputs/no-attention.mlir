// A module without attn.attention or a tiled kernel.
func.func @nothing() {
  return
}
