"""``localjudge cache``: browse and maintain the judge-call cache, the log of every judge call.

``path``, ``stats``, ``ls`` and ``export`` only read (:mod:`localjudge.judge.cache.calllog`, a
read-only connection: they never create, migrate or write the file); ``prune`` and ``clear`` delete
through :class:`~localjudge.judge.cache.database.Cache`. Every subcommand takes eval's
``--cache`` and honours ``$LOCALJUDGE_CACHE_DIR``, so it finds the file an eval with the same
options uses.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TypeVar

import click

from localjudge.metrics import METRICS

F = TypeVar("F", bound=Callable[..., Any])

#: characters of a raw output ``ls`` shows
OUTPUT_CHARS = 60


def _cache_option(fn: F) -> F:
    return click.option(
        "--cache",
        "cache_path",
        type=click.Path(path_type=Path),
        default=None,
        help="Cache file or directory, as eval's --cache (default: user cache dir or "
        "$LOCALJUDGE_CACHE_DIR).",
    )(fn)


def _filter_options(fn: F) -> F:
    for option in reversed(
        (
            click.option(
                "--model",
                default=None,
                metavar="ALIAS|SHA",
                help="Only calls of this model: its alias, or its sha256 (8+ leading hex digits).",
            ),
            click.option(
                "--metric", type=click.Choice(list(METRICS)), default=None, help="Only this metric."
            ),
            click.option(
                "--item", default=None, metavar="ID", help="Only calls about this item id."
            ),
        )
    ):
        fn = option(fn)
    return fn


def _path(cache_path: Path | None) -> Path:
    from localjudge.judge.cache import resolve_cache_path  # noqa: PLC0415 (keep --help fast)

    return resolve_cache_path(cache_path)


@click.group("cache")
def cache_group() -> None:
    """Browse and maintain the judge-call cache: every call with the prompt the judge saw, its raw
    output, model, metric, item, tokens and time."""


@cache_group.command("path")
@_cache_option
def path_command(cache_path: Path | None) -> None:
    """Print the cache file eval uses with these options (it may not exist yet)."""
    click.echo(str(_path(cache_path)))


@cache_group.command("stats")
@_cache_option
@click.option("--json", "as_json", is_flag=True, help="Print the statistics as JSON.")
def stats_command(cache_path: Path | None, as_json: bool) -> None:
    """Calls, size on disk, and calls and cache hits per model and per metric."""
    from localjudge.judge.cache import cache_stats  # noqa: PLC0415

    stats = cache_stats(_path(cache_path))
    if as_json:
        click.echo(json.dumps(stats.as_dict(), indent=2))
        return
    if not stats.exists:
        click.echo(f"no cache file at {stats.path} yet (nothing cached)")
        return
    lines = [
        f"cache: {stats.path} (schema {stats.schema_version})",
        f"size on disk: {_size(stats.size_bytes)}",
        f"calls: {stats.calls}, cache hits: {stats.hits}",
        f"message texts: {stats.prompts} distinct, {_size(stats.prompt_bytes)}",
    ]
    if stats.oldest is not None:
        lines.append(f"stored: {stats.oldest} to {stats.newest}")
    for title, counts in (("model", stats.by_model), ("metric", stats.by_metric)):
        if not counts:
            continue
        lines += [f"per {title}:", f"  {'calls':>7} {'hits':>7}  {title}"]
        for c in counts:
            name = c.name if c.name is not None else "(not recorded: stored before schema 4)"
            sha = f" {c.sha256[:12]}" if c.sha256 else ""
            lines.append(f"  {c.calls:>7} {c.hits:>7}  {name}{sha}")
    click.echo("\n".join(lines))


@cache_group.command("ls")
@_cache_option
@_filter_options
@click.option(
    "--limit", type=click.IntRange(min=1), default=20, show_default=True, help="Calls to list."
)
def ls_command(
    cache_path: Path | None, model: str | None, metric: str | None, item: str | None, limit: int
) -> None:
    """List the most recent calls, newest first."""
    from localjudge.judge.cache import CallFilter, iter_calls  # noqa: PLC0415

    where = CallFilter(model=model, metric=metric, item=item)
    calls = list(iter_calls(_path(cache_path), where, limit=limit))
    if calls:
        click.echo(calls_table(calls))


def calls_table(calls: Sequence[Any]) -> str:
    """Stored calls (:class:`~localjudge.judge.cache.calllog.LoggedCall`) as an aligned text
    table."""
    header = ("stored", "model", "metric", "item", "schema", "tokens", "seconds", "hits", "output")
    rows = [header]
    for c in calls:
        output = " ".join(c.raw_output.split())
        if len(output) > OUTPUT_CHARS:
            output = output[: OUTPUT_CHARS - 3] + "..."
        tokens = f"{c.prompt_tokens}+{c.completion_tokens}" if c.prompt_tokens is not None else "-"
        rows.append(
            (
                c.created_at or "-",
                c.model or "-",
                c.metric or "-",
                c.item_id or "-",
                c.schema or "-",
                tokens,
                f"{c.seconds:.2f}" if c.seconds is not None else "-",
                str(c.hits),
                output,
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(header) - 1)]
    return "\n".join(
        "  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=False)) + "  " + r[-1]
        for r in rows
    )


@cache_group.command("export")
@click.argument("dest", type=click.Path(path_type=Path, dir_okay=False, allow_dash=True))
@_cache_option
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["jsonl", "csv"]),
    default=None,
    help="File format (default: from DEST's extension; needed for - (stdout)).",
)
@_filter_options
def export_command(  # noqa: PLR0917 (Click passes every option as an argument)
    dest: Path,
    cache_path: Path | None,
    fmt: str | None,
    model: str | None,
    metric: str | None,
    item: str | None,
) -> None:
    """Write every call (or those the filters match), oldest first, to DEST as JSONL or CSV: one
    row per call with its messages and raw output."""
    from localjudge.errors import UsageError  # noqa: PLC0415
    from localjudge.judge.cache import (  # noqa: PLC0415
        CallFilter,
        export_calls,
        iter_calls,
        write_calls,
    )

    where = CallFilter(model=model, metric=metric, item=item)
    path = _path(cache_path)
    if str(dest) == "-":
        if fmt is None:
            raise UsageError("exporting to - (stdout) needs --format jsonl or csv")
        write_calls(iter_calls(path, where, newest_first=False), sys.stdout, fmt)
        return
    n = export_calls(path, dest, fmt=fmt, where=where)
    click.echo(f"exported {n} calls to {dest}")


@cache_group.command("prune")
@_cache_option
@click.option(
    "--older-than",
    "older_than",
    default=None,
    metavar="AGE",
    help="Delete calls stored longer ago than AGE: 30d, 12h, 90m, 2w.",
)
@click.option(
    "--model",
    default=None,
    metavar="ALIAS|SHA",
    help="Delete calls of this model (alias, or 8+ leading hex digits of its sha256).",
)
@click.option("--dry-run", is_flag=True, help="Only say how many calls would be deleted.")
def prune_command(
    cache_path: Path | None, older_than: str | None, model: str | None, dry_run: bool
) -> None:
    """Delete old calls, or one model's calls (both options: calls that match both)."""
    from localjudge.errors import UsageError  # noqa: PLC0415
    from localjudge.judge.cache import (  # noqa: PLC0415
        Cache,
        CallFilter,
        count_calls,
        parse_age,
    )

    if older_than is None and model is None:
        raise UsageError("prune needs --older-than AGE or --model ALIAS|SHA", hint="or use clear")
    before = datetime.now(timezone.utc) - parse_age(older_than) if older_than else None
    path = _path(cache_path)
    if dry_run or not path.is_file():
        n = count_calls(path, CallFilter(model=model, before=before))
        click.echo(f"would delete {n} calls from {path}" if dry_run else f"no cache at {path}")
        return
    with Cache(path) as cache:
        n = cache.prune(older_than=before, model=model)
        if n:
            cache.vacuum()
        left = len(cache)
    click.echo(f"deleted {n} calls from {path} ({left} left)")


@cache_group.command("clear")
@_cache_option
@click.option("-y", "--yes", is_flag=True, help="Do not ask for confirmation.")
def clear_command(cache_path: Path | None, yes: bool) -> None:
    """Delete every call in the cache, and the instructions stored beside it (asks first
    unless --yes)."""
    from localjudge.judge.cache import (  # noqa: PLC0415
        Cache,
        count_calls,
    )
    from localjudge.judge.engine import PREFIX_DIR  # noqa: PLC0415

    path = _path(cache_path)
    if not path.is_file():
        click.echo(f"no cache at {path}; nothing to clear")
        return
    if not yes:
        click.confirm(f"delete all {count_calls(path)} calls in {path}?", abort=True)
    with Cache(path) as cache:
        n = cache.clear()
        cache.vacuum()
    stored = list((path.parent / PREFIX_DIR).glob("*.kv"))
    for prefix in stored:
        prefix.unlink(missing_ok=True)
    also = f" and {len(stored)} stored instruction prefixes" if stored else ""
    click.echo(f"deleted {n} calls from {path}{also}")


def _size(n: int) -> str:
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")  # pragma: no cover
