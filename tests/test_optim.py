"""Optim family (O1-O3): tape XOR against torch float64, optimizers against torch.optim, analytic counts.

Every check has a negative control: a deliberately broken variant must fail the same check.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
import yaml

from adbench.config import ConfigError, check_config
from adbench.optim import memory, o1, o2, quadratic as q, xor, xor_ensemble
from adbench.optim.o1 import measure_o1
from adbench.scalar.tape import Tape

torch.set_num_threads(1)
ROOT = Path(__file__).resolve().parents[1]
X4 = [[0.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 1.0]]
Y4 = [-1.0, 1.0, 1.0, -1.0]


def torch_xor(flat: list[float]):
    """The same 2-4-1 network in torch float64 (the oracle): parameters from the tape's flat order."""
    t = torch.tensor(flat, dtype=torch.float64, requires_grad=True)
    W1, b1, W2, b2 = t[:8].reshape(4, 2), t[8:12], t[12:16], t[16]
    X = torch.tensor(X4, dtype=torch.float64)
    out = torch.tanh(torch.tanh(X @ W1.T + b1) @ W2 + b2)
    loss = ((out - torch.tensor(Y4, dtype=torch.float64)) ** 2).sum()
    loss.backward()
    return loss.item(), t.grad.tolist(), t


def max_diff(a, b) -> float:
    return float(np.max(np.abs(np.subtract(a, b))))


# ---- O1: the tape network ---------------------------------------------------------------

@pytest.mark.parametrize("seed", [0, 3, 6])
def test_tape_loss_and_gradients_match_torch(seed):
    params = xor.init_params(seed, 2, 4, 1.0)
    loss, grads = xor.loss_and_grads(params, X4, Y4)
    t_loss, t_grads, _ = torch_xor([p.data for p in xor.flat(params)])
    assert abs(loss - t_loss) < 1e-13
    assert max_diff(grads, t_grads) < 1e-13
    # negative control: the S4 overwrite bug loses accumulated contributions and is caught
    for p in xor.flat(params):
        p.grad = 0.0
    with Tape(overwrite=True):
        bad = xor.sse(params, X4, Y4)
        bad.backward()
    assert max_diff([p.grad for p in xor.flat(params)], t_grads) > 1e-3


def test_linear_fit_of_xor_is_the_constant_guess():
    """Oracle: by symmetry the best affine fit of XOR with targets ±1 is 0 everywhere, error 4 x 1²;
    torch float64 least squares agrees; control: targets that are affine are fitted exactly."""
    inputs, targets = [[0.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 1.0]], [-1.0, 1.0, 1.0, -1.0]
    d = o1.linear_fit(inputs, targets).set_index("model")
    best = d.loc["affine least squares"]
    assert best.sse == pytest.approx(4.0, abs=1e-12) and d.loc["constant (target mean)", "sse"] == 4.0
    assert abs(best.slope_x0) < 1e-12 and abs(best.slope_x1) < 1e-12
    a = torch.tensor([[1.0, *x] for x in inputs], dtype=torch.float64)
    ref = torch.linalg.lstsq(a, torch.tensor(targets, dtype=torch.float64)[:, None]).solution.squeeze()
    assert [best.intercept, best.slope_x0, best.slope_x1] == pytest.approx(ref.tolist(), abs=1e-12)
    affine = o1.linear_fit(inputs, [-1.0, 0.0, 0.0, 1.0]).set_index("model")  # x0 + x1 - 1
    assert affine.loc["affine least squares", "sse"] < 1e-24


def test_init_draw_order_is_documented_order():
    """W1 row-major, then b1, W2, b2, each uniform(-1, 1) of random.Random(seed)."""
    import random
    rng = random.Random(5)
    draws = [rng.uniform(-1, 1) for _ in range(17)]
    assert [p.data for p in xor.flat(xor.init_params(5, 2, 4, 1.0))] == draws
    assert xor.param_names(2, 4)[:3] == ["W1[0][0]", "W1[0][1]", "W1[1][0]"]
    assert xor.param_names(2, 4)[-1] == "b2"


