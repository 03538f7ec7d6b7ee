# adbench: re-measure how backpropagation works, compare with the documented figures,
# render one self-contained HTML report. Run `snakemake --cores N` (or `make report`).
from pathlib import Path

from snakemake.utils import min_version, validate

min_version("9.0")

ROOT = Path(workflow.basedir)


configfile: "config.yaml"


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"


validate(config, str(ROOT / "workflow/schemas/config.schema.yaml"))


include: "workflow/rules/scalar.smk"
include: "workflow/rules/tensor.smk"
include: "workflow/rules/lifetimes.smk"
include: "workflow/rules/optim.smk"
include: "workflow/rules/depth.smk"
include: "workflow/rules/precision.smk"
include: "workflow/rules/corpus.smk"
include: "workflow/rules/gpt2.smk"
include: "workflow/rules/charlm.smk"
include: "workflow/rules/report.smk"


rule all:
    default_target: True
    input:
        "report/report.html",
        "results/comparison.csv",
        "results/changes.csv",
