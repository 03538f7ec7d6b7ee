"""G1-G4: one controlled target ("The capital of France is" -> " Paris"), one backward pass."""

from __future__ import annotations

import logging
import math

import pandas as pd
import torch

from ..tables import values_table
from .common import DOC_LAYERS, load_model, mapped_index, mapping_note, norm
from .load import gpt2_small_parameters

log = logging.getLogger(__name__)

# Measurement-level controls (claims/bugs.py), never on in a real run: zero_grad called after backward, before the
# q/k/v split reads the gradients; the direction check's sign flipped (the "against" move steps with the gradient).
PROMPT_BUGS = ("zero_grad after backward", "direction sign flipped")


def target_loss(model, prompt_ids: list[int], target_ids: list[int], hidden: bool = False):
    """NLL of the target tokens after the prompt (sum over target tokens) and the model output."""
    ids = torch.tensor([prompt_ids + target_ids], device=next(model.parameters()).device)
    out = model(ids, use_cache=False, output_hidden_states=hidden)
    logp = torch.log_softmax(out.logits[0, len(prompt_ids) - 1:-1].float(), dim=-1)  # (n_target, V)
    nll = -logp.gather(-1, ids[0, len(prompt_ids):, None]).sum()
    return nll, out


def measure_prompt(model: dict, prompt: str, target: str, g3_layers: list[int], g4_layer: int,
                   g4_distance: float, device: str = "cpu", bug: str | None = None) -> dict:
    """G1 probability and NLL, G2 residual-state gradient norms, G3 q/k/v split, G4 direction check.
    `bug`: a measurement-level control (PROMPT_BUGS); None in every real run."""
    loaded = load_model(model, device)  # model: gpt2_model's record (model.json)
    net, tok, info = loaded.model, loaded.tokenizer, loaded.info
    src = info["model_source"]
    p_ids, t_ids = tok.encode(prompt), tok.encode(target)
    log.info("model %s; prompt %d tokens, target %d tokens", src, len(p_ids), len(t_ids))
    nll, out = target_loss(net, p_ids, t_ids, hidden=True)  # nll: scalar, summed over target tokens
    states = out.hidden_states  # 13 x (1, T, C) for GPT-2 small; the last one is after ln_f
    for h in states:
        h.retain_grad()
    net.zero_grad(set_to_none=True)
    nll.backward()
    if bug == PROMPT_BUGS[0]:
        net.zero_grad(set_to_none=False)
    last = len(p_ids) - 1  # position whose output predicts the (first) target token
    g2 = pd.DataFrame({"state": range(len(states)),
                       "grad_norm_last_token": [norm(h.grad[0, last]) for h in states]})
    g3 = _qkv_split(net)
    g4 = _direction_check(net, p_ids, t_ids, g4_layer, g4_distance, nll.item(), -1.0 if bug == PROMPT_BUGS[1] else 1.0)
    target_row = {"prompt": prompt, "target": target, "prompt_tokens": len(p_ids), "target_tokens": len(t_ids),
                  "nll": nll.item(), "probability": math.exp(-nll.item()),
                  **{k: info[k] for k in ("model_source", "unique_parameters", "tokenizer")}}
    return {
        "G1": {"values": _g1_values(nll.item(), len(t_ids), info), "target": pd.DataFrame([target_row])},
        "G2": {"values": _g2_values(g2, src), "states": g2},
        "G3": {"values": _g3_values(g3, g3_layers, src), "qkv": g3},
        "G4": {"values": _g4_values(g4, src), "direction": g4},
        "_meta": info,
    }


