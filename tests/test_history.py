"""Version comparison: what moved between two result sets, and the archive's refusal to clobber."""

import math
from datetime import date

import pandas as pd
import pytest

from adbench.history.changes import changes, moved
from adbench.verdicts.tolerance import parse_printed

from adbench.history.archive import default_label, snapshot


def _cmp(rows):
    return pd.DataFrame([{"id": i, "quantity": q, "documented": d, "measured": m, "kind": k} for i, q, d, m, k in rows])


OLD = _cmp([("S1", "g", "0.2710599584", 0.27105995841, "exact"),
            ("S5", "err", "6.68e-12", 6.679e-12, "rounding"),
            ("S7", "max", "1.871e-10", 2.0e-10, "shape"),
            ("S9", "ratio_min", "642.6", 160.0, "timing"), ("S9", "ratio_max", "741.8", 200.0, "timing"),
            ("S9", "tape_median_min_us", "6474.8", 5000.0, "timing"), ("S9", "tape_median_max_us", "6557.5", 5400.0, "timing"),
            ("S6", "exc", "TypeError", "TypeError", "exact")])


def test_synthetic_sets_flag_exactly_the_moved_quantities():
    new = OLD.copy()
    new.loc[new.quantity == "g", "measured"] = 0.27105995843         # within ±5e-11: not moved
    new.loc[new.quantity == "err", "measured"] = 4.883e-11           # beyond printed digits: moved
    new.loc[new.quantity == "max", "measured"] = 2.05e-10            # 2.4 % < 5 %: not moved
    new.loc[new.quantity == "ratio_min", "measured"] = 190.0         # [190, 260] overlaps [160, 200]: not moved
    new.loc[new.quantity == "ratio_max", "measured"] = 260.0
    new.loc[new.quantity == "tape_median_min_us", "measured"] = 6000.0  # [6000, 6100] vs [5000, 5400]: moved
    new.loc[new.quantity == "tape_median_max_us", "measured"] = 6100.0
    new.loc[new.quantity == "exc", "measured"] = "ValueError"         # text changed: moved
    out = changes(OLD, new, "old", "torch 2.12", "torch 2.13", 0.05).set_index("quantity")
    assert set(out.index[out.moved]) == {"err", "tape_median_min_us", "tape_median_max_us", "exc"}
    assert (out.old_env == "torch 2.12").all() and (out.archive == "old").all()


def test_identical_sets_have_no_change():
    assert not changes(OLD, OLD.copy(), "a", "x", "x", 0.05).moved.any()


def test_moved_rules():
    assert moved("shape", "1.0", 1.0, 1.2, 0.05)[0] and not moved("shape", "1.0", 1.0, 1.04, 0.05)[0]
    assert moved("derived", "124,439,808", 124439808, 124439809, 0.05)[0]


def test_label_and_snapshot_never_clobbers(tmp_path):
    assert default_label({"torch": "2.13.0", "transformers": "5.24.0"}, "cpu", date(2026, 11, 29)) == \
        "2026-11-29_torch2.13.0_transformers5.24.0_cpu"
    results = tmp_path / "results"
    (results / "S1").mkdir(parents=True)
    (results / "S1/values.csv").write_text("id,quantity,value,note\nS1,g,1.0,\n")
    (results / "comparison.csv").write_text("id\n")
    dest = tmp_path / "archive" / "a"
    dest.parent.mkdir()
    files = [str(results / "S1/values.csv"), str(results / "comparison.csv")]
    m = snapshot(files + files[:1], str(results), str(dest), False, {"label": "a"})  # one file named twice
    assert m["files"] == ["S1/values.csv", "comparison.csv"] and (dest / "MANIFEST.json").exists()  # listed once
    (results / "S1/values.csv").write_text("changed\n")
    with pytest.raises(FileExistsError, match="archive.overwrite"):
        snapshot(files, str(results), str(dest), False, {"label": "a"})
    assert "S1,g,1.0" in (dest / "S1/values.csv").read_text()
    snapshot(files, str(results), str(dest), True, {"label": "a"})
    assert (dest / "S1/values.csv").read_text() == "changed\n"
    assert sorted(p.name for p in dest.parent.iterdir()) == ["a"]  # no staging leftovers