def test_gradient_check_agrees_and_catches_a_corrupted_gradient():
    check = o1.gradient_check(X4, Y4, 4, 1.0, seed=0, h=1e-5)
    assert len(check) == 17 and check.abs_diff.max() < 1e-8
    # negative control: a tape gradient off by 1e-4 in one coordinate is flagged by the same threshold
    corrupted = check.tape.to_numpy().copy()
    corrupted[5] += 1e-4
    assert np.max(np.abs(corrupted - check.central_difference)) > 1e-8


def test_gd_and_adam_steps_match_torch_optim():
    for optimizer, lr, make in [("gd", 0.5, lambda p: torch.optim.SGD([p], lr=0.5)),
                                ("adam", 0.05, lambda p: torch.optim.Adam([p], lr=0.05, eps=1e-8))]:
        params = xor.init_params(1, 2, 4, 1.0)
        start = [p.data for p in xor.flat(params)]
        curve = xor.train(params, X4, Y4, optimizer=optimizer, lr=lr, steps=10)
        t = torch.tensor(start, dtype=torch.float64, requires_grad=True)
        opt = make(t)
        losses = []
        for _ in range(10):
            opt.zero_grad()
            loss, _, _ = _loss_of(t)
            losses.append(loss.item())
            loss.backward()
            opt.step()
        assert max_diff(curve.loss[:10], losses) < 1e-11, optimizer
        assert max_diff([p.data for p in xor.flat(params)], t.detach().tolist()) < 1e-11, optimizer
    # negative control: Adam with a different epsilon placement/size is caught
    params = xor.init_params(1, 2, 4, 1.0)
    bad = xor.train(params, X4, Y4, optimizer="adam", lr=0.05, steps=10, eps=1e-1)
    assert max_diff(bad.loss[:10], losses) > 1e-6


def _loss_of(t):
    W1, b1, W2, b2 = t[:8].reshape(4, 2), t[8:12], t[12:16], t[16]
    X = torch.tensor(X4, dtype=torch.float64)
    out = torch.tanh(torch.tanh(X @ W1.T + b1) @ W2 + b2)
    return ((out - torch.tensor(Y4, dtype=torch.float64)) ** 2).sum(), out, None


def test_train_rejects_unknown_optimizer():
    with pytest.raises(ValueError, match="optimizer"):
        xor.train(xor.init_params(0, 2, 4, 1.0), X4, Y4, optimizer="sgdx", lr=0.1, steps=1)


# ---- O1: the numpy ensemble control -------------------------------------------------------

def test_ensemble_matches_torch_and_tape_init():
    p = xor_ensemble.init_arrays([0, 7], 4, 2, 1.0)
    loss, g = xor_ensemble.loss_grads(p, np.array(X4), np.array(Y4))
    for e, seed in enumerate([0, 7]):
        flat = [v.data for v in xor.flat(xor.init_params(seed, 2, 4, 1.0))]
        assert list(np.concatenate([p["W1"][e].ravel(), p["b1"][e], p["W2"][e], [p["b2"][e]]])) == flat
        t_loss, t_grads, _ = torch_xor(flat)
        mine = np.concatenate([g["W1"][e].ravel(), g["b1"][e], g["W2"][e], [g["b2"][e]]])
        assert abs(loss[e] - t_loss) < 1e-13 and max_diff(mine, t_grads) < 1e-13
        # negative control: the gradient of another copy is not accepted for this one
        other = np.concatenate([g["W1"][1 - e].ravel(), g["b1"][1 - e], g["W2"][1 - e], [g["b2"][1 - e]]])
        assert max_diff(other, t_grads) > 1e-3


def test_ulp_nudge_moves_exactly_k_ulps():
    p = xor_ensemble.init_arrays([0], 4, 2, 1.0)
    nudged, k = xor_ensemble.ulp_nudged(p, [-2, 0, 3])
    w = p["W1"][0, 0, 0]
    expect = [np.nextafter(np.nextafter(w, -np.inf), -np.inf), w,
              np.nextafter(np.nextafter(np.nextafter(w, np.inf), np.inf), np.inf)]
    assert list(nudged["W1"][:, 0, 0]) == expect and list(k) == [-2, 0, 3]
    assert (nudged["W1"][:, 1:, :] == p["W1"][0, 1:, :]).all()


