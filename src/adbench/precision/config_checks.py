"""The P family's cross-key configuration checks: the GradScaler probe's shapes, P5's halvings, P7's weights."""

import math
from typing import Iterator

from ..config import clash, outside

CONFORMING = [
    # P5's GradScaler probe: loss = (w . x).sum() pairs each weight with one input
    ("precision.grad_scaler.inputs", "len", "==", "precision.grad_scaler.weights", "len",
     "loss = (w . x).sum() pairs each weight with one input"),
]

IN_RANGE = [
    ("precision.record_every", 1, "precision.steps", int,
     "an interval within the run; any larger value records only the first and the last step"),
    ("precision.grad_scaler.inf_index", 0, "precision.grad_scaler.weights", lambda w: len(w) - 1,
     "the inf is injected into one weight's gradient"),
]

MONOTONIC = [
    (("precision.rel_error_sweep.lo_exp", "precision.rel_error_sweep.hi_exp"), "strictly increasing",
     "the P3 figure spans 10^lo_exp up to 10^hi_exp"),
]

# adbench.precision.scaling.dynamic_scale tries at most this many scales, halving after each overflow.
DYNAMIC_SCALE_ATTEMPTS = 64
# The smallest binary64 value torch's cast to fp16 sends to inf: fp16 overflows from 65520 (65504 plus
# half its spacing of 32), and torch casts through float32, which rounds this midpoint up to 65520.
FP16_OVERFLOW = 65520.0 - 2.0 ** -9
FP16_LARGEST = 65504.0  # fp16's largest finite value


def fp16_exact(x: float) -> bool:
    """x is an fp16 value: on fp16's grid (11 significant bits, subnormal spacing 2^-24) and finite."""
    if x == 0:
        return True
    _, e = math.frexp(x)  # x = m 2^e with 0.5 <= |m| < 1: fp16's spacing there is 2^(e - 11), at least 2^-24
    return abs(x) <= FP16_LARGEST and math.ldexp(x, -max(e - 11, -24)).is_integer()


def checks(cfg: dict) -> Iterator[str]:
    """P5 halves the scale until every scaled gradient is finite in fp16 and gives up after DYNAMIC_SCALE_ATTEMPTS
    scales: the last one must bring the largest gradient below overflow. P7 reads the gap above each weight from
    torch.nextafter on the exact weight and cross-checks it with numpy's np.spacing of its fp16 cast: both agree
    only for a weight fp16 holds exactly, and fp16's largest finite value has no finite value above it."""
    p = cfg["precision"]
    last = p["dynamic_start"] / 2 ** (DYNAMIC_SCALE_ATTEMPTS - 1)
    largest = max(p["dynamic_grads"]) * last
    if outside(largest, 0, FP16_OVERFLOW, below=True):
        keys = [("precision.dynamic_start", p["dynamic_start"]), ("precision.dynamic_grads", p["dynamic_grads"])]
        yield clash(keys, f"after the scaler's last halving ({DYNAMIC_SCALE_ATTEMPTS - 1}) the largest scaled "
                          f"gradient is {largest:.4g}, not below fp16's overflow at {FP16_OVERFLOW:g}, "
                          "so P5 would find no finite scale")
    bad = [w for w in p["spacing_weights"] if not fp16_exact(w) or abs(w) >= FP16_LARGEST]
    if bad:
        yield clash([("precision.spacing_weights", p["spacing_weights"])],
                    f"{', '.join(f'{w!r}' for w in bad)} {'is' if len(bad) == 1 else 'are'} not an fp16 value below "
                    f"{FP16_LARGEST:g} (P7 shows the spacing above a weight fp16 holds exactly)")
