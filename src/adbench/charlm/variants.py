"""The C1 variants: the correct training loop and one switch flipped per silent bug.

Torch-free on purpose: workflow/rules/charlm.smk imports VARIANTS at parse time to name the
`variant` wildcard's values, so the list lives here once and the rules never copy it."""

from __future__ import annotations

# Each variant is the correct loop with one switch flipped. Names are fixed strings: loss_scaled multiplies the
# loss by charlm.train.loss_scale (config), so its name never states the factor (summary.csv's loss_scale does).
# The control repeats no_zero_grad with clipping at `control_clip`: clip_grad_norm_ rescales
# the piled-up .grad in place every step, which turns the pile into a decaying sum.
VARIANTS = {
    "correct": {},
    "no_zero_grad": {"zero_grad": False},
    "unshifted_targets": {"shift_targets": False},
    "loss_scaled": {"scale_loss": True},
    "detached_positions": {"detach_positions": True},
    "no_zero_grad_clipped": {"zero_grad": False, "clipped": True},
}
RAN_THROUGH = "ran through"  # run.csv's `raised` for a run that completed without an exception
SWITCHES = {"zero_grad": True, "shift_targets": True, "scale_loss": False, "detach_positions": False,
            "clipped": False}


def switches(variant: str) -> dict[str, bool]:
    """The four switches of `variant`."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown C1 variant {variant!r}; expected one of {sorted(VARIANTS)}")
    return {**SWITCHES, **VARIANTS[variant]}
