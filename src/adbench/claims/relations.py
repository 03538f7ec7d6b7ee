"""The tests behind the claims table: one small pure function per conclusion, registered by name.

Each relation takes the measurement's tables ({"S1/gradients": DataFrame, ...}, the CSVs under
results/<ID>/ keyed as the report keys them) and returns (verdict, reason); the reason prints the
numbers the verdict rests on. `@relation(*tables)` registers the function under its own name and
records the tables it reads, so the judge can say "not measured" instead of raising KeyError.

Tolerances are float rounding scales (machine epsilon times a small count of operations) or a
threshold the claim itself names; never a documented or measured value.
"""

from __future__ import annotations

import math
from typing import Callable, Mapping

import numpy as np
import pandas as pd

HOLDS, FAILS, NOT_JUDGED = "holds", "fails", "not judged"
VERDICTS = (HOLDS, FAILS, NOT_JUDGED)

Tables = Mapping[str, pd.DataFrame]
Result = tuple[str, str]

RELATIONS: dict[str, Callable[[Tables], Result]] = {}
NEEDS: dict[str, tuple[str, ...]] = {}
# relations whose reason quotes stopwatch numbers: their rows of claims.csv differ from run to run
# (tests/dag/test_determinism.py leaves them out of the byte comparison)
VOLATILE: set[str] = set()

EPS64 = float(np.finfo(np.float64).eps)
EPS32 = float(np.finfo(np.float32).eps)
EPS16 = float(np.finfo(np.float16).eps)
# A handful of float64 operations stand between two computations of the same exact quantity; 64 ulps
# leaves room for that and is still 10^-14 relative, far below any effect a claim is about.
ROUNDING64 = 64 * EPS64


def relation(*tables: str, volatile: bool = False):
    """Transitional: register an old-style relation ((verdict, reason)) in the claims registry."""
    from .registry import RELATIONS as REG, Outcome, Relation

    def register(fn):
        def wrapped(t, fn=fn):
            v, why = fn(t)
            return Outcome(v, why, ())
        wrapped.__name__ = fn.__name__
        REG[fn.__name__] = Relation(fn.__name__, wrapped, tables, rests_on="timing" if volatile else "")
        RELATIONS[fn.__name__] = fn
        NEEDS[fn.__name__] = tables
        return fn
    return register


def verdict(ok: bool, reason: str) -> Result:
    return (HOLDS if ok else FAILS), reason


def g(x: float) -> str:
    """A number as a reason prints it."""
    return f"{float(x):.4g}"


def close(a: float, b: float, rel: float = ROUNDING64) -> bool:
    """Equal up to float64 rounding, relative to the larger magnitude (absolute near zero)."""
    return abs(a - b) <= rel * max(abs(a), abs(b), 1.0)


def qv(df: pd.DataFrame, quantity: str):
    """One quantity's value in a values.csv table."""
    hit = df.loc[df["quantity"] == quantity, "value"]
    if hit.empty:
        raise KeyError(f"quantity {quantity!r} not in values table")
    return hit.iloc[0]


def row(df: pd.DataFrame, col: str, key) -> pd.Series:
    hit = df[df[col] == key]
    if hit.empty:
        raise KeyError(f"no row with {col} == {key!r}")
    return hit.iloc[0]


def truthy(x) -> bool:
    """A CSV boolean, whether pandas parsed it or left the text."""
    return x is True or (isinstance(x, (bool, np.bool_)) and bool(x)) or str(x).strip().lower() == "true"


def is_none(x) -> bool:
    """A CSV cell that printed None: pandas reads the text None as a missing value."""
    return x is None or (isinstance(x, float) and math.isnan(x)) or str(x).strip() == "None"


def mat(df: pd.DataFrame, name: str, col: str = "hand") -> np.ndarray:
    """A matrix from a matrices.csv table (matrix,row,col,hand,torch,abs_diff)."""
    m = df[df["matrix"] == name]
    if m.empty:
        raise KeyError(f"matrix {name!r} not in table")
    out = np.full((int(m["row"].max()) + 1, int(m["col"].max()) + 1), np.nan)
    for r in m.itertuples():
        out[int(r.row), int(r.col)] = float(getattr(r, col))
    return out


# ---- O: optimization -----------------------------------------------------------------------------
@relation("O1/gradcheck")
def xor_gradcheck_agrees(t: Tables) -> Result:
    d = t["O1/gradcheck"]
    rel = (d["abs_diff"] / d["tape"].abs().clip(lower=1.0)).max()
    # central differences are good to about sqrt(eps) relative; a wrong rule is off by O(1)
    return verdict(rel <= math.sqrt(EPS64), f"largest |tape - central| / max(|g|, 1) over {len(d)} parameters: {g(rel)}")


def _stuck(d: pd.DataFrame, col: str) -> pd.Series:
    return d[col].map(truthy)


