"""Where one C1 training step's time goes, and how close it comes to one core's float32 peak.

    python -m adbench.charlm.profile [--variant correct] [--steps 20] [--mkl] [--corpus results/corpus/corpus.txt]

Runs `train.step` (the job's own step) on one thread at the configured size and prints three tables:
  1. torch.profiler self time per step by kind of work (matrix products, attention, element-wise ops,
     the optimizer's kernels, autograd and Python overhead) and by phase (forward, backward, ...);
  2. CPU seconds per step without the profiler (thread time, so other processes' load counts less);
  3. float32 FLOP per step (torch's FlopCounterMode), the achieved rate, and the peak it is a fraction of:
     lanes x FMA pipes x 2 x GHz from the CPU flags, and measured 1024^3 GEMMs for MKL and oneDNN.
`--mkl` profiles the default GEMM path (MKL) instead of oneDNN, i.e. the step before the speed-up.
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict
from pathlib import Path

import torch
import yaml
from torch.profiler import ProfilerActivity, profile, record_function
from torch.utils.flop_counter import FlopCounterMode

from ..corpus import default_text, split
from .model import _mm, onednn_available
from .train import CharGPT, GPTConfig, encode, get_batch, make_optimizer, step, switches

PHASES = ("batch", "forward", "backward", "optimizer")


def kind(name: str) -> str:
    """Kind of work of one profiler event, from its name."""
    if name in ("aten::mm", "aten::addmm", "aten::bmm", "mkldnn::_linear_pointwise"):
        return "matrix products"
    if "scaled_dot_product" in name:
        return "attention (SDPA kernels)"
    if name.startswith("aten::_foreach") or name in ("aten::_fused_adamw_", "aten::lerp_", "aten::addcdiv_"):
        return "optimizer kernels"
    if name.startswith("autograd::") or "Backward" in name or name.startswith("torch::autograd"):
        return "autograd engine"
    if name.startswith(("aten::", "mkldnn::")):
        return "other aten ops (element-wise, norms, loss)"
    return "Python (outside any op)"  # record_function ranges, Optimizer.step, autograd.Function wrappers


def setup(variant: str, text: str, cfg: dict, onednn: bool):
    """Model, optimizer, batch source and switches exactly as train_variant builds them."""
    sw = switches(variant)
    vocab = "".join(sorted(set(text)))
    torch.manual_seed(cfg["seed"])
    model = CharGPT(GPTConfig(len(vocab), cfg["block_size"], cfg["n_layer"], cfg["n_head"], cfg["n_embd"],
                              sw["detach_positions"])).use_onednn(onednn)
    opt = make_optimizer(model, cfg["lr"], cfg["weight_decay"], cfg["betas"])
    data, gen = encode(split(text, 0.1)[0], vocab), torch.Generator().manual_seed(cfg["seed"])
    clip = cfg["control_clip"] if sw["clipped"] else cfg["grad_clip"]
    return model, opt, lambda: get_batch(data, cfg["batch_size"], cfg["block_size"], sw["shift_targets"], gen), sw, clip


def run_steps(n: int, model, opt, batch, sw, cfg, clip, log_every: int) -> None:
    """n training steps as train_variant runs them (norms at every log_every-th step)."""
    for i in range(1, n + 1):
        with record_function("batch"):  # a no-op range unless the profiler runs (about 2 us)
            x, y = batch()
        step(model, opt, x, y, sw, cfg["loss_scale"], clip, log_norms=i % log_every == 0)


def phase(e) -> str:
    """Phase of one profiler event, from its enclosing ranges: backward ops run inside the autograd
    engine's evaluate_function events, optimizer kernels inside Optimizer.step / zero_grad."""
    while e is not None:
        if e.name.startswith("Optimizer."):
            return "optimizer"
        if e.name.startswith("autograd::engine::evaluate_function"):
            return "backward"
        if e.name == "batch":
            return "batch"
        e = e.cpu_parent
    return "forward"  # model, loss, the logged steps' gradient norms


def profile_table(n: int, *args) -> tuple[dict, float]:
    """{(kind, phase): self ms per step} from torch.profiler over n steps, and the profiled ms per step."""
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        t0 = time.perf_counter()
        run_steps(n, *args)
        wall = (time.perf_counter() - t0) * 1e3 / n
    table = defaultdict(float)
    for e in prof.events():
        table[kind(e.name), phase(e)] += e.self_cpu_time_total / 1e3 / n  # us -> ms per step
    return dict(table), wall


def cpu_ms_per_step(n: int, repeats: int, *args) -> list[float]:
    """Thread CPU ms per step without the profiler, `repeats` blocks of n steps."""
    out = []
    for _ in range(repeats):
        t0 = time.thread_time()
        run_steps(n, *args)
        out.append((time.thread_time() - t0) * 1e3 / n)
    return out


def step_flops(model, opt, batch, sw, cfg, clip) -> tuple[int, int]:
    """(all counted FLOP, matrix-product FLOP) of one step; FlopCounterMode counts GEMMs and attention."""
    with FlopCounterMode(display=False) as fc:
        x, y = batch()
        step(model, opt, x, y, sw, cfg["loss_scale"], clip, log_norms=False)
    per_op = defaultdict(int)
    for ops in fc.get_flop_counts().values():
        for op, f in ops.items():
            per_op[str(op)] = max(per_op[str(op)], f)  # the Global row repeats the modules' counts
    total = fc.get_total_flops()
    return total, sum(f for op, f in per_op.items() if "mm" in op)


