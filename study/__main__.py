import sys

from study.runs.requirements import exit_if_missing

exit_if_missing(sys.argv[1] if len(sys.argv) > 1 else None)  # one line, before any framework

from study.cli import main  # noqa: E402

sys.exit(main())
