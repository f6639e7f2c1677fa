class StudyError(Exception):
    """A user-facing failure: the CLI prints its message on one line and exits non-zero."""
