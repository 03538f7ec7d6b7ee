"""Saved-tensor accounting without computing activations: the forward runs on fake tensors.

`account` (saved.py) reads only what autograd saves: each tensor's shape, dtype and storage. Under
`FakeTensorMode` every op produces a tensor with those properties and no data (a meta storage, aliasing
kept), so the same saved-tensor hooks count the same bytes for almost nothing: G6's batch of eight
1,024-token sequences costs a fraction of a second instead of most of a minute. This is how torch's own
memory estimators work (torch.distributed._tools' MemTracker, torchtitan's memory estimation: model and
inputs fake).

Equal counts take two precautions, each proven by tests/test_gpt2_memory.py against the real accounting:
- The module's parameters and buffers are converted once, by one mode, into a copy of the module. The
  ledger then recognises them as parameters, and the tied token table stays one storage. A real module
  fed fake inputs (`allow_non_fake_inputs`) converts parameters at use, into storages the ledger (built
  from the real ones) does not know: they are counted as activations.
  The mode allows no real tensor in, so a tensor the conversion missed raises rather than miscounts.
- transformers reads data it cannot read from a fake tensor: see `_one_sequence_per_row`.
"""

from __future__ import annotations

import contextlib
import copy
from unittest import mock

import torch
from torch._subclasses.fake_tensor import FakeTensorMode

from .saved import Accounting, account


def fake_module(net: torch.nn.Module, mode: FakeTensorMode) -> torch.nn.Module:
    """A copy of `net` whose parameters and buffers are `mode`'s fake tensors (same shapes, strides,
    dtypes and ties; no data); everything else (config, submodules) is copied as is."""
    memo = {id(t): mode.from_tensor(t, static_shapes=True) for t in [*net.parameters(), *net.buffers()]}
    return copy.deepcopy(net, memo)  # memo: each real tensor, however many modules hold it, -> its one fake


def _one_sequence_per_row(position_ids: torch.Tensor) -> None:
    """What transformers' `find_packed_sequence_indices` returns for the positions GPT2Model builds
    itself (arange(T) in every row, as in every G6 forward: no position_ids are passed): None, one
    sequence per row. On a fake tensor it cannot read the values, so it returns the packing indices as
    if tracing; the mask code then builds a causal mask that SDPA's `is_causal` would have skipped
    (one more saved tensor per layer under SDPA: 68 instead of 66 on a two-layer model)."""
    return None


PATCHED = "find_packed_sequence_indices"


def supported() -> bool:
    """Whether this transformers has the function `_as_in_real_forward` answers (else count for real)."""
    from transformers import masking_utils

    return hasattr(masking_utils, PATCHED)


@contextlib.contextmanager
def _as_in_real_forward():
    """transformers' data-dependent mask decision, made as the real forward makes it."""
    from transformers import masking_utils

    with mock.patch.object(masking_utils, PATCHED, _one_sequence_per_row):
        yield


class FakeAccounting(Accounting):
    """`account(net, ids, ckpt, keep=False)`'s row, counted on a fake copy of `net`: no activation is computed.
    `module` is the fake copy (switch its attention there); call with real ids."""

    def __init__(self, net: torch.nn.Module):
        self.mode = FakeTensorMode(allow_non_fake_inputs=False)
        super().__init__(fake_module(net, self.mode))

    def __call__(self, ids: torch.Tensor, ckpt: bool) -> dict:
        # from_tensor is memoized: slices of one (B, T) batch stay views of one fake storage, as in the real run
        fake_ids = self.mode.from_tensor(ids, static_shapes=True)
        with self.mode, _as_in_real_forward():
            return account(self.module, fake_ids, ckpt, False)
