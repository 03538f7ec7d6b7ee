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
                        "gap_above_1": "format landmarks", "mixed_exact": "float64 sum",
                        "mixed_rounded_once": "float64 sum rounded once", "mixed_torch_sum": "torch 16-bit sum",
                        "mixed_torch_sum_dtype": "torch 16-bit sum", "mixed_pairwise16": "16-bit pairwise sum",
                        "mixed_stepwise16": "16-bit step-by-step loop", "mixed_gap_at_sum": "format landmarks"},
        by="dtype")


def _scaler(t, step: int):
    return row(t["P5/grad_scaler"], "step", step)


@relation("P5/grad_scaler", "P5/attempts",
          edge=Flip("P5/grad_scaler", {"step": 2}, "max_abs_diff_vs_sgd_step", holding=0.0,
                    failing=lambda t: 4 * EPS32 * float(_scaler(t, 2).max_abs_weight_after)))
def grad_scaler_skips_and_halves(t):
    """torch's GradScaler, given an inf gradient, skips the optimizer step (weights untouched) and halves its scale,
    as the project's own dynamic scaler halves after an overflow (both start at the configured start; where the
    hand scaler never overflows there is no halving of its to compare); the next, finite step updates the weights
    with the unscaled gradient: the same update as an SGD step on autograd's gradient without any scaler."""
    bad, good = _scaler(t, 1), _scaler(t, 2)
    hand = t["P5/attempts"].groupby("attempt").scale.first().to_numpy()
    hand_ratio = float(hand[1] / hand[0]) if len(hand) > 1 else math.nan
    same_rule = (flag(float(bad.scale_after) / float(bad.scale_before) == hand_ratio, "as the hand scaler halves")
                 if len(hand) > 1 else flag(True, "the hand scaler never overflowed: no halving of its to compare"))
    bound = 2 * EPS32 * float(good.max_abs_weight_after)  # the update's float32 rounding, with room for two
    return judged(f"step 1 (inf injected): scale {g(bad.scale_before)} -> {g(bad.scale_after)}, largest weight change "
                  f"{g(bad.max_abs_weight_change)}; step 2: scale {g(good.scale_before)}, the update differs from an "
                  f"SGD step by {g(good.max_abs_diff_vs_sgd_step)}; the hand scaler's first halving "
                  + (f"x{g(hand_ratio)}" if len(hand) > 1 else f"none (it kept its start {g(hand[0])})"),
                  flag(truthy(bad.inf_injected) and not truthy(good.inf_injected), "an overflowing step, then a clean one"),
                  flag(truthy(bad.weights_unchanged) and float(bad.max_abs_weight_change) == 0,
                       "the overflowing step is skipped"),
                  flag(float(bad.scale_after) == float(bad.scale_before) / 2, "the scale halves"),
                  same_rule,
                  flag(float(good.scale_before) == float(bad.scale_after) and not truthy(good.weights_unchanged),
                       "the next step starts from the halved scale and updates"),
                  flag(float(good.unscaled_max_abs_diff_vs_true_grad) == 0, "unscaled exactly (a power-of-two scale)"),
                  at_most(float(good.max_abs_diff_vs_sgd_step) / (EPS32 * float(good.max_abs_weight_after)), 2,
                          "update vs an SGD step on the unscaled gradient", "float32 ulps", 0.5))


def _sixteen(t):
    d = t["P6/wide_sum"]
    return d[d.dtype.isin(["float16", "bfloat16"])]


def _mixed(t, dtype: str, off: float):
    """torch's mixed-values sum `off` gaps from the float64 sum rounded once."""
    r = row(t["P6/wide_sum"], "dtype", dtype)
    return float(r.mixed_rounded_once) + off * float(r.mixed_gap_at_sum)


@relation("P6/wide_sum", edge=Edge(Move("P6/wide_sum", {"dtype": "float16"}, "mixed_torch_sum",
                                        lambda t: _mixed(t, "float16", 0)),
                                   Move("P6/wide_sum", {"dtype": "float16"}, "mixed_torch_sum",
                                        lambda t: _mixed(t, "float16", -1))))
def sixteen_bit_sum_accumulates_wider(t):
    """A 16-bit tensor does not mean 16-bit arithmetic inside the operator: on values whose 16-bit partial sums
    round, torch's CPU sum in fp16 and bf16 is the float64 sum rounded once to the format (within half a gap of the
    exact sum), while a pairwise sum that keeps every partial sum in the format misses it by at least a gap; a loop
    that keeps its running sum in the format stalls on ones where the spacing reaches 2."""
    checks, parts = [], []
    for r in _sixteen(t).itertuples():
        gap, stall = float(r.mixed_gap_at_sum), 2 / float(r.gap_above_1)
        wide = abs(float(r.mixed_torch_sum) - float(r.mixed_exact)) / gap
        narrow = abs(float(r.mixed_pairwise16) - float(r.mixed_rounded_once)) / gap
        parts.append(f"{r.dtype}: torch.sum {g(r.mixed_torch_sum)}, float64 sum {g(r.mixed_exact)} rounded once "
                     f"{g(r.mixed_rounded_once)}, 16-bit pairwise {g(r.mixed_pairwise16)}, 16-bit loop "
                     f"{g(r.mixed_stepwise16)} (gap there {g(gap)}); ones: loop stalls at {g(r.stepwise_sum)}")
        checks += [at_most(wide, 0.5, f"{r.dtype}: torch.sum within half a gap of the exact sum", "gaps"),
                   flag(float(r.mixed_torch_sum) == float(r.mixed_rounded_once) and r.mixed_torch_sum_dtype == r.dtype,
                        f"{r.dtype}: torch.sum is the sum rounded once, in its own dtype"),
                   at_least(narrow, 1.0, f"{r.dtype}: 16-bit pairwise summation misses it by a gap or more", "gaps"),
                   flag(r.count > stall and float(r.stepwise_sum) == stall,
                        f"{r.dtype}: the loop over ones stalls where the spacing reaches 2")]
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
