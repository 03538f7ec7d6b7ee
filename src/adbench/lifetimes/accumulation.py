"""L1-L3: accumulation across backward calls, microbatch weighting, simulated data parallelism."""

from __future__ import annotations

import logging
from fractions import Fraction

import pandas as pd
import torch

from ..tables import values_table

log = logging.getLogger(__name__)
F64 = torch.float64


def _problem(n: int, n_in: int, n_out: int, seed: int):
    """A float64 linear layer and n regression examples, all from one seeded generator."""
    gen = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    model = torch.nn.Linear(n_in, n_out, dtype=F64)
    x = torch.randn(n, n_in, dtype=F64, generator=gen)   # (n, n_in)
    y = torch.randn(n, n_out, dtype=F64, generator=gen)  # (n, n_out)
    return model, x, y


def _grads(model: torch.nn.Module) -> torch.Tensor:
    """All parameter gradients flattened into one vector."""
    return torch.cat([p.grad.reshape(-1) for p in model.parameters()])


def _mse_grad(model, x, y, reduction: str = "mean", scale: float = 1.0) -> torch.Tensor:
    """Gradient of scale * mse(model(x), y) on a cleared model."""
    model.zero_grad(set_to_none=True)
    (scale * torch.nn.functional.mse_loss(model(x), y, reduction=reduction)).backward()
    return _grads(model)


def _accumulate(model, x, y, steps: int, micro: int, scaled: bool) -> torch.Tensor:
    """nanoGPT's loop: `steps` microbatches of `micro` examples, backward into one buffer, loss / steps if scaled."""
    model.zero_grad(set_to_none=True)
    for s in range(steps):
        sl = slice(s * micro, (s + 1) * micro)
        loss = torch.nn.functional.mse_loss(model(x[sl]), y[sl])
        (loss / steps if scaled else loss).backward()
    return _grads(model)


def measure_l1(n_examples: int, in_features: int, out_features: int, seed: int) -> dict:
    """L1: a second backward on a retained graph adds the same gradient again; zero_grad(None) clears."""
    model, x, y = _problem(n_examples, in_features, out_features, seed)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward(retain_graph=True)
    g1 = _grads(model).clone()
    loss.backward()
    g2 = _grads(model)
    opt.zero_grad(set_to_none=True)
    after = [repr(p.grad) for p in model.parameters()]
    # spelled out: a bare "None" cell would read back from CSV as missing
    text = (f"None for all {len(after)} parameters" if all(a == "None" for a in after)
            else "not cleared: " + ", ".join(after))
    rows = pd.DataFrame({"parameter": [n for n, _ in model.named_parameters()], "grad_after_zero_grad": after})
    items = [("max_abs_g2_minus_2g1", (g2 - 2 * g1).abs().max().item()), ("grad_after_zero_grad", text),
             ("max_abs_g2_minus_g1", (g2 - g1).abs().max().item())]
    return {"values": values_table("L1", items), "zero_grad": rows}


def measure_l2(n_examples: int, split: list[int], in_features: int, out_features: int, seed: int,
               nanogpt_steps: int, nanogpt_micro: int) -> dict:
    """L2: microbatch means weighted by size match the full batch; the unweighted sum does not."""
    model, x, y = _problem(n_examples, in_features, out_features, seed)
    full = _mse_grad(model, x, y)
    bounds = [sum(split[:i]) for i in range(len(split) + 1)]  # e.g. [0, 3, 7]
    model.zero_grad(set_to_none=True)
    weighted, unweighted = torch.zeros_like(full), torch.zeros_like(full)
    for a, b in zip(bounds, bounds[1:]):
        weighted += _mse_grad(model, x[a:b], y[a:b], scale=(b - a) / n_examples)
        unweighted += _mse_grad(model, x[a:b], y[a:b])
    # nanoGPT: nanogpt_steps equal microbatches, each loss divided by the step count, one buffer
    big_model, bx, by = _problem(nanogpt_steps * nanogpt_micro, in_features, out_features, seed)
    big_full = _mse_grad(big_model, bx, by)
    accumulated = _accumulate(big_model, bx, by, nanogpt_steps, nanogpt_micro, scaled=True)
    unscaled = _accumulate(big_model, bx, by, nanogpt_steps, nanogpt_micro, scaled=False)  # the bug: no /steps
    log.info("full-batch norm %.10f; weighted err %.3e; unweighted err %.3e", full.norm().item(),
             (weighted - full).abs().max().item(), (unweighted - full).abs().max().item())
    # scheme names are fixed strings; the configured sizes are columns (examples, microbatches, loss weights)
    sizes = [b - a for a, b in zip(bounds, bounds[1:])]
    big, k = nanogpt_steps * nanogpt_micro, len(sizes)
    table = pd.DataFrame([
        {"scheme": "full batch", "examples": n_examples, "microbatches": 1, "loss_weights": "1",
         "grad_norm": full.norm().item(), "max_abs_diff_vs_full": 0.0},
        {"scheme": "means weighted by size", "examples": n_examples, "microbatches": k,
         "loss_weights": " + ".join(f"{m}/{n_examples}" for m in sizes),
         "grad_norm": weighted.norm().item(), "max_abs_diff_vs_full": (weighted - full).abs().max().item()},
        {"scheme": "unweighted sum of means", "examples": n_examples, "microbatches": k,
         "loss_weights": " + ".join("1" for _ in sizes),
         "grad_norm": unweighted.norm().item(), "max_abs_diff_vs_full": (unweighted - full).abs().max().item()},
        {"scheme": "nanoGPT, loss / microbatches", "examples": big, "microbatches": nanogpt_steps,
         "loss_weights": f"1/{nanogpt_steps} each",
         "grad_norm": accumulated.norm().item(), "max_abs_diff_vs_full": (accumulated - big_full).abs().max().item()},
        {"scheme": "nanoGPT without the division", "examples": big, "microbatches": nanogpt_steps,
         "loss_weights": "1 each", "grad_norm": unscaled.norm().item(),
         "max_abs_diff_vs_full": (unscaled - big_full).abs().max().item()}])
    items = [("full_grad_norm", full.norm().item()),
             ("weighted_max_diff", (weighted - full).abs().max().item()),
             ("unweighted_max_diff", (unweighted - full).abs().max().item()),
             ("unweighted_norm_ratio", (unweighted.norm() / full.norm()).item()),
             ("nanogpt_microbatches", nanogpt_steps),
             ("nanogpt_accumulated_max_diff", (accumulated - big_full).abs().max().item()),
             ("nanogpt_unscaled_norm_ratio", (unscaled.norm() / big_full.norm()).item())]
    return {"values": values_table("L2", items), "schemes": table}