# --- claims whose verdict changed ---------------------------------------------------------------
def _claims(verdicts):
    return pd.DataFrame([{"claim": c, "id": c.split(".")[0], "scope": "any", "verdict": v, "reason": f"reads {v}",
                          "conclusion": f"{c}.", "doc": "000", "section": "s"} for c, v in verdicts.items()])


def test_claim_changes_list_the_changed_verdicts_first():
    from adbench.history.changes import CLAIM_COLUMNS, claim_changes
    old = _claims({"S1.a": "holds", "S2.b": "holds", "S3.c": "fails", "S9.gone": "holds"})
    new = _claims({"S1.a": "holds", "S2.b": "fails", "S3.c": "holds", "S4.new": "fails"})
    out = claim_changes(old, new, "arch", "then-env", "now-env")
    assert list(out.columns) == CLAIM_COLUMNS
    assert out.claim.tolist() == ["S2.b", "S3.c", "S1.a", "S4.new", "S9.gone"]   # changed first, in table order
    assert out.status.tolist() == ["changed", "changed", "same", "new", "removed"]
    assert out.changed.tolist() == [True, True, False, False, False]
    b = out.set_index("claim").loc["S2.b"]
    assert (b.old, b.new, b.old_reason, b.new_reason) == ("holds", "fails", "reads holds", "reads fails")
    assert b.archive == "arch"
    same = claim_changes(new, new, "arch")   # negative control: the same verdicts change nothing
    assert not same.changed.any() and set(same.status) == {"same"}


def test_an_archive_without_claims_records_none_and_still_loads(tmp_path):
    from adbench.history.changes import NO_CLAIMS, compare_runs
    cmp = pd.DataFrame([{"id": "S1", "quantity": "g", "documented": "1.0", "measured": 1.0, "kind": "exact"}])
    for name, with_claims in (("old", False), ("new", True)):
        (tmp_path / name).mkdir()
        cmp.to_csv(tmp_path / name / "comparison.csv", index=False)
        (tmp_path / name / "MANIFEST.json").write_text(json.dumps({"versions": {"torch": "2.13.0"}, "device": "cpu"}))
        if with_claims:
            _claims({"S1.a": "fails"}).to_csv(tmp_path / name / "claims.csv", index=False)
    out = compare_runs(cmp, [str(tmp_path / "old"), str(tmp_path / "new")], 0.05, {"versions": {}, "device": "cpu"},
                          claims=_claims({"S1.a": "holds"}))
    by = out["claims_changes"].set_index("archive")
    assert by.loc["old", "status"] == "unrecorded" and by.loc["old", "old_reason"] == NO_CLAIMS
    assert by.loc["new", ["old", "new", "status"]].tolist() == ["fails", "holds", "changed"]
    assert out["changes"].archive.tolist() == ["old", "new"]   # the numbers are compared as before


# --- when a timing has moved: Mann-Whitney on the raw samples, effect threshold, provenance ---
import itertools  # noqa: E402
import json  # noqa: E402

import numpy as np  # noqa: E402

from adbench.history.timing_moves import mann_whitney, sample_test, timing_moved  # noqa: E402


def test_mann_whitney_matches_published_values():
    # scipy.stats.mannwhitneyu documentation example (Conover): U = 17, exact p = 0.1111..., asymptotic 0.11134688...
    males, females = [19, 22, 16, 29, 24], [20, 11, 17, 12]
    assert mann_whitney(males, females) == (17.0, pytest.approx(0.1111111111111111, abs=1e-15))
    u, p = mann_whitney(males, females, exact=False)
    assert u == 17.0 and p == pytest.approx(0.11134688653314041, rel=1e-12)


def test_mann_whitney_exact_against_enumeration():
    rng = np.random.default_rng(3)
    x, y = rng.normal(size=4), rng.normal(0.8, size=5)
    u, p = mann_whitney(x, y)
    pooled = np.concatenate([x, y])
    us = [sum(a > b for a in pooled[list(c)] for b in np.delete(pooled, list(c))) for c in itertools.combinations(range(9), 4)]
    assert u == sum(a > b for a in x for b in y)
    tail = min(u, 20 - u)
    assert p == pytest.approx(2 * sum(v <= tail for v in us) / len(us))


def test_mann_whitney_separates_shift_from_same_distribution():
    rng = np.random.default_rng(0)
    a, b = rng.lognormal(0, 0.05, 30), rng.lognormal(0, 0.05, 30)
    assert mann_whitney(a, b)[1] > 0.05            # negative control: same distribution
    assert mann_whitney(a, b * 1.3)[1] < 1e-6      # 30 % slower


