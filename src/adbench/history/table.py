"""History across runs: every documented quantity per run, and the first run at which it moved."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from ..io import read_csv
from ..missing import is_missing
from .changes import archived_claims, changes, printed
from .archive import environment_line

CORE = ("python", "torch", "transformers", "numpy")


def run_from_archive(path: Path, source: str) -> dict:
    """A history run from an archive folder (its MANIFEST.json says which environment made it)."""
    manifest = json.loads((Path(path) / "MANIFEST.json").read_text())
    return {"label": Path(path).name, "source": source, "root": Path(path), "ok": True, "error": "",
            "versions": manifest.get("versions", {}), "device": manifest.get("device", "?"),
            "lock_sha256": manifest.get("lock_sha256", "")}


def run_from_status(status: dict, archive_dir: Path, device: str) -> dict:
    """A history run from a matrix entry's status.json (failed entries have no archive)."""
    root = Path(archive_dir) / status["label"] if status.get("ok") else None
    return {"label": status["label"] or status["entry"], "source": f"matrix entry {status['entry']}",
            "root": root, "ok": bool(status.get("ok")), "error": status.get("error", ""),
            "versions": status.get("versions", {}), "device": device, "stage": status.get("stage", ""),
            "lock_sha256": status.get("lock_sha256", "")}  # the entry's own lock (archived as lock.txt)


def varying(runs: list[dict]) -> tuple[str, ...]:
    """Packages beyond torch/transformers/numpy whose version is not the same in every run."""
    names = sorted({k for r in runs for k in r["versions"]} - set(CORE))
    return tuple(k for k in names if len({r["versions"].get(k) for r in runs if r["versions"]}) > 1)


def env_line(run: dict, extra: tuple[str, ...] = ()) -> str:
    """'torch 2.13.0, transformers 5.24.0, numpy 2.4.6, matplotlib 3.10.9, cpu'."""
    v = run["versions"]
    keys = [k for k in (*CORE[1:], *extra) if k in v]
    return ", ".join([f"{k} {v[k]}" for k in dict.fromkeys(keys)] + [run.get("device", "?")])


def measured(root: Path, documented: pd.DataFrame) -> pd.DataFrame:
    """id, quantity, kind, documented, tolerance, measured of one run: its comparison.csv, else its values.csv
    files (a matrix run restricted to a few targets has no comparison). Kind, documented value and declared
    tolerance come from the documented table, so every run is held to the same rows."""
    cols = ["id", "quantity", "kind", "documented", "tolerance", "measured"]
    if (Path(root) / "comparison.csv").exists():
        cmp = read_csv(Path(root) / "comparison.csv")[["id", "quantity", "measured"]]
    else:
        frames = [read_csv(p) for p in sorted(Path(root).rglob("values.csv"))]
        vals = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=["id", "quantity", "value"])
        cmp = vals.rename(columns={"value": "measured"})[["id", "quantity", "measured"]]
    cmp = cmp.drop_duplicates(["id", "quantity"], keep="last")
    return documented[["id", "quantity", "kind", "documented", "tolerance"]].merge(cmp, on=["id", "quantity"],
                                                                                  how="left")[cols]


def _value(x):
    return None if is_missing(x) else x


CLAIM_KIND = "claim"
NOT_RECORDED = "not recorded"  # a claim cell of a run whose archive holds no claims.csv


def claim_rows(runs: list[dict], claims: pd.DataFrame | None = None, extra: tuple[str, ...] = ()) -> list[dict]:
    """The history's claims block: one row per claim (kind 'claim', id its measurement, quantity the claim id,
    documented its conclusion), its verdict in each run ('not recorded' where that run holds no claims.csv,
    '' where its table had no such claim), and the first step between consecutive successful runs that both
    judged it where the verdict changed. Claims whose verdict changed anywhere come first. `claims`: the
    claims table, for the order and the conclusions (claims only older runs knew follow)."""
    ok = [r for r in runs if r["ok"]]
    judged = {r["label"]: archived_claims(r["root"]) for r in ok}
    if all(t is None for t in judged.values()):
        return []
    order: dict[str, dict] = {}
    if claims is not None:
        for c in claims.itertuples(index=False):
            order[c.claim] = {"id": c.id, "conclusion": c.conclusion}
    for t in judged.values():
        for c in ([] if t is None else t.itertuples(index=False)):
            order.setdefault(c.claim, {"id": c.id, "conclusion": c.conclusion})
    verdicts = {lab: (None if t is None else dict(zip(t.claim, t.verdict))) for lab, t in judged.items()}
    fragile = {}  # claim -> why it is fragile in some run: two machines or versions may disagree on it
    for t in judged.values():
        if t is not None and "fragile" in t:
            for c, why in zip(t.claim, t.fragile):
                if why and c not in fragile:
                    fragile[c] = why
    rows = []
    for claim, info in order.items():
        row = {"id": info["id"], "quantity": claim, "kind": CLAIM_KIND, "unit": "", "documented": info["conclusion"],
               "fragile": fragile.get(claim, "")}
        for r in runs:
            v = verdicts.get(r["label"])
            row[r["label"]] = "" if not r["ok"] else NOT_RECORDED if v is None else v.get(claim, "")
        for prev, cur in changed_cells(row, runs)[:1]:
            row |= {"first_moved_at": cur["label"], "moved_from": prev["label"], "from_env": env_line(prev, extra),
                    "to_env": env_line(cur, extra), "rule": f"verdict {row[prev['label']]} → {row[cur['label']]}"}
        rows.append(row)
    return sorted(rows, key=lambda r: "first_moved_at" not in r)  # stable: changed claims first, table order kept


