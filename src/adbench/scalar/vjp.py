"""S8: backward from a non-scalar output needs an upstream vector v and returns vᵀJ (doc 000, "one output
changed the useful direction"). torch refuses `y.backward()` on a vector y; `y.backward(v)` is compared
with v @ J, J from torch.autograd.functional.jacobian (float64); backward with a vector of ones, the
natural wrong guess, is the control."""

from __future__ import annotations

import pandas as pd


def vector_output(x):
    """y_i = tanh(x_i x_{i-1}) + x_i: a vector output, each entry coupled to its neighbour; (n,) -> (n,)."""
    import torch

    return torch.tanh(x * x.roll(1)) + x


def vjp_tables(x: list[float], v: list[float], transposed: bool = False) -> dict[str, pd.DataFrame]:
    """The error text of y.backward(), and y.backward(v) beside v @ J per input. `transposed`: a
    measurement-level control only, J @ v (J's rows taken as inputs) in place of v @ J."""
    import torch

    F64 = torch.float64
    xt = torch.tensor(x, dtype=F64, requires_grad=True)
    try:
        vector_output(xt).backward()
        outcome = "no error"
    except RuntimeError as err:                       # the installed torch's own words
        outcome = f"{type(err).__name__}: {err}"
    calls = [{"call": "y.backward()", "outcome": outcome, "result_shape": ""}]
    vt = torch.tensor(v, dtype=F64)
    xt.grad = None
    vector_output(xt).backward(vt)
    vjp = xt.grad.clone()
    xt.grad = None
    vector_output(xt).backward(torch.ones_like(vt))   # control: an all-ones upstream vector
    ones = xt.grad.clone()
    jac = torch.autograd.functional.jacobian(vector_output, torch.tensor(x, dtype=F64))   # (n_out, n_in)
    vj = jac @ vt if transposed else vt @ jac                                              # (n_in,)
    calls += [{"call": "y.backward(v)", "outcome": "ok", "result_shape": str(tuple(vjp.shape))},
              {"call": "jacobian(f, x)", "outcome": "ok", "result_shape": str(tuple(jac.shape))}]
    table = pd.DataFrame({"input": [f"x{i}" for i in range(len(x))], "x": x, "v": v,
                          "backward_v": vjp.tolist(), "v_at_jacobian": vj.tolist(),
                          "abs_diff": (vjp - vj).abs().tolist(), "backward_ones": ones.tolist(),
                          "ones_abs_diff": (ones - vj).abs().tolist()})
    return {"nonscalar": pd.DataFrame(calls), "vjp": table}