def test_measure_o1_small_run():
    model = dict(inputs=X4, targets=Y4, hidden=4, init_range=1.0, seeds=2, steps=20)
    gd = xor.measure_o1_train(**model, optimizer="gd", gd={"lr": 0.5}, adam={})
    adam = xor.measure_o1_train(**model, optimizer="adam", gd={}, adam=dict(lr=0.05, beta1=0.9, beta2=0.999, eps=1e-8))
    assert len(gd["curves"]) == 2 * 21 and list(gd["finals"].seed) == [0, 1]
    out = o1.measure_o1(gd["finals"], gd["curves"], adam["finals"], **model, gd={"lr": 0.5}, stuck_threshold=0.5,
                        gradcheck={"param": "W1[0][0]", "seed": 0, "h": 1e-5}, report_seed=0,
                        report_steps=[0, 10], ulp_offsets=[0, 1])
    v = out["values"].set_index("quantity").value
    assert v["gd_seed0_loss_step0"] == pytest.approx(torch_xor(
        [p.data for p in xor.flat(xor.init_params(0, 2, 4, 1.0))])[0], abs=1e-13)
    assert v["stuck_count"] == out["seeds"].gd_stuck.sum()
    assert out["ulp"].copies.sum() == 4
    # the per-row table carries each seed's final predictions beside the targets, in input order
    rows = out["rows"]
    assert list(rows[rows.seed == 1].target) == Y4 and list(rows[rows.seed == 1].input) == ["0,0", "0,1", "1,0", "1,1"]
    assert list(rows[rows.seed == 0].gd_prediction) == [gd["finals"].loc[0, f"pred_{i}"] for i in range(4)]
    # step 0's largest |gradient| is torch's at the initial state; the final one the training curve's last
    _, t_grads, _ = torch_xor([p.data for p in xor.flat(xor.init_params(0, 2, 4, 1.0))])
    s0 = out["seeds"].set_index("seed").loc[0]
    assert s0.gd_initial_max_abs_grad == pytest.approx(max(abs(x) for x in t_grads), rel=1e-12)
    assert s0.gd_final_max_abs_grad == gd["curves"].query("seed == 0").max_abs_grad.iloc[-1]
    with pytest.raises(ValueError, match="report_seed"):
        o1.measure_o1(gd["finals"], gd["curves"], adam["finals"], **model, gd={"lr": 0.5}, stuck_threshold=0.5,
                      gradcheck={"param": "W1[0][0]", "seed": 0, "h": 1e-5}, report_seed=5,
                      report_steps=[0], ulp_offsets=[0])
    with pytest.raises(ValueError, match="gradcheck.param"):
        o1.measure_o1(gd["finals"], gd["curves"], adam["finals"], **model, gd={"lr": 0.5}, stuck_threshold=0.5,
                      gradcheck={"param": "W1[9][0]", "seed": 0, "h": 1e-5}, report_seed=0,
                      report_steps=[0], ulp_offsets=[0])


# ---- O2: the quadratic ------------------------------------------------------------------------

def _problem():
    return q.make_problem(seed=3, rows=50, scale=100.0, weights=[1.0, -2.0], noise=0.01)


def test_hessian_and_floor_match_torch():
    X, y = _problem()
    Xt, yt = torch.tensor(X), torch.tensor(y)
    H = torch.autograd.functional.hessian(lambda w: ((Xt @ w - yt) ** 2).mean(), torch.zeros(2, dtype=torch.float64))
    assert max_diff(q.hessian(X), H.numpy()) < 1e-9 * np.abs(H.numpy()).max()
    w = torch.linalg.lstsq(Xt, yt.unsqueeze(1)).solution.squeeze(1)
    assert q.noise_floor(X, y) == pytest.approx(((Xt @ w - yt) ** 2).mean().item(), rel=1e-9)
    assert q.loss(X, y, np.zeros(2)) == pytest.approx(float(np.mean(y ** 2)), rel=1e-12)


def test_measurement_bug_switches_are_off_by_default_and_break_what_they_name():
    X, y = _problem()
    assert (q.hessian(X, drop_two=True) * 2 == q.hessian(X)).all()
    assert q.noise_floor(X, y, summed=True) == pytest.approx(len(y) * q.noise_floor(X, y), rel=1e-15)
    good = o1.gradient_check(X4, Y4, 4, 1.0, 0, 1e-5)
    bad = o1.gradient_check(X4, Y4, 4, 1.0, 0, 1e-5, bug=o1.O1_BUGS[0])
    _, t_grads, _ = torch_xor([p.data for p in xor.flat(xor.init_params(0, 2, 4, 1.0))])
    assert max_diff(good.tape, t_grads) < 1e-13 and max_diff(bad.tape, t_grads) > 1e-3
    assert (good.central_difference == bad.central_difference).all()


