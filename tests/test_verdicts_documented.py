"""Issue 10 §2-§3 rows: each new measurement against an independent oracle, with a negative control."""

import math
import re

import numpy as np
import pandas as pd
import pytest
import torch

torch.set_num_threads(1)

from adbench.charlm.summary import surprise  # noqa: E402
from adbench.verdicts.documented import load  # noqa: E402
from adbench.gpt2.prompt import _g4_values  # noqa: E402
from adbench.gpt2.sequence import _g7_values  # noqa: E402
from adbench.lifetimes.accumulation import measure_l2  # noqa: E402
from adbench.optim import xor, xor_ensemble  # noqa: E402
from adbench.optim.o1 import measure_o1  # noqa: E402
from adbench.scalar import numeric, probes, reuse  # noqa: E402

X = [[0.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 1.0]]
Y = [-1.0, 1.0, 1.0, -1.0]
S7 = dict(rows=6, cols=8, directions=5, h=1e-5, control_coordinate=3, control_delta=0.1)


def values(result) -> pd.Series:
    return result["values"].set_index("quantity")["value"]


def test_s2_output_change_and_f_at_x():
    v = values(probes.measure_s2(3.0, [0.1, 0.01]))
    oracle = torch.tensor(3.1, dtype=torch.float64) ** 2 - torch.tensor(3.0, dtype=torch.float64) ** 2
    assert v["change_h0.1"] == oracle.item() and v["f_at_3"] == 9.0
    assert abs(v["change_h0.1"] - 0.61) < 1e-14                                  # analytic 2xh + h^2
    assert values(probes.measure_s2(3.0, [0.2]))["change_h0.2"] != pytest.approx(0.61)  # negative control


def test_s5_central_error_at_1e8_four_digits():
    v = values(numeric.measure_s5(1.5, -2.0, [1e-1, 1e-4, 1e-8], [1e-4, 1e-1]))
    a = torch.tensor(1.5, dtype=torch.float64, requires_grad=True)
    torch.tanh(a * -2.0 + a).backward()
    f = lambda x: math.tanh(x * -2.0 + x)  # noqa: E731
    oracle = abs((f(1.5 + 1e-8) - f(1.5 - 1e-8)) / 2e-8 - a.grad.item())
    assert v["central_err_h1e-08_4sig"] == v["central_err_h1e-08"] == pytest.approx(oracle, abs=1e-16)  # 1 ulp of g
    assert 1e-11 < oracle < 1e-8                      # cancellation noise, far above truncation (~1e-17)
    assert v["central_err_h1e-08_4sig"] != v["central_err_h1e-04"]  # negative control: another step


def _s7_oracle(seed: int):
    """Independent draw with the global torch generator; g from autograd; slopes by torch float64."""
    torch.manual_seed(seed)
    A = torch.randn(6, 8, dtype=torch.float64)
    x = torch.randn(8, dtype=torch.float64)
    dirs = [(lambda v: v / v.norm())(torch.randn(8, dtype=torch.float64)) for _ in range(5)]
    xr = x.clone().requires_grad_(True)
    (torch.tanh(A @ xr) ** 2).sum().backward()
    loss = lambda z: (torch.tanh(A @ z) ** 2).sum().item()  # noqa: E731
    return [((loss(x + 1e-5 * v) - loss(x - 1e-5 * v)) / 2e-5, (xr.grad @ v).item()) for v in dirs]


def test_s7_direction_table_against_torch_oracle():
    v = values(numeric.measure_s7(seed=47, **S7))
    for d, (slope, gv) in enumerate(_s7_oracle(47)):
        assert v[f"grad_dot_v_d{d}"] == pytest.approx(gv, abs=1e-15)
        assert v[f"numerical_slope_d{d}"] == pytest.approx(slope, abs=2e-10)  # FD rounding noise only
        assert v[f"abs_error_d{d}"] == abs(v[f"numerical_slope_d{d}"] - v[f"grad_dot_v_d{d}"]) < 1e-9
    other = values(numeric.measure_s7(seed=0, **S7))                          # negative control
    assert all(abs(other[f"grad_dot_v_d{d}"] - gv) > 1e-6 for d, (_, gv) in enumerate(_s7_oracle(47)))


def test_s7_fsum_loss_is_order_independent():
    A = np.array([[1e16, 1.0, -1e16]])
    assert numeric.directional_loss(A, np.array([1.0, 1.0, 1.0])) == math.tanh(1.0) ** 2
    assert float(np.sum(np.tanh(A @ np.array([1.0, 1.0, 1.0])) ** 2)) != math.tanh(1.0) ** 2  # naive sum loses it


