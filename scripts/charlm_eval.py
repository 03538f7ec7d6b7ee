"""Rule charlm_eval: held-out loss of every C1 variant on its own code path; see measure_eval."""

from pathlib import Path

from adbench.charlm.evaluate import measure_eval
from adbench.jobs import run_job

smk = snakemake  # noqa: F821 - injected by Snakemake
run_job(smk, measure_eval,
        weights={Path(p).stem: Path(p).read_bytes() for p in smk.input.weights},
        **{f"{k}_text": Path(smk.input[k]).read_text(encoding="utf-8") for k in ("corpus", "train", "heldout")})
