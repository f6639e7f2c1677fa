import re


class StudyError(Exception):
    """A user-facing failure: the CLI prints its message on one line and exits non-zero."""


def first_error_line(exc: BaseException) -> str:
    """`Type: first non-blank line of the message`: how a raised mode or case is recorded."""
    lines = [ln for ln in str(exc).strip().splitlines() if ln.strip()]
    return f"{type(exc).__name__}: {lines[0] if lines else ''}".strip()


_ERROR_LINE = re.compile(r"^[A-Z]\w*(Error|Exception|Escape|Exit)\b")


def looks_like_error(text: str) -> bool:
    """Whether a string reads as an error line as first_error_line writes it: the tests' check
    that every recorded error was typed as one (study.cells.Error), never how one is found."""
    return bool(_ERROR_LINE.match(text))