@pytest.mark.parametrize("x", [0.5, -1.25])
def test_reused_value_dependency_counting(x):
    trace = pd.concat([reuse.dependency_trace(x, m) for m in ("counted", "eager")], ignore_index=True)
    v = dict(reuse.reuse_items(trace, reuse.torch_x_grad(x)))
    t = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    (torch.relu(t * t) + torch.tanh(t * t)).backward()
    analytic = 2 * x * (1.0 + (1 - math.tanh(x * x) ** 2))                  # both routes through the square
    assert v["reuse_x_grad_counted"] == pytest.approx(t.grad.item(), abs=1e-15) == pytest.approx(analytic)
    assert v["reuse_square_consumers"] == 2 and v["reuse_square_waits_for_both"] == "true"
    assert v["reuse_x_grad_eager"] == pytest.approx(2 * x * 1.0)            # only branch A's route reached x
    assert v["reuse_early_x_grad_incomplete"] == "true"                      # negative control: the bug shows
    last = trace[(trace["mode"] == "counted")].step.max()
    assert trace[(trace["mode"] == "counted") & (trace.step == last)].active.iloc[0] == "square"


def test_reused_value_bad_mode_is_refused():
    with pytest.raises(ValueError, match="mode"):
        reuse.dependency_trace(0.5, "lazy")


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


def test_l2_unscaled_accumulation_is_measured():
    r = measure_l2(7, [3, 4], 3, 2, 0, 40, 2)
    v = values(r)
    assert v["nanogpt_unscaled_norm_ratio"] == pytest.approx(40, abs=1e-12)
    torch.manual_seed(0)  # oracle: sum of 40 microbatch means == 40 x full-batch mean (equal sizes), float64
    gen = torch.Generator().manual_seed(0)
    lin = torch.nn.Linear(3, 2, dtype=torch.float64)
    x, y = torch.randn(80, 3, dtype=torch.float64, generator=gen), torch.randn(80, 2, dtype=torch.float64, generator=gen)
    total = sum(torch.nn.functional.mse_loss(lin(x[2 * s:2 * s + 2]), y[2 * s:2 * s + 2]) for s in range(40))
    grads = torch.autograd.grad(total, list(lin.parameters()))
    norm_unscaled = torch.cat([g.flatten() for g in grads]).norm().item()
    row = r["schemes"].set_index("scheme").loc["nanoGPT without the /40", "grad_norm"]
    assert row == pytest.approx(norm_unscaled, rel=1e-13)
    assert values(measure_l2(7, [3, 4], 3, 2, 0, 10, 2))["nanogpt_unscaled_norm_ratio"] == pytest.approx(10)  # control


def _direction(against: float, original: float, with_: float, restored: float) -> pd.DataFrame:
    d = pd.DataFrame({"move": ["against", "with", "restored"], "loss": [against, with_, restored],
                      "l2_moved": [0.01, 0.01, 0.0]})
    d["original"] = original
    d["bitwise_equal_to_original"] = d["loss"] == original
    return d


def test_g4_property_rows_and_8_digit_rows():
    v = _g4_values(_direction(3.42, 3.43, 3.44, 3.43), "random").set_index("quantity")
    assert v.value["ordering_against_original_with"] == "true" and v.value["restoration_bitwise"] == "true"
    assert v.value["loss_against_8digits"] == 3.42 and v.value["loss_original_8digits"] == 3.43
    bad = _g4_values(_direction(3.45, 3.43, 3.44, 3.43 + 1e-6), "random").set_index("quantity")  # violated
    assert bad.value["ordering_against_original_with"] == "false" and bad.value["restoration_bitwise"] == "false"
    assert pd.isna(v.model_source["ordering_against_original_with"])  # judged for any model


