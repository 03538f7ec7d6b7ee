"""Glue between a Snakemake rule and a pure function: the one path from a rule to its code.

Every rule that runs a function (a measurement, a summary, a plot, the comparison, the report, ...) runs
scripts/measure.py, which calls `run_rule(snakemake)`:

- `params.function` names the function, 'package.module:function'; a rule that measures several
  IDs in one process (one torch import) names one function per ID, {ID: 'package.module:function'}.
- the function receives exactly the parameters its signature names, from
  * the rule's NAMED inputs, read by suffix (`read_input`): .csv -> DataFrame, .txt -> str,
    .json -> dict, anything else -> bytes, a list of files -> a list. A named input the function
    does not take is an error; positional inputs are dependencies only (never passed);
  * the job's wildcards (cast to int where the parameter is annotated `int`);
  * `<name>_path`: the path of input or output `<name>` instead of its content, for a function
    that opens or writes the file itself;
  * `params.args`, keyword arguments from the config ({ID: kwargs} for several IDs).
- `params.prov` (common.smk's `job(...)` derives it from the modules `params.function` names):
  versions, code hash, device and seed; in params so an upgrade re-runs the job.
- torch's intra-op threads are the job's threads (its rule's `threads:`, as Snakemake gives them),
  unless `params.prov` names `torch_threads` (a launcher whose ranks hold the cores).
- per-ID tables are outputs named `<ID>__<table>` (common.smk's `id_outputs`), written to
  results/<ID>/<table>.csv, with results/<ID>/meta.json as `<ID>__meta`. The function returns
  {ID: {table: value}}, or {table: value} when it measures one ID. Other outputs (figures, the
  files of a chain) keep a plain name that is the returned key. DataFrames become CSVs, `bytes`
  binary files, dicts JSON; every write is atomic.
- after the last write, the job's record: results/.manifests/<rule>[_<wildcard values>].json lists
  the sha256 of EVERY declared output (meta.json and figures included, whoever wrote them), so the
  report and `make report` can tell a cached file that changed after its job wrote it (adbench.cache).
"""

from __future__ import annotations

import importlib
import inspect
import json
import logging
import os
import random
import sys
import time
import traceback
from pathlib import Path
from typing import Any, Callable, Mapping

import pandas as pd

from . import io
from .cache import MANIFESTS, sha256_file
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
    """Inverse of output_name: 'X1__values' -> ('X1', 'values'); 'values' -> (None, 'values')."""
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


def _result(results: dict[str, Any], name: str, single_id: bool) -> Any:
    """The returned value for output `name`: results[ID][table] when nested by ID, results[table] when
    the job measures one ID and returned it flat, else results[name] (a plain output name)."""
    mid, table = split_name(name)
    if mid is not None and isinstance(results.get(mid), dict):
        return results[mid].get(table)
    if mid is not None and single_id:
        return results.get(table)
    return results.get(name)


def read_input(path: str) -> Any:
    """One input file's content, by suffix (see the module docstring)."""
    p = Path(path)
    if p.suffix == ".csv":
        return io.read_csv(p)
    if p.suffix == ".txt":
        return p.read_text(encoding="utf-8")
    if p.suffix == ".json":
        return json.loads(p.read_text(encoding="utf-8"))
    return p.read_bytes()


def resolve(ref: str | Mapping[str, str]) -> Callable[..., dict[str, Any]]:
    """The function `params.function` names; {ID: ref} becomes one grouped function of the IDs' kwargs."""
    if isinstance(ref, Mapping):
        return grouped({mid: resolve(r) for mid, r in ref.items()})
    module, sep, name = ref.partition(":")
    if not sep or not name:
        raise ValueError(f"params.function must read 'package.module:function', got {ref!r}")
    return getattr(importlib.import_module(module), name)


def _cast(param: inspect.Parameter, value: str) -> Any:
    """Wildcards are strings; a parameter annotated int gets an int (annotations may be strings)."""
    return int(value) if param.annotation in (int, "int") else value