def cpu_peak(ghz: float | None) -> tuple[float, str]:
    """Theoretical float32 GFLOP/s of one core: SIMD lanes x 2 FMA pipes x 2 (an FMA is two FLOP) x GHz."""
    text = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    flags = set(next((ln.split(":", 1)[1].split() for ln in text.splitlines() if ln.startswith("flags")), []))
    lanes = 16 if "avx512f" in flags else 8 if "avx2" in flags else 4
    mhz = next((float(ln.split(":")[1]) for ln in text.splitlines() if ln.startswith("cpu MHz")), 0.0)
    ghz = ghz or mhz / 1e3
    how = (f"{lanes} fp32 lanes ({'avx512f' if lanes == 16 else 'avx2' if lanes == 8 else 'sse'}) x 2 FMA pipes "
           f"x 2 FLOP x {ghz:.2f} GHz ({'given' if mhz / 1e3 != ghz else '/proc/cpuinfo, nominal: turbo runs faster'})")
    return lanes * 2 * 2 * ghz, how


def gemm_rate(fn, n: int = 1024, reps: int = 5) -> float:
    """GFLOP/s of an n^3 float32 GEMM on this thread (best of reps)."""
    a, b = torch.randn(n, n), torch.randn(n, n)
    fn(a, b)
    best = min(_timed(fn, a, b) for _ in range(reps))
    return 2 * n ** 3 / best / 1e9


def _timed(fn, a, b) -> float:
    t0 = time.thread_time()
    fn(a, b)
    return time.thread_time() - t0


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--variant", default="correct")
    ap.add_argument("--steps", type=int, default=20, help="profiled steps (after as many warm-up steps)")
    ap.add_argument("--repeats", type=int, default=3, help="blocks of --steps timed without the profiler")
    ap.add_argument("--mkl", action="store_true", help="the default GEMM path (MKL), as before the speed-up")
    ap.add_argument("--ghz", type=float, default=None, help="core clock for the peak (default: /proc/cpuinfo)")
    ap.add_argument("--corpus", default="results/corpus/corpus.txt", help="text (default text if absent)")
    a = ap.parse_args(argv)
    torch.set_num_threads(1)
    cfg = _config("config.yaml")
    text = Path(a.corpus).read_text(encoding="utf-8") if Path(a.corpus).exists() else default_text()
    model, opt, batch, sw, clip = setup(a.variant, text, cfg, onednn=not a.mkl)
    args = (model, opt, batch, sw, cfg, clip, cfg["log_every"])
    run_steps(a.steps, *args)  # warm-up: allocator, oneDNN primitive cache, optimizer state
    table, wall = profile_table(a.steps, *args)
    cpu = cpu_ms_per_step(a.steps, a.repeats, *args)
    flops, mm_flops = step_flops(model, opt, batch, sw, cfg, clip)
    peak, how = cpu_peak(a.ghz)
    gemm = "oneDNN" if model.onednn else "MKL (torch default)"
    print(f"C1 step, variant {a.variant}, GEMMs on {gemm}, 1 thread, torch {torch.__version__}")
    kinds = sorted({k for k, _ in table}, key=lambda k: -sum(v for (kk, _), v in table.items() if kk == k))
    print(f"\ntorch.profiler self time, ms per step over {a.steps} steps (the profiler adds overhead)")
    print(f"{'kind of work':44s}" + "".join(f"{p:>10s}" for p in PHASES) + f"{'total':>10s}{'share':>8s}")
    total = sum(table.values())
    for k in kinds:
        row = [table.get((k, p), 0.0) for p in PHASES]
        print(f"{k:44s}" + "".join(f"{v:10.2f}" for v in row) + f"{sum(row):10.2f}{100 * sum(row) / total:7.1f}%")
    cols = [sum(v for (_, pp), v in table.items() if pp == p) for p in PHASES]
    print(f"{'total':44s}" + "".join(f"{v:10.2f}" for v in cols) + f"{total:10.2f}   wall {wall:.2f} ms/step")
    best = min(cpu)
    mm_ms = sum(v for (k, _), v in table.items() if k == "matrix products")
    print(f"\nwithout the profiler: {', '.join(f'{c:.2f}' for c in cpu)} CPU ms/step (best {best:.2f})")
    print(f"\nFLOP per step {flops / 1e9:.2f} G (matrix products {mm_flops / 1e9:.2f} G, attention the rest)")
    print(f"achieved {flops / best / 1e6:.1f} GFLOP/s over the whole step; matrix products alone "
          f"{mm_flops / (mm_ms or 1) / 1e6:.1f} GFLOP/s (profiled time)")
    print(f"peak {peak:.0f} GFLOP/s: {how}; achieved fraction {flops / best / 1e6 / peak:.1%}")
    rates = {"MKL torch.mm": gemm_rate(torch.mm)}
    if onednn_available():
        rates["oneDNN"] = gemm_rate(lambda x, w: _mm(x, w))
    print("measured 1024^3 GEMM: " + ", ".join(f"{k} {v:.0f} GFLOP/s" for k, v in rates.items()))


def _config(path: str) -> dict:
    """charlm.train of the project's config (run from the repository root), else its default values."""
    if Path(path).exists():
        return yaml.safe_load(Path(path).read_text(encoding="utf-8"))["charlm"]["train"]
    return dict(batch_size=32, block_size=64, n_layer=4, n_head=4, n_embd=64, lr=2e-3, weight_decay=0.1,
                betas=[0.9, 0.99], grad_clip=0.0, control_clip=1.0, log_every=10, loss_scale=40.0, seed=0)


if __name__ == "__main__":
    main()
