"""Training in the report: the step where ReLU'(0) = 1 and = 0 first differ, per precision
(Q4)."""
from experiments.training.summary import Summary
from study.runs.experiment import Rendered
from study.report import Table, answer, macros, say, side_by_side

PROSE = macros("experiments/training/prose.j2")


def render(s: Summary) -> Rendered:
    divergence = Table("divergence", say(PROSE, "title_divergence"),
                       say(PROSE, "caption", settings=s.settings),
                       side_by_side(s.divergence, s.runs), listing=s.divergence)
    runs = Table("runs", say(PROSE, "title_runs"), "", s.trainings)
    d = s.divergence
    main = d[(d["run"] == s.main) & (d["data"] == "digits")] if s.main else d
    digits = [{"dtype": r["dtype"], "step": r["torch: c=1 leaves c=0 at step"],
               "zeros": r["exact zeros hit (torch c=1)"], "spread": r["spread"]}
              for _, r in main.iterrows()]
    answers = [answer(PROSE, "net", ("divergence",), digits=digits, run=s.main,
                      releases=s.releases, older=s.older)] if digits else []
    return Rendered([divergence, runs], answers=answers)
