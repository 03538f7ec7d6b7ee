"""When a timing has moved: a rank test on the raw samples of both runs, an effect above a
threshold, the machine of each run (a move between two machines is `machine differs`), and provenance
that says the code or libraries changed (otherwise: noise)."""

from __future__ import annotations

import json
import math
import re
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd

from .. import machine

ALPHA = 0.05  # two-sided significance level of the Mann-Whitney test
EXACT_MAX = 400  # exact null distribution when n1 * n2 is at most this and there are no ties
_MEDIAN = re.compile(r"^(.*)_median_(min|max)(_[a-z]+)?$")
# Versions that cannot change how fast a measurement runs: the workflow engine is not in the loop.
_NOT_TIMED = ("snakemake",)
# A timing that moved between two machines (adbench.machine.compare), or against a run that recorded no
# machine identity while code and libraries are unchanged: neither a move of the code nor noise.
MACHINE_DIFFERS, MACHINE_UNKNOWN = "machine differs", "machine unknown"


def _normal_sf(z: float) -> float:
    """P(Z > z) for a standard normal Z."""
    return 0.5 * math.erfc(z / math.sqrt(2.0))


@lru_cache(maxsize=None)
def _u_counts(n1: int, n2: int) -> tuple[int, ...]:
    """Number of orderings of n1 + n2 untied values giving each U = 0 .. n1*n2 (recursion on the largest value)."""
    if n1 == 0 or n2 == 0:
        return (1,)
    a = _u_counts(n1 - 1, n2)  # largest value from sample 1: it beats all n2 -> U shifts by n2
    b = _u_counts(n1, n2 - 1)  # largest value from sample 2: U unchanged
    out = [0] * (n1 * n2 + 1)
    for u, c in enumerate(a):
        out[u + n2] += c
    for u, c in enumerate(b):
        out[u] += c
    return tuple(out)


def mann_whitney(x, y, exact: bool | None = None) -> tuple[float, float]:
    """(U of x, two-sided p): exact for small untied samples (or `exact`), else normal with tie and
    continuity correction."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    n1, n2 = len(x), len(y)
    if n1 == 0 or n2 == 0:
        raise ValueError("mann_whitney needs at least one sample on each side")
    allv = np.concatenate([x, y])
    ranks = pd.Series(allv).rank(method="average").to_numpy()  # midranks for ties
    u = float(ranks[:n1].sum() - n1 * (n1 + 1) / 2)
    _, tie_counts = np.unique(allv, return_counts=True)
    ties = bool((tie_counts > 1).any())
    if exact is None:
        exact = not ties and n1 * n2 <= EXACT_MAX
    if exact and not ties:
        counts = _u_counts(n1, n2)
        total = math.comb(n1 + n2, n1)
        k = int(round(min(u, n1 * n2 - u)))
        return u, min(1.0, 2 * sum(counts[: k + 1]) / total)
    n = n1 + n2
    mu = n1 * n2 / 2
    var = n1 * n2 / 12 * ((n + 1) - float((tie_counts ** 3 - tie_counts).sum()) / (n * (n - 1)))
    if var <= 0:
        return u, 1.0
    z = (abs(u - mu) - 0.5) / math.sqrt(var)
    return u, min(1.0, 2 * _normal_sf(max(z, 0.0)))


def sample_file(root: Path, mid: str) -> Path | None:
    """The pooled raw-sample CSV of measurement `mid` under a results or archive folder (shallowest wins)."""
    base = Path(root) / mid
    if not base.is_dir():
        return None
    for path in sorted(base.rglob("*.csv"), key=lambda p: (len(p.parts), str(p))):
        header = path.open(encoding="utf-8").readline().strip().split(",")
        if {"candidate", "per_call_us", "round"} <= set(header):
            return path
    return None


def _meta(root: Path, mid: str) -> dict | None:
    """Measurement `mid`'s meta.json under a results or archive folder (None when there is none)."""
    path = Path(root) / mid / "meta.json"
    return json.loads(path.read_text()) if path.exists() else None


