#!/usr/bin/env python3
"""Plots gpu/train_gpt.py's loss curves (its --json output) into a PNG:
attngen's backward and SDPA's, step by step, from the same seed.

    python3 scripts/plot_training.py train_gpt.json docs/perf/train_gpt.png
"""

import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(source, target):
    with open(source) as f:
        data = json.load(f)
    fig, ax = plt.subplots(figsize=(7, 4), dpi=120)
    ax.plot(data["sdpa"], label="PyTorch SDPA", linewidth=1.2)
    ax.plot(data["attngen"], label="attngen", linewidth=1.2, linestyle="--")
    m = data["model"]
    ax.set_title(f"{m['layers']}-layer GPT, d_model {m['d_model']}, {m['heads']}/{m['kv_heads']} "
                 f"heads, seq {m['seq']}, batch {m['batch']} (gap {data['gap']:.2%})",
                 fontsize=9)
    ax.set_xlabel("step")
    ax.set_ylabel("training loss")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(target)


if __name__ == "__main__":
    main(*sys.argv[1:3])
