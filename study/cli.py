"""Command line: `study list | run NAME... | report | compare DIR | reference | history |
check MODULE_OR_FILE:ATTR | conformance` (`python -m study` runs the same).

The experiments (and with them both frameworks) are imported by the commands that run or render
them; `check` imports only the framework of the rule it checks, and `conformance` only the
framework it judges."""
import argparse
import json
import os
import sys

from study.errors import IncompleteReport, StudyError, first_error_line
from study.measure.devices import DEVICE_CHOICES, resolve_devices
from study.runs import atomic, provenance, results
from study.runs.provenance import REPO_ROOT

REPORTS_DIR = os.path.join(REPO_ROOT, "reports")


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, not argparse's usage block
        raise StudyError(message)


class _Experiments:
    """The experiment registry, imported on first use: the study's commands need it, `check`
    does not. Reading it imports no framework: running an experiment does (study.runs.runner)."""

    def __getattr__(self, name):
        import experiments
        return getattr(experiments, name)


experiments = _Experiments()


def _experiments_named(names: list[str]) -> list:
    if names == ["all"]:
        return experiments.all_experiments()
    unknown = [n for n in names if n not in experiments.NAMES]
    if unknown:
        raise StudyError(f"unknown experiment {unknown[0]!r}; known: "
                         f"{', '.join(experiments.NAMES)} (or 'all')")
    return [experiments.load(n) for n in names]


def cmd_list(args) -> None:
    if args.cases:
        from study.runs import runner
        exp, = _experiments_named([args.cases])
        print(len(runner.cases_of(exp, args.scope)))
        return
    for exp in experiments.all_experiments():
        print(f"{exp.name:<20} {exp.description}")


def cmd_history(args) -> None:
    from study.runs import history
    code = history.main(args.rest, [(e.name, e.history_scope)
                                    for e in experiments.all_experiments() if e.history_scope])
    if code:
        raise IncompleteReport("the release history has failed shards (listed above)")


def cmd_run(args) -> None:
    from study.runs import runner
    chosen = _experiments_named(args.names)
    if args.quick and args.full:
        raise StudyError("--quick and --full exclude each other")
    scope = "quick" if args.quick else "full" if args.full else "standard"
    if args.full:
        lacking = [e.name for e in chosen if "full" not in e.scopes]
        if lacking and args.names != ["all"]:
            offered = [e.name for e in experiments.all_experiments() if "full" in e.scopes]
            raise StudyError(f"--full applies only to: {', '.join(offered)} (not {lacking[0]})")
        chosen = [e for e in chosen if "full" in e.scopes]
    if args.inits is not None:
        if args.inits < 1:
            raise StudyError("--inits must be a positive number of initialisations")
        lacking = [e.name for e in chosen if not e.counts_inits]
        if lacking:
            offered = [e.name for e in experiments.all_experiments() if e.counts_inits]
            raise StudyError(f"--inits applies only to: {', '.join(offered)} (not {lacking[0]})")
    if args.jobs < 1:
        raise StudyError("--jobs must be a positive number of processes")
    chunk = runner.case_slice(args.cases) if args.cases else None
    if chunk and args.jobs > 1:
        raise StudyError("--cases excludes --jobs")
    _check_engine_flags(args)
    devices = resolve_devices(args.device)
    for exp in chosen:
        results.ensure_writable(os.path.join(args.results_dir, exp.name))
    progress = runner.Progress(quiet=args.quiet)
    if args.engine:
        _run_on_engine(chosen, scope, chunk, args, progress)
        chosen = []
    untimed = [e for e in chosen if not e.timed]
    if args.jobs > 1 and len(untimed) > 1:
        _run_side_by_side(untimed, args)
        chosen = [e for e in chosen if e.timed]
    for exp in chosen:
        paths = runner.run_experiment(exp, devices, scope, progress, root=args.results_dir,
                                      inits=args.inits, chunk=chunk)
        if chunk and not os.environ.get(provenance.ENGINE_ENV):  # a shard leaves it to the engine
            _merge_finished_chunks(paths, progress)
    if args.report:  # in this process: torch and JAX are loaded already
        cmd_report(argparse.Namespace(results=[args.results_dir], errata=results.ERRATA_FILE,
                                      reference=results.REFERENCE_DIR, out=REPORTS_DIR))