def example_weights(split: list[int], counted: bool) -> list[float]:
    """Weight of each example's loss in the global objective, by autograd: d objective / d loss_i.

    Not counted: the average of the rank means; counted: rank means weighted by example count.
    """
    losses = torch.ones(sum(split), dtype=F64, requires_grad=True)   # stand-ins for per-example losses
    bounds = [sum(split[:i]) for i in range(len(split) + 1)]
    means = [losses[a:b].mean() for a, b in zip(bounds, bounds[1:])]
    objective = (sum(c * m for c, m in zip(split, means)) / sum(split) if counted
                 else sum(means) / len(means))
    return torch.autograd.grad(objective, losses)[0].tolist()


def _fraction(w: float) -> str:
    """A weight as the documents print it, e.g. '1/6'."""
    return str(Fraction(w).limit_denominator(10_000))


def equal_ranks(split: list[int], in_features: int, out_features: int, seed: int) -> pd.DataFrame:
    """The L3 reductions for ranks of equal size: the average of rank means needs no weights there."""
    if len(set(split)) != 1:
        raise ValueError(f"config key 'lifetimes.equal_split' = {split} must hold one size repeated")
    n = sum(split)
    model, x, y = _problem(n, in_features, out_features, seed)
    full = _mse_grad(model, x, y)
    bounds = [sum(split[:i]) for i in range(len(split) + 1)]
    means = [_mse_grad(model, x[a:b], y[a:b]) for a, b in zip(bounds, bounds[1:])]
    naive = sum(means) / len(means)
    weighted = sum(c * m for c, m in zip(split, means)) / n
    return pd.DataFrame([{"split": "+".join(map(str, split)), "reduction": name,
                          "max_abs_diff_vs_single_process": (g - full).abs().max().item(), "grad_norm": g.norm().item()}
                         for name, g in (("average of rank means", naive), ("rank means weighted by count", weighted))])


def measure_l3(split: list[int], in_features: int, out_features: int, seed: int, equal_split: list[int]) -> dict:
    """L3: two simulated ranks; averaging rank means errs, count weighting or global sum/N agrees."""
    n = sum(split)
    model, x, y = _problem(n, in_features, out_features, seed)
    full = _mse_grad(model, x, y)
    bounds = [sum(split[:i]) for i in range(len(split) + 1)]
    means = [_mse_grad(model, x[a:b], y[a:b]) for a, b in zip(bounds, bounds[1:])]
    sums = [_mse_grad(model, x[a:b], y[a:b], reduction="sum") for a, b in zip(bounds, bounds[1:])]
    naive = sum(means) / len(means)
    weighted = sum(c * m for c, m in zip(split, means)) / n
    summed = sum(sums) / (n * out_features)  # every loss element counted once: 7 examples x 2 outputs
    # reduction names are fixed strings; what each divides by (ranks, examples, loss elements) is a column
    table = pd.DataFrame([{"reduction": name, "divisor": div,
                           "max_abs_diff_vs_single_process": (g - full).abs().max().item(),
                           "grad_norm": g.norm().item()}
                          for name, div, g in (("average of rank means", len(split), naive),
                                               ("rank means weighted by count", n, weighted),
                                               ("sum of rank sums / loss elements", n * out_features, summed))])
    w_naive, w_counted = example_weights(split, counted=False), example_weights(split, counted=True)
    items = [("naive_max_diff", (naive - full).abs().max().item()),
             ("weighted_max_diff", (weighted - full).abs().max().item()),
             ("sum_over_elements_max_diff", (summed - full).abs().max().item()),
             ("naive_weight_rank0", _fraction(w_naive[0])), ("naive_weight_rank1", _fraction(w_naive[-1])),
             ("counted_weight", _fraction(w_counted[0]))]
    return {"values": values_table("L3", items), "ranks": table,
            "equal": equal_ranks(equal_split, in_features, out_features, seed)}
