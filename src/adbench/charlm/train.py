"""One training loop with four bug switches (and a clipping control); logs loss and per-group gradient norms before clipping."""

from __future__ import annotations

import io
import logging
import math
import time
from typing import Callable

import pandas as pd
import torch
import torch.nn.functional as F

from . import backend
from .model import CharGPT, GPTConfig, onednn_available, param_groups
from .variants import RAN_THROUGH, VARIANTS, switches  # noqa: F401 - VARIANTS re-exported for callers

log = logging.getLogger(__name__)

# Measurement-level controls (claims/bugs.py), never on in a real run: the loss scale dropped before backward (the
# scaled run's gradient is the correct run's); the detached run's `pos.detach()` with its result discarded (the
# table stays attached); the (B, T, vocab) logits handed to cross_entropy unflattened (a loud bug: it raises).
TRAIN_BUGS = ("scale dropped before backward", "detach result discarded", "logits not flattened")


def encode(text: str, vocab: str) -> torch.Tensor:
    """Characters -> int64 ids in `vocab` order."""
    index = {ch: i for i, ch in enumerate(vocab)}
    return torch.tensor([index[ch] for ch in text], dtype=torch.long)


def get_batch(data: torch.Tensor, batch_size: int, block_size: int, shift_targets: bool,
              gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """Random windows: x (B, T) and y (B, T); y is x moved on by one unless the bug is on."""
    starts = torch.randint(len(data) - block_size - 1, (batch_size,), generator=gen)
    idx = starts[:, None] + torch.arange(block_size)  # (B, T): one gather instead of B slices
    x = data[idx]
    if not shift_targets:
        return x, x.clone()  # the bug: the target is the character the model was just given
    return x, data[idx + 1]


def group_grad_norms(model: CharGPT) -> dict[str, float]:
    """L2 norm of the current .grad per parameter group (None counts as 0) and the total."""
    out = {}
    for name, params in param_groups(model).items():
        sq = sum(float(p.grad.double().pow(2).sum()) for p in params if p.grad is not None)
        out[name] = math.sqrt(sq)
    out["total"] = math.sqrt(sum(v * v for v in out.values()))
    return out


def step(model: CharGPT, opt: torch.optim.Optimizer, x: torch.Tensor, y: torch.Tensor, sw: dict,
         loss_scale: float, grad_clip: float, log_norms: bool,
         bug: str | None = None) -> tuple[torch.Tensor, dict[str, float] | None]:
    """One optimizer step; the unscaled loss as a 0-dim tensor (no host sync) and, when `log_norms`,
    the gradient norms measured before clipping (None otherwise: they cost a pass over every .grad).
    `bug`: a measurement-level control (TRAIN_BUGS); None in every real run."""
    if sw["zero_grad"]:
        opt.zero_grad(set_to_none=True)
    logits = model(x)  # (B, T, vocab)
    if bug == TRAIN_BUGS[2]:
        loss = F.cross_entropy(logits, y)  # class dimension taken as T: raises on the shapes
    else:
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
    (loss * loss_scale if sw["scale_loss"] and bug != TRAIN_BUGS[0] else loss).backward()
    norms = group_grad_norms(model) if log_norms else None
    if grad_clip > 0:
        torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
    opt.step()
    return loss.detach(), norms


def train_step(model: CharGPT, opt: torch.optim.Optimizer, x: torch.Tensor, y: torch.Tensor,
               sw: dict, loss_scale: float, grad_clip: float) -> tuple[float, dict[str, float]]:
    """One optimizer step; returns the unscaled loss and gradient norms measured before clipping."""
    loss, norms = step(model, opt, x, y, sw, loss_scale, grad_clip, log_norms=True)
    return loss.item(), norms


def make_optimizer(model: CharGPT, lr: float, weight_decay: float, betas) -> torch.optim.AdamW:
    """AdamW with nanoGPT's grouping: decay matrices and tables, not biases or norms. foreach: one
    multi-tensor op per update stage instead of one op per parameter, bit-identical to the loop."""
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    return torch.optim.AdamW([{"params": decay, "weight_decay": weight_decay},
                              {"params": no_decay, "weight_decay": 0.0}], lr=lr, betas=tuple(betas), foreach=True)


def timing_run(cfg: GPTConfig, batch_size: int) -> Callable[[str, int], None]:
    """`run(backend, n)`: n steps of the correct loop on a throwaway model and random tokens, for
    backend.interleaved (the job's own model, batches and random state stay untouched)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = CharGPT(GPTConfig(cfg.vocab_size, cfg.block_size, cfg.n_layer, cfg.n_head, cfg.n_embd))
        x = torch.randint(cfg.vocab_size, (batch_size, cfg.block_size))
    opt, sw = make_optimizer(model, 1e-4, 0.1, (0.9, 0.99)), switches("correct")

    def run(name: str, n: int) -> None:
        model.use_onednn(name == "onednn")
        for _ in range(n):
            step(model, opt, x, x, sw, 1.0, 0.0, log_norms=False)
    return run


def gemm_choice(setting: str, cfg: GPTConfig, batch_size: int) -> dict:
    """charlm.gemm_backend resolved for this job: backend.decide with the C1 step as the timed work."""
    threads = torch.get_num_threads()
    # thread CPU time ignores other processes' share of the core; with several threads only wall time counts all
    clock = time.thread_time if threads == 1 else time.perf_counter
    shape = {"vocab_size": cfg.vocab_size, "block_size": cfg.block_size, "n_layer": cfg.n_layer,
             "n_head": cfg.n_head, "n_embd": cfg.n_embd, "batch_size": batch_size}
    key = backend.machine_key(shape, torch.__version__, threads)
    record = backend.decide(setting, onednn_available(),
                            lambda: backend.interleaved(timing_run(cfg, batch_size), clock=clock), key)
    return record | ({"clock": clock.__name__} if "ms_per_step" in record else {})


def train_variant(variant: str, train_text: str, vocab: str, steps: int, batch_size: int,
                  block_size: int, n_layer: int, n_head: int, n_embd: int, lr: float,
                  weight_decay: float, betas, grad_clip: float, control_clip: float, log_every: int,
                  loss_scale: float, seed: int, gemm_backend: str = "auto", bug: str | None = None) -> dict:
    """Train one variant; outputs the loss curve, gradient norms and the final weights (bytes).
    `gemm_backend` (charlm.gemm_backend): the linear layers' GEMMs on torch's default, on oneDNN (model.py;
    same products, another summation order), or 'auto', the one measured faster here (adbench.charlm.backend).
    A bug run that raises is recorded (run.csv's `raised`, `steps_completed`) and its outputs so far written: the
    documents' bugs are silent, and the claim that says so reads it. The correct run's error is the job's error.
    `bug`: a measurement-level control (TRAIN_BUGS); None in every real run."""
    if bug is not None and bug not in TRAIN_BUGS:
        raise ValueError(f"unknown C1 training bug {bug!r}; expected one of {TRAIN_BUGS}")
    sw = switches(variant)
    clip = control_clip if sw["clipped"] else grad_clip  # 0 = no clipping
    # the discarded `pos.detach()` leaves the graph as if the table were never detached
    cfg = GPTConfig(len(vocab), block_size, n_layer, n_head, n_embd, sw["detach_positions"] and bug != TRAIN_BUGS[1])
    choice = gemm_choice(gemm_backend, cfg, batch_size)  # before the seed: its timing draws no job randomness
    log.info("GEMM backend %s (%s)", choice["chosen"], choice["decided_by"])
    torch.manual_seed(seed)  # same initial weights for every variant
    model = CharGPT(cfg).use_onednn(choice["chosen"] == "onednn")
    opt = make_optimizer(model, lr, weight_decay, betas)
    data = encode(train_text, vocab)
    gen = torch.Generator().manual_seed(seed)  # same batches for every variant
    losses, norms, t0 = [], [], time.perf_counter()  # losses: 0-dim tensors, read once at the end
    raised = RAN_THROUGH
    try:
        for i in range(1, steps + 1):
            x, y = get_batch(data, batch_size, block_size, sw["shift_targets"], gen)
            logged = i == 1 or i % log_every == 0 or i == steps
            loss, gn = step(model, opt, x, y, sw, loss_scale, clip, log_norms=logged, bug=bug)
            losses.append(loss)
            if logged:
                norms += [{"variant": variant, "step": i, "group": g, "grad_norm": v} for g, v in gn.items()]
                log.info("%s step %d/%d loss %.4f grad-norm total %.3g (%.1f s)", variant, i, steps,
                         loss.item(), gn["total"], time.perf_counter() - t0)
    except Exception as e:  # a loud bug: what the documents' four are not
        if variant == "correct":
            raise
        raised = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
        log.error("%s raised at step %d: %s", variant, len(losses) + 1, raised)
    curve = pd.DataFrame({"variant": variant, "step": range(1, len(losses) + 1),
                          "train_loss": torch.stack(losses).tolist() if losses else []})  # float32 values, as .item() gives them
    buf = io.BytesIO()
    torch.save({"config": cfg.to_dict(), "vocab": vocab, "variant": variant,
                "state_dict": model.state_dict()}, buf)
    run = {"variant": variant, "grad_clip": clip, "parameters": sum(p.numel() for p in model.parameters()), "steps": steps,
           # `_volatile`: wall time differs between identical runs (README, "What lands where")
           "train_seconds_volatile": time.perf_counter() - t0, "torch_threads": torch.get_num_threads(),
           "gemm_backend": choice["chosen"], "raised": raised, "steps_completed": len(losses)}  # the outputs say which summation order made them
    return {"curve": curve, "grad_norms": pd.DataFrame(norms), "weights": buf.getvalue(), "run": pd.DataFrame([run]),
            "_meta": {**run, "switches": sw, "vocab_size": len(vocab), "gemm": backend.LABELS[choice["chosen"]],
                      "gemm_choice": choice}}


def measure_train(variant: str, corpus_text: str, train_text: str, **cfg) -> dict:
    """Train `variant` on the training split; vocabulary is the corpus's sorted character set."""
    return train_variant(variant, train_text, "".join(sorted(set(corpus_text))), **cfg)
