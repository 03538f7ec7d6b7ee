"""Rule gpt2_sequence: G5, G7, G8 and P9 from one sequence; see adbench.gpt2.sequence.measure_sequence."""

from adbench.gpt2.sequence import measure_sequence
from adbench.jobs import run_job

run_job(snakemake, measure_sequence)  # noqa: F821 - injected by Snakemake
