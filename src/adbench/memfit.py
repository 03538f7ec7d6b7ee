"""Memory: each rule's declared mem_mb from its measured peak RSS (data/peaks.csv), and the fit check that
stops a run before any job starts when a planned job needs more mem_mb than the run may use.

Snakemake itself refuses such a job only when it would start it, with a message about pipes; and mem_mb
is a scheduling budget, not a limit, so a declaration far above the peak only keeps small machines out.
Import-light (no torch, no pandas): the workflow imports it while parsing."""

from __future__ import annotations

import csv
import math
import sys
from pathlib import Path
from typing import Iterable, Mapping, NamedTuple

# declared = the measured peak x HEADROOM + EXTRA_MB, rounded up to STEP_MB. The factor covers what grows with
# the job (allocator fragmentation, oneDNN's workspace and kernel choice on another CPU, a torch release that
# keeps one more buffer); the constant covers what does not (the interpreter and torch's libraries: a
# CUDA-enabled torch maps more of them than the CPU build measured here). Small jobs (~300 MB, mostly
# `import torch`) thus get ~700 MB, a 3.5 GB job 4.7 GB: every declaration fits an 8 GB machine's cap.
HEADROOM = 1.25
EXTRA_MB = 256
STEP_MB = 50
# The sizing test's bounds: no declaration below its peak, none above 2 x the peak + BOUND_EXTRA_MB.
BOUND_FACTOR = 2.0
BOUND_EXTRA_MB = 512
# What a rule without a measured peak declares (a new rule, before the next reference run measures it).
UNMEASURED_MB = 1000
# `make report`'s cap: this share of the machine's RAM (Makefile MEM_MB, profiles/default)
RAM_SHARE = 0.8
# Every rule's peak RSS in a full default run (the shipped reference's machine), written by main() below. Package
# data rather than reference/: every copy of the workflow (tests, version-matrix runs, an installed package) has it.
PEAKS = Path(__file__).resolve().parent / "data" / "peaks.csv"
PEAK_COLUMNS = ("rule", "max_rss_mb", "jobs", "cpu", "isa", "torch", "date", "commit")


class Need(NamedTuple):
    """One planned job and the mem_mb it declares."""

    job: str  # the job as Snakemake names it: rule, plus its wildcards
    rule: str
    mem_mb: int


def declared_mb(peak_mb: float) -> int:
    """The mem_mb a rule declares for a measured peak RSS of `peak_mb` MB (formula above)."""
    return STEP_MB * math.ceil((HEADROOM * peak_mb + EXTRA_MB) / STEP_MB)


def within_bounds(declared: int, peak_mb: float) -> bool:
    """Whether a declaration is at least its peak and at most 2 x its peak + BOUND_EXTRA_MB."""
    return peak_mb <= declared <= BOUND_FACTOR * peak_mb + BOUND_EXTRA_MB


def cap_mb(total_bytes: int) -> int:
    """The mem_mb cap `make report` gives a machine with `total_bytes` of RAM (RAM_SHARE of it, in MiB)."""
    return int(total_bytes / 2**20 * RAM_SHARE)


def load_peaks(path: str | Path = PEAKS) -> dict[str, float]:
    """Rule -> measured peak RSS (MB) from the reference peaks file."""
    with open(path, newline="") as fh:
        return {row["rule"]: float(row["max_rss_mb"]) for row in csv.DictReader(fh)}


def config_keys(config: Mapping) -> dict[str, str]:
    """Rule -> the config key its mem_mb comes from: `<section>.mem_mb.<what>` sizes rule `<section>_<what>`."""
    return {f"{section}_{what}": f"{section}.mem_mb.{what}"
            for section, values in config.items() if isinstance(values, Mapping)
            for what in (values.get("mem_mb") if isinstance(values.get("mem_mb"), Mapping) else {})}