def _run_side_by_side(chosen: list, args) -> None:
    """Experiments that measure no time, args.jobs at once, as shards on a local Ray cluster of
    args.jobs CPUs (study.runs.engine: the one way the study runs processes side by side), each
    measured afresh. Each records in its provenance the experiments that ran beside it."""
    from study.runs import engine
    scope = "quick" if args.quick else "full" if args.full else "standard"
    # idle OpenMP threads sleep instead of spinning, so that processes sharing the cores do not
    # burn each other's time (no arithmetic changes)
    shards = [engine.Shard(exp.name, scope=scope, device=args.device,
                           results_dir=args.results_dir, inits=args.inits,
                           env={provenance.CONCURRENT_ENV: f"{args.jobs}:" + ",".join(
                               e.name for e in chosen if e is not exp),
                                "OMP_WAIT_POLICY": "passive"})
              for exp in chosen]
    outcomes = engine.run_shards(shards, progress=engine.Progress(quiet=args.quiet), fresh=True,
                                 num_cpus=args.jobs)
    failed = [f"{o.shard.experiment} ({o.error})" for o in engine.failed(outcomes)]
    if failed:
        raise engine.ShardsFailed(f"failed: {', '.join(failed)}; the others' result files are "
                                  f"complete")


def _check_engine_flags(args) -> None:
    if not args.engine:
        given = [flag for flag, value in (("--address", args.address), ("--chunks", args.chunks),
                                          ("--fresh", args.fresh)) if value]
        if given:
            raise StudyError(f"{given[0]} applies only with --engine ray")
    elif args.chunks is not None and (args.chunks < 1 or args.cases):
        raise StudyError("--chunks takes a positive number, and excludes --cases")
    elif args.jobs > 1:
        raise StudyError("--jobs excludes --engine: the engine runs as many shards as it has CPUs")


def _run_on_engine(chosen: list, scope: str, chunk, args, progress) -> None:
    """Each experiment as shards on Ray (study.runs.engine): one, or --chunks N of its cases."""
    from study.runs import runner
    from study.runs import engine
    shards = []
    for exp in chosen:
        if args.chunks:
            count = len(runner.cases_of(exp, scope, args.inits))
            chunks = engine.chunks_of(count, args.chunks)
        else:
            chunks = [chunk]
        shards += [engine.Shard(exp.name, scope=scope, device=args.device,
                                results_dir=args.results_dir, cases=part, inits=args.inits)
                   for part in chunks]
    outcomes = engine.run_shards(shards, address=args.address, progress=progress,
                                 fresh=args.fresh)
    failed = engine.failed(outcomes)
    if failed:
        raise engine.ShardsFailed(f"{len(failed)} of {len(outcomes)} shards failed twice: "
                                  + "; ".join(f"{o.shard.label}: {o.error}" for o in failed)
                                  + "; a rerun runs only these")


def _merge_finished_chunks(paths: list[str], progress) -> None:
    """After `study run NAME --cases I:J`: the result file, once every chunk of it is in."""
    from study.runs.checkpoint import merge_chunks, result_name_of_chunk
    for path in paths:
        folder, name = os.path.dirname(path), result_name_of_chunk(path)
        siblings = [os.path.join(folder, f) for f in sorted(os.listdir(folder))
                    if f.startswith(".chunk-") and result_name_of_chunk(f) == name]
        written = merge_chunks(siblings)
        if written:
            progress(f"merged {len(siblings)} chunks into {written}")


def _load(folders: list[str], errata_file: str) -> tuple[list, list[str]]:
    runs, notes = results.load_runs(folders, set(experiments.NAMES))
    return results.ready(runs, results.load_errata(errata_file),
                         experiments.all_experiments()), notes


def _references(folder: str | None, errata_file: str) -> list:
    if folder is None or not os.path.isdir(folder):
        return []
    return _load([folder], errata_file)[0]


def _labels(out: str) -> dict[str, str]:
    """The run labels given so far (reports/labels.json), so that no run is renamed."""
    from study import report
    path = os.path.join(out, report.LABELS)
    if not os.path.exists(path):
        return {}
    try:
        with open(path, encoding="utf-8") as f:
            labels = json.load(f)
    except (OSError, ValueError) as e:
        raise StudyError(f"cannot read the run labels in {path}: {e}") from None
    if not isinstance(labels, dict) or not all(isinstance(v, str) for v in labels.values()):
        raise StudyError(f"{path} must map run configurations to labels")
    return labels


