# The timing chain, written once: calibrate (one job) -> run (one job per {process}) -> summary -> plot.
# A family's chain is four uses of these bases, `use rule timing_<step> as <family>_<what>_<step> with`
# (Snakemake's rule inheritance). The bases carry what every chain shares: the timing jobs' resources
# (alone on the machine, sized(timing=True)), priority and threads (TIMING_THREADS), the {process}
# constraint, the env and the script. Each use gives what is its own: the chain's wiring (inputs from
# rules.<rule>.output.<name>; the summary reads every process, TIMING_PROCESSES), output, log, benchmark
# and params (job(...); timing_args picks the shared timing.* settings). The run step's function takes
# `process` from the wildcard. The bases write nothing, so no job of theirs is ever planned.


rule timing_calibrate:
    log:
        LOG("timing_calibrate"),
    priority: PRIORITY["timing"]
    conda:
        ENV
    threads: TIMING_THREADS
    resources:
        **sized(timing=True),
    script:
        SCRIPT("measure")


rule timing_run:
    log:
        LOG("timing_run"),
    wildcard_constraints:
        process=r"\d+",
    priority: PRIORITY["timing"]
    conda:
        ENV
    threads: TIMING_THREADS
    resources:
        **sized(timing=True),
    script:
        SCRIPT("measure")


rule timing_summary:
    log:
        LOG("timing_summary"),
    conda:
        ENV
    resources:
        **sized(),
    script:
        SCRIPT("measure")


rule timing_plot:
    log:
        LOG("timing_plot"),
    conda:
        ENV
    resources:
        **sized(),
    script:
        SCRIPT("measure")
