"""A check's result: the measurements, the findings, and their markdown and JSON views."""
import math
from dataclasses import dataclass, field

import numpy as np

from study.cells import as_cell
from study.check._findings import FAILING, Finding, exit_code
from study.conventions import MODES
from study.report.format import shorten, text
from study.stats import Estimate

ERROR_WIDTH = 60  # an error line in a table; the JSON keeps it whole

SCHEMA_VERSION = 1


@dataclass
class CheckResult:
    """What `study.check` measured. `ok` is true when no finding says a result is silently
    wrong (or, with fail_on, when none of those kinds was found); `to_markdown()` is the report
    `python -m study check` prints, `to_json()` the same content as data."""
    target: str
    framework: str
    style: str
    device: str
    scope: dict
    environment: dict
    kinks: dict
    conventions: list = field(default_factory=list)
    vjp: list = field(default_factory=list)
    determinism: list = field(default_factory=list)
    gradcheck: list = field(default_factory=list)
    matches: dict | None = None
    transforms: dict | None = None
    clone_hazard: list | None = None
    twin: dict | None = None
    cost: dict | None = None
    findings: list[Finding] = field(default_factory=list)
    fail_on: tuple = FAILING

    @property
    def exit_code(self) -> int:
        return exit_code(self.findings, self.fail_on)

    @property
    def ok(self) -> bool:
        return self.exit_code == 0

    def to_json(self) -> dict:
        return as_json({
            "schema_version": SCHEMA_VERSION, "target": self.target,
            "framework": self.framework, "style": self.style, "device": self.device,
            "scope": self.scope, "environment": self.environment, "kinks": self.kinks,
            "conventions": self.conventions, "vjp": self.vjp, "determinism": self.determinism,
            "gradcheck": self.gradcheck, "matches": self.matches, "transforms": self.transforms,
            "clone_hazard": self.clone_hazard, "twin": self.twin, "cost": self.cost,
            "findings": [f.as_json() for f in self.findings], "exit_code": self.exit_code})

    def to_markdown(self) -> str:
        return render_markdown(self)


def float_text(value: float) -> str:
    """A float as JSON text that keeps everything: '-0.0', 'nan', 'inf', '1.401298464324817e-45'."""
    value = float(value)
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return repr(value)


