"""The templates read the config and the model record instead of restating them; the moved rules are
generated from the code's own constants."""

import copy
import re

import pandas as pd
import pytest
import yaml
from markupsafe import escape

from adbench.families import Family, numbered
from adbench.history.changes import COLUMNS, moved_rules_text
from adbench.history.timing_moves import ALPHA
from adbench.render import TEMPLATES, template_files
from adbench.render.history import render_history
from adbench.render.page import prose_number, render, setting_lookup
from claims_fixture import load as load_tables
from conftest import ROOT

CONFIG = yaml.safe_load((ROOT / "config.yaml").read_text())
RANDOM = {"model_source": "random-reduced", "route": "random", "revision": None, "seed": 3,
          "random_config": {"n_layer": 2, "n_embd": 64}, "location": "not found: /hub/gpt2",
          "tokenizer": "byte-level BPE trained on the corpus (requested vocabulary 512, reached 512)"}
PRETRAINED = {"model_source": "pretrained", "route": "cache", "revision": CONFIG["gpt2"]["revision"], "seed": None,
              "repo_id": "openai-community/gpt2", "pinned_revision": CONFIG["gpt2"]["revision"],
              "random_config": None, "location": "/hub/gpt2/snapshot", "tokenizer": "gpt2@rev"}


def _cmp(ids=("S1",)):
    return pd.DataFrame([dict(id=i, quantity="q", description="row", documented="1", unit="", measured=1.0,
                              measured_printed="1", kind="exact", status="match", note="", model_source="",
                              tolerance="±5.0e-01 (printed digits)") for i in ids])


GPT2 = Family("gpt2", "GPT-2 probes", ("G1",), 70)


def _render(**kw):
    """The report; `model`: the GPT-2 family's model record (the family is then declared, with no rows of its own
    unless `families` says so)."""
    if "model" in kw:
        kw["models"] = {"gpt2": kw.pop("model")}
        kw.setdefault("families", [GPT2])
    return render(str(TEMPLATES), kw.pop("cmp", _cmp()), {"tables": {}, "figures": {}, "metas": [], "paths": []}, **kw)


# --- what counts as moved -------------------------------------------------------------------------

def test_moved_rules_come_from_the_thresholds_and_alpha_the_code_uses():
    text = " ".join(moved_rules_text(0.05, 0.10))
    assert "Mann-Whitney" in text and f"p < {ALPHA:g}" in text
    assert "5%" in text and "10%" in text and "changes.relative_threshold" in text
    other = " ".join(moved_rules_text(0.07, 0.25))
    percents = set(re.findall(r"\b\d+%", other))
    assert percents == {"7%", "25%"}, percents   # negative control: nothing left of the other thresholds
    assert "overlap" not in text.split("Without raw samples")[0]  # the sample test is not a range overlap


def test_report_and_history_print_the_generated_rules(tmp_path):
    changes = pd.DataFrame([dict(zip(COLUMNS, ["base", "S1", "q", "exact", "1", "1", "2", 1.0, 2.0, True, "moved",
                                               "±5.0e-01 (printed digits)", "torch 1", "torch 2"]))])
    config = {"changes": {"relative_threshold": 0.07, "timing_threshold": 0.25}}
    html = _render(extra={"changes": changes}, config=config, families=[Family("scalar", "Scalar", ("S1",), 1)])
    section = html[html.index('<section id="changes">'):]
    for rule in moved_rules_text(0.07, 0.25):
        assert str(escape(rule)) in section
    assert "range no longer overlaps" not in html   # the old, wrong description
    table = pd.DataFrame(columns=["id", "quantity", "kind", "unit", "documented", "first_moved_at", "noise_at"])
    runs = [{"label": "a", "ok": True, "source": "compare_to", "env": "torch 1", "versions": {}}]
    page = render_history(str(TEMPLATES), table, runs, {"relative": 0.07, "timing": 0.25, "alpha": ALPHA})
    assert "Mann-Whitney" in page and "25%" in page and "7%" in page


def test_what_changed_lists_the_claims_whose_verdict_changed_first():
    from adbench.history.changes import claim_changes
    from adbench.render.page import claim_changes_context

    def claims(verdicts):
        return pd.DataFrame([{"claim": c, "id": "S1", "scope": "any", "verdict": v, "reason": f"reads {v}",
                              "conclusion": f"{c} is so.", "doc": "000", "section": "s"} for c, v in verdicts.items()])
    now = claims({"S1.a": "fails", "S1.b": "holds", "S1.c": "holds"})
    cc = pd.concat([claim_changes(claims({"S1.a": "holds", "S1.b": "holds"}), now, "base"),
                    claim_changes(None, now, "older")])
    rows = [dict(zip(COLUMNS, [a, "S1", "q", "exact", "1", "1", "2", 1.0, 2.0, True, "moved", "±5.0e-01", "t1", "t2"]))
            for a in ("base", "older")]
    html = _render(extra={"changes": pd.DataFrame(rows), "claim_changes": claim_changes_context(cc)},
                   families=[Family("scalar", "Scalar", ("S1",), 1)])
    base = html[html.index("<h3>Against <code>base</code>"):html.index("<h3>Against <code>older</code>")]
    assert "1 claim(s) changed verdict; 1 kept theirs" in base
    assert base.index('href="#claim-S1.a"') < base.index("documented quantities moved")   # claims first
    assert 'data-then="holds" data-now="fails"' in base and "now: reads fails" in base and "then: reads holds" in base
    assert 'href="#claim-S1.b"' not in base                                          # unchanged: not listed
    assert "New since that run (not compared): <code>S1.c</code>" in base
    older = html[html.index("<h3>Against <code>older</code>"):]
    assert "no claims recorded in that run" in older and "changed verdict" not in older
    same = claim_changes_context(claim_changes(now, now, "base"))   # control: nothing changed
    html = _render(extra={"changes": pd.DataFrame(rows[:1]), "claim_changes": same},
                   families=[Family("scalar", "Scalar", ("S1",), 1)])
    assert "No claim changed its verdict (3 compared)." in html