def test_g7_clip_property_rows():
    params = [torch.nn.Parameter(torch.randn(50, 7)), torch.nn.Parameter(torch.randn(9))]
    for p in params:
        p.grad = torch.randn_like(p) * 3
    total = torch.cat([p.grad.flatten() for p in params]).double().norm().item()   # float64 oracle
    before = torch.cat([p.grad.flatten() for p in params]).double()
    total_fp32 = float(torch.nn.utils.get_total_norm([p.grad for p in params]))
    returned = float(torch.nn.utils.clip_grad_norm_(params, 1.0))
    after = torch.cat([p.grad.flatten() for p in params]).double()
    cos = float(after @ before / (after.norm() * before.norm()))
    g7 = dict(total_norm=total, total_norm_fp32=total_fp32, token_table_input_side=0.1, clip_return=returned,
              clipped_norm=after.norm().item(), cosine_clipped_unclipped=cos)
    v = _g7_values(g7, "random").set_index("quantity").value
    assert v["clip_return_equals_unclipped_total"] == "true" and v["clip_direction_unchanged"] == "true"
    wrong = _g7_values({**g7, "clip_return": after.norm().item(), "cosine_clipped_unclipped": 0.9}, "random")
    wrong = wrong.set_index("quantity").value                                   # returns the clipped norm, turns
    assert wrong["clip_return_equals_unclipped_total"] == "false" and wrong["clip_direction_unchanged"] == "false"


def test_c1_surprise_is_cross_entropy():
    for p in (1.0, 0.01, 0.3):
        logits = torch.log(torch.tensor([[p, 1 - p]], dtype=torch.float64).clamp_min(1e-300))
        ce = torch.nn.functional.cross_entropy(logits, torch.tensor([0])).item()
        assert surprise(p) == pytest.approx(ce, abs=1e-15)
    assert surprise(1.0) == 0.0 and math.copysign(1, surprise(1.0)) == 1.0
    assert round(surprise(0.01), 1) == 4.6 and round(surprise(0.02), 1) != 4.6   # negative control


def test_new_documented_rows_are_well_formed():
    d = load()
    new = d[d.tolerance != ""]
    assert all(re.fullmatch(r"(abs|rel):[0-9.e+-]+|sig:\d+", t) for t in new.tolerance)
    assert all(parse_spec(t) and parse_spec(t)[0] != "abs" for t in d.loc[d.kind == "rounding", "tolerance"])  # sig:/rel: only
    props = d[d.kind == "property"]  # G4 ordering/restoration, G7 clip return/direction, G7 clipped norm, P9 bf16
    assert len(props) == 7 and (props.note != "").all()
    assert set(props[props.documented.isin(["true", "false"])].id) == {"G4", "G7"}
    s7 = d[(d.id == "S7") & d.quantity.str.match(r"(numerical_slope|grad_dot_v|abs_error)_d\d")]
    o1 = d[(d.id == "O1") & d.quantity.str.startswith("gd_final_loss_seed")]
    assert len(s7) == 15 and len(o1) == 10 and set(o1.kind) == {"shape"}


def test_o1_seed_rows_unjudged_only_where_the_ulp_control_splits():
    from adbench.optim.o1 import unjudged_reason
    ulp = pd.DataFrame({"seed": [0, 1, 2], "stuck_copies": [3, 0, 7], "copies": [7, 7, 7]})
    assert "3 of 7" in unjudged_reason("gd_final_loss_seed0", 0, ulp)
    assert unjudged_reason("gd_final_loss_seed1", 0, ulp) == unjudged_reason("gd_final_loss_seed2", 0, ulp) == ""
    assert unjudged_reason("stuck_count", 0, ulp) == ""


def test_l3_example_weights_by_autograd():
    from fractions import Fraction

    from adbench.lifetimes.accumulation import example_weights, measure_l3
    naive = example_weights([3, 4], counted=False)
    assert naive == pytest.approx([1 / 6] * 3 + [1 / 8] * 4, abs=1e-16)          # analytic 1/(2 * count)
    assert example_weights([3, 4], counted=True) == pytest.approx([1 / 7] * 7, abs=1e-16)
    assert example_weights([3, 3], counted=False) == pytest.approx([1 / 6] * 6)   # control: equal ranks agree
    v = values(measure_l3([3, 4], 3, 2, 0))
    assert (v["naive_weight_rank0"], v["naive_weight_rank1"], v["counted_weight"]) == ("1/6", "1/8", "1/7")
    assert Fraction(v["counted_weight"]) != Fraction(v["naive_weight_rank0"])


