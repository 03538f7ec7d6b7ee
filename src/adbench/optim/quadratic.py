"""O2: a seeded ill-conditioned least-squares problem and four full-gradient optimizers in numpy float64.

Loss L(w) = mean((X w - y)^2) over n rows and two features, the second scaled by `scale`, so the
Hessian 2 X^T X / n is constant and its eigenvalues differ by about scale^2.
"""

from __future__ import annotations

import itertools

import numpy as np


def make_problem(seed: int, rows: int, scale: float, weights: list[float], noise: float):
    """(X (rows, 2), y (rows,)): standard-normal features, column 1 times `scale`, Gaussian noise."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((rows, 2))
    X[:, 1] *= scale
    y = X @ np.asarray(weights, dtype=np.float64) + noise * rng.standard_normal(rows)
    return X, y


def loss(X: np.ndarray, y: np.ndarray, w: np.ndarray) -> float:
    """Mean squared error."""
    r = X @ w - y
    return float(r @ r) / len(y)


def hessian(X: np.ndarray, drop_two: bool = False) -> np.ndarray:
    """(2, 2) Hessian of the mean squared error; independent of w. `drop_two`: the factor 2 of d(r^2) forgotten
    (a measurement-level control only)."""
    return (1.0 if drop_two else 2.0) * X.T @ X / len(X)


def noise_floor(X: np.ndarray, y: np.ndarray, summed: bool = False) -> float:
    """Smallest reachable loss: the least-squares residual, solved directly. `summed`: the residual summed where
    the loss takes its mean (a wrong reduction; a measurement-level control only)."""
    w, *_ = np.linalg.lstsq(X, y, rcond=None)
    return loss(X, y, w) * (len(y) if summed else 1)


def run(method: str, settings: dict, X: np.ndarray, y: np.ndarray, steps: int, eps: float) -> np.ndarray:
    """Loss before each update and after the last (steps + 1,), starting from w = 0."""
    n = len(y)
    w = np.zeros(X.shape[1])
    buf = np.zeros_like(w)   # momentum buffer / Adam first moment
    sq = np.zeros_like(w)    # RMSprop / Adam second moment
    out = np.full(steps + 1, np.nan)
    with np.errstate(over="ignore", invalid="ignore"):
        for t in range(steps + 1):
            r = X @ w - y
            out[t] = r @ r / n
            if t == steps or not np.isfinite(out[t]):
                break
            g = 2.0 * X.T @ r / n
            lr = settings["lr"]
            if method == "gd":
                w = w - lr * g
            elif method == "momentum":             # heavy ball, torch.optim.SGD convention
                buf = settings["momentum"] * buf + g
                w = w - lr * buf
            elif method == "rmsprop":              # torch.optim.RMSprop convention (alpha = decay)
                sq = settings["decay"] * sq + (1 - settings["decay"]) * g * g
                w = w - lr * g / (np.sqrt(sq) + eps)
            elif method == "adam":
                b1, b2 = settings["beta1"], settings["beta2"]
                buf = b1 * buf + (1 - b1) * g
                sq = b2 * sq + (1 - b2) * g * g
                m_hat, v_hat = buf / (1 - b1 ** (t + 1)), sq / (1 - b2 ** (t + 1))
                w = w - lr * m_hat / (np.sqrt(v_hat) + eps)
            else:
                raise ValueError(f"unknown method {method!r}; expected gd, momentum, rmsprop or adam")
    if not np.isfinite(out[t]):
        out[t:] = np.inf                           # diverged: every later loss is unbounded too
    return out


def grid_settings(grid: dict[str, list[float]]) -> list[dict[str, float]]:
    """Cartesian product of a declared grid, e.g. {'lr': [..], 'momentum': [..]}, in declaration order."""
    keys = list(grid)
    return [dict(zip(keys, combo)) for combo in itertools.product(*(grid[k] for k in keys))]
