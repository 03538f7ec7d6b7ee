"""Where one C1 training step's time goes, and how close it comes to one core's float32 peak.

    python -m adbench.charlm.profile [--variant correct] [--steps 20] [--mkl] [--ghz 3.6]
    python -m adbench.charlm.profile --compare [--steps 20] [--repeats 5]

Runs `train.step` (the job's own step) on one thread at config.yaml's size and prints:
  1. torch.profiler self time by kind of work (matrix products, attention, other aten ops, optimizer
     kernels, autograd engine, Python outside any op) and phase (batch, forward, backward, optimizer);
     the profiler reads wall clocks and adds overhead, so the table also gives each row's share of
     the unprofiled step;
  2. thread CPU ms per step without the profiler (other processes' load counts less than in wall time);
  3. FLOP per step (GEMMs and attention, counted from the shapes), the achieved GFLOP/s, and one core's
     peak: fp32 SIMD lanes (from the CPU flags) x 2 FMA pipes x 2 FLOP x GHz, beside measured 1024^3 GEMMs.
`--mkl` profiles torch's default GEMMs (MKL) instead of oneDNN: the step as it was before the speed-up.
`--compare` times the two GEMM backends instead, as C1's training job does before it trains
(adbench.charlm.backend), only longer: --repeats interleaved blocks (ABAB) of --steps steps each, and
the backend the job's rule picks from them.
"""

from __future__ import annotations

import argparse
import os
import time
from collections import defaultdict
from pathlib import Path

import torch
import yaml
from torch.profiler import ProfilerActivity, profile, record_function

from ..corpus import default_text, split
from . import backend
from .model import _mm, onednn_available
from .train import CharGPT, GPTConfig, encode, get_batch, make_optimizer, step, switches, timing_run

PHASES = ("batch", "forward", "backward", "optimizer")
MATMUL_OPS = ("aten::mm", "aten::addmm", "aten::bmm", "mkldnn::_linear_pointwise")


def kind(name: str) -> str:
    """Kind of work of one profiler event, from its name."""
    if name in MATMUL_OPS:
        return "matrix products"
    if "scaled_dot_product" in name:
        return "attention (SDPA kernels)"
    if name.startswith("aten::_foreach") or name == "aten::_fused_adamw_":
        return "optimizer kernels (_foreach)"
    if name.startswith(("autograd::", "torch::autograd")) or name.endswith(("Backward0", "Backward1", "Backward")):
        return "autograd engine and Function wrappers"
    if name.startswith(("aten::", "mkldnn::")):
        return "other aten ops (element-wise, norms, loss)"
    return "Python outside any op"  # the step range's and Optimizer.step's own time


def phase(e) -> str:
    """Phase of one profiler event from its enclosing ranges: backward ops run inside the autograd
    engine's evaluate_function events, the optimizer's inside Optimizer.step / zero_grad."""
    while e is not None:
        if e.name.startswith("Optimizer."):
            return "optimizer"
        if e.name.startswith("autograd::engine::evaluate_function"):
            return "backward"
        if e.name == "batch":
            return "batch"
        e = e.cpu_parent
    return "forward"  # the model, the loss, the logged steps' norms, the step's own Python


def setup(variant: str, text: str, cfg: dict, onednn: bool):
    """Model, optimizer, batch source, switches and clip limit as train_variant builds them."""
    sw, vocab = switches(variant), "".join(sorted(set(text)))
    torch.manual_seed(cfg["seed"])
    model = CharGPT(GPTConfig(len(vocab), cfg["block_size"], cfg["n_layer"], cfg["n_head"], cfg["n_embd"],
                              sw["detach_positions"])).use_onednn(onednn)
    opt = make_optimizer(model, cfg["lr"], cfg["weight_decay"], cfg["betas"])
    data, gen = encode(split(text, 0.1)[0], vocab), torch.Generator().manual_seed(cfg["seed"])
    clip = cfg["control_clip"] if sw["clipped"] else cfg["grad_clip"]
    return model, opt, lambda: get_batch(data, cfg["batch_size"], cfg["block_size"], sw["shift_targets"], gen), sw, clip


def run_steps(n: int, model, opt, batch, sw, cfg: dict, clip: float) -> None:
    """n training steps as train_variant runs them (gradient norms at every log_every-th step)."""
    for i in range(1, n + 1):
        with record_function("batch"):  # no-op ranges unless the profiler runs
            x, y = batch()
        with record_function("step"):  # its self time: the step's Python between ops
            step(model, opt, x, y, sw, cfg["loss_scale"], clip, log_norms=i % cfg["log_every"] == 0)


