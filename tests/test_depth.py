"""D1 and D2 against independent oracles (analytic products, torch autograd) and the explorer's DOM."""

from __future__ import annotations

import io
import json
import math
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from adbench.verdicts.verdict import compare
from adbench.depth import chains, residual, stacks
from adbench.verdicts.documented import load
from adbench.render import PACKAGE, TEMPLATES
from adbench.render.page import render
from adbench.scalar.tape import Tape, Value

torch.set_num_threads(1)
ROOT = Path(__file__).resolve().parents[1]
CHAINS = [{"activation": "tanh", "w": 1.0, "report_at": [1, 10, 50, 100]},
          {"activation": "tanh", "w": 3.0, "report_at": [5, 10, 20, 30]},
          {"activation": "relu", "w": 1.0, "report_at": [1, 50, 100]},
          {"activation": "relu", "w": 1.2, "report_at": [10, 20, 50]}]
PROBE = {"activation": "tanh", "w": 3.0, "depth": 6}


def forward_mode_product(x: float, w: float, depth: int, activation: str) -> float:
    """Oracle: dL/dx as the running product of local slopes, accumulated while going forward."""
    h, g = x, 1.0
    for _ in range(depth):
        z = w * h
        h, slope = (math.tanh(z), 1 - math.tanh(z) ** 2) if activation == "tanh" else (max(z, 0.0), float(z > 0))
        g *= w * slope
    return g


def test_residual_jacobian_against_central_differences_and_a_dropped_slope_is_caught():
    d = residual.residual_jacobian(width=3, seed=1)
    W, x = residual.block(3, 1)
    f = lambda v: (v + torch.tanh(W @ v)).numpy()   # noqa: E731
    fd = np.stack([(f(x + 1e-6 * e) - f(x - 1e-6 * e)) / 2e-6 for e in torch.eye(3, dtype=torch.float64)], axis=1)
    J = d.torch_jacobian.to_numpy().reshape(3, 3)
    assert np.abs(J - fd).max() < 1e-8 and np.abs(J - d.hand_jacobian.to_numpy().reshape(3, 3)).max() < 1e-15
    bad = residual.residual_jacobian(width=3, seed=1, bug=residual.RESIDUAL_BUGS[0])
    assert np.abs(bad.hand_jacobian - bad.torch_jacobian).max() > 1e-3


@pytest.mark.parametrize("ch", CHAINS, ids=lambda c: f"{c['activation']}-{c['w']}")
def test_d1_tape_and_torch_equal_the_analytic_product(ch):
    for d in (1, 2, 7, 30, 64):
        want = forward_mode_product(0.5, ch["w"], d, ch["activation"])
        assert chains.tape_chain(0.5, ch["w"], d, ch["activation"]) == pytest.approx(want, rel=1e-12)
        assert chains.torch_chain(0.5, ch["w"], d, ch["activation"]) == pytest.approx(want, rel=1e-12)


def test_d1_relu_chain_is_an_exact_power_and_a_broken_backward_is_caught():
    assert chains.tape_chain(0.5, 1.2, 50, "relu") == pytest.approx(1.2 ** 50, rel=1e-13)
    with Tape():                       # the S4 bug (closures in build order) on the same chain
        leaf = Value(0.5)
        h = leaf
        for _ in range(10):
            h = (h * 1.2).relu()
        h.backward(order="forward")
    assert leaf.grad != pytest.approx(forward_mode_product(0.5, 1.2, 10, "relu"), rel=1e-3)


def test_d1_values_and_fp16_probe():
    out = chains.measure_d1(0.5, 40, [c | {"report_at": [r for r in c["report_at"] if r <= 40]} for c in CHAINS], PROBE)
    v = out["values"].set_index("quantity").value
    g6 = forward_mode_product(0.5, 3.0, 6, "tanh")
    assert v["tanh_w3_d6"] == pytest.approx(g6, rel=1e-12)
    assert g6 < 2.0 ** -25 and v["tanh_w3_d6_fp16"] == 0.0        # under half the smallest subnormal
    assert out["fp16_probe"].fp16_smallest_subnormal[0] == 2.0 ** -24
    assert out["chains"].rel_diff.max() < 1e-12
    assert len(out["chains"]) == 4 * 40


