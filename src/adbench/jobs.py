"""Glue between a Snakemake script and a pure measurement function.

A rule's script is three lines: import `run_job` and the measurement, call
`run_job(snakemake, measure)`. Conventions a rule must follow:

- `params.args`: dict of keyword arguments for the measurement function.
- `params.prov`: dict from common.smk's `prov(...)` (versions, code hash, device, seed);
  it is in params so Snakemake's params trigger re-runs the job after an upgrade.
- every named output except `meta` is a table or file the function returns under
  that name; `meta` receives meta.json. Returned DataFrames become CSVs, `bytes`
  become binary files, dicts become JSON.
- a job measuring several IDs names its per-ID outputs with `output_name(ID, table)`
  (common.smk's `id_outputs` does it for rules) and returns them nested, {ID: {table: ...}}.
"""

from __future__ import annotations

import logging
import os
import random
import sys
import time
import traceback
from typing import Any, Callable

import pandas as pd

from . import io
from .provenance import meta_record

log = logging.getLogger("adbench")


def _setup_logging(smk: Any) -> None:
    """Send the package's log records to the rule's log file (and stderr)."""
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)]
    if len(smk.log):
        os.makedirs(os.path.dirname(smk.log[0]) or ".", exist_ok=True)
        handlers.append(logging.FileHandler(smk.log[0], mode="w", encoding="utf-8"))
    logging.basicConfig(level=logging.INFO, handlers=handlers, force=True,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")


def _set_threads(n: int) -> int | None:
    """Fix torch's intra-op threads before torch does any work; returns the count in force.

    Only when the measurement imported torch: plot and report jobs skip its 1.3 s import.
    """
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    torch.set_num_threads(n)
    return torch.get_num_threads()


def _write(name: str, value: Any, path: str) -> None:
    if isinstance(value, pd.DataFrame):
        io.write_csv(value, path)
    elif isinstance(value, (bytes, bytearray)):
        io.write_bytes(bytes(value), path)
    elif isinstance(value, dict):
        io.write_json(value, path)
    else:
        raise TypeError(f"output {name!r}: cannot write {type(value).__name__}")


SEP = "__"  # output name of a per-ID table: '<ID>__<table>', e.g. 'T1__values', 'T1__meta'


def output_name(mid: str, table: str) -> str:
    """The rule's output name for `table` of measurement `mid` (the one naming convention)."""
    return f"{mid}{SEP}{table}"


def split_name(name: str) -> tuple[str | None, str]:
    """Inverse of output_name: 'T1__values' -> ('T1', 'values'); 'values' -> (None, 'values')."""
    mid, sep, table = name.partition(SEP)
    return (mid, table) if sep else (None, name)


def grouped(measures: dict[str, Callable[..., dict[str, Any]]]) -> Callable[..., dict[str, Any]]:
    """Several small measurements in one job, so they share one interpreter and one torch
    import. params.args maps ID -> kwargs; the results come back nested, {ID: {table: ...}}."""
    def measure(**args_by_id: dict) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for mid, fn in measures.items():
            t0 = time.perf_counter()
            res = fn(**args_by_id[mid])
            res["_meta"] = {"wall_time_s": time.perf_counter() - t0, **(res.get("_meta") or {})}
            out[mid] = res
            log.info("%s done in %.3f s", mid, res["_meta"]["wall_time_s"])
        return out
    measure.__name__ = "+".join(measures)
    return measure


def _result(results: dict[str, Any], name: str) -> Any:
    """The returned value for output `name`: results[ID][table] when nested by ID, else results[name]."""
    mid, table = split_name(name)
    if mid is not None and isinstance(results.get(mid), dict):
        return results[mid].get(table)
    return results.get(name)


def run_job(smk: Any, measure: Callable[..., dict[str, Any]], **kwargs: Any) -> dict[str, Any]:
    """Run `measure(**params.args, **kwargs)` and write its named results atomically."""
    _setup_logging(smk)
    params = dict(smk.params.items()) if hasattr(smk.params, "items") else {}
    args = dict(params.get("args") or {})
    prov = dict(params.get("prov") or {})
    threads = _set_threads(int(prov.get("torch_threads") or smk.threads or 1))
    seed = prov.get("seed", args.get("seed"))
    if seed is not None:
        random.seed(seed)
    log.info("rule %s wildcards=%s threads=%s", smk.rule, dict(smk.wildcards.items()), threads)
    start = time.perf_counter()
    try:
        results = measure(**args, **kwargs)
        if threads is None and "torch" in sys.modules:  # torch imported lazily by the measurement
            threads = sys.modules["torch"].get_num_threads()
        metas = [n for n in smk.output.keys() if split_name(n)[1] == "meta"]
        wanted = [n for n in smk.output.keys() if n not in metas]
        missing = sorted(n for n in wanted if _result(results, n) is None)
        if missing:
            raise KeyError(f"{measure.__name__} did not return outputs {missing}")
        for name in wanted:
            _write(name, _result(results, name), getattr(smk.output, name))
        wall = time.perf_counter() - start
        for name in metas:
            mid = split_name(name)[0]
            part = dict((results.get(mid) or {}).get("_meta") or {}) if mid else {}
            own_wall = part.pop("wall_time_s", wall)
            extra = {"code_hash": prov.get("code"), **(results.get("_meta") or {}), **part}
            if mid:
                extra |= {"measurement_id": mid, "group_wall_time_s": round(wall, 6)}
            io.write_json(meta_record(
                rule=smk.rule, wildcards=dict(smk.wildcards.items()), args=args.get(mid, args) if mid else args,
                seed=seed, device=prov.get("device", "cpu"), threads=threads, wall_s=own_wall, extra=extra),
                getattr(smk.output, name))
        log.info("done in %.3f s", wall)
        return results
    except BaseException:
        log.error("job failed:\n%s", traceback.format_exc())
        raise
