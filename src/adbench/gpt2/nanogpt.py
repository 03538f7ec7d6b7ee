"""A nanoGPT-style GPT at GPT-2's sizes: the architecture doc 004 measured its saved tensors on (G6).

It holds exactly the parameters of transformers' GPT2LMHeadModel (same names, nn.Linear layout instead
of Conv1D), so the weights of the resolved GPT-2, pretrained or seeded random, copy into it. What
differs is what autograd keeps for backward: fused attention (`F.scaled_dot_product_attention`)
instead of an explicit softmax(QK^T)V, exact GELU (one op) instead of the tanh formula spelled out in
separate ops, and a loss of one `F.cross_entropy` (one log-softmax). The switches `gelu="tanh"` and
`attention="eager"` give transformers' numerics, which the tests use as an oracle. No dropout: the
GPT-2 probes run in evaluation mode.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

GELUS = ("exact", "tanh")
ATTENTIONS = ("sdpa", "eager")
# transformers' Conv1D keeps (in, out) weights; nn.Linear keeps (out, in)
CONV1D = ("attn.c_attn.weight", "attn.c_proj.weight", "mlp.c_fc.weight", "mlp.c_proj.weight")


@dataclass
class NanoConfig:
    """Sizes (GPT-2 small by default) and the two implementation switches."""
    vocab_size: int = 50257
    block_size: int = 1024
    n_layer: int = 12
    n_head: int = 12
    n_embd: int = 768
    layer_norm_epsilon: float = 1e-5
    gelu: str = "exact"
    attention: str = "sdpa"

    def __post_init__(self):
        if self.gelu not in GELUS or self.attention not in ATTENTIONS:
            raise ValueError(f"gelu must be one of {GELUS} and attention one of {ATTENTIONS}, "
                             f"got {self.gelu!r} / {self.attention!r}")
        if self.n_embd % self.n_head:
            raise ValueError(f"n_embd {self.n_embd} is not a multiple of n_head {self.n_head}")

    def to_dict(self) -> dict:
        return asdict(self)


class CausalSelfAttention(nn.Module):
    """Multi-head attention where position t sees positions <= t; `attention` picks the kernel."""

    def __init__(self, cfg: NanoConfig):
        super().__init__()
        self.n_head, self.attention = cfg.n_head, cfg.attention
        self.c_attn = nn.Linear(cfg.n_embd, 3 * cfg.n_embd)
        self.c_proj = nn.Linear(cfg.n_embd, cfg.n_embd)
        # eager path only: True above the diagonal (the future), not a parameter
        future = torch.ones(cfg.block_size, cfg.block_size, dtype=torch.bool).triu(1)
        self.register_buffer("future", future, persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, C = x.shape
        q, k, v = self.c_attn(x).split(C, dim=2)
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in (q, k, v))  # (B, nh, T, hs)
        if self.attention == "sdpa":  # fused: never keeps a (T, T) matrix for backward
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:  # explicit: the (B, nh, T, T) probabilities are saved for the backward of att @ v
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = F.softmax(att.masked_fill(self.future[:T, :T], float("-inf")), dim=-1)
            y = att @ v
        return self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))  # (B, T, C)


class MLP(nn.Module):
    def __init__(self, cfg: NanoConfig):
        super().__init__()
        self.c_fc = nn.Linear(cfg.n_embd, 4 * cfg.n_embd)
        self.gelu = nn.GELU(approximate="none" if cfg.gelu == "exact" else "tanh")  # one op either way
        self.c_proj = nn.Linear(4 * cfg.n_embd, cfg.n_embd)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.c_proj(self.gelu(self.c_fc(x)))


class Block(nn.Module):
    """Pre-norm residual block: x + attn(ln_1(x)), then x + mlp(ln_2(x))."""

    def __init__(self, cfg: NanoConfig):
        super().__init__()
        self.ln_1 = nn.LayerNorm(cfg.n_embd, eps=cfg.layer_norm_epsilon)
        self.attn = CausalSelfAttention(cfg)
        self.ln_2 = nn.LayerNorm(cfg.n_embd, eps=cfg.layer_norm_epsilon)
        self.mlp = MLP(cfg)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class NanoGPT(nn.Module):
    """GPT-2's parameters under GPT-2's names; `transformer.h` holds the blocks (checkpointing patches them)."""

    def __init__(self, cfg: NanoConfig):
        super().__init__()
        self.config = cfg
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(cfg.vocab_size, cfg.n_embd), wpe=nn.Embedding(cfg.block_size, cfg.n_embd),
            h=nn.ModuleList(Block(cfg) for _ in range(cfg.n_layer)),
            ln_f=nn.LayerNorm(cfg.n_embd, eps=cfg.layer_norm_epsilon)))
        self.lm_head = nn.Linear(cfg.n_embd, cfg.vocab_size, bias=False)
        self.lm_head.weight = self.transformer.wte.weight  # tied: the token table is the output layer

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        """Logits (B, T, vocab) for token ids (B, T)."""
        T = idx.shape[1]
        if T > self.config.block_size:
            raise ValueError(f"sequence of {T} tokens exceeds block_size {self.config.block_size}")
        x = self.transformer.wte(idx) + self.transformer.wpe(torch.arange(T, device=idx.device))  # (B, T, C)
        for block in self.transformer.h:
            x = block(x)
        return self.lm_head(self.transformer.ln_f(x))

    def next_token_loss(self, idx: torch.Tensor) -> torch.Tensor:
        """Mean -log p(idx[t+1] | idx[:t+1]) by one cross_entropy over all T positions, nanoGPT's way:
        the last position has no next token and is ignored (target -1), so its log-probabilities
        are still computed and saved: (B, T, vocab), as in the documents' 8 x 1024 x 50257 x 4 bytes."""
        logits = self(idx)
        targets = torch.cat([idx[:, 1:], idx.new_full((idx.shape[0], 1), -1)], dim=1)  # (B, T)
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)


