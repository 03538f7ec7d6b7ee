"""Rule matrix_run: the measurement pipeline in one entry's environment, each measurement its own inner job."""

import json
from pathlib import Path

from adbench.jobs import run_job
from adbench.matrix.run import run_entry

run_job(snakemake, run_entry,  # noqa: F821 - injected by Snakemake
        env=json.loads(Path(snakemake.input.env).read_text()), cores=snakemake.threads,  # noqa: F821
        mem_mb=snakemake.resources.get("mem_mb"))  # noqa: F821
