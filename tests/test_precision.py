"""P1-P8 against independent oracles: exact rational rounding, analytic format constants, numpy float32."""

from __future__ import annotations

import math
import random
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
import torch

from adbench.verdicts.verdict import compare
from adbench.verdicts.documented import load
from adbench.precision import formats, scaling
from conftest import values

torch.set_num_threads(1)

# (significand bits including the implicit one, smallest normal exponent, largest exponent)
FORMATS = {"fp16": (11, -14, 15), "bf16": (8, -126, 127), "fp32": (24, -126, 127)}


def round_exact(x: float, fmt: str) -> float:
    """Round-to-nearest-even of x into a binary format, done in exact rational arithmetic."""
    p, emin, emax = FORMATS[fmt]
    if x == 0:
        return 0.0
    f = abs(Fraction(x))
    e = f.numerator.bit_length() - f.denominator.bit_length()
    while Fraction(2) ** e > f:
        e -= 1
    while Fraction(2) ** (e + 1) <= f:
        e += 1
    ulp = Fraction(2) ** (max(e, emin) - (p - 1))   # subnormals share the smallest normal's ulp
    q = f / ulp
    n = math.floor(q)
    if q - n > Fraction(1, 2) or (q - n == Fraction(1, 2) and n % 2):
        n += 1
    r = n * ulp
    return math.copysign(math.inf if r >= Fraction(2) ** (emax + 1) else float(r), x)


def round_truncate(x: float, fmt: str) -> float:
    """Deliberately broken rounding (toward zero): the negative control for the cast check."""
    p, emin, _ = FORMATS[fmt]
    e = max(math.floor(math.log2(abs(x))), emin)
    ulp = 2.0 ** (e - (p - 1))
    return math.copysign(math.floor(abs(x) / ulp) * ulp, x)


def cast_errors(rounder, xs, fmt) -> list[float]:
    """Values where the torch cast and `rounder` disagree."""
    return [x for x in xs if formats.cast(x, formats.DTYPES[fmt]) != rounder(x, fmt)]


_RNG = random.Random(0)
SAMPLE = [1e-4, 1e-6, 1e-7, 1e-8, 1e-3, 3e-5, 3e-8, 1e-10, 0.1, 6553.6, 65519.0, 65520.0, 1.0 + 2 ** -11,
          1.0 + 3 * 2 ** -11] + [10 ** _RNG.uniform(-9, 4) for _ in range(300)]   # ties and overflow edge


@pytest.mark.parametrize("fmt", ["fp16", "bf16"])
def test_casts_equal_exact_rounding_and_truncation_is_caught(fmt):
    assert cast_errors(round_exact, SAMPLE, fmt) == []
    assert len(cast_errors(round_truncate, SAMPLE, fmt)) > 50     # the same check rejects a wrong rounding


@pytest.mark.parametrize("fmt", ["fp16", "bf16", "fp32"])
def test_landmarks_are_the_analytic_format_constants(fmt):
    p, emin, emax = FORMATS[fmt]
    got = formats.landmarks(formats.DTYPES[fmt])
    assert got == {"smallest_normal": 2.0 ** emin, "smallest_subnormal": 2.0 ** (emin - p + 1),
                   "largest": (2 - 2.0 ** (1 - p)) * 2.0 ** emax, "gap_above_1": 2.0 ** (1 - p)}


def test_p1_cross_check_with_numpy_fails_loudly_when_they_disagree():
    out = formats.measure_p1()
    assert list(out["values"].quantity) == ["fp16_smallest_normal", "fp16_smallest_subnormal",
                                            "fp16_largest", "fp16_gap_above_1"]
    with pytest.raises(AssertionError):
        formats._check_numpy("demo", 1.0, float(np.nextafter(np.float16(1), np.float16(2))))


def test_p2_p3_values_follow_exact_rounding():
    xs = [1e-4, 1e-6, 1e-7, 1e-8]
    out = formats.measure_p2(xs)
    p2 = out["casts"][out["casts"].role == "configured"]
    assert list(p2.grad) == xs
    assert list(p2.fp16) == [round_exact(x, "fp16") for x in xs]
    assert list(p2.subnormal_steps) == [round_exact(x, "fp16") / 2.0 ** -24 for x in xs]
    assert len(out["values"]) == 2 * len(xs)                         # the probe is a control, not a documented row
    p3 = formats.measure_p3([1e-3, 3e-8], {"lo_exp": -9, "hi_exp": 0, "points": 10})
    err = p3["errors"].fp16_rel_error.tolist()
    assert err == [abs(round_exact(x, "fp16") - x) / x for x in (1e-3, 3e-8)]
    assert (p3["sweep"].bf16_rel_error <= 2.0 ** -8).all()           # half an ulp relative, bf16
    normal = p3["sweep"][p3["sweep"].x >= 2.0 ** -14]
    assert (normal.fp16_rel_error <= 2.0 ** -11).all()               # half an ulp relative, fp16 normals


