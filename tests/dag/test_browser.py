"""The rendered smoke report in a real browser: no errors, every anchor, working interactive figures."""

import math
import shutil

import pytest
import yaml
from snakemake.utils import update_config

from conftest import SMOKE
from workflow_inspect import from_workflow

pytestmark = [pytest.mark.slow, pytest.mark.dag, pytest.mark.browser]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="module")
def page(smoke):
    if CHROMIUM is None:
        pytest.skip("Debian's chromium is not installed (CI installs it via `make test`); browser test skipped")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        pg = browser.new_page(viewport={"width": 1200, "height": 900})
        problems = []
        pg.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
        pg.on("pageerror", lambda e: problems.append(f"page error: {e}"))
        pg.on("requestfailed", lambda r: problems.append(f"failed request: {r.url}"))
        pg.on("request", lambda r: problems.append(f"external request: {r.url}")
              if not r.url.startswith(("file:", "data:")) else None)
        pg.goto((smoke[0] / "report/report.html").as_uri())
        pg.wait_for_load_state("load")
        pg.problems = problems
        yield pg
        browser.close()


def test_no_console_errors_or_requests(page):
    assert page.problems == []


def test_every_catalog_anchor_is_present_once(page, smoke):
    for fam in from_workflow(smoke[0]):  # the families the rules files declare
        for mid in fam.ids:
            assert page.locator(f"#{mid}").count() == 1, mid


def test_step_through_changes_the_figure_and_ends_on_the_documented_gradients(page, tmp_path):
    plot = page.locator("#stepper-plot")
    plot.scroll_into_view_if_needed()
    before = plot.inner_html()
    page.click("#stepper-next")
    assert plot.inner_html() != before
    a_grad = page.locator('#stepper-plot g[data-node="a"]')
    while page.locator("#stepper-next").is_enabled():
        page.click("#stepper-next")
    accumulate = float(a_grad.get_attribute("data-grad"))
    page.select_option("#stepper-mode", "=")
    while page.locator("#stepper-next").is_enabled():
        page.click("#stepper-next")
    overwrite = float(a_grad.get_attribute("data-grad"))
    assert (accumulate, overwrite) == (-2.0, -6.0)  # relu(a*b + c)*a at (2, -3, 10): analytic -2; "=" keeps b only
    page.locator("#stepper").screenshot(path=str(tmp_path / "stepper.png"))


def test_reuse_stepper_ends_on_the_counted_gradient_and_eager_loses_a_branch(page, smoke, tmp_path):
    """S10's second step-through (x -> square -> relu / tanh -> add): counted mode waits for both consumers of
    the square and ends on the analytic gradient at the configured x; eager mode fires early and keeps branch A."""
    config = {}
    for name in SMOKE[1:]:  # the smoke run's config files, merged as Snakemake merges them
        update_config(config, yaml.safe_load((smoke[0] / name).read_text()))
    x_value = config["scalar"]["reuse_x"]
    seen = len(page.problems)
    x = page.locator('#reuse-stepper-plot g[data-node="x"]')
    x.scroll_into_view_if_needed()
    grads = {}
    for mode in ("counted", "eager"):
        page.select_option("#reuse-stepper-mode", mode)
        page.click("#reuse-stepper-reset")
        while page.locator("#reuse-stepper-next").is_enabled():
            page.click("#reuse-stepper-next")
        grads[mode] = float(x.get_attribute("data-grad"))
    page.locator("#reuse-stepper").screenshot(path=str(tmp_path / "reuse.png"))
    analytic = 2 * x_value * (1 + (1 - math.tanh(x_value ** 2) ** 2))  # relu' = 1 and tanh' of the square, summed
    assert page.problems[seen:] == [] and grads["counted"] == pytest.approx(analytic, abs=1e-12)
    assert grads["eager"] == pytest.approx(2 * x_value) != pytest.approx(grads["counted"])  # the bug loses branch B


def test_depth_explorer_controls_redraw_the_plot(page, tmp_path):
    plot = page.locator("#depth-explorer-plot")
    plot.scroll_into_view_if_needed()
    before = plot.inner_html()
    page.locator("#depth-explorer-residual").click()
    after_toggle = plot.inner_html()
    assert after_toggle != before
    page.locator("#depth-explorer-depth").fill("5")
    page.locator("#depth-explorer-depth").dispatch_event("input")
    assert plot.inner_html() != after_toggle
    page.locator("#depth-explorer-plot").screenshot(path=str(tmp_path / "explorer.png"))


def test_comparison_filter_hides_rows(page, tmp_path):
    rows = page.locator("#all-values-table tbody tr")
    total = rows.count()
    page.click('#all-values button[data-filter="differs"]')
    visible = page.locator("#all-values-table tbody tr:not([hidden])").count()
    assert 0 < visible < total
    page.click('#all-values button[data-filter="all"]')
    assert page.locator("#all-values-table tbody tr:not([hidden])").count() == total
    page.screenshot(path=str(tmp_path / "report.png"), full_page=False)
