"""What changed between two machines: a timing that moved is `machine differs` (never noise), a moved value names
the machines, archives carry the machine, and the shipped reference archive (no machine identity) still compares."""

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd

from adbench.history.archive import environment_line, run_machine, snapshot
from adbench.history.changes import changes, compare_runs
from adbench.history.timing_moves import timing_moved

REFERENCE = next((Path(__file__).resolve().parents[1] / "reference" / "archive").iterdir())
NO_GPU = {"name": "", "count": 0, "memory_bytes": None, "driver": "", "cuda": ""}
# Two machines of one name, as in issue 34: the AVX-512 one the reference ran on and an AVX2-only one
AVX512 = {"cpu_model": "AMD EPYC", "vector_extensions": ["avx2", "avx512f", "avx512_bf16"], "cpu_count": 2,
          "memory_bytes": 24 * 2**30, "gpu": NO_GPU}
AVX2 = {**AVX512, "vector_extensions": ["avx2"]}
TAPE = np.random.default_rng(7).lognormal(np.log(5000), 0.02, 11)
TORCH = np.random.default_rng(8).lognormal(np.log(18), 0.02, 11)


def _meta(root: Path, mid: str, machine: dict | None, code: str = "abc", torch: str = "2.13.0") -> None:
    """meta.json of `mid` (`machine` None: one written before machines were recorded: model and count only)."""
    meta = {"code_hash": code, "versions": {"torch": torch}, "cpu_model": "AMD EPYC", "cpu_count": 2}
    (root / mid).mkdir(parents=True, exist_ok=True)
    (root / mid / "meta.json").write_text(json.dumps(meta | ({"machine": machine} if machine else {})))


def _run(root: Path, machine: dict | None, torch_scale: float = 1.0, **kw) -> Path:
    """A run folder with S9's raw samples (torch's times scaled) and its meta.json."""
    _meta(root, "S9", machine, **kw)
    rows = [{"process": 1, "round": r, "candidate": c, "per_call_us": v}
            for c, vals in (("tape", TAPE), ("torch", TORCH * torch_scale)) for r, v in enumerate(vals)]
    pd.DataFrame(rows).to_csv(root / "S9" / "samples.csv", index=False)
    return root


def test_a_timing_that_moved_between_two_cpus_is_machine_differs_never_noise(tmp_path):
    old = _run(tmp_path / "old", AVX512)
    other_cpu = _run(tmp_path / "avx2", AVX2, torch_scale=4.4)        # 18 -> 80 µs, code and libraries unchanged
    status, rule = timing_moved("S9", "torch_median_min_us", old, other_cpu, 0.10)
    assert status == "machine differs"
    assert "only then: avx512f avx512_bf16" in rule and "then AMD EPYC, 2 logical CPUs, avx2 avx512f" in rule
    assert "now AMD EPYC, 2 logical CPUs, avx2, 24.0 GiB; no GPU" in rule
    bumped = _run(tmp_path / "avx2-bumped", AVX2, torch_scale=4.4, torch="2.14.1")
    assert timing_moved("S9", "torch_median_min_us", old, bumped, 0.10)[0] == "machine differs"  # machine first
    calm = _run(tmp_path / "avx2-calm", AVX2, torch_scale=1.01)
    assert timing_moved("S9", "torch_median_min_us", old, calm, 0.10)[0] == "same"   # no move: nothing to label
    # negative control: the same machine (memory aside) keeps the current rules: noise, or moved after an upgrade
    same = _run(tmp_path / "same", {**AVX512, "memory_bytes": 8 * 2**30}, torch_scale=4.4)
    status, rule = timing_moved("S9", "torch_median_min_us", old, same, 0.10)
    assert status == "noise" and rule.endswith("code and libraries unchanged (meta.json): noise")
    upgraded = _run(tmp_path / "upgraded", AVX512, torch_scale=4.4, torch="2.14.1")
    assert timing_moved("S9", "torch_median_min_us", old, upgraded, 0.10)[0] == "moved"


