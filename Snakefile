# adbench: re-measure how backpropagation works, compare with the documented figures,
# render one self-contained HTML report. Run `snakemake --cores N` (or `make report`).
from pathlib import Path

from snakemake.utils import min_version

min_version("9.0")

ROOT = Path(workflow.basedir)


configfile: "config.yaml"


report: "workflow/captions/workflow.rst"


# Helpers and the one config check, the base rule every job uses, the timing chain's base rules; then the
# corpus that several families read.
include: "workflow/rules/common.smk"
include: "workflow/rules/measure.smk"
include: "workflow/rules/timing.smk"
include: "workflow/rules/corpus.smk"


# Each declared family's rules file (src/adbench/<key>/family.py declares it; key order, so a family may read
# an earlier one's rules.<name>); the report's come last because they read the registry the families filled:
# verdicts, what changed, the archive, rendering.
REPORT_RULES = ["verdicts.smk", "changes.smk", "archive.smk", "render.smk"]
for _key in sorted(FAMILIES):

    include: FAMILIES[_key].rules


for _rules in REPORT_RULES:

    include: f"workflow/rules/{_rules}"


# Every rule's log and benchmark, named after the rule (common.smk): no rule states them.
name_logs()

# Timing jobs claim every machine share (see sized() in common.smk); the total is a global resource
# here, so plain `snakemake --cores N` keeps them alone, and --unlock / --report need no --cores.
if "machine_share" not in workflow.global_resources:
    workflow.register_resource("machine_share", MACHINE_SHARES)


# Every registered output is a target, not only the report: a deleted or half-written cached result
# (results/ is a product users open) is rebuilt by exactly the job that writes it, then the report.
rule all:
    default_target: True
    input:
        rules.render_report.output,
        rules.verdicts_compare.output,
        rules.verdicts_claims.output,
        rules.changes.output,
        report_inputs,
        # strict mode (config strict): the check after the report, which fails the run (workflow/rules/render.smk)
        rules.render_strict_check.output if config["strict"] else [],


# Before any job starts: every planned job's mem_mb fits the run's --resources mem_mb, or the run stops naming
# each job, what it needs and the fix (memory_fit in common.smk).
onstart:
    memory_fit()


# A plain `snakemake` run (profiles/default) ends, like `make report`, with where the report is.
onsuccess:
    if Path("report/report.html").exists():
        print(f"Report written to {Path('report/report.html').resolve()}")
