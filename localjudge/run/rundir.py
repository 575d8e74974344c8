"""A run's output directory: its lock, whether a finished run there may be replaced, and which
kind of run it holds.

One run writes a directory at a time (:func:`output_lock`, the operating system's lock, so a
killed run leaves none behind). A finished run is replaced only by the same run again
(:func:`run_differences` compares manifests) or with ``--overwrite``; an unfinished one is
resumed. The files themselves are :mod:`localjudge.run.results`'s.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from localjudge.errors import DataError, UsageError
from localjudge.run.results import BENCH, BENCH_ITEMS, PARTIAL, RESULTS, SUMMARY
from localjudge.run.summary import read_summary

__all__ = [
    "LOCK_NAME",
    "detect_run",
    "finished_run",
    "output_lock",
    "refuse_replacing",
    "run_differences",
]


def _plain(value: Any) -> Any:
    """``value`` as JSON gives it back (tuples as lists, ...), for comparing with a file."""
    return json.loads(json.dumps(value, default=str))


def run_differences(
    previous: Mapping[str, Any],
    *,
    data_sha256: str,
    judge: Mapping[str, Any],
    settings: Mapping[str, Any],
) -> list[str]:
    """What would differ between a finished run's manifest (``summary.json``'s ``run``) and a
    new run of ``data_sha256`` with ``judge`` (its identity) and ``settings``: empty when the
    new run is the same run again (a rerun, which rewrites the same rows)."""
    out = [] if previous.get("data_sha256") == data_sha256 else ["data (sha256)"]
    for label, part, now in (("judge", "judge", judge), ("setting", "settings", settings)):
        before, after = previous.get(part) or {}, _plain(now)
        keys = sorted(set(before) | set(after))
        out += [f"{label} {key}" for key in keys if before.get(key) != after.get(key)]
    return out


def refuse_replacing(out_dir: Path, differences: Sequence[str], kind: str = "eval") -> None:
    """Raise the :class:`~localjudge.errors.UsageError` for a finished run in ``out_dir`` that
    a new run with these ``differences`` would replace."""
    if differences:
        shown = ", ".join(differences[:6]) + (", ..." if len(differences) > 6 else "")
        raise UsageError(
            f"{str(out_dir)!r} holds a finished {kind} run that differs from this one ({shown})",
            hint="give this run another -o directory, or pass --overwrite to replace that one",
        )


def finished_run(out_dir: Path) -> Mapping[str, Any] | None:
    """The manifest (``run``) of the finished eval run in ``out_dir``, None when there is none.
    A summary that cannot be read counts as a finished run of unknown settings."""
    path = out_dir / SUMMARY.name
    if not path.is_file():
        return None
    try:
        run = read_summary(path).get("run")
    except DataError:
        return {}
    return run if isinstance(run, Mapping) else {}


#: the lock file a run holds in its output directory while it writes there
LOCK_NAME = ".localjudge.lock"


@contextmanager
def output_lock(out_dir: Path) -> Iterator[None]:
    """Hold ``out_dir``'s lock while a run writes there; another run that wants the same
    directory is refused at once (never two writers, never interleaved rows). The lock is the
    operating system's (``filelock``: ``flock`` / ``msvcrt``), so a killed run never leaves a
    stale one behind. A run takes it once (:func:`~localjudge.run.evaluate.file_run.open_run`,
    for the CLI and the library alike)."""
    from filelock import FileLock, Timeout  # noqa: PLC0415 (only runs that write need it)

    out_dir.mkdir(parents=True, exist_ok=True)
    lock = FileLock(out_dir / LOCK_NAME)
    try:
        lock.acquire(timeout=0)
    except Timeout:
        raise UsageError(
            f"output directory {str(out_dir)!r} is in use by another localjudge run",
            hint="wait for that run to end, or give this one another -o directory",
        ) from None
    try:
        yield
    finally:
        lock.release()


# --------------------------------------------------------------------------- run directories


def detect_run(out_dir: Path) -> str:
    """``"bench"`` or ``"eval"``: which kind of complete run ``out_dir`` holds."""
    if not out_dir.is_dir():
        raise DataError(
            f"no run directory at {str(out_dir)!r}",
            hint="give the -o directory of `localjudge eval` or `localjudge bench`",
        )
    if (out_dir / BENCH.name).is_file() and (out_dir / BENCH_ITEMS.name).is_file():
        return "bench"
    if (out_dir / SUMMARY.name).is_file() and (out_dir / RESULTS.name).is_file():
        return "eval"
    unfinished = (out_dir / (RESULTS.name + PARTIAL)).is_file()
    raise DataError(
        f"{str(out_dir)!r} holds neither an eval run ({SUMMARY.name} + {RESULTS.name}) "
        f"nor a bench run ({BENCH.name} + {BENCH_ITEMS.name})",
        hint=(
            "the eval run there did not complete; run the same command again to finish it"
            if unfinished
            else "give the -o directory of `localjudge eval` or `localjudge bench`"
        ),
    )
