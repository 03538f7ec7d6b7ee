"""L1-L3: accumulation across backward calls, microbatch weighting, simulated data parallelism."""

from __future__ import annotations

import logging
from fractions import Fraction

import pandas as pd
import torch

from ..tables import values_table
from .problem import F64, _grads, _mse_grad, _problem

log = logging.getLogger(__name__)


def _accumulate(model, x, y, steps: int, micro: int, scaled: bool, clear_each: bool = False) -> torch.Tensor:
    """nanoGPT's loop: `steps` microbatches of `micro` examples, backward into one buffer, loss / steps if scaled
    (`clear_each`, a bug: the buffer cleared before every microbatch)."""
    model.zero_grad(set_to_none=True)
    for s in range(steps):
        if clear_each:
            model.zero_grad(set_to_none=True)
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
    from .clearing import clearing_table

    return {"values": values_table("L1", items), "zero_grad": rows,
            "clearing": clearing_table(n_examples, in_features, out_features, seed)}


# Measurement-level controls (claims/bugs.py), switches of the real code; None in every real run.
L2_BUGS = ("microbatch weight dropped", "= for += in the unweighted sum", "zero_grad inside the accumulation loop",
           "microbatch slices overlap")
L3_BUGS = ("rank weights dropped", "sums divided by the example count", "rank slices overlap")


def _bounds(split: list[int], bug: str | None = None) -> list[tuple[int, int]]:
    """(start, stop) of each microbatch or rank; the overlap bug reaches one example into the next slice."""
    edges = [sum(split[:i]) for i in range(len(split) + 1)]  # e.g. [0, 3, 7]
    reach = 1 if bug in (L2_BUGS[3], L3_BUGS[2]) else 0
    return [(a, min(b + reach, edges[-1])) for a, b in zip(edges, edges[1:])]


def _equal_count_division(split: list[int], in_features: int, out_features: int, seed: int,
                          bug: str | None) -> dict:
    """The L2 row for microbatch means summed and divided by their count, on `split`, against its full batch."""
    n = sum(split)
    model, x, y = _problem(n, in_features, out_features, seed)
    full = _mse_grad(model, x, y)
    g = sum(_mse_grad(model, x[a:b], y[a:b]) for a, b in _bounds(split, bug)) / len(split)
    return {"examples": n, "microbatches": len(split), "loss_weights": f"1/{len(split)} each",
            "grad_norm": g.norm().item(), "max_abs_diff_vs_full": (g - full).abs().max().item()}


def measure_l2(n_examples: int, split: list[int], in_features: int, out_features: int, seed: int,
               nanogpt_steps: int, nanogpt_micro: int, equal_split: list[int] | None = None,
               bug: str | None = None) -> dict:
    """L2: microbatch means weighted by size match the full batch; the unweighted sum does not; dividing by the
    microbatch count is right only for equal sizes (`equal_split`). `bug`: a measurement-level control (L2_BUGS)."""
    if bug is not None and bug not in L2_BUGS:
        raise ValueError(f"bug must be one of {L2_BUGS} or None, got {bug!r}")
    model, x, y = _problem(n_examples, in_features, out_features, seed)
    full = _mse_grad(model, x, y)
    model.zero_grad(set_to_none=True)
    weighted, unweighted = torch.zeros_like(full), torch.zeros_like(full)
    for a, b in _bounds(split, bug):
        weight = 1.0 if bug == L2_BUGS[0] else (b - a) / n_examples
        weighted += _mse_grad(model, x[a:b], y[a:b], scale=weight)
        if bug == L2_BUGS[1]:
            unweighted = _mse_grad(model, x[a:b], y[a:b])
        else:
            unweighted += _mse_grad(model, x[a:b], y[a:b])
    # nanoGPT: nanogpt_steps equal microbatches, each loss divided by the step count, one buffer
    big_model, bx, by = _problem(nanogpt_steps * nanogpt_micro, in_features, out_features, seed)
    big_full = _mse_grad(big_model, bx, by)
    accumulated = _accumulate(big_model, bx, by, nanogpt_steps, nanogpt_micro, scaled=True,
                              clear_each=bug == L2_BUGS[2])
    unscaled = _accumulate(big_model, bx, by, nanogpt_steps, nanogpt_micro, scaled=False)  # the bug: no /steps
    log.info("full-batch norm %.10f; weighted err %.3e; unweighted err %.3e", full.norm().item(),
             (weighted - full).abs().max().item(), (unweighted - full).abs().max().item())
    # scheme names are fixed strings; the configured sizes are columns (examples, microbatches, loss weights)
    sizes = list(split)
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
    if equal_split is not None:  # the sentence's two cases: the split above, and equal microbatches
        rows = [{"scheme": "means / microbatch count",
                 **_equal_count_division(split, in_features, out_features, seed, bug)},
                {"scheme": "equal sizes, means / microbatch count",
                 **_equal_count_division(equal_split, in_features, out_features, seed, bug)}]
        table = pd.concat([table, pd.DataFrame(rows)], ignore_index=True)
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


