"""Rule gpt2_prompt: G1-G4 from one backward pass; see adbench.gpt2.prompt.measure_prompt."""

import json
from pathlib import Path

from adbench.gpt2.prompt import measure_prompt
from adbench.jobs import run_job

smk = snakemake  # noqa: F821 - injected by Snakemake
run_job(smk, measure_prompt, model=json.loads(Path(smk.input.model).read_text(encoding="utf-8")))
