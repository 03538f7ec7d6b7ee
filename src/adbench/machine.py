"""The machine a job ran on (CPU model, vector extensions, logical CPUs, memory, GPU), and whether two runs ran on
the same one.

"Same machine" compares SAME_MACHINE: the CPU model, its vector extensions, the logical CPU count and the GPU
(name and count). Those set which kernels the libraries pick and how many threads they get, so a timing moves
with them. Not the hostname: one host can be re-provisioned onto another CPU (a cloud "AMD EPYC" came with and
without AVX-512 under the same name and host kind), and a cluster's many nodes of one kind are one machine for a
timing. Not memory, driver or OS: memory does not set a kernel's speed unless the job swaps, and the GPU driver
and CUDA runtime are software, compared with the libraries (adbench.history.timing_moves.provenance)."""

from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess
import sys
from functools import lru_cache
from pathlib import Path

# The SIMD/matrix extensions that decide which GEMM and attention kernels a library runs, in one fixed order:
# x86 (Linux /proc/cpuinfo `flags` names) then ARM (`Features` names).
X86 = ("sse4_2", "avx", "f16c", "fma", "avx2", "avx_vnni", "avx512f", "avx512dq", "avx512cd", "avx512bw", "avx512vl",
       "avx512ifma", "avx512vbmi", "avx512_vbmi2", "avx512_vnni", "avx512_bf16", "avx512_fp16", "amx_tile",
       "amx_bf16", "amx_int8", "amx_fp16")
ARM = ("asimd", "asimdhp", "asimddp", "sve", "sve2", "bf16", "i8mm", "sme", "sme2")
VECTOR_EXTENSIONS = X86 + ARM
# macOS sysctl spellings (machdep.cpu.* words, hw.optional.* keys) -> the Linux names above
_MAC_NAMES = {"avx1.0": "avx", "avx1_0": "avx", "avx2_0": "avx2", "sse4.2": "sse4_2", "avx512vnni": "avx512_vnni",
              "avx512bf16": "avx512_bf16", "avx512vbmi2": "avx512_vbmi2", "neon": "asimd", "advsimd": "asimd",
              "arm.feat_fp16": "asimdhp", "arm.feat_dotprod": "asimddp", "arm.feat_bf16": "bf16",
              "arm.feat_i8mm": "i8mm", "arm.feat_sme": "sme", "arm.feat_sme2": "sme2"}
SAME_MACHINE = ("cpu_model", "vector_extensions", "cpu_count", "gpu")
NO_GPU = {"name": "", "count": 0, "memory_bytes": None, "driver": "", "cuda": ""}


def cpuinfo_fields(text: str) -> dict[str, str]:
    """The first processor's `key: value` lines of /proc/cpuinfo text (keys lower case)."""
    fields: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip() and fields:
            break  # the first processor's block ends at the first blank line
        key, sep, value = line.partition(":")
        if sep:
            fields.setdefault(key.strip().lower(), value.strip())
    return fields


def extensions_of(names) -> list[str]:
    """The vector extensions among flag names, in VECTOR_EXTENSIONS order."""
    have = set(names)
    return [x for x in VECTOR_EXTENSIONS if x in have]


def extensions_from_cpuinfo(text: str) -> list[str]:
    """Vector extensions from /proc/cpuinfo text: x86 `flags`, ARM `Features`."""
    fields = cpuinfo_fields(text)
    return extensions_of((fields.get("flags", "") + " " + fields.get("features", "")).lower().split())


def extensions_from_sysctl(text: str) -> list[str]:
    """Vector extensions from macOS `sysctl machdep.cpu hw.optional` output (Intel words, Apple hw.optional keys)."""
    names = []
    for line in text.splitlines():
        key, _, value = (s.strip() for s in line.partition(":"))
        key = key.lower()
        if key.startswith("machdep.cpu.") and key.endswith("features"):
            names += value.lower().split()
        elif key.startswith("hw.optional.") and value == "1":
            names.append(key.removeprefix("hw.optional."))
    return extensions_of(_MAC_NAMES.get(n, n) for n in names)


