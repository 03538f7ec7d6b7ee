"""Rule tensor_rules: T1-T4 (hand-written backward rules vs torch float64) in one process."""

from adbench.jobs import grouped, run_job
from adbench.tensor.probes import measure_t1, measure_t2, measure_t3, measure_t4

run_job(snakemake, grouped({"T1": measure_t1, "T2": measure_t2, "T3": measure_t3, "T4": measure_t4}))  # noqa: F821
