"""C1: each bug switch shows its signature in one step; the evaluation path is independent."""

from __future__ import annotations

import copy
import io
import json
import math
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import torch
import torch.nn.functional as F

from adbench.charlm import checks, evaluate, train
from adbench.charlm.evaluate import measure_eval
from adbench.charlm.proxy import measure_proxy, one_target_grads, surprise_stats
from adbench.charlm.summary import measure_summary, surprise
from adbench.charlm.train import measure_train
from adbench.charlm.model import CharGPT, GPTConfig, linear, onednn_available

torch.set_num_threads(1)


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    """charlm.gemm_backend 'auto' keeps its decision under $XDG_CACHE_HOME: never the user's own."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))


ROOT = Path(__file__).resolve().parents[1]
TEXT = "the quick brown fox jumps over the lazy dog. " * 12 + "pack my box with five dozen liquor jugs! " * 12
VOCAB = "".join(sorted(set(TEXT)))
TINY = dict(steps=40, batch_size=8, block_size=8, n_layer=4, n_head=2, n_embd=16, lr=1e-2,
            weight_decay=0.1, betas=[0.9, 0.99], grad_clip=0.0, control_clip=1.0, log_every=10, loss_scale=40.0, seed=0)


def tiny_model(detach: bool = False) -> CharGPT:
    torch.manual_seed(0)
    return CharGPT(GPTConfig(len(VOCAB), 8, 4, 2, 16, detach)).double()


def batch(shift: bool = True):
    return train.get_batch(train.encode(TEXT, VOCAB), 4, 8, shift, torch.Generator().manual_seed(1))


def oracle_grads(model: CharGPT, x, y, scale: float = 1.0) -> list[torch.Tensor]:
    """float64 gradient of scale * mean next-char NLL, by autograd.grad on a copy (no .grad)."""
    m = copy.deepcopy(model)
    logp = torch.log_softmax(m(x), dim=-1)
    loss = -scale * logp.gather(-1, y[..., None]).mean()
    return torch.autograd.grad(loss, list(m.parameters()), allow_unused=True)


def step(model, variant, x, y, lr=0.0, clip=0.0):
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    return train.train_step(model, opt, x, y, train.switches(variant), 40.0, clip)


def test_model_is_causal():
    m = tiny_model()
    x = train.encode(TEXT[:8], VOCAB)[None]
    x2 = x.clone()
    x2[0, 5] = (x2[0, 5] + 1) % len(VOCAB)
    a, b = m(x), m(x2)
    assert torch.equal(a[0, :5], b[0, :5]) and not torch.allclose(a[0, 5:], b[0, 5:])


def test_shifted_and_unshifted_targets():
    x, y = batch(shift=True)
    data = train.encode(TEXT, VOCAB)
    for row_x, row_y in zip(x, y):  # oracle: find the window in the data and shift by hand
        s = next(i for i in range(len(data) - 8) if torch.equal(data[i:i + 8], row_x)
                 and torch.equal(data[i + 1:i + 9], row_y))
        assert torch.equal(data[s + 1:s + 9], row_y)
    xu, yu = batch(shift=False)
    assert torch.equal(xu, x) and torch.equal(yu, xu)  # the bug: same windows, targets = inputs
    assert not torch.equal(y, x)


def test_zero_grad_clears_and_no_zero_grad_accumulates():
    x, y = batch()
    ref = oracle_grads(tiny_model(), x, y)
    for variant, factor in (("correct", 1.0), ("no_zero_grad", 2.0)):
        m = tiny_model()
        step(m, variant, x, y)  # lr 0: weights unchanged, so the second gradient equals the first
        step(m, variant, x, y)
        for p, g in zip(m.parameters(), ref):
            torch.testing.assert_close(p.grad, factor * g, rtol=1e-10, atol=1e-12)


def test_scaled_loss_scales_gradient_but_not_the_adamw_step():
    x, y = batch()
    ref = oracle_grads(tiny_model(), x, y, scale=40.0)
    ma, mb = tiny_model(), tiny_model()
    la, _ = step(ma, "loss_scaled", x, y, lr=1e-2)
    lb, _ = step(mb, "correct", x, y, lr=1e-2)
    assert la == pytest.approx(lb, rel=1e-12)  # the logged loss is the unscaled one
    for p, g in zip(ma.parameters(), ref):
        torch.testing.assert_close(p.grad, g, rtol=1e-10, atol=1e-12)
    # AdamW: the whole update moves by a few % (only eps, 1e-8, sees the scale, on the
    # coordinates whose first gradient is that small); plain SGD, the
    # negative control under the same check, takes a 40x step (relative difference 39).
    start = tiny_model()
    assert rel_update_diff(ma, mb, start) < 0.05
    sa, sb = tiny_model(), tiny_model()
    for m, scale in ((sa, 40.0), (sb, 1.0)):
        (-scale * torch.log_softmax(m(x), -1).gather(-1, y[..., None]).mean()).backward()
        torch.optim.SGD(m.parameters(), lr=1e-2).step()
    assert rel_update_diff(sa, sb, start) == pytest.approx(39.0, rel=1e-6)


def rel_update_diff(a: CharGPT, b: CharGPT, start: CharGPT) -> float:
    """||update_a - update_b|| / ||update_b|| over all parameters."""
    torch.set_grad_enabled(False)
    da = torch.cat([(p - s).flatten() for p, s in zip(a.parameters(), start.parameters())])
    db = torch.cat([(p - s).flatten() for p, s in zip(b.parameters(), start.parameters())])
    torch.set_grad_enabled(True)
    return float((da - db).norm() / db.norm())


def _flat_grad(grads) -> torch.Tensor:
    return torch.cat([g.reshape(-1) for g in grads])


def test_checks_sgd_scaled_loss_is_scaled_lr_step_for_step():
    m = tiny_model()
    gen = torch.Generator().manual_seed(1)
    batches = [train.get_batch(train.encode(TEXT, VOCAB), 4, 8, True, gen) for _ in range(3)]
    d = checks.sgd_steps(m, batches, lr=1e-2, scale=40.0)
    assert list(d.step) == [1, 2, 3]
    assert (d.max_abs_diff_vs_scaled_lr <= 1e-13 * d.max_abs_move).all()
    # oracle for step 1: w1 - w0 = -40 lr g with g the float64 autograd.grad gradient; the unscaled run moves -lr g
    g = _flat_grad(oracle_grads(m, *batches[0]))
    assert d.max_abs_move[0] == pytest.approx((40 * 1e-2 * g).abs().max().item(), rel=1e-10)
    assert d.max_abs_diff_vs_unscaled[0] == pytest.approx((39 * 1e-2 * g).abs().max().item(), rel=1e-10)


def test_checks_one_adamw_step_differs_only_through_eps():
    m, (x, y) = tiny_model(), batch()
    lr, wd, eps = 1e-2, 0.1, 1e-8
    d = checks.one_step(m, x, y, lr=lr, weight_decay=wd, betas=[0.9, 0.99], scale=40.0).set_index("optimizer")
    # oracle: AdamW's first step by hand, -lr wd w (matrices and tables) - lr g / (|g| + eps)
    g = _flat_grad(oracle_grads(m, x, y))
    w0 = torch.cat([p.detach().reshape(-1) for p in m.parameters()])
    decay = torch.cat([torch.full((p.numel(),), wd if p.dim() >= 2 else 0.0, dtype=torch.float64) for p in m.parameters()])
    plain = -lr * decay * w0 - lr * g / (g.abs() + eps)
    scaled = -lr * decay * w0 - lr * 40 * g / (40 * g.abs() + eps)
    a = d.loc["adamw"]
    assert a.step_norm_unscaled == pytest.approx(plain.norm().item(), rel=1e-9)
    assert a.diff_norm == pytest.approx((scaled - plain).norm().item(), rel=1e-6)
    assert a.residual_norm < 1e-12 * a.step_norm_unscaled and 0 < a.diff_over_step < 1 and a.eps == eps
    assert d.loc["sgd", "diff_over_step"] == pytest.approx(39.0, rel=1e-12)  # control: SGD takes the 40x step


def test_checks_weight_drift_rebuilds_the_initial_state():
    weights = {v: measure_train(v, TEXT, TEXT[:800], **{**TINY, "steps": 3})["weights"]
               for v in ("correct", "detached_positions")}
    # control: a run with learning rate 0 cannot move, so every group must read unchanged against the rebuilt init
    weights["frozen"] = measure_train("correct", TEXT, TEXT[:800], **{**TINY, "steps": 2, "lr": 0.0})["weights"]
    d = checks.weight_drift(list(weights.values()), list(weights), seed=0).set_index(["variant", "group"])
    assert d.loc["frozen"].unchanged.all() and (d.loc["frozen"].max_abs_change == 0).all()
    assert d.loc[("detached_positions", "position_table"), "unchanged"]
    assert not d.loc["detached_positions"].drop("position_table").unchanged.any()
    assert d.loc[("correct", "position_table"), "max_abs_change"] > 0
    out = checks.measure_checks(list(weights.values()), list(weights), TEXT, TEXT[:800], scale_steps=2,
                                **{k: TINY[k] for k in ("batch_size", "block_size", "n_layer", "n_head", "n_embd", "lr",
                                                        "weight_decay", "betas", "loss_scale", "seed")})
    assert sorted(out) == ["drift", "one_step", "sgd_steps"] and len(out["sgd_steps"]) == 2


def test_detached_positions_get_no_gradient():
    x, y = batch()
    m = tiny_model(detach=True)
    before = m.wpe.weight.detach().clone()
    opt = torch.optim.AdamW(m.parameters(), lr=1e-2, weight_decay=0.1)
    _, norms = train.train_step(m, opt, x, y, train.switches("detached_positions"), 40.0, 1.0)
    assert m.wpe.weight.grad is None and norms["position_table"] == 0.0
    assert torch.equal(m.wpe.weight, before)  # AdamW skips it: not even weight decay moves it
    c = tiny_model()
    _, cn = step(c, "correct", x, y)
    ref = oracle_grads(c, x, y)[1]  # parameter order: wte, wpe, ...
    assert cn["position_table"] == pytest.approx(float(ref.norm()), rel=1e-9) and cn["position_table"] > 0


def test_grad_norms_are_logged_before_clipping():
    x, y = batch()
    m = tiny_model()
    _, norms = step(m, "loss_scaled", x, y, clip=1.0)  # 40x loss: the total is far above the limit
    ref = math.sqrt(sum(float(g.pow(2).sum()) for g in oracle_grads(tiny_model(), x, y, 40.0) if g is not None))
    assert norms["total"] == pytest.approx(ref, rel=1e-9) and norms["total"] > 1.0
    after = math.sqrt(sum(float(p.grad.pow(2).sum()) for p in m.parameters()))
    assert after == pytest.approx(1.0, rel=1e-6)  # what a log after clipping would have shown
    assert set(norms) == {"token_table", "position_table", *(f"block_{i}" for i in range(4)),
                          "final_norm", "total"}


def test_unknown_variant_is_an_error():
    with pytest.raises(ValueError, match="unknown C1 variant"):
        train.switches("no_bugs_at_all")


def test_variants_module_is_torch_free_and_the_one_list():
    # the rules import it at parse time: it must not pull torch into the Snakemake process
    code = "import sys, adbench.charlm.variants as v; print(list(v.VARIANTS), 'torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == f"{list(train.VARIANTS)} False"
    smk = (ROOT / "workflow/rules/charlm.smk").read_text(encoding="utf-8")
    assert "from adbench.charlm.variants import VARIANTS" in smk and '"no_zero_grad"' not in smk  # no copy


def test_evaluation_does_not_import_the_training_loop():
    code = "import sys, adbench.charlm.evaluate; print('adbench.charlm.train' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_surprise_matches_a_naive_oracle():
    m = tiny_model().float().eval()
    text = TEXT[:30]
    s = evaluate.per_char_surprise(m, text, VOCAB)
    ids = [VOCAB.index(c) for c in text]
    naive, unshifted = [], []  # oracle: one forward per character, context = its non-overlapping window so far
    for t in range(1, len(text)):
        start = ((t - 1) // 8) * 8
        with torch.no_grad():
            logits = m(torch.tensor([ids[start:t]])).double()[0, -1]
        naive.append(-float(torch.log_softmax(logits, -1)[ids[t]]))
        unshifted.append(-float(torch.log_softmax(logits, -1)[ids[t - 1]]))
    assert len(s) == len(text) - 1
    close = dict(rtol=1e-5, atol=1e-6)
    assert torch.allclose(torch.tensor(s), torch.tensor(naive, dtype=torch.float64), **close)
    # negative control: scoring the character just given (the unshifted bug) fails the same check
    assert not torch.allclose(torch.tensor(s), torch.tensor(unshifted, dtype=torch.float64), **close)


def test_baselines():
    train_text, held = "aab" * 10, "abc"
    vocab = "abc"
    expected = -(math.log(11 / 33) + math.log(1 / 33)) / 2  # add-one: a 21, b 11, c 1 of 33; scores "bc"
    assert evaluate.unigram_loss(train_text, held, vocab) == pytest.approx(expected, rel=1e-12)
    assert evaluate.uniform_loss("abcabc") == pytest.approx(math.log(3), rel=1e-15)


def test_heldout_catches_the_unshifted_bug_the_training_path_hides():
    """Trained with targets = inputs, the training-path score is tiny; the held-out path is not."""
    out = measure_train("unshifted_targets", TEXT, TEXT, **{**TINY, "steps": 80})
    model = evaluate.load_model(out["weights"], TEXT)
    x, y = train.get_batch(train.encode(TEXT, VOCAB), 16, 8, False, torch.Generator().manual_seed(3))
    with torch.no_grad():
        train_path = float(F.cross_entropy(model(x).reshape(-1, len(VOCAB)), y.reshape(-1)))
    held = evaluate.per_char_surprise(model, TEXT[:400], VOCAB).mean()
    assert train_path < 0.3 < math.log(len(VOCAB)) < held


def test_job_functions_end_to_end():
    weights, curves, norms, runs = {}, [], [], []
    for v in train.VARIANTS:
        out = measure_train(v, TEXT, TEXT[:800], **TINY)
        weights[v] = out["weights"]
        curves.append(out["curve"])
        norms.append(out["grad_norms"])
        runs.append(out["run"])
        assert list(out["curve"]["step"]) == list(range(1, 41))
        assert sorted(out["grad_norms"]["step"].unique()) == [1, 10, 20, 30, 40]
    ev = measure_eval(list(weights.values()), list(weights), TEXT, TEXT[:800], TEXT[800:])
    assert set(ev["heldout"]["variant"]) == set(train.VARIANTS)
    pr = measure_proxy(weights["correct"], TEXT, TEXT[800:])
    assert len(pr["surprise_extremes"]) == 16 and pr["surprise"].mean_nats[0] == pytest.approx(
        ev["heldout"].set_index("variant").heldout_loss["correct"], rel=1e-12)  # the same scoring path
    assert t_clip(runs) == {"no_zero_grad_clipped": 1.0, **{v: 0.0 for v in train.VARIANTS if v != "no_zero_grad_clipped"}}
    ckpt = torch.load(io.BytesIO(weights["correct"]), weights_only=True)
    assert ckpt["vocab"] == VOCAB and ckpt["config"]["n_layer"] == 4
    summ = measure_summary(ev["heldout"], ev["baselines"], curves, norms, runs, 5, 10, [1.0, 0.01], loss_scale=7.0)
    t = summ["summary"].set_index("variant")
    # the factor is the configured one, written as data: the variant's name does not state it
    assert t.loc["loss_scaled", "loss_scale"] == 7.0 and set(t.loss_scale.drop("loss_scaled")) == {1.0}
    assert t.loc["detached_positions", "position_grad_max"] == 0.0 < t.loc["correct", "position_grad_min"]
    vals = summ["values"].set_index("quantity")["value"]
    doc = pd.read_csv(ROOT / "src/adbench/data/documented.csv")
    assert sorted(doc.loc[doc.id == "C1", "quantity"]) == sorted(vals.index)  # one row per documented quantity
    assert vals["charset_size"] == len(VOCAB)
    base = ev["baselines"].set_index("baseline")["heldout_loss"]
    assert base["uniform"] == pytest.approx(math.log(len(VOCAB)), rel=1e-15)


def t_clip(runs) -> dict:
    return dict(pd.concat(runs)[["variant", "grad_clip"]].itertuples(index=False))


def test_vocabulary_mismatch_is_refused():
    out = measure_train("correct", TEXT, TEXT, **{**TINY, "steps": 2})
    with pytest.raises(ValueError, match="vocabulary"):
        evaluate.load_model(out["weights"], TEXT + "Z")


def test_dashboard_reading():
    from adbench.charlm.summary import dashboard
    assert dashboard(7.0, 1.5, 4.6).startswith("visible: training loss ends above")
    assert dashboard(0.001, 1.5, 4.6).startswith("visible, but looks like success")
    assert dashboard(1.55, 1.5, 4.6).startswith("invisible")
    assert dashboard(1.8, 1.5, 4.6).endswith("ends higher")


def test_in_place_clipping_bounds_the_piled_up_gradient():
    """The control's mechanism: clip_grad_norm_ rescales .grad in place, so the pile never grows."""
    x, y = batch()
    g = math.sqrt(sum(float(t.pow(2).sum()) for t in oracle_grads(tiny_model(), x, y, 40.0) if t is not None))
    for clip, expected in ((0.0, 3 * g), (1.0, 1.0)):
        # loss x 40 makes every gradient exceed the limit; lr 0 keeps the weights (and g) fixed
        sw = {**train.switches("no_zero_grad"), "scale_loss": True}
        m2 = tiny_model()
        opt = torch.optim.AdamW(m2.parameters(), lr=0.0, weight_decay=0.0)
        for _ in range(3):
            train.train_step(m2, opt, x, y, sw, 40.0, clip)
        total = math.sqrt(sum(float(p.grad.pow(2).sum()) for p in m2.parameters()))
        assert total == pytest.approx(expected, rel=1e-6)


