"""Rule charlm_train: one C1 variant (wildcard); see adbench.charlm.train.measure_train."""

from pathlib import Path

from adbench.charlm.train import measure_train
from adbench.jobs import run_job

run_job(snakemake, measure_train, variant=snakemake.wildcards.variant,  # noqa: F821 - injected
        corpus_text=Path(snakemake.input.corpus).read_text(encoding="utf-8"),  # noqa: F821
        train_text=Path(snakemake.input.train).read_text(encoding="utf-8"))  # noqa: F821
