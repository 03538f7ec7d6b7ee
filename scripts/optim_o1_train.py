"""Rule optim_o1_train: every XOR seed trained with one optimizer (wildcard gd | adam)."""

from adbench.jobs import run_job
from adbench.optim.xor import measure_o1_train

run_job(snakemake, measure_o1_train, optimizer=snakemake.wildcards.optimizer)  # noqa: F821
