"""``localjudge calibrate``: fit a judge's cut-offs on a labelled file and store them.

A client of :func:`localjudge.run.calibrate.calibration.calibrate`; the stored cut-offs go into
the user registry for the judge's file (:func:`localjudge.decisions.store_cutoffs`), where
``eval`` and ``bench`` find them. Its options come from a config file and the environment as
``eval``'s and ``bench``'s do (:mod:`localjudge.cli.config`: the top level, then a
``[calibrate]`` table, then ``LOCALJUDGE_CALIBRATE_<OPTION>``, then the command line).
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from localjudge.cli.config import ConfiguredCommand
from localjudge.cli.exits import guarded
from localjudge.cli.options import JudgeArgs, judge_factory, judge_options
from localjudge.decisions import Provenance
from localjudge.errors import DataError, UsageError


@click.command("calibrate", cls=ConfiguredCommand)
@click.argument(
    "labels", type=click.Path(path_type=Path, exists=True, dir_okay=False), required=False
)
@click.option(
    "-m",
    "--model",
    default=None,
    help="Judge: GGUF path, alias or store name such as ollama:qwen2.5:7b (default: the "
    "default judge).",
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
@click.option(
    "--store-anyway",
    is_flag=True,
    help="Store every fitted kind, also those whose held-out gain the rule does not confirm "
    "or that lose an obvious item.",
)
@click.option(
    "--reset",
    is_flag=True,
    help="Remove the cut-offs calibrate stored for the judge (with --metric: those metrics' "
    "kinds), so the shipped ones apply again; LABELS is not read.",
)
@judge_options
@click.pass_context
@guarded
def calibrate_command(ctx: click.Context, /, **params: Any) -> None:
    """Fit the judge's cut-offs on LABELS (labelled JSONL, bench's format), print agreement
    before and after on the half of the file held back from each fit (two ways round, with
    95% bootstrap intervals), and store for that judge the cut-offs fitted on the whole file
    of each kind whose held-out gain over the cut-offs in use now is confirmed (the paired
    difference's lower 95% bound above 0; --store-anyway stores every kind). Where a kind's
    verdicts carry two readings (its call's own value and how well the passage predicts the
    question), their fitted combination is checked and stored under the same rule (never
    forced). Agreement measured later on LABELS itself is in-sample. --reset restores the
    shipped cut-offs.

    Before anything is stored, each kind's fit is tried on the bundled obvious items (an
    answer passage and one about something else, in ten languages and several kinds of
    text): a fit that gets one of them wrong that the cut-offs in use now get right is
    reported and not stored (--store-anyway stores it).

    Every label is checked before the judge loads; a value is refused (exit 2), never
    coerced. Accepted: recall a number in [0, 1] (only 0 and 1 are fitted on; the shares
    between are left out and counted); relevant and used true/false or 1/0, one per context
    piece; levels high/medium/low/none or TREC's 3/2/1/0, one per context piece.

    The halves are halves of groups: an item's source.qid, else its top-level group field,
    else its question (the items with one user_input are one group). A kind with fewer than
    4 groups is not fitted; the output says how the items were grouped."""
    from localjudge.canonical import file_sha256  # noqa: PLC0415
    from localjudge.data.readers import read_records  # noqa: PLC0415
    from localjudge.decisions import store_cutoffs  # noqa: PLC0415
    from localjudge.judge.models import user_registry_path  # noqa: PLC0415
    from localjudge.run.calibrate.calibration import calibrate, check_labels  # noqa: PLC0415
    from localjudge.run.calibrate.table import IN_SAMPLE, calibration_table  # noqa: PLC0415
    from localjudge.run.settings import open_judge  # noqa: PLC0415

    args = CalibrateArgs(**params)
    if args.reset:
        _reset(ctx, args)
        return
    labels, limit, store_anyway = args.labels, args.limit, args.store_anyway
    if labels is None:
        raise UsageError("calibrate needs LABELS (or --reset)")
    records: list[Mapping[str, Any]] = []
    lines: list[int | None] = []
    for record in read_records(labels):
        if record.data is None:
            raise DataError(f"{labels}: line {record.line}: {record.error}")
        records.append(record.data)
        lines.append(record.line)
        if limit is not None and len(records) >= limit:
            break
    metrics = list(args.metric_names) or None
    # every label checked before the judge loads: a refused one costs no model load
    check_labels(records, metrics, lines=lines, path=str(labels))
    factory = judge_factory(ctx) or open_judge
    judge = factory(args.judge_settings(args.model))
    origin = Provenance(
        "calibrate", labels.name, file_sha256(labels), datetime.date.today().isoformat()
    )
    found = calibrate(records, judge, metrics=metrics, origin=origin)
    click.echo(calibration_table(found, force=store_anyway))
    chosen = found.stored(force=store_anyway)
    for kind in found.kept():
        if kind not in chosen.values:
            click.echo(f"kept: {kind}: the held-out gain is not confirmed; the value in use stays")
    if chosen:
        chosen = _obvious(judge, found.now, chosen, store_anyway=store_anyway)
    if args.dry_run or not chosen:
        click.echo("nothing stored" + (" (--dry-run)" if args.dry_run else ""))
        return
    store_cutoffs(judge.identity.sha256, chosen)
    kinds = ", ".join(sorted(chosen.values))
    click.echo(f"stored {kinds} for {judge.identity.model} in {user_registry_path()}")
    click.echo(f"note: {IN_SAMPLE}")


def _obvious(judge: Any, now: Any, chosen: Any, *, store_anyway: bool) -> Any:
    """``chosen`` less the kinds whose fit loses an obvious item that ``now`` gets right (all
    of them with ``store_anyway``), each kind's check printed."""
    from localjudge.decisions import lost  # noqa: PLC0415
    from localjudge.run.calibrate.contrast_items import contrast_check  # noqa: PLC0415

    kinds = set(chosen.kinds)
    fitted = contrast_check(judge, now.merged(chosen), kinds)
    before = contrast_check(judge, now, kinds)
    keep = set()
    for kind in sorted(kinds):
        worse = lost(fitted, before, kind)
        click.echo(f"obvious: {kind}: {fitted.line(kind)}; in use now: {before.line(kind)}")
        if worse and not store_anyway:
            what = "; ".join(d.describe() for d in worse[:3])
            click.echo(f"not stored: {kind}: the fit loses {len(worse)} obvious item(s): {what}")
            continue
        keep.add(kind)
    return chosen.only(keep)