def flush_below_subnormal(x: float, fmt: str) -> float:
    """Deliberately wrong rule (everything below the smallest subnormal becomes zero): the probe's negative control."""
    p, emin, _ = FORMATS[fmt]
    return 0.0 if abs(x) < 2.0 ** (emin - p + 1) else round_exact(x, fmt)


def test_p2_probe_between_half_the_subnormal_and_the_subnormal_is_kept():
    probe = formats.measure_p2([1e-8])["casts"].set_index("role").loc[formats.PROBE]
    sub = 2.0 ** -24                                                 # the analytic smallest subnormal of fp16
    assert sub / 2 < probe.grad < sub                                # the value the P2 claim needs
    assert probe.fp16 == probe.numpy_fp16 == round_exact(probe.grad, "fp16") == sub   # kept: one subnormal step
    assert flush_below_subnormal(probe.grad, "fp16") == 0.0          # a flush-below-subnormal rule would lose it
    assert flush_below_subnormal(1e-7, "fp16") == round_exact(1e-7, "fp16")   # ...and agree on every other row


def test_p4_static_scale_overflows_exactly_past_the_rounding_threshold():
    out = scaling.measure_p4([1e-8, 0.1, 1.0, 2.0], 65536.0)["static"]
    assert list(out.scaled_fp16) == [round_exact(g * 65536.0, "fp16") for g in (1e-8, 0.1, 1.0, 2.0)]
    assert list(out.finite) == [True, True, False, False]
    assert abs(out.unscaled[0] - 1e-8) / 1e-8 <= 2.0 ** -11          # unscaling leaves only fp16 rounding


def oracle_scale(grads, start):
    """Largest start / 2^k with every |g| * scale below fp16's overflow threshold (2 - 2^-11) * 2^15."""
    threshold = (2 - 2.0 ** -11) * 2.0 ** 15
    scale = start
    while max(abs(g) for g in grads) * scale >= threshold:
        scale /= 2
    return scale


def first_only_scaler(grads, start):
    """Deliberately broken scaler: inspects only the first gradient."""
    return scaling.dynamic_scale(grads[:1], start)[0]


@pytest.mark.parametrize("grads", [[2.0, 1e-8], [1e-8, 2.0], [0.5, 3e-3, 7.0]])
def test_p5_dynamic_scaler_matches_oracle_and_broken_scaler_is_caught(grads):
    scale, attempts = scaling.dynamic_scale(grads, 65536.0)
    assert scale == oracle_scale(grads, 65536.0)
    assert attempts.attempt.max() == round(math.log2(65536.0 / scale)) + 1
    if max(grads) != grads[0]:
        assert first_only_scaler(grads, 65536.0) != oracle_scale(grads, 65536.0)


def test_p5_settled_values_unscale_to_the_gradients():
    out = scaling.measure_p5([2.0, 1e-8], 65536.0)["settled"]
    assert out.unscaled[0] == 2.0
    assert out.unscaled[1] == round_exact(1e-8 * out.scale[1], "fp16") / out.scale[1]


def fp32_numpy_accumulate(w: float, u: float, steps: int) -> float:
    """Independent fp32 accumulation with numpy scalars."""
    acc, du = np.float32(w), np.float32(u)
    for _ in range(steps):
        acc = np.float32(acc + du)
    return float(acc)


def swallowed(weight: float, update: float) -> bool:
    """The P6/P7 claim: an fp16 addition of `update` leaves `weight` unchanged."""
    return round_exact(round_exact(weight, "fp16") + round_exact(update, "fp16"), "fp16") == round_exact(weight, "fp16")


