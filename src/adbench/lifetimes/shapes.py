"""L7: activation bytes from shapes alone, read off a GPT-2 small config object."""

from __future__ import annotations

import pandas as pd

from ..tables import values_table
from .attention_saved import attention_saved

MIB = 2 ** 20


def gpt2_small_dims() -> dict:
    """(hidden size, heads, layers) of transformers' GPT2Config() defaults; builds no model, downloads nothing."""
    from transformers import GPT2Config

    cfg = GPT2Config()
    return {"hidden": cfg.n_embd, "heads": cfg.n_head, "layers": cfg.n_layer, "vocab": cfg.vocab_size}


def residual_bytes(batch: int, seq: int, hidden: int, elem: int) -> int:
    """One residual state: B * T * D elements."""
    return batch * seq * hidden * elem


def score_bytes(batch: int, heads: int, seq: int, elem: int) -> int:
    """Dense attention scores of one layer: B * H * T * T elements (both position axes)."""
    return batch * heads * seq * seq * elem


def measure_l7(prompt_tokens: int, context: int, batch: int, bytes_per_element: int,
               sweep_seq: list[int], hooks: dict) -> dict:
    """L7: residual-state and attention-score bytes at the prompt length, the context, and a sweep; plus
    `hooks`/`hook_tensors`/`saved`, what a saved-tensor hook sees in eager GPT-2 attention (`hooks`: its settings)."""
    d = gpt2_small_dims()
    D, H, L, e = d["hidden"], d["heads"], d["layers"], bytes_per_element
    states = L + 1  # one before the first block, one after each block
    sweep = pd.DataFrame([{"seq_len": t, "batch": 1, "residual_state_bytes": residual_bytes(1, t, D, e),
                           "all_residual_states_bytes": states * residual_bytes(1, t, D, e),
                           "scores_per_layer_bytes": score_bytes(1, H, t, e),
                           "scores_all_layers_bytes": L * score_bytes(1, H, t, e)} for t in sweep_seq])
    items = [("hidden_size", D), ("heads", H), ("layers", L), ("residual_states", states),
             ("state_bytes_prompt", residual_bytes(1, prompt_tokens, D, e)),
             ("states_bytes_prompt", states * residual_bytes(1, prompt_tokens, D, e)),
             ("state_mib_context", residual_bytes(1, context, D, e) / MIB),
             ("states_mib_context", states * residual_bytes(1, context, D, e) / MIB),
             ("states_mib_context_batch", states * residual_bytes(batch, context, D, e) / MIB),
             ("scores_bytes_context", score_bytes(1, H, context, e)),
             ("scores_mib_context", score_bytes(1, H, context, e) / MIB),
             ("scores_mib_context_all_layers", L * score_bytes(1, H, context, e) / MIB),
             ("scores_bytes_prompt", score_bytes(1, H, prompt_tokens, e)),
             ("seq_growth", context / prompt_tokens),
             ("score_element_growth", score_bytes(1, H, context, e) / score_bytes(1, H, prompt_tokens, e))]
    return {"values": values_table("L7", items), "sweep": sweep, **attention_saved(**hooks),
            "_meta": {"model_config": "transformers.GPT2Config() defaults", **d}}
