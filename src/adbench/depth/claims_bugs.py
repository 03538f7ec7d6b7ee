"""The D family's measurement-level controls (claims/bugs.py): each runs the real measurement function with one
realistic bug switched on and names the relations that must then fail. Plain data; nothing registers on import.

The arguments are the project's defaults (config.yaml's `depth` section), so a control judges the tables a
default run writes, with the bug as the only difference.
"""

from __future__ import annotations

from functools import lru_cache


from ..claims.bugs import Bug, Tables, default_config
from . import chains, residual


def _d1() -> dict:
    """config.yaml's `depth.d1` section (the source checkout's defaults)."""
    return default_config("depth")["d1"]


@lru_cache(maxsize=4)   # the chains take seconds: the correct run serves every D1 control
def _measure(bug: str | None) -> Tables:
    out = chains.measure_d1(**_d1(), bug=bug)
    return {f"D1/{k}": out[k] for k in ("chains", "fp16_probe", "residual")}


BUGS = [
    Bug(chains.D1_BUGS[0], "torch's path of the chains runs in float32, its float64 dtype dropped",
        ("chains_tape_equals_torch", "relu_chain_is_power_of_w"), _measure),
    Bug(chains.D1_BUGS[1], "the depth-6 probe is cast to bfloat16 where the documents cast to fp16",
        ("deep_gradient_rounds_to_zero_in_fp16",), _measure),
    Bug(residual.RESIDUAL_BUGS[0], "the hand J_F of the residual block forgets tanh's derivative (J_F = W)",
        ("residual_identity_plus_jacobian",), _measure),
]
