# The base rule: what every job that runs a package function shares, stated once. Each such rule is
# `use rule measure as <family>_<what> with:` (Snakemake's rule inheritance) and states only what is its own:
# inputs, outputs, `params: **job(...)`, and threads, priority or resources where they differ from the base.
# The base brings the env and the generic script (scripts/measure.py: adbench.jobs.run_rule); name_logs
# (common.smk, run by the Snakefile once every rule is read) gives each rule its log and benchmark, named after
# the rule and its wildcards. The base writes nothing, so no job of its own is ever planned.


rule measure:
    conda:
        ENV
    resources:
        **sized(),
    script:
        SCRIPT("measure")
