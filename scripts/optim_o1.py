"""Rule optim_o1: O1 summary (gradient check, stuck count, Adam rescue, ulp control)."""

from adbench.io import read_csv
from adbench.jobs import run_job
from adbench.optim.o1 import measure_o1

run_job(snakemake, measure_o1,  # noqa: F821 - injected by Snakemake
        gd_finals=read_csv(snakemake.input.gd_finals), gd_curves=read_csv(snakemake.input.gd_curves),  # noqa: F821
        adam_finals=read_csv(snakemake.input.adam_finals))  # noqa: F821
