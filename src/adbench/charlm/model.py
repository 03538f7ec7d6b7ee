"""A small nanoGPT-style character model: token + position tables, pre-norm blocks, tied head.

Training can route the linear layers through oneDNN (`CharGPT.use_onednn`): the same float32 products as
torch's default CPU GEMM (MKL), summed in another order. Whether that is faster depends on the CPU (faster on
an idle AVX-512 AMD core, slower on an AVX2-only one), so the training job measures it on the machine
(adbench.charlm.backend, charlm.gemm_backend). Evaluation and the float64 checks keep the default path.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class GPTConfig:
    """Sizes of the model; `detach_positions` is the C1 bug that cuts the position table off."""
    vocab_size: int
    block_size: int
    n_layer: int = 4
    n_head: int = 4
    n_embd: int = 64
    detach_positions: bool = False

    def to_dict(self) -> dict:
        """Plain dict for the saved checkpoint."""
        return asdict(self)


def onednn_available() -> bool:
    """oneDNN's float32 linear kernel is built into this torch (it is a private op: check, never assume)."""
    return torch.backends.mkldnn.is_available() and hasattr(torch.ops.mkldnn, "_linear_pointwise")


def _mm(a: torch.Tensor, b: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    """a @ b.T (+ bias) on oneDNN: a (N, K), b (M, K), any strides -> (N, M)."""
    return torch.ops.mkldnn._linear_pointwise(a, b, bias, "none", [], "")


class OneDNNLinear(torch.autograd.Function):
    """y = x W^T + b with all three GEMMs (forward, input and weight gradient) on oneDNN."""

    @staticmethod
    def forward(ctx, x, w, b):  # x (N, in), w (out, in), b (out,) or None -> (N, out)
        ctx.save_for_backward(x, w)
        ctx.has_bias = b is not None
        return _mm(x, w, b)

    @staticmethod
    def backward(ctx, g):  # g (N, out)
        x, w = ctx.saved_tensors
        gx = _mm(g, w.t()) if ctx.needs_input_grad[0] else None  # (N, in) = g W
        # (out, in) = g^T x, a sum over the N rows. The op copies its first operand to contiguous
        # (narrow side x N); with the wider side second it is up to 1.8x faster (the .t() result is
        # copied to the parameter's layout by autograd: out x in floats)
        gw = _mm(g.t(), x.t()) if w.shape[1] > w.shape[0] else _mm(x.t(), g.t()).t()
        gb = g.sum(0) if ctx.has_bias else None  # the sum autograd takes for addmm's bias
        return gx, gw, gb


def linear(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None, onednn: bool) -> torch.Tensor:
    """F.linear over the last dim of x (..., in) -> (..., out); oneDNN only for float32 CPU tensors."""
    if not (onednn and x.dtype == w.dtype == torch.float32 and x.device.type == "cpu"):
        return F.linear(x, w, b)
    return OneDNNLinear.apply(x.reshape(-1, x.shape[-1]), w, b).view(*x.shape[:-1], w.shape[0])


class Linear(nn.Linear):
    """nn.Linear (same parameters and names) that takes the oneDNN path when `onednn` is set."""
    onednn = False

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return linear(x, self.weight, self.bias, self.onednn)


class CausalSelfAttention(nn.Module):
    """Multi-head self-attention where position t sees positions <= t only."""

    def __init__(self, cfg: GPTConfig):
        super().__init__()
        assert cfg.n_embd % cfg.n_head == 0, "n_embd must be a multiple of n_head"
        self.n_head = cfg.n_head
        self.qkv = Linear(cfg.n_embd, 3 * cfg.n_embd)  # one projection for q, k and v
        self.proj = Linear(cfg.n_embd, cfg.n_embd)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=2)
        # (B, nh, T, hs): heads become a batch dimension
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # (B, nh, T, hs)
        return self.proj(y.transpose(1, 2).reshape(B, T, C))


class Block(nn.Module):
    """Pre-norm residual block: x + attn(ln(x)), then x + mlp(ln(x))."""

    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.ln_1 = nn.LayerNorm(cfg.n_embd)
        self.attn = CausalSelfAttention(cfg)
        self.ln_2 = nn.LayerNorm(cfg.n_embd)
        self.mlp = nn.Sequential(Linear(cfg.n_embd, 4 * cfg.n_embd), nn.GELU(),
                                 Linear(4 * cfg.n_embd, cfg.n_embd))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class CharGPT(nn.Module):
    """Character GPT returning logits (B, T, vocab); the loss lives with the caller."""

    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.cfg = cfg
        self.onednn = False  # the tied head's GEMMs; use_onednn sets it with the Linear layers'
        self.wte = nn.Embedding(cfg.vocab_size, cfg.n_embd)  # token table, reused as the head
        self.wpe = nn.Embedding(cfg.block_size, cfg.n_embd)  # position table
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layer))
        self.ln_f = nn.LayerNorm(cfg.n_embd)
        self.apply(self._init)
        for name, p in self.named_parameters():  # GPT-2's scaled init of residual projections
            if name.endswith("proj.weight") or name.endswith("mlp.2.weight"):
                nn.init.normal_(p, 0.0, 0.02 / math.sqrt(2 * cfg.n_layer))

    def use_onednn(self, on: bool = True) -> "CharGPT":
        """Route every linear layer and the head through oneDNN (when this torch has it); returns self."""
        on = on and onednn_available()
        for m in self.modules():
            if isinstance(m, (Linear, CharGPT)):
                m.onednn = on
        return self

    @staticmethod
    def _init(m: nn.Module) -> None:
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, 0.0, 0.02)
        if isinstance(m, nn.Linear) and m.bias is not None:
            nn.init.zeros_(m.bias)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        T = idx.shape[1]
        if T > self.cfg.block_size:
            raise ValueError(f"sequence of {T} exceeds block_size {self.cfg.block_size}")
        pos = self.wpe(torch.arange(T, device=idx.device))  # (T, C)
        if self.cfg.detach_positions:
            pos = pos.detach()  # the bug: no gradient ever reaches the position table
        x = self.wte(idx) + pos  # (B, T, C)
        for block in self.blocks:
            x = block(x)
        return linear(self.ln_f(x), self.wte.weight, None, self.onednn)  # tied head: (B, T, vocab)


def param_groups(model: CharGPT) -> dict[str, list[torch.nn.Parameter]]:
    """Parameters by report group: token table, position table, each block, final norm."""
    groups = {"token_table": [model.wte.weight], "position_table": [model.wpe.weight]}
    for i, block in enumerate(model.blocks):
        groups[f"block_{i}"] = list(block.parameters())
    groups["final_norm"] = list(model.ln_f.parameters())
    return groups