def cpu_model_from_cpuinfo(text: str) -> str:
    """The CPU model line of /proc/cpuinfo text ('' when it has none, as on some ARM kernels)."""
    fields = cpuinfo_fields(text)
    return next((fields[k] for k in ("model name", "hardware", "cpu model") if fields.get(k)), "")


def gpus_from_nvidia_smi(text: str) -> list[dict]:
    """GPUs from `nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader,nounits`."""
    gpus = []
    for line in text.strip().splitlines():
        name, driver, mib = (s.strip() for s in line.rsplit(",", 2))
        gpus.append({"name": name, "driver": driver, "memory_bytes": int(float(mib) * 2**20) if mib else None})
    return gpus


def driver_from_proc(text: str) -> str:
    """The NVIDIA kernel driver version from /proc/driver/nvidia/version text ('' when absent)."""
    m = re.search(r"Kernel Module(?: for \S+)?\s+(\d+(?:\.\d+)+)", text)
    return m.group(1) if m else ""


def _read(path: str) -> str:
    try:
        return Path(path).read_text(errors="replace")
    except OSError:
        return ""


def _command(*args: str) -> str:
    """stdout of a short system command, '' when it is missing or fails (a probe, never an error)."""
    if not shutil.which(args[0]):
        return ""
    try:
        res = subprocess.run(args, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return ""
    return res.stdout if res.returncode == 0 else ""


def cpu_model() -> str:
    """Human-readable CPU model name: /proc/cpuinfo on Linux, sysctl's brand string on macOS."""
    return (cpu_model_from_cpuinfo(_read("/proc/cpuinfo"))
            or _command("sysctl", "-n", "machdep.cpu.brand_string").strip()
            or platform.processor() or platform.machine())


def vector_extensions() -> list[str]:
    """This CPU's vector extensions: /proc/cpuinfo on Linux, sysctl on macOS, [] elsewhere."""
    if sys.platform.startswith("linux"):
        return extensions_from_cpuinfo(_read("/proc/cpuinfo"))
    if sys.platform == "darwin":
        return extensions_from_sysctl(_command("sysctl", "machdep.cpu", "hw.optional"))
    return []


def memory_bytes() -> int | None:
    """Total physical memory: /proc/meminfo, else sysconf, else psutil; None when none can tell."""
    m = re.search(r"^MemTotal:\s+(\d+) kB", _read("/proc/meminfo"), re.M)
    if m:
        return int(m.group(1)) * 1024
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        pass
    try:
        import psutil
        return int(psutil.virtual_memory().total)
    except ImportError:
        return None


def gpu() -> dict:
    """The GPU: name, count, memory, driver, CUDA runtime; NO_GPU's empty fields when there is none.

    Read from torch only when this process already initialised CUDA (a CPU job must not pay for a CUDA context),
    else from nvidia-smi when it is installed."""
    torch = sys.modules.get("torch")
    cuda = getattr(getattr(torch, "version", None), "cuda", None) or ""
    driver = driver_from_proc(_read("/proc/driver/nvidia/version"))
    if torch is not None and torch.cuda.is_initialized():
        props = torch.cuda.get_device_properties(0)
        return {"name": props.name, "count": torch.cuda.device_count(), "memory_bytes": int(props.total_memory),
                "driver": driver or _smi_driver(), "cuda": cuda}
    found = gpus_from_nvidia_smi(_command("nvidia-smi", "--query-gpu=name,driver_version,memory.total",
                                          "--format=csv,noheader,nounits"))
    if found:
        return {**found[0], "count": len(found), "driver": driver or found[0]["driver"], "cuda": cuda}
    if torch is not None and getattr(torch.backends, "mps", None) and torch.backends.mps.is_available():
        return {**NO_GPU, "name": "Apple GPU (MPS)", "count": 1}  # the chip's own: cpu_model names it
    return dict(NO_GPU)


def _smi_driver() -> str:
    found = gpus_from_nvidia_smi(_command("nvidia-smi", "--query-gpu=name,driver_version,memory.total",
                                          "--format=csv,noheader,nounits"))
    return found[0]["driver"] if found else ""


@lru_cache(maxsize=1)
def _cpu_side() -> tuple:
    return cpu_model(), tuple(vector_extensions()), os.cpu_count(), memory_bytes()


def identity() -> dict:
    """This machine, for meta.json's `machine`: CPU model, vector extensions, logical CPUs, memory, GPU."""
    model, ext, count, mem = _cpu_side()
    return {"cpu_model": model, "vector_extensions": list(ext), "cpu_count": count, "memory_bytes": mem, "gpu": gpu()}


def of_meta(meta: dict) -> dict:
    """The machine a meta.json records: its `machine`, else what a job written before it recorded (model, count)."""
    if isinstance(meta.get("machine"), dict):
        return meta["machine"]
    return {k: meta[k] for k in ("cpu_model", "cpu_count") if meta.get(k) is not None}


def _key(m: dict, field: str):
    """The value of one SAME_MACHINE field (a GPU by its name and count; driver and memory aside)."""
    v = m[field]
    return (v.get("name", ""), v.get("count", 0)) if field == "gpu" else (tuple(v) if isinstance(v, list) else v)


def complete(m: dict | None) -> bool:
    """Whether a recorded machine holds every SAME_MACHINE field (one written before machine identity does not)."""
    return all(f in (m or {}) for f in SAME_MACHINE)


def compare(a: dict | None, b: dict | None) -> str:
    """'differs' when a recorded SAME_MACHINE field differs, else 'unknown' when either run lacks one, else 'same'."""
    a, b = a or {}, b or {}
    if any(_key(a, f) != _key(b, f) for f in SAME_MACHINE if f in a and f in b):
        return "differs"
    return "same" if complete(a) and complete(b) else "unknown"


def _gib(n) -> str:
    return f"{n / 2**30:.1f} GiB"


def line(m: dict | None) -> str:
    """'AMD EPYC, 2 logical CPUs, avx2 avx512f avx512_bf16, 23.5 GiB; no GPU' (or what is unknown of it)."""
    m = m or {}
    if not m.get("cpu_model"):
        return "machine unknown"
    parts = [m["cpu_model"]] + ([f"{m['cpu_count']} logical CPUs"] if m.get("cpu_count") else [])
    if "vector_extensions" in m:
        parts.append(" ".join(headline(m["vector_extensions"])) or "no AVX2/AVX-512/AMX/SVE")
    if m.get("memory_bytes"):
        parts.append(_gib(m["memory_bytes"]))
    if "gpu" not in m:
        return ", ".join(parts) + " (machine unknown: vector extensions and GPU not recorded)"
    return ", ".join(parts) + "; " + gpu_line(m["gpu"])


def gpu_line(g: dict) -> str:
    """'GPU 1x NVIDIA H200, 140.4 GiB, driver 550.54.15, CUDA 12.8', or 'no GPU'."""
    if not g.get("name"):
        return "no GPU"
    bits = [f"GPU {g.get('count') or 1}x {g['name']}"]
    if g.get("memory_bytes"):
        bits.append(_gib(g["memory_bytes"]))
    if g.get("driver"):
        bits.append(f"driver {g['driver']}")
    if g.get("cuda"):
        bits.append(f"CUDA {g['cuda']}")
    return ", ".join(bits)


def headline(extensions: list[str]) -> list[str]:
    """The extensions a reader tells machines apart by (the full list stays in meta.json)."""
    keep = ("avx2", "avx512f", "avx512_bf16", "avx512_fp16", "amx_tile", "asimd", "sve", "sve2", "sme")
    return [x for x in extensions if x in keep]


def difference(a: dict | None, b: dict | None) -> str:
    """What differs between two machines, in words ('' when nothing recorded differs)."""
    a, b = a or {}, b or {}
    words = []
    for f in SAME_MACHINE:
        if f not in a or f not in b or _key(a, f) == _key(b, f):
            continue
        if f == "vector_extensions":
            only_a = " ".join(x for x in a[f] if x not in b[f]) or "none"
            only_b = " ".join(x for x in b[f] if x not in a[f]) or "none"
            words.append(f"vector extensions differ (only then: {only_a}; only now: {only_b})")
        elif f == "gpu":
            words.append(f"GPU {a[f].get('name') or 'none'} vs {b[f].get('name') or 'none'}")
        else:
            words.append(f"{f.replace('_', ' ')} {a[f]} vs {b[f]}")
    return ", ".join(words)