def test_ceiling_separates_divergence_from_convergence():
    X, y = _problem()
    lam = np.linalg.eigvalsh(q.hessian(X))
    demo = o2.ceiling_demo(X, y, lam[1], steps=3000, margins=[-0.02, 0.02])
    assert list(demo.diverged) == [False, True]
    # negative control: a "ceiling" from the smallest eigenvalue does not separate anything
    wrong = o2.ceiling_demo(X, y, lam[0], steps=3000, margins=[-0.02, 0.02])
    assert list(wrong.diverged) == [True, True]


@pytest.mark.parametrize("method,settings,make", [
    ("gd", {"lr": 5e-5}, lambda p: torch.optim.SGD([p], lr=5e-5)),
    ("momentum", {"lr": 3e-5, "momentum": 0.9}, lambda p: torch.optim.SGD([p], lr=3e-5, momentum=0.9)),
    ("rmsprop", {"lr": 1e-2, "decay": 0.99}, lambda p: torch.optim.RMSprop([p], lr=1e-2, alpha=0.99, eps=1e-8)),
    ("adam", {"lr": 1e-2, "beta1": 0.9, "beta2": 0.999},
     lambda p: torch.optim.Adam([p], lr=1e-2, betas=(0.9, 0.999), eps=1e-8)),
])
def test_optimizers_match_torch_optim(method, settings, make):
    X, y = _problem()
    mine = q.run(method, settings, X, y, steps=200, eps=1e-8)
    assert _rel_gap(mine, _torch_losses(X, y, make, 200)) < 1e-8
    # negative control: torch with Nesterov / centered / amsgrad / a different lr is not accepted
    broken = {"gd": lambda p: torch.optim.SGD([p], lr=4e-5),
              "momentum": lambda p: torch.optim.SGD([p], lr=3e-5, momentum=0.9, nesterov=True),
              "rmsprop": lambda p: torch.optim.RMSprop([p], lr=1e-2, alpha=0.99, eps=1e-8, centered=True),
              "adam": lambda p: torch.optim.Adam([p], lr=1e-2, eps=1e-8, amsgrad=True, betas=(0.9, 0.99))}[method]
    assert _rel_gap(mine, _torch_losses(X, y, broken, 200)) > 1e-6


def _torch_losses(X, y, make, steps):
    Xt, yt = torch.tensor(X), torch.tensor(y)
    w = torch.zeros(2, dtype=torch.float64, requires_grad=True)
    opt, out = make(w), []
    for _ in range(steps + 1):
        opt.zero_grad()
        loss = ((Xt @ w - yt) ** 2).mean()
        out.append(loss.item())
        loss.backward()
        opt.step()
    return np.array(out)


def _rel_gap(a, b) -> float:
    return float(np.max(np.abs(a - b) / np.maximum(np.abs(b), 1e-300)))


def test_divergent_run_reports_inf_and_grid_counts():
    X, y = _problem()
    lam_max = np.linalg.eigvalsh(q.hessian(X))[1]
    assert np.isinf(q.run("gd", {"lr": 3 / lam_max}, X, y, 2000, 0.0)[-1])
    grids = {"gd": {"lr": [1e-5, 5 / lam_max]}, "adam": {"lr": [1e-2, 1e-1], "beta1": [0.9], "beta2": [0.99, 0.999]}}
    grid, best, traj = o2.run_grids(X, y, grids, 300, 1e-8, q.noise_floor(X, y), 1e-6)
    assert list(best.settings_tried) == [2, 4] and list(best.finite_runs) == [1, 4]
    assert len(grid) == 6 and list(traj.columns) == ["step", "gd", "adam"]
    assert best.set_index("method").best_final_loss["adam"] == grid[grid.method == "adam"].final_loss.min()
    with pytest.raises(ValueError, match="unknown method"):
        q.run("lion", {"lr": 1.0}, X, y, 1, 0.0)


