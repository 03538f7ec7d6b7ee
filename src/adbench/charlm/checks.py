"""C1 checks outside the five training runs: what the scaled-loss bug (loss x charlm.train.loss_scale) does
under plain SGD and one AdamW step, how far each run's weights moved from their shared initial state, and the
unshifted run's held-out score computed through the training loop's own data path (the path evaluate.py avoids).

The loss-scale runs use the C1 model at the configured size and its first batches (same seed), in
float64: the claims are algebraic identities, and float64 keeps rounding far below any real mismatch.
"""

from __future__ import annotations

import copy
import io
import logging
import math

import pandas as pd
import torch
import torch.nn.functional as F

from .model import CharGPT, GPTConfig, param_groups
from .train import encode, get_batch, make_optimizer
from .variants import switches

log = logging.getLogger(__name__)


def _flat(model: CharGPT) -> torch.Tensor:
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()])


def _loss(model: CharGPT, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    logits = model(x)
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))


def _sgd_step(model: CharGPT, opt: torch.optim.Optimizer, x, y, scale: float) -> None:
    opt.zero_grad(set_to_none=True)
    (_loss(model, x, y) * scale).backward()
    opt.step()


def initial_model(vocab_size: int, block_size: int, n_layer: int, n_head: int, n_embd: int, seed: int) -> CharGPT:
    """The C1 runs' shared initial state: the same seed right before the model is built (train_variant)."""
    torch.manual_seed(seed)
    return CharGPT(GPTConfig(vocab_size, block_size, n_layer, n_head, n_embd))


# Measurement-level controls (claims/bugs.py), never on in a real run: the "scale x lr" run built with lr alone;
# the eps-term prediction with eps inside the square root (g / sqrt(g² + eps), as some Adam variants place it)
CHECK_BUGS = ("scaled lr built with lr", "eps inside the sqrt")


def sgd_steps(model: CharGPT, batches: list, lr: float, scale: float, bug: str | None = None) -> pd.DataFrame:
    """Plain SGD three ways from one state: loss x scale at lr, loss at scale x lr, loss at lr (control).
    `bug`: a measurement-level control (CHECK_BUGS); None in every real run."""
    runs = {name: copy.deepcopy(model) for name in ("scaled_loss", "scaled_lr", "unscaled")}
    opts = {"scaled_loss": torch.optim.SGD(runs["scaled_loss"].parameters(), lr=lr),
            "scaled_lr": torch.optim.SGD(runs["scaled_lr"].parameters(), lr=lr if bug == CHECK_BUGS[0] else scale * lr),
            "unscaled": torch.optim.SGD(runs["unscaled"].parameters(), lr=lr)}
    start, rows = _flat(model), []
    for step, (x, y) in enumerate(batches, 1):
        for name, m in runs.items():
            _sgd_step(m, opts[name], x, y, scale if name == "scaled_loss" else 1.0)
        w = {name: _flat(m) for name, m in runs.items()}
        rows.append({"step": step, "max_abs_move": (w["scaled_loss"] - start).abs().max().item(),
                     "max_abs_diff_vs_scaled_lr": (w["scaled_loss"] - w["scaled_lr"]).abs().max().item(),
                     "max_abs_diff_vs_unscaled": (w["scaled_loss"] - w["unscaled"]).abs().max().item()})
    return pd.DataFrame(rows)


def _first_step(model: CharGPT, make_opt, x, y, scale: float) -> tuple[torch.Tensor, torch.Tensor]:
    """(update, gradient) of one optimizer step with the loss times `scale`, from a copy of `model`."""
    m = copy.deepcopy(model)
    opt = make_opt(m)
    (_loss(m, x, y) * scale).backward()
    g = torch.cat([p.grad.reshape(-1) for p in m.parameters()])
    opt.step()
    return _flat(m) - _flat(model), g


def one_step(model: CharGPT, x, y, lr: float, weight_decay: float, betas, scale: float,
             bug: str | None = None) -> pd.DataFrame:
    """One step from the same state and batch with the loss x scale and without, AdamW (C1's grouping)
    and plain SGD. For AdamW the first step is -lr g / (|g| + eps) (bias corrections cancel) after
    the decay both share, so the scale can enter only through eps: `eps_term` is that prediction.
    `bug`: a measurement-level control (CHECK_BUGS); None in every real run."""
    rows = []
    for name, make in (("adamw", lambda m: make_optimizer(m, lr, weight_decay, betas)),
                       ("sgd", lambda m: torch.optim.SGD(m.parameters(), lr=lr))):
        d_scaled, g_scaled = _first_step(model, make, x, y, scale)
        d_plain, g_plain = _first_step(model, make, x, y, 1.0)
        diff = d_scaled - d_plain
        row = {"optimizer": name, "scale": scale, "lr": lr, "step_norm_unscaled": d_plain.norm().item(),
               "step_norm_scaled": d_scaled.norm().item(), "diff_norm": diff.norm().item(),
               "diff_over_step": (diff.norm() / d_plain.norm()).item()}
        if name == "adamw":
            eps = make(copy.deepcopy(model)).defaults["eps"]
            def denom(g: torch.Tensor) -> torch.Tensor:
                return (g * g + eps).sqrt() if bug == CHECK_BUGS[1] else g.abs() + eps
            pred = -lr * (g_scaled / denom(g_scaled) - g_plain / denom(g_plain))
            row.update(eps=eps, eps_term_norm=pred.norm().item(), residual_norm=(diff - pred).norm().item())
        rows.append(row)
    return pd.DataFrame(rows)


