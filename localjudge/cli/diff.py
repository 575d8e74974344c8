"""``localjudge diff RUN_A RUN_B``: the command around :mod:`localjudge.run.report.diff`
(registered in :mod:`localjudge.cli`, which maps its errors to exit codes).

The files it writes take a path each, named ``--json-out`` and ``--html-out`` (``--json`` and
``--html`` are flags elsewhere).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

#: a file diff writes (the parent folder is created)
_FILE = click.Path(path_type=Path, dir_okay=False)


@click.command("diff")
@click.argument("run_a", type=click.Path(path_type=Path))
@click.argument("run_b", type=click.Path(path_type=Path))
@click.option(
    "--by-id",
    "by_id",
    is_flag=True,
    help="Compare runs of different data: match items by id, and list the items only one run has.",
)
@click.option(
    "--top",
    type=click.IntRange(min=0),
    default=10,
    show_default=True,
    help="Largest score changes listed per metric.",
)
@click.option(
    "--json-out",
    "json_path",
    type=_FILE,
    default=None,
    metavar="PATH",
    help="Also write the diff as JSON to this file.",
)
@click.option(
    "--html-out",
    "html_path",
    type=_FILE,
    default=None,
    metavar="PATH",
    help="Also write the diff as one offline HTML page to this file.",
)
def diff_command(  # noqa: PLR0917 (Click passes every option as an argument)
    run_a: Path,
    run_b: Path,
    by_id: bool,
    top: int,
    json_path: Path | None,
    html_path: Path | None,
) -> None:
    """What changed from eval run RUN_A to RUN_B (two -o directories of the same data): per
    metric the mean difference B - A with a paired 95% CI and a Wilcoxon test, and the items
    that changed most, with both reasons."""
    from localjudge.console import render  # noqa: PLC0415 (keep --help fast)
    from localjudge.run.report.diff import diff_runs, load_run  # noqa: PLC0415
    from localjudge.run.report.diff_console import (  # noqa: PLC0415
        diff_close_line,
        diff_notes,
        diff_tables,
    )

    diff = diff_runs(load_run(run_a), load_run(run_b), force=by_id, top=top)
    click.echo(f"A: {run_a}\nB: {run_b}")
    for line in diff_notes(diff):
        click.echo(f"note: {line}")
    click.echo(render(diff_tables(diff), terminal=sys.stdout.isatty()))
    if (close := diff_close_line(diff)) is not None:
        click.echo(close)
    if json_path is not None:
        json_path.parent.mkdir(parents=True, exist_ok=True)
        json_path.write_text(
            json.dumps(diff, indent=2, ensure_ascii=False, allow_nan=False) + "\n", "utf-8"
        )
        click.echo(f"json: {json_path}")
    if html_path is not None:
        from localjudge.run.report.render import render_diff  # noqa: PLC0415

        html_path.parent.mkdir(parents=True, exist_ok=True)
        html_path.write_text(render_diff(diff), "utf-8")
        click.echo(f"html: {html_path}")
