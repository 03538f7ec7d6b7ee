"""Division, exp and log on the scalar tape against torch float64, with negative controls."""

import math

import pytest
import torch

from adbench.scalar.tape import Tape, Value, graph_size

# name -> f(x, y) written once with operators/methods that Value and torch tensors share.
# Every case feeds x (or y) into the op and, on a second route, into the result, so the
# closure's contribution is accumulated with another one (what the overwrite bug breaks).
CASES = {
    "truediv": (lambda x, y: x / y + x, (1.5, -2.5)),
    "truediv_const": (lambda x, y: x / 4.0 * y + x, (-0.75, 3.0)),
    "rtruediv": (lambda x, y: 3.0 / x + x * y, (0.8, 1.25)),
    "exp": (lambda x, y: (x * y).exp() * x, (0.7, -1.3)),
    "log": (lambda x, y: (x * y).log() * y, (2.0, 0.45)),
}


def tape_eval(f, x0, y0, **bug):
    """Value and gradients of f at (x0, y0) on the tape; `bug` is a Tape/backward switch."""
    order = bug.pop("order", "reverse")
    with Tape(**bug):
        x, y = Value(x0), Value(y0)
        out = f(x, y)
        out.backward(order=order)
    return out.data, x.grad, y.grad


def torch_eval(f, x0, y0):
    """The same in torch float64: the oracle."""
    x = torch.tensor(x0, dtype=torch.float64, requires_grad=True)
    y = torch.tensor(y0, dtype=torch.float64, requires_grad=True)
    out = f(x, y)
    out.backward()
    return out.item(), x.grad.item(), y.grad.item()


def agrees(got, want, rel=1e-13):
    """Every component within a relative 1e-13 (a few float64 ulps) of the oracle."""
    return all(g == pytest.approx(w, rel=rel, abs=1e-15) for g, w in zip(got, want))


@pytest.mark.parametrize("name", CASES)
def test_op_matches_torch_float64(name):
    f, (x0, y0) = CASES[name]
    assert agrees(tape_eval(f, x0, y0), torch_eval(f, x0, y0))


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("bug", [{"overwrite": True}, {"order": "forward"}])
def test_negative_control_the_same_check_catches_a_broken_tape(name, bug):
    f, (x0, y0) = CASES[name]
    assert not agrees(tape_eval(f, x0, y0, **bug), torch_eval(f, x0, y0))


@pytest.mark.parametrize("x0", [-1.0, 0.123, 2.0, 30.0])
def test_exp_closure_is_exp(x0):
    x = Value(x0)
    out = x.exp()
    out.backward()
    assert out.data == math.exp(x0) and x.grad == math.exp(x0)


@pytest.mark.parametrize("x0", [1e-300, 0.123, 1.0, 2.0, 1e300])
def test_log_closure_is_reciprocal(x0):
    x = Value(x0)
    out = x.log()
    out.backward()
    assert out.data == math.log(x0) and x.grad == 1.0 / x0


def test_division_by_a_value_quotient_rule():
    a, b = Value(3.0), Value(-2.0)
    (a / b).backward()
    assert a.grad == pytest.approx(1 / -2.0, rel=1e-15)
    assert b.grad == pytest.approx(-3.0 / 4.0, rel=1e-15)  # -a / b^2


def test_division_is_micrograd_decomposition_node_counts():
    with Tape() as t:
        a, b = Value(3.0), Value(-2.0)   # 2 leaves
        q = a / b                        # b**-1 and a * (.): 2 op nodes
    assert (t.nodes, t.ops, graph_size(q)) == (4, 2, 4)
    assert [q.op, q.parents[1].op] == ["*", "**-1"]
    with Tape() as t:
        r = 6.0 / Value(4.0)             # leaf, **-1, constant 6.0, *
    assert (t.nodes, t.ops, r.data) == (4, 2, 1.5)


def test_log_of_non_positive_is_refused_and_exp_overflow_raises():
    with pytest.raises(ValueError, match="non-positive"):
        Value(0.0).log()
    with pytest.raises(ValueError, match="non-positive"):
        Value(-1.0).log()
    with pytest.raises(OverflowError):
        Value(1000.0).exp()
