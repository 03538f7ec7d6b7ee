"""O3: optimizer-state memory arithmetic, with P counted from GPT-2 small built on the meta device."""

from __future__ import annotations

import pandas as pd
import torch

from ..tables import values_table
from .adam_state import adam_state as real_state
from .first_step import adam_first_step, state_by_optimizer

GIB = 2 ** 30


# a measurement-level control (claims/bugs.py): the "unique" count also walks every name, duplicates included
COUNT_BUGS = ("unique count with duplicate names",)


def gpt2_parameter_counts(bug: str | None = None) -> dict[str, int]:
    """Unique parameter elements of GPT2LMHeadModel(GPT2Config()), and the count with tied weights twice. `bug`: a
    measurement-level control (COUNT_BUGS); None in every real run."""
    from transformers import GPT2Config, GPT2LMHeadModel

    with torch.device("meta"):                     # shapes only: no storage is allocated
        model = GPT2LMHeadModel(GPT2Config())
    every_name = (p for _, p in model.named_parameters(remove_duplicate=False))
    walk = every_name if bug == COUNT_BUGS[0] else model.parameters()
    unique = sum(p.numel() for p in walk)              # model.parameters(): the tied lm_head counted once
    every = sum(p.numel() for _, p in model.named_parameters(remove_duplicate=False))
    return {"unique": unique, "with_duplicates": every,
            "tied_names": sum(1 for _ in model.named_parameters(remove_duplicate=False))
            - sum(1 for _ in model.named_parameters())}


def itemsize(dtype: str) -> int:
    """Bytes per element of a torch dtype name such as 'float16'."""
    return torch.empty((), dtype=getattr(torch, dtype)).element_size()


def arrangement_table(arrangements: dict[str, dict[str, str]], n_params: int) -> pd.DataFrame:
    """One row per (arrangement, collection): dtype, bytes per parameter, total bytes and GiB."""
    rows = []
    for name, collections in arrangements.items():
        for coll, dtype in collections.items():
            b = itemsize(dtype)
            rows.append({"arrangement": name, "collection": coll, "dtype": dtype, "bytes_per_param": b,
                         "bytes": b * n_params, "GiB": b * n_params / GIB})
        total = sum(itemsize(d) for d in collections.values())
        rows.append({"arrangement": name, "collection": "total", "dtype": "", "bytes_per_param": total,
                     "bytes": total * n_params, "GiB": total * n_params / GIB})
    return pd.DataFrame(rows)


def measure_o3(arrangements: dict[str, dict[str, str]], collection_dtype: str, adam_arrangement: str,
               mixed_arrangements: list[str], adam_state: dict) -> dict:
    """P from the instantiated architecture; bytes of each declared arrangement of optimizer state;
    `adam_state`/`adam_bytes`, a real optimizer's state tensors before and after its first step; Adam's real first
    step beside the essay's formula; and the persistent state of SGD, SGD with momentum and Adam."""
    counts = gpt2_parameter_counts()
    P = counts["unique"]
    table = arrangement_table(arrangements, P)
    totals = table[table.collection == "total"].set_index("arrangement")
    one = itemsize(collection_dtype) * P
    items = [("n_params", P), ("fp32_collection_bytes", one), ("fp32_collection_gib", one / GIB),
             ("adam_fp32_bytes", int(totals.loc[adam_arrangement, "bytes"])),
             ("adam_fp32_gib", totals.loc[adam_arrangement, "GiB"]),
             ("adam_fp32_bytes_per_param", int(totals.loc[adam_arrangement, "bytes_per_param"]))]
    items += [(f"{m}_bytes_per_param", int(totals.loc[m, "bytes_per_param"])) for m in mixed_arrangements]
    counts_df = pd.DataFrame([{"count": k, "value": v} for k, v in counts.items()])
    model = {k: adam_state[k] for k in ("layers", "batch", "lr", "seed")}   # the same fp32 MLP and batch
    return {"values": values_table("O3", items), "arrangements": table, "counts": counts_df, **real_state(**adam_state),
            "adam_first_step": adam_first_step(**model), "state_by_optimizer": state_by_optimizer(**model)}
