"""The script of every rule that runs a function (measurements, summaries, plots, the report jobs): run the
function `params.function` names on the job's inputs.

How the function's parameters are filled and its outputs written: adbench.jobs (module docstring)."""

from adbench.jobs import run_rule

run_rule(snakemake)  # noqa: F821 - injected by Snakemake
