"""C1 summary: the values rows against the documents and the per-run table (loss-only dashboard view)."""

from __future__ import annotations

import math

import pandas as pd

from ..tables import values_table
from .variants import switches


def dashboard(final: float, correct: float, uniform: float) -> str:
    """What someone watching only the training loss would conclude from the final value."""
    if final > uniform:
        return "visible: training loss ends above a uniform guess"
    if final < 0.25 * correct:
        return "visible, but looks like success: training loss far below the correct run"
    if abs(final - correct) <= 0.15 * correct:
        return "invisible: a normal-looking falling curve"
    side = "higher" if final > correct else "lower"
    return f"looks normal on its own: a falling curve; only a correct run beside it shows it ends {side}"


def surprise(p: float) -> float:
    """Cross-entropy of one token given probability p: -ln p nats (0 for a certain token)."""
    return 0.0 - math.log(p)  # 0.0 - ... keeps -ln 1 at +0.0


def surprise_rows(probabilities: list[float]) -> tuple[list[tuple[str, float]], dict[str, str]]:
    """C1's surprise rows and their notes: named by position in charlm.surprise_probabilities (a configured value
    is never part of a name that the documented table looks up), each probability in its row's note."""
    names = [f"surprise_prob{i}" for i in range(len(probabilities))]
    return ([(n, surprise(p)) for n, p in zip(names, probabilities)],
            {n: f"charlm.surprise_probabilities[{i}] = {p:g}" for i, (n, p) in enumerate(zip(names, probabilities))})


def measure_summary(heldout: pd.DataFrame, baselines: pd.DataFrame, curves: list[pd.DataFrame],
                    grad_norms: list[pd.DataFrame], runs: list[pd.DataFrame], final_window: int, early_step: int,
                    surprise_probabilities: list[float], loss_scale: float) -> dict:
    """The C1 values rows and the variant table (final training loss, held-out loss, dashboard view, and the
    factor each run multiplied its loss by: `loss_scale`, charlm.train.loss_scale, for the run whose switch
    scales it). `curves`, `grad_norms` and `runs`: one frame per variant (one training job each)."""
    curves, grad_norms, runs = (pd.concat(frames, ignore_index=True) for frames in (curves, grad_norms, runs))
    curves = curves.sort_values(["variant", "step"], kind="stable")
    held = heldout.set_index("variant")["heldout_loss"]
    base = baselines.set_index("baseline")["heldout_loss"]
    final = curves.groupby("variant")["train_loss"].apply(lambda s: s.tail(final_window).mean())
    pos = grad_norms[grad_norms.group == "position_table"].groupby("variant")["grad_norm"]
    table = pd.DataFrame([{"variant": v, "final_train_loss": final[v], "heldout_loss": held[v],
                           "heldout_vs_correct_pct": 100 * (held[v] / held["correct"] - 1),
                           "position_grad_min": pos.min()[v], "position_grad_max": pos.max()[v],
                           "loss_scale": loss_scale if switches(v)["scale_loss"] else 1.0,
                           "loss_only_dashboard": "reference run" if v == "correct"
                           else dashboard(final[v], final["correct"], base["uniform"])}
                          for v in held.index])
    table = table.merge(runs[["variant", "grad_clip", "parameters", "train_seconds_volatile", "steps", "raised",
                              "steps_completed"]], on="variant")  # raised: a run's error, or "ran through"
    nzg = curves[curves.variant == "no_zero_grad"].set_index("step")["train_loss"]
    clip = table.set_index("variant").grad_clip["correct"]   # the clipped control run is not one of the four bugs
    bugs = table[(table.variant != "correct") & (table.grad_clip == clip)]
    items = [("unigram_heldout_loss", base["unigram"]), ("correct_heldout_loss", held["correct"]),
             ("no_zero_grad_train_loss_early", nzg[early_step]),
             ("no_zero_grad_final_train_loss", final["no_zero_grad"]),
             ("charset_size", int(baselines.set_index("baseline").loc["uniform", "characters"])),
             ("unshifted_final_train_loss", final["unshifted_targets"]),
             ("unshifted_heldout_loss", held["unshifted_targets"]),
             ("loss_scaled_heldout_loss", held["loss_scaled"]),
             ("detached_positions_heldout_loss", held["detached_positions"]),
             ("detached_vs_correct_pct", 100 * (held["detached_positions"] / held["correct"] - 1)),
             ("uniform_loss", base["uniform"]),
             ("loss_visible_bugs", int(bugs.loss_only_dashboard.str.startswith("visible").sum()))]
    notes = {q: "different corpus (CPython docs, not the blog), model size and seed" for q, _ in items}
    notes["loss_visible_bugs"] = f"of {len(bugs)} bug runs, judged from the final training loss alone (summary table)"
    notes["uniform_loss"] = "ln of this corpus's character count, from the evaluation's uniform baseline"
    rows, row_notes = surprise_rows(surprise_probabilities)
    items += rows
    notes |= row_notes
    notes["no_zero_grad_train_loss_early"] = f"training loss of the single batch at step {early_step}"
    notes["charset_size"] = "this corpus's character set, not the blog's"
    notes["unshifted_final_train_loss"] = (
        "a collapsing loss (copying the visible character): it keeps falling roughly tenfold every few "
        "hundred steps, so its final size reflects learning rate and run length, not the bug's mechanism")
    return {"values": values_table("C1", items, notes), "summary": table, "curves": curves,
            "grad_norms": grad_norms}
