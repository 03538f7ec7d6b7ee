"""The history page: the runs, what moved first where, timing-ratio ranges as a chart, every quantity."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pandas as pd
from markupsafe import Markup

from ..figures import COLORS, new_figure, svg_bytes
from ..history.changes import moved_rules_text
from ..history.table import CLAIM_KIND, NOT_RECORDED, changed_cells, ratio_ranges
from .page import environment_for


def ratio_chart(table: pd.DataFrame, labels: list[str], short: dict[str, str]) -> str:
    """Inline SVG: per ID, the timing-ratio range (low to high process run) in each run; '' when none."""
    ranges = ratio_ranges(table, labels)
    ranges = {k: v for k, v in ranges.items() if any(lo is not None for _, lo, _ in v)}
    if not ranges:
        return ""
    fig, axes = new_figure(nrows=len(ranges), ncols=1, squeeze=False,
                           figsize=(max(4.0, 1.2 * len(labels) + 2), 2.0 * len(ranges)), sharex=True)
    for ax, (mid, spans) in zip(axes[:, 0], ranges.items()):
        for x, (lab, lo, hi) in enumerate(spans):
            if lo is None:  # failed run, or one that did not measure this ID: no bar
                continue
            ax.plot([x, x], [lo, hi], "-", color=COLORS[0], lw=6, solid_capstyle="butt")
            ax.plot([x, x], [lo, hi], "_", color=COLORS[0], ms=14)
        unit = table.loc[(table.id == mid) & table.unit.isin(["×", "%"]), "unit"].iloc[0]
        ax.set_ylabel(f"{mid} ({unit})")
        ax.set_xlim(-0.5, len(labels) - 0.5)
    axes[-1, 0].set_xticks(range(len(labels)), [short[lab] for lab in labels], rotation=20, ha="right", fontsize=8)
    axes[0, 0].set_title("Timing ratios: range over process runs, per run")
    return Markup(svg_bytes(fig).decode("utf-8").split("?>", 1)[-1])


def short_label(label: str) -> str:
    """'2026-11-30_torch2.13.0-cpu_transformers5.24.0_matplotlib3.10.9_cpu' -> 'matplotlib3.10.9 (2026-11-30)'."""
    parts = label.split("_")
    core = [p for p in parts[1:-1] if not p.startswith(("torch", "transformers"))] or parts[1:2]
    return f"{' '.join(core)} ({parts[0]})" if len(parts) > 2 else label


def render_history(template_dir: str, table: pd.DataFrame, runs: list[dict], thresholds: dict) -> str:
    """report/history.html from history.html.j2 and the history table; `thresholds` holds the run's
    changes.relative_threshold and timing_threshold ("relative", "timing"), which the moved rules state."""
    env = environment_for(template_dir)
    labels = [r["label"] for r in runs]
    short = {lab: short_label(lab) for lab in labels}
    quantities = table[~table.id.isin(["env", "run"]) & (table.kind != CLAIM_KIND)]
    # the claims block: each claim's verdict per run, the runs where it changed marked
    claims = [r | {"marked": [cur["label"] for _, cur in changed_cells(r, runs)]}
              for r in table[table.kind == CLAIM_KIND].to_dict("records")]
    ctx = {"runs": runs, "labels": labels, "short": short, "thresholds": thresholds,
           "moved_rules": moved_rules_text(thresholds["relative"], thresholds["timing"]),
           "env_rows": table[table.id == "env"].to_dict("records"),
           "moved": quantities[quantities.first_moved_at != ""].to_dict("records"),
           "noise": quantities[(quantities.first_moved_at == "") & (quantities.noise_at != "")].to_dict("records"),
           "rows": quantities.to_dict("records"), "chart": ratio_chart(table, labels, short),
           "claims": claims, "claims_changed": [c for c in claims if c["first_moved_at"]],
           "claims_unrecorded": [r["label"] for r in runs if r["ok"] and claims and
                                 all(c[r["label"]] == NOT_RECORDED for c in claims)],
           "generated": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
           "style": Markup(Path(template_dir, "style.css").read_text())}
    return env.get_template("history.html.j2").render(**ctx)
