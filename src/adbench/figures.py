"""Figure helpers: one house style, SVG bytes out (embedded in the report as data URIs)."""

from __future__ import annotations

import io

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

STYLE = {
    "figure.figsize": (6.4, 3.8), "figure.dpi": 100, "axes.grid": True, "grid.alpha": 0.3,
    "axes.spines.top": False, "axes.spines.right": False, "font.size": 10,
    "svg.fonttype": "none", "svg.hashsalt": "adbench", "legend.frameon": False,
}
# Colour-blind-safe palette (Okabe-Ito).
COLORS = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000"]


def new_figure(**kw):
    """A figure and axes in the house style."""
    with plt.rc_context(STYLE):
        return plt.subplots(**kw)


def svg_bytes(fig) -> bytes:
    """Serialize and close a figure; metadata stripped so reruns give identical bytes."""
    buf = io.BytesIO()
    with plt.rc_context(STYLE):
        fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None, "Creator": None})
    plt.close(fig)
    return buf.getvalue()
