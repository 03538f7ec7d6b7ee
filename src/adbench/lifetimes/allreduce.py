"""L3 on a real process group: the launcher of the all-reduce job and its measurement.

The job starts one process per rank itself (torch.multiprocessing, spawn; the ranks' code is
allreduce_rank.py) and they meet through a file in a fresh temporary folder (under TMPDIR: the job's own
on a cluster node); gloo's connections stay on the loopback interface. The launcher compares each rank's
global gradients with the single-process gradient. A failing rank makes the job fail with a message
naming it; every rank is gone when the launcher returns, successful or not.
"""

from __future__ import annotations

import logging
import os
import pickle
import signal
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import pandas as pd
import torch

from .problem import _mse_grad, _problem
from .allreduce_rank import ALLREDUCE_BUGS, REDUCTIONS, loopback_interface, rank_main

log = logging.getLogger(__name__)
GRACE_S = 5.0  # after one rank fails, how long the others get to leave by themselves before SIGTERM


@contextmanager
def _spawnable_main():
    """Hide __main__'s file while ranks start: spawn re-runs the parent's main script in each child unless
    it was started with -m, and a Snakemake job's main script is the rule's, whose top level runs the job.
    The ranks need nothing from it: spawn imports rank_main from allreduce_rank by name."""
    main = sys.modules["__main__"]
    saved = {k: main.__dict__[k] for k in ("__file__", "__spec__") if k in main.__dict__}
    main.__dict__.pop("__file__", None)
    main.__spec__ = None  # multiprocessing reads it; None: no module to import by name either
    try:
        yield
    finally:
        main.__dict__.pop("__spec__", None)
        main.__dict__.update(saved)


def _outcomes(ctx) -> dict[int, str]:
    """Rank -> why it did not finish cleanly (its error's last line, or the signal that ended it)."""
    out = {}
    for i, (proc, err_file) in enumerate(zip(ctx.processes, ctx.error_files)):
        if proc.exitcode == 0:
            continue
        if os.access(err_file, os.R_OK):
            with open(err_file, "rb") as fh:
                out[i] = pickle.load(fh).strip().splitlines()[-1]  # spawn pickles the traceback's text
        elif proc.exitcode == -signal.SIGTERM:  # spawn's join stops the others once one rank has failed
            out[i] = f"stopped by the launcher ({signal.Signals.SIGTERM.name}) after the failure"
        elif proc.exitcode is not None and proc.exitcode < 0:
            out[i] = f"ended by signal {signal.Signals(-proc.exitcode).name}"
        else:
            out[i] = f"exit code {proc.exitcode}"
    return out


def _failure(ctx) -> str:
    """The job's error: the ranks that failed by themselves first, then those that failed because of them
    (a lost peer in an all-reduce, or stopped by the launcher while waiting for one)."""
    outcomes = _outcomes(ctx)
    lost_peer = {i for i, why in outcomes.items()
                 if why.startswith((f"RuntimeError: rank {i}: all_reduce failed", "stopped by the launcher"))}
    causes = sorted(set(outcomes) - lost_peer) or sorted(outcomes)
    text = "; ".join(f"rank {i} (pid {ctx.processes[i].pid}): {outcomes[i]}" for i in causes)
    later = sorted(lost_peer - set(causes))
    after = "; ".join(f"rank {i} (pid {ctx.processes[i].pid}) then: {outcomes[i]}" for i in later)
    return f"L3 all-reduce: rank {', '.join(map(str, causes))} failed: {text}" + (f". {after}" if after else "")


def run_ranks(cases: dict[str, list[int]], in_features: int, out_features: int, seed: int, backend: str,
              timeout_s: float, fail: tuple[int, str] | None = None, bug: str | None = None) -> tuple[list[dict], dict]:
    """Start one process per rank, wait for all, return (each rank's saved results, facts for meta.json)."""
    import torch.multiprocessing as mp

    world = max(len(sizes) for sizes in cases.values())
    with tempfile.TemporaryDirectory(prefix="adbench-allreduce-") as tmp:
        args = (str(Path(tmp) / "rendezvous"), tmp, cases, in_features, out_features, seed, backend, timeout_s, fail,
                bug)
        t0 = time.perf_counter()
        with _spawnable_main():
            ctx = mp.start_processes(rank_main, args=args, nprocs=world, join=False, start_method="spawn")
        pids = [p.pid for p in ctx.processes]
        try:
            while not ctx.join(grace_period=GRACE_S):
                pass
        except (mp.ProcessRaisedException, mp.ProcessExitedException) as err:  # spawn: a rank exited non-zero
            raise RuntimeError(_failure(ctx)) from err
        finally:
            for p in ctx.processes:  # normally all gone already; never leave one behind
                if p.is_alive():
                    p.kill()
                p.join()
        wall = time.perf_counter() - t0
        results = [torch.load(Path(tmp) / f"rank{r}.pt") for r in range(world)]
    facts = {"world_size": world, "backend": backend, "rendezvous": "file:// in a temporary folder",
             "gloo_interface": loopback_interface(), "spawn_wall_s": round(wall, 3), "rank_pids": pids}
    log.info("%d ranks (%s) finished in %.2f s", world, backend, wall)
    return results, facts


def measure_l3_allreduce(split: list[int], equal_split: list[int], in_features: int, out_features: int, seed: int,
                         backend: str, timeout_s: float, wide_split: list[int] | None = None,
                         fail_rank: int | None = None, fail_how: str = "raise", bug: str | None = None) -> dict:
    """L3 with a real all-reduce: `reductions`, each global gradient of REDUCTIONS against one process's.

    Every configured split (`wide_split`: three ranks or more) runs in one job: a world of as many ranks as the
    longest split has entries, each split reduced over a group of its first len(split) ranks. `fail_rank` (tests
    only) makes that rank raise, or with fail_how='kill' SIGKILL itself, before its first all-reduce. `bug`: a
    measurement-level control (ALLREDUCE_BUGS); None in every real run."""
    if fail_how not in ("raise", "kill"):
        raise ValueError(f"fail_how must be 'raise' or 'kill', got {fail_how!r}")
    if bug is not None and bug not in ALLREDUCE_BUGS:
        raise ValueError(f"bug must be one of {ALLREDUCE_BUGS} or None, got {bug!r}")
    cases = {"split": split, "equal_split": equal_split, **({} if wide_split is None else {"wide_split": wide_split})}
    results, facts = run_ranks(cases, in_features, out_features, seed, backend, timeout_s,
                               None if fail_rank is None else (fail_rank, fail_how), bug)
    rows = []
    for case, sizes in cases.items():
        model, x, y = _problem(sum(sizes), in_features, out_features, seed)
        full = _mse_grad(model, x, y)  # one process, every example: the objective the ranks should share
        for i, label in enumerate(REDUCTIONS):
            per_rank = [r[case][i] for r in results if case in r]
            g = per_rank[0]
            rows.append({"case": case, "split": "+".join(map(str, sizes)), "world_size": len(sizes),
                         "reduction": label, "max_abs_diff_vs_single_process": (g - full).abs().max().item(),
                         "grad_norm": g.norm().item(), "norm_ratio_vs_single_process": (g.norm() / full.norm()).item(),
                         "max_abs_diff_between_ranks": max((p - g).abs().max().item() for p in per_rank)})
    return {"reductions": pd.DataFrame(rows), "_meta": facts}
