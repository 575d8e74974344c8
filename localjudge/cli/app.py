"""The ``localjudge`` command group: a thin client of the library.

Each command parses its options, calls one library function, prints, and maps errors to exit
codes (README, "Exit codes"; :mod:`localjudge.cli.common`). This module holds the root group
with ``report`` and ``doctor`` and registers the commands kept in modules of their own: ``eval``
(:mod:`localjudge.cli.eval`), ``bench``, ``models``, ``cache`` and ``diff``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from localjudge.cli.bench import bench_command
from localjudge.cli.cache import cache_group
from localjudge.cli.calibrate import calibrate_command
from localjudge.cli.common import (
    EXIT_DOCTOR,
    EXIT_OK,
    exit_codes,
    guarded,
)
from localjudge.cli.diff import diff_command
from localjudge.cli.eval import eval_command
from localjudge.cli.models import models_group
from localjudge.versions import DISTRIBUTION


class _Main(click.Group):
    """The command group; an error raised anywhere below it (option parsing included) is one
    line and an exit code, never a traceback."""

    def invoke(self, ctx: click.Context) -> Any:
        with exit_codes():
            return super().invoke(ctx)


@click.group(cls=_Main, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name=DISTRIBUTION)
def main() -> None:
    """Offline RAG evaluation with a local GGUF judge (context recall, position, relevance)."""


@main.command("report")
@click.argument("out_dir", type=click.Path(path_type=Path))
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path),
    default=None,
    help="HTML file to write (default: OUT_DIR/report.html).",
)
@click.option(
    "--data",
    type=click.Path(path_type=Path),
    default=None,
    help="The run's data file, to show contexts (default: the path the run recorded, "
    "if its sha256 still matches).",
)
@guarded
def report_command(out_dir: Path, output: Path | None, data: Path | None) -> None:
    """Render an eval or bench run in OUT_DIR as one self-contained, offline HTML file."""
    from localjudge.run.report.render import write_report  # noqa: PLC0415

    click.echo(str(write_report(out_dir, output, data=data)))


@main.command("doctor")
@click.option(
    "-m",
    "--model",
    default=None,
    help="GGUF path, registered alias, or store name: ollama:NAME[:TAG], "
    "hf:ORG/REPO/FILE.gguf[@REV], lmstudio:PUBLISHER/REPO/FILE.gguf (default: "
    "qwen2.5-coder-1.5b).",
)
@click.option("--no-call", is_flag=True, help="Skip the real judge call (the slowest check).")
def doctor_command(model: str | None, no_call: bool) -> None:
    """Check whether this machine can judge: packages, llama.cpp, the judge file, the cache and
    one real constrained judge call. Exit 0 when all is well, 1 when a check failed."""
    from localjudge.doctor import report, run_checks  # noqa: PLC0415

    healthy = report(run_checks(model, probe=not no_call), click.echo)
    sys.exit(EXIT_OK if healthy else EXIT_DOCTOR)


# commands kept in modules of their own; `main` maps their errors to exit codes as it does for
# every command (_Main.invoke)
for _command in (
    eval_command,
    bench_command,
    calibrate_command,
    models_group,
    cache_group,
    diff_command,
):
    main.add_command(_command)
