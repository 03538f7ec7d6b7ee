"""Rule corpus: the shared text and its train / held-out split; see adbench.corpus.build_corpus."""

from adbench.corpus import build_corpus
from adbench.jobs import run_job

run_job(snakemake, build_corpus)  # noqa: F821 - injected by Snakemake
