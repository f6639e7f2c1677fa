class StudyError(Exception):
    """A user-facing failure: the CLI prints its message on one line and exits non-zero (2: the
    command could not run; 1: it ran, and what it wrote is incomplete, as ruff's findings are)."""

    exit_code = 2


class IncompleteReport(StudyError):
    """The report was written, but some sections could not be rendered."""

    exit_code = 1


def first_error_line(exc: BaseException) -> str:
    """`Type: first non-blank line of the message`: how a raised mode or case is recorded."""
    lines = [ln for ln in str(exc).strip().splitlines() if ln.strip()]
    return f"{type(exc).__name__}: {lines[0] if lines else ''}".strip()
