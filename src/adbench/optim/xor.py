"""O1: a 2-4-1 tanh MLP fitting XOR on the project's scalar tape, trained by hand-written optimizers.

Parameters are drawn in the order W1 (hidden x input, row-major), b1, W2, b2, each from
uniform(-r, r) of `random.Random(seed)`; with this order seed 0 starts at the documents'
step-0 loss. Training is full batch: every step sums the squared error of all rows.
"""

from __future__ import annotations

import logging
import math
import random

import pandas as pd

from ..scalar.tape import Tape, Value

log = logging.getLogger(__name__)
Params = dict[str, list]  # {"W1": [[Value]*n_in]*hidden, "b1": [Value]*hidden, "W2": [...], "b2": [Value]}


def init_params(seed: int, n_in: int, hidden: int, init_range: float) -> Params:
    """Seeded uniform(-r, r) draws for every weight and bias, in W1, b1, W2, b2 order."""
    rng = random.Random(seed)
    draws = iter([Value(rng.uniform(-init_range, init_range)) for _ in range(hidden * (n_in + 2) + 1)])
    W1 = [[next(draws) for _ in range(n_in)] for _ in range(hidden)]
    b1 = [next(draws) for _ in range(hidden)]
    W2 = [next(draws) for _ in range(hidden)]
    return {"W1": W1, "b1": b1, "W2": W2, "b2": [next(draws)]}


def flat(params: Params) -> list[Value]:
    """The 17 leaves in draw order (names from `param_names`)."""
    return [v for row in params["W1"] for v in row] + params["b1"] + params["W2"] + params["b2"]


def param_names(n_in: int, hidden: int) -> list[str]:
    """Names matching `flat`, e.g. 'W1[0][0]'."""
    return ([f"W1[{i}][{j}]" for i in range(hidden) for j in range(n_in)] + [f"b1[{i}]" for i in range(hidden)]
            + [f"W2[{i}]" for i in range(hidden)] + ["b2"])


def predict(params: Params, x: list[float]) -> Value:
    """tanh(b2 + W2 . tanh(b1 + W1 x)) for one input row, summed micrograd's way (bias first)."""
    # The summation order matters here: GD at lr 0.5 amplifies one-ulp differences (see xor_ensemble).
    h = [sum((w * xj for w, xj in zip(row, x)), b).tanh() for row, b in zip(params["W1"], params["b1"])]
    return sum((w * hi for w, hi in zip(params["W2"], h)), params["b2"][0]).tanh()


def sse(params: Params, inputs: list[list[float]], targets: list[float]) -> Value:
    """Sum over rows of (prediction - target)^2."""
    return sum(((predict(params, x) - y) ** 2 for x, y in zip(inputs, targets)), Value(0.0))


def loss_and_grads(params: Params, inputs, targets) -> tuple[float, list[float]]:
    """One full-batch forward + backward on a fresh tape; returns the loss and the 17 gradients."""
    leaves = flat(params)
    for p in leaves:
        p.grad = 0.0
    with Tape():
        loss = sse(params, inputs, targets)
        loss.backward()
    return loss.data, [p.grad for p in leaves]


def central_difference(params: Params, inputs, targets, index: int, h: float) -> float:
    """(L(p + h) - L(p - h)) / 2h for the leaf at `index` of `flat(params)`."""
    p = flat(params)[index]
    old = p.data
    p.data = old + h
    up = sse(params, inputs, targets).data
    p.data = old - h
    down = sse(params, inputs, targets).data
    p.data = old
    return (up - down) / (2 * h)


def train(params: Params, inputs, targets, *, optimizer: str, lr: float, steps: int,
          beta1: float = 0.9, beta2: float = 0.999, eps: float = 1e-8) -> pd.DataFrame:
    """Full-batch 'gd' or 'adam' updates in place; one row per step (loss before that step's update)."""
    leaves = flat(params)
    m = [0.0] * len(leaves)
    v = [0.0] * len(leaves)
    rows = []
    for t in range(steps + 1):  # row `steps` is the state after the last update
        loss, grads = loss_and_grads(params, inputs, targets)
        rows.append((t, loss, max(abs(g) for g in grads)))
        if t == steps:
            break
        if t % 500 == 0:
            log.info("%s step %d loss %.6f", optimizer, t, loss)
        for k, (p, g) in enumerate(zip(leaves, grads)):
            if optimizer == "gd":
                p.data -= lr * g
            elif optimizer == "adam":
                m[k] = beta1 * m[k] + (1 - beta1) * g        # first moment
                v[k] = beta2 * v[k] + (1 - beta2) * g * g    # second moment
                m_hat = m[k] / (1 - beta1 ** (t + 1))        # bias corrections, step count t + 1
                v_hat = v[k] / (1 - beta2 ** (t + 1))
                p.data -= lr * m_hat / (math.sqrt(v_hat) + eps)
            else:
                raise ValueError(f"optimizer must be 'gd' or 'adam', got {optimizer!r}")
    return pd.DataFrame(rows, columns=["step", "loss", "max_abs_grad"])


def measure_o1_train(inputs: list, targets: list, hidden: int, init_range: float, seeds: int,
                     steps: int, optimizer: str, gd: dict | None = None, adam: dict | None = None) -> dict:
    """Train seeds 0..seeds-1 with one optimizer (only its settings are needed); curves and finals."""
    if optimizer not in ("gd", "adam"):
        raise ValueError(f"optimizer must be 'gd' or 'adam', got {optimizer!r}")
    settings = dict(lr=gd["lr"]) if optimizer == "gd" else dict(adam or {})
    curves, finals = [], []
    for seed in range(seeds):
        params = init_params(seed, len(inputs[0]), hidden, init_range)
        curve = train(params, inputs, targets, optimizer=optimizer, steps=steps, **settings)
        curves.append(curve.assign(seed=seed))
        preds = [predict(params, x).data for x in inputs]
        finals.append({"seed": seed, "optimizer": optimizer, "lr": settings["lr"],
                       "initial_loss": curve.loss.iloc[0], "final_loss": curve.loss.iloc[-1],
                       "final_max_abs_grad": curve.max_abs_grad.iloc[-1],
                       **{f"pred_{i}": p for i, p in enumerate(preds)}})
        log.info("%s seed %d: final loss %.6f", optimizer, seed, curve.loss.iloc[-1])
    curves_df = pd.concat(curves, ignore_index=True)[["seed", "step", "loss", "max_abs_grad"]]
    return {"curves": curves_df, "finals": pd.DataFrame(finals)}
