"""Figures as PNG bytes (matplotlib, Agg, no timestamps): pure functions of the data given."""
import io
import math
import textwrap

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
    """One panel per framework and mode: each custom rule's time ÷ the built-in's at each size
    measured (points, not joined: the sizes are decades apart), with its 95% interval; a line at 1."""
    plt = _pyplot()
    from matplotlib.ticker import ScalarFormatter
    panels = list(dict.fromkeys((r["framework"], r["mode"]) for r in rows))
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 4), dpi=100, squeeze=False)
    for ax, (fw, mode) in zip(axes[0], panels):
        mine = [r for r in rows if (r["framework"], r["mode"]) == (fw, mode) and r["÷ built-in"] is not None]
        rules = list(dict.fromkeys(r["rule"] for r in mine))
        for i, rule in enumerate(rules):
            pts = sorted((r["n"], r["÷ built-in"]) for r in mine if r["rule"] == rule)
            xs = [n * 1.25 ** (i - len(rules) / 2) for n, _ in pts]  # side by side at each size
            ys = [e.value for _, e in pts]
            err = [[e.value - (e.lo if e.lo is not None else e.value) for _, e in pts],
                   [(e.hi if e.hi is not None else e.value) - e.value for _, e in pts]]
            ax.errorbar(xs, ys, yerr=err, marker="o", linestyle="none", capsize=3,
                        label=textwrap.shorten(rule, 32))
        ax.axhline(1, color="black", linewidth=0.8)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(ScalarFormatter())
        ax.yaxis.set_minor_formatter(ScalarFormatter())
        ax.set_title(f"{fw} {mode}", fontsize=10)
        ax.set_xlabel("elements")
        ax.legend(fontsize=7, frameon=False)
    axes[0][0].set_ylabel("time ÷ built-in's")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return _png(fig)
