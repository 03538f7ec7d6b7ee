"""T1-T4: each hand-written backward rule on the documents' inputs beside torch float64 autograd.

Every measure_t* takes `bug` (default None, the default run): a realistic mistake switched on in the rule or the
reference it names, for the measurement-level controls in claims_bugs.py.
"""

from __future__ import annotations

import math

import pandas as pd
import torch

from ..tables import values_table
from . import averaging, epsilon, masking, multihead, qkv, rules, saved, sdpa, vocab
from .entries import entries as _entries

F64 = torch.float64
OVERWRITE_TOKENS = "overwrite token gradients"   # the summed loss's per-token gradients accumulated with `=`
DETACHED_STATS = "detached statistics"    # the reference layer norm with its mean and variance detached
WRONG_REDUCTION = "mean over all positions"  # the mean divides by the sequence length, ignored targets included


def _t(a) -> torch.Tensor:
    return torch.tensor(a, dtype=F64)


def _items(rows: list[dict]) -> list[tuple[str, float]]:
    """values rows named like dX_0_1 (vectors: xhat_2)."""
    out = []
    for r in rows:
        vec = all(q["row"] == 0 for q in rows if q["matrix"] == r["matrix"])
        out.append((f"{r['matrix']}_{r['col']}" if vec else f"{r['matrix']}_{r['row']}_{r['col']}", r["hand"]))
    return out


def _maxdiff(a: torch.Tensor, b: torch.Tensor) -> float:
    return (a - b.detach()).abs().max().item()


def measure_t1(x: list, w: list, upstream: list, bug: str | None = None) -> dict:
    """T1: dX = G Wᵀ and dW = Xᵀ G by hand vs autograd; the two single-path sums; what the mm node saves."""
    X, W, G = _t(x), _t(w), _t(upstream)
    dX, dW = rules.matmul_backward(X, W, G, bug)
    xt, wt = X.clone().requires_grad_(), W.clone().requires_grad_()
    (xt @ wt).backward(G)
    # dL/dX[0,1]: X[0,1] reaches Y[0,0] via W[1,0] and Y[0,1] via W[1,1]
    path_x = G[0, 0].item() * W[1, 0].item() + G[0, 1].item() * W[1, 1].item()
    # dL/dW[0,1]: W[0,1] is reused by both rows of X
    path_w = X[0, 0].item() * G[0, 1].item() + X[1, 0].item() * G[1, 1].item()
    rows = _entries("Y", X @ W) + _entries("dX", dX, xt.grad) + _entries("dW", dW, wt.grad)
    items = _items(rows) + [("path_dX_0_1", path_x), ("path_dW_0_1", path_w),
                            ("max_diff_dX", _maxdiff(dX, xt.grad)), ("max_diff_dW", _maxdiff(dW, wt.grad))]
    return {"values": values_table("T1", items), "matrices": pd.DataFrame(rows), "saved": saved.matmul_saved(x, w, bug)}


def token_reductions(vocab: int, tokens: list[int], padded: int, width: int, seed: int,
                     bug: str | None = None) -> pd.DataFrame:
    """Cross-entropy of the first n tokens of one seeded batch through a shared float64 weight W
    (logits = x W), reduced by sum and by mean; with `padded` trailing targets set to the ignore index
    the mean divides by the tokens still counted. One row per (n, ignored). Bugs: WRONG_REDUCTION divides the
    sum by n; OVERWRITE_TOKENS sums per-token gradients with `=`."""
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(max(tokens), width, dtype=F64, generator=gen)   # (N, width)
    w0 = torch.randn(width, vocab, dtype=F64, generator=gen)        # (width, vocab)
    targets = torch.randint(vocab, (max(tokens),), generator=gen)   # (N,)
    ignore = -100  # cross_entropy's default ignore_index

    def grad(n: int, y: torch.Tensor, reduction: str) -> torch.Tensor:
        w = w0.clone().requires_grad_()
        if bug == OVERWRITE_TOKENS and reduction == "sum":
            for i in range(n):               # the bug: each token's gradient replaces the last
                w.grad = None
                torch.nn.functional.cross_entropy(x[i:i + 1] @ w, y[i:i + 1], reduction="sum",
                                                  ignore_index=ignore).backward()
            return w.grad
        kind = "sum" if bug == WRONG_REDUCTION else reduction
        loss = torch.nn.functional.cross_entropy(x[:n] @ w, y, reduction=kind, ignore_index=ignore)
        (loss / n if bug == WRONG_REDUCTION and reduction == "mean" else loss).backward()
        return w.grad

    rows = []
    for n in tokens:
        for pad in sorted({0, padded}):
            if pad >= n:
                continue
            y = targets[:n].clone()
            y[n - pad:] = ignore
            g_sum, g_mean = grad(n, y, "sum"), grad(n, y, "mean")
            rows.append({"tokens": n, "ignored": pad, "counted": n - pad, "grad_norm_sum": g_sum.norm().item(),
                         "grad_norm_mean": g_mean.norm().item(),
                         "sum_over_mean": (g_sum.norm() / g_mean.norm()).item()})
    return pd.DataFrame(rows)


