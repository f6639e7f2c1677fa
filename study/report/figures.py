"""Figures as PNG bytes (matplotlib, Agg, no timestamps): pure functions of the data given."""
import io
import math
import textwrap
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


# --- the atlas: categories, not a colour scale ---------------------------------------------

# What a reader must tell apart at a glance; any other finite value is "other" and written in.
CATEGORIES = (("0", "#d9e6f2"), ("0.5", "#7fb2d9"), ("1", "#1f5f99"), ("other", "#f2c14e"),
              ("NaN", "#c9409c"), ("±inf", "#e8742c"), ("error", "#222222"))


def category(value, error: bool) -> int:
    """The index into CATEGORIES of one cell's first value."""
    if error:
        return 6
    if math.isnan(value):
        return 4
    if math.isinf(value):
        return 5
    return {0.0: 0, 0.5: 1, 1.0: 2}.get(value, 3)


@dataclass
class HeatmapPanel:
    title: str
    rows: list[str]
    columns: list[str]
    values: np.ndarray  # float; NaN where the value is NaN
    errors: np.ndarray  # bool: the mode raised
    dependent: np.ndarray  # bool: the value depends on placement (first value shown)
    missing: np.ndarray | None = None  # bool: the op was not probed at this input (left blank)


def heatmap(panels: list[HeatmapPanel], title: str) -> bytes:
    """Panels side by side, every cell coloured by its category (0, 0.5, 1, other, NaN, ±inf,
    error; a legend says which); 'other' values are written in; hatched cells take more than
    one value (the first is shown)."""
    plt = _pyplot()
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Patch
    rows = max(len(p.rows) for p in panels)
    cols = max(len(p.columns) for p in panels)
    fig, axes = plt.subplots(1, len(panels), figsize=(cols * 0.32 * len(panels) + 4, rows * 0.2 + 3),
                             dpi=100, squeeze=False, layout="constrained")
    cmap = ListedColormap([colour for _, colour in CATEGORIES])
    for ax, p in zip(axes[0], panels):
        codes = np.vectorize(category)(p.values, p.errors)
        shown = codes if p.missing is None else np.ma.masked_where(p.missing, codes)
        ax.imshow(shown, cmap=cmap, vmin=-0.5, vmax=len(CATEGORIES) - 0.5, aspect="auto",
                  interpolation="nearest")
        for (i, j), code in np.ndenumerate(codes):
            if p.missing is not None and p.missing[i, j]:
                continue
            if code == 3:
                ax.text(j, i, f"{p.values[i, j]:.2g}", ha="center", va="center", fontsize=6)
            if p.dependent[i, j]:
                ax.add_patch(plt.Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, hatch="////",
                                           edgecolor="black", lw=0.6))
        ax.set_xticks(range(len(p.columns)), p.columns, rotation=90, fontsize=7)
        ax.set_yticks(range(len(p.rows)), p.rows, fontsize=7)
        ax.set_title(p.title, fontsize=9)
    handles = [Patch(facecolor=c, edgecolor="grey", label=name) for name, c in CATEGORIES]
    handles.append(Patch(facecolor="white", edgecolor="black", hatch="////",
                         label="depends on placement"))
    fig.legend(handles=handles, loc="outside lower center", ncol=len(handles), fontsize=8)
    fig.suptitle(textwrap.fill(title, 160), fontsize=9)
    return _png(fig)


# --- lines with intervals, one panel each ---------------------------------------------------

@dataclass
class LinePanel:
    title: str
    series: dict[str, list[tuple[float, float, float, float]]]  # name -> (x, y, low, high)
    styles: dict[str, dict]
    floor: list[tuple[float, float]]  # a reference line (x, y); empty for none
    floor_label: str = ""


def line_panels(panels: list[LinePanel], title: str, xlabel: str, ylabel: str) -> bytes:
    """Log-log panels side by side sharing the y axis; each point has an error bar from low
    to high, and the panel's floor is drawn as a dashed black line."""
    plt = _pyplot()
    fig, axes = plt.subplots(1, len(panels), figsize=(7 * len(panels), 6), dpi=100,
                             squeeze=False, sharey=True, layout="constrained")
    for ax, p in zip(axes[0], panels):
        for name, pts in p.series.items():
            if pts:
                x, y, lo, hi = map(np.asarray, zip(*sorted(pts)))
                ax.errorbar(x, y, yerr=[y - lo, hi - y], label=name, capsize=2, lw=1, ms=3,
                            **p.styles.get(name, {}))
        if p.floor:
            ax.plot(*zip(*sorted(p.floor)), color="black", ls=":", lw=1.5, label=p.floor_label)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(xlabel)
        ax.set_title(p.title, fontsize=9)
        ax.legend(fontsize=6, ncol=1)
    axes[0, 0].set_ylabel(ylabel)
    fig.suptitle(textwrap.fill(title, 160), fontsize=9)
    return _png(fig)


# --- counts with intervals ---------------------------------------------------------------------

@dataclass
class PointPanel:
    title: str
    groups: list[str]
    points: dict[str, list[tuple[float, float, float] | None]]  # series -> (value, low, high)


