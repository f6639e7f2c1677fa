"""Figures as PNG bytes (matplotlib, Agg, no timestamps): pure functions of the data given."""
import io
from dataclasses import dataclass

import numpy as np


def _pyplot():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _png(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    _pyplot().close(fig)
    return buf.getvalue()


@dataclass
class HeatmapPanel:
    title: str
    rows: list[str]
    columns: list[str]
    values: np.ndarray  # float; NaN where the value is NaN
    errors: np.ndarray  # bool: the mode raised
    dependent: np.ndarray  # bool: the value depends on placement (first value shown)


def heatmap(panels: list[HeatmapPanel], title: str, colour_label: str) -> bytes:
    """Panels side by side; every cell is coloured by its value and written in it; hatched
    cells take more than one value (the first is shown)."""
    plt = _pyplot()
    from matplotlib.colors import TwoSlopeNorm
    rows = max(len(p.rows) for p in panels)
    fig, axes = plt.subplots(1, len(panels), figsize=(9.5 * len(panels), rows * 0.26 + 2.5),
                             dpi=90, squeeze=False, layout="constrained")
    norm = TwoSlopeNorm(vmin=-1.0, vcenter=0.0, vmax=1.5)
    cmap = plt.get_cmap("RdBu_r").with_extremes(bad="white")
    image = None
    for ax, p in zip(axes[0], panels):
        shown = np.clip(np.where(p.errors, np.nan, p.values), -1.0, 1.5)
        image = ax.imshow(shown, cmap=cmap, norm=norm, aspect="auto", interpolation="nearest")
        for (i, j), value in np.ndenumerate(p.values):
            text = "err" if p.errors[i, j] else "nan" if np.isnan(value) else f"{value:.2g}"
            ax.text(j, i, text.replace("0.", "."), ha="center", va="center", fontsize=5)
            if p.dependent[i, j]:
                ax.add_patch(plt.Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, hatch="////",
                                           edgecolor="black", lw=0.8))
        ax.set_xticks(range(len(p.columns)), p.columns, rotation=90, fontsize=6)
        ax.set_yticks(range(len(p.rows)), p.rows, fontsize=6)
        ax.set_title(p.title, fontsize=8)
    fig.colorbar(image, ax=axes[0].tolist(), shrink=0.5, label=colour_label)
    fig.suptitle(title, fontsize=8)
    return _png(fig)


def lines(series: dict[str, list[tuple[float, float]]], styles: dict[str, dict], title: str,
          xlabel: str, ylabel: str, logx: bool = True, logy: bool = True,
          bands: dict[str, list[tuple[float, float, float]]] | None = None) -> bytes:
    """One line per series (x, y); `bands` adds shaded (x, low, high) intervals."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(9, 6), dpi=100)
    for name, pts in series.items():
        if pts:
            ax.plot(*zip(*sorted(pts)), label=name, **styles.get(name, {}))
    for name, pts in (bands or {}).items():
        if pts:
            x, lo, hi = zip(*sorted(pts))
            ax.fill_between(x, lo, hi, alpha=0.2, color=styles.get(name, {}).get("color"))
    if logx:
        ax.set_xscale("log")
    if logy:
        ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=8)
    ax.legend(fontsize=6, ncol=2)
    fig.tight_layout()
    return _png(fig)


@dataclass
class BarPanel:
    title: str
    groups: list[str]
    bars: dict[str, list[float | None]]  # series -> value per group
    intervals: dict[str, list[tuple[float, float] | None]]
    markers: dict[str, list[list[float]]]  # series -> points per group (several allowed)


def bar_panels(panels: list[BarPanel], title: str, ylabel: str) -> bytes:
    """One row of grouped bars per panel, with (low, high) intervals and marker points."""
    import textwrap
    plt = _pyplot()
    widest = max(len(p.groups) for p in panels)
    fig, axes = plt.subplots(len(panels), 1, figsize=(max(8, widest * 0.75), 3.2 * len(panels)),
                             dpi=90, squeeze=False, layout="constrained")
    for ax, p in zip(axes[:, 0], panels):
        width = 0.8 / max(1, len(p.bars))
        for k, (name, values) in enumerate(p.bars.items()):
            xs = [i + (k - (len(p.bars) - 1) / 2) * width for i in range(len(p.groups))]
            ax.bar(xs, [np.nan if v is None else v for v in values], width, label=name)
            for x, interval in zip(xs, p.intervals.get(name, [])):
                if interval is not None:
                    ax.plot([x, x], interval, color="black", lw=1)
        for (name, points), marker in zip(p.markers.items(), "Dos^v"):
            xs = [i for i, pts in enumerate(points) for _ in pts]
            ax.plot(xs, [v for pts in points for v in pts], marker, color="black", ms=6,
                    mfc="none", ls="", label=name)
        ax.set_xticks(range(len(p.groups)), p.groups, rotation=30, ha="right", fontsize=7)
        ax.set_ylabel(ylabel, fontsize=8)
        ax.set_title(p.title, fontsize=8)
    axes[0, 0].legend(fontsize=7)
    fig.suptitle(textwrap.fill(title, 140), fontsize=8)
    return _png(fig)
