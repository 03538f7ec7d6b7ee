"""Rule gpt2_memory: G6 saved tensors and checkpointing; see adbench.gpt2.memory.measure_memory."""

import json
from pathlib import Path

from adbench.gpt2.memory import measure_memory
from adbench.jobs import run_job

smk = snakemake  # noqa: F821 - injected by Snakemake
run_job(smk, measure_memory, model=json.loads(Path(smk.input.model).read_text(encoding="utf-8")),
        text=Path(smk.input.corpus).read_text(encoding="utf-8"))