def _qkv_split(net) -> pd.DataFrame:
    """Frobenius norms of the q/k/v column blocks of every layer's c_attn weight gradient."""
    rows = []
    for i, block in enumerate(net.transformer.h):
        g = block.attn.c_attn.weight.grad  # Conv1D layout (C, 3C): output columns are q | k | v
        q, k, v = g.split(g.shape[1] // 3, dim=1)
        rows.append({"layer": i, "q": norm(q), "k": norm(k), "v": norm(v)})
    return pd.DataFrame(rows)


@torch.no_grad()
def _direction_check(net, p_ids, t_ids, layer: int, distance: float, original: float,
                     sign_of_against: float = 1.0) -> pd.DataFrame:
    """Move layer `layer`'s query slice by `distance` against/with its unit gradient, then restore it.
    `sign_of_against` -1 only for PROMPT_BUGS (the moves' signs swapped)."""
    w = net.transformer.h[layer].attn.c_attn.weight
    c = w.shape[1] // 3
    saved = w.detach().clone()
    step = w.grad[:, :c] / torch.linalg.vector_norm(w.grad[:, :c])  # unit direction, (C, C)
    rows = []
    for name, sign in (("against", -sign_of_against), ("with", sign_of_against)):
        w[:, :c] += sign * distance * step
        moved = float(torch.linalg.vector_norm((w - saved).double()))
        rows.append({"move": name, "loss": float(target_loss(net, p_ids, t_ids)[0]), "l2_moved": moved})
        w.copy_(saved)
    restored = float(target_loss(net, p_ids, t_ids)[0])
    rows.append({"move": "restored", "loss": restored, "l2_moved": float(torch.linalg.vector_norm((w - saved).double()))})
    out = pd.DataFrame(rows)
    out["original"] = original
    out["bitwise_equal_to_original"] = out["loss"] == original  # both are exact fp32 values
    return out


def _g1_values(nll: float, n_target: int, info: dict) -> pd.DataFrame:
    src = info["model_source"]
    notes = {} if n_target == 1 else {q: f"target is {n_target} tokens under this tokenizer; probability of all of them"
                                      for q in ("target_prob", "target_nll")}
    v = values_table("G1", [("target_prob", math.exp(-nll)), ("target_nll", nll)], notes, model_source=src)
    count = values_table("G1", [("unique_parameters", gpt2_small_parameters())],
                         {"unique_parameters": "counted by code from the default GPT2Config on the meta device; "
                                               f"the model in use has {info['unique_parameters']:,}"})
    return pd.concat([v.astype({"value": object}), count.astype({"value": object})], ignore_index=True)  # int stays int


def _g2_values(g2: pd.DataFrame, src: str) -> pd.DataFrame:
    n = len(g2)
    used = [mapped_index(i, DOC_LAYERS + 1, n) for i in range(DOC_LAYERS + 1)]
    items = [(f"state_{i:02d}", float(g2.grad_norm_last_token[u])) for i, u in enumerate(used)]
    notes = {f"state_{i:02d}": mapping_note(i, u, "state") for i, u in enumerate(used)}
    return values_table("G2", items, notes, model_source=src)


def _g3_values(g3: pd.DataFrame, layers: list[int], src: str) -> pd.DataFrame:
    items, notes = [], {}
    for layer in layers:
        u = mapped_index(layer, DOC_LAYERS, len(g3))
        for part in ("q", "k", "v"):
            items.append((f"layer{layer}_{part}", float(g3[part][u])))
            notes[f"layer{layer}_{part}"] = mapping_note(layer, u, "layer")
    return values_table("G3", items, notes, model_source=src)


def _g4_values(g4: pd.DataFrame, src: str) -> pd.DataFrame:
    d = g4.set_index("move")
    exact = bool(d.loc["restored", "bitwise_equal_to_original"])
    gap = d.loc["restored", "loss"] - d.loc["restored", "original"]
    losses = values_table("G4", [(q, float(d.loc[m, "loss"])) for q, m in
                                 (("loss_against", "against"), ("loss_with", "with"), ("loss_restored", "restored"))],
                          model_source=src)
    text = "restored exactly (bit for bit)" if exact else f"not restored: differs by {gap:.3e}"
    # the closing section's 8-digit losses: the same measurements, printed again with more digits
    digits8 = values_table("G4", [("loss_original_8digits", float(d.loc["restored", "original"])),
                                  ("loss_against_8digits", float(d.loc["against", "loss"])),
                                  ("loss_with_8digits", float(d.loc["with", "loss"]))], model_source=src)
    # relations that hold for any model, so they are judged on the random fallback too
    ordered = d.loc["against", "loss"] < d.loc["restored", "original"] < d.loc["with", "loss"]
    props = values_table("G4", [("ordering_against_original_with", "true" if ordered else "false"),
                                ("restoration_bitwise", "true" if exact else "false")],
                         {"ordering_against_original_with": "loss_against {:.9g} < original {:.9g} < loss_with {:.9g}".format(
                             d.loc["against", "loss"], d.loc["restored", "original"], d.loc["with", "loss"])})
    return pd.concat([losses, values_table("G4", [("restoration", text)]), digits8, props], ignore_index=True)