@dataclass(frozen=True, kw_only=True)
class CalibrateArgs(JudgeArgs):
    """``calibrate``'s command line (and ``localjudge.toml``), as Click passes it, built once:
    the judge options, ``--metric`` and ``--limit`` are ``eval``'s and ``bench``'s."""

    labels: Path | None
    model: str | None
    metric_names: tuple[str, ...]
    limit: int | None
    dry_run: bool
    store_anyway: bool
    reset: bool


def _reset(ctx: click.Context, args: CalibrateArgs) -> None:
    """Remove the user's cut-offs of the judge's file (found without loading it): the shipped
    ones apply again."""
    from localjudge.decisions import kinds_of, reset_cutoffs  # noqa: PLC0415
    from localjudge.judge.models import model_sha256, resolve_model  # noqa: PLC0415

    factory = judge_factory(ctx)
    if factory is not None:  # an embedding program's (or a test's) judge
        identity = factory(args.judge_settings(args.model)).identity
        sha256, name = identity.sha256, identity.model
    else:
        resolved = resolve_model(args.model)
        sha256 = resolved.expected_sha256 or model_sha256(resolved.path)
        name = resolved.alias or resolved.path.name
    kinds = set(kinds_of(args.metric_names)) if args.metric_names else None
    removed = reset_cutoffs(sha256, kinds)
    if removed:
        click.echo(f"removed {', '.join(removed)} for {name}: the shipped cut-offs apply")
    else:
        click.echo(f"no stored cut-offs of {name} to remove: the shipped ones apply")
