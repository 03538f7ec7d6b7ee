"""What a run cost and where its time went: every job's wall time on a timeline, the total job time, the floor
and wall / floor (results/run_cost.csv and the report's provenance appendix).

The floor is the least wall time the run could take: the timing jobs run alone (each takes every core), the
rest of the work shared over the cores, so floor = sum(timing walls) + sum(other walls) / cores.

Read from what the run leaves behind, no clock of its own: Snakemake's benchmark files (benchmarks/<job>.tsv:
wall `s`, `cpu_time`, `max_rss`), the job records (results/.manifests/<job>.json: `written_ns`, when the job
wrote its last output) and the run's own Snakemake log (.snakemake/log/<start>.snakemake.log: when this run
started, and `Provided cores`). A job ends at its record and starts its wall time before; the jobs whose record
is older than the run's start come from an earlier run (cached) and are left out of this run's cost.
"""

from __future__ import annotations

import io
import json
import re
from datetime import datetime
from pathlib import Path

import pandas as pd

COLUMNS = ["job", "rule", "timing", "lane", "start_s", "end_s", "wall_s", "cpu_s", "max_rss_mb"]
SUMMARY = ["jobs", "cores", "job_time_s", "timing_s", "other_s", "floor_s", "wall_s", "wall_over_floor"]


def records(manifests: str | Path = "results/.manifests", bench: str | Path = "benchmarks") -> pd.DataFrame:
    """One row per job with both a record and a benchmark file: job, rule, end (epoch seconds), wall, cpu, rss."""
    rows = []
    for m in sorted(Path(manifests).glob("*.json")):
        b = Path(bench) / f"{m.stem}.tsv"
        if not b.exists():
            continue
        rec, t = json.loads(m.read_text()), pd.read_csv(b, sep="\t")
        if not len(t):
            continue
        last = t.iloc[-1]
        rows.append({"job": m.stem, "rule": rec.get("rule", m.stem), "end": rec["written_ns"] / 1e9,
                     "wall_s": float(last["s"]), "cpu_s": float(last.get("cpu_time", float("nan"))),
                     "max_rss_mb": float(last.get("max_rss", float("nan")))})
    return pd.DataFrame(rows, columns=["job", "rule", "end", "wall_s", "cpu_s", "max_rss_mb"])


def run_log(log_dir: str | Path = ".snakemake/log") -> tuple[float | None, int | None]:
    """(start, cores) of the newest Snakemake run in `log_dir`: its log is named after its start time."""
    logs = sorted(Path(log_dir).glob("*.snakemake.log"))
    if not logs:
        return None, None
    newest = logs[-1]
    start = datetime.strptime(newest.name.split(".snakemake")[0], "%Y-%m-%dT%H%M%S.%f").timestamp()
    cores = re.search(r"^Provided cores: (\d+)", newest.read_text(errors="replace"), re.M)
    return start, int(cores.group(1)) if cores else None


def lanes(jobs: pd.DataFrame, cores: int) -> list[int]:
    """Each job's core on the timeline (in start order, the lane free earliest); a timing job has them all: lane 0."""
    free = [float("-inf")] * max(cores, 1)
    out = [0] * len(jobs)
    for i in jobs.sort_values("start_s").index:
        r = jobs.loc[i]
        lane = 0 if r.timing else min(range(len(free)), key=lambda k: (free[k] > r.start_s, free[k]))
        free[lane] = r.end_s
        out[jobs.index.get_loc(i)] = lane
    return out


def timeline(recs: pd.DataFrame, timing_rules: set[str], cores: int, since: float | None = None) -> pd.DataFrame:
    """This run's jobs (records at or after `since`), times relative to the first start, each on its lane."""
    d = recs if since is None else recs[recs.end >= since - 1.0]  # log names round down to the second
    d = d.assign(timing=d.rule.isin(timing_rules), start=d.end - d.wall_s)
    t0 = float(d.start.min()) if len(d) else 0.0
    d = d.assign(start_s=d.start - t0, end_s=d.end - t0).reset_index(drop=True)
    d["lane"] = lanes(d, cores) if len(d) else []
    return d[COLUMNS].sort_values(["start_s", "job"]).reset_index(drop=True)


def summary(jobs: pd.DataFrame, cores: int) -> dict:
    """Total job time, the floor (timing jobs alone plus the rest over the cores), the wall and wall / floor."""
    timing, other = float(jobs.wall_s[jobs.timing].sum()), float(jobs.wall_s[~jobs.timing].sum())
    floor = timing + other / max(cores, 1)
    wall = float(jobs.end_s.max() - jobs.start_s.min()) if len(jobs) else 0.0
    return {"jobs": len(jobs), "cores": cores, "job_time_s": timing + other, "timing_s": timing, "other_s": other,
            "floor_s": floor, "wall_s": wall, "wall_over_floor": wall / floor if floor > 0 else float("nan")}


def figure(jobs: pd.DataFrame, cores: int) -> str:
    """One bar per job on its core (timing jobs hatched and spanning every core), as an SVG string."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 1.2 + 0.5 * cores))
    for r in jobs.itertuples():
        span = (0, cores) if r.timing else (r.lane, 1)
        ax.broken_barh([(r.start_s, r.wall_s)], (span[0] + 0.1, span[1] - 0.2),
                       facecolors="#c0392b" if r.timing else "#4a78b5", edgecolor="white", linewidth=0.5,
                       hatch="//" if r.timing else None)
        if r.wall_s > 0.04 * max(jobs.end_s.max(), 1):
            ax.text(r.start_s + r.wall_s / 2, span[0] + span[1] / 2, r.rule, ha="center", va="center", fontsize=6,
                    color="white", clip_on=True)
    ax.set_yticks([k + 0.5 for k in range(cores)], [f"core {k + 1}" for k in range(cores)])
    ax.set_xlabel("seconds since the run's first job started")
    ax.set_title("Jobs of this run (hatched: timing jobs, which run alone)", fontsize=9)
    fig.tight_layout()
    buf = io.StringIO()
    fig.savefig(buf, format="svg")
    plt.close(fig)
    return buf.getvalue()


def run_cost(timing_rules: list[str], manifests: str = "results/.manifests", bench: str = "benchmarks",
             log_dir: str = ".snakemake/log") -> tuple[pd.DataFrame, dict]:
    """(this run's timeline, its summary) from the files the run left (see the module docstring)."""
    since, cores = run_log(log_dir)
    cores = cores or 1
    jobs = timeline(records(manifests, bench), set(timing_rules), cores, since)
    return jobs, summary(jobs, cores)


def table(jobs: pd.DataFrame, cost: dict) -> pd.DataFrame:
    """results/run_cost.csv: `kind` run rows (name: a figure of SUMMARY, value), then one job row per job (name:
    the job, its rule, whether it is a timing job, its lane and times)."""
    head = pd.DataFrame([{"kind": "run", "name": k, "value": cost[k]} for k in SUMMARY])
    body = jobs.rename(columns={"job": "name"}).assign(kind="job")
    return pd.concat([head, body], ignore_index=True)[["kind", "name", "value", *COLUMNS[1:]]]
