"""Error types with one-line messages meant for users (the CLI prints them without traceback)."""

from __future__ import annotations


class ChatevalError(Exception):
    """Base class: its message is a complete one-line explanation for the user."""

    exit_code = 1


class InputError(ChatevalError):
    """Bad user input (file, line, field, name). The CLI exits with code 2."""

    exit_code = 2


class ConfigError(InputError):
    """Bad configuration: unknown names, conflicting options, bad preset or persona files."""


class ModelCallError(ChatevalError):
    """A model call failed after its retries; the sample that made it is marked failed."""


class RunWriteError(ChatevalError):
    """A run's file could not be written (disk full, file size limit, read-only disk). The run
    stops: nothing more could be saved. Exit code 1."""

    def __init__(self, path: object, error: OSError) -> None:
        self.path, self.error = path, error
        self.missing: tuple[int, int] | None = None  # (records without a result, expected), once counted
        super().__init__(path, error)

    def __str__(self) -> str:
        reason = self.error.strerror or str(self.error)
        out = f"cannot write {self.path}: {reason}"
        if self.missing is not None:
            out += (
                f"; the run is incomplete: {self.missing[0]} of {self.missing[1]} input records have no result "
                "(summary.json says so if it could be written)"
            )
        return out + "; make room and rerun with --resume to finish it"


def where(path: object, line: int | None = None, field: str | None = None) -> str:
    """Format 'file:line: field' prefixes consistently for one-line errors."""
    out = str(path)
    if line is not None:
        out += f":{line}"
    if field:
        out += f": field '{field}'"
    return out


class EndpointUnreachable(ModelCallError):
    """A model endpoint refused connections after every retry: the run stops (finished units
    are kept) rather than failing each remaining sample the same way. Exit code 2, as for a bad
    setting: the usual cause is a wrong --base-url or a server that is not running."""

    exit_code = 2