# --- the GPT-2 banner --------------------------------------------------------------------------------

def test_the_banner_reads_the_model_record_and_the_config():
    config = {"gpt2": {**CONFIG["gpt2"], "source": "auto", "revision": "0123abcd"}}
    html = _render(model=RANDOM, config=config)
    banner = html[html.index("GPT-2 ran without its pretrained weights"):]
    banner = " ".join(banner[:banner.index("</div>")].split())
    assert "revision 0123abcd" in banner and CONFIG["gpt2"]["revision"] not in html  # the config's, not a literal
    assert "was not found" in banner and "random-reduced" in banner and "(seed 3)" in banner  # the record's
    assert "n_embd 64, n_layer 2" in banner and "reached 512" in banner
    asked = _render(model=RANDOM, config={"gpt2": {**CONFIG["gpt2"], "source": "random"}})
    assert "asks for the random fallback" in asked and "was not found" not in asked


def test_the_banner_says_when_the_pretrained_model_ran_and_is_absent_without_gpt2():
    html = _render(model=PRETRAINED, config={"gpt2": CONFIG["gpt2"]})
    assert "GPT-2 ran with its pretrained weights" in html and "without its pretrained" not in html
    assert CONFIG["gpt2"]["revision"] in html
    bare = _render()  # no GPT-2 family: no model record, no config
    assert "GPT-2 ran with" not in bare and "GPT-2 ran without" not in bare


def test_both_banners_are_the_one_template(tmp_path):
    gpt2 = Family("gpt2", "GPT-2 probes", ("G1",), 70)
    html = _render(cmp=_cmp(["G1"]), model=RANDOM, config={"gpt2": CONFIG["gpt2"]}, families=[gpt2])
    assert html.count("GPT-2 ran without its pretrained weights") == 2   # report top and the GPT-2 section


def test_no_template_restates_the_pinned_revision():
    revision = CONFIG["gpt2"]["revision"]
    offenders = [str(p) for p in template_files() if revision in p.read_text()]
    assert not offenders
    assert re.fullmatch(r"[0-9a-f]{40}", revision)  # the check looks for the real thing


# --- settings in the prose -----------------------------------------------------------------------------

@pytest.mark.parametrize("value, text", [(2000, "2,000"), (-2.0, "\u22122"), (1.5, "1.5"), (0.0003, "0.0003"),
                                         (1e-250, "1e-250"), (47, "47"), ("x", "x")])
def test_prose_number(value, text):
    assert prose_number(value) == text


def test_a_setting_absent_from_partial_data_names_its_key():
    setting = setting_lookup({"gpt2": {"g3_layers": [0, 5, 11]}})
    assert setting("gpt2.g3_layers", "series") == "0, 5 and 11"
    assert str(setting("gpt2.g4_distance")) == "<code>gpt2.g4_distance</code>"
    assert str(setting("optim.o2.steps")) == "<code>optim.o2.steps</code>"


def test_sections_print_this_runs_settings():
    gpt2 = Family("gpt2", "GPT-2 probes", ("G1",), 70)
    config = {"gpt2": {**CONFIG["gpt2"], "g3_layers": [1, 4], "g4_distance": 0.02}}
    html = _render(cmp=_cmp(["G1"]), model=RANDOM, config=config, families=[gpt2])
    assert "the documents printed layers 1 and 4" in html and "distance of 0.02" in html
    assert "layers 0, 5 and 11" not in html   # negative control: not the shipped default


# One configured value per family, changed: the prose prints the new value and none of the default's wording. Each case:
# family, dotted key (list items by index), new value, text the change must print, the default's text it must drop.
FAMILY_SECTIONS = {f.key: f for f in [
    Family("scalar", "Scalar", numbered("S", 10), 10), Family("tensor", "Tensor", numbered("T", 4), 20),
    Family("lifetimes", "Lifetimes", numbered("L", 7), 30), Family("optim", "Optim", numbered("O", 3), 40),
    Family("depth", "Depth", numbered("D", 2), 50), Family("precision", "Precision", numbered("P", 9), 60),
    Family("charlm", "Charlm", ("C1",), 80)]}
