//===- Passes.td - spec policy as passes -------------------*- tablegen -*-===//
#ifndef ATTN_SPEC_PASSES_TD
#define ATTN_SPEC_PASSES_TD

include "mlir/Pass/PassBase.td"

def AttnConfigure : Pass<"attn-configure", "ModuleOp"> {
  let summary = "Choose each kernel's tiles and schedule, once, and record them in the IR";
  let description = [{
    For every function that holds a problem op (`attn.attention`,
    `attn.attention_kvcache`, `attn.combine_splits`) and has no
    `attn.tiling` yet, checks the request its problem and this pass's
    options make (the same checks as attngen's flags and the C API) and
    records the configuration that `configure()` (spec/lib/Configure.cpp)
    chooses for it: `attn.tiling = #attn.tiling<...>` (tile sizes, warps,
    K/V stages, whether the masked blocks are peeled) and `attn.schedule =
    #attn.schedule<...>` (which techniques apply). Every later pass reads
    them there; nothing else chooses tiles. A function already configured
    (attngen's driver configures the modules it builds) is left as it is.

    The options are the TILING and SCHEDULE rows of
    `attnrt/spec_fields.def`, named after the table's fields:
    `block-m`, `block-n`, `num-warps`, `stages` (0: the tuned choice),
    `block-skip`, `warp-specialize`, `intra-wg-overlap`, `pingpong`,
    `flush-denormals`, `bounded-softmax` (true or false; on by default where
    they apply), `tma-store`, `persistent` (auto, true or false),
    `exp2-emulated-eighths` (0 to 8).

    ```mlir
    // before
    func.func @k(...) { attn.attention %q, %k, %v, %o {causal, scale = ...} ... }
    // after -attn-configure
    func.func @k(...) attributes {
        attn.schedule = #attn.schedule<block_skip = true, warp_specialize = true, ...>,
        attn.tiling = #attn.tiling<block_m = 128, block_n = 128, num_warps = 8,
                                   stages = 2, peel_masked_blocks = false>} { ... }
    ```
  }];
}

#endif // ATTN_SPEC_PASSES_TD
