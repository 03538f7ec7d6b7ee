"""Rule render_strict_check (config `strict: true`): after the report is written, fail the run, naming every
claim that regressed against the compared run and every MISMATCH / MISSING row (adbench.verdicts.strict).
A check, not a measurement: its own script, which exits 1 (so Snakemake fails the job and the run) and
writes its stamp only when the check passes."""

import sys
from pathlib import Path

from adbench.verdicts.strict import run

log = Path(snakemake.log[0])  # noqa: F821 - injected by Snakemake
log.parent.mkdir(parents=True, exist_ok=True)
with log.open("w", encoding="utf-8") as record:

    def echo(line):
        print(line, file=sys.stderr, flush=True)
        print(line, file=record, flush=True)

    ok = run(
        snakemake.input.comparison,  # noqa: F821
        snakemake.input.claims_changes,  # noqa: F821
        snakemake.input.claims,  # noqa: F821
        list(snakemake.params.compared),  # noqa: F821
        snakemake.output.stamp,  # noqa: F821
        report=snakemake.input.report,  # noqa: F821
        echo=echo,
    )
sys.exit(0 if ok else 1)