def test_c1_surprise_is_cross_entropy():
    for p in (1.0, 0.01, 0.3):
        logits = torch.log(torch.tensor([[p, 1 - p]], dtype=torch.float64).clamp_min(1e-300))
        ce = torch.nn.functional.cross_entropy(logits, torch.tensor([0])).item()
        assert surprise(p) == pytest.approx(ce, abs=1e-15)
    assert surprise(1.0) == 0.0 and math.copysign(1, surprise(1.0)) == 1.0
    assert round(surprise(0.01), 1) == 4.6 and round(surprise(0.02), 1) != 4.6   # negative control


def test_proxy_surprise_stats_and_uniform_guess():
    s = torch.arange(1.0, 21.0, dtype=torch.float64).numpy()  # 20 surprises 1..20: the worst tenth is {20, 19}
    stats, ex = surprise_stats(s, "x" * 21, 5, 2, 2)
    r = stats.iloc[0]
    assert r.worst_tenth_share == pytest.approx(39 / 210, rel=1e-15) and r.median_nats == 10.5
    assert r.vocab_size == 5 and r.uniform_nats == pytest.approx(math.log(5), rel=1e-15)
    assert list(ex.surprise_nats) == [20, 19, 1, 2]


def _manual_forward(m: CharGPT, x: torch.Tensor, x0: torch.Tensor | None = None):
    """The model's forward written out from its parts, starting from a leaf block input x0 (oracle)."""
    if x0 is None:
        x0 = (m.wte(x) + m.wpe(torch.arange(x.shape[1]))).detach().requires_grad_(True)
    h = x0
    for b in m.blocks:
        h = b(h)
    return x0, m.ln_f(h) @ m.wte.weight.T


