class StudyError(Exception):
    """A user-facing failure: the CLI prints its message on one line and exits non-zero."""


def first_error_line(exc: BaseException) -> str:
    """`Type: first non-blank line of the message`: how a raised mode or case is recorded."""
    lines = [ln for ln in str(exc).strip().splitlines() if ln.strip()]
    return f"{type(exc).__name__}: {lines[0] if lines else ''}".strip()