def changed_cells(row: dict, runs: list[dict]) -> list[tuple[dict, dict]]:
    """(previous run, run) at every successful run where a claim row's verdict differs from the one in the
    previous successful run that judged the claim (runs without that claim or without claims are skipped)."""
    out, prev = [], None
    for r in runs:
        if not r["ok"] or row.get(r["label"], "") in ("", NOT_RECORDED):
            continue
        if prev is not None and row[r["label"]] != row[prev["label"]]:
            out.append((prev, r))
        prev = r
    return out


def history(runs: list[dict], documented: pd.DataFrame, rel_threshold: float, timing_threshold: float,
            claims: pd.DataFrame | None = None, notes: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per documented quantity (plus environment rows and, first, the claims block: claim_rows): the
    printed value in each run and the first step between consecutive successful runs where it moved, with
    both environments. `claims`: the claims table (order and conclusions of the claims block); `notes`: why a
    quantity or a claim moved across versions (id, quantity, note: data/history_notes.csv), in the note column."""
    extra = varying(runs)
    ok = [r for r in runs if r["ok"]]
    tables = {r["label"]: measured(r["root"], documented) for r in ok}
    first: dict[tuple, dict] = {}
    for prev, cur in zip(ok, ok[1:]):
        step = changes(tables[prev["label"]], tables[cur["label"]], cur["label"], env_line(prev, extra),
                       env_line(cur, extra), rel_threshold, timing_threshold, prev["root"], cur["root"])
        for r in step[step.status == "moved"].itertuples(index=False):
            first.setdefault((r.id, r.quantity), {"first_moved_at": cur["label"], "moved_from": prev["label"],
                                                  "from_env": r.old_env, "to_env": r.new_env, "rule": r.rule})
        noisy = step[step.status == "noise"]
        for r in noisy.itertuples(index=False):
            first.setdefault((r.id, r.quantity), {}).setdefault("noise_at", cur["label"])
    labels = [r["label"] for r in runs]
    every = sorted({k for r in runs for k in r["versions"]} - set(CORE))
    rows = [_env_row(p, runs, extra) for p in (*CORE, *every)]
    rows.append({"id": "run", "quantity": "status", "kind": "run",
                 **{r["label"]: "ok" if r["ok"] else f"failed ({r.get('stage', '')}): {r['error']}" for r in runs}})
    rows += claim_rows(runs, claims, extra)
    for d in documented.itertuples(index=False):
        row = {"id": d.id, "quantity": d.quantity, "kind": d.kind, "unit": d.unit, "documented": d.documented}
        for lab in labels:
            t = tables.get(lab)
            val = t.loc[(t.id == d.id) & (t.quantity == d.quantity), "measured"] if t is not None else pd.Series([])
            row[lab] = printed(d.documented, _value(val.iloc[0])) if len(val) and _value(val.iloc[0]) is not None else ""
        rows.append(row | first.get((d.id, d.quantity), {}))
    why = {} if notes is None else {(n.id, n.quantity): n.note for n in notes.itertuples(index=False)}
    rows = [r | {"note": why.get((r["id"], r["quantity"]), "")} for r in rows]
    cols = ["id", "quantity", "kind", "unit", "documented", *labels, "first_moved_at", "moved_from",
            "from_env", "to_env", "rule", "noise_at", "fragile", "note"]
    return pd.DataFrame(rows).reindex(columns=cols).astype(object).fillna("")


def _env_row(package: str, runs: list[dict], extra) -> dict:
    """Environment row: the version of `package` in each run, and the first successful run where it changed."""
    row = {"id": "env", "quantity": package, "kind": "environment"}
    prev = None
    for r in runs:
        row[r["label"]] = r["versions"].get(package, "")
        if r["ok"]:
            if prev is not None and r["versions"].get(package) != prev["versions"].get(package) \
                    and "first_moved_at" not in row:
                row |= {"first_moved_at": r["label"], "moved_from": prev["label"], "from_env": env_line(prev, extra),
                        "to_env": env_line(r, extra), "rule": "version differs"}
            prev = r
    return row


def ratio_ranges(table: pd.DataFrame, labels: list[str]) -> dict[str, list]:
    """ID -> per run (label, low, high) of its timing ratio rows (ratio_min/ratio_max, or one overhead value)."""
    out: dict[str, list] = {}
    timing = table[(table.kind == "timing") & table.unit.isin(["×", "%"])]
    for mid, g in timing.groupby("id", sort=False):
        spans = []
        for lab in labels:
            vals = [float(v.replace(",", "")) for v in g[lab] if isinstance(v, str) and _is_num(v)]
            spans.append((lab, min(vals), max(vals)) if vals else (lab, None, None))
        out[mid] = spans
    return out


def _is_num(s: str) -> bool:
    try:
        float(s.replace(",", ""))
        return True
    except ValueError:
        return False