def measure_t2(logits: list, target: int, overflow_logits: list, reduction: dict, output_layer: dict,
               bug: str | None = None) -> dict:
    """T2: softmax cross-entropy by hand vs torch; the naive softmax overflow and the shifted fix;
    the sum and mean reductions over token counts (`reduction`: tokens, padded, width, seed) and per-token
    against per-sequence means; the output matrix's gradients (`output_layer`: vocab, width, target, seed);
    fused cross-entropy."""
    p, loss, dz = rules.softmax_xent_backward(logits, target, bug)
    zt = _t(logits).requires_grad_()
    ref = vocab.loss_of(zt, target, bug)
    ref.backward()
    try:
        rules.softmax_naive(overflow_logits)
        naive = "no error"
    except OverflowError as err:  # math.exp(1000) exceeds binary64
        naive = f"OverflowError: {err}"
    try:
        stable = rules.softmax_shifted(overflow_logits, bug)
    except OverflowError:  # only under rules.MISSING_SHIFT
        stable = [math.nan] * len(overflow_logits)
    rows = (_entries("p", _t(p)) + _entries("dz", _t(dz), zt.grad)
            + _entries("stable_p", _t(stable), torch.softmax(_t(overflow_logits), 0)))
    items = _items(rows) + [("loss", loss), ("torch_loss_diff", abs(loss - ref.item())),
                            ("max_diff_dz", _maxdiff(_t(dz), zt.grad)), ("grad_sum", sum(dz)),
                            ("naive_overflow", naive)]
    return {"values": values_table("T2", items), "matrices": pd.DataFrame(rows),
            "reductions": token_reductions(len(logits), **reduction, bug=bug),
            "averaging": averaging.token_vs_sequence(len(logits), **reduction, bug=bug),
            **vocab.output_layer(**output_layer, bug=bug),
            "fused": vocab.fused_cross_entropy(overflow_logits, target, bug)}