def cmd_report(args) -> None:
    from study import report
    from study.report.document import render_document
    runs, notes = _load(args.results or [results.RESULTS_DIR], args.errata)
    doc = render_document(runs, notes, experiments.all_experiments(),
                          _references(args.reference, args.errata), _labels(args.out),
                          code=provenance.code_commit())
    try:
        report.write_report(doc.files, args.out)
    except OSError as e:
        raise StudyError(f"cannot write the report to {args.out}: {e.strerror or e}") from None
    print(f"wrote {os.path.join(args.out, 'REPORT.md')} from {len(runs)} result files")
    if doc.errors:  # every other section is written; a broken one must still fail make and CI
        raise IncompleteReport(f"{len(doc.errors)} section(s) could not be rendered: " + "; ".join(
            f"{name} ({error})" for name, error in doc.errors.items()))


def cmd_compare(args) -> None:
    from tabulate import tabulate

    from study.compare import reproduction
    from study.report.format import cell_text
    runs, _ = _load(args.results, args.errata)
    references = _references(args.reference, args.errata)
    if not references:
        raise StudyError(f"no reference results in {args.reference}")
    comps = reproduction.comparisons(runs, references, experiments.all_experiments())
    if not comps:
        print("every run given is itself a reference run; nothing to compare")
        return
    rows = [[c.run.experiment, os.path.basename(c.run.path),  # the file names tell machines apart
             os.path.basename(c.reference.path) if c.reference else "—", c.equal, len(c.different),
             len(c.only_ours), len(c.only_theirs), c.verdict] for c in comps]
    print(tabulate(rows, ["experiment", "run", "reference", "equal", "different", "only yours",
                          "only reference", "verdict"], tablefmt="simple"))
    for c in comps:
        for name, a, b in c.different[:args.show]:
            print(f"{c.run.experiment}: {reproduction.name_text(name)}: "
                  f"{cell_text(a, None)} vs {cell_text(b, None)}")
    if args.strict and not all(c.reproduced for c in comps if c.kind == reproduction.REPRODUCTION):
        sys.exit(1)


def cmd_reference(args) -> None:
    copied = results.promote_to_reference(args.results, args.reference, set(experiments.NAMES))
    print(f"reference is now the {len(copied)} result files of {args.results} "
          f"(copied to {args.reference})")


def cmd_check(args) -> None:
    """Exit 0 clean, 1 a finding says a result is silently wrong, 2 usage (via StudyError),
    3 the check itself failed."""
    from study import check as checking
    from study.check import _known
    rule, target = checking.load_target(args.target)
    twin, twin_target = checking.load_target(args.twin) if args.twin else (None, None)
    known = args.known
    if args.update_known and known is None and os.path.exists(args.update_known):
        known = _known.load_known(args.update_known, need_reason=False)  # reasons kept
    options = dict(framework=args.framework, args=checking.parse_args(args.args),
                   kinks=_floats(args.kinks), quick=args.quick, device=args.device,
                   fail_on=checking.parse_fail_on(args.fail_on), name=target,
                   twin_name=twin_target, known=known, source=target, twin_source=twin_target)
    try:
        result = checking.check(rule, twin, **options)
    except StudyError:
        raise
    except Exception as exc:  # noqa: BLE001  a bug of the check, not of the rule
        print(f"internal error of study check: {first_error_line(exc)}", file=sys.stderr)
        raise SystemExit(3) from exc
    unusable = [f for f in result.findings if f.severity == "usage"]
    if unusable:
        raise checking.UsageError(f"{target} is not elementwise ({unusable[0].detail}); "
                                  "every measurement here assumes an elementwise rule")
    if args.update_known:
        _update_known(result, args.update_known)
    if args.json:
        text = json.dumps(result.to_json(), indent=1) + "\n"
        if args.json == "-":
            sys.stdout.write(text)
        else:
            _write_json(args.json, text)
    if args.json != "-":
        sys.stdout.write(result.to_markdown())
    raise SystemExit(result.exit_code)