def test_a_run_without_machine_identity_is_machine_unknown_not_noise(tmp_path):
    legacy = _run(tmp_path / "legacy", None)
    now = _run(tmp_path / "now", AVX2, torch_scale=4.4)
    status, rule = timing_moved("S9", "torch_median_min_us", legacy, now, 0.10)
    assert status == "machine unknown" and "the earlier run recorded no full machine identity" in rule
    upgraded = _run(tmp_path / "upgraded", AVX2, torch_scale=4.4, torch="2.14.1")
    status, rule = timing_moved("S9", "torch_median_min_us", legacy, upgraded, 0.10)
    assert status == "moved" and "machine unknown" in rule   # the libraries changed: a move, with the doubt named
    many = _run(tmp_path / "many", {**AVX2, "cpu_count": 16}, torch_scale=4.4)
    assert timing_moved("S9", "torch_median_min_us", legacy, many, 0.10)[0] == "machine differs"  # 2 vs 16 CPUs


def _cmp(measured: float) -> pd.DataFrame:
    return pd.DataFrame([{"id": "C1", "quantity": "no_zero_grad_final_train_loss", "documented": "7.37",
                          "measured": measured, "kind": "shape"}])


def test_a_value_that_moved_between_machines_names_them_and_one_on_the_same_machine_does_not(tmp_path):
    for name, machine in (("old", AVX512), ("other", AVX2), ("same", AVX512), ("legacy", None), ("legacy2", None)):
        _meta(tmp_path / name, "C1", machine)
    out = changes(_cmp(6.08), _cmp(7.33), "a", "x", "y", 0.05, 0.10, tmp_path / "old", tmp_path / "other")
    assert out.status.tolist() == ["moved"]   # a value moves as before; its rule says the machines differ
    assert out.rule.iloc[0].startswith("relative change 17.1%")
    assert "machines differ: vector extensions" in out.rule.iloc[0]
    same = changes(_cmp(6.08), _cmp(7.33), "a", "x", "y", 0.05, 0.10, tmp_path / "old", tmp_path / "same")
    assert same.status.tolist() == ["moved"] and "machine" not in same.rule.iloc[0]   # control: same machine
    def rule(a, b):
        return changes(_cmp(6.08), _cmp(7.33), "a", "x", "y", 0.05, 0.10, tmp_path / a, tmp_path / b).rule[0]

    assert rule("legacy", "other").endswith("; machine unknown: the earlier run recorded no full machine identity")
    assert "machine" not in rule("legacy", "legacy2")   # two runs that predate machine identity: nothing to say


def test_an_archive_carries_the_machine_and_its_environment_line_shows_it(tmp_path):
    results = tmp_path / "results"
    for mid in ("S1", "S2", "S3"):
        _meta(results, mid, AVX2 if mid != "S3" else AVX512)   # most jobs ran on the AVX2 machine
    (tmp_path / "archive").mkdir()
    files = [str(p) for p in results.rglob("meta.json")]
    manifest = snapshot(files, str(results), str(tmp_path / "archive" / "a"), False, {"label": "a", "device": "cpu",
                                                                                      "versions": {"torch": "2.13.0"}})
    assert manifest["machine"] == AVX2 == json.loads((tmp_path / "archive/a/MANIFEST.json").read_text())["machine"]
    assert environment_line(manifest) == "torch 2.13.0, cpu; AMD EPYC, 2 logical CPUs, avx2, 24.0 GiB; no GPU"
    assert environment_line({"versions": {"torch": "2.13.0"}, "device": "cpu"}) == "torch 2.13.0, cpu; machine unknown"


