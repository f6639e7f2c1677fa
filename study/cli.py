"""Command line: `python -m study list | run NAME... [--device cpu|cuda|all] [--quick] | report`."""
import argparse
import os
import sys

import experiments
from study import report, results, runner
from study.devices import DEVICE_CHOICES, resolve_devices
from study.errors import StudyError
from study.provenance import REPO_ROOT

REPORTS_DIR = os.path.join(REPO_ROOT, "reports")


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, not argparse's usage block
        raise StudyError(message)


def _experiments_named(names: list[str]) -> list:
    if names == ["all"]:
        return experiments.all_experiments()
    unknown = [n for n in names if n not in experiments.NAMES]
    if unknown:
        raise StudyError(f"unknown experiment {unknown[0]!r}; known: "
                         f"{', '.join(experiments.NAMES)} (or 'all')")
    return [experiments.load(n) for n in names]


def cmd_list(args) -> None:
    for exp in experiments.all_experiments():
        print(f"{exp.NAME:<20} {exp.DESCRIPTION}")


def cmd_run(args) -> None:
    chosen = _experiments_named(args.names)
    if args.quick and args.full:
        raise StudyError("--quick and --full exclude each other")
    if args.full and not all(runner.supports_full(e) for e in chosen):
        names = [e.NAME for e in experiments.all_experiments() if runner.supports_full(e)]
        raise StudyError(f"--full applies only to: {', '.join(names)}")
    devices = resolve_devices(args.device)
    progress = runner.Progress(quiet=args.quiet)
    for exp in chosen:
        runner.run_experiment(exp, devices, args.quick, progress, root=args.results_dir,
                              full=args.full)


def cmd_report(args) -> None:
    roots = args.results or [results.RESULTS_DIR]
    exps = experiments.all_experiments()
    runs, notes = results.load_runs(roots, {e.NAME for e in exps})
    files = report.render(runs, notes, exps)
    try:
        report.write_report(files, args.out)
    except OSError as e:
        raise StudyError(f"cannot write the report to {args.out}: {e.strerror or e}") from None
    print(f"wrote {os.path.join(args.out, 'REPORT.md')} from {len(runs)} result files")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m study", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    sub.add_parser("list", help="experiments, one line each").set_defaults(func=cmd_list)
    run = sub.add_parser("run", help="run experiments and store their results")
    run.add_argument("names", nargs="+", metavar="NAME", help="experiment name(s), or 'all'")
    run.add_argument("--device", default="all", choices=DEVICE_CHOICES)
    run.add_argument("--quick", action="store_true", help="smaller sizes, for a fast look")
    run.add_argument("--full", action="store_true", help="the paper-sized run, where offered")
    run.add_argument("--quiet", action="store_true", help="no progress on stderr")
    run.add_argument("--results-dir", default=results.RESULTS_DIR, help=argparse.SUPPRESS)
    run.set_defaults(func=cmd_run)
    rep = sub.add_parser("report", help="render reports/REPORT.md from the result files")
    rep.add_argument("--results", nargs="+", metavar="DIR",
                     help="result folders to merge (default: reports/results)")
    rep.add_argument("--out", default=REPORTS_DIR, help="output folder (default: reports/)")
    rep.set_defaults(func=cmd_report)
    return parser


def main(argv=None) -> int:
    try:
        args = build_parser().parse_args(argv)
        args.func(args)
    except StudyError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("error: interrupted; result files already written are complete", file=sys.stderr)
        return 130
    return 0