def job_label(rule: str, wildcards: Mapping[str, str]) -> str:
    """A job as the message names it: `rule` or `rule (name=value, ...)`."""
    return f"{rule} ({', '.join(f'{k}={v}' for k, v in wildcards.items())})" if wildcards else rule


def misfits(needs: Iterable[Need], cap: int) -> list[Need]:
    """The jobs that declare more mem_mb than `cap`, largest first."""
    return sorted((n for n in needs if n.mem_mb > cap), key=lambda n: (-n.mem_mb, n.job))


def fit_line(need: Need, cap: int, keys: Mapping[str, str]) -> str:
    """One job that cannot start: what it needs, what the run gives, and the fix."""
    ram_gb = need.mem_mb / RAM_SHARE / 1024  # the RAM whose default cap (RAM_SHARE of it) covers the job
    line = (f"{need.job} needs mem_mb={need.mem_mb}; this run gives {cap}. Fix: make report MEM_MB={need.mem_mb} "
            f"(snakemake --resources mem_mb={need.mem_mb}) on a machine with at least {ram_gb:.1f} GB of RAM")
    return line + (f"; or lower {keys[need.rule]} in config.yaml" if need.rule in keys else "")


def fit_error(needs: Iterable[Need], cap: int, keys: Mapping[str, str]) -> str | None:
    """The message that stops the run (a header, then one line per job that does not fit), or None."""
    bad = misfits(needs, cap)
    if not bad:
        return None
    head = (f"{len(bad)} planned job(s) declare more memory than this run gives (mem_mb={cap}: "
            f"{RAM_SHARE:.0%} of RAM unless MEM_MB or --resources mem_mb set it); no job was started:")
    return "\n".join([head, *(f"  {fit_line(n, cap, keys)}" for n in bad)])


# ---- the reference peaks file, from a full run's benchmark files ----------------------------------------
def rule_of(stem: str, rules: Iterable[str]) -> str | None:
    """The rule a benchmark file `<stem>.tsv` belongs to: the longest rule name equal to it or followed by `_`
    and its wildcards (benchmarks/<rule>[_<wildcards>].tsv)."""
    hits = [r for r in rules if stem == r or stem.startswith(r + "_")]
    return max(hits, key=len) if hits else None


def peaks_from_benchmarks(bench_dir: str | Path, rules: Iterable[str]) -> dict[str, tuple[float, int]]:
    """Rule -> (largest max_rss in MB over its jobs' benchmark files, number of jobs)."""
    rules = list(rules)
    out: dict[str, tuple[float, int]] = {}
    for path in sorted(Path(bench_dir).rglob("*.tsv")):
        rule = rule_of(path.stem, rules)
        if rule is None:
            continue
        with open(path, newline="") as fh:
            rss = max(float(row["max_rss"]) for row in csv.DictReader(fh, delimiter="\t"))
        peak, jobs = out.get(rule, (0.0, 0))
        out[rule] = (max(peak, rss), jobs + 1)
    return out


def main(argv: list[str] | None = None) -> None:
    """`snakemake --list-rules | python -m adbench.memfit BENCH_DIR --cpu ... --isa ... --torch ... --date ...
    --commit ...`: the peaks file on stdout (one row per rule that has benchmark files)."""
    import argparse

    ap = argparse.ArgumentParser(description=main.__doc__)
    ap.add_argument("bench_dir")
    for name in PEAK_COLUMNS[3:]:
        ap.add_argument(f"--{name}", required=True)
    args = ap.parse_args(argv)
    rules = [line.strip() for line in sys.stdin if line.strip()]
    writer = csv.writer(sys.stdout, lineterminator="\n")
    writer.writerow(PEAK_COLUMNS)
    for rule, (peak, jobs) in sorted(peaks_from_benchmarks(args.bench_dir, rules).items()):
        writer.writerow([rule, f"{peak:.2f}", jobs, *(getattr(args, n) for n in PEAK_COLUMNS[3:])])


if __name__ == "__main__":
    main()