def provenance(root: Path, mid: str) -> dict | None:
    """code_hash and versions of measurement `mid` from its meta.json (None when not recorded); a GPU's driver
    and CUDA runtime count as versions: they are software that sets a kernel's speed."""
    meta = _meta(root, mid)
    if meta is None or "code_hash" not in meta or "versions" not in meta:
        return None
    gpu = machine.of_meta(meta).get("gpu") or {}
    stack = {f"gpu_{k}": gpu[k] for k in ("driver", "cuda") if gpu.get(k)}
    return {"code_hash": meta["code_hash"],
            "versions": {k: v for k, v in meta["versions"].items() if k not in _NOT_TIMED} | stack}


def recorded_machines(root_a, root_b, mid: str) -> tuple[dict, dict]:
    """The machines measurement `mid`'s meta.json records in two runs ({} for none)."""
    a, b = (machine.of_meta(_meta(r, mid) or {}) if r else {} for r in (root_a, root_b))
    return a, b


def machines(root_a, root_b, mid: str) -> tuple[str, str]:
    """('same' | 'differs' | 'unknown', words) for the machines measurement `mid` ran on in two runs."""
    a, b = recorded_machines(root_a, root_b, mid)
    verdict = machine.compare(a, b)
    if verdict == "differs":
        return verdict, f"machines differ: {machine.difference(a, b)} (then {machine.line(a)}; now {machine.line(b)})"
    if verdict == "unknown":
        which = " and ".join(w for w, m in (("the earlier run", a), ("this run", b)) if not machine.complete(m))
        return verdict, f"machine unknown: {which} recorded no full machine identity"
    return verdict, "same machine"


def pairs_file(root: Path, mid: str) -> Path | None:
    """A measurement's declared timing pairs (timing_pairs.csv: quantity, numerator, denominator), written by a job
    that times more than two candidates in one samples file; None when it times a single pair."""
    path = Path(root) / mid / "timing_pairs.csv"
    return path if path.exists() else None


def _series(samples: pd.DataFrame, quantity: str, pairs: pd.DataFrame | None = None) -> tuple[np.ndarray, str]:
    """The raw values a timing quantity summarises: one candidate's per-call times, or the paired log ratios of its
    two candidates (the file's only two, or the pair `pairs` declares for the quantity)."""
    m = _MEDIAN.match(quantity)
    cands = sorted(samples.candidate.unique())
    if m and m.group(1) in cands:
        return samples.loc[samples.candidate == m.group(1), "per_call_us"].to_numpy(), "times"
    declared = None if pairs is None else pairs[pairs.quantity == quantity]
    if declared is not None and len(declared):
        cands = [declared.numerator.iloc[0], declared.denominator.iloc[0]]
    if len(cands) != 2:
        raise ValueError(f"timing quantity {quantity!r}: expected two candidates, found {cands} and no declared pair")
    index = [c for c in ("process", "round") if c in samples.columns]
    wide = samples.pivot_table(index=index, columns="candidate", values="per_call_us")
    return np.log(wide[cands[0]] / wide[cands[1]]).to_numpy(), "log_ratio"


def _effect(old: np.ndarray, new: np.ndarray, what: str) -> float:
    """Relative size of the shift: new/old median - 1, or the change of the median paired ratio."""
    if what == "times":
        return float(np.median(new) / np.median(old) - 1)
    return float(math.exp(abs(float(np.median(new) - np.median(old)))) - 1)


def sample_test(old: pd.DataFrame, new: pd.DataFrame, quantity: str, threshold: float,
                pairs: tuple[pd.DataFrame | None, pd.DataFrame | None] = (None, None)) -> tuple[bool, str]:
    """Moved by the raw samples: Mann-Whitney p < ALPHA and |effect| > threshold (`pairs`: each run's declared
    timing pairs, when its samples file holds more than two candidates)."""
    (a, what), (b, _) = _series(old, quantity, pairs[0]), _series(new, quantity, pairs[1])
    _, p = mann_whitney(a, b)
    eff = _effect(a, b, what)
    did = p < ALPHA and abs(eff) > threshold
    return did, (f"Mann-Whitney p={p:.2g} ({len(a)} vs {len(b)} samples), effect {eff:+.1%} "
                 f"vs threshold {threshold:.0%}")