def test_proxy_one_target_gradients_match_an_oracle():
    m = tiny_model().float()
    ids = train.encode(TEXT[:9], VOCAB)  # 8 characters of context and the one that follows
    states, qkv, nll = one_target_grads(m, ids)
    assert list(states.state) == list(range(5)) and states["after"].iloc[-1] == "block 3, final norm"
    x, target = ids[None, :-1], int(ids[-1])
    # state 0 by autograd.grad through a hand-written forward from a leaf input
    x0, logits = _manual_forward(copy.deepcopy(m), x)
    loss = -torch.log_softmax(logits[0, -1].double(), -1)[target]
    assert float(loss) == pytest.approx(nll, rel=1e-6)
    (g0,) = torch.autograd.grad(loss, [x0])
    assert states.grad_norm_last_token[0] == pytest.approx(float(g0[0, -1].double().norm()), rel=1e-5)
    # the last state (after the final norm): the tied head's closed form, (softmax - one-hot) @ token table
    p = torch.softmax(logits[0, -1].double(), -1).detach()
    p[target] -= 1
    closed = p @ m.wte.weight.double()
    assert states.grad_norm_last_token.iloc[-1] == pytest.approx(float(closed.norm()), rel=1e-5)
    # q | k | v: the rows of each qkv weight gradient, by autograd.grad on a copy
    c = copy.deepcopy(m)
    _, logits = _manual_forward(c, x, (c.wte(x) + c.wpe(torch.arange(8))))
    loss = -torch.log_softmax(logits[0, -1].double(), -1)[target]
    grads = torch.autograd.grad(loss, [b.attn.qkv.weight for b in c.blocks])
    for i, gi in enumerate(grads):
        q, k, v = gi.double().split(16, dim=0)
        row = qkv.set_index("layer").loc[i]
        assert (row.q, row.k, row.v) == pytest.approx((float(q.norm()), float(k.norm()), float(v.norm())), rel=1e-5)
    assert len({round(qkv.q[0], 6), round(qkv.k[0], 6), round(qkv.v[0], 6)}) == 3  # three different blocks


