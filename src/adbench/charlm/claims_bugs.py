"""C1's measurement-level controls (claims/bugs.py): the real training loop, evaluator and checks on a tiny
character model (one or two blocks, a few steps; seconds), with one realistic bug switched on, and the relations
that must then fail. Plain data; nothing registers on import.

Only the tables a relation reads are built; the per-run summary columns are computed as charlm/summary.py
computes them. The text is a fixed paragraph (a checkout holds no corpus): every relation named here holds on
any text the model can learn to copy or predict.
"""

from __future__ import annotations

from functools import lru_cache

import pandas as pd
import torch

from ..claims.bugs import Bug, Tables
from . import checks, evaluate, train
from .claims import FOUR_BUGS
from .variants import switches

TRAIN_TEXT = ("Backprop is a sort and a loop over closures. Every bug above is a bookkeeping error in that loop or "
              "around it; what it cannot do is fail loudly, so the logging has to. ") * 12
# held-out: other sentences, in characters the training text holds (a copying model copies only what it has seen)
HELDOUT_TEXT = ("Every loop is a sort of bookkeeping; a bug can fail loudly, or it can sit in the logging around the "
                "closures. ") * 4
CORPUS = TRAIN_TEXT + HELDOUT_TEXT
VOCAB = "".join(sorted(set(CORPUS)))
TINY = dict(batch_size=16, block_size=32, n_layer=1, n_head=2, n_embd=32, lr=5e-3, weight_decay=0.1,
            betas=(0.9, 0.99), grad_clip=0.0, control_clip=1.0, log_every=1, loss_scale=40.0, seed=0,
            gemm_backend="default")
COPY_STEPS = 100  # the unshifted run learns to copy its input well within this (its training loss far below 0.1)


def _train(variant: str, steps: int, bug: str | None) -> dict:
    return train.train_variant(variant, TRAIN_TEXT, VOCAB, steps=steps, **TINY, bug=bug)


def _summary(runs: dict[str, dict]) -> pd.DataFrame:
    """C1/summary's columns the relations read, per run, as charlm/summary.py computes them."""
    rows = []
    for v, r in runs.items():
        pos = r["grad_norms"][r["grad_norms"].group == "position_table"].grad_norm if len(r["grad_norms"]) else None
        rows.append({"variant": v, "loss_scale": TINY["loss_scale"] if switches(v)["scale_loss"] else 1.0,
                     "final_train_loss": r["curve"].train_loss.tail(20).mean(),
                     "position_grad_min": pos.min() if pos is not None else float("nan"),
                     "position_grad_max": pos.max() if pos is not None else float("nan"),
                     **r["run"].iloc[0][["steps", "raised", "steps_completed"]].to_dict()})
    return pd.DataFrame(rows)


@lru_cache(maxsize=None)
def _first_gradient(bug: str | None) -> Tables:
    runs = {v: _train(v, 1, bug) for v in ("correct", "loss_scaled")}
    return {"C1/grad_norms": pd.concat([r["grad_norms"] for r in runs.values()], ignore_index=True),
            "C1/summary": _summary(runs)}


@lru_cache(maxsize=None)
def _detached(bug: str | None) -> Tables:
    runs = {v: _train(v, 3, bug) for v in ("correct", "detached_positions")}
    drift = checks.weight_drift([r["weights"] for r in runs.values()], list(runs), TINY["seed"])
    return {"C1/grad_norms": pd.concat([r["grad_norms"] for r in runs.values()], ignore_index=True),
            "C1/summary": _summary(runs), "C1/checks/drift": drift}


@lru_cache(maxsize=None)
def _loud(bug: str | None) -> Tables:
    return {"C1/summary": _summary({v: _train(v, 2, bug) for v in FOUR_BUGS})}


@lru_cache(maxsize=None)
def _sgd(bug: str | None) -> Tables:
    c = TINY
    model = checks.initial_model(len(VOCAB), c["block_size"], c["n_layer"], c["n_head"], c["n_embd"], c["seed"])
    data = train.encode(TRAIN_TEXT, VOCAB)
    gen = torch.Generator().manual_seed(c["seed"])
    batches = [train.get_batch(data, c["batch_size"], c["block_size"], True, gen) for _ in range(3)]
    return {"C1/checks/sgd_steps": checks.sgd_steps(model.double(), batches, c["lr"], c["loss_scale"], bug=bug)}


@lru_cache(maxsize=None)
def _one_step(bug: str | None) -> Tables:
    c = TINY
    model = checks.initial_model(len(VOCAB), c["block_size"], c["n_layer"], c["n_head"], c["n_embd"], c["seed"])
    gen = torch.Generator().manual_seed(c["seed"])
    x, y = train.get_batch(train.encode(TRAIN_TEXT, VOCAB), c["batch_size"], c["block_size"], True, gen)
    return {"C1/checks/one_step": checks.one_step(model.double(), x, y, c["lr"], c["weight_decay"], c["betas"],
                                                  c["loss_scale"], bug=bug)}


@lru_cache(maxsize=1)
def _unshifted() -> dict:
    return _train("unshifted_targets", COPY_STEPS, None)


@lru_cache(maxsize=None)
def _shared_path(bug: str | None) -> Tables:
    run = _unshifted()
    ev = evaluate.measure_eval([run["weights"]], ["unshifted_targets"], CORPUS, TRAIN_TEXT, HELDOUT_TEXT, bug=bug)
    summary = _summary({"unshifted_targets": run}).assign(heldout_loss=float(ev["heldout"].heldout_loss.iloc[0]))
    shared = checks.training_path_heldout(run["weights"], "unshifted_targets", HELDOUT_TEXT, VOCAB,
                                          TINY["batch_size"], TINY["seed"])
    return {"C1/summary": summary, "C1/baselines": ev["baselines"], "C1/checks/shared_path": shared}


BUGS = [
    Bug(train.TRAIN_BUGS[0], "the scaled run's loss factor dropped before backward (a dropped factor)",
        ("scaled_loss_scales_first_gradient",), _first_gradient),
    Bug(train.TRAIN_BUGS[1], "the detached run's `pos.detach()` result discarded: the table stays attached",
        ("detached_positions_get_no_gradient", "detached_zero_from_step_one", "detached_table_ends_at_init"),
        _detached),
    Bug(train.TRAIN_BUGS[2], "the (B, T, vocab) logits handed to cross_entropy unflattened: every run raises",
        ("no_bug_raises",), _loud),
    Bug(checks.CHECK_BUGS[0], "the 'scale x lr' SGD run built with lr alone (a dropped factor)",
        ("sgd_scaled_loss_is_scaled_lr",), _sgd),
    Bug(checks.CHECK_BUGS[1], "the AdamW eps-term prediction puts eps inside the square root",
        ("adamw_scaled_loss_step_up_to_eps",), _one_step),
    Bug(evaluate.EVAL_BUGS[0], "the independent evaluator's own target shift dropped: it shares the unshifted bug",
        ("shared_data_path_hides_unshifted",), _shared_path),
]