def test_eigenvalues_of_a_diagonal_design_are_analytic():
    """Orthogonal columns with norms a, b: Hessian eigenvalues are 2a^2/n and 2b^2/n exactly."""
    X = np.array([[1.0, 0.0], [0.0, 100.0], [1.0, 0.0], [0.0, -100.0]])
    lam = np.linalg.eigvalsh(q.hessian(X))
    assert lam[0] == pytest.approx(2 * 2 / 4) and lam[1] == pytest.approx(2 * 20000 / 4)
    out = o2.measure_o2(dict(seed=0, rows=40, scale=100.0, weights=[1.0, 1.0], noise=0.01), 50, [-0.01, 0.01],
                        {"gd": {"lr": [1e-5]}, "momentum": {"lr": [1e-5], "momentum": [0.9]},
                         "rmsprop": {"lr": [1e-2], "decay": [0.99]},
                         "adam": {"lr": [1e-2], "beta1": [0.9], "beta2": [0.999]}}, 1e-8, 1e-6)
    v = out["values"].set_index("quantity").value
    assert v["ceiling"] == pytest.approx(2 / v["lambda_max"]) and v["condition"] > 1000
    assert v["below_ceiling_diverged"] == 0 and v["above_ceiling_diverged"] == 1


# ---- O3: memory arithmetic ------------------------------------------------------------------------

def test_gpt2_count_matches_the_architecture_formula():
    from transformers import GPT2Config
    c = GPT2Config()
    V, T, D, L = c.vocab_size, c.n_positions, c.n_embd, c.n_layer
    # per block: two LayerNorms (4D), attention qkv + proj (4D^2 + 4D), MLP 4D wide (8D^2 + 5D)
    expected = V * D + T * D + L * (12 * D * D + 13 * D) + 2 * D
    counts = memory.gpt2_parameter_counts()
    assert counts["unique"] == expected
    # negative control: counting the tied lm_head again is a different number
    assert counts["with_duplicates"] == expected + V * D != expected


def test_arrangement_bytes_and_measure_o3():
    P = 1000
    arr = {"a": {"p": "float32", "g": "float16"}, "b": {"w": "bfloat16"}}
    t = memory.arrangement_table(arr, P).set_index(["arrangement", "collection"])
    assert t.loc[("a", "total"), "bytes"] == 6 * P and t.loc[("b", "total"), "bytes_per_param"] == 2
    assert memory.itemsize("float64") == 8 and memory.itemsize("float16") == 2
    cfg = yaml.safe_load((ROOT / "config.yaml").read_text())["optim"]["o3"]
    v = memory.measure_o3(**cfg)["values"].set_index("quantity").value
    assert v["adam_fp32_bytes"] == 4 * v["fp32_collection_bytes"] == 16 * v["n_params"]
    assert v["adam_fp32_gib"] == v["adam_fp32_bytes"] / 2 ** 30
    assert (v["mixed_fp16_grads_bytes_per_param"], v["mixed_fp32_grads_bytes_per_param"]) == (16, 18)


# ---- config -----------------------------------------------------------------------------------

def test_config_section_validates_and_bad_values_name_the_key():
    cfg = yaml.safe_load((ROOT / "config.yaml").read_text())
    schema = ROOT / "workflow/schemas/config.schema.yaml"
    check_config(cfg, schema)
    assert [len(q.grid_settings(g)) for g in cfg["optim"]["o2"]["grids"].values()] == [8, 28, 21, 28]
    cfg["optim"]["o2"]["grids"]["momentum"]["momentum"] = [1.0]
    with pytest.raises(ConfigError, match="optim.o2.grids.momentum.momentum"):
        check_config(cfg, schema)


# ---- figures ------------------------------------------------------------------------------------

