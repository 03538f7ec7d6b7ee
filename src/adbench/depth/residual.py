"""D1's residual block: torch's Jacobian of y = x + F(x), F(x) = tanh(W x), beside I + J_F written by hand.

J_F = diag(1 - tanh^2(W x)) W (the chain rule through tanh), so the two paths share no code: torch differentiates
the whole block, the hand path adds the identity route to F's own Jacobian. The singular values of the block's
Jacobian say whether the two routes reinforce (a factor above 1) or cancel (below 1) along some direction.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import torch

# a measurement-level control (claims/bugs.py): the hand Jacobian forgets tanh's derivative, J_F = W
RESIDUAL_BUGS = ("hand J_F without tanh's derivative",)


def block(n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Seeded float64 W ~ N(0, 1/n) (n, n) and x ~ N(0, 1) (n,)."""
    g = torch.Generator().manual_seed(seed)
    W = torch.randn(n, n, generator=g, dtype=torch.float64) / math.sqrt(n)
    return W, torch.randn(n, generator=g, dtype=torch.float64)


def hand_identity_plus_jf(W: np.ndarray, x: np.ndarray, drop_activation: bool = False) -> np.ndarray:
    """I + diag(1 - tanh^2(W x)) W, in numpy float64."""
    slope = np.ones(len(x)) if drop_activation else 1 - np.tanh(W @ x) ** 2
    return np.eye(len(x)) + slope[:, None] * W


def residual_jacobian(width: int = 4, seed: int = 0, bug: str | None = None) -> pd.DataFrame:
    """One row per Jacobian entry (row, col): torch's d(x + tanh(W x))/dx and the hand I + J_F. `bug`: a
    measurement-level control (RESIDUAL_BUGS); None in every real run."""
    W, x = block(width, seed)
    J = torch.autograd.functional.jacobian(lambda v: v + torch.tanh(W @ v), x).numpy()   # (n, n)
    H = hand_identity_plus_jf(W.numpy(), x.numpy(), drop_activation=bug == RESIDUAL_BUGS[0])
    r, c = np.indices(J.shape)
    return pd.DataFrame({"row": r.ravel(), "col": c.ravel(), "torch_jacobian": J.ravel(), "hand_jacobian": H.ravel()})