def equal_ranks(split: list[int], in_features: int, out_features: int, seed: int,
                bug: str | None = None) -> pd.DataFrame:
    """The L3 reductions for ranks of equal size: the average of rank means needs no weights there. `bug`: a
    measurement-level control (L3_BUGS)."""
    if len(set(split)) != 1:
        raise ValueError(f"config key 'lifetimes.equal_split' = {split} must hold one size repeated")
    n = sum(split)
    model, x, y = _problem(n, in_features, out_features, seed)
    full = _mse_grad(model, x, y)
    means = [_mse_grad(model, x[a:b], y[a:b]) for a, b in _bounds(split, bug)]
    naive = sum(means) / len(means)
    weighted = sum(c * m for c, m in zip(split, means)) / n
    return pd.DataFrame([{"split": "+".join(map(str, split)), "reduction": name,
                          "max_abs_diff_vs_single_process": (g - full).abs().max().item(), "grad_norm": g.norm().item()}
                         for name, g in (("average of rank means", naive), ("rank means weighted by count", weighted))])


def rank_reductions(split: list[int], in_features: int, out_features: int, seed: int,
                    bug: str | None = None) -> pd.DataFrame:
    """The simulated L3 reductions of `split` (one in-process rank per entry) against the single process.
    `bug`: a measurement-level control (L3_BUGS); None in every real run."""
    if bug is not None and bug not in L3_BUGS:
        raise ValueError(f"bug must be one of {L3_BUGS} or None, got {bug!r}")
    n = sum(split)
    model, x, y = _problem(n, in_features, out_features, seed)
    full = _mse_grad(model, x, y)
    bounds = _bounds(split, bug)
    means = [_mse_grad(model, x[a:b], y[a:b]) for a, b in bounds]
    sums = [_mse_grad(model, x[a:b], y[a:b], reduction="sum") for a, b in bounds]
    naive = sum(means) / len(means)
    weighted = naive if bug == L3_BUGS[0] else sum(c * m for c, m in zip(split, means)) / n
    elements = n if bug == L3_BUGS[1] else n * out_features  # every loss element counted once: 7 x 2 outputs
    # reduction names are fixed strings; what each divides by (ranks, examples, loss elements) is a column
    return pd.DataFrame([{"reduction": name, "divisor": div, "max_abs_diff_vs_single_process": (g - full).abs().max().item(),
                          "grad_norm": g.norm().item()}
                         for name, div, g in (("average of rank means", len(split), naive),
                                              ("rank means weighted by count", n, weighted),
                                              ("sum of rank sums / loss elements", elements, sum(sums) / elements),
                                              ("sum of rank sums / examples", n, sum(sums) / n))])


def measure_l3(split: list[int], in_features: int, out_features: int, seed: int, equal_split: list[int],
               wide_split: list[int] | None = None, tokens: dict | None = None, bug: str | None = None) -> dict:
    """L3: simulated ranks; averaging rank means errs, count weighting or global sum/N agrees (`ranks`; `wide`:
    the same reductions on `wide_split`, three ranks or more, as the real all-reduce runs them; `tokens`: rank
    token means against the global token count). `bug`: a measurement-level control (L3_BUGS)."""
    table = rank_reductions(split, in_features, out_features, seed, bug)
    err = table.set_index("reduction").max_abs_diff_vs_single_process
    w_naive, w_counted = example_weights(split, counted=False), example_weights(split, counted=True)
    items = [("naive_max_diff", err["average of rank means"]),
             ("weighted_max_diff", err["rank means weighted by count"]),
             ("sum_over_elements_max_diff", err["sum of rank sums / loss elements"]),
             ("naive_weight_rank0", _fraction(w_naive[0])), ("naive_weight_rank1", _fraction(w_naive[-1])),
             ("counted_weight", _fraction(w_counted[0]))]
    out = {"values": values_table("L3", items), "ranks": table,
           "equal": equal_ranks(equal_split, in_features, out_features, seed, bug)}
    if wide_split is not None:
        out["wide"] = rank_reductions(wide_split, in_features, out_features, seed, bug).assign(
            split="+".join(map(str, wide_split)))
    if tokens is not None:
        from .tokens import token_table

        out["tokens"] = token_table(**tokens, in_features=in_features, out_features=out_features, seed=seed)
    return out
