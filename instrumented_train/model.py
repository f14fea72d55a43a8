"""A GPT-style decoder: token and position embeddings, pre-LayerNorm blocks of causal
self-attention and MLP, a final LayerNorm and an (untied) LM head."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from instrumented_train.config import ModelShape


class Block(nn.Module):
    def __init__(self, d_model: int, n_heads: int) -> None:
        super().__init__()
        self.n_heads = n_heads
        self.ln1 = nn.LayerNorm(d_model)
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        self.ln2 = nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(
            nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q, k, v = (z.view(b, t, self.n_heads, d // self.n_heads).transpose(1, 2) for z in (q, k, v))
        attn = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(attn.transpose(1, 2).reshape(b, t, d))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, shape: ModelShape, seq_len: int) -> None:
        super().__init__()
        self.tokens = nn.Embedding(shape.vocab_size, shape.d_model)
        self.positions = nn.Embedding(seq_len, shape.d_model)
        self.blocks = nn.ModuleList(
            Block(shape.d_model, shape.n_heads) for _ in range(shape.n_layers)
        )
        self.ln_f = nn.LayerNorm(shape.d_model)
        self.head = nn.Linear(shape.d_model, shape.vocab_size, bias=False)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        pos = torch.arange(idx.shape[1], device=idx.device)
        x = self.tokens(idx) + self.positions(pos)
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))


def loss_fn(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(logits.float().flatten(0, 1), targets.flatten())


def synthetic_batch(
    vocab: int,
    micro_batch: int,
    seq_len: int,
    *,
    seed: int,
    rank: int,
    step: int,
    micro: int,
    device: torch.device,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Seeded random tokens made on the device: the same (seed, rank, step, micro) gives the same
    batch under every strategy. Nothing is downloaded."""
    gen = torch.Generator(device=device)
    gen.manual_seed(hash((seed, rank, step, micro)) & 0x7FFF_FFFF_FFFF)
    tokens = torch.randint(vocab, (micro_batch, seq_len + 1), generator=gen, device=device)
    return tokens[:, :-1], tokens[:, 1:]
