"""Errors shared by every layer: a low module, so that a check, the pipeline and the CLI
raise the same class without importing each other."""


class UsageError(Exception):
    """Bad command-line usage (exit code 2)."""


class OutputConflict(Exception):
    """A build would replace or lose what the user owns; ``hint`` says how to go on. Raised by
    the pipeline's output planning and by a target's own ownership rules (RELAI's)."""

    code = "output_conflict"

    def __init__(self, message: str, hint: str | None = None, conflicts: tuple = ()):
        super().__init__(message)
        self.hint = hint
        self.conflicts = tuple(conflicts)
