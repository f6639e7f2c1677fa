"""`study COMMAND ...` (the console script) and `python -m study COMMAND ...`: the packages the
command needs are checked first, in one line, before any framework is imported."""
import sys

from study.runs.requirements import exit_if_missing


def main() -> int:
    exit_if_missing(sys.argv[1] if len(sys.argv) > 1 else None)
    from study.cli import main as run_command
    return run_command()


if __name__ == "__main__":
    sys.exit(main())