# --- the optimized step (oneDNN GEMMs, foreach AdamW, gathered batches, norms at logged steps only) ---

def reference_run(variant: str, cfg: dict, decay_all: bool = False) -> dict:
    """The training loop written plainly, as it was before the speed-up: default GEMMs, per-parameter
    AdamW, windows sliced one by one, gradient norms and loss.item() every step. `decay_all`: the negative
    control, weight decay on biases and norms too (a plausible slip when rewriting the optimizer set-up)."""
    sw = train.switches(variant)
    clip = cfg["control_clip"] if sw["clipped"] else cfg["grad_clip"]
    torch.manual_seed(cfg["seed"])
    m = CharGPT(GPTConfig(len(VOCAB), cfg["block_size"], cfg["n_layer"], cfg["n_head"], cfg["n_embd"],
                          sw["detach_positions"]))
    decay = [p for p in m.parameters() if decay_all or p.dim() >= 2]
    rest = [p for p in m.parameters() if not (decay_all or p.dim() >= 2)]
    groups = [{"params": decay, "weight_decay": cfg["weight_decay"]}, {"params": rest, "weight_decay": 0.0}]
    opt = torch.optim.AdamW(groups, lr=cfg["lr"], betas=tuple(cfg["betas"]), foreach=False)
    data, gen, T = train.encode(TEXT[:800], VOCAB), torch.Generator().manual_seed(cfg["seed"]), cfg["block_size"]
    losses, norms = [], {}
    for i in range(1, cfg["steps"] + 1):
        starts = torch.randint(len(data) - T - 1, (cfg["batch_size"],), generator=gen)
        x = torch.stack([data[s:s + T] for s in starts])
        y = torch.stack([data[s + 1:s + 1 + T] for s in starts]) if sw["shift_targets"] else x.clone()
        if sw["zero_grad"]:
            opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(m(x).reshape(-1, len(VOCAB)), y.reshape(-1))
        (loss * cfg["loss_scale"] if sw["scale_loss"] else loss).backward()
        norms[i] = train.group_grad_norms(m)
        if clip > 0:
            torch.nn.utils.clip_grad_norm_(m.parameters(), clip)
        opt.step()
        losses.append(loss.item())
    return {"losses": losses, "norms": norms, "state": m.state_dict()}