def test_figures_render_from_tables():
    from adbench.optim.plots import plot_o1_curves, plot_o2
    curves = pd.DataFrame({"seed": [0, 0, 1, 1], "step": [0, 1, 0, 1], "loss": [5.0, 4.0, 5.0, 0.1],
                           "max_abs_grad": [1.0] * 4})
    seeds = pd.DataFrame({"seed": [0, 1], "gd_stuck": [True, False], "adam_stuck": [False, False]})
    svg = plot_o1_curves(curves, curves.assign(loss=[5.0, 0.01, 5.0, 0.01]), seeds)["figure"]
    assert svg.startswith(b"<?xml") and b"Adam, seed 0" in svg and b"Adam, seed 1" not in svg
    X, y = _problem()
    grids = {"gd": {"lr": [1e-5, 100.0]}, "adam": {"lr": [1e-2], "beta1": [0.9], "beta2": [0.99, 0.999]}}
    grid, best, traj = o2.run_grids(X, y, grids, 60, 1e-8, q.noise_floor(X, y), 1e-6)
    spectrum = pd.DataFrame([{"noise_floor": q.noise_floor(X, y)}])
    assert not grid.finite.all()
    figs = plot_o2(traj, spectrum, best, grid)
    assert b"noise floor" in figs["trajectories_figure"]
    # the diverged run adds one cross to those in the colour-bar label; an all-finite grid does not
    finite_only = plot_o2(traj, spectrum, best, grid[np.isfinite(grid.final_loss)])["grids_figure"].decode()
    assert figs["grids_figure"].decode().count("\u00d7") == finite_only.count("\u00d7") + 1


X = [[0.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 1.0]]


Y = [-1.0, 1.0, 1.0, -1.0]


def _o1(steps: int = 3, seeds: int = 2):
    model = dict(inputs=X, targets=Y, hidden=4, init_range=1.0, seeds=seeds, steps=steps)
    gd = xor.measure_o1_train(**model, optimizer="gd", gd={"lr": 0.5}, adam={})
    adam = xor.measure_o1_train(**model, optimizer="adam", gd={"lr": 0.5},
                                adam=dict(lr=0.05, beta1=0.9, beta2=0.999, eps=1e-8))
    return measure_o1(gd["finals"], gd["curves"], adam["finals"], **model, gd={"lr": 0.5}, stuck_threshold=0.5,
                      gradcheck={"param": "W1[0][0]", "seed": 0, "h": 1e-5}, report_seed=0,
                      report_steps=[0], ulp_offsets=[0])


def test_o1_per_seed_final_losses_and_gradcheck_rows():
    r = _o1()
    v = r["values"].set_index("quantity")
    p = xor_ensemble.init_arrays([0, 1], 4, 2, 1.0)
    oracle = xor_ensemble.gd_final_losses(p, X, Y, 0.5, 3)                  # numpy float64, hand backward
    got = [float(v.value[f"gd_final_loss_seed{s}"]) for s in (0, 1)]
    assert got == pytest.approx(oracle.tolist(), abs=1e-12)
    assert got != pytest.approx(xor_ensemble.gd_final_losses(p, X, Y, 0.4, 3).tolist(), abs=1e-6)  # other lr
    _, g = xor_ensemble.loss_grads(p, np.array(X), np.array(Y))
    assert float(v.value["gradcheck_tape"]) == pytest.approx(g["W1"][0, 0, 0], abs=1e-14)
    assert float(v.value["gradcheck_central"]) == pytest.approx(g["W1"][0, 0, 0], abs=1e-9)
    reasons = v.unjudged_reason
    assert (reasons[["gradcheck_tape", "gradcheck_central"]] != "").all()
    assert (reasons.drop(["gradcheck_tape", "gradcheck_central"]) == "").all()  # every other row is judged


def test_o1_seed_rows_unjudged_only_where_the_ulp_control_splits():
    from adbench.optim.o1 import unjudged_reason
    ulp = pd.DataFrame({"seed": [0, 1, 2], "stuck_copies": [3, 0, 7], "copies": [7, 7, 7]})
    assert "3 of 7" in unjudged_reason("gd_final_loss_seed0", 0, ulp)
    assert unjudged_reason("gd_final_loss_seed1", 0, ulp) == unjudged_reason("gd_final_loss_seed2", 0, ulp) == ""
    assert unjudged_reason("stuck_count", 0, ulp) == ""


def test_o1_parameter_count_and_c1_visible_bug_count():
    v = _o1()["values"].set_index("quantity").value
    assert int(v["n_params"]) == 2 * 4 + 4 + 4 + 1                          # W1, b1, W2, b2 of a 2-4-1 net
    from adbench.charlm.summary import dashboard
    assert dashboard(7.0, 1.7, 4.6).startswith("visible") and dashboard(1.72, 1.7, 4.6).startswith("invisible")