def call_arguments(fn: Callable, inputs: Mapping[str, Any], wildcards: Mapping[str, str],
                   outputs: Mapping[str, str], args: Mapping[str, Any], reader=read_input) -> dict[str, Any]:
    """The keyword arguments of `fn` that come from the job (inputs, wildcards, output paths), by name.

    `args` are the config's keyword arguments (passed separately); a name both in `args` and in the job
    is ambiguous and refused, and so is a named input that `fn` does not take (a misspelt parameter
    would otherwise be ignored silently)."""
    params = inspect.signature(fn).parameters
    takes_any = any(p.kind is p.VAR_KEYWORD for p in params.values())
    unknown = sorted(k for k in inputs if k not in params and f"{k}_path" not in params and not takes_any)
    if unknown:
        raise TypeError(f"{fn.__name__}() takes no parameter named after input(s) {unknown}; rename the "
                        "input to a parameter, or make it positional (a dependency, not passed)")
    out: dict[str, Any] = {}
    for name, value in inputs.items():
        if f"{name}_path" in params:  # the function opens the file itself (a table with its own loader)
            out[f"{name}_path"] = value
        else:
            out[name] = reader(value) if isinstance(value, str) else [reader(v) for v in value]
    for name, value in wildcards.items():
        if name in params:
            out[name] = _cast(params[name], value)
    for name, path in outputs.items():
        if f"{name}_path" in params:
            out[f"{name}_path"] = path
    clash = sorted(set(out) & set(args))
    if clash:
        raise TypeError(f"{fn.__name__}(): {clash} come both from params.args and from the job")
    return out


def manifest_path(rule: str, wildcards: Mapping[str, str], manifests: str = MANIFESTS) -> Path:
    """The record of one job: one file per rule and wildcard values, like its log (logs/<job>.log)."""
    name = "_".join([rule, *(str(v).replace("/", "-") for v in wildcards.values())])
    return Path(manifests) / f"{name}.json"


def write_manifest(rule: str, wildcards: Mapping[str, str], outputs: list[str], manifests: str = MANIFESTS) -> Path:
    """Record the sha256 of every declared output as written. Written last, so a job killed before it
    keeps its previous record, whose hashes then no longer match (adbench.cache). One file per job
    rather than a key in meta.json: it also covers the jobs without a meta.json (plots, report) and
    meta.json itself, which cannot hold its own hash."""
    path = manifest_path(rule, wildcards, manifests)
    io.write_json({"rule": rule, "wildcards": dict(wildcards), "written_ns": time.time_ns(),
                   "outputs_sha256": {str(p): sha256_file(p) for p in outputs}}, path)
    return path


def run_rule(smk: Any) -> dict[str, Any]:
    """scripts/measure.py: run the function `params.function` names on this job's inputs and write its outputs."""
    params = dict(smk.params.items())
    fn = resolve(params["function"])
    kwargs = call_arguments(fn, dict(smk.input.items()), dict(smk.wildcards.items()), dict(smk.output.items()),
                            dict(params.get("args") or {}))
    return run_job(smk, fn, **kwargs)


def run_job(smk: Any, function: Callable[..., dict[str, Any]], **kwargs: Any) -> dict[str, Any]:
    """Run `function(**params.args, **kwargs)` and write its named results atomically."""
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
        results = function(**args, **kwargs)
        if threads is None and "torch" in sys.modules:  # torch imported lazily by the measurement
            threads = sys.modules["torch"].get_num_threads()
        metas = [n for n in smk.output.keys() if split_name(n)[1] == "meta"]
        wanted = [n for n in smk.output.keys() if n not in metas]
        single_id = len({split_name(n)[0] for n in smk.output.keys()} - {None}) == 1
        missing = sorted(n for n in wanted if _result(results, n, single_id) is None)
        if missing:
            raise KeyError(f"{function.__name__} did not return outputs {missing}")
        for name in wanted:
            _write(name, _result(results, name, single_id), getattr(smk.output, name))
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
        # snakemake.output is a list of every output path, the named ones also by name
        paths = list(smk.output) if isinstance(smk.output, list) else list(smk.output.values())
        write_manifest(smk.rule, dict(smk.wildcards.items()), paths)
        log.info("done in %.3f s", wall)
        return results
    except BaseException:
        log.error("job failed:\n%s", traceback.format_exc())
        raise
