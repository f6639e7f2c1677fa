"""APPENDIX.md's own sections: what each experiment asks, the table index, the methodology
notes, and the provenance of every result file with each run's settings."""
import re

from study.report.format import (PROSE_FIGURES, TABLE_FIGURES, anchor, experiment_words, heading,
                                 wrap)
from study.report.legend import by_label
from study.report.prose import macros, say
from study.report.runs import label_order, span
from study.report.table import Table, frame, markdown
from study.runs.results import Run

PROSE = macros("study/report/document.j2")


def questions(experiments) -> list[str]:
    return ([heading(2, "questions", "What each experiment asks"), ""]
            + [wrap(say(PROSE, "experiment_question", exp=e), "  ") for e in experiments] + [""])


def index(experiments, doc) -> list[str]:
    """The table index: every numbered table of `doc` (a study.report.document.Document), then
    the CSV listings."""
    lines = [heading(2, "tables", "Table index"), "", "| table | title | in | files |",
             "|---|---|---|---|"]
    for key, n in sorted(doc.numbers.items(), key=lambda kv: kv[1]):
        a, where = anchor(*key), doc.places[key]
        files = f"[md](tables/{a}.md) · [tex](tables/{a}.tex) · [csv](tables/{a}.csv)"
        link = f"#{a}" if where == "appendix" else f"REPORT.md#{a}"
        lines.append(f"| [{n}]({link}) | {doc.titles.get(key, 'no results yet')} | "
                     f"{'appendix' if where == 'appendix' else 'report'} | {files} |")
    lines += ["", say(PROSE, "listings"), ""]
    lines += [f"- [{anchor(*k)}.csv](tables/{anchor(*k)}.csv): {doc.titles[k]}"
              for k, where in doc.places.items() if where == "csv" and k in doc.titles]
    extra = ("failed-cases.csv", "cpu-vs-gpu-cells.csv", "reproduction-differences.csv")
    return lines + [f"- [{name}](tables/{name}): {say(PROSE, 'listed', file=name)}"
                    for name in extra if f"tables/{name}" in doc.files] + [""]


def methodology_notes(runs) -> list[str]:
    seeds = sorted({f"{experiment_words(r.experiment)} {r.provenance['seed']}" for r in runs
                    if r.provenance.get("seed") is not None})
    by_hand = sorted({experiment_words(r.experiment) for r in runs
                      if r.provenance.get("seed") is None})
    matmul = sorted({", ".join(say(PROSE, "matmul_setting", key=k, value=v)
                               for k, v in sorted(r.provenance.get("matmul", {}).items()))
                     for r in runs})
    dirty = span(sorted({r.tag for r in runs if r.provenance.get("git_dirty") and r.tag},
                        key=label_order))
    items = say(PROSE, "methodology", seeds=seeds, by_hand=by_hand, matmul=matmul,
                cap=TABLE_FIGURES, table=TABLE_FIGURES, prose=PROSE_FIGURES,
                dirty=dirty).split(" |")
    return ([heading(2, "methodology", "Methodology"), ""] + [wrap(i, "  ") for i in items]
            + [""])


def provenance(runs: list[Run], notes: list[str]) -> list[str]:
    rows = [{"result file": f"`{r.path}`", "run": r.tag, "device": r.provenance["device"],
             "torch": r.provenance["torch"], "jax": r.provenance["jax"], "scope": r.scope,
             "wall s": r.provenance.get("wall_s"), "UTC": str(r.provenance.get("utc"))[:16],
             "ran beside": _beside(r.provenance),
             "commit": str(r.provenance.get("git_commit") or "—")[:7]
             + (" (dirty)" if r.provenance.get("git_dirty") else "")}
            for r in sorted(runs, key=lambda r: (r.experiment, label_order(r.tag), r.path))]
    lines = [heading(2, "provenance", "Provenance"), "",
             markdown(Table("", "", "", frame(rows))), ""]
    alike: dict[str, list[str]] = {}  # runs whose machine and settings read alike: one item
    for label, group in by_label(runs).items():
        alike.setdefault(_settings(group[0].provenance), []).append(label)
    lines += [wrap(f"- **{span(labels)}**: {text}", "  ") for text, labels in alike.items()]
    absent: dict[str, set] = {}
    for r in runs:  # the reason's releases are each run's own, in the table above: said once
        if r.provenance.get("cuda_absent"):
            reason = re.sub(r"\b(torch|jax) \d[\w.+]*", r"\1", r.provenance["cuda_absent"])
            absent.setdefault(reason, set()).add(r.tag)
    lines += [wrap(say(PROSE, "no_gpu", runs=span(tags), reason=reason), "  ")
              for reason, tags in sorted(absent.items(), key=lambda kv: label_order(min(
                  kv[1], key=label_order)))]
    return lines + [wrap(f"- Duplicate resolved: {note}.", "  ") for note in notes] + [""]


def _beside(p: dict) -> str | None:
    """What shared the machine with the run (`study run --jobs`): its wall-clock times
    include it."""
    shared = p.get("side_by_side")
    return (f"{shared['jobs']} at a time, with "
            f"{', '.join(map(experiment_words, shared['with']))}" if shared else None)


def _settings(p: dict) -> str:
    gpu = p.get("gpu")
    gpu_text = (f"GPU {gpu.get('name')} (CUDA {gpu.get('torch_cuda_runtime')}, driver "
                f"{gpu.get('driver')}, cuDNN {_cudnn(gpu.get('cudnn'))})"
                if isinstance(gpu, dict) else "no GPU")
    threads = p.get("threads", {})
    jaxlib = p.get("jaxlib", "—")
    jaxlib = "at jax's version" if jaxlib == p.get("jax") else jaxlib
    flags = threads.get("XLA_FLAGS")
    return (f"{p['host']}, {p.get('cpu', '—')} ({p.get('cpu_count', '—')} cores, "
            f"{p.get('torch_cpu_capability') or 'kernels not recorded'}), {gpu_text}; "
            f"{p.get('os', '—')}; Python {p.get('python', '—')}, numpy {p.get('numpy', '—')}, "
            f"jaxlib {jaxlib}, {_jax_backend(p)}; "
            f"torch threads {threads.get('torch_intra_op', '—')} within an op and "
            f"{threads.get('torch_inter_op', '—')} across ops, "
            + (f"XLA_FLAGS `{flags}`." if flags else "no XLA_FLAGS set."))


def _cudnn(version) -> str:
    """cuDNN's version as its releases are named: 91900 -> 9.19.0 (from 9 on major × 10000 +
    minor × 100 + patch; before, major × 1000 + minor × 100 + patch: 8907 -> 8.9.7)."""
    if not isinstance(version, int):
        return str(version or "—")
    major, rest = divmod(version, 10000 if version >= 90000 else 1000)
    return f"{major}.{rest // 100}.{rest % 100}"


def _jax_backend(p: dict) -> str:
    """The run's JAX backend, and the host's default where that differs. Provenance written
    before it recorded both (no jax_default_backend) recorded the host's default alone."""
    return say(PROSE, "jax_backend", recorded=p.get("jax_backend", "—"),
               default=p.get("jax_default_backend"), device=p["device"])
