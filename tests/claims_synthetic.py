"""A small synthetic result set shaped like the real results/<ID>/*.csv, on which every claim holds,
and for each relation one edit that violates it (its negative control). Shared by the claims tests.

The numbers are made up to satisfy (or break) the relations; none is a documented or measured value.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

DF = pd.DataFrame


def _values(mid: str, pairs: dict) -> DF:
    return DF({"id": mid, "quantity": list(pairs), "value": list(pairs.values()), "note": ""})


def _matrices(entries: dict[str, list[list[float]]], with_torch: set[str]) -> DF:
    rows = []
    for name, m in entries.items():
        for i, r in enumerate(m):
            for j, v in enumerate(r):
                rows.append({"matrix": name, "row": i, "col": j, "hand": v,
                             "torch": v if name in with_torch else np.nan, "abs_diff": 0.0 if name in with_torch else np.nan})
    return DF(rows)


def good_tables() -> dict[str, DF]:
    t: dict[str, DF] = {}
    t["S1/gradients"] = DF({"method": ["tape", "torch float64", "torch float32", "central difference h=0.1"],
                            "dL_da": [-0.2, -0.2, -0.2000001, -0.21], "dL_db": [0.3, 0.3, 0.3000001, np.nan],
                            "abs_diff_da_vs_tape": [0.0, 0.0, 1e-7, 1e-2]})
    t["S2/nudges"] = DF({"nudge": [0.1, 0.01], "ratio": [4.1, 4.01], "exact_2x_plus_h": [4.1, 4.01]})
    t["S3/routes"] = DF({"route": ["a -> m -> z -> L", "a -> z -> L", "sum"], "value": [-0.4, 0.1, -0.3]})
    t["S4/variants"] = DF({"variant": ["correct +=", "BUG = (overwrite)", "BUG wrong order"],
                           "dL_da": [-0.3, -0.4, 0.0], "dL_db": [0.5, 0.5, 0.0]})
    t["S4/values"] = _values("S4", {"exceptions_raised": 0.0})
    t["S5/sweep"] = DF({"h": [1e-1, 1e-5, 1e-12], "forward_err": [1e-2, 1e-6, 1e-4], "central_err": [1e-3, 1e-11, 1e-5]})
    t["S5/slopes"] = DF({"method": ["forward", "central"], "slope": [1.1, 1.9]})
    t["S6/sweep"] = DF({"h": [1e-1, 1e-2, 1e-8, 1e-100], "estimate": [-0.18, -0.1807, -0.18070663892364855] + [-0.18070663892364855],
                        "abs_err": [1e-3, 1e-5, 1e-17, 0.0]})
    t["S6/controls"] = DF({"control": ["abs at +2", "max(0, 2+ih)"], "complex_step": [0.0, np.nan], "real_slope": [1.0, 1.0],
                           "outcome": [np.nan, "TypeError: no ordering"]})
    t["S7/directions"] = DF({"direction": [0, 1], "abs_error": [1e-11, 2e-10], "corrupted_abs_error": [1e-3, 5e-2]})
    t["S8/modes"] = DF({"input": ["x0", "x1"], "forward_mode": [0.1, -0.2], "reverse_mode": [0.1, -0.2], "forward_ops": [3, 3]})
    t["S8/values"] = _values("S8", {"forward_ops_total": 6.0, "reverse_closures": 3.0})
    t["S9/per_process"] = DF({"process": [1, 2], "reported": [True, True], "ratio": [300.0, 500.0]})
    t["S10/values"] = _values("S10", {"a_grad_accumulate": -1.0, "a_grad_torch": -1.0, "a_grad_overwrite": -5.0})
    t["S10/mlp_grads"] = DF({"param": [0, 1], "tape_grad": [2.0, -1.0], "torch_float32_grad": [2.0, -1.0], "abs_diff": [1e-7, 0.0]})
    t["T1/matrices"] = _matrices({"Y": [[1.0, 2.0]], "dX": [[1.0, -2.0]], "dW": [[3.0], [4.0]]}, {"dX", "dW"})
    t["T2/matrices"] = _matrices({"p": [[0.5, 0.3, 0.2]], "dz": [[-0.5, 0.3, 0.2]]}, {"dz"})
    t["T3/matrices"] = _matrices({"dS": [[0.5, -0.5], [-1.0, 1.0]], "dQ": [[0.1, 0.2, 0.3]] * 2}, {"dQ"})
    t["T3/control"] = DF({"gradient": ["dQ", "dK", "dV"], "ratio_forgot_over_correct": [math.sqrt(3), math.sqrt(3), 1.0],
                          "caught": [True, True, False]})
    t["T4/matrices"] = _matrices({"xhat": [[-1.0, 0.0, 1.0]], "dx": [[0.5, -1.0, 0.5]], "dgamma": [[-2.0, 0.0, 3.0]],
                                  "dbeta": [[2.0, 5.0, 3.0]]}, {"dx"})
    t["L1/values"] = _values("L1", {"max_abs_g2_minus_2g1": 0.0, "max_abs_g2_minus_g1": 0.5})
    t["L1/zero_grad"] = DF({"parameter": ["weight", "bias"], "grad_after_zero_grad": [np.nan, np.nan]})  # "None" as read
    t["L2/schemes"] = DF({"scheme": ["full batch", "weighted 3/7 + 4/7", "unweighted sum of means",
                                     "nanoGPT: 8 microbatches, loss/8", "nanoGPT without the /40"],
                          "grad_norm": [1.0, 1.0, 2.1, 0.5, 4.0], "max_abs_diff_vs_full": [0.0, 0.0, 0.7, 0.0, 3.0]})
    t["L2/values"] = _values("L2", {"nanogpt_microbatches": 8.0})
    t["L3/ranks"] = DF({"reduction": ["average of rank means", "rank means weighted by count", "sum of rank sums / (7*2)"],
                        "max_abs_diff_vs_single_process": [0.1, 0.0, 0.0], "grad_norm": [1.1, 1.0, 1.0]})
    t["L4/tensors"] = DF({"tensor": ["x", "y = x*x", "y after retain_grad()"], "is_leaf": [True, False, False],
                          "grad_fn": [np.nan, "MulBackward0", "MulBackward0"], "grad": ["[1.0]", np.nan, "[1.0]"]})
    t["L5/errors"] = DF({"case": ["a", "b"], "message": ["tensor is at version 1; expected version 0",
                                                         "Trying to backward through the graph a second time"]})
    t["L5/values"] = _values("L5", {"retain_graph_grad_0": 1.0, "retain_graph_grad_1": 2.0,
                                    "retain_graph_first_grad_0": 1.0, "retain_graph_first_grad_1": 2.0})
    t["L6/accounting"] = DF({"mode": ["plain", "checkpoint_sequential"], "hook_bytes": [100, 40], "hook_mib": [1.0, 0.4],
                             "hook_calls": [21, 12], "unique_storages": [17, 10],
                             "unique_storage_mib": [0.9, 0.3], "block_calls_forward": [4, 4], "block_calls_total": [4, 6]})
    t["L6/timing/per_process"] = DF({"process": [1, 1, 2], "ratio": [0.9, 1.5, 1.6], "reported": [False, True, True]})
    t["L6/checks"] = DF({"mode": ["checkpoint_sequential"], "loss_abs_diff": [0.0], "max_grad_abs_diff": [0.0]})
    t["L7/sweep"] = DF({"seq_len": [2, 4], "batch": [1, 1], "residual_state_bytes": [20, 40], "scores_per_layer_bytes": [12, 48]})
    t["O1/gradcheck"] = DF({"param": ["a", "b"], "tape": [0.5, -2.0], "abs_diff": [1e-12, 1e-11]})
    t["O1/seeds"] = DF({"seed": [0, 1, 2], "gd_final_loss": [4.0, 4.0, 1e-4], "gd_stuck": [True, True, False],
                        "adam_stuck": [False, False, False]})
    t["O1/ulp"] = DF({"seed": [0, 1], "stuck_copies": [2, 0], "copies": [7, 7]})
    t["O2/ceiling"] = DF({"margin": [-0.01, 0.01], "diverged": [False, True]})
    t["O2/spectrum"] = DF({"lambda_min": [2.0], "lambda_max": [100.0], "condition": [50.0], "ceiling": [0.02], "noise_floor": [1e-4]})
    t["O2/best"] = DF({"method": ["gd", "momentum", "rmsprop", "adam"], "at_noise_floor": [0, 1, 2, 3],
                       "best_final_loss": [0.5, 1e-4, 1e-4, 1e-4]})
    rows = []
    for arr, cols in {"fp32_adam": [4, 4, 4, 4], "mixed_fp16_grads": [2, 2, 4, 4, 4], "mixed_fp32_grads": [2, 4, 4, 4, 4]}.items():
        rows += [{"arrangement": arr, "collection": f"c{i}", "bytes_per_param": b} for i, b in enumerate(cols)]
        rows.append({"arrangement": arr, "collection": "total", "bytes_per_param": sum(cols)})
    t["O3/arrangements"] = DF(rows)
    t["O3/counts"] = DF({"count": ["unique", "with_duplicates", "tied_names"], "value": [10, 14, 1]})
    chains = []
    for name, act, w, vals in (("tanh_w1", "tanh", 1.0, [0.8, 0.5, 0.2]), ("tanh_w3", "tanh", 3.0, [0.1, 1e-3, 1e-6]),
                               ("relu_w1.2", "relu", 1.2, [1.2, 1.44, 1.728])):
        chains += [{"chain": name, "activation": act, "w": w, "depth": d + 1, "tape_dL_dx": v, "torch_dL_dx": v, "rel_diff": 0.0}
                   for d, v in enumerate(vals)]
    t["D1/chains"] = DF(chains)
    t["D1/fp16_probe"] = DF({"chain": ["x"], "binary64": [1e-8], "fp16": [0.0], "fp16_smallest_subnormal": [6e-8]})
    t["D2/summary"] = DF({"depth": [10, 20, 10, 20, 10, 20, 10, 20], "scale": [0.5, 0.5, 2.0, 2.0, 0.5, 0.5, 2.0, 2.0],
                          "residual": [False] * 4 + [True] * 4,
                          "first_over_last": [1e-3, 1e-6, 10.0, 100.0, 2.0, 3.0, 5.0, 50.0]})
    t["P1/landmarks"] = DF({"format": ["fp16", "bf16", "fp32"], "smallest_normal": [6e-5, 1e-38, 1e-38],
                            "smallest_subnormal": [6e-8, 1e-40, 1e-45], "largest": [6e4, 3e38, 3e38], "gap_above_1": [1e-3, 8e-3, 1e-7]})
    t["P2/casts"] = DF({"grad": [1e-4, 4e-8, 1e-8], "fp16": [1e-4, 6e-8, 0.0]})
    t["P3/errors"] = DF({"x": [1e-3, 1e-6, 3e-8], "fp16_rel_error": [4e-4, 1e-2, 0.9]})
    t["P3/sweep"] = DF({"x": [1e-10, 1e-5], "bf16_rel_error": [1e-3, 2e-3]})
    t["P4/static"] = DF({"grad": [1e-8, 1.0], "scaled_exact": [1e-3, 7e4], "finite": [True, False],
                         "unscaled": [1e-8, np.inf], "unscaled_fp16_direct": [0.0, 1.0]})
    t["P5/attempts"] = DF({"attempt": [1, 1, 2, 2], "scale": [8.0, 8.0, 4.0, 4.0], "grad": [2.0, 1e-8, 2.0, 1e-8],
                           "finite": [False, True, True, True]})
    t["P5/settled"] = DF({"grad": [2.0, 1e-8], "scale": [4.0, 4.0], "unscaled": [2.0, 1.0000001e-8]})
    t["P6/trajectory"] = DF({"step": [0, 10], "fp16": [1.0, 1.0], "fp32_master": [1.0, 1.0031], "exact": [1.0, 1.003]})
    t["P7/spacing"] = DF({"weight": [1.0, 8.0], "fp16_gap_above": [1e-3, 8e-3], "half_gap": [5e-4, 4e-3], "update": [3e-4, 3e-4],
                          "update_changes_weight": ["no", "no"]})
    t["P8/casts"] = DF({"value": [1e-8], "fp16": [0.0], "bf16": [1e-8]})
    t["P8/gaps"] = DF({"format": ["fp16", "bf16", "fp32"], "gap_above_1": [1e-3, 8e-3, 1e-7], "smallest_normal": [6e-5, 1e-38, 1e-38],
                       "gap_over_fp16_gap": [1.0, 8.0, 1e-4]})
    t["P9/summary"] = DF({"dtype": ["fp16", "bf16"], "values": [100, 100], "to_zero": [10, 0], "to_zero_pct": [10.0, 0.0],
                          "scaled_still_zero": [1, 0], "scaled_recovered": [9, 0]})
    t["G1/target"] = DF({"nll": [2.0], "probability": [math.exp(-2.0)]})
    t["G2/states"] = DF({"state": [0, 1, 2], "grad_norm_last_token": [2.0, 1.0, 3.0]})
    t["G3/qkv"] = DF({"layer": [0, 5], "q": [1.0, 2.0], "k": [1.5, 1.0], "v": [9.0, 3.0]})
    t["G4/direction"] = DF({"move": ["against", "with", "restored"], "loss": [2.9, 3.1, 3.0], "original": [3.0] * 3,
                            "bitwise_equal_to_original": [False, False, True]})
    t["G5/summary"] = DF({"mean_nats": [3.0], "perplexity": [math.exp(3.0)], "median_nats": [2.5], "worst_share_pct": [30.0],
                          "uniform_nats_gpt2_small": [10.0]})
    t["G6/saved"] = DF({"arch": ["transformers"] * 4 + ["nanogpt"] * 4, "checkpoint": [False, True, False, True] * 2,
                        "batch": [1, 1, 8, 8] * 2, "kept": [False] * 8,
                        "unique_storage_bytes": [1200, 320, 9600, 2400, 800, 300, 6400, 2000]})
    t["G6/summary"] = DF({"arch": ["transformers", "nanogpt"], "weights_bytes_run": [500, 500],
                          "logprob_bytes_run": [1600, 1600], "checkpoint_time_ratio_volatile": [1.3, 1.2]})
    t["G6/attention"] = DF({"arch": ["transformers"] * 2 + ["nanogpt"] * 2, "attention": ["sdpa", "eager"] * 2,
                            "unique_storage_bytes": [1000, 1200, 800, 1100]})
    t["G7/clipping"] = DF({"total_norm": [10.0], "total_norm_fp32": [10.0], "clip_return": [10.0], "max_norm": [1.0],
                           "clipped_norm": [1.0], "cosine_clipped_unclipped": [1.0], "token_table_norm": [9.0],
                           "token_table_input_side": [0.1], "token_table_output_side": [8.9], "rest_norm": [1.0]})
    t["G8/blocks"] = DF({"block": [0, 1], "over_median": [0.9, 1.1], "starved": [False, False], "runaway": [False, False]})
    t["C1/summary"] = DF({"variant": ["correct", "no_zero_grad", "unshifted_targets", "loss_x40", "detached_positions"],
                          "final_train_loss": [1.5, 6.0, 0.001, 1.5, 1.7], "heldout_loss": [1.5, 6.0, 10.0, 1.51, 1.7],
                          "position_grad_min": [0.1, 0.2, 0.1, 4.0, 0.0], "position_grad_max": [1.0, 2.0, 1.0, 40.0, 0.0],
                          "loss_only_dashboard": ["reference run", "visible: climbs", "visible, but too good", "invisible", "looks normal"]})
    t["C1/baselines"] = DF({"baseline": ["uniform", "unigram"], "heldout_loss": [4.6, 3.2]})
    t["C1/curves"] = DF({"variant": ["no_zero_grad"] * 3, "step": [1, 50, 100], "train_loss": [4.5, 3.4, 6.0]})
    grads = []
    for step in range(1, 9):  # no_zero_grad: every group's norm grows as the gradients pile up
        grads += [{"variant": "no_zero_grad", "step": step, "group": gr, "grad_norm": b * step}
                  for gr, b in (("token_table", 0.5), ("position_table", 0.25), ("total", 0.6))]
        if step > 2:  # the correct run's total stays flat (steps 1-2 come from the loop below)
            grads.append({"variant": "correct", "step": step, "group": "total", "grad_norm": 0.6})
    for step in (1, 2):
        for variant, scale in (("correct", 1.0), ("loss_x40", 40.0), ("detached_positions", 1.0)):
            for group, base in (("token_table", 0.5), ("position_table", 0.25), ("total", 0.6)):
                zero = variant == "detached_positions" and group == "position_table"
                grads.append({"variant": variant, "step": step, "group": group, "grad_norm": 0.0 if zero else base * scale * step})
    t["C1/grad_norms"] = DF(grads)
    t["S4/factor"] = DF({"b": [-3.0, -2.0, 0.5], "correct_dL_da": [-0.4, -0.2, 0.3], "overwrite_dL_da": [-0.6, -0.4, 0.1],
                         "overwrite_over_correct": [1.5, 2.0, 1 / 3]})
    t["T2/reductions"] = DF({"tokens": [1, 4, 4], "ignored": [0, 0, 1], "counted": [1, 4, 3],
                             "grad_norm_sum": [2.0, 4.0, 3.0], "grad_norm_mean": [2.0, 1.0, 1.0], "sum_over_mean": [1.0, 4.0, 3.0]})
    t["L3/equal"] = DF({"split": ["4+4", "4+4"], "reduction": ["average of rank means", "rank means weighted by count"],
                        "max_abs_diff_vs_single_process": [0.0, 0.0], "grad_norm": [1.2, 1.2]})
    t["L4/branches"] = DF({"input": ["x", "x", "-x", "-x"], "parameter": ["w_pos", "w_neg", "w_pos", "w_neg"],
                           "in_taken_branch": [True, False, False, True], "grad_is_none": [False, True, True, False],
                           "grad": [5.0, np.nan, np.nan, -5.0]})
    version = "modified by an inplace operation: is at version 1; expected version 0"
    t["L5/inplace"] = DF({"kind": ["direct", "direct", "view", "view"], "case": ["mul", "add", "transpose", "clone"],
                          "edits_saved_storage": [True, False, True, False], "raised": [True, False, True, False],
                          "message": [version, "no error", version, "no error"],
                          "grad_equals_unedited": [np.nan, True, np.nan, True]})
    t["L6/segments"] = DF({"mode": ["checkpoint_every_segment"] * 3 + ["checkpoint_sequential"] * 3, "segments": [1, 2, 4] * 2,
                           "outside_block_bytes": [20, 30, 50, 10, 20, 40], "longest_recompute_run": [4, 2, 1, 0, 2, 1],
                           "blocks_recomputed": [4, 3, 2, 0, 3, 2]})
    t["O1/linear"] = DF({"model": ["affine least squares", "constant (target mean)"], "sse": [4.0, 4.0], "intercept": [0.0, 0.0],
                         "slope_x0": [0.0, 0.0], "slope_x1": [0.0, 0.0]})
    t["C1/checks/sgd_steps"] = DF({"step": [1, 2], "max_abs_move": [0.05, 0.08], "max_abs_diff_vs_scaled_lr": [1e-17, 1e-16],
                                   "max_abs_diff_vs_unscaled": [0.04, 0.07]})
    t["C1/checks/one_step"] = DF({"optimizer": ["adamw", "sgd"], "scale": [40.0, 40.0], "step_norm_unscaled": [0.9, 0.01],
                                  "diff_norm": [0.01, 0.39], "diff_over_step": [0.011, 39.0], "eps_term_norm": [0.01, np.nan],
                                  "residual_norm": [1e-15, np.nan]})
    t["C1/checks/drift"] = DF({"variant": ["correct", "correct", "detached_positions", "detached_positions"],
                               "group": ["token_table", "position_table"] * 2, "max_abs_change": [0.4, 0.3, 0.4, 0.0],
                               "unchanged": [False, False, False, True]})
    return t


def _set(key: str, col: str, where: tuple[str, object] | None, value):
    """An edit: set `col` of table `key` (in the rows where column == value, or all rows) to `value`."""
    def edit(t):
        d = t[key].copy()
        if isinstance(value, str):  # a text cell in a column pandas read as numbers (None -> NaN)
            d[col] = d[col].astype(object)
        mask = slice(None) if where is None else d[where[0]] == where[1]
        d.loc[mask, col] = value
        t[key] = d
    return edit


def _set_rows(key: str, col: str, where: dict, value):
    """An edit: set `col` of table `key` in the rows matching every column == value of `where`."""
    def edit(t):
        d = t[key].copy()
        d.loc[np.logical_and.reduce([d[c] == v for c, v in where.items()]), col] = value
        t[key] = d
    return edit


# relation -> the edit that makes it fail
VIOLATIONS = {
    "tape_equals_torch64": _set("S1/gradients", "dL_da", ("method", "torch float64"), -0.25),
    "secant_gap_exceeds_rounding": _set("S1/gradients", "abs_diff_da_vs_tape", ("method", "central difference h=0.1"), 1e-9),
    "ratio_approaches_derivative": _set("S2/nudges", "ratio", ("nudge", 0.01), 4.2),
    "routes_add": _set("S3/routes", "value", ("route", "sum"), -0.2),
    "overwrite_keeps_last_route": _set("S4/variants", "dL_da", ("variant", "BUG = (overwrite)"), 0.1),
    "wrong_order_leaves_zero_silently": _set("S4/values", "value", None, 1.0),
    "central_valley_has_interior_minimum": _set("S5/sweep", "central_err", ("h", 1e-12), 1e-13),
    "truncation_orders": _set("S5/slopes", "slope", ("method", "central"), 1.2),
    "central_beats_forward": _set("S5/sweep", "forward_err", ("h", 1e-5), 1e-12),
    "complex_step_never_worsens": _set("S6/sweep", "abs_err", ("h", 1e-100), 1e-10),
    "complex_step_order_two": _set("S6/sweep", "abs_err", ("h", 1e-2), 1e-4),  # slope 1: a first-order error
    "complex_step_abs_silent": _set("S6/controls", "complex_step", ("control", "abs at +2"), 1.0),
    "complex_max_raises": _set("S6/controls", "outcome", ("control", "max(0, 2+ih)"), np.nan),
    "directional_catches_corruption": _set("S7/directions", "corrupted_abs_error", ("direction", 0), 1e-12),
    "forward_reverse_agree": _set("S8/modes", "reverse_mode", ("input", "x1"), -0.2000001),
    "forward_needs_a_pass_per_input": _set("S8/values", "value", ("quantity", "reverse_closures"), 6.0),
    "tape_hundreds_slower": _set("S9/per_process", "ratio", ("process", 2), 40.0),
    "accumulate_matches_torch_overwrite_does_not": _set("S10/values", "value", ("quantity", "a_grad_overwrite"), -1.0),
    "mlp_tape_matches_torch32": _set("S10/mlp_grads", "abs_diff", ("param", 0), 1e-3),
    "matmul_transposes_match_torch": _set("T1/matrices", "abs_diff", ("matrix", "dW"), 1e-6),
    "softmax_grad_sums_to_zero": _set("T2/matrices", "hand", ("matrix", "dz"), 0.1),
    "softmax_grad_is_p_minus_onehot": _set("T2/matrices", "hand", ("matrix", "p"), 0.4),
    "attention_score_rows_sum_to_zero": _set("T3/matrices", "hand", ("matrix", "dS"), 0.25),
    "forgotten_scale_hits_only_q_and_k": _set("T3/control", "caught", ("gradient", "dV"), True),
    "layernorm_dx_sums_to_zero": _set("T4/matrices", "hand", ("matrix", "dx"), 0.5),
    "layernorm_param_grads": _set("T4/matrices", "hand", ("matrix", "dgamma"), 1.0),
    "backward_twice_doubles": _set("L1/values", "value", ("quantity", "max_abs_g2_minus_2g1"), 0.5),
    "zero_grad_sets_none": _set("L1/zero_grad", "grad_after_zero_grad", ("parameter", "bias"), "tensor([0.])"),
    "weighted_microbatches_match": _set("L2/schemes", "max_abs_diff_vs_full", ("scheme", "weighted 3/7 + 4/7"), 0.1),
    "unweighted_roughly_doubles": _set("L2/schemes", "grad_norm", ("scheme", "unweighted sum of means"), 1.2),
    "nanogpt_division_by_microbatches": _set("L2/schemes", "grad_norm", ("scheme", "nanoGPT without the /40"), 2.0),
    "rank_means_need_weights": _set("L3/ranks", "max_abs_diff_vs_single_process", ("reduction", "rank means weighted by count"), 0.1),
    "leaf_keeps_grad_nonleaf_only_on_request": _set("L4/tensors", "grad", ("tensor", "y = x*x"), "[1.0]"),
    "saved_value_guards_raise": _set("L5/errors", "message", ("case", "a"), "no error"),
    "retain_graph_reproduces": _set("L5/values", "value", ("quantity", "retain_graph_grad_1"), 4.0),
    "checkpoint_saves_fewer_bytes": _set("L6/accounting", "hook_bytes", ("mode", "checkpoint_sequential"), 200),
    # sharing (21 calls, 17 storages) without an overstated sum: the byte count missed a shared storage
    "hook_calls_overstate_shared_storage": _set("L6/accounting", "hook_mib", ("mode", "plain"), 0.9),
    "checkpoint_recomputes_not_twice": _set("L6/accounting", "block_calls_total", ("mode", "checkpoint_sequential"), 8),
    "checkpoint_identical": _set("L6/checks", "max_grad_abs_diff", None, 1e-7),
    "checkpoint_slower_than_plain": _set("L6/timing/per_process", "ratio", ("process", 2), 0.95),
    "scores_grow_quadratically": _set("L7/sweep", "scores_per_layer_bytes", ("seq_len", 4), 24),
    "xor_gradcheck_agrees": _set("O1/gradcheck", "abs_diff", ("param", "b"), 1e-3),
    "xor_seed0_stalls": _set("O1/seeds", "gd_stuck", ("seed", 0), False),
    "xor_most_seeds_stick": _set("O1/seeds", "gd_stuck", ("seed", 1), False),
    "xor_sticking_is_fragile": _set("O1/ulp", "stuck_copies", ("seed", 0), 7),
    "adam_rescues_stuck_seeds": _set("O1/seeds", "adam_stuck", ("seed", 1), True),
    "step_ceiling_is_stability_edge": _set("O2/ceiling", "diverged", ("margin", -0.01), True),
    "ceiling_and_condition_from_spectrum": _set("O2/spectrum", "ceiling", None, 0.01),
    "tuned_optimizers_reach_floor": _set("O2/best", "at_noise_floor", ("method", "rmsprop"), 0),
    "gradient_descent_falls_short": _set("O2/best", "at_noise_floor", ("method", "gd"), 1),
    "optimizer_bytes_per_parameter": _set("O3/arrangements", "bytes_per_param", ("collection", "total"), 16),
    "tied_parameter_counted_once": _set("O3/counts", "value", ("count", "with_duplicates"), 10),
    "tanh_chain_decays": _set("D1/chains", "tape_dL_dx", ("chain", "tanh_w1"), 0.5),
    "saturated_tanh_collapses_faster": _set("D1/chains", "tape_dL_dx", ("chain", "tanh_w3"), 0.9),
    "relu_chain_is_power_of_w": _set("D1/chains", "tape_dL_dx", ("chain", "relu_w1.2"), 1.2),
    "deep_gradient_rounds_to_zero_in_fp16": _set("D1/fp16_probe", "fp16", None, 6e-8),
    "chains_tape_equals_torch": _set("D1/chains", "rel_diff", ("chain", "tanh_w3"), 1e-10),
    "plain_stack_vanishes_below_unit_scale": _set("D2/summary", "first_over_last", ("scale", 0.5), 2.0),
    "plain_stack_explodes_above_unit_scale": _set("D2/summary", "first_over_last", ("scale", 2.0), 0.5),
    "residual_never_starves_first_layer": _set("D2/summary", "first_over_last", ("depth", 20), 0.9),
    "residual_still_grows_at_large_scale": _set("D2/summary", "first_over_last", ("residual", True), 1000.0),
    "below_half_subnormal_rounds_to_zero": _set("P2/casts", "fp16", ("grad", 4e-8), 0.0),
    "fp16_error_grows_below_normal": _set("P3/errors", "fp16_rel_error", ("x", 1e-3), 0.5),
    "bf16_relative_error_bounded": _set("P3/sweep", "bf16_rel_error", ("x", 1e-10), 0.5),
    "static_scale_rescues_small_overflows_large": _set("P4/static", "unscaled_fp16_direct", ("grad", 1e-8), 1e-8),
    "dynamic_scale_halves_until_finite": _set("P5/attempts", "scale", ("attempt", 2), 2.0),
    "fp16_weight_swamped_master_moves": _set("P6/trajectory", "fp16", ("step", 10), 1.001),
    "update_below_half_gap_changes_nothing": _set("P7/spacing", "update_changes_weight", ("weight", 8.0), "yes"),
    "bf16_keeps_range_loses_precision": _set("P8/gaps", "smallest_normal", ("format", "bf16"), 6e-5),
    "bf16_loses_no_gradient": _set("P9/summary", "to_zero", ("dtype", "bf16"), 3),
    "fp16_loses_some_gradient_scale_recovers": _set("P9/summary", "scaled_recovered", ("dtype", "fp16"), 0),
    "nll_is_minus_log_probability": _set("G1/target", "nll", None, 2.5),
    "gradient_reaches_every_state": _set("G2/states", "grad_norm_last_token", ("state", 1), 0.0),
    "residual_norms_not_monotonic": _set("G2/states", "grad_norm_last_token", ("state", 2), 0.5),
    "value_slice_largest": _set("G3/qkv", "v", ("layer", 5), 1.5),
    "negative_gradient_descends": _set("G4/direction", "loss", ("move", "against"), 3.05),
    "perplexity_is_exp_mean": _set("G5/summary", "perplexity", None, 30.0),
    "model_beats_uniform_guess": _set("G5/summary", "mean_nats", None, 11.0),
    "surprise_is_skewed": _set("G5/summary", "median_nats", None, 3.5),
    # G6: each edit breaks the nanoGPT-style architecture only; the relation must hold on every architecture
    "activations_exceed_weights": _set("G6/summary", "weights_bytes_run", ("arch", "nanogpt"), 1000),
    "checkpoint_cuts_saved_batch": _set_rows("G6/saved", "unique_storage_bytes", {"arch": "nanogpt", "checkpoint": True,
                                                                                 "batch": 8}, 7000),
    "logprobs_dominate_checkpointed": _set("G6/summary", "logprob_bytes_run", ("arch", "nanogpt"), 500),
    "checkpoint_costs_time": _set("G6/summary", "checkpoint_time_ratio_volatile", ("arch", "nanogpt"), 0.9),
    "saved_bytes_scale_with_batch": _set_rows("G6/saved", "unique_storage_bytes", {"arch": "nanogpt", "checkpoint": False,
                                                                                  "batch": 8}, 6000),
    "fused_attention_keeps_fewer_bytes": _set_rows("G6/attention", "unique_storage_bytes", {"arch": "nanogpt",
                                                                                           "attention": "sdpa"}, 1200),
    "clip_returns_unclipped_total": _set("G7/clipping", "clip_return", None, 1.0),
    "clipping_shortens_never_turns": _set("G7/clipping", "cosine_clipped_unclipped", None, 0.99),
    "token_table_dominates_gradient": _set("G7/clipping", "rest_norm", None, 20.0),
    "no_block_starved_or_runaway": _set("G8/blocks", "starved", ("block", 1), True),
    "loss_x40_matches_correct": _set("C1/summary", "heldout_loss", ("variant", "loss_x40"), 1.8),
    "loss_x40_scales_first_gradient": _set("C1/grad_norms", "grad_norm", ("variant", "loss_x40"), 1.0),
    "detached_positions_get_no_gradient": _set("C1/summary", "position_grad_max", ("variant", "detached_positions"), 0.1),
    "detached_zero_from_step_one": _set("C1/grad_norms", "grad_norm", ("step", 1), 0.3),
    "detached_positions_end_worse": _set("C1/summary", "heldout_loss", ("variant", "detached_positions"), 1.4),
    "unshifted_best_train_worst_heldout": _set("C1/summary", "heldout_loss", ("variant", "unshifted_targets"), 3.0),
    "no_zero_grad_falls_then_climbs": _set("C1/summary", "final_train_loss", ("variant", "no_zero_grad"), 3.0),
    "correct_beats_baselines": _set("C1/summary", "heldout_loss", ("variant", "correct"), 3.5),
    "loss_only_catches_half": _set("C1/summary", "loss_only_dashboard", ("variant", "loss_x40"), "visible: spikes"),
    "overwrite_factor_two_needs_b_minus_2": _set("S4/factor", "overwrite_over_correct", ("b", 0.5), 2.0),
    "summed_loss_scales_with_token_count": _set("T2/reductions", "sum_over_mean", ("tokens", 1), 2.0),
    "mean_divides_by_counted_tokens": _set("T2/reductions", "sum_over_mean", ("ignored", 1), 4.0),
    "equal_ranks_average_exact": _set("L3/equal", "max_abs_diff_vs_single_process", ("reduction", "average of rank means"), 0.1),
    "untaken_branch_gets_no_gradient": _set("L4/branches", "grad_is_none", ("input", "-x"), False),
    "unsaved_edit_runs": _set("L5/inplace", "raised", ("case", "add"), True),
    "view_write_invalidates": _set("L5/inplace", "raised", ("case", "transpose"), False),
    "more_segments_more_boundaries": _set("L6/segments", "outside_block_bytes", ("segments", 4), 25),
    "fewer_segments_redo_more": _set("L6/segments", "blocks_recomputed", ("segments", 4), 3),
    "linear_model_cannot_fit_xor": _set("O1/linear", "sse", ("model", "affine least squares"), 0.0),
    "unshifted_best_train_loss_of_five": _set("C1/summary", "final_train_loss", ("variant", "correct"), 1e-4),
    "no_zero_grad_norm_keeps_growing": _set("C1/grad_norms", "grad_norm", ("step", 7), 0.1),
    "sgd_loss_x40_is_40x_lr": _set("C1/checks/sgd_steps", "max_abs_diff_vs_scaled_lr", ("step", 2), 1e-3),
    "adamw_loss_x40_step_up_to_eps": _set("C1/checks/one_step", "residual_norm", ("optimizer", "adamw"), 0.01),
    "detached_table_ends_at_init": _set("C1/checks/drift", "max_abs_change", ("variant", "detached_positions"), 0.1),
}


def violated(name: str) -> dict[str, DF]:
    t = good_tables()
    VIOLATIONS[name](t)
    return t