def _samples(tape, torch, processes=1):
    rows = [{"process": p, "round": r, "candidate": c, "per_call_us": v}
            for p in range(1, processes + 1) for c, vals in (("tape", tape), ("torch", torch)) for r, v in enumerate(vals)]
    return pd.DataFrame(rows)


def test_sample_test_needs_significance_and_effect():
    rng = np.random.default_rng(1)
    base = rng.lognormal(np.log(5000), 0.02, 11)
    torch = rng.lognormal(np.log(8), 0.02, 11)
    old = _samples(base, torch)
    assert sample_test(old, _samples(base * 1.3, torch), "tape_median_min_us", 0.10)[0]        # significant, +30 %
    assert not sample_test(old, _samples(base * 1.05, torch), "tape_median_min_us", 0.10)[0]   # significant, +5 %
    assert not sample_test(old, _samples(base * 1.3, torch), "torch_median_max_us", 0.10)[0]   # other candidate
    assert sample_test(old, _samples(base * 1.3, torch), "ratio_max", 0.10)[0]                 # the paired ratio moved
    few = _samples(base[:3], torch[:3])
    assert not sample_test(few, _samples(base[:3] * 1.3, torch[:3]), "tape_median_min_us", 0.10)[0]  # 3 vs 3: p >= 0.1


def test_sample_test_reads_the_declared_pair_from_a_file_of_four_candidates():
    """A samples file with two architectures' candidates (G6): each quantity's pair comes from the job's declared
    timing pairs (timing_pairs.csv, as gpt2.memory.timing_pairs writes it)."""
    from adbench.gpt2.memory import timing_pairs

    rng = np.random.default_rng(2)
    plain, ckpt = rng.lognormal(np.log(6000), 0.02, 11), rng.lognormal(np.log(6500), 0.02, 11)

    def g6(nano_ckpt_scale):
        rows = [{"round": r, "candidate": c, "per_call_us": v} for c, vals in
                (("plain", plain), ("checkpoint", ckpt), ("nanogpt_plain", plain), ("nanogpt_checkpoint", ckpt * nano_ckpt_scale))
                for r, v in enumerate(vals)]
        return pd.DataFrame(rows)
    old, new = g6(1.0), g6(1.4)  # only nanoGPT's checkpointed time moved
    pairs = (timing_pairs(), timing_pairs())
    assert sample_test(old, new, "checkpoint_time_overhead_pct", 0.10, pairs)[0]                   # the documents' pair
    assert not sample_test(old, new, "checkpoint_time_overhead_pct_transformers", 0.10, pairs)[0]  # control: the other
    with pytest.raises(ValueError, match="expected two candidates"):  # four candidates and no declared pair: an error
        sample_test(old, new, "checkpoint_time_overhead_pct_transformers", 0.10)


# Two machines of one name: the AVX-512 one the reference ran on, and an AVX2-only one (issue 34's AMD EPYC pair).
AVX512 = {"cpu_model": "AMD EPYC", "vector_extensions": ["avx2", "avx512f", "avx512_bf16"], "cpu_count": 2,
          "memory_bytes": 24 * 2**30, "gpu": {"name": "", "count": 0, "memory_bytes": None, "driver": "", "cuda": ""}}
AVX2 = {**AVX512, "vector_extensions": ["avx2"], "memory_bytes": 16 * 2**30}


def _run(root, tape, torch, code="abc", torch_version="2.13.0", machine=AVX512):
    """A run folder holding S9's samples and meta.json (`machine` None: written before machine identity)."""
    (root / "S9").mkdir(parents=True)
    _samples(tape, torch, processes=2).to_csv(root / "S9/samples.csv", index=False)
    meta = {"code_hash": code, "versions": {"torch": torch_version, "snakemake": "9"}, "cpu_model": "AMD EPYC",
            "cpu_count": 2}
    (root / "S9/meta.json").write_text(json.dumps(meta | ({"machine": machine} if machine else {})))
    return root


