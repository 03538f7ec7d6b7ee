"""Rule gpt2_sequence: G5, G7, G8 and P9 from one sequence; see adbench.gpt2.sequence.measure_sequence."""

import json
from pathlib import Path

from adbench.gpt2.sequence import measure_sequence
from adbench.jobs import run_job

smk = snakemake  # noqa: F821 - injected by Snakemake
run_job(smk, measure_sequence, model=json.loads(Path(smk.input.model).read_text(encoding="utf-8")),
        text=Path(smk.input.corpus).read_text(encoding="utf-8"))
