"""Pieces the GPT-2 probes share: loading the resolved model, losses, norms, documented-index mapping."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from .load import Loaded, load_resolved

# Layer and state indices the documents printed are for GPT-2 small (12 blocks).
DOC_LAYERS = 12


def load_model(model: dict, device: str) -> Loaded:
    """The model and tokenizer of gpt2_model's record (results/gpt2/model.json), on `device`."""
    return load_resolved(model, device)


def token_nll(logits: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
    """Per-position surprise -log p(ids[t+1] | ids[:t+1]); logits (B, T, V), ids (B, T) -> (B, T-1)."""
    logp = F.log_softmax(logits[:, :-1].float(), dim=-1)
    return -logp.gather(-1, ids[:, 1:, None]).squeeze(-1)


def norm(t: torch.Tensor) -> float:
    """Frobenius / L2 norm in float64 (so the summary does not add fp32 rounding)."""
    return float(torch.linalg.vector_norm(t.detach().double()))


def mapped_index(doc_index: int, doc_count: int, count: int) -> int:
    """Nearest index at the same relative depth when the model is smaller than the documents'."""
    if count == doc_count:
        return doc_index
    return min(count - 1, round(doc_index * (count - 1) / (doc_count - 1)))


def mapping_note(doc_index: int, used: int, what: str) -> str:
    """Note for a row measured at a different index than the documents printed."""
    return "" if doc_index == used else f"model is smaller than GPT-2 small: {what} {used} stands in for {doc_index}"
