"""Rule gpt2_prompt: G1-G4 from one backward pass; see adbench.gpt2.prompt.measure_prompt."""

from adbench.gpt2.prompt import measure_prompt
from adbench.jobs import run_job

run_job(snakemake, measure_prompt)  # noqa: F821 - injected by Snakemake
