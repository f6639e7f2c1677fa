"""The entry point of `study COMMAND ...` (`python -m study` runs the same): the commands that
run, render and compare the registered experiments, and the function of every command
(study.commands.parser parses; study.commands.instrument holds `check` and `conformance`).

The experiments (and with them both frameworks) are imported by the commands that run or render
them; `check` imports only the framework of the rule it checks, and `conformance` only the
framework it judges."""
import argparse
import json
import os
import sys

from study.commands.instrument import cmd_check, cmd_conformance
from study.commands.parser import REPORTS_DIR, build_parser
from study.errors import IncompleteReport, StudyError
from study.measure.devices import resolve_devices
from study.runs import provenance, results


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
    return results.ready(runs, results.load_errata(errata_file)), notes


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
    references = results.sharing_identical(_references(args.reference, args.errata), runs)
    doc = render_document(runs, notes, experiments.all_experiments(), references,
                          _labels(args.out), code=provenance.code_commit())
    try:
        report.write_report(doc.files, args.out)
    except OSError as e:
        raise StudyError(f"cannot write the report to {args.out}: {e.strerror or e}") from None
    print(f"wrote {os.path.join(args.out, 'REPORT.md')} from {len(runs)} result files")
    # the study's own results rendered into its own reports: the dataset the package ships, as
    # well (labelled as that report labels runs; a report elsewhere labels them its own way)
    if not args.results and os.path.abspath(args.out) == os.path.abspath(REPORTS_DIR):
        from study import conventions
        labels = json.loads(doc.files[report.LABELS])
        conventions.write(conventions.from_runs(runs, labels, ""),
                          built_by=provenance.code_commit())
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


COMMANDS = {"list": cmd_list, "history": cmd_history, "run": cmd_run, "report": cmd_report,
            "compare": cmd_compare, "reference": cmd_reference, "check": cmd_check,
            "conformance": cmd_conformance}


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        if argv[:1] == ["history"]:  # its own options, parsed by study.runs.history
            cmd_history(argparse.Namespace(rest=argv[1:]))
            return 0
        args = build_parser().parse_args(argv)
        COMMANDS[args.command](args)
    except StudyError as e:
        print(f"error: {e}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print("error: interrupted; result files already written are complete", file=sys.stderr)
        return 130
    return 0