CHANGED = [
    ("lifetimes", "lifetimes.checkpoint.blocks", 16,
     ["is 16 blocks of h + Linear(256→512)", "16 + 10 = 26 rather than 32"], ["is 12 blocks of", "12 + 10 = 22"]),
    ("lifetimes", "lifetimes.checkpoint.hidden", 384, ["Linear(256→384) → tanh → Linear(384→256)"],
     ["Linear(256→512)"]),
    ("lifetimes", "lifetimes.split", [2, 5],
     ["(2/7, 5/7)", "each rank-0 example weighs 1/4 and each rank-1 example weighs 1/10"],
     ["(3/7, 4/7)", "weighs 1/6"]),
    ("depth", "depth.d1.chains.1.w", 2.5, ["With w = 2.5 the units saturate"], ["With w = 3 the units saturate"]),
    ("depth", "depth.d2.cases.0.depth", 40, ["0.5<sup>39</sup>", "across 40 layers at scale 0.5"],
     ["0.5<sup>29</sup>", "across 30 layers"]),
    ("depth", "depth.d2.max_depth", 80, ["Try 80 layers at scale 0.5"], ["Try 60 layers"]),
    ("charlm", "charlm.train.steps", 2500, ["(this run: 2,500 steps", "within the configured 2,500 steps"],
     ["1,000 steps"]),
    ("charlm", "charlm.train.n_layer", 6, ["The model has 6 pre-norm residual blocks", "the 6-block model"],
     ["has 4 pre-norm", "4-block model"]),
    ("optim", "optim.o1.hidden", 6,      # 2 x 6 + 6, then 6 + 1: the count follows the sizes
     ["6 tanh hidden units and one tanh output: 25 parameters", "for all 25 parameters"], ["17 parameters"]),
    ("optim", "optim.o1.gradcheck.h", 1e-6, ["central difference at h = 1e-06"], ["h = 1e-05"]),
    ("precision", "precision.grad_scaler.weights", [1.0, -2.0, 0.5], ["A linear loss of 3 weights"], ["of 2 weights"]),
    ("scalar", "scalar.b", -3.0, ["the factor of 1.5 belongs to b = \u22123"], ["factor of 2 belongs"]),
    ("tensor", "tensor.softmax.overflow_logits", [800.0, 799.0, 798.0], ["A direct exp(800)"], ["exp(1000)"]),
]


def _changed(config: dict, key: str, value) -> dict:
    """A deep copy of `config` with the dotted `key` (list items by index) set to `value`."""
    out = copy.deepcopy(config)
    *path, last = key.split(".")
    node = out
    for k in path:
        node = node[int(k)] if isinstance(node, list) else node[k]
    node[int(last) if isinstance(node, list) else last] = value
    return out


@pytest.fixture(scope="module")
def tables():
    """The full run's real tables (tests/data/claims), for the paragraphs that read them."""
    return load_tables()


def _section(family: str, config: dict, tables: dict) -> str:
    f = FAMILY_SECTIONS[family]
    html = render(str(TEMPLATES), _cmp(f.ids), {"tables": tables, "figures": {}, "metas": [], "paths": []},
                  families=[f], config=config)
    start = html.index(f'<section id="family-{family}">')
    return " ".join(html[start:html.index("</section>", start)].split())


@pytest.mark.parametrize("family, key, value, new, old", CHANGED, ids=[c[1] for c in CHANGED])
def test_a_changed_setting_reaches_the_prose(tables, family, key, value, new, old):
    default = _section(family, CONFIG, tables)
    changed = _section(family, _changed(CONFIG, key, value), tables)
    for text in new:
        assert text in changed, text
        assert text not in default, text        # the default run does not print it: the change did
    for text in old:
        assert text in default, text            # negative control: the default's wording is there by default...
        assert text not in changed, text        # ...and gone once the value changes


@pytest.mark.parametrize("family", sorted(FAMILY_SECTIONS))
def test_sections_render_without_their_config_or_tables(family, tables):
    """Partial data (no config, or an empty config section; no tables, or the real ones): the prose names the keys
    or says it in words, and nothing raises."""
    for config, tabs in (({}, {}), ({family: {}}, tables)):
        assert "<h3 id=" in _section(family, config, tabs)


def test_the_top_banner_names_files_not_what_their_job_wrote():
    clean = _render()
    assert 'id="integrity"' not in clean and "carry no record" not in clean  # negative control
    html = _render(extra={"integrity": [{"path": "results/S2/values.csv", "problem": "changed after its job wrote it"},
                                        {"path": "results/S3/values.csv", "problem": "no record"}]})
    banner = html.split('id="integrity"', 1)[1].split("</div>", 1)[0]
    assert "<code>results/S2/values.csv</code> changed after its job wrote it" in banner
    assert "S3" not in banner and "1 file(s) carry no record" in html  # unrecorded: the warning banner only
    assert html.index('id="integrity"') < html.index("MISMATCH or MISSING")  # at the top
