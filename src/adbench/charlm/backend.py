"""C1's GEMM backend, chosen on the machine: torch's default (MKL) unless oneDNN is measurably faster.

oneDNN is faster on this project's AVX-512 CPUs (~37 vs ~51 ms per step) and slower on AVX2-only ones
(103.7 vs 96.5), so no fixed choice is right everywhere. Each training job times a few steps of each backend,
alternating blocks (ABAB) so that other processes' load hits both alike, and keeps the best block of each.
oneDNN wins only when it beats the default by more than MARGIN: a tie keeps torch's default, so no machine
gets a slower step than the library's own path.

The two backends sum in different orders, so a choice that flipped between two runs would move the trained
weights by rounding (and the chaotic no_zero_grad runs by O(1)). The first decision on a machine is therefore
kept: a small file in the user's cache directory, keyed by what decides the speed (CPU model and vector
extensions, the ISA limits in the environment, torch's version and threads, the model's shapes). Every later
job on that machine still measures and records its own timings beside the kept decision, and warns when they
disagree. Torch-free: the caller supplies the timed step.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import platform
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Mapping

log = logging.getLogger(__name__)

BACKENDS = ("default", "onednn")  # the order of each ABAB pair: torch's default first
SETTINGS = ("auto", *BACKENDS)  # charlm.gemm_backend
LABELS = {"default": "torch default (MKL)", "onednn": "oneDNN"}
# oneDNN must be more than 5 % faster: on one machine under other jobs' load, six jobs' oneDNN/default ratios
# spread over 0.98-1.05 around a true tie; the two CPU kinds measured idle differ by -27 % and +7 %.
MARGIN = 0.05
BLOCKS, STEPS, WARMUP = 3, 2, 1  # per backend: 3 x 2 timed steps + 1 warm-up, ~0.8 s at config.yaml's size
# Environment variables that cap the vector ISA of oneDNN, MKL and torch's own kernels: an AVX2 imitation on an
# AVX-512 machine is another machine for this choice.
ISA_ENV = ("ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA", "MKL_ENABLE_INSTRUCTIONS", "MKL_DEBUG_CPU_TYPE",
           "ATEN_CPU_CAPABILITY")
VECTOR_FLAGS = ("avx", "avx2", "fma", "avx512f", "avx512bw", "avx512_vnni", "avx512_bf16", "amx_tile", "amx_bf16")


def choose(ms_per_step: Mapping[str, float], margin: float = MARGIN) -> str:
    """'onednn' only when its step is more than `margin` faster than the default's; otherwise 'default'."""
    return "onednn" if ms_per_step["onednn"] < (1 - margin) * ms_per_step["default"] else "default"


def kept_slower_by(ms_per_step: Mapping[str, float], kept: str) -> float:
    """How much slower the kept backend's step is than the other's in these timings (negative: faster)."""
    other = BACKENDS[1 - BACKENDS.index(kept)]
    return ms_per_step[kept] / ms_per_step[other] - 1


def interleaved(run: Callable[[str, int], None], blocks: int = BLOCKS, steps: int = STEPS,
                warmup: int = WARMUP, clock: Callable[[], float] = time.thread_time) -> dict[str, list[float]]:
    """ms per step of each timed block, {backend: [block, ...]}: `run(backend, n)` takes n steps; the
    backends alternate block by block (ABAB...) after `warmup` untimed steps of each."""
    for b in BACKENDS:
        run(b, warmup)  # oneDNN's primitive cache, the allocator, the optimizer's state
    out: dict[str, list[float]] = {b: [] for b in BACKENDS}
    for _ in range(blocks):
        for b in BACKENDS:
            t0 = clock()
            run(b, steps)
            out[b].append((clock() - t0) * 1e3 / steps)
    return out


def cpu_identity(cpuinfo: str | None = None) -> dict[str, object]:
    """CPU model and the vector extensions the GEMM kernels dispatch on (from /proc/cpuinfo where present)."""
    if cpuinfo is None:
        path = Path("/proc/cpuinfo")
        cpuinfo = path.read_text(encoding="utf-8", errors="replace") if path.exists() else ""
    lines = cpuinfo.splitlines()
    model = next((ln.split(":", 1)[1].strip() for ln in lines if ln.startswith("model name")), "")
    flags = set(next((ln.split(":", 1)[1].split() for ln in lines if ln.startswith("flags")), []))
    return {"cpu_model": model or platform.processor() or platform.machine(),
            "vector_flags": [f for f in VECTOR_FLAGS if f in flags]}


