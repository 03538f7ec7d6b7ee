"""The S family's measurement-level controls (claims/bugs.py): each runs the real measurement function with one
realistic bug switched on and names the relations that must then fail. Plain data; nothing registers on import.

The arguments are the project's defaults (config.yaml's `scalar` section), so a control judges the very
tables a default run writes, with the bug as the only difference.
"""

from __future__ import annotations

from typing import Callable

from ..claims.bugs import Bug, Tables, default_config
from . import blind, numeric, probes


def _scalar() -> dict:
    """config.yaml's `scalar` section (the source checkout's defaults)."""
    return default_config("scalar")


def _keyed(id_: str, tables: dict, keep: tuple[str, ...]) -> Tables:
    return {f"{id_}/{k}": tables[k] for k in keep}


def _s1(bug: str | None) -> Tables:
    c = _scalar()
    return _keyed("S1", probes.measure_s1(c["a"], c["b"], c["reference_h"], bug=bug), ("gradients",))


def _s2(bug: str | None) -> Tables:
    c = _scalar()
    return _keyed("S2", probes.measure_s2(c["nudge_x"], c["nudges"], bug=bug), ("nudges",))


def _s3(bug: str | None) -> Tables:
    c = _scalar()
    return _keyed("S3", probes.measure_s3(c["a"], c["b"], bug=bug), ("values", "routes"))


def _s4(bug: str | None) -> Tables:
    c = _scalar()
    return _keyed("S4", probes.measure_s4(c["a"], c["b"], c["factor_b"], bug=bug),
                  ("variants", "factor", "dedup_grads", "dedup_calls"))


def _s5(bug: str | None) -> Tables:
    c = _scalar()
    return _keyed("S5", numeric.measure_s5(c["a"], c["b"], c["sweep_h"], c["slope_fit_h"], bug=bug),
                  ("sweep", "slopes"))


def _s6(bug: str | None) -> Tables:
    c = _scalar()
    return _keyed("S6", numeric.measure_s6(c["a"], c["b"], c["complex_h"], c["complex_controls_at"], bug=bug),
                  ("sweep", "controls"))


def _s7(bug: str | None) -> Tables:
    return _keyed("S7", numeric.measure_s7(**_scalar()["directional"], bug=bug),
                  ("values", "directions", "blind_spots", "relu_kink", "dropout", "mutations"))


def _s8(bug: str | None) -> Tables:
    c = _scalar()
    return _keyed("S8", numeric.measure_s8(c["modes_x"], c["modes_seed"], c["vjp_v"], bug=bug),
                  ("modes", "reconstruction", "nonscalar", "vjp"))


def _s10(bug: str | None) -> Tables:
    c = _scalar()
    return _keyed("S10", probes.measure_s10(c["expression"], c["mlp"], c["reuse_x"], bug=bug),
                  ("mlp_grads", "values", "reuse_steps"))


def _bug(name: str, what: str, flips: tuple[str, ...], measure: Callable[[str | None], Tables]) -> Bug:
    return Bug(name, what, flips, lambda switch: measure(switch))


BUGS = [
    _bug(probes.S2_BUGS[0], "the forward ratio divides by 2h, a central difference's width",
         ("ratio_approaches_derivative",), _s2),
    _bug(probes.S1_BUGS[0], "the tape writes grad = instead of += (its documented switch)",
         ("tape_equals_torch64", "secant_gap_exceeds_rounding", "float32_differs_by_rounding", "routes_add"), _s1),
    _bug(probes.S1_BUGS[1], "the float32 path's dtype dropped: torch runs it in float64",
         ("float32_differs_by_rounding",), _s1),
    _bug(probes.S3_BUGS[0], "the hand chain rule swaps the product rule's factors (dm/da = a, dm/db = b)",
         ("routes_add", "single_route_is_product"), _s3),
    _bug(probes.S4_BUGS[0], "the overwrite variant's switch never reaches the tape: both variants accumulate",
         ("overwrite_keeps_last_route", "overwrite_factor_two_needs_b_minus_2"), _s4),
    _bug(probes.S4_BUGS[1], "the no-visited-set engine's switch never reaches the tape: both keep the set",
         ("no_visited_set_reruns_shared_node",), _s4),
    _bug(numeric.S5_BUGS[0], "the central difference divides by h, not 2h (a dropped factor 2)",
         ("central_beats_forward", "forward_best_step_smaller", "truncation_orders",
          "central_valley_has_interior_minimum"), _s5),
    _bug(numeric.S5_BUGS[1], "the float32 sweep's casts dropped: it runs in float64",
         ("dtype_moves_valley",), _s5),
    _bug(numeric.S6_BUGS[0], "the complex step returns Im f(x + ih) without dividing by h",
         ("complex_step_order_two", "complex_step_never_worsens", "relu_branch_local_slopes"), _s6),
    _bug(numeric.S6_BUGS[1], "the max(0, x + ih) exception text broadcast to every control's outcome",
         ("complex_step_abs_silent",), _s6),
    _bug(numeric.S7_BUGS[0], "the documented directions' central difference divides by h, not 2h",
         ("correct_gradient_passes", "directional_catches_corruption", "orthogonal_error_invisible"), _s7),
    _bug(blind.BLIND_BUGS[0], "the fresh directions' central difference divides by h, not 2h",
         ("orthogonal_error_invisible", "small_error_below_noise"), _s7),
    _bug(numeric.S7_BUGS[1], "the coordinate-0 central difference divides by h, not 2h",
         ("coordinate_check_blind",), _s7),
    _bug(numeric.S7_BUGS[2], "the ReLU-kink central difference divides by h, not 2h",
         ("relu_off_kink_agrees", "relu_kink_convention"), _s7),
    _bug(numeric.S7_BUGS[3], "the dropout check reseeds the generator in the fresh-mask regime too",
         ("fresh_dropout_breaks_check",), _s7),
    _bug(numeric.S7_BUGS[4], "the mutation check's central difference divides by h, not 2h",
         ("check_catches_four_bugs",), _s7),
    _bug(numeric.S8_BUGS[0], "the tape runs its closures in build order (its documented switch)",
         ("forward_reverse_agree", "forward_needs_a_pass_per_input"), _s8),
    _bug(numeric.S8_BUGS[1], "v J computed as J v: the Jacobian used transposed",
         ("nonscalar_needs_v_returns_vjp",), _s8),
    _bug(probes.S10_BUGS[0], "the MLP's tape writes grad = instead of += (its documented switch)",
         ("mlp_tape_matches_torch32",), _s10),
    _bug(probes.S10_BUGS[1], "the expression's `=` switch never reaches its tape: both runs accumulate",
         ("accumulate_matches_torch_overwrite_does_not",), _s10),
    _bug(probes.S10_BUGS[2], "the counted engine releases a node at one pending contribution, not zero",
         ("counted_engine_waits_for_both",), _s10),
]
