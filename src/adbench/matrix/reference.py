"""`make reference`, after the matrix of reference/matrix.yaml ran: reference/ from its results.

The command lives with the matrix (it reads the matrix's entries and runs); what it writes, and how, is
adbench.history.reference, which imports nothing from here: the history layer sits below the matrix."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import yaml

from ..history.reference import build, locked_entry
from .entries import entries, project_pins


def main(argv: list[str] | None = None) -> int:
    """Write reference/ from the matrix run's statuses, history and the locked stack's archive."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
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
