"""Rule gpt2_plots: G2, G5 and G8 figures; see adbench.plots.gpt2."""

import json
from pathlib import Path

from adbench.io import read_csv
from adbench.jobs import run_job
from adbench.plots.gpt2 import gpt2_figures

inp = snakemake.input  # noqa: F821 - injected by Snakemake
source = json.loads(Path(inp.model).read_text(encoding="utf-8"))["model_source"]
run_job(snakemake, gpt2_figures, states=read_csv(inp.states), surprise=read_csv(inp.surprise),  # noqa: F821
        blocks=read_csv(inp.blocks), model_source=source)