def span_test(spans, threshold: float) -> tuple[bool, str]:
    """Fallback without raw samples: process-run spans do not overlap and the midpoints differ by > threshold."""
    (lo1, hi1), (lo2, hi2) = spans
    mid1, mid2 = (lo1 + hi1) / 2, (lo2 + hi2) / 2
    eff = 0.0 if mid1 == 0 else mid2 / mid1 - 1
    did = (hi1 < lo2 or hi2 < lo1) and abs(eff) > threshold
    return did, (f"no raw samples: process-run spans [{lo1:.4g}, {hi1:.4g}] vs [{lo2:.4g}, {hi2:.4g}], "
                 f"effect {eff:+.1%} vs threshold {threshold:.0%}")


def percent(x: float) -> str:
    """0.05 -> '5%', 0.025 -> '2.5%': a threshold in words without rounding it."""
    return f"{x * 100:g}%"


def timing_rules(threshold: float) -> list[str]:
    """What `timing_moved` decides, in words built from the same ALPHA and threshold it uses."""
    return [f"A timing moves when a two-sided Mann-Whitney test on the raw samples of both runs gives "
            f"p < {ALPHA:g} and its median (or its median paired ratio) changed by more than {percent(threshold)} "
            "(changes.timing_threshold).",
            f"Without raw samples in both runs, a timing moves when its process-run ranges do not overlap and "
            f"their midpoints differ by more than {percent(threshold)}; without ranges, when its value changed by "
            f"more than {percent(threshold)}.",
            "A timing that moves between two machines (CPU model, vector extensions, logical CPUs or GPU differ in "
            f"meta.json) is labelled {MACHINE_DIFFERS}, never noise or a move.",
            "A timing that moves while its code and libraries (meta.json) did not change is labelled noise, "
            f"not a move, on the same machine; {MACHINE_UNKNOWN} when either run recorded no machine identity."]


def timing_moved(mid: str, quantity: str, old_root, new_root, threshold: float, spans=None,
                 values=None) -> tuple[str, str]:
    """('moved' | 'noise' | 'same', rule) for one timing quantity of two runs."""
    fa = sample_file(old_root, mid) if old_root else None
    fb = sample_file(new_root, mid) if new_root else None
    if fa and fb:
        declared = tuple(pd.read_csv(p) if (p := pairs_file(r, mid)) else None for r in (old_root, new_root))
        did, rule = sample_test(pd.read_csv(fa), pd.read_csv(fb), quantity, threshold, declared)
    elif spans is not None:
        did, rule = span_test(spans, threshold)
    else:
        a, b = values
        eff = 0.0 if a == 0 else b / a - 1
        did, rule = abs(eff) > threshold, f"no raw samples: relative change {eff:+.1%} vs threshold {threshold:.0%}"
    if not did:
        return "same", rule
    pa = provenance(old_root, mid) if old_root else None
    pb = provenance(new_root, mid) if new_root else None
    same_stack = pa is not None and pa == pb
    if old_root and new_root:  # without both runs' folders nothing is known of either machine: the rules above
        where, words = machines(old_root, new_root, mid)
        if where == "differs":  # the machine alone explains a move, whatever else changed
            return MACHINE_DIFFERS, f"{rule}; {words}"
        if where == "unknown":
            return (MACHINE_UNKNOWN, f"{rule}; code and libraries unchanged (meta.json), but {words}: not noise") \
                if same_stack else ("moved", f"{rule}; {words}")
    if same_stack:
        return "noise", rule + "; code and libraries unchanged (meta.json): noise"
    return "moved", rule