def set_attention(net: NanoGPT, attention: str) -> None:
    """Switch every block between the fused and the explicit attention (same weights)."""
    if attention not in ATTENTIONS:
        raise ValueError(f"attention must be one of {ATTENTIONS}, got {attention!r}")
    net.config.attention = attention
    for block in net.transformer.h:
        block.attn.attention = attention


def config_from_gpt2(hf_config, gelu: str = "exact", attention: str = "sdpa") -> NanoConfig:
    """The NanoConfig with a transformers GPT2Config's sizes; refuses options this model does not have."""
    unsupported = {"n_inner": None, "scale_attn_weights": True, "scale_attn_by_inverse_layer_idx": False,
                   "reorder_and_upcast_attn": False, "add_cross_attention": False}
    off = {k: getattr(hf_config, k) for k, v in unsupported.items() if getattr(hf_config, k, v) != v}
    if off:
        raise ValueError(f"GPT2Config options the nanoGPT-style model does not reproduce: {off}")
    return NanoConfig(vocab_size=hf_config.vocab_size, block_size=hf_config.n_positions, n_layer=hf_config.n_layer,
                      n_head=hf_config.n_head, n_embd=hf_config.n_embd,
                      layer_norm_epsilon=hf_config.layer_norm_epsilon, gelu=gelu, attention=attention)


def from_gpt2(hf_model, gelu: str = "exact", attention: str = "sdpa") -> NanoGPT:
    """A NanoGPT holding a transformers GPT2LMHeadModel's weights (Conv1D weights transposed), on its
    device and dtype, in eval mode; the copy shares no storage with the original."""
    ref = next(hf_model.parameters())
    net = NanoGPT(config_from_gpt2(hf_model.config, gelu, attention))
    source = hf_model.state_dict()
    target = net.state_dict()  # the tied head appears under both names; both copies land in one tensor
    missing = sorted(set(target) - set(source))
    if missing:
        raise ValueError(f"the transformers state dict lacks {missing}")
    with torch.no_grad():
        for name, p in target.items():
            w = source[name]
            p.copy_(w.t() if name.endswith(CONV1D) else w)
    return net.to(device=ref.device, dtype=ref.dtype).eval()
