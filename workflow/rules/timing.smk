# The timing chain, written once: calibrate (one job) -> run (one job per {process}) -> summary -> plot.
# A family's chain is four uses of these bases, `use rule timing_<step> as <family>_<what>_<step> with`
# (Snakemake's rule inheritance). The bases, themselves uses of `measure` (common.smk), carry what every chain
# shares: the timing jobs' resources (alone on the machine, sized(timing=True)), priority and threads
# (TIMING_THREADS), the {process} constraint. Each use gives what is its own: the chain's wiring (inputs from
# rules.<rule>.output.<name>; the summary reads every process, TIMING_PROCESSES), output and params (job(...);
# timing_args picks the shared timing.* settings). The run step's function takes `process` from the wildcard.
# The bases write nothing, so no job of theirs is ever planned.


use rule measure as timing_calibrate with:
    priority: PRIORITY["timing"]
    threads: TIMING_THREADS
    resources:
        **sized(timing=True),


use rule measure as timing_run with:
    wildcard_constraints:
        process=r"\d+",
    priority: PRIORITY["timing"]
    threads: TIMING_THREADS
    resources:
        **sized(timing=True),


use rule measure as timing_summary


use rule measure as timing_plot
