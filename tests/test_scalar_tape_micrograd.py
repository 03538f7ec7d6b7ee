"""micrograd-style engine checks run against adbench's Value.

Modelled on micrograd's test/test_engine.py (Andrej Karpathy, MIT licence,
https://github.com/karpathy/micrograd): a sanity check on +, *, relu with constants on
either side, and a "more ops" check adding -, **, / (both sides), exp and log. The
expressions here are this project's own; each is written once and evaluated on Value and on
torch float64 tensors (the oracle), so the two sides cannot drift apart.
"""

import pytest
import torch

from adbench.scalar.tape import Value


def sanity(x):
    """Constants on both sides of + and *, relu, a reused intermediate."""
    z = 3 * x + 1 - x
    q = (z * x).relu() + z
    h = (z * z).relu()
    return h * x + q - x * q


def more_ops(a, b):
    """Every derived op micrograd users reach for, divisions on both sides included."""
    c = a - b
    d = a * b + b ** 2
    c = c + c * 2 + 1
    c = c + (1 - c) * (-a)
    d = d + 2 * d + (b - a).relu()
    e = c - d
    f = e ** 2
    g = f / 3.0 + 7.0 / f + b / a
    return g + (d * 0.1).exp() + (f + 1).log()


def on_value(fn, *xs):
    leaves = [Value(x) for x in xs]
    out = fn(*leaves)
    out.backward()
    return out.data, [v.grad for v in leaves]


def on_torch(fn, *xs):
    leaves = [torch.tensor([x], dtype=torch.float64, requires_grad=True) for x in xs]
    out = fn(*leaves)
    out.backward()
    return out.item(), [t.grad.item() for t in leaves]


def test_sanity_check():
    (v, grads), (tv, tgrads) = on_value(sanity, -3.0), on_torch(sanity, -3.0)
    assert v == tv and grads == tgrads  # small integers: exact in float64


def test_more_ops():
    (v, grads), (tv, tgrads) = on_value(more_ops, -3.0, 1.5), on_torch(more_ops, -3.0, 1.5)
    assert v == pytest.approx(tv, rel=1e-12)
    assert grads == pytest.approx(tgrads, rel=1e-12)


def test_negative_control_a_changed_expression_is_caught():
    """The comparison fails when the two sides compute different things."""
    shifted = lambda a, b: more_ops(a, b) / 2.0  # noqa: E731
    (_, grads), (_, tgrads) = on_value(shifted, -3.0, 1.5), on_torch(more_ops, -3.0, 1.5)
    assert grads != pytest.approx(tgrads, rel=1e-12)


def test_augmented_assignment_rebinds_to_a_new_node():
    """`c += 1` on a Value falls back to __add__ (no __iadd__), as in micrograd."""
    c = before = Value(2.0)
    c += 1
    assert c is not before and c.data == 3.0 and c.parents[0] is before
