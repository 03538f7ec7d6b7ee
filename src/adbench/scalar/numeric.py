"""S5-S8: the finite-difference valley, the complex step, directional checks, forward mode."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from .blind import blind_spots, dropout_check
from .dual import Dual, count_ops
from .numdiff import (central_difference, complex_step, directional_loss, forward_difference,
                      loglog_slope, opening_loss, opening_loss_complex, relu_real_branch)
from .seeds import reconstruction
from .vjp import vjp_tables
from ..tables import values_table
from .probes import tape_gradients
from .tape import Tape, Value


def _hkey(h: float) -> str:
    """Quantity suffix for a step: 1e-05 -> '1e-05', 1e-100 -> '1e-100'."""
    return f"{h:.0e}"


# measurement-level controls (claims/bugs.py): the factor 2 dropped from the central difference's width; the
# float32 sweep run in float64 (its casts dropped)
S5_BUGS = ("central difference over h", "float32 casts dropped")


def central_float32(a: float, b: float, h: float, cast: bool = True) -> float:
    """The central difference of tanh(a*b + a) with every operand and operation in float32 (S5's other dtype)."""
    f32 = np.float32 if cast else np.float64
    x, hh, bb = f32(a), f32(h), f32(b)
    f = lambda t: np.tanh(t * bb + t)  # noqa: E731  stays in the operands' dtype
    return float((f(x + hh) - f(x - hh)) / (f32(2) * hh))


def measure_s5(a: float, b: float, sweep_h: list[float], slope_fit_h: list[float], bug: str | None = None) -> dict:
    """S5: forward/central difference error vs the tape across a sweep of h, and the central difference again in
    float32 (where its valley bottoms out). `bug`: a measurement-level control (S5_BUGS); None in every real run."""
    _, exact, _ = tape_gradients(a, b)
    f = lambda x: opening_loss(x, b)  # noqa: E731
    rows = []
    for h in sweep_h:
        fd, cd = forward_difference(f, a, h), central_difference(f, a, h, over_h=bug == S5_BUGS[0])
        c32 = central_float32(a, b, h, cast=bug != S5_BUGS[1])
        rows.append({"h": h, "forward_est": fd, "forward_err": abs(fd - exact),
                     "central_est": cd, "central_err": abs(cd - exact),
                     "central_est_float32": c32, "central_err_float32": abs(c32 - exact)})
    sweep = pd.DataFrame(rows)
    lo, hi = slope_fit_h
    fit = sweep[(sweep.h >= lo * (1 - 1e-9)) & (sweep.h <= hi * (1 + 1e-9))]
    slopes = {m: loglog_slope(fit.h.to_numpy(), fit[f"{m}_err"].to_numpy()) for m in ("forward", "central")}
    items = []
    for r in rows:
        k = _hkey(r["h"])
        items += [(f"central_err_h{k}", r["central_err"]), (f"central_est_h{k}", r["central_est"]),
                  (f"forward_err_h{k}", r["forward_err"])]
    items += [(f"central_err_h{_hkey(h)}_4sig", sweep.loc[sweep.h == h, "central_err"].item())
              for h in (1e-5, 1e-6, 1e-8) if (sweep.h == h).any()]  # the second table's 4-digit errors
    items += [("central_best_h", sweep.loc[sweep.central_err.idxmin(), "h"]),
              ("forward_best_h", sweep.loc[sweep.forward_err.idxmin(), "h"]),
              ("forward_slope", slopes["forward"]), ("central_slope", slopes["central"])]
    fits = pd.DataFrame([{"method": m, "slope": s, "theory": {"forward": 1, "central": 2}[m],
                          "h_min": lo, "h_max": hi, "points": len(fit)} for m, s in slopes.items()])
    return {"values": values_table("S5", items), "sweep": sweep, "slopes": fits}


# measurement-level controls (claims/bugs.py): the division by h dropped; the exception text, meant for the
# max(0, x + ih) row alone, broadcast to every row of the outcome column
S6_BUGS = ("complex step not divided by h", "exception text on every control")


def measure_s6(a: float, b: float, complex_h: list[float], complex_controls_at: float,
               bug: str | None = None) -> dict:
    """S6: the complex step across h, and the controls where it works and where it fails. `bug`: a
    measurement-level control (S6_BUGS); None in every real run."""
    _, exact, _ = tape_gradients(a, b)
    unscaled = bug == S6_BUGS[0]
    rows = []
    for h in complex_h:
        est = complex_step(lambda z: opening_loss_complex(z, b), a, h, unscaled)
        rows.append({"h": h, "estimate": est, "abs_err": abs(est - exact)})
    sweep = pd.DataFrame(rows)
    x = complex_controls_at
    controls = [("tanh_deriv_1.5", "tanh at 1.5", complex_step(lambda z: opening_loss_complex(z, 0.0), 1.5, 1e-20),
                 1 - math.tanh(1.5) ** 2),
                (f"relu_branch_+{x:g}", f"ReLU branch at +{x:g}", complex_step(relu_real_branch, x, 1e-20, unscaled),
                 1.0),
                (f"relu_branch_-{x:g}", f"ReLU branch at -{x:g}", complex_step(relu_real_branch, -x, 1e-20, unscaled),
                 0.0),
                ("relu_branch_0", "ReLU branch at 0 (kink)", complex_step(relu_real_branch, 0.0, 1e-20), math.nan),
                (f"abs_+{x:g}", f"abs at +{x:g}", complex_step(abs, x, 1e-20), 1.0)]
    try:
        max(0, complex(x, 1e-20))
        exc = "none"
    except TypeError as e:  # Python cannot order complex numbers
        exc = type(e).__name__
        exc_text = str(e)
    table = pd.DataFrame([{"control": d, "complex_step": v, "real_slope": r} for _, d, v, r in controls]
                         + [{"control": f"max(0, {x:g}+ih)", "complex_step": math.nan, "real_slope": 1.0}])
    text = f"{exc}: {exc_text}" if exc != "none" else "no exception"
    table["outcome"] = text if bug == S6_BUGS[1] else [""] * len(controls) + [text]
    items = [(f"est_h{_hkey(h)}", e) for h, e in zip(sweep.h, sweep.estimate)]
    items += [(f"err_h{_hkey(h)}", e) for h, e in zip(sweep.h, sweep.abs_err)]
    items += [(q, v) for q, _, v, _ in controls] + [("max_exception", exc)]
    return {"values": values_table("S6", items), "sweep": sweep, "controls": table}


def s7_problem(seed: int, rows: int, cols: int, directions: int):
    """S7's A (rows, cols), x (cols,), torch's gradient (cols,) and unit directions, each (cols,)."""
    import torch  # here, so the S5/S6 jobs skip torch's import

    # torch's generator, A then x then one direction at a time: seed 47 reproduces every printed digit
    gen = torch.Generator().manual_seed(seed)
    A = torch.randn(rows, cols, dtype=torch.float64, generator=gen).numpy()
    x = torch.randn(cols, dtype=torch.float64, generator=gen).numpy()
    xt = torch.tensor(x, requires_grad=True)
    (torch.tanh(torch.tensor(A) @ xt) ** 2).sum().backward()
    vs = [torch.randn(cols, dtype=torch.float64, generator=gen) for _ in range(directions)]
    return A, x, xt.grad, [vt / vt.norm() for vt in vs]


def fresh_directions(seed: int, rows: int, cols: int, directions: int) -> list:
    """`directions` more unit directions (cols,), the generator's next draws after s7_problem's: independent of
    the documented directions and of their central differences (S7's blind spots)."""
    import torch

    gen = torch.Generator().manual_seed(seed)
    for shape in [(rows, cols), (cols,)] + [(cols,)] * directions:   # replay A, x and the documented directions
        torch.randn(*shape, dtype=torch.float64, generator=gen)
    vs = [torch.randn(cols, dtype=torch.float64, generator=gen) for _ in range(directions)]
    return [vt / vt.norm() for vt in vs]


# measurement-level controls (claims/bugs.py): a central difference divided by h instead of 2h in one check; the
# dropout check reseeding the generator in both mask regimes
S7_BUGS = ("directions: slope over h", "coordinate 0: slope over h", "kink: slope over h",
           "dropout: reseeded in both regimes", "mutations: slope over h")


def measure_s7(seed: int, rows: int, cols: int, directions: int, h: float, control_coordinate: int,
               control_delta: float, small_delta: float, orthogonal_to: int, dropout: dict,
               relu_at: list[float], mutations: dict, bug: str | None = None) -> dict:
    """S7: directional checks of a torch gradient, a corrupted gradient they must catch, how many fresh
    directions see a given error, a check through dropout, ReLU's kink, and four mutated backward rules.
    `bug`: a measurement-level control (S7_BUGS, blind.BLIND_BUGS); None in every real run."""
    from .mutated import mutation_check, relu_kink  # torch at import: the S5/S6 jobs skip it

    A, x, grad, vs = s7_problem(seed, rows, cols, directions)
    g = grad.numpy().copy()
    bad = g.copy()
    bad[control_coordinate] += control_delta
    width = h if bug == S7_BUGS[0] else 2 * h
    out = []
    for d, vt in enumerate(vs):
        v = vt.numpy()
        slope = (directional_loss(A, x + h * v) - directional_loss(A, x - h * v)) / width
        gv = float(grad @ vt)  # torch's float64 dot, as the documents' g dot v
        out.append({"direction": d, "numerical_slope": slope, "grad_dot_v": gv,
                    "abs_error": abs(slope - gv), "corrupted_dot_v": float(bad @ v),
                    "corrupted_abs_error": abs(slope - float(bad @ v))})
    table = pd.DataFrame(out)
    e0 = np.zeros(cols)
    e0[0] = 1.0
    coord0 = (directional_loss(A, x + h * e0) - directional_loss(A, x - h * e0)) / (h if bug == S7_BUGS[1] else 2 * h)
    items = [(f"{col}_d{r.direction}", getattr(r, col)) for r in table.itertuples()
             for col in ("numerical_slope", "grad_dot_v", "abs_error")]  # the documents' 5 x 3 table
    # The coordinate-0 check compares the corrupted gradient's coordinate 0 with the true one (the
    # bug is invisible there: exactly 0); the finite-difference version of that check adds only noise.
    items += [("max_abs_error", table.abs_error.max()),
              ("control_coord0_error", abs(float(bad[0]) - float(g[0]))),
              ("control_coord0_fd_error", abs(coord0 - bad[0])),
             ("control_min_error", table.corrupted_abs_error.min()),
             ("control_max_error", table.corrupted_abs_error.max())]
    notes = {"control_coord0_error": "corrupted vs true gradient at coordinate 0, which the bug leaves untouched",
             "control_coord0_fd_error": "the same check against a central difference: finite-difference noise only"}
    table["h"] = h
    table["loss"] = directional_loss(A, x)  # L(x): the scale of the slopes' rounding (one ulp of L over h)
    fresh = fresh_directions(seed, rows, cols, directions)
    blind = blind_spots(A, x, grad, fresh, h, control_coordinate, control_delta, orthogonal_to, small_delta, bug)
    return {"values": values_table("S7", items, notes), "directions": table, "blind_spots": blind,
            "dropout": dropout_check(A, x, vs, h, **dropout, always_reseed=bug == S7_BUGS[3]),
            "relu_kink": relu_kink(relu_at, h, over_h=bug == S7_BUGS[2]),
            "mutations": mutation_check(h=h, **mutations, over_h=bug == S7_BUGS[4])}


def _s8_loss(x):
    return (x[0] * x[1] + x[2] * x[2] + x[3] * x[3]).tanh()


# measurement-level controls (claims/bugs.py): the tape's documented wrong-order switch; J used transposed in v J
S8_BUGS = ("tape: build order", "v J with J transposed")


def measure_s8(modes_x: list[float], modes_seed: int, vjp_v: list[float], bug: str | None = None) -> dict:
    """S8: forward mode (one seed per input) vs reverse mode (one backward pass); the gradient rebuilt
    from k random forward seeds; backward from a vector output (`vjp_v` is the upstream vector). `bug`: a
    measurement-level control (S8_BUGS); None in every real run."""
    fwd, ops = [], []
    for i in range(len(modes_x)):
        with count_ops() as counter:
            out = _s8_loss([Dual(v, 1.0 if j == i else 0.0) for j, v in enumerate(modes_x)])
        fwd.append(out.tangent)
        ops.append(counter.ops)
    with Tape() as tape:
        leaves = [Value(v) for v in modes_x]
        _s8_loss(leaves).backward(order="forward" if bug == S8_BUGS[0] else "reverse")
    rev = [v.grad for v in leaves]
    table = pd.DataFrame({"input": [f"x{i}" for i in range(len(modes_x))], "x": modes_x,
                          "forward_mode": fwd, "reverse_mode": rev, "forward_ops": ops})
    items = [(f"grad_x{i}", r) for i, r in enumerate(rev)]
    items += [(f"forward_ops_seed{i}", n) for i, n in enumerate(ops)]
    items += [("forward_ops_total", sum(ops)), ("reverse_closures", tape.closures_run),
              ("max_mode_diff", max(abs(f - r) for f, r in zip(fwd, rev)))]
    return {"values": values_table("S8", items), "modes": table,
            "reconstruction": reconstruction(modes_x, modes_seed, _s8_loss, rev, tape.closures_run),
            **vjp_tables(modes_x, vjp_v, transposed=bug == S8_BUGS[1])}
