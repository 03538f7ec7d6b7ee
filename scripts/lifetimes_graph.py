"""Rule lifetimes_graph: L1-L5 (accumulation, microbatches, ranks, leaves, saved-value lifetimes) in one process."""

from adbench.jobs import grouped, run_job
from adbench.lifetimes.accumulation import measure_l1, measure_l2, measure_l3
from adbench.lifetimes.graph import measure_l4, measure_l5

run_job(snakemake, grouped({"L1": measure_l1, "L2": measure_l2, "L3": measure_l3,  # noqa: F821
                            "L4": measure_l4, "L5": measure_l5}))
