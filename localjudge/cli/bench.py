"""``localjudge bench``: run judges on labelled data and print how each agrees with the labels.

A client of :func:`localjudge.run.bench.runner.bench_file` (which runs each judge in its own
supervised process) with the options shared with ``eval`` (:mod:`localjudge.cli.options`).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from localjudge.cli import progress as drawn
from localjudge.cli.config import ConfiguredCommand
from localjudge.cli.exits import guarded
from localjudge.cli.html_out import write_html
from localjudge.cli.options import JudgeArgs, RunArgs, judge_factory, judge_options, run_options
from localjudge.cli.ray_options import RayArgs, ray_options
from localjudge.errors import (
    UsageError,
)

if TYPE_CHECKING:
    from localjudge.cluster import RayConfig
    from localjudge.run.options import BenchOptions


@click.command("bench", cls=ConfiguredCommand)
@click.argument("data", type=click.Path(path_type=Path))
@click.option(
    "-m",
    "--model",
    "models",
    multiple=True,
    help="Judge to compare: GGUF path, alias or store name such as ollama:qwen2.5:7b (repeat; "
    "default: the default judge).",
)
@click.option(
    "--all-judges",
    is_flag=True,
    help="Compare every registered judge installed here (`localjudge models list`), side by side.",
)
@click.option(
    "-o",
    "--out",
    "out_dir",
    type=click.Path(path_type=Path),
    default=Path("localjudge-bench"),
    show_default=True,
    help="Output folder (created if needed) for bench.json, bench_items.jsonl and each "
    "judge's run.",
)
@judge_options
@ray_options
@run_options
@click.option("-q", "--quiet", is_flag=True, help="No progress bars; print only the table.")
@click.pass_context
@guarded
def bench_command(ctx: click.Context, /, **params: Any) -> None:
    """Benchmark judges against the human labels in DATA (labelled JSONL: docs/data-format.md)."""
    from localjudge.judge.isolation import terminate_as_interrupt  # noqa: PLC0415
    from localjudge.run.bench.runner import bench_file, bench_table  # noqa: PLC0415

    args = BenchArgs(**params)
    progress = not args.quiet and drawn.on_terminal()
    options = args.options(args.ray_config(ctx.find_root().obj), progress=progress)
    models = _installed_judges(args.models) if args.all_judges else args.models

    def announce(name: str) -> None:
        if not args.quiet and not progress:  # a bar names its judge
            click.echo(f"judging with {name} ...", err=True)

    # SIGTERM (timeout, systemd, CI runners) stops a bench as Ctrl-C does, between judges too;
    # while a judge runs, its supervised child gets the signal and keeps what it finished
    with terminate_as_interrupt():
        outcome = bench_file(
            args.data,
            args.out_dir,
            judges=[args.judge_settings(m) for m in (models or (None,))],
            options=options,
            open_judge=judge_factory(ctx),
            on_judge=announce,
        )
    click.echo(bench_table(outcome.report, terminal=sys.stdout.isatty()))
    report = write_html(args.out_dir, None) if args.html else None
    if not args.quiet:
        click.echo(f"bench: {outcome.bench_path}\nitems: {outcome.items_path}")
        if report is not None:
            click.echo(f"report: {report}")


@dataclass(frozen=True, kw_only=True)
class BenchArgs(RunArgs, RayArgs, JudgeArgs):
    """``bench``'s command line (and ``localjudge.toml``), as Click passes it, built once."""

    data: Path
    models: tuple[str, ...]
    all_judges: bool
    out_dir: Path
    quiet: bool

    def options(self, ray: RayConfig | None, *, progress: bool) -> BenchOptions:
        """The library's options for this bench (``limit``, ``truncate`` and ``overwrite``
        are those of each judge's eval run)."""
        from localjudge.run.options import BenchOptions  # noqa: PLC0415

        return BenchOptions(
            metrics=list(self.metric_names) or None,
            metric_settings=self.metric_settings(),
            limit=self.limit,
            truncate=self.truncate,
            overwrite=self.overwrite,
            ray=ray,
            progress=progress,
        )


def _installed_judges(named: Sequence[str]) -> tuple[str, ...]:
    """The aliases of every registered judge whose file (or chunk packages) is installed."""
    from localjudge.judge.models import list_models  # noqa: PLC0415

    if named:
        raise UsageError("give -m/--model or --all-judges, not both")
    found = tuple(status.judge.alias for status in list_models() if status.present)
    if not found:
        raise UsageError("no registered judge is installed", hint="see `localjudge models list`")
    return found
