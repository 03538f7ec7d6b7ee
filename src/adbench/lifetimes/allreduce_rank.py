"""L3's ranks: what one process of the all-reduce job does (spawn pickles `rank_main` by reference, so it
lives here, importable, apart from the launcher in allreduce.py).

Each rank joins the gloo group through the shared rendezvous file, keeps its connections on the loopback
interface, holds its slice of L3's data (the same seeded float64 linear layer and examples on every
rank), computes its local mean and sum gradients, all-reduces them, forms the four global gradients of
REDUCTIONS and saves them for the launcher. It destroys its process group on the way out, failed or not.
"""

from __future__ import annotations

import os
import signal
import socket
from datetime import timedelta
from pathlib import Path

import torch

from .problem import _mse_grad, _problem

# Fixed labels: the configured split lives in a column of its own, never in a reduction's name.
REDUCTIONS = ("all_reduce(sum) of local means",
              "all_reduce(sum) of local means / world_size",
              "all_reduce(sum) of count-weighted local means / all_reduce(sum) of counts",
              "all_reduce(sum) of local sums / all_reduce(sum) of loss elements")


# A measurement-level control (claims/bugs.py): each rank all-reduces its plain mean where the count-weighted
# reduction needs n_r * mean; None in every real run.
ALLREDUCE_BUGS = ("count weight dropped before the all-reduce",)


def loopback_interface() -> str:
    """The loopback interface's name ('lo' on Linux), for GLOO_SOCKET_IFNAME."""
    return next((name for _, name in socket.if_nameindex() if name.startswith("lo")), "lo")


def _reduce(t: torch.Tensor, rank: int, group) -> torch.Tensor:
    """all_reduce(SUM) of a copy of `t` over `group`; a failure (a peer gone) names this rank."""
    import torch.distributed as dist

    out = t.clone()
    try:
        dist.all_reduce(out, op=dist.ReduceOp.SUM, group=group)
    except Exception as err:  # gloo raises when a peer's connection closes or the timeout passes
        raise RuntimeError(f"rank {rank}: all_reduce failed ({' '.join(str(err).split())[:300]})") from err
    return out


def rank_gradients(rank: int, sizes: list[int], in_features: int, out_features: int, seed: int,
                   group, bug: str | None = None) -> list[torch.Tensor]:
    """This rank's global gradients, in REDUCTIONS order, from its own slice and four all-reduces over
    `group` (the len(sizes) ranks holding this split's examples)."""
    world = len(sizes)  # this split's group: its world_size
    model, x, y = _problem(sum(sizes), in_features, out_features, seed)  # identical on every rank (seeded)
    a = sum(sizes[:rank])
    xr, yr = x[a:a + sizes[rank]], y[a:a + sizes[rank]]  # (n_r, in), (n_r, out)
    mean = _mse_grad(model, xr, yr)  # d mean over this rank's n_r * out loss elements
    total = _mse_grad(model, xr, yr, reduction="sum")
    n = torch.tensor(float(sizes[rank]), dtype=torch.float64)              # this rank's examples
    elements = torch.tensor(float(yr.numel()), dtype=torch.float64)        # its loss elements: n_r * out
    weight = 1.0 if bug == ALLREDUCE_BUGS[0] else n
    mean_sum, weighted_sum = _reduce(mean, rank, group), _reduce(weight * mean, rank, group)
    sum_sum, count, all_elements = _reduce(total, rank, group), _reduce(n, rank, group), _reduce(elements, rank, group)
    return [mean_sum, mean_sum / world, weighted_sum / count, sum_sum / all_elements]


def rank_main(rank: int, init_file: str, out_dir: str, cases: dict[str, list[int]], in_features: int,
              out_features: int, seed: int, backend: str, timeout_s: float, fail: tuple[int, str] | None,
              bug: str | None = None) -> None:
    """One rank (spawn calls it with its index first): join the group, reduce every case, save, leave."""
    import torch.distributed as dist

    torch.set_num_threads(1)  # one core per rank: the job holds as many cores as ranks
    os.environ["GLOO_SOCKET_IFNAME"] = loopback_interface()
    world = max(len(sizes) for sizes in cases.values())
    dist.init_process_group(backend, init_method=f"file://{init_file}", rank=rank, world_size=world,
                            timeout=timedelta(seconds=timeout_s))
    try:
        if fail is not None and fail[0] == rank:
            if fail[1] == "kill":
                os.kill(os.getpid(), signal.SIGKILL)  # no clean-up, no traceback, as an out-of-memory kill
            raise RuntimeError(f"rank {rank}: injected failure before the all-reduce")
        results = {}
        for name, sizes in cases.items():
            group = dist.new_group(ranks=list(range(len(sizes))))  # every rank must call it, members or not
            if rank < len(sizes):
                results[name] = rank_gradients(rank, sizes, in_features, out_features, seed, group, bug)
        torch.save(results, Path(out_dir) / f"rank{rank}.pt")
    finally:
        dist.destroy_process_group()
