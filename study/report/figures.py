"""Figures as PNG bytes (matplotlib, Agg, no timestamps): pure functions of the data given."""
import io
import math

import numpy as np

from study.compare.cells import Placed
from study.report.format import shorten


def _pyplot():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


# Every title at its axes' top: no axes here has ticks or labels above it, and a title left to
# place itself measures its axes' whole y axis each time the layout asks, dozens of times.
TITLE_Y = 1


def _png(fig) -> bytes:
    """What savefig writes, drawn once: savefig first draws without rendering to lay the
    figure out, then draws again to render; a canvas draw lays out and renders in one pass."""
    from matplotlib.image import imsave
    fig.canvas.draw()
    buf = io.BytesIO()
    imsave(buf, fig.canvas.buffer_rgba(), format="png", origin="upper", dpi=fig.dpi,
           metadata={"Software": None})
    _pyplot().close(fig)
    return buf.getvalue()


# --- the atlas: categories, not a colour scale ---------------------------------------------

# What a reader must tell apart at a glance; any other finite value is "other" and written in.
CATEGORIES = (("0", "#d9e6f2"), ("0.5", "#7fb2d9"), ("1", "#1f5f99"), ("other", "#f2c14e"),
              ("NaN", "#c9409c"), ("±inf", "#e8742c"), ("error", "#222222"))


def _add_cells(ax, cells: list) -> None:
    """The patches drawn as one collection, as each would draw itself (miter joins, in order),
    in far less time; left out of the layout, as they lie inside the axes, whose limits are set
    (so no data limits either)."""
    from matplotlib.collections import PatchCollection
    ax.add_collection(PatchCollection(cells, match_original=True, joinstyle="miter",
                                      in_layout=False), autolim=False)


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
    cells = []
    for i, r in enumerate(rows):
        for j, side in enumerate(("torch d/dx", "JAX d/dx")):
            v = r[side]
            error = isinstance(v, str)
            number = v if isinstance(v, float) else float("nan") if not error else 0.0
            cat = category(number, error) if not isinstance(v, Placed) else 3
            cells.append(Rectangle((j, n - 1 - i), 1, 1, color=colours[cat]))
            placed = cat == 3 and isinstance(v, Placed)
            label = "error" if error else "placement" if placed else f"{number:.4g}"
            ax.text(j + 0.5, n - 0.5 - i, label, ha="center", va="center", fontsize=9,
                    color="white" if cat in (2, 4, 6) else "black", in_layout=False)
        if r["same d/dx"] is False:
            cells.append(Rectangle((0, n - 1 - i), 2, 1, fill=False, edgecolor="red",
                                   linewidth=2))
    _add_cells(ax, cells)
    ax.set_xlim(0, 2)
    ax.set_ylim(0, n)
    ax.set_xticks([0.5, 1.5], ["torch", "JAX"])
    ax.set_yticks([n - 0.5 - i for i in range(n)],
                  [f"{r['torch op']} / {r['JAX op']} at {r['kink']:g}" for r in rows], fontsize=8)
    ax.tick_params(length=0)
    ax.set_title(title, fontsize=10, y=TITLE_Y)
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
                    yerr=[[est[i].value - est[i].lo for i in ok],
                          [est[i].hi - est[i].value for i in ok]],
                    fmt="o", color=colour, capsize=3, label=f"{fw}: predicted (constant rate)")
    for i, r in enumerate(rows):
        for j, count in enumerate(r.get("theirs") or []):
            ax.plot(i, count, "D", color="black", label="Bertoin et al." if i == j == 0 else None)
    ax.set_xticks(xs, [f"{r['sweep']}: {r['setting']}" for r in rows], rotation=30, ha="right",
                  fontsize=8)
    ax.set_ylabel("initialisations of 1000 whose dW1 depends on ReLU'(0)")
    ax.set_ylim(0, 1000)
    ax.set_title(title, fontsize=10, y=TITLE_Y)
    ax.legend(fontsize=8, frameon=False)
    fig.tight_layout()
    return _png(fig)


COLUMN_INCHES = 3.5  # one panel per column of a two-column page
SMALLEST_POINTS = 8  # no text smaller than this at COLUMN_INCHES a panel


def _size_text(n: int) -> str:
    exponent = round(math.log10(n)) if n > 0 else 0
    return f"$10^{{{exponent}}}$" if n >= 10 and 10 ** exponent == n else str(n)