def run_gap(out: dict, ref: dict, cfg: dict) -> dict[str, float]:
    """Largest relative gaps between measure_train's outputs and the reference run's: losses, logged
    gradient norms, and the final models' logits on a fixed batch (the function the weights compute)."""
    loss = (out["curve"].train_loss - pd.Series(ref["losses"])).abs() / pd.Series(ref["losses"]).abs()
    gn = out["grad_norms"]
    want = pd.Series([ref["norms"][s][g] for s, g in zip(gn.step, gn.group)])
    norm = ((gn.grad_norm - want).abs() / want.where(want > 0, 1.0)).max()
    ckpt = torch.load(io.BytesIO(out["weights"]), weights_only=True)
    a, b = CharGPT(GPTConfig(**ckpt["config"])), CharGPT(GPTConfig(**ckpt["config"]))
    a.load_state_dict(ckpt["state_dict"])
    b.load_state_dict(ref["state"])
    x = train.encode(TEXT[:4 * cfg["block_size"]], VOCAB).view(4, -1)
    with torch.no_grad():
        logits = float((a(x) - b(x)).abs().max() / b(x).abs().max())
    return {"loss": float(loss.max()), "norm": float(norm), "logits": logits}


@pytest.mark.parametrize("variant", list(train.VARIANTS))
def test_default_gemm_run_is_bit_identical_to_the_plain_loop(variant):
    """foreach AdamW, the gathered batch, norms at logged steps and one host sync change no bit."""
    cfg = {**TINY, "steps": 12, "log_every": 5, "grad_clip": 0.0}
    out = measure_train(variant, TEXT, TEXT[:800], **cfg, gemm_backend="default")
    ref = reference_run(variant, cfg)
    assert run_gap(out, ref, cfg) == {"loss": 0.0, "norm": 0.0, "logits": 0.0}
    state = torch.load(io.BytesIO(out["weights"]), weights_only=True)["state_dict"]
    assert all(torch.equal(state[k], v) for k, v in ref["state"].items())
    assert list(out["grad_norms"].step.unique()) == [1, 5, 10, 12]


# At this size (K up to 256) oneDNN sums in another order than MKL; over 12 steps at the config's lr the
# losses, logged norms and final logits stay within 1e-6 (measured <= 6e-7), while the slip below moves
# them by >= 4e-4. The weights are not compared: the attention key bias has a zero gradient in exact
# arithmetic (softmax ignores a shift shared by a query's scores), so AdamW turns its rounding noise into
# lr-sized steps on either GEMM path; the logits, which it cannot affect, are the check.
ONEDNN_RTOL = 1e-5


@pytest.mark.skipif(not onednn_available(), reason="this torch has no oneDNN linear kernel")
@pytest.mark.parametrize("variant", ["correct", "no_zero_grad", "detached_positions", "no_zero_grad_clipped"])
def test_onednn_run_matches_the_plain_loop_within_float32_rounding(variant):
    cfg = {**TINY, "steps": 12, "log_every": 3, "batch_size": 16, "block_size": 16, "n_embd": 32, "lr": 2e-3,
           "weight_decay": 0.5}
    out = measure_train(variant, TEXT, TEXT[:800], **cfg, gemm_backend="onednn")
    assert out["_meta"]["gemm"] == "oneDNN" and set(out["run"].gemm_backend) == {"onednn"}
    gap = run_gap(out, reference_run(variant, cfg), cfg)
    assert max(gap.values()) < ONEDNN_RTOL, gap
    # negative control: decaying biases and norms as well fails the same check
    assert min(run_gap(out, reference_run(variant, cfg, decay_all=True), cfg).values()) > 10 * ONEDNN_RTOL


