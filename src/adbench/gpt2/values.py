"""G6's values table: which architecture's figure stands under which documented quantity.

The documents' saved-tensor figures describe a nanoGPT-style model, so their quantity names carry
the nanoGPT-style rows; transformers' figures get the same names with `_transformers` appended
(documented.csv holds those rows too) and an `unjudged_reason` saying why they are shown, not scored."""

from __future__ import annotations

import pandas as pd
from transformers import GPT2Config

from ..tables import values_table
from ..timing import mark_unjudged
from .arch import DOC_ARCH, SUFFIX
from .load import gpt2_small_parameters

FP32 = 4
ARCH_NOTE = {
    "nanogpt": "nanoGPT-style GPT (fused SDPA attention, exact GELU, one cross_entropy) holding the transformers "
               "model's weights: the architecture the documents measured",
    "transformers": "transformers' GPT2LMHeadModel (eager attention, tanh-GELU as separate ops, log_softmax on "
                    "the logits)",
}
MEASURED = ("per_sequence_saved_mb", "batch_saved_gb", "batch_checkpointed_saved_gb", "checkpoint_time_overhead_pct")


def where_bytes_differ(by_node: pd.DataFrame, top: int = 5) -> str:
    """'X MB more per sequence; by node type: A +a MB, B -b MB, ...' (transformers minus nanogpt, the
    largest differences either way: a storage two node types share lands under the first one reached)."""
    u = by_node.pivot_table(index="node", columns="arch", values="unique_bytes", aggfunc="sum", fill_value=0)
    diff = u.get("transformers", 0) - u.get("nanogpt", 0)
    diff = diff[diff != 0].sort_values(key=abs, ascending=False)
    parts = [f"{n} {d / 1e6:+.4g} MB" for n, d in diff.head(top).items()]
    return f"{diff.sum() / 1e6:.4g} MB more per sequence; by node type: " + ", ".join(parts)


def memory_values(saved: pd.DataFrame, summary: pd.DataFrame, by_node: pd.DataFrame, batch: int, src: str,
                  noisy: dict[str, str]) -> pd.DataFrame:
    """Documented G6 rows: byte arithmetic from GPT-2 small's config; saved bytes and time from this run,
    per architecture; `noisy`: each architecture's timing unjudged reason ('' when its rounds were quiet)."""
    small = GPT2Config()
    derived = values_table("G6", [("weights_mb", gpt2_small_parameters() * FP32 / 1e6),
                                  ("logprob_gb", batch * small.n_positions * small.vocab_size * FP32 / 1e9)],
                           {"weights_mb": "GPT-2 small's unique parameters x 4 bytes",
                            "logprob_gb": f"{batch} x {small.n_positions} x {small.vocab_size} x 4 bytes"})
    frames = [derived]
    for arch in (DOC_ARCH, *[a for a in SUFFIX if a != DOC_ARCH]):
        kept = saved[(saved.arch == arch) & ~saved.kept].set_index(["batch", "checkpoint"])
        one, big, big_ck = kept.loc[(1, False)], kept.loc[(batch, False)], kept.loc[(batch, True)]
        s = summary.set_index("arch").loc[arch]
        per_call = "unique non-parameter storages; per hook call: {:.3g} GB"
        q = {m: m + SUFFIX[arch] for m in MEASURED}
        said = f"{ARCH_NOTE[arch]}; " if arch == DOC_ARCH else ""  # the other's unjudged reason names it
        frames.append(values_table("G6", [
            (q["per_sequence_saved_mb"], one.unique_storage_bytes / 1e6),
            (q["batch_saved_gb"], big.unique_storage_bytes / 1e9),
            (q["batch_checkpointed_saved_gb"], big_ck.unique_storage_bytes / 1e9),
            (q["checkpoint_time_overhead_pct"], 100 * (s.checkpoint_time_ratio_volatile - 1))],
            {q["per_sequence_saved_mb"]: said + per_call.format(one.bytes_per_hook_call / 1e9),
             q["batch_saved_gb"]: said + per_call.format(big.bytes_per_hook_call / 1e9),
             q["batch_checkpointed_saved_gb"]: f"{said}saves outside the blocks plus the block inputs the checkpoint "
                                               "keeps; per hook call (outside the blocks only): "
                                               f"{big_ck.bytes_per_hook_call / 1e9:.3g} GB",
             q["checkpoint_time_overhead_pct"]: f"{said}median of {int(s.timing_rounds)} rounds at batch "
                                                f"{int(s.timing_batch)}"},
            model_source=src))
    values = mark_unjudged(pd.concat(frames, ignore_index=True), "", prefix="checkpoint_time")
    for arch in SUFFIX:  # a noisy timing leaves that architecture's ratio unjudged
        values.loc[values.quantity == "checkpoint_time_overhead_pct" + SUFFIX[arch], "unjudged_reason"] = noisy[arch]
    other = values.quantity.str.endswith(SUFFIX["transformers"])
    why = (f"measured on {ARCH_NOTE['transformers']}, not on the nanoGPT-style architecture the documents measured "
           f"(the row without '{SUFFIX['transformers']}' is judged): shown, not scored")
    values.loc[other, "unjudged_reason"] = [why + (f"; {r}" if r else "") for r in values.loc[other, "unjudged_reason"]]
    where = values.quantity == "per_sequence_saved_mb" + SUFFIX["transformers"]  # where the bytes go, once
    values.loc[where, "unjudged_reason"] += "; " + where_bytes_differ(by_node) + " (G6/by_node)"
    return values
