"""L3 on a real gloo process group: the reductions against an analytic oracle, and a failing rank."""

import psutil
import pytest
import torch

from adbench.lifetimes import accumulation
from adbench.lifetimes.allreduce import REDUCTIONS, measure_l3_allreduce

DATA = dict(in_features=3, out_features=2, seed=0)
RUN = dict(backend="gloo", timeout_s=60, **DATA)
pytestmark = pytest.mark.slow  # each test spawns a gloo process group (2 ranks, each importing torch)


def analytic_mse_grad(model, x, y):
    """d mean((xWᵀ + b - y)²)/d(W, b) by hand: 2/(N·O) rᵀx and 2/(N·O) Σr."""
    r = model(x).detach() - y  # (N, O)
    scale = 2.0 / r.numel()
    return torch.cat([(scale * r.T @ x).reshape(-1), scale * r.sum(0)])


@pytest.fixture(scope="module")
def reductions():
    """One spawn of the default layout (3 + 4 examples, control 4 + 4, wide 2 + 2 + 3): every row, by (case,
    reduction). The spawn is the one the claims' measurement-level control (tests/test_claims_bugs.py) reuses."""
    from adbench.lifetimes.claims_conditions import measure_gloo

    return measure_gloo(None)["L3/allreduce/reductions"].set_index(["case", "reduction"])


def test_allreduce_reductions_against_the_hand_gradient(reductions):
    # oracle: the hand-written MSE gradient, per example, weighted as each reduction weighs it
    model, x, y = accumulation._problem(7, 3, 2, 0)
    per_example = [analytic_mse_grad(model, x[i:i + 1], y[i:i + 1]) for i in range(7)]
    full = sum(per_example) / 7
    naive = sum(g / 6 for g in per_example[:3]) + sum(g / 8 for g in per_example[3:])  # each rank mean weighs 1/2
    r = reductions.loc["split"]
    assert r.loc[REDUCTIONS[1], "max_abs_diff_vs_single_process"] == pytest.approx(
        (naive - full).abs().max().item(), rel=1e-12)
    assert r.loc[REDUCTIONS[1], "grad_norm"] == pytest.approx(naive.norm().item(), rel=1e-12)
    assert r.loc[REDUCTIONS[0], "grad_norm"] == pytest.approx((2 * naive).norm().item(), rel=1e-12)  # no division
    for exact in REDUCTIONS[2:]:  # count weighting and sum / elements: the global mean to rounding
        assert r.loc[exact, "max_abs_diff_vs_single_process"] < 1e-15
        assert r.loc[exact, "grad_norm"] == pytest.approx(full.norm().item(), rel=1e-14)
    assert (reductions.max_abs_diff_between_ranks == 0).all()  # every rank ends with the same gradient


def test_equal_ranks_make_the_world_size_average_exact(reductions):
    # negative control of the mean-of-means row: with equal sizes it is the global mean, and only the
    # undivided sum stays wrong (twice the mean's norm exactly)
    e = reductions.loc["equal_split"]
    assert e.loc[REDUCTIONS[1], "max_abs_diff_vs_single_process"] < 1e-15
    assert e.loc[REDUCTIONS[0], "norm_ratio_vs_single_process"] == pytest.approx(2, rel=1e-14)
    assert reductions.loc[("split", REDUCTIONS[1]), "max_abs_diff_vs_single_process"] > 1e-3


def test_allreduce_matches_the_one_process_simulation(reductions):
    # the in-process L3 simulation and the gloo all-reduce are two computations of the same reductions
    sim = accumulation.measure_l3([3, 4], equal_split=[4, 4], **DATA)["ranks"].set_index("reduction")
    real = reductions.loc["split"]
    assert real.loc[REDUCTIONS[1], "max_abs_diff_vs_single_process"] == pytest.approx(
        sim.loc["average of rank means", "max_abs_diff_vs_single_process"], rel=1e-12)


def test_three_ranks_match_the_hand_gradient_to_rounding(reductions):
    # oracle: the hand-written gradient weighted as each reduction weighs the 2 + 2 + 3 examples; three ranks make
    # the SUM more than one addition, so the comparison is to rounding, not bitwise
    model, x, y = accumulation._problem(7, 3, 2, 0)
    per_example = [analytic_mse_grad(model, x[i:i + 1], y[i:i + 1]) for i in range(7)]
    full = sum(per_example) / 7
    naive = (sum(per_example[:2]) / 2 + sum(per_example[2:4]) / 2 + sum(per_example[4:]) / 3) / 3
    w = reductions.loc["wide_split"]
    assert (w.world_size == 3).all()
    assert w.loc[REDUCTIONS[1], "grad_norm"] == pytest.approx(naive.norm().item(), rel=1e-13)
    for exact in REDUCTIONS[2:]:
        assert w.loc[exact, "grad_norm"] == pytest.approx(full.norm().item(), rel=1e-13)
    assert w.loc[REDUCTIONS[1], "max_abs_diff_vs_single_process"] > 1e-3  # negative control: mean of means errs


def test_bad_bug_switch_is_refused():
    with pytest.raises(ValueError, match="bug must be one of"):
        measure_l3_allreduce([3, 4], [4, 4], bug="typo", **RUN)


def _rank_pids(message: str) -> list[int]:
    import re
    return [int(p) for p in re.findall(r"\(pid (\d+)\)", message)]


@pytest.mark.parametrize("how, why", [("raise", "rank 1: injected failure before the all-reduce"),
                                      ("kill", "ended by signal SIGKILL")])
def test_a_failing_rank_fails_the_job_naming_it_and_leaves_no_process(how, why):
    with pytest.raises(RuntimeError) as caught:
        measure_l3_allreduce([3, 4], [4, 4], fail_rank=1, fail_how=how, **RUN)
    message = str(caught.value)
    assert message.startswith("L3 all-reduce: rank 1 failed: rank 1 (pid ") and why in message
    assert "rank 0 (pid" in message  # the peer is accounted for too (it lost its connection or was stopped)
    pids = _rank_pids(message)
    assert len(pids) == 2
    alive = [p for p in pids if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]
    assert alive == []
    ranks_left = [c for c in psutil.Process().children(recursive=True) if "spawn_main" in " ".join(c.cmdline())]
    assert ranks_left == []


def test_bad_fail_mode_is_refused():
    with pytest.raises(ValueError, match="fail_how"):
        measure_l3_allreduce([3, 4], [4, 4], fail_rank=1, fail_how="hang", **RUN)