def machine_key(shape: Mapping[str, int], torch_version: str, threads: int, cpu: Mapping | None = None,
                env: Mapping[str, str] | None = None) -> dict[str, object]:
    """Everything that decides which backend is faster: the key of the kept decision."""
    env = os.environ if env is None else env
    return {**(cpu or cpu_identity()), "isa_env": {k: env[k] for k in ISA_ENV if k in env},
            "torch": torch_version, "threads": threads, "shape": dict(sorted(shape.items()))}


def cache_dir(env: Mapping[str, str] | None = None) -> Path:
    """Where kept decisions live: $XDG_CACHE_HOME/adbench/gemm-backend (default ~/.cache)."""
    env = os.environ if env is None else env
    base = Path(env["XDG_CACHE_HOME"]) if env.get("XDG_CACHE_HOME") else Path.home() / ".cache"
    return base / "adbench" / "gemm-backend"


def cache_file(key: Mapping, directory: Path) -> Path:
    """One file per key: the sha256 of the key's canonical JSON."""
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
    return directory / f"{digest}.json"


def keep_first(record: dict, path: Path) -> tuple[dict, bool]:
    """The decision in `path` if one is there, else `record` written there; (decision, whether it was ours).
    A hard link publishes the complete file only if none exists: of jobs deciding at once, the first wins."""
    if path.exists():
        return json.loads(path.read_text(encoding="utf-8")), False
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(record, fh, indent=2, sort_keys=True)
        os.link(tmp, path)
        return record, True
    except FileExistsError:
        return json.loads(path.read_text(encoding="utf-8")), False
    finally:
        os.unlink(tmp)


def kept_decision(mine: dict, key: Mapping, directory: Path | None) -> tuple[dict, Path | None, str]:
    """The machine's kept decision (or `mine`, now kept), its file, and how this job came by it."""
    try:
        path = cache_file(key, directory or cache_dir())
        kept, ours = keep_first(mine, path)
    except (OSError, RuntimeError) as err:  # no writable home: decide from this job alone and say so
        log.warning("GEMM backend: decision not kept (%s); set XDG_CACHE_HOME to a writable folder", err)
        return mine, None, f"this job's timing (not kept: {err})"
    except ValueError as err:  # JSONDecodeError: a file edited by hand
        raise ValueError(f"{path} is not a GEMM-backend decision ({err}); delete it to decide again") from err
    if kept.get("chosen") not in BACKENDS:
        raise ValueError(f"{path} names backend {kept.get('chosen')!r}, not one of {BACKENDS}; delete it")
    return kept, path, ("this job's timing" if ours
                        else f"the machine's first timing ({kept.get('measured_utc')}), kept in {path}")


def decide(setting: str, available: bool, measure: Callable[[], dict[str, list[float]]], key: Mapping,
           directory: Path | None = None, margin: float = MARGIN) -> dict:
    """The backend for this job and the record for its meta.json: `setting` forces one (no timing);
    'auto' times both (`measure`) and keeps the machine's first decision (see the module docstring)."""
    if setting not in SETTINGS:
        raise ValueError(f"charlm.gemm_backend is {setting!r}; use one of {', '.join(SETTINGS)}")
    if setting == "onednn" and not available:
        raise ValueError("charlm.gemm_backend is 'onednn', but this torch has no oneDNN linear kernel "
                         "(torch.ops.mkldnn._linear_pointwise); set charlm.gemm_backend to auto or default")
    if setting != "auto":
        return {"setting": setting, "chosen": setting, "decided_by": "charlm.gemm_backend"}
    if not available:
        return {"setting": "auto", "chosen": "default", "decided_by": "this torch has no oneDNN linear kernel"}
    blocks = measure()
    best = {b: min(v) for b, v in blocks.items()}
    now = choose(best, margin)
    mine = {"chosen": now, "ms_per_step": best, "margin": margin, "key": dict(key),
            "measured_utc": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    kept, path, by = kept_decision(mine, key, directory)
    slower = kept_slower_by(best, kept["chosen"])
    if slower > margin:  # a tie is no reason to warn: the margin absorbs timing noise both ways
        log.warning("GEMM backend: the kept decision %s is %.0f %% slower in this job's timing (%s); for a new "
                    "decision delete %s, or set charlm.gemm_backend", kept["chosen"], 100 * slower, best, path)
    return {"setting": "auto", "chosen": kept["chosen"], "decided_by": by, "ms_per_step": best,
            "blocks_ms_per_step": blocks, "this_job_would_choose": now, "kept_slower_by": slower,
            "kept_ms_per_step": kept.get("ms_per_step"), "margin": margin, "order": "ABAB, best block of each",
            "cache_file": str(path) if path else None}
