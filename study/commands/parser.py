"""The parser of `study COMMAND ...`: each command and its arguments, their help read from
help.toml beside this module (study.commands.HELP). It parses only; study.cli runs the command
it names."""
import argparse
import os

from study.commands import HELP
from study.errors import StudyError
from study.measure.devices import DEVICE_CHOICES
from study.runs import results
from study.runs.provenance import REPO_ROOT

REPORTS_DIR = os.path.join(REPO_ROOT, "reports")


class _Parser(argparse.ArgumentParser):
    words: dict = {}  # the command's help, by argument (help.toml)

    def error(self, message):  # one line, not argparse's usage block
        raise StudyError(message)

    def argument(self, name: str, **kwargs) -> None:
        """add_argument, with the help that help.toml gives `name` (none where it gives none)."""
        self.add_argument(name, help=self.words.get(name), **kwargs)


def _command(sub, name: str, **kwargs) -> _Parser:
    parser = sub.add_parser(name, help=HELP[name]["help"], **kwargs)
    parser.words = HELP[name]
    return parser


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="study", description=HELP["description"])
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    listing = _command(sub, "list")
    listing.argument("--cases", metavar="NAME")
    listing.argument("--scope", default="standard")
    history = _command(sub, "history", add_help=False)
    history.argument("rest", nargs=argparse.REMAINDER)
    _add_run(sub)
    _add_report_compare_reference(sub)
    _add_check(sub)
    _add_conformance(sub)
    return parser


def _add_run(sub) -> None:
    run = _command(sub, "run")
    run.argument("names", nargs="+", metavar="NAME")
    run.argument("--device", default="all", choices=DEVICE_CHOICES)
    run.argument("--quick", action="store_true")
    run.argument("--full", action="store_true")
    run.argument("--quiet", action="store_true")
    run.argument("--inits", type=int, metavar="K")
    run.argument("--results-dir", default=results.RESULTS_DIR)
    run.argument("--report", action="store_true")
    run.argument("--jobs", type=int, default=1, metavar="N")
    run.argument("--cases", metavar="I:J")
    run.argument("--engine", choices=["ray"])
    run.argument("--address", metavar="ADDR")
    run.argument("--chunks", type=int, metavar="N")
    run.argument("--fresh", action="store_true")


def _add_report_compare_reference(sub) -> None:
    rep = _command(sub, "report")
    rep.argument("--results", nargs="+", metavar="DIR")
    rep.argument("--reference", default=results.REFERENCE_DIR)
    rep.argument("--out", default=REPORTS_DIR)
    rep.argument("--errata", default=results.ERRATA_FILE)
    cmp_ = _command(sub, "compare")
    cmp_.argument("results", nargs="+", metavar="DIR")
    cmp_.argument("--reference", default=results.REFERENCE_DIR)
    cmp_.argument("--show", type=int, default=5)
    cmp_.argument("--errata", default=results.ERRATA_FILE)
    cmp_.argument("--strict", action="store_true")
    ref = _command(sub, "reference")
    ref.argument("--results", default=results.RESULTS_DIR)
    ref.argument("--reference", default=results.REFERENCE_DIR)


def _add_check(sub) -> None:
    chk = _command(sub, "check")
    chk.argument("target", metavar="MODULE_OR_FILE:ATTR")
    chk.argument("--twin", metavar="MODULE_OR_FILE:ATTR")
    chk.argument("--framework", choices=("torch", "jax"))
    chk.argument("--args", metavar="ARGS")
    chk.argument("--kinks", metavar="K1,K2")
    chk.argument("--quick", action="store_true")
    chk.argument("--json", metavar="FILE|-")
    chk.argument("--device", default="cpu", choices=("cpu", "cuda"))
    chk.argument("--fail-on", metavar="KINDS")
    chk.argument("--known", metavar="FILE")
    chk.argument("--update-known", metavar="FILE")


def _add_conformance(sub) -> None:
    con = _command(sub, "conformance")
    con.argument("--framework", choices=("torch", "jax"))
    con.argument("--ops", metavar="PATTERN")
    con.argument("--known", metavar="FILE")
    con.argument("--json", metavar="FILE|-")
