"""The shipped reference history: the version matrix's history page and table at full size, what each entry cost,
and a compact archive of the locked stack's run that a user's `compare_to` can name (reference/, `make reference`).

Compact: what "What changed" reads of an archive and nothing else: the comparison, the claims, every values.csv
and meta.json (provenance decides whether a timing move is noise), the pooled timing samples a move is tested on
(with their declared pairs), the lock and the manifest. No weights, no per-process samples, no figures.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import sys
from datetime import date
from pathlib import Path

from ..io import write_json
from .timing_moves import pairs_file, sample_file

KEEP = ("comparison.csv", "claims.csv", "claims_summary.csv", "lock.txt")
LIMIT_BYTES = 10 * 2**20  # reference/ stays small enough to commit


def compact_files(archive: Path) -> list[Path]:
    """The files of `archive` a later run's "What changed" reads (relative paths)."""
    keep = [Path(k) for k in KEEP if (archive / k).exists()]
    for values in sorted(archive.rglob("values.csv")):
        mid = values.parent.relative_to(archive)
        keep.append(mid / "values.csv")
        if (archive / mid / "meta.json").exists():
            keep.append(mid / "meta.json")
        top = Path(mid.parts[0])
        for found in (sample_file(archive, str(top)), pairs_file(archive, str(top))):
            if found is not None:
                keep.append(found.relative_to(archive))
    return sorted(set(keep))


def compact(archive: Path, dest: Path) -> dict:
    """Copy the compact part of `archive` to `dest` (replacing it) with a manifest that lists exactly those files."""
    manifest = json.loads((archive / "MANIFEST.json").read_text())
    files = compact_files(archive)
    if dest.exists():
        shutil.rmtree(dest)
    for rel in files:
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(archive / rel, dest / rel)
    manifest = {**manifest, "files": [str(f) for f in files], "compacted_from": str(archive)}
    write_json(manifest, dest / "MANIFEST.json")
    return manifest


def new_bytes(folder: Path) -> int:
    """Disk a folder adds beyond what it shares by hard links (uv links its cache's files into environments):
    the sizes of the files only it holds."""
    total = 0
    for root, _, names in os.walk(folder):
        for n in names:
            st = os.lstat(os.path.join(root, n))
            if st.st_nlink == 1:
                total += st.st_size
    return total


def entry_costs(statuses: list[dict], envs: Path) -> list[dict]:
    """One row per matrix entry: its overrides and installed torch/transformers, the environment's build time (from
    its stamp: the build that made it) and new disk, the run time, the lock and the status."""
    rows = []
    for s in statuses:
        env = envs / s["entry"]
        stamp = env / "adbench-env.json"
        record = json.loads(stamp.read_text()) if stamp.exists() else {}
        versions = s.get("versions", {})
        rows.append({"entry": s["entry"], "overrides": s.get("overrides", {}), "torch": versions.get("torch"),
                     "transformers": versions.get("transformers"), "ok": bool(s.get("ok")),
                     "label": s.get("label", ""), "env_build_s": record.get("build_s"),
                     "env_new_mb": round(new_bytes(env) / 2**20, 1) if env.exists() else None,
                     "run_s": s.get("run_s"), "lock_sha256": s.get("lock_sha256", ""), "error": s.get("error", "")})
    return rows


def build(dest: Path, history_csv: Path, history_html: Path, statuses: list[dict], envs: Path, archives: Path,
          locked: str, matrix_wall_s: float | None = None) -> dict:
    """reference/: the history (csv and page), entries.json (each entry's cost), reference.json (machine, date,
    locks) and archive/<label>/, the compact archive of the entry `locked` (the locked stack)."""
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copy2(history_csv, dest / "history.csv")
    shutil.copy2(history_html, dest / "history.html")
    costs = entry_costs(statuses, envs)
    label = next(s["label"] for s in statuses if s["entry"] == locked and s.get("ok"))
    shutil.rmtree(dest / "archive", ignore_errors=True)
    compact(archives / label, dest / "archive" / label)
    info = {"date": date.today().isoformat(), "machine": {"platform": platform.platform(), "cpus": os.cpu_count(),
                                                        "python": sys.version.split()[0]},
            "matrix_wall_s": matrix_wall_s, "locked_entry": locked, "archive": f"reference/archive/{label}",
            "entries": costs}
    write_json(info, dest / "reference.json")
    size = sum(p.stat().st_size for p in dest.rglob("*") if p.is_file())
    if size > LIMIT_BYTES:
        raise ValueError(f"reference/ holds {size / 2**20:.1f} MB, above its {LIMIT_BYTES / 2**20:.0f} MB limit")
    return info | {"bytes": size}


def locked_entry(matrix: dict[str, dict], pins: dict[str, str]) -> str:
    """The entry that holds the project's own pins (the locked stack): every override equals its pin (a local
    build tag such as +cpu aside)."""
    from ..matrix.entries import canonical

    for name, overrides in matrix.items():
        if all(pins.get(canonical(k), "").split("+")[0] == v.split("+")[0] for k, v in overrides.items()):
            return name
    raise ValueError("no matrix entry holds the project's pins: the reference needs the locked stack's run")


def main(argv: list[str] | None = None) -> int:
    """`make reference`, after the matrix of reference/matrix.yaml ran: write reference/ from its results."""
    import argparse

    import yaml

    from ..matrix.entries import entries, project_pins

    p = argparse.ArgumentParser(description=main.__doc__)
    p.add_argument("--matrix", default="reference/matrix.yaml", help="the overlay listing the tested range")
    p.add_argument("--dest", default="reference")
    p.add_argument("--wall", type=float, default=None, help="the matrix run's wall seconds")
    a = p.parse_args(argv)
    matrix = entries(yaml.safe_load(Path(a.matrix).read_text())["matrix"])
    runs = Path(".matrix/runs")
    statuses = [json.loads((runs / e / "status.json").read_text()) for e in matrix]
    info = build(Path(a.dest), Path("results/history.csv"), Path("report/history.html"), statuses,
                 Path(".matrix/envs"), Path("archive"), locked_entry(matrix, project_pins(Path("pyproject.toml"))),
                 a.wall)
    print(f"reference: {len(statuses)} entries ({sum(s.get('ok', False) for s in statuses)} succeeded), "
          f"{info['bytes'] / 2**20:.1f} MB in {a.dest}/; compare with it: compare_to: [{info['archive']}]")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