@relation("O1/seeds")
def xor_seed0_stalls(t: Tables) -> Result:
    r = row(t["O1/seeds"], "seed", 0)
    return verdict(truthy(r.gd_stuck), f"seed 0 gradient descent final loss {g(r.gd_final_loss)} (stuck: {r.gd_stuck})")


@relation("O1/seeds")
def xor_most_seeds_stick(t: Tables) -> Result:
    d = t["O1/seeds"]
    n = int(_stuck(d, "gd_stuck").sum())
    return verdict(n > len(d) / 2, f"{n}/{len(d)} seeds stuck under gradient descent")


@relation("O1/ulp")
def xor_sticking_is_fragile(t: Tables) -> Result:
    d = t["O1/ulp"]
    mixed = d[(d["stuck_copies"] > 0) & (d["stuck_copies"] < d["copies"])]
    return verdict(len(mixed) > 0, f"{len(mixed)}/{len(d)} seeds have both stuck and unstuck copies within "
                                   f"±{(int(d['copies'].iloc[0]) - 1) // 2} ulp of the initial weights")


@relation("O1/seeds")
def adam_rescues_stuck_seeds(t: Tables) -> Result:
    d = t["O1/seeds"]
    stuck = d[_stuck(d, "gd_stuck")]
    rescued = int((~_stuck(stuck, "adam_stuck")).sum())
    return verdict(len(stuck) > 0 and rescued == len(stuck), f"Adam unsticks {rescued} of the {len(stuck)} seeds "
                                                            f"gradient descent left stuck ({stuck.seed.tolist()})")


@relation("O2/ceiling")
def step_ceiling_is_stability_edge(t: Tables) -> Result:
    d = t["O2/ceiling"]
    below, above = d[d["margin"] < 0], d[d["margin"] > 0]
    ok = len(below) and len(above) and not below["diverged"].map(truthy).any() and above["diverged"].map(truthy).all()
    return verdict(bool(ok), f"just below 2/lambda_max diverged: {below.diverged.tolist()}; just above: {above.diverged.tolist()}")


@relation("O2/spectrum")
def ceiling_and_condition_from_spectrum(t: Tables) -> Result:
    s = t["O2/spectrum"].iloc[0]
    ok = close(s.condition, s.lambda_max / s.lambda_min, 1e-12) and close(s.ceiling, 2 / s.lambda_max, 1e-12)
    return verdict(ok, f"condition {g(s.condition)} = {g(s.lambda_max)}/{g(s.lambda_min)}; ceiling {g(s.ceiling)}")


@relation("O2/best")
def tuned_optimizers_reach_floor(t: Tables) -> Result:
    d = t["O2/best"].set_index("method")
    three = d.loc[["momentum", "rmsprop", "adam"], "at_noise_floor"]
    return verdict(bool((three > 0).all()), "settings at the noise floor: " + ", ".join(f"{k} {v}" for k, v in three.items()))


@relation("O2/best", "O2/spectrum")
def gradient_descent_falls_short(t: Tables) -> Result:
    gd = row(t["O2/best"], "method", "gd")
    floor = float(t["O2/spectrum"].iloc[0].noise_floor)
    return verdict(gd.at_noise_floor == 0 and gd.best_final_loss > floor,
                   f"best gradient descent loss {g(gd.best_final_loss)} vs noise floor {g(floor)}")


@relation("O3/arrangements")
def optimizer_bytes_per_parameter(t: Tables) -> Result:
    d = t["O3/arrangements"]
    totals = d[d["collection"] == "total"].set_index("arrangement")
    parts = d[d["collection"] != "total"].groupby("arrangement")["bytes_per_param"].sum()
    adds = all(parts[a] == totals.loc[a, "bytes_per_param"] for a in totals.index)
    # fp32 Adam is four fp32 collections; fp32 gradients instead of fp16 ones cost two bytes more
    ok = (adds and totals.loc["fp32_adam", "bytes_per_param"] == 4 * 4
          and totals.loc["mixed_fp32_grads", "bytes_per_param"] - totals.loc["mixed_fp16_grads", "bytes_per_param"] == 2)
    return verdict(ok, "bytes per parameter: " + ", ".join(f"{a} {v}" for a, v in totals["bytes_per_param"].items()))


@relation("O3/counts")
def tied_parameter_counted_once(t: Tables) -> Result:
    d = t["O3/counts"].set_index("count")["value"]
    return verdict(d["tied_names"] > 0 and d["unique"] < d["with_duplicates"],
                   f"unique {d['unique']:,} < with duplicates {d['with_duplicates']:,} ({d['tied_names']} tied)")


@relation("O1/linear")
def linear_model_cannot_fit_xor(t: Tables) -> Result:
    d = t["O1/linear"]
    best, const = row(d, "model", "affine least squares"), row(d, "model", "constant (target mean)")
    ok = best.sse > ROUNDING64 * max(float(const.sse), 1.0) and close(best.sse, const.sse)
    return verdict(ok, f"best affine squared error {g(best.sse)} (slopes {g(best.slope_x0)}, {g(best.slope_x1)}); "
                       f"constant guess {g(const.sse)}")