@pytest.mark.skipif(not onednn_available(), reason="this torch has no oneDNN linear kernel")
def test_onednn_linear_gradients_match_a_float64_oracle():
    """Forward and all three gradients of the oneDNN linear against float64 F.linear, at float32 rounding
    (sums of K = 64..2048 products: relative error << 1e-5); a weight gradient built from the rows of x
    shifted by one, the mistake a hand-written g^T x can make, fails the same check."""
    gen = torch.Generator().manual_seed(0)
    for n_in, n_out, rows in ((16, 48, 64), (64, 16, 2048), (16, 29, 33)):
        x = torch.randn(rows, n_in, generator=gen, requires_grad=True)
        w = torch.randn(n_out, n_in, generator=gen, requires_grad=True)
        b = torch.randn(n_out, generator=gen, requires_grad=True)
        g = torch.randn(rows, n_out, generator=gen)
        y = linear(x, w, b, onednn=True)
        y.backward(g)
        x64, w64, b64 = (t.detach().double().requires_grad_() for t in (x, w, b))
        F.linear(x64, w64, b64).backward(g.double())
        close = dict(rtol=1e-5, atol=1e-5 * math.sqrt(max(rows, n_out)))
        torch.testing.assert_close(y.double(), F.linear(x64, w64, b64).detach(), **close)
        for got, want in ((x.grad, x64.grad), (w.grad, w64.grad), (b.grad, b64.grad)):
            torch.testing.assert_close(got.double(), want, **close)
        shifted = (g.double().T @ x64.detach().roll(1, 0))
        assert not torch.allclose(w.grad.double(), shifted, **close)


def test_onednn_path_is_training_only():
    """Evaluation and the float64 checks build CharGPT themselves: they keep torch's default GEMMs."""
    m = tiny_model()
    assert not m.onednn and not m.use_onednn(False).blocks[0].attn.qkv.onednn
    f = CharGPT(GPTConfig(len(VOCAB), 8, 4, 2, 16)).use_onednn()
    assert f.blocks[0].attn.qkv.onednn == f.onednn == onednn_available()
    x, _ = batch()
    assert torch.equal(m(x), m.use_onednn()(x))  # float64: the flag cannot take the oneDNN path
    assert [n for n, _ in f.named_parameters()] == [n for n, _ in m.named_parameters()]  # checks.py, param_groups


def test_profile_counts_the_step_and_reads_the_cpu():
    """The analytic FLOP count equals torch's FlopCounterMode on the default-GEMM step (which counts the
    GEMMs, not CPU attention); the peak is lanes x 2 pipes x 2 x GHz from the flags."""
    from torch.utils.flop_counter import FlopCounterMode
    from adbench.charlm import profile
    cfg = {**TINY, "batch_size": 4}
    m = CharGPT(GPTConfig(len(VOCAB), cfg["block_size"], cfg["n_layer"], cfg["n_head"], cfg["n_embd"]))
    x, y = batch()
    with FlopCounterMode(display=False) as fc:
        F.cross_entropy(m(x).reshape(-1, len(VOCAB)), y.reshape(-1)).backward()
    gemm, attention = profile.step_flops(cfg, len(VOCAB))
    assert gemm == fc.get_total_flops() > 0
    assert attention == 3 * 4 * 4 * 2 * 2 * 2 * 8 * 8 * 8  # 3 x layers B heads x 2 products x 2 T^2 hs
    peak, how = profile.cpu_peak(cpuinfo="flags\t: fpu avx2 fma avx512f\ncpu MHz\t\t: 2500.000\n")
    assert peak == 16 * 2 * 2 * 2.5 and "avx512f" in how
    assert profile.cpu_peak(ghz=3.0, cpuinfo="flags\t: fpu avx2 fma\n")[0] == 8 * 2 * 2 * 3.0
    assert profile.kind("mkldnn::_linear_pointwise") == profile.kind("aten::addmm") == "matrix products"
    assert profile.kind("aten::gelu_backward").startswith("other aten")


# --- the GEMM backend chosen on the machine (adbench.charlm.backend) ---

def test_choice_rule_keeps_the_default_on_a_tie_and_when_onednn_is_slower():
    from adbench.charlm.backend import MARGIN, choose
    assert choose({"default": 50.0, "onednn": 50.0}) == "default"  # tie
    assert choose({"default": 96.5, "onednn": 103.7}) == "default"  # the AVX2 EPYC's figures
    assert choose({"default": 50.0, "onednn": 50.0 * (1 - MARGIN) + 1e-9}) == "default"  # inside the margin
    # negative control: the rule can pick oneDNN at all (the AVX-512 figures, and just past the margin)
    assert choose({"default": 51.0, "onednn": 37.0}) == "onednn"
    assert choose({"default": 50.0, "onednn": 50.0 * (1 - MARGIN) - 1e-9}) == "onednn"


class StandInClock:
    """A clock that only `run` moves: each step of a backend costs its given ms (no wall clock involved)."""

    def __init__(self, ms: dict[str, float]):
        self.now, self.ms, self.calls = 0.0, ms, []

    def __call__(self) -> float:
        return self.now

    def run(self, backend: str, n: int) -> None:
        self.calls.append((backend, n))
        self.now += self.ms[backend] * n / 1e3


