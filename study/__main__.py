import sys

from study.runs.requirements import exit_if_missing

exit_if_missing()  # one line naming what is missing, before torch or JAX is imported

from study.cli import main  # noqa: E402

sys.exit(main())
