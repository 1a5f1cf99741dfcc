#!/usr/bin/env python3
"""Trains a small GPT twice from the same seed, once with attngen.attention and
once with PyTorch SDPA, on synthetic data made here, and writes both loss
curves: attngen's backward in a real training loop.

    ATTNGEN_LIBRARY=.../libattngen.so PYTHONPATH=python \\
        python3 gpu/train_gpt.py [--steps 300] [--json OUT.json]

The model: 4 layers, d_model 512, 8 query heads and 2 key/value heads (GQA,
head dim 64), causal, sequence 1024, batch 8, bf16 autocast-free (the weights
in float32, attention in bf16). The data: sequences from a fixed random
order-2 Markov chain over 512 tokens (learnable, not memorisable), the same
batches for both runs. Exit status 0 when the final losses agree within
bf16 noise (|difference| of the last 50 steps' means below 2%).
"""

import argparse
import json
import math
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

VOCAB, D_MODEL, LAYERS, HEADS, KV_HEADS, SEQ, BATCH = 512, 512, 4, 8, 2, 1024, 8
HEAD_DIM = D_MODEL // HEADS


def attention_sdpa(q, k, v):
    """(B, N, H, D) bf16 in and out, causal, through SDPA (its default backend)."""
    out = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2),
                                         v.transpose(1, 2), is_causal=True, enable_gqa=True)
    return out.transpose(1, 2)


def attention_attngen(q, k, v):
    import attngen
    return attngen.attention(q, k, v, causal=True)


class Block(nn.Module):
    def __init__(self, attend):
        super().__init__()
        self.attend = attend
        self.norm1, self.norm2 = nn.LayerNorm(D_MODEL), nn.LayerNorm(D_MODEL)
        self.qkv = nn.Linear(D_MODEL, (HEADS + 2 * KV_HEADS) * HEAD_DIM, bias=False)
        self.proj = nn.Linear(D_MODEL, D_MODEL, bias=False)
        self.mlp = nn.Sequential(nn.Linear(D_MODEL, 4 * D_MODEL), nn.GELU(),
                                 nn.Linear(4 * D_MODEL, D_MODEL))

    def forward(self, x):
        b, n, _ = x.shape
        qkv = self.qkv(self.norm1(x)).to(torch.bfloat16)
        q, k, v = qkv.split([HEADS * HEAD_DIM, KV_HEADS * HEAD_DIM, KV_HEADS * HEAD_DIM], -1)
        q = q.reshape(b, n, HEADS, HEAD_DIM)
        k = k.reshape(b, n, KV_HEADS, HEAD_DIM)
        v = v.reshape(b, n, KV_HEADS, HEAD_DIM)
        a = self.attend(q, k, v).reshape(b, n, D_MODEL).float()
        x = x + self.proj(a)
        return x + self.mlp(self.norm2(x))


class GPT(nn.Module):
    def __init__(self, attend):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, D_MODEL)
        self.pos = nn.Parameter(0.02 * torch.randn(SEQ, D_MODEL))
        self.blocks = nn.ModuleList(Block(attend) for _ in range(LAYERS))
        self.norm = nn.LayerNorm(D_MODEL)
        self.head = nn.Linear(D_MODEL, VOCAB, bias=False)

    def forward(self, tokens):
        x = self.embed(tokens) + self.pos[: tokens.shape[1]]
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x))


def markov_batches(steps, seed=1234, pool=64):
    """`steps` batches of (BATCH, SEQ + 1) tokens, cycling through `pool`
    drawn from a fixed random Markov chain: 8 equally likely successors per
    token (a loss floor of ln 8 = 2.08)."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    successors = torch.randint(0, VOCAB, (VOCAB, 8), generator=g, device="cuda")
    batches = []
    for _ in range(min(steps, pool)):
        seq = torch.empty(BATCH, SEQ + 1, dtype=torch.long, device="cuda")
        seq[:, :2] = torch.randint(0, VOCAB, (BATCH, 2), generator=g, device="cuda")
        choice = torch.randint(0, 8, (BATCH, SEQ + 1), generator=g, device="cuda")
        for t in range(2, SEQ + 1):
            seq[:, t] = successors[seq[:, t - 1], choice[:, t]]
        batches.append(seq)
    return [batches[i % len(batches)] for i in range(steps)]


def train(attend, batches, seed):
    torch.manual_seed(seed)
    model = GPT(attend).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.1)
    losses = []
    start = time.perf_counter()
    for step, seq in enumerate(batches):
        lr = 1e-3 * min(1.0, (step + 1) / 30)
        for group in opt.param_groups:
            group["lr"] = lr
        logits = model(seq[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, VOCAB), seq[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses.append(loss.item())
    torch.cuda.synchronize()
    return losses, time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--json")
    args = parser.parse_args()
    batches = markov_batches(args.steps)
    ours, t_ours = train(attention_attngen, batches, seed=0)
    theirs, t_theirs = train(attention_sdpa, batches, seed=0)
    tail = min(50, args.steps)
    mean_ours = sum(ours[-tail:]) / tail
    mean_theirs = sum(theirs[-tail:]) / tail
    gap = abs(mean_ours - mean_theirs) / mean_theirs
    for step in list(range(0, args.steps, max(1, args.steps // 10))) + [args.steps - 1]:
        print(f"step {step:4d}: attngen {ours[step]:.4f}  sdpa {theirs[step]:.4f}")
    print(f"last {tail} steps: attngen {mean_ours:.4f}, sdpa {mean_theirs:.4f}, relative gap "
          f"{gap:.4f}; time attngen {t_ours:.1f} s, sdpa {t_theirs:.1f} s "
          f"(initial loss ln({VOCAB}) = {math.log(VOCAB):.3f})")
    ok = gap < 0.02 and all(math.isfinite(x) for x in ours)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"attngen": ours, "sdpa": theirs, "gap": gap, "seconds_attngen": t_ours,
                       "seconds_sdpa": t_theirs, "model": dict(
                           vocab=VOCAB, d_model=D_MODEL, layers=LAYERS, heads=HEADS,
                           kv_heads=KV_HEADS, seq=SEQ, batch=BATCH)}, f)
    print("train_gpt:", "loss curves agree" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