def weight_drift(weights: list[bytes], variants: list[str], seed: int) -> pd.DataFrame:
    """Per run and parameter group: the largest |final - initial| entry and whether the group is bit-identical
    to the shared initial state (rebuilt from the seed and the checkpoint's configuration)."""
    rows = []
    for variant, blob in zip(variants, weights):
        ckpt = torch.load(io.BytesIO(blob), map_location="cpu", weights_only=True)
        cfg = ckpt["config"]
        init = initial_model(cfg["vocab_size"], cfg["block_size"], cfg["n_layer"], cfg["n_head"], cfg["n_embd"], seed)
        final = CharGPT(GPTConfig(**cfg))
        final.load_state_dict(ckpt["state_dict"])
        for (group, ps), (_, ps0) in zip(param_groups(final).items(), param_groups(init).items()):
            change = max((p.detach().double() - p0.detach().double()).abs().max().item() for p, p0 in zip(ps, ps0))
            rows.append({"variant": variant, "group": group, "max_abs_change": change,
                         "unchanged": all(torch.equal(p, p0) for p, p0 in zip(ps, ps0))})
    return pd.DataFrame(rows)


def load_weights(blob: bytes) -> CharGPT:
    """A trained run's model from its weights file (the checkpoint's own configuration)."""
    ckpt = torch.load(io.BytesIO(blob), map_location="cpu", weights_only=True)
    model = CharGPT(GPTConfig(**ckpt["config"]))
    model.load_state_dict(ckpt["state_dict"])
    return model.eval()


@torch.no_grad()
def training_path_heldout(blob: bytes, variant: str, heldout_text: str, vocab: str, batch_size: int,
                          seed: int) -> pd.DataFrame:
    """`variant`'s held-out score computed as its training loop computes a loss: train.get_batch's windows and
    targets (the run's own shift switch) and the same cross-entropy, over as many batches as cover the held-out
    text once. One row: the score and what it covered."""
    model = load_weights(blob)
    block = model.cfg.block_size
    data = encode(heldout_text, vocab)
    gen = torch.Generator().manual_seed(seed)
    n = max(1, math.ceil(len(data) / (batch_size * block)))
    total = 0.0
    for _ in range(n):
        x, y = get_batch(data, batch_size, block, switches(variant)["shift_targets"], gen)
        logits = model(x)  # (B, T, vocab)
        total += F.cross_entropy(logits.reshape(-1, logits.shape[-1]).double(), y.reshape(-1)).item()
    return pd.DataFrame([{"variant": variant, "path": "training loop (train.get_batch, its own target shift)",
                          "heldout_loss": total / n, "batches": n, "characters": n * batch_size * block}])


SHARED_PATH_RUN = "unshifted_targets"  # the run whose bug a shared data path hides (the documents, 004)


def measure_checks(weights: list[bytes], variants: list[str], corpus_text: str, train_text: str, scale_steps: int,
                   batch_size: int, block_size: int, n_layer: int, n_head: int, n_embd: int, lr: float,
                   weight_decay: float, betas, loss_scale: float, seed: int, heldout_text: str | None = None,
                   bug: str | None = None) -> dict:
    """The loss-scale comparisons on the C1 model (float64, its first batches), the runs' weight drift and, with
    `heldout_text`, the unshifted run's held-out score through the training data path. `bug`: CHECK_BUGS."""
    vocab = "".join(sorted(set(corpus_text)))
    model = initial_model(len(vocab), block_size, n_layer, n_head, n_embd, seed).double()
    gen = torch.Generator().manual_seed(seed)  # the C1 runs' batches, in their order
    data = encode(train_text, vocab)
    batches = [get_batch(data, batch_size, block_size, True, gen) for _ in range(scale_steps)]
    sgd = sgd_steps(model, batches, lr, loss_scale, bug=bug)
    first = one_step(model, *batches[0], lr, weight_decay, betas, loss_scale)
    log.info("SGD x%g vs %gx lr: largest difference %.3g; AdamW step diff/step %.3g", loss_scale, loss_scale,
             sgd.max_abs_diff_vs_scaled_lr.max(), first.set_index("optimizer").diff_over_step["adamw"])
    out = {"sgd_steps": sgd, "one_step": first, "drift": weight_drift(weights, variants, seed)}
    if heldout_text is not None:
        out["shared_path"] = training_path_heldout(weights[variants.index(SHARED_PATH_RUN)], SHARED_PATH_RUN,
                                                   heldout_text, vocab, batch_size, seed)
    return out