# ---- D: depth ------------------------------------------------------------------------------------
def _chain(t: Tables, name: str) -> pd.DataFrame:
    d = t["D1/chains"]
    return d[d["chain"] == name].sort_values("depth")


@relation("D1/chains")
def tanh_chain_decays(t: Tables) -> Result:
    c = _chain(t, "tanh_w1")
    v = c["tape_dL_dx"].abs().to_numpy()
    return verdict(len(v) > 1 and bool(np.all(np.diff(v) < 0)) and v[0] <= 1,
                   f"|dL/dx| from depth {c.depth.iloc[0]} to {c.depth.iloc[-1]}: {g(v[0])} -> {g(v[-1])}")


@relation("D1/chains")
def saturated_tanh_collapses_faster(t: Tables) -> Result:
    a, b = _chain(t, "tanh_w1").set_index("depth"), _chain(t, "tanh_w3").set_index("depth")
    common = a.index.intersection(b.index)
    ok = len(common) > 0 and bool((b.loc[common, "tape_dL_dx"].abs() < a.loc[common, "tape_dL_dx"].abs()).all())
    last = common[-1]
    return verdict(ok, f"at depth {last}: w=3 {g(b.loc[last, 'tape_dL_dx'])} vs w=1 {g(a.loc[last, 'tape_dL_dx'])}")


@relation("D1/chains")
def relu_chain_is_power_of_w(t: Tables) -> Result:
    d = t["D1/chains"]
    relu = d[d["activation"] == "relu"]
    ok = len(relu) > 0 and all(close(r.tape_dL_dx, r.w ** r.depth, 1e-12) for r in relu.itertuples())
    worst = max(relu.itertuples(), key=lambda r: r.depth)
    return verdict(ok, f"{len(relu)} relu rows equal w^depth (e.g. w={worst.w}, depth {worst.depth}: {g(worst.tape_dL_dx)})")


@relation("D1/fp16_probe")
def deep_gradient_rounds_to_zero_in_fp16(t: Tables) -> Result:
    r = t["D1/fp16_probe"].iloc[0]
    ok = r.binary64 > 0 and r.fp16 == 0 and r.binary64 < r.fp16_smallest_subnormal
    return verdict(ok, f"binary64 {g(r.binary64)} (below the smallest subnormal {g(r.fp16_smallest_subnormal)}) -> fp16 {r.fp16}")


@relation("D1/chains")
def chains_tape_equals_torch(t: Tables) -> Result:
    d = t["D1/chains"]
    # every layer adds a tanh from a different libm and, in saturated units, the cancellation in 1 - tanh^2:
    # rounding grows with depth, a few ulps per layer; 16 per layer leaves room and stays 10^-13 at depth 30
    per_layer = d["rel_diff"].abs() / (d["depth"] * EPS64)
    worst = d.loc[per_layer.idxmax()]
    return verdict(bool((per_layer <= 16).all()), f"largest relative tape/torch difference {g(worst.rel_diff)} at depth "
                                                  f"{worst.depth} ({g(per_layer.max())} ulps per layer)")


def _d2(t: Tables, residual: bool) -> pd.DataFrame:
    d = t["D2/summary"]
    return d[d["residual"].map(truthy) == residual]


@relation("D2/summary")
def plain_stack_vanishes_below_unit_scale(t: Tables) -> Result:
    d = _d2(t, False)
    s = d[d["scale"] == d["scale"].min()].sort_values("depth")
    ok = s["scale"].iloc[0] < 1 and bool((s["first_over_last"] < 1).all()) and bool(np.all(np.diff(s["first_over_last"]) < 0))
    return verdict(ok, f"plain, scale {s.scale.iloc[0]}: first/last " + ", ".join(
        f"depth {r.depth}: {g(r.first_over_last)}" for r in s.itertuples()))


@relation("D2/summary")
def plain_stack_explodes_above_unit_scale(t: Tables) -> Result:
    d = _d2(t, False)
    s = d[d["scale"] == d["scale"].max()].sort_values("depth")
    ok = s["scale"].iloc[0] > 1 and bool((s["first_over_last"] > 1).all())
    return verdict(ok, f"plain, scale {s.scale.iloc[0]}: first/last " + ", ".join(
        f"depth {r.depth}: {g(r.first_over_last)}" for r in s.itertuples()))


@relation("D2/summary")
def residual_never_starves_first_layer(t: Tables) -> Result:
    d = _d2(t, True)
    worst = d.loc[d["first_over_last"].idxmin()]
    return verdict(len(d) > 0 and bool((d["first_over_last"] >= 1).all()),
                   f"smallest first/last with residual: {g(worst.first_over_last)} (depth {worst.depth}, scale {worst.scale})")