def point_panels(panels: list[PointPanel], title: str, ylabel: str) -> bytes:
    """One row per panel: each series' value per group as a point with its interval."""
    plt = _pyplot()
    widest = max(len(p.groups) for p in panels)
    fig, axes = plt.subplots(len(panels), 1, figsize=(max(8, widest * 0.75), 3.2 * len(panels)),
                             dpi=90, squeeze=False, layout="constrained")
    for ax, p in zip(axes[:, 0], panels):
        width = 0.5 / max(1, len(p.points))
        for k, (name, values) in enumerate(p.points.items()):
            shown = [(i + (k - (len(p.points) - 1) / 2) * width, v) for i, v in enumerate(values)
                     if v is not None]
            if shown:
                x = np.array([s[0] for s in shown])
                y, lo, hi = (np.array(c) for c in zip(*(s[1] for s in shown)))
                ax.errorbar(x, y, yerr=[y - lo, hi - y], fmt="o", capsize=3, ms=4, label=name)
        ax.set_xticks(range(len(p.groups)), p.groups, rotation=30, ha="right", fontsize=7)
        ax.set_ylabel(ylabel, fontsize=8)
        ax.set_title(p.title, fontsize=8)
        ax.legend(fontsize=7)
    fig.suptitle(textwrap.fill(title, 140), fontsize=8)
    return _png(fig)


def convention_map(rows: list[dict], title: str) -> bytes:
    """Each look-alike pair at each kink (a row), torch's and JAX's derivative side by side,
    coloured by category and written in; a pair that disagrees is outlined in red."""
    plt = _pyplot()
    from matplotlib.patches import Patch, Rectangle
    n = len(rows)
    fig, ax = plt.subplots(figsize=(9, 1.2 + 0.32 * n), dpi=100)
    colours = [c for _, c in CATEGORIES]
    for i, r in enumerate(rows):
        for j, side in enumerate(("torch d/dx", "JAX d/dx")):
            v = r[side]
            error = isinstance(v, str)
            number = v if isinstance(v, float) else float("nan") if not error else 0.0
            cat = category(number, error) if not hasattr(v, "values_text") else 3
            ax.add_patch(Rectangle((j, n - 1 - i), 1, 1, color=colours[cat]))
            label = "error" if error else "placement" if cat == 3 and hasattr(v, "values_text") else f"{number:.4g}"
            ax.text(j + 0.5, n - 0.5 - i, label, ha="center", va="center", fontsize=9,
                    color="white" if cat in (2, 4, 6) else "black")
        if r["same d/dx"] is False:
            ax.add_patch(Rectangle((0, n - 1 - i), 2, 1, fill=False, edgecolor="red", linewidth=2))
    ax.set_xlim(0, 2)
    ax.set_ylim(0, n)
    ax.set_xticks([0.5, 1.5], ["torch", "JAX"])
    ax.set_yticks([n - 0.5 - i for i in range(n)],
                  [f"{r['torch op']} / {r['JAX op']} at {r['kink']:g}" for r in rows], fontsize=8)
    ax.tick_params(length=0)
    ax.set_title(title, fontsize=10)
    ax.legend(handles=[Patch(color=c, label=k) for k, c in CATEGORIES[:6]]
              + [Patch(fill=False, edgecolor="red", label="torch ≠ JAX")],
              loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8, frameon=False)
    fig.tight_layout()
    return _png(fig)


def count_bars(rows: list[dict], title: str) -> bytes:
    """Per setting (a row), the paper's published counts as black diamonds beside torch's and
    JAX's predicted counts with their 95% intervals, all out of 1000 at the paper's images."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(12, 5), dpi=100)
    xs = np.arange(len(rows))
    for dx, fw, colour in ((-0.15, "torch", "#1f5f99"), (0.15, "jax", "#e8742c")):
        est = [r.get(f"{fw}: predicted at theirs") for r in rows]
        ok = [i for i, e in enumerate(est) if e is not None]
        ax.errorbar(xs[ok] + dx, [est[i].value for i in ok],
                    yerr=[[est[i].value - est[i].lo for i in ok], [est[i].hi - est[i].value for i in ok]],
                    fmt="o", color=colour, capsize=3, label=f"{fw}: predicted (constant rate)")
    for i, r in enumerate(rows):
        for j, count in enumerate(r.get("theirs") or []):
            ax.plot(i, count, "D", color="black", label="Bertoin et al." if i == j == 0 else None)
    ax.set_xticks(xs, [f"{r['sweep']}: {r['setting']}" for r in rows], rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("initialisations of 1000 whose dW1 depends on ReLU'(0)")
    ax.set_ylim(0, 1000)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8, frameon=False)
    fig.tight_layout()
    return _png(fig)


def ratio_panels(rows: list[dict], title: str) -> bytes:
    """One panel per framework and mode: each custom rule's time ÷ the built-in's against size
    (log-log), with its 95% interval, and a line at 1."""
    plt = _pyplot()
    panels = list(dict.fromkeys((r["framework"], r["mode"]) for r in rows))
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 4), dpi=100, squeeze=False)
    for ax, (fw, mode) in zip(axes[0], panels):
        mine = [r for r in rows if (r["framework"], r["mode"]) == (fw, mode) and r["÷ built-in"] is not None]
        for rule in dict.fromkeys(r["rule"] for r in mine):
            pts = sorted((r["n"], r["÷ built-in"]) for r in mine if r["rule"] == rule)
            xs = [n for n, _ in pts]
            ys = [e.value for _, e in pts]
            err = [[e.value - (e.lo if e.lo is not None else e.value) for _, e in pts],
                   [(e.hi if e.hi is not None else e.value) - e.value for _, e in pts]]
            ax.errorbar(xs, ys, yerr=err, marker="o", capsize=3, label=textwrap.shorten(rule, 32))
        ax.axhline(1, color="black", linewidth=0.8)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(f"{fw} {mode}", fontsize=10)
        ax.set_xlabel("elements")
        ax.legend(fontsize=7, frameon=False)
    axes[0][0].set_ylabel("time ÷ built-in's")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return _png(fig)
