"""The O family's measurement-level controls (claims/bugs.py): each runs the real measurement function with one
realistic bug switched on and names the relations that must then fail. Plain data; nothing registers on import.

The arguments are the project's defaults (config.yaml's `optim` section), so a control judges the tables a
default run writes, with the bug as the only difference.
"""

from __future__ import annotations

from functools import lru_cache


import pandas as pd

from ..claims.bugs import Bug, Tables, default_config
from . import adam_state, first_step, memory, o1, o2


def _optim() -> dict:
    """config.yaml's `optim` section (the source checkout's defaults)."""
    return default_config("optim")


def _o1(bug: str | None) -> Tables:
    c = _optim()["o1"]
    check = o1.gradient_check(c["inputs"], c["targets"], c["hidden"], c["init_range"], c["gradcheck"]["seed"],
                              c["gradcheck"]["h"], bug=bug)
    return {"O1/gradcheck": check}


@lru_cache(maxsize=4)   # the grids take seconds: the correct run serves the floor's control
def _o2(bug: str | None) -> Tables:
    out = o2.measure_o2(**_optim()["o2"], bug=bug)
    return {f"O2/{k}": out[k] for k in ("spectrum", "ceiling", "grid", "best")}


def _o2_spectrum(bug: str | None) -> Tables:
    """The spectrum and the ceiling runs; of the grids only plain gradient descent's (the stateful ones are slow)."""
    c = _optim()["o2"]
    out = o2.measure_o2(**{**c, "grids": {"gd": c["grids"]["gd"]}}, bug=bug)
    return {f"O2/{k}": out[k] for k in ("spectrum", "ceiling")}


def _linear(bug: str | None) -> Tables:
    c = _optim()["o1"]
    return {"O1/linear": o1.linear_fit(c["inputs"], c["targets"], bug=bug)}


def _adam_bytes(bug: str | None) -> Tables:
    return {"O3/adam_bytes": adam_state.adam_state(**_optim()["o3"]["adam_state"], bug=bug)["adam_bytes"]}


def _counts(bug: str | None) -> Tables:
    counts = memory.gpt2_parameter_counts(bug=bug)
    return {"O3/counts": pd.DataFrame([{"count": k, "value": v} for k, v in counts.items()])}


def _model() -> dict:
    return {k: _optim()["o3"]["adam_state"][k] for k in ("layers", "batch", "lr", "seed")}


def _first_step(bug: str | None) -> Tables:
    return {"O3/adam_first_step": first_step.adam_first_step(**_model(), bug=bug)}


def _state(bug: str | None) -> Tables:
    return {"O3/state_by_optimizer": first_step.state_by_optimizer(**_model(), bug=bug)}


BUGS = [
    Bug(o1.O1_BUGS[0], "the checked tape writes grad = instead of += (its documented switch)",
        ("xor_gradcheck_agrees",), _o1),
    Bug(o1.O1_BUGS[1],
        "the 'affine' design gains the x0*x1 product column (degree-2 features where degree 1 was meant)",
        ("linear_model_cannot_fit_xor",), _linear),
    Bug(o2.O2_BUGS[0], "the quadratic's Hessian forgets the factor 2 of d(r^2)/dr",
        ("step_ceiling_is_stability_edge",), _o2_spectrum),
    Bug(o2.O2_BUGS[1], "the least-squares floor sums the squared residuals where the loss averages them",
        ("tuned_optimizers_reach_floor", "gradient_descent_falls_short"), _o2),
    Bug(first_step.FIRST_STEP_BUGS[0], "the hand Adam step skips the bias correction",
        ("adam_first_step_unbiased",), _first_step),
    Bug(adam_state.ADAM_STATE_BUGS[0], "AdamW's state tensors are sized by numel() without element_size()",
        ("optimizer_bytes_per_parameter", "adam_state_is_lazy"), _adam_bytes),
    Bug(memory.COUNT_BUGS[0], "the unique parameter count walks every name, the tied one twice",
        ("tied_parameter_counted_once",), _counts),
    Bug(first_step.STATE_BUGS[0], "the optimizers' state is read before their first step",
        ("state_bytes_by_optimizer",), _state),
]