def as_json(value):
    """Floats as strings (JSON has no NaN, and many readers lose -0.0); arrays as lists."""
    if isinstance(value, Estimate):
        return {"value": float_text(value.value), "lo": as_json(value.lo),
                "hi": as_json(value.hi), "n": value.n}
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (float, np.floating)):
        return float_text(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, np.ndarray):
        return as_json(value.tolist())
    if isinstance(value, dict):
        return {str(k): as_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [as_json(v) for v in value]
    return value


# --- markdown -------------------------------------------------------------------------------

def _cell(value) -> str:
    """A measured cell in full precision: a number, an error line, or values by placement."""
    if isinstance(value, dict):
        return shorten(as_cell(value).where, ERROR_WIDTH)
    if isinstance(value, str):
        return shorten(value, ERROR_WIDTH)  # the full line is in the JSON
    return text(value, None) if value is not None else "—"


def _table(header: list[str], rows: list[list]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return out + ["| " + " | ".join(str(c).replace("|", "\\|").replace("\n", " ")
                                    for c in row) + " |" for row in rows]


def _findings(r: CheckResult) -> list[str]:
    verdict = {0: "**ok**: no finding says a result is silently wrong",
               1: "**fails**: a finding says a result is silently wrong",
               2: "**cannot be checked**: the rule is not elementwise"}[r.exit_code]
    out = ["## Findings", "", f"{verdict} (exit {r.exit_code}).", ""]
    if not r.findings:
        return out + ["None.", ""]
    order = {"usage": 0, "wrong": 1, "warning": 2, "info": 3}
    rows = [[f.severity, f"`{f.kind}`", f.where.text(), shorten(f.detail, 2 * ERROR_WIDTH), f.id]
            for f in sorted(r.findings, key=lambda f: order[f.severity])]
    return out + _table(["severity", "kind", "where", "what was seen", "id"], rows) + [""]


def _conventions(r: CheckResult) -> list[str]:
    out = ["## Conventions", "",
           f"Value, reverse derivative (cotangent 1), forward-mode derivative (tangent 1) and "
           f"second derivative at the probe inputs; kinks probed: "
           f"{text(r.kinks['probed'], None)} (scan found {_scan(r.kinks['scanned'])}, "
           f"given {text(r.kinks['given'], None)}). Eagerly, all inputs in one tensor:", ""]
    for dtype in r.scope["dtypes"]:
        rows = [row for row in r.conventions if row["dtype"] == dtype
                and row["execution"] == "eager" and row["placement"] == "packed"]
        raising = {m: rows[0][m] for m in MODES if rows and isinstance(rows[0].get(m), str)
                   and all(row.get(m) == rows[0][m] for row in rows)}
        shown = [m for m in MODES if m not in raising]
        out += [f"**{dtype}**", ""]
        out += _table(["input", "bits", *shown],
                      [[row["input"], row["bits"], *(_cell(row.get(m)) for m in shown)]
                       for row in rows]) + [""]
        out += [f"{mode} raises at every input: {line}" for mode, line in raising.items()]
        out += [""] if raising else []
    packed = {(row["dtype"], row["input"]): row for row in r.conventions
              if row["execution"] == "eager" and row["placement"] == "packed"}
    changed: dict = {}  # one row for the dtypes where a cell differs alike
    for row in r.conventions:
        base = packed.get((row["dtype"], row["input"]))
        if base is None or row is base:
            continue
        for mode in ("value", "reverse", "forward"):
            if mode in row and _cell(row[mode]) != _cell(base.get(mode)):
                key = (row["execution"], row["placement"], row["input"], mode,
                       _cell(row[mode]), _cell(base.get(mode)))
                changed.setdefault(key, []).append(row["dtype"])
    changed = [[", ".join(dtypes), *key] for key, dtypes in changed.items()]
    out += [f"Other placements and compiled code ({r.scope['compiled']}): "
            + ("every cell as above." if not changed else "the cells that differ from above:"),
            ""]
    if changed:
        out += _table(["dtype", "execution", "placement", "input", "mode", "here", "above"],
                      changed) + [""]
    return out


def _scan(scanned) -> str:
    return f"none: it raises ({scanned})" if isinstance(scanned, str) else text(scanned, None)


def _vjp(r: CheckResult) -> list[str]:
    rows = [[v["dtype"], v["cotangent"], v.get("judged", "—"), v.get("unjudged", "—"),
             v.get("differ", v.get("error", "—"))] for v in r.vjp]
    return (["## Linearity in the cotangent", "",
             "Reverse derivative with a uniform cotangent u against u × its value at u = 1, "
             "exactly, at each probe input; \"mixed\": one call with u = 1, 2, −1, 0.5 across "
             "copies of the inputs. Unjudged: u × g leaves the dtype's normal range.", ""]
            + _table(["dtype", "cotangent", "judged", "unjudged", "differing"], rows) + [""])


def _determinism_and_gradcheck(r: CheckResult) -> list[str]:
    out = ["## Determinism and gradcheck", ""]
    for d in r.determinism:
        out.append(f"- {d['dtype']}: " + (d["error"] if "error" in d else
                   f"3 calls, {d['inputs_differing']} inputs differing bit for bit; "
                   f"RNG consumed: {text(d['consumes_rng'])}"))
    checker = ("torch.autograd.gradcheck" if r.framework == "torch"
               else "jax.test_util.check_grads")
    smooth = [g for g in r.gradcheck if not g["at_kink"]]
    kinks = [g for g in r.gradcheck if g["at_kink"]]
    out.append(f"- {checker}, float64: at smooth points "
               + ", ".join(f"{text(g['x'], None)} {g['outcome']}" for g in smooth)
               + ("; at kinks (not a finding) "
                  + ", ".join(f"{text(g['x'], None)} {g['outcome']}" for g in kinks)
                  if kinks else ""))
    return out + [""]


def _matches(r: CheckResult) -> list[str]:
    out = ["## Built-ins it matches", ""]
    m = r.matches
    if m is None:
        return out + ["Not compared (see Scope).", ""]
    if m["run"] is None:
        return out + ["No committed atlas (reports/results/zero_point) to compare with.", ""]
    run = m["run"]
    out += [f"Value and reverse derivative, eagerly, at every input both probe (the rule's "
            f"kinks among them), against the committed atlas of run {run['label']} "
            f"(torch {run['torch']}, jax {run['jax']}; `{run['file']}`):", ""]
    if m["matches"]:
        out += [", ".join(f"`{o['name']}` ({o['framework']}; {', '.join(o['dtypes'])})"
                          for o in m["matches"]), ""]
        return out
    near = m["nearest"]
    if near is None:
        return out + ["No built-in was probed at this rule's kinks.", ""]
    out += [f"None matches. Nearest: `{near['name']}` ({near['framework']}), where "
            f"{len(near['differing'])} cells differ:", ""]
    rows = [[d["dtype"], d["input"], d["mode"], _cell(d["rule"]), _cell(d["builtin"])]
            for d in near["differing"]]
    return out + _table(["dtype", "input", "mode", "this rule", near["name"]], rows) + [""]


def _transforms(r: CheckResult) -> list[str]:
    if r.transforms is None:
        return []
    if "error" in r.transforms:
        return ["## Transformations", "", "Not judged: the rule's own eager value or reverse "
                f"derivative, the reference, raises at x = [-1.5, 0, 0.7, 2]: "
                f"{r.transforms['error']}", ""]
    rows = [[col, {"ok": "✓", "wrong": "wrong (silently)"}.get(c["status"], c["status"]),
             _cell(c["detail"]) if c["status"] in ("error", "n/a") else
             "" if c["status"] == "ok" else text(c["detail"], None)]
            for col, c in r.transforms.items()]
    return (["## Transformations", "",
             "Its row of the transforms matrix (float64, x = [-1.5, 0, 0.7, 2]); the reference "
             "is the rule's own eager value and reverse derivative, and for second order a "
             "central difference of that derivative at smooth points.", ""]
            + _table(["transformation", "result", "detail"], rows) + [""])


def _clone_hazard(r: CheckResult) -> list[str]:
    if r.clone_hazard is None:
        return []
    rows = [[c["graph"], text(c["changed"]), c["error"] or c["warning"] or ""]
            for c in r.clone_hazard]
    return (["## Clone hazard", "",
             "The clone_hazard graphs run with the rule, and again with its incoming gradient "
             "cloned first: a gradient that changes means the backward writes into "
             "grad_output.", ""]
            + _table(["graph", "gradient changes", "error or warning"], rows) + [""])


def _twin(r: CheckResult) -> list[str]:
    if r.twin is None:
        return []
    rows = [[n["dataset"], "—", n["error"], "no"] if "error" in n else
            [n["dataset"], n["preactivation_zeros"], ", ".join(n["differ"]) or "none",
             text(n["judged"])] for n in r.twin["nets"]]
    return ([f"## Twin: {r.twin['target']}", "",
             "Seed 001's net and the random nets (loss, dL/dw1, dL/dw2), bit for bit. A net "
             "is judged where the identity activation gives the same bits in both frameworks; "
             "the probe cells are compared in Findings.", ""]
            + _table(["net", "exact zeros in x @ w1", "differing", "judged"], rows) + [""])


def _cost(r: CheckResult) -> list[str]:
    if r.cost is None:
        return []
    c = r.cost
    rows = [[execution, _cell(ratio) if isinstance(ratio, str) else text(ratio)]
            for execution, ratio in c["ratios"].items()]
    kept = c["bytes_per_element"]
    return (["## Cost", "",
             f"Forward and backward on {text(c['elements'])} float32 elements, ÷ "
             f"{c['builtin']} timed in the same rounds (median ratio and its 95% interval):",
             ""] + _table(["execution", "time ÷ built-in"], rows)
            + ["", f"Bytes kept for backward per element: {text(kept['rule'])} "
                   f"(built-in: {text(kept['builtin'])}).", ""])


def _scope(r: CheckResult) -> list[str]:
    s = r.scope
    skipped = "; ".join(s["skipped"]) if s["skipped"] else "nothing"
    env = r.environment
    return ["## Scope", "",
            f"{'--quick' if s['quick'] else 'Full check'}: dtypes {', '.join(s['dtypes'])}; "
            f"placements {', '.join(s['placements'])}; compiled: {s['compiled']}. Skipped: "
            f"{skipped}. torch {env['torch']}, jax {env['jax']}, {env['cpu']} "
            f"({env['cpu_capability']}), {r.device}.", ""]


def render_markdown(r: CheckResult) -> str:
    head = [f"# study check: `{r.target}`", "",
            f"A {r.framework} rule ({r.style}).", ""]
    sections = (_findings(r) + _conventions(r) + _vjp(r) + _determinism_and_gradcheck(r)
                + _matches(r) + _transforms(r) + _clone_hazard(r) + _twin(r) + _cost(r)
                + _scope(r))
    return "\n".join(head + sections).rstrip() + "\n"

