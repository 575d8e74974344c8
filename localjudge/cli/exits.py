"""Exit codes and the mapping of errors to them (docs/cli.md, "Exit codes").

An error raised below a command becomes one line on stderr (and a hint when the error has one)
and the exit code its class carries; ``LOCALJUDGE_DEBUG=1`` shows the traceback instead. Ctrl-C
exits 130 with a line saying the finished judge calls are cached, a closed stdout exits 141
quietly, and anything unexpected is an internal error (exit 8) with one line.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
from collections.abc import Callable, Iterator
from typing import Any, NoReturn, TypeVar

import click

from localjudge.errors import (
    DEBUG_ENV,
    CacheError,
    DiskFullError,
    InternalError,
    LocalJudgeError,
    UsageError,
    internal_error,
    is_disk_full,
)

EXIT_OK = 0
EXIT_THRESHOLD = 1
EXIT_DOCTOR = 1
EXIT_USAGE = UsageError.exit_code  # Click's own usage errors exit 2 too
EXIT_CACHE = CacheError.exit_code
EXIT_INTERNAL = InternalError.exit_code
EXIT_INTERRUPTED = 130
#: stdout was closed under us: 128 + SIGPIPE, as a shell reports it
EXIT_PIPE = 141

F = TypeVar("F", bound=Callable[..., Any])


def _fail(exc: LocalJudgeError) -> NoReturn:
    click.echo(f"localjudge: error: {exc.message}", err=True)
    if exc.hint:
        click.echo(f"localjudge: hint: {exc.hint}", err=True)
    sys.exit(exc.exit_code)


@contextlib.contextmanager
def exit_codes() -> Iterator[None]:
    """Map every error to one readable line and its exit code (docs/cli.md, "Exit codes"); Click's
    own exceptions pass through to Click (usage errors exit 2). ``LOCALJUDGE_DEBUG`` re-raises."""
    debug = bool(os.environ.get(DEBUG_ENV))
    try:
        yield
    except (click.ClickException, click.exceptions.Exit, click.exceptions.Abort):
        raise
    except LocalJudgeError as exc:
        if debug:
            raise
        _fail(exc)
    except KeyboardInterrupt:
        click.echo(
            "localjudge: interrupted; finished judge calls are cached: run the same command "
            "again to resume",
            err=True,
        )
        sys.exit(EXIT_INTERRUPTED)
    except BrokenPipeError:  # stdout was closed (`| head`): nothing is wrong, nobody reads on
        with contextlib.suppress(Exception):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(EXIT_PIPE)
    except Exception as exc:
        if debug:
            raise
        if isinstance(exc, OSError) and is_disk_full(exc):
            _fail(DiskFullError(exc.filename or "the output"))
        _fail(internal_error(exc))


def guarded(fn: F) -> F:
    """Map library errors to one readable line and their exit code."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with exit_codes():
            return fn(*args, **kwargs)

    return wrapper  # type: ignore[return-value]
