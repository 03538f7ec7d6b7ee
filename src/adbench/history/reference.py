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


def jobs_run(run_cost: Path) -> tuple[int | None, float | None]:
    """(jobs, job seconds) the entry's last inner run executed, from its results/run_cost.csv (None without one):
    an entry re-run after a change runs only what the change affects, so its run time is not a full run's."""
    if not run_cost.exists():
        return None, None
    import pandas as pd

    d = pd.read_csv(run_cost)
    run = dict(zip(d.loc[d.kind == "run", "name"], d.loc[d.kind == "run", "value"]))
    return (int(run["jobs"]) if "jobs" in run else None), run.get("job_time_s")


def entry_costs(statuses: list[dict], envs: Path, runs: Path | None = None) -> list[dict]:
    """One row per matrix entry: its overrides and installed torch/transformers, the environment's build time (from
    its stamp: the build that made it) and new disk, the run time and how many jobs that run executed, the lock and
    the status."""
    rows = []
    for s in statuses:
        env = envs / s["entry"]
        stamp = env / "adbench-env.json"
        record = json.loads(stamp.read_text()) if stamp.exists() else {}
        versions = s.get("versions", {})
        jobs, job_s = jobs_run(runs / s["entry"] / "results/run_cost.csv") if runs else (None, None)
        rows.append({"entry": s["entry"], "overrides": s.get("overrides", {}), "torch": versions.get("torch"),
                     "transformers": versions.get("transformers"), "ok": bool(s.get("ok")),
                     "label": s.get("label", ""), "env_build_s": record.get("build_s"),
                     "env_new_mb": round(new_bytes(env) / 2**20, 1) if env.exists() else None,
                     "run_s": s.get("run_s"), "jobs_run": jobs, "job_time_s": job_s,
                     "lock_sha256": s.get("lock_sha256", ""), "error": s.get("error", "")})
    return rows


def invocations(previous: Path, wall_s: float | None) -> list[dict]:
    """Every `make reference` that wrote this folder, oldest first, this one last: (date, matrix wall seconds).
    The first builds every entry; a later one re-runs only what changed (seconds when nothing did)."""
    before = []
    if previous.exists():
        old = json.loads(previous.read_text())
        before = old.get("invocations") or [{"date": old.get("date"), "wall_s": old.get("matrix_wall_s")}]
    return [*before, {"date": date.today().isoformat(), "wall_s": wall_s}]


def readme(info: dict) -> str:
    """reference/README.md: what the folder holds, where it came from, each entry's cost, and how to compare."""
    m = info["machine"]
    lines = [
        "# Reference history (generated by `make reference`; do not edit)", "",
        f"The version matrix of `reference/matrix.yaml`, every entry the full default pipeline, run on "
        f"{info['date']} on {m['platform']} ({m['cpus']} CPUs, Python {m['python']}).", "",
        "- `history.html`, `history.csv`: every claim's verdict and every documented quantity per entry, the first "
        "entry where it moved, and why (the note column, from `src/adbench/data/history_notes.csv`).",
        "- `reference.json`: the machine, the date and each entry's record below (lock sha256 included).",
        f"- `{info['archive'][len('reference/'):]}/`: the compact archive of the locked stack "
        f"(entry `{info['locked_entry']}`): comparison, claims, every values.csv and meta.json, the pooled timing "
        "samples and the lock. Compare your run with it:", "",
        "  ```yaml", f"  compare_to: [{info['archive']}]", "  ```", "",
        "| entry | torch | transformers | status | env build | env new disk | last run | jobs in it | lock |",
        "|---|---|---|---|---|---|---|---|---|"]
    for e in info["entries"]:
        status = "ok" if e["ok"] else f"failed: {e['error']}"
        build = "" if e["env_build_s"] is None else f"{e['env_build_s']:.0f} s"
        disk = "" if e["env_new_mb"] is None else f"{e['env_new_mb']:,.0f} MB"
        run = "" if e["run_s"] is None else f"{e['run_s']:.0f} s"
        jobs = "" if e.get("jobs_run") is None else str(e["jobs_run"])
        lines.append(f"| {e['entry']} | {e['torch'] or ''} | {e['transformers'] or ''} | {status} | {build} | {disk} "
                     f"| {run} | {jobs} | `{(e['lock_sha256'] or '')[:12]}` |")
    walls = [f"{i['wall_s']:.0f} s ({i['date']})" for i in info.get("invocations", []) if i.get("wall_s") is not None]
    lines += ["", "Env new disk: what the environment adds beyond the files it hard-links from uv's cache. Last run: "
              "the entry's latest inner Snakemake run, which executes only the jobs a change affected (jobs in it).",
              "", f"`make reference` wall time, each invocation that wrote this folder: {', '.join(walls)}."
              if walls else "", ""]
    return "\n".join(lines)


def build(dest: Path, history_csv: Path, history_html: Path, statuses: list[dict], envs: Path, archives: Path,
          locked: str, matrix_wall_s: float | None = None, runs: Path | None = None) -> dict:
    """reference/: the history (csv and page), reference.json (machine, date, each entry's cost and lock),
    README.md (the same, to read) and archive/<label>/, the compact archive of the entry `locked` (the locked stack)."""
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copy2(history_csv, dest / "history.csv")
    shutil.copy2(history_html, dest / "history.html")
    costs = entry_costs(statuses, envs, runs)
    label = next(s["label"] for s in statuses if s["entry"] == locked and s.get("ok"))
    shutil.rmtree(dest / "archive", ignore_errors=True)
    compact(archives / label, dest / "archive" / label)
    info = {"date": date.today().isoformat(), "machine": {"platform": platform.platform(), "cpus": os.cpu_count(),
                                                        "python": sys.version.split()[0]},
            "matrix_wall_s": matrix_wall_s, "locked_entry": locked, "archive": f"reference/archive/{label}",
            "entries": costs, "invocations": invocations(dest / "reference.json", matrix_wall_s)}
    write_json(info, dest / "reference.json")
    (dest / "README.md").write_text(readme(info), encoding="utf-8")
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
                 a.wall, runs)
    print(f"reference: {len(statuses)} entries ({sum(s.get('ok', False) for s in statuses)} succeeded), "
          f"{info['bytes'] / 2**20:.1f} MB in {a.dest}/; compare with it: compare_to: [{info['archive']}]")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