def test_the_shipped_reference_archive_still_compares_and_says_machine_unknown(tmp_path):
    """This run on an AVX2 machine against reference/archive (made before machine identity): it loads, the
    line says what is unknown, and a timing that moved is `machine unknown`, not noise."""
    assert "machine" not in json.loads((REFERENCE / "MANIFEST.json").read_text())
    legacy = run_machine(REFERENCE)
    assert legacy == {"cpu_model": "AMD EPYC", "cpu_count": 2}
    results = tmp_path / "results"
    shutil.copytree(REFERENCE / "S9", results / "S9")
    meta = json.loads((results / "S9/meta.json").read_text())
    (results / "S9/meta.json").write_text(json.dumps(meta | {"machine": AVX2}))   # same code and libraries
    samples = pd.read_csv(results / "S9/samples.csv")
    samples.loc[samples.candidate == "torch", "per_call_us"] *= 81.5 / 18.6        # issue 34's torch median move
    samples.to_csv(results / "S9/samples.csv", index=False)
    comparison = pd.read_csv(REFERENCE / "comparison.csv")
    out = compare_runs(comparison, [str(REFERENCE)], 0.05, {"versions": {"torch": "2.13.0+cpu"}, "device": "cpu"},
                       results_dir=str(results))["changes"]
    assert len(out) == len(comparison) and out.old_env.iloc[0].endswith(
        "cpu; AMD EPYC, 2 logical CPUs (machine unknown: vector extensions and GPU not recorded)")
    assert out.new_env.iloc[0] == "torch 2.13.0+cpu, cpu; AMD EPYC, 2 logical CPUs, avx2, 24.0 GiB; no GPU"
    s9 = out[out.id == "S9"].set_index("quantity").status
    assert s9[["torch_median_min_us", "torch_median_max_us"]].tolist() == ["machine unknown"] * 2
    assert s9[["tape_median_min_us", "tape_median_max_us"]].tolist() == ["same"] * 2   # tape's times unchanged
    assert "noise" not in set(out.status) and not out[out.id != "S9"].moved.any()  # the rest: one table, no move


def test_the_report_shows_the_machine_and_the_timings_that_moved_with_it():
    from adbench.history.changes import COLUMNS
    from adbench.render import TEMPLATES
    from adbench.render.page import render

    cmp = pd.DataFrame([dict(id="S1", quantity="q", description="row", documented="1", unit="", measured=1.0,
                             measured_printed="1", kind="exact", status="match", note="", model_source="",
                             tolerance="±5.0e-01 (printed digits)")])
    from adbench.provenance import meta_record

    meta = meta_record(rule="r", wildcards={}, args={}, seed=0, device="cpu", threads=1, wall_s=1.0) | {
        "code_hash": "c", "_path": "S1/meta.json", "cpu_model": "AMD EPYC", "cpu_count": 2}
    old_meta = {k: v for k, v in meta.items() if k != "machine"} | {"_path": "S2/meta.json"}  # written before it
    row = ["ref", "S9", "torch_median_min_us", "timing", "8.7", "18.6", "81.5", 18.6, 81.5, False]
    changes = pd.DataFrame([dict(zip(COLUMNS, row + [status, "rule", "then-env", "now-env"]))
                            for status in ("machine differs", "noise")])
    html = render(str(TEMPLATES), cmp, {"tables": {}, "figures": {}, "metas": [meta | {"machine": AVX2}, old_meta],
                                        "paths": []}, extra={"changes": changes})
    assert "machines (the jobs ran on 2): AMD EPYC, 2 logical CPUs, avx2, 24.0 GiB; no GPU | AMD EPYC, 2 logical " \
           "CPUs (machine unknown: vector extensions and GPU not recorded);" in html
    note = html[html.index('class="note machine-moves"'):]
    assert "(1):" in note[:200] and "<code>S9 torch_median_min_us</code> (machine differs)." in note[:400]
    quiet = render(str(TEMPLATES), cmp, {"tables": {}, "figures": {}, "metas": [meta | {"machine": AVX2}], "paths": []},
                   extra={"changes": changes.assign(status="noise")})
    assert "machine-moves" not in quiet and "machine: AMD EPYC, 2 logical CPUs, avx2" in quiet   # control
