"""G1-G8, P9 and G6 (with its timing) on one device, without Snakemake: the GPT-2 jobs' functions called with the
arguments their rules pass (workflow/rules/gpt2.smk), every table written as the pipeline writes it
(<out>/<ID>/<table>.csv and meta.json). For a GPU machine that holds torch and transformers but not this project's
environment, and for the same functions on that machine's CPU, so the two can be compared table by table:

    PYTHONPATH=src python -m adbench.gpt2.on_device --device cuda --out gpu-run/cuda config.yaml [overlay.yaml]
"""

from __future__ import annotations

import argparse
import logging
import time
from pathlib import Path

import torch
import yaml

from .. import io
from ..corpus import build_corpus
from ..provenance import meta_record
from .memory import measure_memory
from .prompt import measure_prompt
from .resolve import record_model
from .sequence import measure_sequence

log = logging.getLogger(__name__)
MODEL_KEYS = ("source", "revision", "path", "seed", "random_config", "tokenizer_vocab_size")  # rule gpt2_model's
PROMPT_KEYS = ("prompt", "target", "g3_layers", "g4_layer", "g4_distance")
SEQUENCE_KEYS = ("seq_len", "text_offset", "worst_fraction", "extremes", "context_tokens", "clip_max_norm",
                 "starved_ratio", "runaway_ratio", "loss_scale")
MEMORY_KEYS = ("seq_len", "batch", "timing_batch", "timing_rounds", "timing_warmup")


def merged(configs: list[dict]) -> dict:
    """Config files merged key by key, later ones winning, as Snakemake merges --configfile overlays."""
    out: dict = {}
    for cfg in configs:
        for k, v in (cfg or {}).items():
            out[k] = merged([out[k], v]) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def jobs(config: dict, device: str) -> dict[str, tuple]:
    """Rule name -> (function, keyword arguments) of the three GPT-2 measurement jobs, from `config`."""
    g, timing = config["gpt2"], config["timing"]
    pick = lambda keys: {k: g[k] for k in keys}  # noqa: E731
    return {"gpt2_prompt": (measure_prompt, pick(PROMPT_KEYS) | {"device": device}),
            "gpt2_sequence": (measure_sequence, pick(SEQUENCE_KEYS) | {"device": device}),
            "gpt2_memory": (measure_memory, pick(MEMORY_KEYS) | {"device": device, "seed": timing["seed"],
                                                                 "timing_retries": timing["retries"]})}


def write_tables(results: dict, out: Path, meta: dict) -> list[Path]:
    """{ID: {table: DataFrame}} -> out/<ID>/<table>.csv, with out/<ID>/meta.json (the job's meta, the ID's own)."""
    written = []
    for mid, tables in results.items():
        if mid.startswith("_"):
            continue
        for table, df in tables.items():
            if not table.startswith("_"):
                io.write_csv(df, out / mid / f"{table}.csv")
                written.append(out / mid / f"{table}.csv")
        io.write_json(meta | {"measurement_id": mid}, out / mid / "meta.json")
    return written


def run(config: dict, device: str, out: Path) -> list[Path]:
    """Resolve the model as rule gpt2_model does, then run the three jobs on `device`; the files written."""
    g = config["gpt2"]
    torch.set_num_threads(g["threads"])  # the rules' `threads: gpt2.threads`
    corpus = build_corpus(config["corpus"]["path"], config["corpus"]["heldout_fraction"])["corpus"].decode("utf-8")
    tok_path = out / "gpt2" / "tokenizer" / "tokenizer.json"
    tok_path.parent.mkdir(parents=True, exist_ok=True)
    model = record_model(**{k: g[k] for k in MODEL_KEYS}, corpus_text=corpus, tokenizer_path=str(tok_path))
    io.write_bytes(model["tokenizer"], tok_path)
    io.write_json(model["model"], out / "gpt2" / "model.json")
    written = []
    for rule, (fn, args) in jobs(config, device).items():
        log.info("%s on %s", rule, device)
        inputs = {"model": model["model"]} | ({"text": corpus} if rule != "gpt2_prompt" else {})
        t0 = time.perf_counter()
        res = fn(**inputs, **args)
        meta = meta_record(rule=rule, wildcards={}, args=args, seed=g["seed"], device=device, threads=g["threads"],
                           wall_s=time.perf_counter() - t0, extra=res.get("_meta"))
        # measure_memory returns one ID's tables flat; the others {ID: tables}
        written += write_tables({"G6": res} if rule == "gpt2_memory" else res, out, meta)
    return written


def main(argv: list[str] | None = None) -> None:
    """Command line: the config files (config.yaml, then overlays), --device and --out."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("configs", nargs="+", help="config.yaml, then overlays (e.g. .test/config.yaml)")
    ap.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N")
    ap.add_argument("--out", required=True, type=Path, help="folder for <ID>/<table>.csv and meta.json")
    a = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    config = merged([yaml.safe_load(Path(p).read_text()) for p in a.configs])
    for path in run(config, a.device, a.out):
        print(path)


if __name__ == "__main__":
    main()
