"""The whole exception hierarchy of localjudge.

Every error carries a ``hint`` (what the user can do about it) and an ``exit_code`` the CLI
uses (docs/cli.md, "Exit codes"); 1 is kept for a threshold that was not met, so a
:class:`LocalJudgeError` without a class of its own exits with the internal-error code. The
runner catches exactly one base class, :class:`ItemError`: failures that belong to one item and
one metric. Everything else is fatal and stops a run before (or instead of) scoring.
"""

from __future__ import annotations

import errno


class LocalJudgeError(Exception):
    """Base class of every error localjudge raises on purpose."""

    #: an error that belongs to no class below is unexpected: the internal-error code
    exit_code: int = 8

    def __init__(self, message: str, *, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message} ({self.hint})" if self.hint else self.message


# ---------------------------------------------------------------- per-item (data, not crashes)


class ItemError(LocalJudgeError):
    """A failure that concerns one item and one metric: recorded as a result row, never raised
    out of a run."""

    kind: str = "item_error"

    def __init__(
        self,
        message: str,
        *,
        field: str | None = None,
        item_id: str | None = None,
        hint: str = "",
    ) -> None:
        super().__init__(message, hint=hint)
        self.field = field
        self.item_id = item_id


class InvalidItemError(ItemError):
    """A required field is missing or empty, or a value has the wrong type."""

    kind = "invalid_item"


class ContextOverflowError(ItemError):
    """The prompt plus the worst-case output does not fit in the context window."""

    kind = "context_overflow"

    def __init__(
        self,
        message: str,
        *,
        needed: int,
        available: int,
        field: str | None = None,
        item_id: str | None = None,
        hint: str = "",
    ) -> None:
        super().__init__(message, field=field, item_id=item_id, hint=hint)
        self.needed = needed
        self.available = available


class OutputBudgetError(ContextOverflowError):
    """A :func:`~localjudge.judge.schemas.budgeted` call's output reached its token budget before
    the JSON was complete; the partial output was discarded."""

    kind = "output_budget"


# ---------------------------------------------------------------- fatal


class UsageError(LocalJudgeError):
    """Bad options or arguments."""

    exit_code = 2


class DataError(LocalJudgeError):
    """The dataset file cannot be read at all (missing, unknown format)."""

    exit_code = 3


class ModelError(LocalJudgeError):
    """The judge model cannot be found or loaded (missing, not GGUF, truncated, wrong sha256)."""

    exit_code = 4


class ProtocolError(ModelError):
    """Judged rows, shipped cut-offs or a stored fit were made under a protocol (the prompts
    and layout of every kind of decision, :mod:`localjudge.metrics.protocols`) whose fingerprint
    is not this release's: what they say about a judge's answers no longer holds. The message
    names both protocols."""


class ConstraintError(LocalJudgeError):
    """Grammar-constrained decoding could not be applied; nothing unconstrained is ever returned."""

    exit_code = 5


class DiskFullError(LocalJudgeError):
    """The output or cache file system is full. What was written stays whole: the partial
    results file ends at its last complete row and SQLite rolls the cache back to its last
    complete call, so a rerun after space is freed resumes."""

    exit_code = 6

    def __init__(self, what: str) -> None:
        super().__init__(
            f"no space left on the device writing {what}; finished results and judge calls are "
            "kept",
            hint="free some space (or give -o / --cache another file system), then run the same "
            "command again to resume",
        )


class CacheError(LocalJudgeError):
    """The judge-call cache cannot be used: unreadable, damaged under a running process, not a
    localjudge cache, or written by a newer localjudge."""

    exit_code = 7


class JudgeDiedError(LocalJudgeError):
    """A judge's process died by a signal (a native crash, the out-of-memory killer): the CLI
    exits ``128 + N`` for signal N, as a shell would (139 for SIGSEGV, 137 for SIGKILL)."""

    def __init__(self, message: str, *, exit_code: int, hint: str = "") -> None:
        super().__init__(message, hint=hint)
        self.exit_code = exit_code


class InternalError(LocalJudgeError):
    """Something went wrong that localjudge did not expect (a bug, or an environment problem it
    does not classify): the CLI prints one line and exits 8."""

    exit_code = 8


#: set to 1 to see a traceback instead of the one-line error
DEBUG_ENV = "LOCALJUDGE_DEBUG"


def internal_error(exc: BaseException) -> InternalError:
    """An exception localjudge did not expect, as one line (the traceback needs
    ``LOCALJUDGE_DEBUG=1``)."""
    detail = " ".join(str(exc).split())
    return InternalError(
        f"internal error: {type(exc).__name__}{': ' + detail if detail else ''}",
        hint=f"run again with {DEBUG_ENV}=1 to see the traceback, and report it if it repeats",
    )


def is_disk_full(exc: BaseException) -> bool:
    """An OSError that says the file system, or the user's quota on it, is full."""
    codes = {errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)}
    return isinstance(exc, OSError) and exc.errno in codes
