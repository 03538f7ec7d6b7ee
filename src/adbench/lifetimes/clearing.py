"""L1's second half: clearing .grad to None or filling it with zeros gives the same next gradient; not clearing
adds the previous batch's.

Each way starts from the same seeded float64 linear layer, runs backward on a first batch, clears (or not), runs
backward on a second batch, and compares that gradient with the second batch's gradient on a fresh model.
"""

from __future__ import annotations

import pandas as pd
import torch

from .problem import _grads, _problem

CLEARINGS = (("zero_grad(set_to_none=True)", "None"), ("zero_grad(set_to_none=False)", "zeros"),
             ("not cleared", "the first batch's gradient"))
L1_BUGS = ("zero_grad forgotten",)  # a measurement-level control (claims/bugs.py): the zero-fill step skipped


def _second_batch_grad(how: str, n: int, in_features: int, out_features: int, seed: int,
                       bug: str | None) -> torch.Tensor:
    """The gradient after a first batch's backward, clearing `how`, and the second batch's backward."""
    model, x, y = _problem(n, in_features, out_features, seed)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)  # only its zero_grad is used: the weights stay put
    half = n // 2
    torch.nn.functional.mse_loss(model(x[:half]), y[:half]).backward()
    if how == CLEARINGS[0][0]:
        opt.zero_grad(set_to_none=True)
    elif how == CLEARINGS[1][0] and bug != L1_BUGS[0]:
        opt.zero_grad(set_to_none=False)
    torch.nn.functional.mse_loss(model(x[half:]), y[half:]).backward()
    return _grads(model)


def clearing_table(n_examples: int, in_features: int, out_features: int, seed: int,
                   bug: str | None = None) -> pd.DataFrame:
    """`clearing`: each way of clearing against a fresh model's second-batch gradient."""
    model, x, y = _problem(n_examples, in_features, out_features, seed)
    half = n_examples // 2
    torch.nn.functional.mse_loss(model(x[half:]), y[half:]).backward()  # into .grad = None: a first assignment
    fresh = _grads(model)
    rows = []
    for how, before in CLEARINGS:
        g = _second_batch_grad(how, n_examples, in_features, out_features, seed, bug)
        rows.append({"clearing": how, "grad_before_second_backward": before,
                     "max_abs_diff_vs_fresh": (g - fresh).abs().max().item(), "fresh_grad_norm": fresh.norm().item(),
                     "bitwise_equal": bool(torch.equal(g, fresh))})
    return pd.DataFrame(rows)