def test_every_exact_depth_row_matches_the_documented_table():
    doc = load()
    doc = doc[doc.id == "D1"]
    cmp = compare(doc, chains.measure_d1(0.5, 100, CHAINS, PROBE)["values"])
    assert len(cmp) == len(doc) > 15 and (cmp.status == "match").all(), cmp[cmp.status != "match"]


def autograd_norms(weights, x, scale, residual):
    """Oracle: one autograd run per depth, ||dL_d/dh_l|| read from retained grads."""
    L = len(weights)
    out = np.full((L, L), np.nan)
    for d in range(1, L + 1):
        h, hs = x, []
        for W in weights[:d]:
            a = torch.tanh(scale * (h @ W.T))
            h = h + a if residual else a
            h.retain_grad()
            hs.append(h)
        h.sum().backward()
        out[d - 1, :d] = [t.grad.norm().item() for t in hs]
    return out


@pytest.mark.parametrize("residual", [False, True])
@pytest.mark.parametrize("scale", [0.5, 2.0])
def test_d2_hand_backward_equals_autograd_and_a_missing_route_is_caught(scale, residual):
    weights, x = stacks.draw(3, 6, 16, 3)
    x = x.requires_grad_()
    want = autograd_norms(weights, x, scale, residual)
    got = stacks.layer_grad_norms(weights, x.detach(), scale, residual)
    assert np.allclose(got, want, rtol=1e-12, equal_nan=True)
    broken = stacks.layer_grad_norms(weights, x.detach(), scale, not residual)   # identity route dropped/added
    assert not np.allclose(broken, want, rtol=1e-3, equal_nan=True)


SMALL = dict(width=32, max_depth=12, scales=[0.5, 1.0, 2.0], batch=2, seeds=[0, 1],
             cases=[{"depth": 12, "scale": 0.5, "residual": False}, {"depth": 12, "scale": 2.0, "residual": True}])


@pytest.fixture(scope="module")
def small_d2():
    return stacks.measure_d2(**SMALL)


def test_d2_grid_covers_every_setting_and_shows_the_mechanism(small_d2):
    grid = small_d2["grid"]
    assert len(grid) == 3 * 2 * 12 * 13 // 2
    assert np.allclose(grid[grid.layer == grid.depth].rel_grad, 1.0)
    assert np.allclose(np.log10(grid.rel_grad), grid.log10_rel_grad)
    v = small_d2["values"].set_index("quantity").value
    # scale 0.5, tanh near linear: about one halving per layer-to-layer step
    assert 0.5 ** 11 / 30 < v["plain_s0.5_d12_first_over_last"] < 0.5 ** 11 * 3
    assert v["residual_s2_d12_first_over_last"] > 1
    assert v["residual_first_vs_last"].startswith("first layer never got less")


def test_d2_residual_claim_is_checked_not_assumed(small_d2):
    grid = small_d2["grid"]
    first = grid[(grid.layer == 1) & (grid.depth > 1)]
    assert small_d2["values"].set_index("quantity").value["residual_first_vs_last"] == \
        stacks.residual_verdict(first[first.residual])
    # the plain stacks, fed to the same verdict, fail it: the sentence then lacks the documented phrase
    verdict = stacks.residual_verdict(first[~first.residual])
    assert verdict.startswith("first layer got less") and "never got less gradient than the last" not in verdict


class _Collect(HTMLParser):
    def __init__(self):
        super().__init__()
        self.ids, self.scripts, self._in = {}, {}, None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if "id" in a:
            self.ids[a["id"]] = (tag, a)
        self._in = a.get("id") if tag == "script" else None

    def handle_data(self, data):
        if self._in:
            self.scripts[self._in] = self.scripts.get(self._in, "") + data