def test_p6_swamping_against_numpy_fp32_and_exact_arithmetic():
    out = scaling.measure_p6(1.0, 0.0003, 2000, 500)
    last = out["trajectory"].iloc[-1]
    assert last.fp16 == 1.0 and swallowed(1.0, 0.0003)
    assert last.fp32_master == fp32_numpy_accumulate(1.0, 0.0003, 2000)
    assert last.exact == float(Fraction(1) + 2000 * Fraction("0.0003"))
    assert not swallowed(1.0, 0.0005)                      # control: above half the gap the weight moves
    moved = scaling.measure_p6(1.0, 0.0005, 10, 10)["trajectory"].fp16.iloc[-1]
    assert moved > 1.0


def test_p7_gaps_double_with_each_binade_and_updates_are_swallowed():
    out = formats.measure_p7([1.0, 8.0, 64.0, 512.0, 0.25], 0.0003)["spacing"]
    assert list(out.fp16_gap_above) == [2.0 ** (math.floor(math.log2(w)) - 10) for w in out.weight]
    assert list(out.update_changes_weight) == ["no" if swallowed(w, 0.0003) else "yes" for w in out.weight]
    assert out.update_changes_weight.iloc[-1] == "yes"      # control: near 0.25 the update is kept


def test_p8_bf16_beside_fp16():
    out = formats.measure_p8([1e-8, 1e-10])
    assert list(out["casts"].bf16) == [round_exact(x, "bf16") for x in (1e-8, 1e-10)]
    assert list(out["casts"].fp16) == [0.0, 0.0]
    assert list(out["gaps"].gap_over_fp16_gap) == [1.0, 8.0, 2.0 ** -13]


def test_every_exact_precision_row_matches_the_documented_table():
    doc = load()
    doc = doc[doc.id.isin([f"P{i}" for i in range(1, 9)])]
    f = formats.measure_formats([1e-4, 1e-6, 1e-7, 1e-8], [1e-3, 3e-5, 1e-6, 3e-8],
                                {"lo_exp": -9, "hi_exp": 0, "points": 10}, [1.0, 8.0, 64.0, 512.0], 0.0003,
                                [1e-8, 1e-10])
    s = scaling.measure_scaling([1e-8, 0.1, 1.0, 2.0], 65536.0, [2.0, 1e-8], 65536.0, 1.0, 0.0003, 2000, 100,
                                {"weights": [1.0], "inputs": [2.0], "lr": 0.1, "inf_index": 0},
                                {"count": 16, "dtypes": ["float16"]})
    measured = pd.concat([tables["values"] for tables in {**f, **s}.values()])
    cmp = compare(doc, measured)
    assert len(cmp) == len(doc) > 30
    assert (cmp.status == "match").all(), cmp[cmp.status != "match"]
    broken = measured.copy()                                 # control: a wrong P6 fp16 weight is flagged
    broken.loc[(broken.id == "P6") & (broken.quantity == "fp16_weight"), "value"] = 1.0009765625
    assert (compare(doc, broken).status == "MISMATCH").sum() == 1


def test_precision_figures_render_from_the_tables():
    from adbench.precision.plots import plot_precision
    f = formats.measure_formats([1e-8], [1e-3], {"lo_exp": -9, "hi_exp": 0, "points": 50}, [1.0], 0.0003, [1e-8])
    traj = scaling.measure_p6(1.0, 0.0003, 200, 10)["trajectory"]
    out = plot_precision(f["P3"]["sweep"], f["P1"]["landmarks"], traj)
    assert set(out) == {"error_sweep", "swamping"}
    assert b"fp16 smallest subnormal" in out["error_sweep"] and b"<svg" in out["error_sweep"]
    assert b"fp32 master weight" in out["swamping"]


def test_precision_extra_rows():
    from adbench.precision.formats import measure_p2, measure_p8
    from adbench.precision.scaling import measure_p4
    p2 = values(measure_p2([1e-7, 1e-8]))
    assert p2["subnormal_steps_grad0"] == float(np.float16(1e-7)) / 2.0 ** -24 == 2.0   # numpy oracle
    assert p2["subnormal_steps_grad1"] == 0.0                                              # control: flushed
    p4 = values(measure_p4([0.1, 1.0, 2.0], 65536.0))
    assert (p4["product_0.1"], p4["product_1"], p4["product_2"]) == (0.1 * 65536, 65536.0, 131072.0)
    p8 = values(measure_p8([1e-8]))
    assert p8["gap_bf16_exact"] == 2.0 ** -7 and p8["bf16_gap_over_fp16"] == 2.0 ** -7 / 2.0 ** -10 == 8.0