def test_precision_extra_rows():
    from adbench.precision.formats import measure_p2, measure_p8
    from adbench.precision.scaling import measure_p4
    p2 = values(measure_p2([1e-7, 1e-8]))
    assert p2["subnormal_steps_1e-07"] == float(np.float16(1e-7)) / 2.0 ** -24 == 2.0   # numpy oracle
    assert p2["subnormal_steps_1e-08"] == 0.0                                              # control: flushed
    p4 = values(measure_p4([0.1, 1.0, 2.0], 65536.0))
    assert (p4["product_0.1"], p4["product_1"], p4["product_2"]) == (0.1 * 65536, 65536.0, 131072.0)
    p8 = values(measure_p8([1e-8]))
    assert p8["gap_bf16_exact"] == 2.0 ** -7 and p8["bf16_gap_over_fp16"] == 2.0 ** -7 / 2.0 ** -10 == 8.0


@pytest.mark.slow
def test_smoke_report_has_the_new_rows_and_a_working_reuse_stepper(smoke, tmp_path):
    """The smoke DAG writes every appended documented row and the second step-through runs in a browser."""
    import shutil

    project = smoke[0]
    comparison = pd.read_csv(project / "results/comparison.csv", dtype=str, keep_default_na=False)
    doc = load(project / "src/adbench/data/documented.csv")
    new = doc[doc.quantity.str.fullmatch(
        r"ordering_against_original_with|restoration_bitwise|clip_return_equals_unclipped_total|clip_direction_unchanged"
        r"|reuse_.*|gd_final_loss_seed\d|gradcheck_(?:tape|central)|.*_8digits|product_.*|surprise_p.*|naive_weight_.*"
        r"|counted_weight|(?:numerical_slope|grad_dot_v|abs_error)_d\d|central_err_h1e-08_4sig|change_h0\.1|f_at_3"
        r"|min_nats|ckpt_reduction_pct|uniform_loss|subnormal_steps_1e-07|gap_bf16_exact|bf16_gap_over_fp16"
        r"|derivative_at_3|mutated_storage_\d|stale_grad_\d|n_params|loss_visible_bugs") & doc.id.ne("O3")]
    assert len(new) == 61  # the rows issue 10 appended
    joined = comparison.merge(new[["id", "quantity"]], on=["id", "quantity"])
    assert len(joined) == len(new) and (joined.status != "MISSING").all()
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("Debian's chromium is not installed; browser part skipped")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": 1200, "height": 900})
        errors = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto((project / "report/report.html").as_uri())
        x = page.locator('#reuse-stepper-plot g[data-node="x"]')
        grads = {}
        for mode in ("counted", "eager"):
            page.select_option("#reuse-stepper-mode", mode)
            page.click("#reuse-stepper-reset")
            while page.locator("#reuse-stepper-next").is_enabled():
                page.click("#reuse-stepper-next")
            grads[mode] = float(x.get_attribute("data-grad"))
        page.locator("#reuse-stepper").screenshot(path=str(tmp_path / "reuse.png"))
        browser.close()
    analytic = 2 * 0.5 * (1 + (1 - math.tanh(0.25) ** 2))  # config scalar.reuse_x = 0.5
    assert errors == [] and grads["counted"] == pytest.approx(analytic, abs=1e-12)
    assert grads["eager"] == pytest.approx(1.0) != pytest.approx(grads["counted"])  # the bug loses branch B


def test_s2_derivative_is_the_tapes_and_l5_stale_gradient():
    from adbench.lifetimes.graph import measure_l5, silent_stale_gradient
    t = torch.tensor(3.0, dtype=torch.float64, requires_grad=True)
    (t ** 2).backward()
    assert values(probes.measure_s2(3.0, [0.1]))["derivative_at_3"] == t.grad.item() == 6.0
    assert values(probes.measure_s2(4.0, [0.1]))["derivative_at_4"] == 8.0          # control: follows x
    storage, stale = silent_stale_gradient([2.0, 3.0], 1.0)
    assert storage == [3.0, 4.0] and stale == [2 * 3.0, 2 * 4.0]                   # analytic 2 (x + shift)
    v = values(measure_l5([2.0, 3.0], 1.0, 2.0))
    assert "modified by an inplace operation" in v["inplace_error"]                # without the hooks: refused
    assert [v["stale_grad_0"], v["stale_grad_1"]] != [v["retain_graph_grad_0"], v["retain_graph_grad_1"]]


def test_o1_parameter_count_and_c1_visible_bug_count():
    v = _o1()["values"].set_index("quantity").value
    assert int(v["n_params"]) == 2 * 4 + 4 + 4 + 1                          # W1, b1, W2, b2 of a 2-4-1 net
    from adbench.charlm.summary import dashboard
    assert dashboard(7.0, 1.7, 4.6).startswith("visible") and dashboard(1.72, 1.7, 4.6).startswith("invisible")
