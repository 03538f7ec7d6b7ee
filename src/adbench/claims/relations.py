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