def measure_t3(q: list, k: list, v: list, upstream: list, mask_fill: float, projections: dict,
               bug: str | None = None) -> dict:
    """T3: one attention head by hand vs autograd, dS row sums, and the forgotten-1/√D control; the
    head under a causal mask; Q, K, V projected from one X (`projections`) with the weights' gradients and
    Dm // D heads; the fused SDPA kernel."""
    Q, K, V, G = _t(q), _t(k), _t(v), _t(upstream)
    h = rules.attention_backward(Q, K, V, G, bug=bug)
    unscaled = rules.attention_backward(Q, K, V, G, forget_scale=True, bug=bug)   # the same rule, 1/√D dropped
    qt, kt, vt = (t.clone().requires_grad_() for t in (Q, K, V))
    (torch.softmax(qt @ kt.T / math.sqrt(Q.shape[1]), dim=-1) @ vt).backward(G)
    ref = {"dQ": qt.grad, "dK": kt.grad, "dV": vt.grad}
    rows = [r for n in ("S", "A", "O", "dV", "dA", "dS", "dQ", "dK") for r in _entries(n, h[n], ref.get(n))]
    sums = h["dS"].sum(dim=1)
    items = _items(rows) + [(f"dS_rowsum_{i}", sums[i].item()) for i in range(len(sums))]
    items += [(f"max_diff_{n}", _maxdiff(h[n], ref[n])) for n in ("dQ", "dK", "dV")]
    # negative control: the same comparison must flag dQ and dK but pass dV
    control = pd.DataFrame([{"gradient": n, "max_diff_correct": _maxdiff(h[n], ref[n]),
                             "max_diff_forgot_scale": _maxdiff(unscaled[n], ref[n]),
                             "ratio_forgot_over_correct": (unscaled[n].norm() / h[n].norm()).item(),
                             "caught": bool(_maxdiff(unscaled[n], ref[n]) > 1e-12)} for n in ("dQ", "dK", "dV")])
    items += [(f"control_ratio_{r.gradient}", r.ratio_forgot_over_correct) for r in control.itertuples()]
    return {"values": values_table("T3", items), "matrices": pd.DataFrame(rows), "control": control,
            **masking.causal_mask(q, k, v, upstream, mask_fill, bug),
            "projections": qkv.projection_routes(**projections, bug=bug),
            "projection_weights": qkv.projection_weights(**projections, bug=bug),
            "multihead": multihead.multihead_routes(**projections, bug=bug),
            "fused": sdpa.fused_attention(q, k, v, upstream, bug)}


def _reference_layer_norm(x: torch.Tensor, gamma: torch.Tensor, beta: torch.Tensor, eps: float,
                          bug: str | None) -> torch.Tensor:
    """torch's layer_norm (DETACHED_STATS: a module whose mean and variance were computed detached)."""
    if bug != DETACHED_STATS:
        return torch.nn.functional.layer_norm(x, (x.shape[-1],), gamma, beta, eps)
    mean, var = x.detach().mean(), x.detach().var(unbiased=False)
    return gamma * (x - mean) / torch.sqrt(var + eps) + beta


def measure_t4(x: list, gamma: list, beta: list, upstream: list, eps: float, near_constant_x: list,
               eps_compare: list[float], bug: str | None = None) -> dict:
    """T4: layer norm statistics and backward by hand vs torch.nn.functional.layer_norm; the backward as D
    independent divisions (dx = r u, matrix dx_independent) beside torch's; what torch's node saves; dx at two
    epsilons on the documented row and on a nearly constant one."""
    X, Ga, Be, G = _t(x), _t(gamma), _t(beta), _t(upstream)
    h = rules.layernorm_backward(X, Ga, Be, G, eps, bug)
    xt, gt, bt = (t.clone().requires_grad_() for t in (X, Ga, Be))
    _reference_layer_norm(xt, gt, bt, eps, bug).backward(G)
    ref = {"dx": xt.grad, "dgamma": gt.grad, "dbeta": bt.grad}
    rows = [r for n in ("xhat", "dx", "dgamma", "dbeta") for r in _entries(n, h[n], ref.get(n))]
    items = [(n, h[n].item()) for n in ("mean", "variance", "rstd")] + _items(rows)
    items += [(f"max_diff_{n}", _maxdiff(h[n], ref[n])) for n in ("dx", "dgamma", "dbeta")]
    # summed in index order; the documents' -2.220e-16 is the sum of the torch dx
    items += [("torch_dx_sum", xt.grad.sum().item()), ("hand_dx_sum", h["dx"].sum().item())]
    # after the values: the independent-division backward is a control, not a documented quantity
    rows += _entries("dx_independent", rules.layernorm_backward(X, Ga, Be, G, eps, rules.INDEPENDENT_DIVISIONS)["dx"],
                     xt.grad)
    return {"values": values_table("T4", items), "matrices": pd.DataFrame(rows),
            "saved": saved.layernorm_saved(x, gamma, beta, eps, bug),
            **epsilon.eps_sensitivity(x, gamma, beta, upstream, near_constant_x, eps_compare, bug)}
