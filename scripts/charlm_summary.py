"""Rule charlm_summary: C1 values against the documents and the variant table; see measure_summary."""

import pandas as pd

from adbench.charlm.summary import measure_summary
from adbench.io import read_csv
from adbench.jobs import run_job

smk = snakemake  # noqa: F821 - injected by Snakemake
curves = pd.concat([read_csv(p) for p in smk.input.curves], ignore_index=True)
norms = pd.concat([read_csv(p) for p in smk.input.grad_norms], ignore_index=True)
runs = pd.concat([read_csv(p) for p in smk.input.runs], ignore_index=True)
run_job(smk, measure_summary, heldout=read_csv(smk.input.heldout),
        baselines=read_csv(smk.input.baselines), curves=curves, grad_norms=norms, runs=runs)
