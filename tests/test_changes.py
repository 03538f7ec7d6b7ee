"""Version comparison: what moved between two result sets, and the archive's refusal to clobber."""

from datetime import date

import pandas as pd
import pytest

from adbench.report.changes import changes, default_label, moved, snapshot


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
    m = snapshot(files, str(results), str(dest), False, {"label": "a"})
    assert m["files"] == ["S1/values.csv", "comparison.csv"] and (dest / "MANIFEST.json").exists()
    (results / "S1/values.csv").write_text("changed\n")
    with pytest.raises(FileExistsError, match="archive.overwrite"):
        snapshot(files, str(results), str(dest), False, {"label": "a"})
    assert "S1,g,1.0" in (dest / "S1/values.csv").read_text()
    snapshot(files, str(results), str(dest), True, {"label": "a"})
    assert (dest / "S1/values.csv").read_text() == "changed\n"
    assert sorted(p.name for p in dest.parent.iterdir()) == ["a"]  # no staging leftovers
