"""The T family's measurement-level controls (claims/bugs.py): each runs the real measure_t* with one realistic
bug switched on in a hand rule or in the reference it names, and lists the relations that must then fail. Plain
data; nothing registers on import.

The arguments are the project's defaults (config.yaml's `tensor` section), so a control judges the very tables a
default run writes, with the bug as the only difference.
"""

from __future__ import annotations

from typing import Callable

from ..claims.bugs import Bug, Tables, default_config
from . import averaging, multihead, probes, qkv, rules, saved, vocab


def _tensor() -> dict:
    """config.yaml's `tensor` section (the source checkout's defaults)."""
    return default_config("tensor")


def _run(id_: str, section: str) -> Callable[[str | None], Tables]:
    """measure_<id> on the default `tensor.<section>`, its tables keyed like results/."""
    fn = getattr(probes, f"measure_{id_.lower()}")
    return lambda bug: {f"{id_}/{k}": v for k, v in fn(**_tensor()[section], bug=bug).items()}


T1, T2, T3, T4 = _run("T1", "matmul"), _run("T2", "softmax"), _run("T3", "attention"), _run("T4", "layernorm")

BUGS = [
    Bug(rules.OVERWRITE, "the hand dW sums X's rows' outer products with `=`: only the last row's survives",
        ("matmul_transposes_match_torch",), T1),
    Bug(saved.DETACHED_WEIGHT, "the forward multiplies by W.detach(): mm then keeps only W, never X",
        ("matmul_saves_both_operands",), T1),
    Bug(vocab.TARGET_ONLY, "torch's loss is -z[target], the log-sum-exp normalizer dropped",
        ("softmax_grad_sums_to_zero", "softmax_grad_is_p_minus_onehot", "every_vocab_row_gets_gradient"), T2),
    Bug(rules.MISSING_SHIFT, "the stable softmax does not subtract max(z) first",
        ("naive_overflows_shifted_finite", "fused_xent_finite"), T2),
    Bug(probes.WRONG_REDUCTION, "the mean divides the summed loss by the sequence length, ignored targets included",
        ("mean_divides_by_counted_tokens",), T2),
    Bug(probes.OVERWRITE_TOKENS, "the summed loss's per-token gradients accumulate with `=`: only the last token's",
        ("summed_loss_scales_with_token_count",), T2),
    Bug(averaging.FLATTENED, "the per-sequence mean is computed over the flattened batch (a per-token mean)",
        ("token_and_sequence_means_differ",), T2),
    Bug(rules.NO_SHARED_DOT, "the softmax backward is a * g, without subtracting the shared <g, a>",
        ("attention_score_rows_sum_to_zero", "hand_attention_grads_match_torch64", "causal_mask_zero_no_nan",
         "input_grad_sums_three_routes", "projection_weight_grads_match_torch", "multihead_slices_add",
         "fused_attention_matches_formulas", "forgotten_scale_hits_only_q_and_k"), T3),
    Bug(rules.DROPPED_TRANSPOSE, "the hand dV is A G instead of A^T G",
        ("hand_attention_grads_match_torch64", "forgotten_scale_hits_only_q_and_k", "input_grad_sums_three_routes",
         "projection_weight_grads_match_torch", "multihead_slices_add", "fused_attention_matches_formulas"), T3),
    Bug(rules.FORGOT_SCALE, "the hand dQ and dK miss 1/sqrt(D)",
        ("hand_attention_grads_match_torch64", "input_grad_sums_three_routes", "projection_weight_grads_match_torch",
         "multihead_slices_add", "fused_attention_matches_formulas"), T3),
    Bug(qkv.OVERWRITE_ROUTES, "dX = dQ Wq^T + dK Wk^T + dV Wv^T written with `=`: only the last route survives",
        ("input_grad_sums_three_routes",), T3),
    Bug(multihead.OVERWRITE_HEADS, "the heads' input contributions written into dX with `=`: only the last head's",
        ("multihead_slices_add",), T3),
    Bug(rules.INDEPENDENT_DIVISIONS, "the hand layer-norm backward drops the mean and variance paths (dx = r u)",
        ("hand_layernorm_dx_matches_torch64", "eps_mismatch_fails_check"), T4),
    Bug(rules.EPS_OUTSIDE_SQRT, "the hand layer norm's rstd is 1 / (sqrt(var) + eps)",
        ("hand_layernorm_dx_matches_torch64", "layernorm_param_grads", "eps_mismatch_fails_check"), T4),
    Bug(rules.HARD_CODED_EPS, "the hand layer norm uses nn.LayerNorm's default eps whatever it is given",
        ("eps_mismatch_fails_check", "eps_matters_near_variance"), T4),
    Bug(probes.DETACHED_STATS, "the reference layer norm computes its mean and variance detached",
        ("layernorm_dx_sums_to_zero", "hand_layernorm_dx_matches_torch64", "layernorm_dx_orthogonal_to_xhat",
         "independent_divisions_miss_torch"), T4),
    Bug(saved.ELEMENTWISE, "layer norm written from elementwise ops: autograd keeps x - mean and xhat",
        ("layernorm_saves_row_statistics",), T4),
]