def cmd_conformance(args) -> None:
    """Exit 0: every built-in judged follows PyTorch's documented rule, or breaks it as the
    known list says; 1: a break the known list does not name, or a kink that could not be
    measured; 2: usage (via StudyError)."""
    from study import conformance
    known = conformance.load_known(args.known) if args.known else None
    outcomes = [conformance.judge_installed(fw, args.ops, known)
                for fw in conformance.chosen_frameworks(args.framework, args.ops)]
    code = max(o.exit_code for o in outcomes)
    if args.json:
        text = json.dumps({"schema_version": conformance.SCHEMA_VERSION, "exit_code": code,
                           "frameworks": [o.to_json() for o in outcomes]}, indent=1) + "\n"
        if args.json == "-":
            sys.stdout.write(text)
        else:
            _write_json(args.json, text)
    if args.json != "-":
        sys.stdout.write("\n".join(o.to_markdown() for o in outcomes))
    raise SystemExit(code)


def _update_known(result, path: str) -> None:
    """Write the known file (the entries still matched, one per new failing finding), then
    judge the run by it; say on stderr what changed."""
    from study.check import _known
    data = result.updated_known()
    _write_json(path, json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    before = len(result.known_entries)
    result.apply_known(_known.parse_known(data, path, need_reason=False), path)
    new = sum(1 for e in data["known"] if not e["reason"])
    print(f"wrote {path}: {len(data['known']) - new} kept, {new} new (give each a reason: "
          f"--known refuses an empty one), {before - len(data['known']) + new} no longer "
          "found, removed", file=sys.stderr)


def _floats(text: str | None) -> tuple:
    try:
        return tuple(float(v) for v in (text or "").split(",") if v.strip())
    except ValueError:
        raise StudyError(f"--kinks {text!r} is not a comma-separated list of numbers") from None


def _write_json(path: str, text: str) -> None:
    try:
        atomic.write_text_atomically(path, text)
    except OSError as e:
        raise StudyError(f"cannot write {path}: {e.strerror or e}") from None


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="study", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    listing = sub.add_parser("list", help="experiments, one line each")
    listing.add_argument("--cases", metavar="NAME", help="print how many cases NAME has")
    listing.add_argument("--scope", default="standard", help="the scope --cases counts")
    listing.set_defaults(func=cmd_list)
    history = sub.add_parser("history", add_help=False,
                             help="each torch and JAX release in its own env (make history)")
    history.add_argument("rest", nargs=argparse.REMAINDER)
    history.set_defaults(func=cmd_history)
    _add_run(sub)
    _add_report_compare_reference(sub)
    _add_check(sub)
    _add_conformance(sub)
    return parser


def _add_run(sub) -> None:
    run = sub.add_parser("run", help="run experiments and store their results")
    run.add_argument("names", nargs="+", metavar="NAME", help="experiment name(s), or 'all'")
    run.add_argument("--device", default="all", choices=DEVICE_CHOICES)
    run.add_argument("--quick", action="store_true", help="smaller sizes, for a fast look")
    run.add_argument("--full", action="store_true", help="the paper-sized run, where offered")
    run.add_argument("--quiet", action="store_true", help="no progress on stderr")
    run.add_argument("--inits", type=int, metavar="K",
                     help="initialisations per setting, where an experiment counts them")
    run.add_argument("--results-dir", default=results.RESULTS_DIR,
                     help="where result files go (default: reports/results)")
    run.add_argument("--report", action="store_true",
                     help="then render reports/REPORT.md, as `study report` does")
    run.add_argument("--jobs", type=int, default=1, metavar="N",
                     help="run experiments that measure no time N at a time, then the timed "
                          "ones alone (default: 1)")
    run.add_argument("--cases", metavar="I:J",
                     help="only cases I to J-1, in case order, as a chunk file; the result "
                          "file is written once chunks cover every case")
    run.add_argument("--engine", choices=["ray"],
                     help="run each experiment as shards on Ray (a local cluster unless "
                          "--address); a rerun skips the shards that finished")
    run.add_argument("--address", metavar="ADDR", help="with --engine: a running Ray cluster")
    run.add_argument("--chunks", type=int, metavar="N",
                     help="with --engine: split each experiment's cases into N shards")
    run.add_argument("--fresh", action="store_true",
                     help="with --engine: run every shard again, even those that finished")
    run.set_defaults(func=cmd_run)


def _add_report_compare_reference(sub) -> None:
    rep = sub.add_parser("report", help="render reports/REPORT.md from the result files")
    rep.add_argument("--results", nargs="+", metavar="DIR",
                     help="result folders to merge (default: reports/results)")
    rep.add_argument("--reference", default=results.REFERENCE_DIR,
                     help="the reference results to compare with (default: reports/reference)")
    rep.add_argument("--out", default=REPORTS_DIR, help="output folder (default: reports/)")
    rep.add_argument("--errata", default=results.ERRATA_FILE,
                     help="cells measured before a fix, withdrawn (default: reports/errata.json)")
    rep.set_defaults(func=cmd_report)
    cmp_ = sub.add_parser("compare", help="compare result folders with the reference")
    cmp_.add_argument("results", nargs="+", metavar="DIR")
    cmp_.add_argument("--reference", default=results.REFERENCE_DIR)
    cmp_.add_argument("--show", type=int, default=5, help="differing cells listed per run")
    cmp_.add_argument("--errata", default=results.ERRATA_FILE)
    cmp_.add_argument("--strict", action="store_true", help="exit 1 unless all reproduce")
    cmp_.set_defaults(func=cmd_compare)
    ref = sub.add_parser("reference", help="make the current results the reference")
    ref.add_argument("--results", default=results.RESULTS_DIR)
    ref.add_argument("--reference", default=results.REFERENCE_DIR)
    ref.set_defaults(func=cmd_reference)


def _add_check(sub) -> None:
    chk = sub.add_parser("check", help="measure your own gradient rule as the study measures "
                                       "its own; exit 1 where a result is silently wrong")
    chk.add_argument("target", metavar="MODULE_OR_FILE:ATTR")
    chk.add_argument("--twin", metavar="MODULE_OR_FILE:ATTR",
                     help="the same rule in the other framework, compared bit for bit")
    chk.add_argument("--framework", choices=("torch", "jax"),
                     help="where a plain callable works in both or neither")
    chk.add_argument("--args", metavar="ARGS",
                     help="extra positional arguments after x, as Python literals: '0.1, 2'")
    chk.add_argument("--kinks", metavar="K1,K2", help="kinks to probe besides those found")
    chk.add_argument("--quick", action="store_true",
                     help="float32 and float64 eager, one compiled graph, no cost")
    chk.add_argument("--json", metavar="FILE|-", help="also write the result as JSON")
    chk.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    chk.add_argument("--fail-on", metavar="KINDS",
                     help="comma-separated finding kinds that fail (exit 1) instead of the "
                          "default ones")
    chk.add_argument("--known", metavar="FILE",
                     help="findings the project accepts, each with a reason (JSON): they do "
                          "not fail the run; an entry no longer found is reported as fixed")
    chk.add_argument("--update-known", metavar="FILE",
                     help="write FILE: the entries still found (from --known, else FILE), and "
                          "one per new failing finding, its reason for you to give")
    chk.set_defaults(func=cmd_check)


def _add_conformance(sub) -> None:
    con = sub.add_parser("conformance", help="judge every built-in of the installed release at "
                                             "every kink; exit 1 on a break not known")
    con.add_argument("--framework", choices=("torch", "jax"),
                     help="the framework to judge (default: each one installed)")
    con.add_argument("--ops", metavar="PATTERN",
                     help="only the built-ins whose registry key or name matches this glob "
                          "(several: comma-separated)")
    con.add_argument("--known", metavar="FILE",
                     help="the breaks you accept, each with its reason (default: the study's "
                          "committed history of the installed release)")
    con.add_argument("--json", metavar="FILE|-", help="also write the verdicts as JSON")
    con.set_defaults(func=cmd_conformance)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        if argv[:1] == ["history"]:  # its own options, parsed by study.runs.history
            cmd_history(argparse.Namespace(rest=argv[1:]))
            return 0
        args = build_parser().parse_args(argv)
        args.func(args)
    except StudyError as e:
        print(f"error: {e}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print("error: interrupted; result files already written are complete", file=sys.stderr)
        return 130
    return 0