def test_interleaved_timing_alternates_the_backends_and_reads_the_clock_per_step():
    from adbench.charlm.backend import interleaved
    clock = StandInClock({"default": 96.5, "onednn": 103.7})
    ms = interleaved(clock.run, blocks=3, steps=2, warmup=1, clock=clock)
    assert clock.calls == [("default", 1), ("onednn", 1)] + [("default", 2), ("onednn", 2)] * 3  # warm-up, ABAB
    assert ms == {"default": [pytest.approx(96.5, rel=1e-12)] * 3, "onednn": [pytest.approx(103.7, rel=1e-12)] * 3}


@pytest.mark.parametrize("default, onednn, chosen", [(96.5, 103.7, "default"), (50.0, 50.0, "default"),
                                                     (50.0, 48.0, "default"), (51.0, 37.0, "onednn")])
def test_auto_times_with_the_clock_and_keeps_the_default_unless_onednn_is_clearly_faster(tmp_path, default, onednn,
                                                                                          chosen):
    """decide + interleaved on a stand-in clock: slower, tied and 4 %-faster oneDNN keep the default; the
    AVX-512 figures (last row, the negative control) pick oneDNN."""
    from adbench.charlm.backend import decide, interleaved
    clock = StandInClock({"default": default, "onednn": onednn})
    got = decide("auto", True, lambda: interleaved(clock.run, clock=clock), _key(), tmp_path)
    assert got["chosen"] == chosen and got["ms_per_step"] == pytest.approx({"default": default, "onednn": onednn})


def _key(**env):
    from adbench.charlm.backend import machine_key
    cpu = {"cpu_model": "AMD EPYC", "vector_flags": ["avx2", "avx512f"]}
    return machine_key({"n_embd": 64}, "2.13.0+cpu", 1, cpu=cpu, env=env)


def _measured(default: float, onednn: float):
    """A stand-in for the timed comparison: fixed ms per step for three blocks."""
    return lambda: {"default": [default + 1, default, default + 2], "onednn": [onednn, onednn + 1, onednn + 3]}


def test_auto_keeps_the_machines_first_decision_and_records_both_timings(tmp_path, caplog):
    from adbench.charlm.backend import decide
    first = decide("auto", True, _measured(51.0, 37.0), _key(), tmp_path)
    assert first["chosen"] == first["this_job_would_choose"] == "onednn"
    assert first["ms_per_step"] == {"default": 51.0, "onednn": 37.0} and first["decided_by"] == "this job's timing"
    kept = json.loads(Path(first["cache_file"]).read_text())
    assert kept["chosen"] == "onednn" and kept["key"]["isa_env"] == {}
    # a later job timed the other way (a loaded machine): the kept choice stands, its own timing is recorded
    later = decide("auto", True, _measured(40.0, 45.0), _key(), tmp_path)
    assert later["chosen"] == "onednn" and later["this_job_would_choose"] == "default"
    assert later["ms_per_step"] == {"default": 40.0, "onednn": 45.0} and later["kept_ms_per_step"]["onednn"] == 37.0
    assert "first timing" in later["decided_by"] and "delete" in caplog.text
    assert later["kept_slower_by"] == pytest.approx(45 / 40 - 1, rel=1e-12)
    caplog.clear()  # control: a tie in a later job keeps the decision without a warning
    assert decide("auto", True, _measured(50.0, 50.0), _key(), tmp_path)["chosen"] == "onednn"
    assert "delete" not in caplog.text
    # the AVX2 imitation is another machine: its own decision, in its own file
    avx2 = decide("auto", True, _measured(96.5, 103.7), _key(ONEDNN_MAX_CPU_ISA="AVX2"), tmp_path)
    assert avx2["chosen"] == "default" and avx2["cache_file"] != first["cache_file"]
    assert len(list(tmp_path.glob("*.json"))) == 2


def test_forced_or_missing_onednn_takes_no_timing_and_bad_settings_name_the_key(tmp_path):
    from adbench.charlm.backend import decide

    def never():
        raise AssertionError("timed although the backend was forced")
    for setting in ("default", "onednn"):
        assert decide(setting, True, never, _key(), tmp_path)["chosen"] == setting
    assert decide("auto", False, never, _key(), tmp_path)["chosen"] == "default"
    assert not list(tmp_path.iterdir())  # nothing kept: no timing took place
    with pytest.raises(ValueError, match="charlm.gemm_backend is 'mkl'; use one of auto, default, onednn"):
        decide("mkl", True, never, _key(), tmp_path)
    with pytest.raises(ValueError, match="set charlm.gemm_backend to auto or default"):
        decide("onednn", False, never, _key(), tmp_path)


def test_the_first_writer_of_a_decision_wins(tmp_path):
    from adbench.charlm.backend import keep_first
    path = tmp_path / "d" / "k.json"
    assert keep_first({"chosen": "onednn"}, path) == ({"chosen": "onednn"}, True)
    assert keep_first({"chosen": "default"}, path) == ({"chosen": "onednn"}, False)
    assert [p.name for p in path.parent.iterdir()] == ["k.json"]  # no temp file left behind


def test_cpu_identity_reads_the_vector_extensions():
    from adbench.charlm.backend import cpu_identity
    info = "model name\t: AMD EPYC 9R14\nflags\t\t: fpu sse avx fma avx2 avx512f avx512bw amx_tile\n"
    assert cpu_identity(info) == {"cpu_model": "AMD EPYC 9R14",
                                  "vector_flags": ["avx", "avx2", "fma", "avx512f", "avx512bw", "amx_tile"]}
    assert cpu_identity("model name\t: X\nflags\t: fpu sse avx2\n")["vector_flags"] == ["avx2"]