@relation("D2/summary")
def residual_still_grows_at_large_scale(t: Tables) -> Result:
    plain, res = _d2(t, False), _d2(t, True)
    top = res["scale"].max()
    deep = res["depth"].max()
    r = row(res[res.scale == top], "depth", deep)
    p = row(plain[plain.scale == top], "depth", deep)
    return verdict(r.first_over_last > 1 and r.first_over_last < p.first_over_last,
                   f"depth {deep}, scale {top}: residual {g(r.first_over_last)}, plain {g(p.first_over_last)}")


# ---- P: precision ----------------------------------------------------------------------------
def _fmt(t: Tables, name: str) -> pd.Series:
    return row(t["P1/landmarks"], "format", name)


@relation("P2/casts", "P1/landmarks")
def below_half_subnormal_rounds_to_zero(t: Tables) -> Result:
    d, sub = t["P2/casts"], float(_fmt(t, "fp16").smallest_subnormal)
    ok = all((r.fp16 == 0) == (r.grad < sub / 2) for r in d.itertuples())
    kept_below = d[(d.grad < sub) & (d.fp16 > 0)]
    return verdict(bool(ok), f"zero exactly where grad < half the smallest subnormal ({g(sub / 2)}); "
                             f"{len(kept_below)} value(s) below the subnormal itself survive")


@relation("P3/errors", "P1/landmarks")
def fp16_error_grows_below_normal(t: Tables) -> Result:
    d, normal = t["P3/errors"], float(_fmt(t, "fp16").smallest_normal)
    lo, hi = d[d.x < normal]["fp16_rel_error"], d[d.x >= normal]["fp16_rel_error"]
    ok = len(lo) and len(hi) and lo.min() > hi.max()
    return verdict(bool(ok), f"largest relative error in the normal range {g(hi.max())}; smallest below it {g(lo.min())}")


@relation("P3/sweep", "P1/landmarks")
def bf16_relative_error_bounded(t: Tables) -> Result:
    d = t["P3/sweep"]
    half_gap = float(_fmt(t, "bf16").gap_above_1) / 2  # round to nearest: half a unit in the last place
    worst = float(d["bf16_rel_error"].max())
    return verdict(worst <= half_gap, f"largest bf16 relative error over {len(d)} values {g(worst)} vs half its gap {g(half_gap)}")


@relation("P4/static", "P1/landmarks")
def static_scale_rescues_small_overflows_large(t: Tables) -> Result:
    d, largest = t["P4/static"], float(_fmt(t, "fp16").largest)
    tiny = d.loc[d.grad.idxmin()]
    over = d[d.scaled_exact > largest]
    ok = (tiny.unscaled_fp16_direct == 0 and tiny.unscaled > 0 and len(over) > 0
          and not over["finite"].map(truthy).any() and d[d.scaled_exact <= largest]["finite"].map(truthy).all())
    return verdict(bool(ok), f"smallest grad {g(tiny.grad)}: direct fp16 {tiny.unscaled_fp16_direct}, scaled and back "
                             f"{g(tiny.unscaled)}; {len(over)} scaled value(s) above {largest:g} all non-finite")


@relation("P5/attempts", "P5/settled")
def dynamic_scale_halves_until_finite(t: Tables) -> Result:
    a, s = t["P5/attempts"], t["P5/settled"]
    per = a.groupby("attempt").agg(scale=("scale", "first"), finite=("finite", lambda x: x.map(truthy).all()))
    halves = all(close(per.scale.iloc[i + 1], per.scale.iloc[i] / 2) for i in range(len(per) - 1))
    ok = halves and per.finite.iloc[-1] and not per.finite.iloc[:-1].any() and all(
        close(r.unscaled, r.grad, EPS16) for r in s.itertuples())  # within one fp16 rounding
    return verdict(bool(ok), f"scales {per.scale.tolist()}, finite {per.finite.tolist()}; unscaled "
                             + ", ".join(f"{r.grad:g} -> {g(r.unscaled)}" for r in s.itertuples()))


@relation("P6/trajectory")
def fp16_weight_swamped_master_moves(t: Tables) -> Result:
    d = t["P6/trajectory"]
    frozen = bool((d["fp16"] == d["fp16"].iloc[0]).all())
    end = d.iloc[-1]
    ok = frozen and abs(end.fp32_master - end.exact) < abs(end.fp16 - end.exact) and end.fp32_master != end.exact
    return verdict(ok, f"after {int(end.step)} updates: fp16 {end.fp16}, fp32 master {g(end.fp32_master)}, exact {g(end.exact)}")


@relation("P7/spacing")
def update_below_half_gap_changes_nothing(t: Tables) -> Result:
    d = t["P7/spacing"].sort_values("weight")
    ok = bool(((d["update"] < d["half_gap"]) & (d.update_changes_weight.astype(str) == "no")).all()
              and np.all(np.diff(d.fp16_gap_above) > 0))
    return verdict(ok, "gap above weight: " + ", ".join(f"{r.weight:g}: {g(r.fp16_gap_above)}" for r in d.itertuples()))


