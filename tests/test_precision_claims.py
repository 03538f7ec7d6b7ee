"""P claims of issue 36 against independent oracles: exact rational rounding, numpy float16, Python floats; and the
P5 claim under an edited `precision.dynamic_start`."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from adbench.claims.registry import RELATIONS, load_all
from adbench.outcomes import FAILS, HOLDS
from adbench.precision import claims as pclaims
from adbench.precision import formats, scaling, wide_sum
from adbench.precision.grad_scaler import grad_scaler_table
from test_precision import round_exact

load_all()
GRADS = [1.0e-4, 1.0e-6, 1.0e-7, 1.0e-8]


def _p5_tables(start: float, bug: str | None = None) -> dict:
    p5 = scaling.measure_p5([2.0, 1.0e-8], start)
    return {"P5/attempts": p5["attempts"], "P5/settled": p5["settled"],
            "P5/grad_scaler": grad_scaler_table([1.0, -2.0], [0.5, 3.0], 0.1, 0, init_scale=start, bug=bug)}


@pytest.mark.parametrize("start", [65536.0, 1024.0])
def test_grad_scaler_claim_holds_at_an_edited_dynamic_start(start):
    """Like with like: torch's scaler starts at the configured start, so an edit cannot read as a failure."""
    t = _p5_tables(start)
    assert t["P5/grad_scaler"].scale_before.iloc[0] == start  # read back from the scaler
    out = RELATIONS["grad_scaler_skips_and_halves"](t)
    assert out.verdict == HOLDS, out.reason


def test_grad_scaler_claim_fails_when_the_overflowing_step_is_taken():
    out = RELATIONS["grad_scaler_skips_and_halves"](_p5_tables(1024.0, bug="step-not-skipped"))
    assert out.verdict == FAILS, out.reason


@pytest.mark.parametrize("dtype, fmt", [("float16", "fp16"), ("bfloat16", "bf16")])
def test_mixed_sum_is_rounded_once_and_a_16bit_pairwise_sum_misses(dtype, fmt):
    r = wide_sum.wide_sum_table(4096, [dtype]).iloc[0]
    x = wide_sum.mixed_values(4096, wide_sum.DTYPES[dtype]).double().tolist()
    exact = sum(Fraction(v) for v in x)  # oracle: rational arithmetic
    assert r.mixed_exact == float(exact) and r.mixed_rounded_once == round_exact(float(exact), fmt)
    assert r.mixed_torch_sum == r.mixed_rounded_once
    assert abs(r.mixed_pairwise16 - r.mixed_rounded_once) >= r.mixed_gap_at_sum
    if fmt == "fp16":  # oracle: numpy's float16 rounds every addition of its own pairwise tree
        level = np.array(x, dtype=np.float16)
        while level.size > 1:
            level = level[0::2] + level[1::2]
        assert float(level[0]) == r.mixed_pairwise16


def test_midpoints_tie_to_even_and_truncation_is_caught():
    d = formats.measure_p2(GRADS)["casts"]
    ties = d[d.role.isin(list(formats.TIES.values()))]
    assert list(ties.fp16) == [round_exact(g, "fp16") for g in ties.grad]  # oracle: exact rounding
    sub = 2.0 ** -24
    assert list(ties.fp16 / sub) == [0.0, 2.0, 2.0]
    table = {"P2/casts": d, "P1/landmarks": formats.measure_p1()["landmarks"]}
    assert RELATIONS["midpoint_ties_to_even"](table).verdict == HOLDS
    table["P2/casts"] = formats.measure_p2(GRADS, bug="round-toward-zero")["casts"]  # negative control
    assert RELATIONS["midpoint_ties_to_even"](table).verdict == FAILS


def test_loss_scale_is_exact_for_a_power_of_two_only():
    d = scaling.leaf_grads(65536.0)
    assert (d.scaled_grad == d.grad * 65536.0).all() and (d.grad != 0).all()
    odd = scaling.leaf_grads(3 * 2.0 ** 14)  # negative control: a scale with a factor 3 rounds somewhere
    assert (odd.scaled_grad != odd.grad * 3 * 2.0 ** 14).any()
    assert RELATIONS["loss_scale_scales_every_grad"]({"P4/leaf_grads": odd}).verdict == FAILS


def test_fp64_master_is_the_python_float_loop_and_drifts_less():
    t = scaling.measure_p6(1.0, 0.0003, 2000, 10)["trajectory"]
    w = 1.0
    for _ in range(2000):
        w += 0.0003  # oracle: Python floats are binary64
    end = t.iloc[-1]
    assert end.fp64_master == w
    assert 0 < abs(w - 1.6) < abs(end.fp32_master - 1.6)


def test_direct_updates_round_like_exact_arithmetic():
    d = scaling.direct_updates(1.0, [1e-4, 1e-3, 5e-3])
    for r in d.itertuples():
        assert r.fp16_after == round_exact(1.0 + r.fp16_update, "fp16")
        assert r.bf16_after == round_exact(1.0 + r.bf16_update, "bf16")
    assert list(d.fp16_changes) == ["no", "yes", "yes"] and list(d.bf16_changes) == ["no", "no", "yes"]


def _p9(left: int, to_zero: int = 11_600_000) -> dict:
    return {"P9/summary": pd.DataFrame([{"dtype": "fp16", "values": 124_439_808, "fp32_zeros": 0, "to_zero": to_zero,
                                         "to_zero_pct": 9.3, "scale": 65536.0, "scaled_still_zero": left,
                                         "scaled_recovered": to_zero - left, "scaled_above_fp16_max": 11,
                                         "scaled_to_inf": 11}])}


def test_p9_recovery_reads_all_but_a_count_at_the_documents_strength():
    assert pclaims.left_zero_bound() == pytest.approx(1e-3)  # 1,743 / 11.6 M = 1.5e-4 -> one in a thousand
    rel = RELATIONS["fp16_loses_some_gradient_scale_recovers"]
    assert rel(_p9(1_743)).verdict == HOLDS
    assert rel(_p9(11_600)).verdict == HOLDS  # exactly one in a thousand
    assert rel(_p9(11_601)).verdict == FAILS
    assert rel(_p9(116_000)).verdict == FAILS  # 99 %: the old bound's edge now fails


def test_judge_at_an_edited_dynamic_start_judges_grad_scaler_and_sets_the_hand_claim_aside():
    """The run's config says dynamic_start 1,024: the GradScaler claim is judged (and holds) on that run's tables;
    the hand scaler's documented 65,536 -> 16,384 reads "configuration differs", never a wrong fails."""
    import yaml
    from pathlib import Path

    from adbench.claims import judge, table
    from adbench.outcomes import NOT_JUDGED

    settings = yaml.safe_load((Path(__file__).resolve().parents[1] / "config.yaml").read_text())
    settings["precision"]["dynamic_start"] = 1024.0
    tables = {**_p5_tables(1024.0), "P1/landmarks": formats.measure_p1()["landmarks"]}
    claims, run = table.load(), judge.Run(settings=settings)
    verdict = {c: judge.judge_one(claims[claims.claim == c].iloc[0], tables, run, RELATIONS)["verdict"]
               for c in ("P5.grad-scaler-skips-and-halves", "P5.dynamic-scale")}
    assert verdict == {"P5.grad-scaler-skips-and-halves": HOLDS, "P5.dynamic-scale": NOT_JUDGED}
