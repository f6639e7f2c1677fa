"""Training in the report: the step where ReLU'(0) = 1 and = 0 first differ, per precision
(Q4)."""
from experiments.training.summary import Summary
from study.runs.experiment import Rendered
from study.report import Table, answer, macros, say, side_by_side

STEP = ("torch: c=1 leaves c=0 at step", "jax: c=1 leaves c=0 at step")


def _seed(s: Summary) -> dict:
    """Seed 001's net: each step where c = 1 leaves c = 0 (either framework, any run) with the
    dtypes where it does ({step: [dtypes]}; a dtype under two steps where runs differ), the
    runs, and the steps each run takes."""
    d = s.divergence
    rows = d[d["data"] == "seed"] if len(d) else d
    steps: dict = {}
    for _, r in rows.iterrows():
        for column in STEP:
            steps.setdefault(r[column], {})[r["dtype"]] = None
    runs = list(dict.fromkeys(rows["run"])) if len(rows) else []
    return {"steps": {k: list(v) for k, v in steps.items()}, "runs": runs,
            "dtypes": list(dict.fromkeys(rows["dtype"])) if len(rows) else [],
            "steps_taken": (s.settings.get("seed") or {}).get("steps")}


def _images(digits: list[dict], held_out) -> int | None:
    """The largest accuracy spread as held-out images (accuracy is images right ÷ held_out)."""
    spreads = [d["spread"] for d in digits if d["spread"] is not None]
    return round(max(spreads) * held_out) if spreads and held_out else None

def _trained(s: Summary) -> dict:
    """The conventions the runs trained under and whether the built-in trained too (the caption
    says what the accuracy columns range over)."""
    t = s.trainings
    cs = [c for c in t["c"] if c is not None and c == c] if len(t) and "c" in t.columns else []
    builtin = len(cs) < len(t) if len(t) else False
    return {"conventions": sorted(set(cs)), "builtin": builtin}


PROSE = macros("experiments/training/prose.j2")


def render(s: Summary) -> Rendered:
    divergence = Table("divergence", say(PROSE, "title_divergence"),
                       say(PROSE, "caption", settings=s.settings, withdrawn=s.withdrawn or {},
                           **_trained(s)),
                       side_by_side(s.divergence, s.runs), listing=s.divergence)
    runs = Table("runs", say(PROSE, "title_runs"), "", s.trainings)
    d = s.divergence
    main = d[(d["run"] == s.main) & (d["data"] == "digits")] if s.main else d
    digits = [{"dtype": r["dtype"], "step": r["torch: c=1 leaves c=0 at step"],
               "zeros": r["exact zeros hit (torch c=1)"], "spread": r["spread"]}
              for _, r in main.iterrows()]
    held_out = (s.settings.get("digits") or {}).get("held_out")
    answers = [answer(PROSE, "net", ("divergence",), digits=digits, seed=_seed(s), run=s.main,
                      releases=s.releases, older=s.older,
                      images=_images(digits, held_out), held_out=held_out)] if digits else []
    return Rendered([divergence, runs], answers=answers)
