"""The O family's cross-key configuration checks: XOR's rows and checked parameter, O3's arrangements."""

import re
from typing import Iterator

from ..config import clash, matrix_shape, outside

CONFORMING = [
    # O1: the 2-4-1 XOR network takes len(inputs[0]) inputs; the tape zips rows with targets, numpy broadcasts
    ("optim.o1.targets", "len", "==", "optim.o1.inputs", "rows", "one target per input row"),
]

IN_RANGE = [
    ("optim.o1.report_seed", 0, "optim.o1.seeds", lambda n: n - 1, "seeds run 0..seeds-1"),
]

# (key naming one member, key holding the members, why): the discrete form of a range
ONE_OF = [
    ("optim.o3.adam_arrangement", "optim.o3.arrangements", "an arrangement defined under optim.o3.arrangements"),
    ("optim.o3.mixed_arrangements.*", "optim.o3.arrangements", "an arrangement defined under optim.o3.arrangements"),
]


def checks(cfg: dict) -> Iterator[str]:
    """W1 is hidden x inputs (row-major), b1 and W2 have `hidden` entries, b2 one: the checked name must exist
    in the network O1 builds (the schema checks its spelling)."""
    o1 = cfg["optim"]["o1"]
    param = o1["gradcheck"]["param"]
    idx = [int(i) for i in re.findall(r"\[(\d+)\]", param)]
    width = matrix_shape(o1["inputs"])
    sizes = [("optim.o1.hidden", o1["hidden"], o1["hidden"])]
    if param.startswith("W1") and width:
        sizes.append(("optim.o1.inputs", o1["inputs"], width[1]))
    for i, (size_key, size_value, n) in zip(idx, sizes):
        if bad := outside(i, 0, n - 1):
            what = "input" if size_key == "optim.o1.inputs" else "hidden unit"
            yield clash([("optim.o1.gradcheck.param", param), (size_key, size_value)],
                        f"{what} index {bad} (the network has {n} {what}s)")
