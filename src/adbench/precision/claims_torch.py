"""The P family's conclusions about torch's own 16-bit machinery: GradScaler's schedule, the wider accumulator inside a
16-bit reduction, and the overflow a fixed loss scale causes (listed in precision/family.py)."""

from __future__ import annotations

import math

from ..claims import EPS32, Edge, Flip, Move, Moves, at_least, at_most, flag, g, judged, relation, row, sources, truthy

sources("P5/grad_scaler", {"step": "input", "inf_injected": "input", "scale_before": "torch GradScaler",
                           "scale_after": "torch GradScaler", "scaled_grad_over_true_grad": "torch GradScaler",
                           "unscaled_all_finite": "torch GradScaler", "weights_unchanged": "torch GradScaler step",
                           "max_abs_weight_change": "torch GradScaler step",
                           "unscaled_max_abs_diff_vs_true_grad": "torch GradScaler, autograd without a scaler",
                           "max_abs_diff_vs_sgd_step": "torch GradScaler step, hand SGD step",
                           "max_abs_weight_after": "torch GradScaler step"})
sources("P6/wide_sum", {"count": "input", "torch_sum": "torch 16-bit sum", "torch_sum_dtype": "torch 16-bit sum",
                        "torch_sum_exact": "torch 16-bit sum", "stepwise_sum": "16-bit step-by-step loop",
                        "stepwise_stalls_at": "16-bit step-by-step loop", "stepwise_exact": "16-bit step-by-step loop",
                        "gap_above_1": "format landmarks"}, by="dtype")


def _scaler(t, step: int):
    return row(t["P5/grad_scaler"], "step", step)


@relation("P5/grad_scaler", "P5/attempts",
          edge=Flip("P5/grad_scaler", {"step": 2}, "max_abs_diff_vs_sgd_step", holding=0.0,
                    failing=lambda t: 4 * EPS32 * float(_scaler(t, 2).max_abs_weight_after)))
def grad_scaler_skips_and_halves(t):
    """torch's GradScaler, given an inf gradient, skips the optimizer step (weights untouched) and halves its scale,
    as the project's own dynamic scaler halves after an overflow; the next, finite step updates the weights with
    the unscaled gradient: the same update as an SGD step on autograd's gradient without any scaler."""
    bad, good = _scaler(t, 1), _scaler(t, 2)
    hand = t["P5/attempts"].groupby("attempt").scale.first().to_numpy()
    hand_ratio = float(hand[1] / hand[0]) if len(hand) > 1 else math.nan
    bound = 2 * EPS32 * float(good.max_abs_weight_after)  # the update's float32 rounding, with room for two
    return judged(f"step 1 (inf injected): scale {g(bad.scale_before)} -> {g(bad.scale_after)}, largest weight change "
                  f"{g(bad.max_abs_weight_change)}; step 2: scale {g(good.scale_before)}, the update differs from an "
                  f"SGD step by {g(good.max_abs_diff_vs_sgd_step)}; the hand scaler's first halving x{g(hand_ratio)}",
                  flag(truthy(bad.inf_injected) and not truthy(good.inf_injected), "an overflowing step, then a clean one"),
                  flag(truthy(bad.weights_unchanged) and float(bad.max_abs_weight_change) == 0,
                       "the overflowing step is skipped"),
                  flag(float(bad.scale_after) == float(bad.scale_before) / 2, "the scale halves"),
                  flag(float(bad.scale_after) / float(bad.scale_before) == hand_ratio, "as the hand scaler halves"),
                  flag(float(good.scale_before) == float(bad.scale_after) and not truthy(good.weights_unchanged),
                       "the next step starts from the halved scale and updates"),
                  flag(float(good.unscaled_max_abs_diff_vs_true_grad) == 0, "unscaled exactly (a power-of-two scale)"),
                  at_most(float(good.max_abs_diff_vs_sgd_step) / (EPS32 * float(good.max_abs_weight_after)), 2,
                          "update vs an SGD step on the unscaled gradient", "float32 ulps", 0.5))


def _sixteen(t):
    d = t["P6/wide_sum"]
    return d[d.dtype.isin(["float16", "bfloat16"])]


@relation("P6/wide_sum", edge=Edge(Move("P6/wide_sum", {"dtype": "float16"}, "torch_sum", lambda t: row(
    t["P6/wide_sum"], "dtype", "float16")["count"] * 1.0), Move("P6/wide_sum", {"dtype": "float16"}, "torch_sum",
    lambda t: row(t["P6/wide_sum"], "dtype", "float16")["count"] - 2.0)))
def sixteen_bit_sum_accumulates_wider(t):
    """A 16-bit tensor does not mean 16-bit arithmetic inside the operator: torch's CPU sum of `count` ones in fp16
    and bf16 reaches the exact count, while a loop that keeps each partial sum in the format stalls where its
    spacing reaches 2 (2 / gap above 1, from the format's own epsilon)."""
    checks, parts = [], []
    for r in _sixteen(t).itertuples():
        stall = 2 / float(r.gap_above_1)
        parts.append(f"{r.dtype}: sum {g(r.torch_sum)} of {r.count} ones, loop stalls at {g(r.stepwise_sum)} (2/gap "
                     f"{g(stall)})")
        checks += [flag(r.count > stall, f"{r.dtype}: more ones than the stall point"),
                   flag(float(r.torch_sum) == r.count and r.torch_sum_dtype == r.dtype,
                        f"{r.dtype}: the reduction is exact, in its own dtype"),
                   flag(float(r.stepwise_sum) == stall, f"{r.dtype}: the loop stalls where the spacing reaches 2")]
    return judged("; ".join(parts), flag(len(parts) == 2, "fp16 and bf16 measured"), *checks)


@relation("P9/summary", single=True,
          edge=Edge(Moves((Move("P9/summary", {"dtype": "fp16"}, "scaled_above_fp16_max", 1),
                           Move("P9/summary", {"dtype": "fp16"}, "scaled_to_inf", 1))),
                    Moves((Move("P9/summary", {"dtype": "fp16"}, "scaled_above_fp16_max", 1),
                           Move("P9/summary", {"dtype": "fp16"}, "scaled_to_inf", 0)))))
def scale_pushes_some_past_fp16_max(t):
    """The scale that rescues tiny gradients pushes some of the largest past fp16's ceiling: at least one value becomes
    inf, each inf is a value above the largest finite fp16, and they are a few beside the rescued millions (at most a
    hundredth of them)."""
    f = row(t["P9/summary"], "dtype", "fp16")
    inf, above, back = float(f.scaled_to_inf), float(f.scaled_above_fp16_max), float(f.scaled_recovered)
    return judged(f"scaled by {g(f.scale)}: {int(inf):,} values to inf ({int(above):,} above fp16's largest), "
                  f"{int(back):,} small values brought back",
                  at_least(inf, 1, "values pushed past fp16's largest: some", "values"),
                  flag(inf <= above, "each inf was above the largest finite value"),
                  at_most(inf, 0.01 * back, "a few beside the rescued values (at most a hundredth)", "values"))
