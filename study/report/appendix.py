"""APPENDIX.md's own sections: what each experiment asks, the table index, the methodology
notes, and the provenance of every result file with each run's settings."""
from study.report.format import anchor, heading, wrap
from study.report.legend import by_label
from study.report.prose import macros, say
from study.report.runs import span
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
    seeds = sorted({f"{r.experiment} {r.provenance['seed']}" for r in runs
                    if r.provenance.get("seed") is not None})
    by_hand = sorted({r.experiment for r in runs if r.provenance.get("seed") is None})
    matmul = sorted({", ".join(f"`{k}={v}`" for k, v in sorted(r.provenance.get("matmul",
                                                                             {}).items()))
                     for r in runs})
    items = say(PROSE, "methodology", seeds=seeds, by_hand=by_hand, matmul=matmul).split(" |")
    return ([heading(2, "methodology", "Methodology"), ""] + [wrap(i, "  ") for i in items]
            + [""])


def provenance(runs: list[Run], notes: list[str]) -> list[str]:
    rows = [{"result file": f"`{r.path}`", "run": r.tag, "device": r.provenance["device"],
             "torch": r.provenance["torch"], "jax": r.provenance["jax"], "scope": r.scope,
             "wall s": r.provenance.get("wall_s"), "UTC": str(r.provenance.get("utc"))[:16],
             "ran beside": _beside(r.provenance),
             "commit": str(r.provenance.get("git_commit") or "—")[:10]} for r in runs]
    lines = [heading(2, "provenance", "Provenance"), "",
             markdown(Table("", "", "", frame(rows))), ""]
    lines += [wrap(f"- **{label}**: {_settings(group[0].provenance)}", "  ")
              for label, group in by_label(runs).items()]
    absent: dict[str, set] = {}
    for r in runs:
        if r.provenance.get("cuda_absent"):
            absent.setdefault(r.provenance["cuda_absent"], set()).add(r.tag)
    lines += [wrap(say(PROSE, "no_gpu", runs=span(tags), reason=reason), "  ")
              for reason, tags in sorted(absent.items())]
    return lines + [wrap(f"- Duplicate resolved: {note}.", "  ") for note in notes] + [""]


def _beside(p: dict) -> str | None:
    """What shared the machine with the run (`study run --jobs`): its wall-clock times
    include it."""
    shared = p.get("side_by_side")
    return f"{shared['jobs']} at a time, with {', '.join(shared['with'])}" if shared else None


def _settings(p: dict) -> str:
    gpu = p.get("gpu")
    gpu_text = (f"GPU {gpu.get('name')} (CUDA {gpu.get('torch_cuda_runtime')}, driver "
                f"{gpu.get('driver')}, cuDNN {gpu.get('cudnn')})" if isinstance(gpu, dict)
                else "no GPU")
    threads = p.get("threads", {})
    return (f"{p['host']}, {p.get('cpu', '—')} ({p.get('cpu_count', '—')} cores, "
            f"{p.get('torch_cpu_capability') or 'kernels not recorded'}), {gpu_text}; "
            f"{p.get('os', '—')}; Python {p.get('python', '—')}, numpy {p.get('numpy', '—')}, "
            f"jaxlib {p.get('jaxlib', '—')}, {_jax_backend(p)}; torch threads "
            f"{threads.get('torch_intra_op', '—')}/{threads.get('torch_inter_op', '—')}, "
            f"XLA_FLAGS '{threads.get('XLA_FLAGS', '')}'.")


def _jax_backend(p: dict) -> str:
    """The run's JAX backend, and the host's default where that differs. Provenance written
    before it recorded both (no jax_default_backend) recorded the host's default alone."""
    return say(PROSE, "jax_backend", recorded=p.get("jax_backend", "—"),
               default=p.get("jax_default_backend"), device=p["device"])