def _log_locator(subs):
    """matplotlib's LogLocator(subs=subs) for a panel's y axis, as drawn, in less time. The
    layout asks each panel for its ticks dozens of times; each time LogLocator measures the
    panel's size (its tick space), which can change the ticks only where more decades are in
    view than that size allows ticks, never fewer than two: up to two decades the ticks of a
    view interval are kept. And matplotlib makes a Tick (five artists), and moves it at every
    ask, for each location given, though it draws only those in view: LogLocator gives a
    decade either side, so those beyond 1% of the view are left out."""
    from matplotlib.ticker import LogLocator

    class InViewLogLocator(LogLocator):
        def __call__(self):
            low, high = sorted(self.axis.get_view_interval())
            if (low, high) in self.kept:
                return self.kept[low, high].copy()
            ticks = super().__call__()
            if low <= 0:
                return ticks
            ticks = ticks[(low / 1.01 <= ticks) & (ticks <= high * 1.01)]
            first, last = self._log_b([low, high])
            if math.floor(last) - math.ceil(first) + 1 <= 2:
                self.kept[low, high] = ticks
            return ticks.copy()

    locator = InViewLogLocator(subs=subs)
    locator.kept = {}
    return locator


def _ratio_panel(ax, mine: list[dict], rules: list[str], colours) -> None:
    from matplotlib.ticker import FormatStrFormatter, NullFormatter
    sizes = sorted({r["size"] for r in mine})  # the sizes measured, evenly spaced
    for i, rule in enumerate(rules):
        pts = sorted((r["size"], r["÷ built-in"]) for r in mine if r["rule"] == rule)
        xs = [sizes.index(n) + 0.12 * (i - (len(rules) - 1) / 2) for n, _ in pts]
        ys = [e.value for _, e in pts]
        err = [[e.value - (e.lo if e.lo is not None else e.value) for _, e in pts],
               [(e.hi if e.hi is not None else e.value) - e.value for _, e in pts]]
        ax.errorbar(xs, ys, yerr=err, marker="o", markersize=4, linestyle="none",
                    capsize=2, color=colours[i % len(colours)])
    ax.axhline(1, color="black", linewidth=0.8)
    ax.set_xticks(range(len(sizes)), [_size_text(n) for n in sizes])
    ax.set_xlim(-0.5, len(sizes) - 0.5)
    ax.set_yscale("log")
    ax.yaxis.set_major_locator(_log_locator((1, 1.5, 2, 3, 5, 7)))
    ax.yaxis.set_minor_locator(_log_locator(None))  # as set_yscale("log") set it
    ax.yaxis.set_major_formatter(FormatStrFormatter("%g"))
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.tick_params(which="both", labelsize=SMALLEST_POINTS)
    ax.set_xlabel("elements", fontsize=SMALLEST_POINTS)


def ratio_figure(rows: list[dict], runs: list[str], title: str):
    """The figure behind `ratio_panels`, unsaved, so that its text can be measured."""
    plt = _pyplot()
    from matplotlib.lines import Line2D
    runs = runs[:2]  # at most two panels a row: one run a column
    frameworks = list(dict.fromkeys(r["framework"] for r in rows))
    modes = {fw: list(dict.fromkeys(r["mode"] for r in rows if r["framework"] == fw))
             for fw in frameworks}
    rules = {fw: list(dict.fromkeys(r["rule"] for r in rows if r["framework"] == fw
                                    and r["÷ built-in"] is not None)) for fw in frameworks}
    legend_inches = {fw: 0.25 + 0.17 * math.ceil(len(rules[fw]) / 2) for fw in frameworks}
    heights = [h for fw in frameworks for h in [2.2] * len(modes[fw]) + [legend_inches[fw]]]
    fig = plt.figure(figsize=(COLUMN_INCHES * len(runs), sum(heights) + 0.4), dpi=150,
                     layout="constrained")
    grid = fig.add_gridspec(len(heights), len(runs), height_ratios=heights)
    colours = plt.get_cmap("tab10").colors
    row = 0
    for fw in frameworks:
        for mode in modes[fw]:
            for col, run in enumerate(runs):
                ax = fig.add_subplot(grid[row, col])
                mine = [r for r in rows if (r["run"], r["framework"], r["mode"]) == (run, fw, mode)
                        and r["÷ built-in"] is not None]
                ax.set_title(f"{run}: {fw} {mode}", fontsize=SMALLEST_POINTS + 1, y=TITLE_Y)
                if not mine:
                    ax.text(0.5, 0.5, f"no ratio in run {run}\n(failed-cases.csv says why)",
                            ha="center", va="center", fontsize=SMALLEST_POINTS,
                            transform=ax.transAxes)
                    ax.set_xticks([])
                    ax.set_yticks([])
                    continue
                _ratio_panel(ax, mine, rules[fw], colours)
                if col == 0:
                    ax.set_ylabel("time ÷ built-in's", fontsize=SMALLEST_POINTS)
            row += 1
        legend = fig.add_subplot(grid[row, :])
        legend.axis("off")
        legend.legend([Line2D([], [], marker="o", linestyle="none", color=colours[i % len(colours)])
                       for i in range(len(rules[fw]))], rules[fw], ncol=2, loc="center",
                      fontsize=SMALLEST_POINTS, frameon=False, title=f"{fw} rules",
                      title_fontsize=SMALLEST_POINTS)
        row += 1
    fig.suptitle(title, fontsize=SMALLEST_POINTS + 1)
    return fig


