"""L7 measured: what transformers' eager GPT-2 attention layer really hands to a saved-tensor hook.

A random-init GPT2Attention of GPT2Config()'s width and head count runs forward under
`saved_tensors_hooks` at a few sequence lengths, batch B; each saved tensor is classed by its element
count and trailing axes, not by which operation saved it:
- `residual`: B·T·D elements, the size of a residual state (the input rows, q, k, v per head, the merged heads);
- `scores`: B·H·T·T elements with two trailing position axes (the softmax output, the weights fed to A·V);
- `parameter`: a view of a weight (its size does not depend on T);
- `other`: anything else.
The byte formulas of shapes.py are not used here: a claim can set these bytes against them.
`saved` needs no class at all: per batch and sequence length, the bytes of every saved tensor that is not a
view of a weight, and the layer's parameter bytes, so a claim can fit bytes = a + bT + cT^2 without sorting.
"""

from __future__ import annotations

import pandas as pd
import torch

KINDS = ("residual", "scores", "parameter", "other")
# Measurement-level controls (claims/bugs.py): a fused attention kernel in place of the eager one (it keeps no
# (B, H, T, T) tensor), and the batch argument dropped from the input's shape.
L7_BUGS = ("fused attention kernel", "batch ignored")


def attention_layer(seed: int, implementation: str = "eager"):
    """(eval-mode GPT2Attention with random weights, its config); eval: attention dropout saves no masks."""
    from transformers import GPT2Config
    from transformers.models.gpt2.modeling_gpt2 import GPT2Attention

    cfg = GPT2Config()
    cfg._attn_implementation = implementation  # eager: explicit softmax(QKᵀ/√d) V, not a fused kernel
    torch.manual_seed(seed)
    return GPT2Attention(cfg, layer_idx=0).eval(), cfg


def kind_of(shape: tuple[int, ...], is_param: bool, batch: int, seq: int, hidden: int, heads: int) -> str:
    """Which of KINDS a saved tensor of `shape` is."""
    numel = 1
    for n in shape:
        numel *= n
    if is_param:
        return "parameter"
    if numel == batch * heads * seq * seq and tuple(shape[-2:]) == (seq, seq):
        return "scores"
    if numel == batch * seq * hidden:
        return "residual"
    return "other"


def saved_tensors(layer, cfg, batch: int, seq: int, seed: int) -> pd.DataFrame:
    """One forward + backward of `layer` on (B, T, D) random input: every tensor the pack hook received."""
    params = {p.untyped_storage().data_ptr() for p in layer.parameters()}
    seen = []

    def pack(t: torch.Tensor) -> torch.Tensor:
        seen.append({"shape": tuple(t.shape), "dtype": str(t.dtype).removeprefix("torch."),
                     "bytes": t.nelement() * t.element_size(), "is_param": t.untyped_storage().data_ptr() in params})
        return t

    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(batch, seq, cfg.n_embd, generator=gen, requires_grad=True)  # (B, T, D)
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = layer(x)[0]  # (B, T, D)
    out.pow(2).mean().backward()
    df = pd.DataFrame(seen)
    df["kind"] = [kind_of(s, p, batch, seq, cfg.n_embd, cfg.n_head) for s, p in zip(df["shape"], df["is_param"])]
    df.insert(0, "seq_len", seq)
    df.insert(1, "order", range(len(df)))
    return df.assign(shape=df["shape"].map(lambda s: "(" + ", ".join(map(str, s)) + ")")).drop(columns="is_param")


def totals(frame: pd.DataFrame, batch: int, param_bytes: int) -> dict:
    """One row of `saved`: the unclassified bytes of every non-weight saved tensor of one forward + backward."""
    weights = frame["kind"] == "parameter"
    return {"batch": batch, "seq_len": int(frame["seq_len"].iloc[0]), "saves": len(frame),
            "activation_bytes": int(frame.loc[~weights, "bytes"].sum()),
            "parameter_save_bytes": int(frame.loc[weights, "bytes"].sum()), "parameter_bytes": param_bytes}


def attention_saved(seq_lens: list[int], batch: int, seed: int, grown_batch: int = 2,
                    bug: str | None = None) -> dict[str, pd.DataFrame]:
    """`hook_tensors` (every saved tensor per sequence length), `hooks` (tensors and bytes per kind) and `saved`
    (unclassified totals at `batch` and at `grown_batch`). `bug`: a measurement-level control (L7_BUGS); None in
    every real run."""
    if bug is not None and bug not in L7_BUGS:
        raise ValueError(f"bug must be one of {L7_BUGS} or None, got {bug!r}")
    layer, cfg = attention_layer(seed, "sdpa" if bug == L7_BUGS[0] else "eager")
    param_bytes = sum(p.nelement() * p.element_size() for p in layer.parameters())
    frames, saved = {}, []
    for b in dict.fromkeys([batch, grown_batch]):
        for t in seq_lens:
            frames[b, t] = saved_tensors(layer, cfg, 1 if bug == L7_BUGS[1] else b, t, seed)
            saved.append(totals(frames[b, t], b, param_bytes))
    tensors = pd.concat([frames[batch, t] for t in seq_lens], ignore_index=True)
    rows = []
    for t in seq_lens:
        at = tensors[tensors.seq_len == t]
        for kind in KINDS:
            sel = at[at.kind == kind]
            rows.append({"seq_len": t, "batch": batch, "hidden": cfg.n_embd, "heads": cfg.n_head, "kind": kind,
                         "tensors": len(sel), "bytes": int(sel["bytes"].sum())})
    return {"hook_tensors": tensors, "hooks": pd.DataFrame(rows), "saved": pd.DataFrame(saved)}