def test_timing_moved_labels_noise_when_provenance_is_unchanged(tmp_path):
    rng = np.random.default_rng(2)
    tape, torch = rng.lognormal(np.log(5000), 0.02, 11), rng.lognormal(np.log(8), 0.02, 11)
    old = _run(tmp_path / "old", tape, torch)
    same_env = _run(tmp_path / "same", tape * 1.3, torch)
    bumped = _run(tmp_path / "bumped", tape * 1.3, torch, torch_version="2.14.1")
    calm = _run(tmp_path / "calm", tape * 1.02, torch, torch_version="2.14.1")
    assert timing_moved("S9", "tape_median_min_us", old, same_env, 0.10)[0] == "noise"
    assert timing_moved("S9", "tape_median_min_us", old, bumped, 0.10)[0] == "moved"
    assert timing_moved("S9", "tape_median_min_us", old, calm, 0.10)[0] == "same"


def test_changes_prints_documented_digits_and_uses_raw_samples(tmp_path):
    rng = np.random.default_rng(4)
    tape, torch = rng.lognormal(np.log(5000), 0.02, 11), rng.lognormal(np.log(8), 0.02, 11)
    old_root = _run(tmp_path / "old", tape, torch)
    new_root = _run(tmp_path / "new", tape * 1.08, torch, torch_version="2.14.1")  # S9 ~8 % slower
    old = _cmp([("S9", "tape_median_min_us", "6474.8", 4850.123456, "timing"),
                ("S9", "tape_median_max_us", "6474.8", 5261.98765, "timing")])
    new = _cmp([("S9", "tape_median_min_us", "6474.8", 4511.5555, "timing"),
                ("S9", "tape_median_max_us", "6474.8", 4650.0001, "timing")])
    out = changes(old, new, "a", "x", "y", 0.05, 0.10, old_root, new_root).set_index("quantity")
    assert out.loc["tape_median_min_us", "old"] == "4850.1" and out.loc["tape_median_max_us", "old"] == "5262.0"
    assert out.loc["tape_median_min_us", "new"] == "4511.6" and out.loc["tape_median_max_us", "new"] == "4650.0"
    assert not out.moved.any() and out.rule.str.contains("Mann-Whitney").all()   # spans disjoint, effect < 10 %
    moved_root = _run(tmp_path / "moved", tape * 1.25, torch, torch_version="2.14.1")
    out = changes(old, new, "a", "x", "y", 0.05, 0.10, old_root, moved_root)
    assert out.moved.all() and (out.status == "moved").all()


# --- one tolerance rule: the verdict and "what moved" measure against the same allowance -------------
import csv  # noqa: E402
import io  # noqa: E402

from adbench.verdicts import documented  # noqa: E402
from adbench.verdicts.tolerance import declared_spec, describe, parse_spec  # noqa: E402
from adbench.verdicts.verdict import compare, verdict  # noqa: E402

# (kind, documented, declared tolerance, old, new, moved). Every old value is the documented decimal
# exactly (a dyadic number), so "moved" must equal "the verdict rejects the new value". Before the
# shared allowance, changes.moved used the printed digits for every pinned row (ignoring abs:, rel:,
# sig:, so a rounding row moved with its libm digits) and compared texts without whitespace
# normalisation. It disagreed with the verdict on the rows marked "was": moved where the verdict still
# matched, or, where rel: is narrower than the printed digits, not moved where the verdict rejects.
DISAGREED = [
    ("exact", "0.0000", "abs:1e-15", 0.0, 3e-17, False),      # printed zero with a declared abs: (was moved)
    ("exact", "0.0000", "abs:1e-15", 0.0, 3e-14, True),       # negative control: beyond it
    ("exact", "0.25", "abs:0.01", 0.25, 0.258, False),        # abs: on a nonzero row (was moved: ±0.005)
    ("exact", "0.25", "abs:0.01", 0.25, 0.2625, True),
    ("exact", "0.5", "rel:0.01", 0.5, 0.504, False),          # rel: allows ±0.005 ...
    ("exact", "0.5", "rel:0.01", 0.5, 0.5078125, True),       # ... so this moved (was not: ±0.05)
    ("exact", "6.25", "sig:2", 6.25, 6.28125, False),         # sig:2 allows ±0.05 (was moved: ±0.005)
    ("exact", "6.25", "sig:2", 6.25, 6.3125, True),
    ("rounding", "0.125", "rel:0.5", 0.125, 0.15625, False),  # libm digits: differs, not moved (was moved)
    ("rounding", "0.125", "rel:0.5", 0.125, 0.25, True),      # outside the declared tolerance: MISMATCH
    ("rounding", "0.375", "sig:2", 0.375, 0.37890625, False),  # sig:2 allows ±0.005 (was moved: ±0.0005)
    ("rounding", "0.375", "sig:2", 0.375, 0.3876953125, True),
    ("exact", "exactly", "", "exactly", "  exactly\n", False),  # whitespace only (was moved: str differs)
    ("exact", "exactly", "", "exactly", "Exactly", True),
    ("exact", "0", "", 0.0, -0.0, False),                     # agreed already: a printed zero means exactly 0
    ("exact", "0", "", 0.0, 5e-324, True),
    ("exact", "inf", "", math.inf, math.inf, False),          # exact decimal arithmetic must not trip on inf
    ("exact", "inf", "", math.inf, 1e308, True),
]