def ratio_panels(rows: list[dict], runs: list[str], title: str) -> bytes:
    """Per framework and mode a row of panels, one per run (at most two runs, side by side):
    each custom rule's time ÷ the built-in's at each size the run measured (evenly spaced, so
    no decade stands empty), with its 95% interval, and a line at 1; the rules' full names in a
    legend under each framework's rows. Sized for print: COLUMN_INCHES a panel, no text under
    SMALLEST_POINTS."""
    return _png(ratio_figure(rows, runs, title))


HISTORY_COLOURS = {"changed (cells)": "#1f5f99", "same": "#d9e6f2", "not measured": "#ffffff"}


def history_map(rows: list[dict], title: str) -> bytes:
    """Releases (columns, in the order given) × ops (rows), one panel per framework: a release
    where some cell of the op changed from the release before is dark, with the count of cells
    written in; measured and unchanged is pale; not measured (the op absent, or the release
    not run) is blank. `rows`: framework, op, release, changed (cells), measured (bool)."""
    plt = _pyplot()
    from matplotlib.patches import Patch, Rectangle
    frameworks = list(dict.fromkeys(r["framework"] for r in rows))
    panels = {fw: ([r for r in rows if r["framework"] == fw]) for fw in frameworks}
    ops = {fw: list(dict.fromkeys(r["op"] for r in mine)) for fw, mine in panels.items()}
    releases = {fw: list(dict.fromkeys(r["release"] for r in mine)) for fw, mine in panels.items()}
    widest = max((len(r) for r in releases.values()), default=1)
    labels = {fw: [shorten(op, 60) for op in names] for fw, names in ops.items()}
    label_inches = 0.065 * max(len(x) for names in labels.values() for x in names)
    heights = [0.7 + 0.22 * len(ops[fw]) for fw in frameworks]
    fig, axes = plt.subplots(len(frameworks), 1, squeeze=False, dpi=150, layout="constrained",
                             figsize=(0.8 + label_inches + 0.55 * widest, 0.6 + sum(heights)),
                             gridspec_kw={"height_ratios": heights})
    for ax, fw in zip(axes[:, 0], frameworks):
        n = len(ops[fw])
        cells = []
        for r in panels[fw]:
            x, y = releases[fw].index(r["release"]), n - 1 - ops[fw].index(r["op"])
            state = ("changed (cells)" if r["changed"] else "same" if r["measured"]
                     else "not measured")
            cells.append(Rectangle((x, y), 1, 1, facecolor=HISTORY_COLOURS[state],
                                   edgecolor="#999999", linewidth=0.5))
            if r["changed"]:
                ax.text(x + 0.5, y + 0.5, str(r["changed"]), ha="center", va="center",
                        fontsize=SMALLEST_POINTS, color="white", in_layout=False)
        _add_cells(ax, cells)
        ax.set_xlim(0, len(releases[fw]))
        ax.set_ylim(0, n)
        ax.set_xticks([i + 0.5 for i in range(len(releases[fw]))], releases[fw],
                      fontsize=SMALLEST_POINTS)
        ax.set_yticks([n - 0.5 - i for i in range(n)], labels[fw], fontsize=SMALLEST_POINTS)
        ax.tick_params(length=0)
        ax.set_title(f"{fw} releases", fontsize=SMALLEST_POINTS + 1, y=TITLE_Y)
    fig.legend(handles=[Patch(facecolor=c, edgecolor="#999999", label=k)
                        for k, c in HISTORY_COLOURS.items()], loc="outside lower center",
               ncol=3, fontsize=SMALLEST_POINTS, frameon=False)
    fig.suptitle(title, fontsize=SMALLEST_POINTS + 1)
    return _png(fig)
