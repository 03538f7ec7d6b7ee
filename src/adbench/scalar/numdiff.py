"""Numerical derivatives: forward and central differences and the complex step."""

from __future__ import annotations

import cmath
import math
from typing import Callable

import numpy as np


def forward_difference(f: Callable[[float], float], x: float, h: float) -> float:
    """(f(x+h) - f(x)) / h: first-order truncation error."""
    return (f(x + h) - f(x)) / h


def central_difference(f: Callable[[float], float], x: float, h: float, over_h: bool = False) -> float:
    """(f(x+h) - f(x-h)) / 2h: second-order truncation error. `over_h`: a measurement-level control only, the
    factor 2 of the interval's width dropped (divides by h), a bug the claims must catch."""
    return (f(x + h) - f(x - h)) / (h if over_h else 2 * h)


def complex_step(f: Callable[[complex], complex], x: float, h: float, unscaled: bool = False) -> float:
    """Im f(x + ih) / h: no subtraction, so no cancellation (needs an analytic f). `unscaled`: a
    measurement-level control only, the division by h dropped."""
    return f(complex(x, h)).imag / (1.0 if unscaled else h)


def loglog_slope(h: np.ndarray, err: np.ndarray) -> float:
    """Least-squares slope of log10(err) against log10(h)."""
    return float(np.polyfit(np.log10(h), np.log10(err), 1)[0])


def opening_loss(a, b, tanh=math.tanh):
    """L = tanh(a*b + a), the documents' opening expression, for floats or complex."""
    return tanh(a * b + a)


def opening_loss_complex(a: complex, b: float) -> complex:
    """The opening expression with cmath.tanh, as the complex step needs."""
    return opening_loss(a, b, tanh=cmath.tanh)


def relu_real_branch(z: complex) -> complex:
    """ReLU written on the real part so it accepts complex input (S6 control)."""
    return z if z.real > 0 else 0.0 * z


def directional_loss(A: np.ndarray, x: np.ndarray) -> float:
    """L(x) = sum(tanh(A x)^2) in float64 with correctly rounded sums (S7).

    math.fsum makes every sum independent of summation order; with it the documents' five printed
    slopes reproduce to the last digit, while numpy's or torch's pairwise sums move the 11th digit.
    """
    rows = [math.tanh(math.fsum(a * xi for a, xi in zip(row, x))) for row in np.asarray(A, dtype=float).tolist()]
    return math.fsum(t * t for t in rows)