def _keep(tmp_path, chosen: str, cfg: dict) -> None:
    """Write the kept decision a job with `cfg` on this machine will find (as a first job would have)."""
    from adbench.charlm import backend
    shape = {"vocab_size": len(VOCAB), **{k: cfg[k] for k in ("block_size", "n_layer", "n_head", "n_embd",
                                                              "batch_size")}}
    key = backend.machine_key(shape, torch.__version__, torch.get_num_threads())
    backend.keep_first({"chosen": chosen, "ms_per_step": {}, "measured_utc": "x", "key": key},
                       backend.cache_file(key, backend.cache_dir()))


@pytest.mark.parametrize("chosen", ["default", "onednn"])
def test_auto_run_is_byte_identical_to_the_forced_run_of_its_choice(tmp_path, chosen):
    """The timing before training changes no bit: 'auto' gives exactly the forced backend's outputs, and with
    the default chosen exactly the plain loop's; forcing the other backend is the negative control."""
    if chosen == "onednn" and not onednn_available():
        pytest.skip("this torch has no oneDNN linear kernel")
    cfg = {**TINY, "steps": 6, "log_every": 3, "batch_size": 16, "block_size": 16, "n_embd": 32, "lr": 2e-3}
    _keep(tmp_path, chosen, cfg)
    auto = measure_train("no_zero_grad", TEXT, TEXT[:800], **cfg)
    forced = measure_train("no_zero_grad", TEXT, TEXT[:800], **cfg, gemm_backend=chosen)
    got = auto["_meta"]["gemm_choice"]
    assert got["chosen"] == chosen and "first timing" in got["decided_by"]
    for table in ("curve", "grad_norms", "run"):
        assert auto[table].drop(columns="train_seconds_volatile", errors="ignore").to_csv() == \
            forced[table].drop(columns="train_seconds_volatile", errors="ignore").to_csv()
    assert auto["weights"] == forced["weights"]
    if chosen == "default":
        assert run_gap(auto, reference_run("no_zero_grad", cfg), cfg) == {"loss": 0.0, "norm": 0.0, "logits": 0.0}
    if onednn_available():
        other = measure_train("no_zero_grad", TEXT, TEXT[:800], **cfg,
                              gemm_backend={"default": "onednn", "onednn": "default"}[chosen])
        assert auto["weights"] != other["weights"]  # the backends round differently: the check can fail


def test_the_training_jobs_meta_json_records_the_comparison(tmp_path, monkeypatch):
    """A smoke-sized charlm_train job through adbench.jobs: meta.json holds both timings and the choice,
    run.csv the backend that made the outputs."""
    from adbench.jobs import run_job

    class Outputs(dict):
        __getattr__ = dict.__getitem__
    monkeypatch.chdir(tmp_path)
    outputs = Outputs(curve="t/curve.csv", grad_norms="t/grad_norms.csv", weights="t/w.pt", run="t/run.csv",
                      meta="t/meta.json")
    args = {**TINY, "steps": 3, "gemm_backend": "auto"}
    smk = type("Smk", (), dict(params={"args": args, "prov": {"seed": 0}}, output=outputs, log=[],
                               rule="charlm_train", wildcards={"variant": "correct"}, threads=1))()
    run_job(smk, measure_train, variant="correct", corpus_text=TEXT, train_text=TEXT[:800])
    meta = json.loads((tmp_path / "t/meta.json").read_text())
    choice = meta["gemm_choice"]
    run = pd.read_csv(tmp_path / "t/run.csv")
    assert choice["setting"] == "auto" and run.gemm_backend[0] == choice["chosen"] == meta["gemm_backend"]
    if not onednn_available():
        return
    assert set(choice["ms_per_step"]) == {"default", "onednn"} and all(v > 0 for v in choice["ms_per_step"].values())
    assert [len(v) for v in choice["blocks_ms_per_step"].values()] == [3, 3]
    assert choice["ms_per_step"] == {b: min(v) for b, v in choice["blocks_ms_per_step"].items()}
    from adbench.charlm.backend import choose
    assert choice["chosen"] == choose(choice["ms_per_step"]) and choice["clock"] == "thread_time"
    assert Path(choice["cache_file"]).parent == tmp_path / "xdg-cache/adbench/gemm-backend"


def test_a_damaged_or_unwritable_decision_file_is_named(tmp_path, caplog):
    from adbench.charlm.backend import cache_file, decide
    key = _key()
    bad = cache_file(key, tmp_path)
    bad.write_text('{"chosen": "mkl"}')
    with pytest.raises(ValueError, match=f"{bad.name} names backend 'mkl'.*delete it"):
        decide("auto", True, _measured(50.0, 40.0), key, tmp_path)
    bad.write_text("{half")
    with pytest.raises(ValueError, match="is not a GEMM-backend decision.*delete it"):
        decide("auto", True, _measured(50.0, 40.0), key, tmp_path)
    ro = tmp_path / "file-not-dir"
    ro.write_text("")  # a cache folder that cannot be created: this job decides alone, and says so
    got = decide("auto", True, _measured(50.0, 40.0), key, ro)
    assert got["chosen"] == "onednn" and got["cache_file"] is None and "not kept" in got["decided_by"]
    assert "XDG_CACHE_HOME" in caplog.text