def profile_table(n: int, *args) -> dict[tuple[str, str], float]:
    """{(kind, phase): profiled self ms per step} over n steps."""
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        run_steps(n, *args)
    table = defaultdict(float)
    for e in prof.events():
        table[kind(e.name), phase(e)] += e.self_cpu_time_total / 1e3 / n  # us -> ms per step
    return dict(table)


def cpu_ms_per_step(n: int, repeats: int, *args) -> list[float]:
    """Thread CPU ms per step without the profiler, `repeats` blocks of n steps."""
    out = []
    for _ in range(repeats):
        t0 = time.thread_time()
        run_steps(n, *args)
        out.append((time.thread_time() - t0) * 1e3 / n)
    return out


def step_flops(cfg: dict, vocab_size: int) -> tuple[int, int]:
    """(GEMM FLOP, attention FLOP) of one training step; backward = 2 x forward for both.
    GEMMs: 2 N in out per linear (qkv, proj, fc, mlp proj per block; the tied head), N = B T rows.
    Attention: q k^T and p v, 2 T^2 hs each per head and sequence, the full square the kernel computes."""
    N, C, T = cfg["batch_size"] * cfg["block_size"], cfg["n_embd"], cfg["block_size"]
    linear = cfg["n_layer"] * 2 * N * (C * 3 * C + C * C + C * 4 * C + 4 * C * C) + 2 * N * C * vocab_size
    attention = cfg["n_layer"] * cfg["batch_size"] * cfg["n_head"] * 2 * (2 * T * T * (C // cfg["n_head"]))
    return 3 * linear, 3 * attention


def cpu_peak(ghz: float | None = None, cpuinfo: str | None = None) -> tuple[float, str]:
    """One core's float32 GFLOP/s peak: SIMD lanes x 2 FMA pipes x 2 FLOP x GHz, and how it was found."""
    if cpuinfo is None:
        cpuinfo = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    lines = cpuinfo.splitlines()
    flags = set(next((ln.split(":", 1)[1].split() for ln in lines if ln.startswith("flags")), []))
    isa, lanes = ("avx512f", 16) if "avx512f" in flags else ("avx2", 8) if "avx2" in flags else ("sse", 4)
    mhz = next((float(ln.split(":")[1]) for ln in lines if ln.startswith("cpu MHz")), 0.0)
    clock = f"{ghz:.2f} GHz given" if ghz else f"{mhz / 1e3:.2f} GHz from /proc/cpuinfo (may be the nominal clock)"
    return lanes * 2 * 2 * (ghz or mhz / 1e3), f"{lanes} fp32 lanes ({isa}) x 2 FMA pipes x 2 FLOP x {clock}"


def gemm_rate(fn, n: int = 1024, reps: int = 3) -> float:
    """GFLOP/s of an n^3 float32 GEMM a @ b.T on this thread (best of reps)."""
    a, b = torch.randn(n, n), torch.randn(n, n)
    fn(a, b)
    times = []
    for _ in range(reps):
        t0 = time.thread_time()
        fn(a, b)
        times.append(time.thread_time() - t0)
    return 2 * n ** 3 / min(times) / 1e9


def print_table(table: dict, step_ms: float, steps: int) -> None:
    """Rows by kind, columns by phase (profiled ms per step), then each row's share and the share
    applied to the unprofiled step's CPU ms."""
    total = sum(table.values())
    kinds = sorted({k for k, _ in table}, key=lambda k: -sum(v for (kk, _), v in table.items() if kk == k))
    print(f"\ntorch.profiler self time, ms per step over {steps} steps; 'of step' = share x {step_ms:.1f} ms")
    print(f"{'kind of work':40s}" + "".join(f"{p:>10s}" for p in PHASES) + f"{'total':>9s}{'share':>8s}{'of step':>9s}")
    for k in kinds:
        row = [table.get((k, p), 0.0) for p in PHASES]
        share = sum(row) / total
        print(f"{k:40s}" + "".join(f"{v:10.2f}" for v in row) + f"{sum(row):9.2f}{share:8.1%}{share * step_ms:9.2f}")
    cols = [sum(v for (_, pp), v in table.items() if pp == p) for p in PHASES]
    print(f"{'total':40s}" + "".join(f"{v:10.2f}" for v in cols) + f"{total:9.2f}{1:8.1%}{step_ms:9.2f}")


def compare(cfg: dict, vocab_size: int, blocks: int, steps: int) -> None:
    """Print each backend's thread CPU ms per step, block by block (ABAB), and the auto rule's choice."""
    gcfg = GPTConfig(vocab_size, cfg["block_size"], cfg["n_layer"], cfg["n_head"], cfg["n_embd"])
    ms = backend.interleaved(timing_run(gcfg, cfg["batch_size"]), blocks=blocks, steps=steps, warmup=steps)
    best = {b: min(v) for b, v in ms.items()}
    for b, v in ms.items():
        print(f"{backend.LABELS[b]:22s}" + " ".join(f"{x:7.2f}" for x in v) + f"   best {best[b]:.2f} ms/step")
    print(f"oneDNN / default: {best['onednn'] / best['default']:.3f}; the auto rule (margin {backend.MARGIN:.0%}) "
          f"picks {backend.choose(best)}")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--variant", default="correct")
    ap.add_argument("--steps", type=int, default=20, help="profiled steps (after as many warm-up steps)")
    ap.add_argument("--repeats", type=int, default=3, help="blocks of --steps timed without the profiler")
    ap.add_argument("--mkl", action="store_true", help="torch's default GEMMs (MKL), as before the speed-up")
    ap.add_argument("--compare", action="store_true", help="time both GEMM backends, interleaved (ABAB)")
    ap.add_argument("--ghz", type=float, default=None, help="core clock for the peak (default /proc/cpuinfo)")
    ap.add_argument("--corpus", default="results/corpus/corpus.txt", help="text (CPython's topics if absent)")
    ap.add_argument("--config", default="config.yaml")
    a = ap.parse_args(argv)
    torch.set_num_threads(1)
    cfg = yaml.safe_load(Path(a.config).read_text(encoding="utf-8"))["charlm"]["train"]
    text = Path(a.corpus).read_text(encoding="utf-8") if Path(a.corpus).exists() else default_text()
    if a.compare:
        print(f"C1 step, thread CPU ms per step, {a.repeats} blocks of {a.steps} steps, 1 thread, "
              f"torch {torch.__version__}, {backend.cpu_identity()}, "
              f"ISA limits {dict((k, v) for k, v in os.environ.items() if k in backend.ISA_ENV) or 'none'}")
        return compare(cfg, len(set(text)), a.repeats, a.steps)
    model, opt, batch, sw, clip = setup(a.variant, text, cfg, onednn=not a.mkl)
    args = (model, opt, batch, sw, cfg, clip)
    run_steps(a.steps, *args)  # warm-up: allocator, oneDNN's primitive cache, the optimizer's state
    table = profile_table(a.steps, *args)
    cpu = cpu_ms_per_step(a.steps, a.repeats, *args)
    best = min(cpu)
    print(f"C1 step, variant {a.variant}, GEMMs on {'oneDNN' if model.onednn else 'MKL (torch default)'}, "
          f"1 thread, torch {torch.__version__}")
    print_table(table, best, a.steps)
    print(f"\nwithout the profiler: {', '.join(f'{c:.2f}' for c in cpu)} CPU ms/step (best {best:.2f})")
    gemm, attn = step_flops(cfg, model.cfg.vocab_size)
    mm_share = sum(v for (k, _), v in table.items() if k == "matrix products") / sum(table.values())
    print(f"FLOP per step: GEMMs {gemm / 1e9:.3f} G, attention {attn / 1e9:.3f} G")
    print(f"achieved: {(gemm + attn) / best / 1e6:.1f} GFLOP/s over the step; GEMMs "
          f"{gemm / (mm_share * best) / 1e6:.1f} GFLOP/s in their share of it")
    peak, how = cpu_peak(a.ghz)
    print(f"peak {peak:.0f} GFLOP/s = {how}: the step reaches {(gemm + attn) / best / 1e6 / peak:.1%} of it")
    rates = {"MKL (torch.mm)": gemm_rate(lambda x, w: x @ w.T)}
    if onednn_available():
        rates["oneDNN"] = gemm_rate(_mm)
    print("measured 1024^3 GEMM: " + ", ".join(f"{k} {v:.0f} GFLOP/s" for k, v in rates.items()))


if __name__ == "__main__":
    main()
