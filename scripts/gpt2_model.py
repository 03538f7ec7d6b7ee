"""Rule gpt2_model: resolve the GPT-2 model once (route, revision, tokenizer); see adbench.gpt2.resolve.measure_model."""

from pathlib import Path

from adbench.gpt2.resolve import measure_model
from adbench.jobs import run_job

smk = snakemake  # noqa: F821 - injected by Snakemake
run_job(smk, measure_model, corpus_text=Path(smk.input.corpus).read_text(encoding="utf-8"),
        tokenizer_file=smk.output.tokenizer)
