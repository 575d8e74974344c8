"""``localjudge calibrate``: fit a judge's cut-offs on a labelled file and store them.

A client of :func:`localjudge.run.calibrate.calibrate`; the stored cut-offs go into the user
registry for the judge's file (:func:`localjudge.judge.cutoffs_store.store_cutoffs`), where
``eval`` and ``bench`` find them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from localjudge.cli.common import guarded, judge_factory, judge_options, judge_settings
from localjudge.errors import DataError


@click.command("calibrate")
@click.argument("labels", type=click.Path(path_type=Path, exists=True, dir_okay=False))
@click.option(
    "-m", "--model", default=None, help="Judge: GGUF path or alias (default: the default judge)."
)
@click.option(
    "--metric",
    "metric_names",
    multiple=True,
    type=click.Choice(["recall", "position", "relevance"]),
    help="Only these metrics' decisions (repeat; default: every one the labels cover).",
)
@click.option("--limit", type=click.IntRange(min=1), default=None, help="Only the first N records.")
@click.option("--dry-run", is_flag=True, help="Print the check and the cut-offs; store nothing.")
@judge_options
@click.pass_context
@guarded
def calibrate_command(  # noqa: PLR0917 (Click passes every option as an argument)
    ctx: click.Context,
    /,
    labels: Path,
    model: str | None,
    metric_names: tuple[str, ...],
    limit: int | None,
    dry_run: bool,
    **options: Any,
) -> None:
    """Fit the judge's cut-offs on LABELS (labelled JSONL, bench's format), print agreement
    before and after on the half of the file held back from each fit (two ways round, with
    95% bootstrap intervals), and store the cut-offs fitted on the whole file for that judge.

    Every label is checked before the judge loads; a value is refused (exit 2), never
    coerced. Accepted: recall a number in [0, 1] (only 0 and 1 are fitted on; the shares
    between are left out and counted); relevant and used true/false or 1/0, one per context
    piece; levels high/medium/low/none or TREC's 3/2/1/0, one per context piece.

    The halves are halves of groups: an item's source.qid, else its top-level group field,
    else its question (the items with one user_input are one group). A kind with fewer than
    4 groups is not fitted; the output says how the items were grouped."""
    from localjudge.data.dataset import read_records  # noqa: PLC0415
    from localjudge.judge.cutoffs_store import store_cutoffs  # noqa: PLC0415
    from localjudge.judge.registry import user_registry_path  # noqa: PLC0415
    from localjudge.run.calibrate import (  # noqa: PLC0415
        calibrate,
        calibration_table,
        check_labels,
    )
    from localjudge.run.settings import open_judge  # noqa: PLC0415

    records, lines = [], []
    for record in read_records(labels):
        if record.data is None:
            raise DataError(f"{labels}: line {record.line}: {record.error}")
        records.append(record.data)
        lines.append(record.line)
        if limit is not None and len(records) >= limit:
            break
    metrics = list(metric_names) or None
    # every label checked before the judge loads: a refused one costs no model load
    check_labels(records, metrics, lines=lines, path=str(labels))
    settings = judge_settings(model, **options)
    factory = judge_factory(ctx) or open_judge
    judge = factory(settings)
    source = f"localjudge calibrate {labels.name} ({len(records)} records)"
    found = calibrate(records, judge, metrics=metrics, source=source)
    click.echo(calibration_table(found))
    if dry_run or not found.cutoffs:
        click.echo("nothing stored" + (" (--dry-run)" if dry_run else ""))
        return
    store_cutoffs(judge.identity.sha256, found.cutoffs)
    click.echo(f"stored for {judge.identity.model} in {user_registry_path()}")
