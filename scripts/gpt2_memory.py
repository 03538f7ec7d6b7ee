"""Rule gpt2_memory: G6 saved tensors and checkpointing; see adbench.gpt2.memory.measure_memory."""

from adbench.gpt2.memory import measure_memory
from adbench.jobs import run_job

run_job(snakemake, measure_memory)  # noqa: F821 - injected by Snakemake