def render_depth_section(tmp_path: Path, d2: dict) -> str:
    """Render the depth family's section (depth/section.html.j2) alone through the project's renderer: a copy of
    the package layout, core templates in render/templates, the family's files in depth/."""
    core, family = tmp_path / "render" / "templates", tmp_path / "depth"
    core.mkdir(parents=True)
    shutil.copytree(PACKAGE / "depth", family, ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    shutil.copy(TEMPLATES / "macros.html.j2", core)
    (core / "report.html.j2").write_text('{% import "macros.html.j2" as m %}<!DOCTYPE html><html><head>'
                                         '<meta charset="utf-8"></head><body>'
                                         '{% include "depth/section.html.j2" %}</body></html>')
    tmp_path = core
    doc = load()
    cmp = compare(doc[doc.id == "D2"], d2["values"])
    tables = {"D2/grid": pd.read_csv(io.StringIO(d2["grid"].to_csv(index=False))),   # as the report reads it
              "D2/summary": d2["summary"]}
    return render(str(tmp_path), cmp, {"tables": tables, "figures": {}, "metas": []})


def test_explorer_dom_has_controls_and_complete_embedded_grid(tmp_path, small_d2):
    html = render_depth_section(tmp_path, small_d2)
    p = _Collect()
    p.feed(html)
    assert p.ids["depth-explorer-depth"][0] == "input" and p.ids["depth-explorer-depth"][1]["type"] == "range"
    assert p.ids["depth-explorer-scale"][0] == "select"
    assert p.ids["depth-explorer-residual"][1]["type"] == "checkbox"
    assert p.ids["depth-explorer-plot"][0] == "svg"
    data = json.loads(p.scripts["depth-explorer-data"])
    rows = [dict(zip(data["columns"], r)) for r in data["data"]]
    assert {(r["depth"], r["scale"], r["residual"]) for r in rows} == {
        (d, s, res) for d in range(1, 13) for s in SMALL["scales"] for res in (False, True)}
    first = {(r["depth"], r["scale"], r["residual"]): r["log10_rel_grad"] for r in rows if r["layer"] == 1}
    assert first[(12, 0.5, False)] == pytest.approx(math.log10(
        small_d2["values"].set_index("quantity").value["plain_s0.5_d12_first_over_last"]), abs=1e-3)
    assert not re.search(r'(src|href)="https?:|fetch\(|XMLHttpRequest|import\(', html)   # nothing from the network
    assert '<h3 id="D2">' in html and '<h3 id="D1">' in html


DRIVER = """<script>
var d = document.getElementById("depth-explorer-depth"), s = document.getElementById("depth-explorer-scale"),
    r = document.getElementById("depth-explorer-residual");
d.value = "7"; d.dispatchEvent(new Event("input"));
s.value = "2"; s.dispatchEvent(new Event("change"));
r.checked = true; r.dispatchEvent(new Event("change"));
document.body.setAttribute("data-paths", document.querySelectorAll("#depth-explorer-plot path").length);
</script></body>"""


@pytest.mark.browser
@pytest.mark.skipif(not shutil.which("chromium"), reason="headless Chromium not installed")
def test_explorer_runs_from_file_url_in_headless_chromium(tmp_path, small_d2):
    html = render_depth_section(tmp_path, small_d2).replace("</body>", DRIVER)
    page = tmp_path / "explorer.html"
    page.write_text(html)
    dom = subprocess.run(["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", page.as_uri()],
                         capture_output=True, text=True, timeout=120).stdout
    assert 'data-paths="2"' in dom
    readout = re.search(r'id="depth-explorer-readout"[^>]*>([^<]*)<', dom).group(1)
    assert readout.startswith("7 layers, scale 2, residual: the first layer gets ")
    want = small_d2["grid"].query("depth == 7 and scale == 2.0 and residual and layer == 1").rel_grad.iloc[0]
    shown = float(re.search(r"gets ([0-9.e+-]+) times", readout).group(1))
    assert shown == pytest.approx(want, rel=5e-3)


def test_depth_figures_render_from_the_tables(small_d2):
    from adbench.depth.plots import plot_depth
    d1 = chains.measure_d1(0.5, 12, [c | {"report_at": [1]} for c in CHAINS], PROBE)
    out = plot_depth(d1["chains"], d1["fp16_probe"], small_d2["grid"], SMALL["cases"])
    assert b"<svg" in out["chains"] and b"tanh, w = 3" in out["chains"]
    assert b"12 layers, scale 0.5" in out["stacks"] and b"residual x + layer(x), 12 layers" in out["stacks"]