@relation("P8/casts", "P8/gaps")
def bf16_keeps_range_loses_precision(t: Tables) -> Result:
    c, gp = t["P8/casts"], t["P8/gaps"]
    bf, f16, f32 = (row(gp, "format", n) for n in ("bf16", "fp16", "fp32"))
    ok = (bool(((c.fp16 == 0) & (c.bf16 > 0)).all()) and bf.smallest_normal == f32.smallest_normal
          and bf.gap_above_1 > f16.gap_above_1)
    return verdict(ok, f"tiny casts: fp16 {c.fp16.tolist()}, bf16 {[g(x) for x in c.bf16]}; bf16 gap x{g(bf.gap_over_fp16_gap)} fp16's")


@relation("P9/summary")
def bf16_loses_no_gradient(t: Tables) -> Result:
    bf = row(t["P9/summary"], "dtype", "bf16")
    return verdict(bf.to_zero == 0, f"bf16: {bf.to_zero} of {bf['values']:,} gradient values rounded to zero")


@relation("P9/summary")
def fp16_loses_some_gradient_scale_recovers(t: Tables) -> Result:
    f = row(t["P9/summary"], "dtype", "fp16")
    ok = f.to_zero > 0 and f.scaled_recovered > f.scaled_still_zero
    return verdict(ok, f"fp16: {f.to_zero} values to zero ({g(f.to_zero_pct)} %); scaled: {f.scaled_recovered} back, "
                       f"{f.scaled_still_zero} still zero")


# ---- G: GPT-2 probes -----------------------------------------------------------------------------
@relation("G1/target")
def nll_is_minus_log_probability(t: Tables) -> Result:
    r = t["G1/target"].iloc[0]
    # the table's two columns come from float32 logits: compare at float32 rounding
    ok = close(r.nll, -math.log(r.probability), 16 * EPS32)
    return verdict(ok, f"nll {g(r.nll)} vs -log p {g(-math.log(r.probability))}")


@relation("G2/states")
def gradient_reaches_every_state(t: Tables) -> Result:
    d = t["G2/states"]
    return verdict(len(d) > 0 and bool((d["grad_norm_last_token"] > 0).all()),
                   f"{int((d.grad_norm_last_token > 0).sum())}/{len(d)} states have a nonzero gradient; smallest "
                   f"{g(d.grad_norm_last_token.min())}")


@relation("G2/states")
def residual_norms_not_monotonic(t: Tables) -> Result:
    v = t["G2/states"].sort_values("state")["grad_norm_last_token"].to_numpy()
    steps = np.diff(v)
    return verdict(bool((steps > 0).any() and (steps < 0).any()),
                   f"{int((steps > 0).sum())} rises and {int((steps < 0).sum())} falls across {len(v)} states")


@relation("G3/qkv")
def value_slice_largest(t: Tables) -> Result:
    d = t["G3/qkv"]
    ok = bool(((d.v > d.q) & (d.v > d.k)).all())
    return verdict(ok, f"value norm largest in {int(((d.v > d.q) & (d.v > d.k)).sum())}/{len(d)} layers")


@relation("G4/direction")
def negative_gradient_descends(t: Tables) -> Result:
    d = t["G4/direction"]
    a, w, r = (row(d, "move", m) for m in ("against", "with", "restored"))
    ok = a.loss < a.original < w.loss and truthy(r.bitwise_equal_to_original)
    return verdict(ok, f"against {g(a.loss)} < original {g(a.original)} < with {g(w.loss)}; restored bit for bit: "
                       f"{r.bitwise_equal_to_original}")


@relation("G5/summary")
def perplexity_is_exp_mean(t: Tables) -> Result:
    s = t["G5/summary"].iloc[0]
    return verdict(close(s.perplexity, math.exp(s.mean_nats), 1e-9), f"perplexity {g(s.perplexity)} vs e^{g(s.mean_nats)}")


@relation("G5/summary")
def model_beats_uniform_guess(t: Tables) -> Result:
    s = t["G5/summary"].iloc[0]
    return verdict(s.mean_nats < s.uniform_nats_gpt2_small, f"mean surprise {g(s.mean_nats)} vs uniform {g(s.uniform_nats_gpt2_small)} nats")


@relation("G5/summary")
def surprise_is_skewed(t: Tables) -> Result:
    s = t["G5/summary"].iloc[0]
    ok = s.median_nats < s.mean_nats and s.worst_share_pct > 10  # the worst tenth carries more than a tenth
    return verdict(ok, f"median {g(s.median_nats)} vs mean {g(s.mean_nats)}; worst tenth carries {g(s.worst_share_pct)} %")


