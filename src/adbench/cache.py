"""Integrity of the cache: is each cached file still what its job wrote?

Every job run through adbench.jobs records the sha256 of each output it declared in
results/.manifests/<job>.json (jobs.write_manifest). `check(paths)` compares files against those
records; the report withholds verdicts from a file that changed (adbench.verdicts.job) and names it
in its banner (adbench.render.page). `python -m adbench.cache`, the first step of `make report`
after adbench.recover, deletes each recorded file that changed, printing one line for it, so that
Snakemake re-runs the job that writes it (every registered output is a target of rule all).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

MANIFESTS = "results/.manifests"
CHANGED = "changed after its job wrote it"
MISSING = "missing"
NO_RECORD = "no record"  # e.g. written before jobs kept records: not known to be changed, not vouched for


def sha256_file(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def records(manifests: str | Path = MANIFESTS) -> dict[str, dict]:
    """Path -> {sha256, rule, wildcards} from every job record. A path two records claim (a rule
    renamed since an old record) takes the newer record's hash: the file's last writer."""
    out: dict[str, dict] = {}
    found = []
    for f in sorted(Path(manifests).glob("*.json")):
        try:
            found.append(json.loads(f.read_text(encoding="utf-8")))
        except (OSError, ValueError):
            continue  # an unreadable record vouches for nothing: its files read as "no record"
    for rec in sorted(found, key=lambda r: r.get("written_ns", 0)):
        for path, digest in (rec.get("outputs_sha256") or {}).items():
            out[path] = {"sha256": digest, "rule": rec.get("rule"), "wildcards": rec.get("wildcards") or {}}
    return out


def check(paths: list[str], manifests: str | Path = MANIFESTS) -> list[tuple[str, str]]:
    """(path, problem) for each of `paths` that is not what its job wrote: CHANGED, MISSING or NO_RECORD;
    [] when every file matches its record."""
    recs = records(manifests)
    problems = []
    for path in dict.fromkeys(map(str, paths)):
        if not Path(path).exists():
            problems.append((path, MISSING))
        elif path not in recs:
            problems.append((path, NO_RECORD))
        elif sha256_file(path) != recs[path]["sha256"]:
            problems.append((path, CHANGED))
    return problems


def job_name(rec: dict) -> str:
    """'scalar_s2', 'charlm_train (variant=correct)'."""
    wc = ", ".join(f"{k}={v}" for k, v in rec["wildcards"].items())
    return f"{rec['rule']} ({wc})" if wc else str(rec["rule"])


# What `make report` rebuilds: rule all's targets live here. Not archive/: the archive rule is no target,
# so a file deleted there would not come back.
RESTORED = ("results", "report")


def restore(manifests: str | Path = MANIFESTS) -> list[str]:
    """Delete every recorded file under RESTORED that changed after its job wrote it, so that Snakemake
    re-runs that job; one line per changed or missing file. Files without a record are left alone
    (nothing says they changed)."""
    recs = records(manifests)
    lines = []
    for path, problem in check([p for p in recs if Path(p).parts[0] in RESTORED], manifests):
        if problem == CHANGED:
            Path(path).unlink()
        lines.append(f"adbench: {path} {problem}: re-running {job_name(recs[path])}")
    return lines


def main(argv: list[str] | None = None) -> int:
    """CLI: python -m adbench.cache [--manifests DIR] (run in the project directory)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--manifests", default=MANIFESTS)
    args = parser.parse_args(argv)
    for line in restore(args.manifests):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
