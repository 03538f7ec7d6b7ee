"""Saved-tensor accounting for one forward pass, with and without per-block activation checkpointing."""

from __future__ import annotations

import contextlib
import functools
import time

import torch
from torch.multiprocessing.reductions import StorageWeakRef
from torch.utils.checkpoint import checkpoint

from ..timing import device_sync
from .common import token_nll


def _ckpt_forward(orig, *args, **kwargs):
    return checkpoint(orig, *args, use_reentrant=False, **kwargs)


@contextlib.contextmanager
def checkpointed(net, enabled: bool = True):
    """Recompute every transformer block during backward instead of keeping its saved tensors."""
    blocks = list(net.transformer.h) if enabled else []
    for b in blocks:
        b.forward = functools.partial(_ckpt_forward, b.forward)
    try:
        yield
    finally:
        for b in blocks:
            del b.forward  # back to the class's forward


class Ledger:
    """Counts saved tensors two ways: bytes per hook call, and bytes of distinct live storages."""

    def __init__(self, params):
        self.params = {p.untyped_storage()._cdata for p in params}
        self.calls = self.call_bytes = self.unique = self.unique_bytes = self.param_bytes = 0
        self.largest = 0
        self._seen: dict[int, StorageWeakRef] = {}

    def add_storage(self, t: torch.Tensor) -> None:
        """Count t's storage once while it lives (a freed address reused later is a new storage)."""
        st = t.untyped_storage()
        key = st._cdata
        ref = self._seen.get(key)
        if ref is not None and not ref.expired():
            return
        self._seen[key] = StorageWeakRef(st)
        if key in self.params:
            self.param_bytes += st.nbytes()
        else:
            self.unique += 1
            self.unique_bytes += st.nbytes()
            self.largest = max(self.largest, st.nbytes())

    def pack(self, t: torch.Tensor):
        self.calls += 1
        self.call_bytes += t.numel() * t.element_size()
        self.add_storage(t)
        return t

    def count_and_drop(self, t: torch.Tensor) -> None:
        """Count, then keep nothing: the graph holds None where the tensor would be."""
        self.pack(t)


def _identity(x):
    return x


def mean_nll(net, ids: torch.Tensor) -> torch.Tensor:
    """The mean next-token NLL: the model's own loss when it has one (the nanoGPT-style model: one
    cross_entropy), else a log-softmax over transformers' logits (token_nll)."""
    own = getattr(net, "next_token_loss", None)
    return own(ids) if own is not None else token_nll(net(ids, use_cache=False).logits, ids).mean()


def account(net, ids: torch.Tensor, ckpt: bool, keep: bool) -> dict:
    """One forward (loss = mean token NLL) under counting hooks; `keep` also runs backward."""
    # keep=False drops each saved tensor once counted: a batch whose saved tensors would not fit
    # in memory can still be counted (no backward is possible then).
    led = Ledger(net.parameters())
    pack = led.pack if keep else led.count_and_drop
    handles = []
    if ckpt:  # checkpoint keeps each block's inputs alive for the recompute; count them too
        def pre(module, args, kwargs):
            for a in [*args, *kwargs.values()]:
                if isinstance(a, torch.Tensor):
                    led.add_storage(a)
        handles = [b.register_forward_pre_hook(pre, with_kwargs=True) for b in net.transformer.h]
    cuda = ids.is_cuda
    sync = device_sync(ids.device)
    sync()
    if cuda:
        base = torch.cuda.memory_allocated()
    t0 = time.perf_counter()
    with checkpointed(net, ckpt), torch.autograd.graph.saved_tensors_hooks(pack, _identity):
        loss = mean_nll(net, ids)
    sync()  # the forward's kernels finished before the clock is read
    out = {"checkpoint": ckpt, "batch": ids.shape[0], "tokens": ids.shape[1], "kept": keep,
           "hook_calls": led.calls, "bytes_per_hook_call": led.call_bytes, "unique_storages": led.unique,
           "unique_storage_bytes": led.unique_bytes, "parameter_bytes_seen": led.param_bytes,
           "largest_storage_bytes": led.largest,
           # wall time differs between identical runs: the `_volatile` suffix keeps it out of the
           # determinism check. No RSS delta: in a process that already ran other cases it measures
           # the allocator's reuse of freed pages (it came out negative), not this forward.
           "forward_s_volatile": time.perf_counter() - t0}
    if cuda:
        out["cuda_allocated_growth_bytes"] = torch.cuda.memory_allocated() - base
    for h in handles:
        h.remove()
    if keep:  # the recompute closures were captured during forward; no patch needed now
        if not ckpt:  # with checkpointing the blocks' saves are hidden behind the checkpoint's hooks
            out["_by_node"] = saved_by_node(loss.grad_fn, net.parameters())
        loss.backward()
        net.zero_grad(set_to_none=True)
    del loss
    return out


# what a row counts (account's output less its flags and times): fake and real forwards must agree on these
COUNTS = ("hook_calls", "bytes_per_hook_call", "unique_storages", "unique_storage_bytes", "parameter_bytes_seen",
          "largest_storage_bytes")


class Accounting:
    """`account(module, ids, ckpt, keep=False)`: the dropped rows, counted on the real forward
    (fake.FakeAccounting counts the same rows on a fake copy)."""

    def __init__(self, net):
        self.module = net  # the net whose attention kernel the caller switches

    def __call__(self, ids: torch.Tensor, ckpt: bool) -> dict:
        return account(self.module, ids, ckpt, False)


def step(net, ids: torch.Tensor, ckpt: bool) -> None:
    """One forward and backward (the timed unit), returning once the device has run it."""
    with checkpointed(net, ckpt):
        mean_nll(net, ids).backward()
    net.zero_grad(set_to_none=True)
    # backward() returns once a GPU's kernels are queued: without the wait a timer would read the launches
    device_sync(ids.device)()


def saved_by_node(root, params) -> list[dict]:
    """Walk the autograd graph from `root` (a grad_fn): saved bytes per node type, each non-parameter
    storage counted once, at the first node (in depth-first order from the loss) that saves it."""
    seen_nodes, stack, rows = set(), [root], {}
    seen_storage = {p.untyped_storage()._cdata for p in params}
    while stack:
        node = stack.pop()
        if node is None or node in seen_nodes:
            continue
        seen_nodes.add(node)
        stack.extend(n for n, _ in node.next_functions)
        r = rows.setdefault(type(node).__name__, {"node": type(node).__name__, "nodes": 0, "saved_tensors": 0,
                                                  "call_bytes": 0, "unique_bytes": 0})
        r["nodes"] += 1
        for attr in dir(node):
            if not attr.startswith("_saved_"):
                continue
            try:
                value = getattr(node, attr)
            except RuntimeError:  # already freed or not accessible
                continue
            for t in value if isinstance(value, (tuple, list)) else (value,):
                if isinstance(t, torch.Tensor) and t.device.type != "meta":
                    r["saved_tensors"] += 1
                    r["call_bytes"] += t.numel() * t.element_size()
                    key = t.untyped_storage()._cdata
                    if key not in seen_storage:
                        seen_storage.add(key)
                        r["unique_bytes"] += t.untyped_storage().nbytes()
    return sorted(rows.values(), key=lambda r: -r["unique_bytes"])