def _by_arch(d: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """(architecture, rows) of a G6 table (transformers, nanogpt); one unnamed group without an arch column."""
    if "arch" not in d:
        return [("", d)]
    return [(str(a), rows) for a, rows in d.groupby("arch", sort=False)]


def _every_arch(checks: list[tuple[str, bool, str]]) -> Result:
    """Holds when the relation holds on every architecture; the reason names each."""
    return verdict(bool(checks) and all(ok for _, ok, _ in checks),
                   "; ".join(f"{a}: {why}" if a else why for a, _, why in checks))


def _saved(d: pd.DataFrame, checkpoint: bool, batch: int | None = None) -> pd.Series:
    """One architecture's counted-and-dropped row of G6/saved (the smallest batch unless `batch`)."""
    d = d[(d["checkpoint"].map(truthy) == checkpoint) & (~d["kept"].map(truthy))]
    d = d[d["batch"] == (batch if batch is not None else d["batch"].min())]
    return d.iloc[0]


def _summary(t: Tables, arch: str) -> pd.Series:
    s = t["G6/summary"]
    return s[s["arch"] == arch].iloc[0] if arch and "arch" in s else s.iloc[0]


@relation("G6/saved", "G6/summary")
def activations_exceed_weights(t: Tables) -> Result:
    checks = []
    for arch, d in _by_arch(t["G6/saved"]):
        one, weights = _saved(d, False), float(_summary(t, arch).weights_bytes_run)
        checks.append((arch, one.unique_storage_bytes > weights, f"one sequence keeps {g(one.unique_storage_bytes / 1e6)} "
                                                                 f"MB (unique storages) vs {g(weights / 1e6)} MB of weights"))
    return _every_arch(checks)


@relation("G6/saved")
def checkpoint_cuts_saved_batch(t: Tables) -> Result:
    checks = []
    for arch, d in _by_arch(t["G6/saved"]):
        big = int(d["batch"].max())
        p, c = _saved(d, False, big), _saved(d, True, big)
        checks.append((arch, c.unique_storage_bytes < p.unique_storage_bytes,
                       f"batch {big}: checkpointed {g(c.unique_storage_bytes / 1e9)} GB vs plain "
                       f"{g(p.unique_storage_bytes / 1e9)} GB"))
    return _every_arch(checks)


@relation("G6/saved", "G6/summary")
def logprobs_dominate_checkpointed(t: Tables) -> Result:
    checks = []
    for arch, d in _by_arch(t["G6/saved"]):
        big = int(d["batch"].max())
        c = _saved(d, True, big)
        lp = float(_summary(t, arch).logprob_bytes_run)
        checks.append((arch, lp > c.unique_storage_bytes / 2, f"log-probabilities {g(lp / 1e9)} GB of the checkpointed "
                                                             f"{g(c.unique_storage_bytes / 1e9)} GB (batch {big})"))
    return _every_arch(checks)


@relation("G6/summary", volatile=True)
def checkpoint_costs_time(t: Tables) -> Result:
    return _every_arch([(arch, float(r) > 1, f"checkpointed / plain median time {g(r)}")
                        for arch, d in _by_arch(t["G6/summary"]) for r in d.checkpoint_time_ratio_volatile])


# Batch-independent saves (position indices, the causal mask) are a few kB against the activations.
LINEAR_SLACK = 0.01


@relation("G6/saved")
def saved_bytes_scale_with_batch(t: Tables) -> Result:
    checks = []
    for arch, d in _by_arch(t["G6/saved"]):
        big = int(d["batch"].max())
        one, many = _saved(d, False), _saved(d, False, big)
        ratio = many.unique_storage_bytes / (big * one.unique_storage_bytes)
        checks.append((arch, big > 1 and abs(ratio - 1) <= LINEAR_SLACK,
                       f"batch {big} / ({big} x one sequence) = {g(ratio)}; one sequence "
                       f"{g(one.unique_storage_bytes / 1e6)} MB"))
    return _every_arch(checks)


@relation("G6/attention")
def fused_attention_keeps_fewer_bytes(t: Tables) -> Result:
    checks = []
    for arch, d in _by_arch(t["G6/attention"]):
        k = d.set_index("attention").unique_storage_bytes
        checks.append((arch, k["sdpa"] < k["eager"], f"fused (SDPA) {g(k['sdpa'] / 1e6)} MB vs explicit softmax(QK^T)V "
                                                     f"{g(k['eager'] / 1e6)} MB per sequence"))
    return _every_arch(checks)


@relation("G7/clipping")
def clip_returns_unclipped_total(t: Tables) -> Result:
    r = t["G7/clipping"].iloc[0]
    return verdict(r.clip_return == r.total_norm_fp32, f"clip_grad_norm_ returned {float(r.clip_return)!r}; fp32 total {float(r.total_norm_fp32)!r}")


@relation("G7/clipping")
def clipping_shortens_never_turns(t: Tables) -> Result:
    r = t["G7/clipping"].iloc[0]
    # fp32 summation over the whole model: the measured fp32-vs-fp64 gap of the total bounds the rounding
    slack = 2 * abs(r.total_norm - r.total_norm_fp32) / r.total_norm + EPS32
    ok = (r.total_norm > r.max_norm and abs(r.clipped_norm - r.max_norm) <= slack * r.max_norm
          and r.clipped_norm / r.total_norm <= 1 and 1 - r.cosine_clipped_unclipped <= EPS32)
    return verdict(ok, f"total {g(r.total_norm)} -> clipped {r.clipped_norm:.7g} (limit {r.max_norm:g}, slack {g(slack)}); "
                       f"1 - cosine = {g(1 - r.cosine_clipped_unclipped)}")


@relation("G7/clipping")
def token_table_dominates_gradient(t: Tables) -> Result:
    r = t["G7/clipping"].iloc[0]
    ok = r.token_table_norm > r.rest_norm and r.token_table_input_side < r.token_table_output_side
    return verdict(ok, f"token table {g(r.token_table_norm)} (input side {g(r.token_table_input_side)}, output side "
                       f"{g(r.token_table_output_side)}) vs the rest {g(r.rest_norm)}")


@relation("G8/blocks")
def no_block_starved_or_runaway(t: Tables) -> Result:
    d = t["G8/blocks"]
    bad = d[d["starved"].map(truthy) | d["runaway"].map(truthy)]
    return verdict(len(d) > 0 and bad.empty, f"{len(bad)}/{len(d)} blocks starved or runaway; norm / median "
                                             f"{g(d.over_median.min())}..{g(d.over_median.max())}")


# ---- C1: the character model trained five ways -------------------------------------------------
BUGS = ("no_zero_grad", "unshifted_targets", "loss_x40", "detached_positions")


def _c1(t: Tables) -> pd.DataFrame:
    return t["C1/summary"].set_index("variant")


@relation("C1/summary")
def loss_x40_matches_correct(t: Tables) -> Result:
    s = _c1(t)["heldout_loss"]
    gap = abs(s["loss_x40"] - s["correct"])
    others = {b: abs(s[b] - s["correct"]) for b in BUGS if b != "loss_x40"}
    return verdict(gap < min(others.values()), f"held-out: x40 {g(s['loss_x40'])} vs correct {g(s['correct'])} "
                                               f"(gap {g(gap)}; smallest other bug gap {g(min(others.values()))})")


@relation("C1/grad_norms")
def loss_x40_scales_first_gradient(t: Tables) -> Result:
    d = t["C1/grad_norms"]
    first = d[d["step"] == d["step"].min()].pivot_table(index="group", columns="variant", values="grad_norm")
    factor = float("loss_x40".rsplit("x", 1)[1])  # the factor the bug's name states
    ratio = first["loss_x40"] / first["correct"]
    ok = bool(np.allclose(ratio, factor, rtol=len(first) * 16 * EPS32))  # float32 gradients, same first batch
    return verdict(ok, f"step {int(d.step.min())} gradient norm x40 / correct per group: {g(ratio.min())}..{g(ratio.max())}")


@relation("C1/summary")
def detached_positions_get_no_gradient(t: Tables) -> Result:
    s = _c1(t)
    det, cor = s.loc["detached_positions"], s.loc["correct"]
    return verdict(det.position_grad_max == 0 and cor.position_grad_min > 0,
                   f"position table gradient: detached max {det.position_grad_max}, correct min {g(cor.position_grad_min)}")


@relation("C1/grad_norms")
def detached_zero_from_step_one(t: Tables) -> Result:
    d = t["C1/grad_norms"]
    det = d[(d.variant == "detached_positions") & (d.group == "position_table")]
    return verdict(len(det) > 0 and bool((det.grad_norm == 0).all()) and int(det.step.min()) == int(d.step.min()),
                   f"{len(det)} logged steps from step {int(det.step.min()) if len(det) else '-'}: max {det.grad_norm.max()}")


@relation("C1/summary")
def detached_positions_end_worse(t: Tables) -> Result:
    s = _c1(t)["heldout_loss"]
    return verdict(s["detached_positions"] > s["correct"], f"held-out: detached {g(s['detached_positions'])} vs correct {g(s['correct'])}")


@relation("C1/summary", "C1/baselines")
def unshifted_best_train_worst_heldout(t: Tables) -> Result:
    s, b = _c1(t), t["C1/baselines"].set_index("baseline")["heldout_loss"]
    u = s.loc["unshifted_targets"]
    ok = u.final_train_loss == s["final_train_loss"].min() and u.heldout_loss > b["uniform"]
    return verdict(ok, f"unshifted: train {g(u.final_train_loss)} (lowest of {len(s)}), held-out {g(u.heldout_loss)} "
                       f"vs uniform {g(b['uniform'])}")


@relation("C1/summary", "C1/curves", "C1/baselines")
def no_zero_grad_falls_then_climbs(t: Tables) -> Result:
    c = t["C1/curves"]
    c = c[c.variant == "no_zero_grad"].sort_values("step")
    uniform = float(t["C1/baselines"].set_index("baseline").loc["uniform", "heldout_loss"])
    low = c.loc[c.train_loss.idxmin()]
    end = float(_c1(t).loc["no_zero_grad", "final_train_loss"])
    ok = low.train_loss < c.train_loss.iloc[0] and end > uniform and int(low.step) < int(c.step.iloc[-1])
    return verdict(ok, f"no zero_grad: lowest {g(low.train_loss)} at step {int(low.step)}, ends {g(end)} vs uniform {g(uniform)}")


@relation("C1/summary", "C1/baselines")
def correct_beats_baselines(t: Tables) -> Result:
    s, b = _c1(t), t["C1/baselines"].set_index("baseline")["heldout_loss"]
    c = s.loc["correct", "heldout_loss"]
    return verdict(c < b["unigram"] < b["uniform"], f"held-out: correct {g(c)}, unigram {g(b['unigram'])}, uniform {g(b['uniform'])}")


@relation("C1/summary")
def loss_only_catches_half(t: Tables) -> Result:
    s = _c1(t)
    visible = [b for b in BUGS if str(s.loc[b, "loss_only_dashboard"]).startswith("visible")]
    return verdict(2 * len(visible) == len(BUGS), f"visible on the loss curve: {', '.join(visible) or 'none'} "
                                                 f"({len(visible)} of {len(BUGS)})")


@relation("C1/summary")
def unshifted_best_train_loss_of_five(t: Tables) -> Result:
    s = _c1(t).loc[["correct", *BUGS], "final_train_loss"]  # the five runs, not the clipped control
    return verdict(s.idxmin() == "unshifted_targets", "final training loss: " + ", ".join(f"{v} {g(x)}" for v, x in s.items()))


@relation("C1/grad_norms")
def no_zero_grad_norm_keeps_growing(t: Tables) -> Result:
    d = t["C1/grad_norms"]

    def quarter_means(variant: str) -> list[float]:
        v = d[(d.variant == variant) & (d.group == "total")].sort_values("step")["grad_norm"].to_numpy(float)
        return [float(q.mean()) for q in np.array_split(v, 4) if len(q)]

    pile, ref = quarter_means("no_zero_grad"), quarter_means("correct")
    ahead = [p / r for p, r in zip(pile, ref)]  # the pile against the correct run's own gradient
    ok = len(pile) == len(ref) == 4 and bool(np.all(np.diff(pile) > 0) and np.all(np.diff(ahead) > 0))
    return verdict(ok, "total gradient norm, quarter means of the logged steps: no zero_grad " + ", ".join(map(g, pile))
                       + "; over the correct run's x" + ", x".join(map(g, ahead)))


@relation("C1/checks/sgd_steps")
def sgd_loss_x40_is_40x_lr(t: Tables) -> Result:
    d = t["C1/checks/sgd_steps"]
    tol = math.sqrt(EPS64) * d["max_abs_move"]  # half the float64 digits of how far the weights moved
    ok = len(d) > 1 and bool((d.max_abs_diff_vs_scaled_lr <= tol).all() and (d.max_abs_diff_vs_unscaled > tol).all())
    return verdict(ok, f"over {len(d)} steps: largest |loss x40 - 40x lr| weight difference {g(d.max_abs_diff_vs_scaled_lr.max())}"
                       f", weights moved up to {g(d.max_abs_move.max())}; vs the unscaled run {g(d.max_abs_diff_vs_unscaled.min())} or more")


@relation("C1/checks/one_step")
def adamw_loss_x40_step_up_to_eps(t: Tables) -> Result:
    d = t["C1/checks/one_step"]
    a, s = row(d, "optimizer", "adamw"), row(d, "optimizer", "sgd")
    only_eps = a.residual_norm <= math.sqrt(EPS64) * a.step_norm_unscaled  # the difference is the eps term
    ok = bool(only_eps and a.diff_over_step < 1 and close(s.diff_over_step, s.scale - 1, 1e-9))
    return verdict(ok, f"AdamW: the x{g(a.scale)} step differs by {g(a.diff_over_step)} of the step, eps term predicts "
                       f"{g(a.eps_term_norm)} of {g(a.diff_norm)} (residual {g(a.residual_norm)}); SGD differs by {g(s.diff_over_step)}")


@relation("C1/checks/drift")
def detached_table_ends_at_init(t: Tables) -> Result:
    d = t["C1/checks/drift"]
    det = d[(d.variant == "detached_positions") & (d.group == "position_table")]
    cor = d[(d.variant == "correct") & (d.group == "position_table")]
    ok = (len(det) == 1 and len(cor) == 1 and truthy(det.unchanged.iloc[0]) and float(det.max_abs_change.iloc[0]) == 0
          and float(cor.max_abs_change.iloc[0]) > 0)
    return verdict(ok, f"position table, largest change from its initial value: detached "
                       f"{det.max_abs_change.tolist()} (bit-identical {det.unchanged.tolist()}), correct {cor.max_abs_change.tolist()}")
