"""The P family's measurement-level controls (claims/bugs.py): each runs the real measurement function with one
realistic bug switched on and names the relations that must then fail. Plain data; nothing registers on import.

The arguments are the project's defaults (config.yaml's `precision` section), so a control judges the very tables
a default run writes, with the bug as the only difference. P9's measurement is GPT-2's (gpt2/fp16.py): no switch
of ours there.
"""

from __future__ import annotations

from typing import Callable

from ..claims.bugs import Bug, Tables, default_config
from . import formats, scaling
from .grad_scaler import grad_scaler_table
from .wide_sum import wide_sum_table


def _prec() -> dict:
    """config.yaml's `precision` section (the source checkout's defaults)."""
    return default_config("precision")


def _keyed(id_: str, tables: dict, keep: tuple[str, ...]) -> Tables:
    return {f"{id_}/{k}": tables[k] for k in keep}


def _p2(bug: str | None) -> Tables:
    return _keyed("P2", formats.measure_p2(_prec()["fp16_grads"], bug=bug), ("casts",))


def _p3(bug: str | None) -> Tables:
    c = _prec()
    return _keyed("P3", formats.measure_p3(c["rel_error_x"], c["rel_error_sweep"], bug=bug), ("errors", "sweep"))


def _p7(bug: str | None) -> Tables:
    c = _prec()
    return _keyed("P7", formats.measure_p7(c["spacing_weights"], c["update"], bug=bug), ("spacing",))


def _p8(bug: str | None) -> Tables:
    return _keyed("P8", formats.measure_p8(_prec()["bf16_values"], bug=bug), ("casts", "gaps"))


def _p4(bug: str | None) -> Tables:
    c = _prec()
    return _keyed("P4", scaling.measure_p4(c["static_grads"], c["static_scale"], bug=bug), ("static", "leaf_grads"))


def _p5(bug: str | None) -> Tables:
    c = _prec()
    return _keyed("P5", scaling.measure_p5(c["dynamic_grads"], c["dynamic_start"], bug=bug), ("attempts", "settled"))


def _p5_torch(bug: str | None) -> Tables:
    c = _prec()
    return {"P5/grad_scaler": grad_scaler_table(**c["grad_scaler"], init_scale=c["dynamic_start"], bug=bug)}


def _p6(bug: str | None) -> Tables:
    c = _prec()
    return _keyed("P6", scaling.measure_p6(c["weight"], c["update"], c["steps"], c["record_every"], bug=bug),
                  ("values", "trajectory", "direct_update"))


def _p6_sum(bug: str | None) -> Tables:
    return {"P6/wide_sum": wide_sum_table(**_prec()["wide_sum"], bug=bug)}


def _bug(name: str, what: str, flips: tuple[str, ...], measure: Callable[[str | None], Tables]) -> Bug:
    return Bug(name, what, flips, lambda switch: measure(switch))


BUGS = [
    _bug("round-toward-zero", "P2's fp16 cast truncates (a hand-rolled cast that masks low bits)",
         ("below_half_subnormal_rounds_to_zero", "midpoint_ties_to_even"), _p2),
    _bug("absolute-error", "P3's relative error drops its division by |x|", ("fp16_error_grows_below_normal",), _p3),
    _bug("bf16-truncated", "P3's bf16 emulated by dropping fp32's low 16 bits (round toward zero)",
         ("bf16_relative_error_bounded",), _p3),
    _bug("update-promoted", "P7's update made an fp32 tensor: the sum is promoted to fp32",
         ("update_below_half_gap_changes_nothing",), _p7),
    _bug("bf16-via-fp16", "P8's tiny values reach bf16 through an fp16 copy", ("bf16_keeps_range_loses_precision",),
         _p8),
    _bug("forgets-to-unscale", "P4's scaler hands the scaled fp16 value on without dividing by S",
         ("static_scale_rescues_small_overflows_large",), _p4),
    _bug("aux-loss-after-scale", "P4's regularizer added to the loss after the scale",
         ("loss_scale_scales_every_grad",), _p4),
    _bug("unscale-by-start", "P5's dynamic scaler divides by its first scale, not the one it kept",
         ("dynamic_scale_halves_until_finite",), _p5),
    _bug("step-not-skipped", "P5's optimizer steps directly instead of through scaler.step",
         ("grad_scaler_skips_and_halves",), _p5_torch),
    _bug("master-assigns", "P6's fp32 master written with = for += (it restarts from the weight)",
         ("fp16_weight_swamped_master_moves",), _p6),
    _bug("fp64-master-in-fp32", "P6's fp64 master created in float32", ("more_precision_less_drift",), _p6),
    _bug("bf16-update-promoted", "P6's bf16 update made an fp32 tensor: the sum is promoted to fp32",
         ("bf16_swamps_worse",), _p6),
    _bug("update-via-bf16", "P6's update reaches fp16 through a bf16 copy (rounded to 8 bits first)",
         ("update_is_a_normal_fp16",), _p6),
    _bug("summed-as-float32", "P6's 16-bit tensor cast to float32 before torch.sum",
         ("sixteen_bit_sum_accumulates_wider",), _p6_sum),
    _bug("pairwise-accumulates-float32", "P6's 16-bit pairwise sum keeps its partial sums in float32",
         ("sixteen_bit_sum_accumulates_wider",), _p6_sum),
]