@pytest.mark.parametrize("kind, doc, spec, old, new, expected", DISAGREED)
def test_moved_and_the_verdict_apply_one_allowance(kind, doc, spec, old, new, expected):
    status = verdict(kind, doc, new, tolerance=spec)[0]
    assert verdict(kind, doc, old, tolerance=spec)[0] == "match"        # the old run sits at the documented value
    assert (status == "MISMATCH") == expected                            # the verdict's answer ...
    cell = describe(doc, parse_spec(spec)) if parse_printed(doc) else ""
    assert moved(kind, doc, old, new, 0.05, cell)[0] == expected         # ... is the history's, from its column
    assert moved(kind, doc, old, new, 0.05, spec)[0] == expected         # ... or from the documented table's


def test_moved_compares_in_exact_decimal_arithmetic_like_the_verdict():
    # float subtraction gives 0.122 - 0.072 = 0.049999999999999996, inside ±0.05; the binary values differ by
    # 0.0500000000000000027...: beyond it, as `within` measures (the old float rule said not moved)
    assert 0.122 - 0.072 <= 0.05 and moved("exact", "0.1", 0.072, 0.122, 0.05)[0]
    assert not moved("exact", "0.1", 0.072, 0.1219, 0.05)[0]                      # control: inside


def test_shipped_tolerances_survive_the_comparison_column():
    # changes reads the declared tolerance back from comparison.csv's words: none may lose digits there
    doc = documented.load()
    for r in doc[doc.tolerance != ""].itertuples():
        assert declared_spec(describe(r.documented, parse_spec(r.tolerance))) == parse_spec(r.tolerance), r
    assert declared_spec(describe("0.25", None)) is None and declared_spec("exactly 0") is None
    assert describe("1", ("rel", 1.2345678e-3)) == "rel:0.0012345678"  # :g would print 0.00123457


def _documented(rows, tmp_path):
    path = tmp_path / "documented.csv"
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(documented.COLUMNS)
        for i, (kind, doc, spec, *_rest) in enumerate(rows):
            row = {"id": "X1", "quantity": f"q{i}", "description": "d", "documented": doc, "kind": kind,
                   "doc": "000", "section": "s", "tolerance": spec, "note": "this row's reason" if spec else ""}
            w.writerow([row.get(c, "") for c in documented.COLUMNS])
    return documented.load(path)


def _as_read_back(df):
    """A comparison as rule changes reads it: through its CSV."""
    return pd.read_csv(io.StringIO(df.to_csv(index=False)))


def test_changes_of_two_comparisons_moves_exactly_where_the_verdict_rejects(tmp_path):
    rows = [c for c in DISAGREED if c[1] != "inf"]   # infinities do not survive a values.csv as floats
    doc = _documented(rows, tmp_path)
    values = lambda col: pd.DataFrame({"id": "X1", "quantity": [f"q{i}" for i in range(len(rows))],  # noqa: E731
                                       "value": [r[col] for r in rows], "note": ""})
    old, new = _as_read_back(compare(doc, values(3))), _as_read_back(compare(doc, values(4)))
    out = changes(old, new, "a", "x", "y", 0.05).set_index("quantity").loc[new.quantity]
    assert out.moved.tolist() == [r[5] for r in rows]
    assert out.moved.tolist() == (new.status == "MISMATCH").tolist()
    numeric = new.tolerance.str.contains(r"\d").to_numpy()
    assert (out.rule.to_numpy()[numeric] == new.tolerance.to_numpy()[numeric]).all()  # the rule is its column
