"""``localjudge eval``: score a data file and write the run's files, its JUnit XML and report.

The command runs the judge in a supervised child process (:mod:`localjudge.judge.isolation`;
``LOCALJUDGE_IN_PROCESS=1`` or a judge factory in Click's context object runs it here), draws
progress on a terminal, prints the summary table and exits with the run's code
(:mod:`localjudge.cli.exits`). The run itself is :func:`localjudge.run.evaluate.file_run.eval_file`.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from localjudge.cli import progress as drawn
from localjudge.cli.config import ConfiguredCommand
from localjudge.cli.exits import EXIT_INTERRUPTED, EXIT_OK, EXIT_THRESHOLD, guarded
from localjudge.cli.html_out import write_html
from localjudge.cli.options import (
    JudgeArgs,
    RunArgs,
    judge_factory,
    judge_options,
    parse_thresholds,
    run_options,
)
from localjudge.cli.progress import progress_bar
from localjudge.cli.ray_options import RayArgs, ray_options
from localjudge.errors import (
    LocalJudgeError,
    UsageError,
    internal_error,
)

if TYPE_CHECKING:
    from localjudge.cluster import RayConfig
    from localjudge.decisions import Cutoffs
    from localjudge.judge.protocol import Judge
    from localjudge.run.options import EvalOptions
    from localjudge.run.settings import JudgeSettings

    #: opens a judge from its settings (a test's, or the real one)
    JudgeFactory = Callable[[JudgeSettings], Judge]


@click.command("eval", cls=ConfiguredCommand)
@click.argument("data", type=click.Path(path_type=Path))
@click.option(
    "-m",
    "--model",
    default=None,
    help="GGUF path, registered alias, or store name: ollama:NAME[:TAG], "
    "hf:ORG/REPO/FILE.gguf[@REV], lmstudio:PUBLISHER/REPO/FILE.gguf (default: "
    "qwen2.5-coder-1.5b).",
)
@click.option(
    "-o",
    "--out",
    "out_dir",
    type=click.Path(path_type=Path),
    default=Path("localjudge-out"),
    show_default=True,
    help="Output folder (created if needed) for results.jsonl, summary.json and, with --html, "
    "report.html.",
)
@click.option(
    "--fail-under",
    multiple=True,
    metavar="METRIC=VALUE",
    help="Exit with code 1 when the metric's mean is below VALUE (repeatable).",
)
@click.option(
    "--max-failure-rate",
    type=click.FloatRange(0.0, 1.0),
    default=None,
    metavar="X",
    help="Exit with code 1 when more than this share of a metric's items failed (0 to 1).",
)
@click.option(
    "--map",
    "maps",
    multiple=True,
    metavar="FIELD=COLUMN",
    help="Read FIELD from another column, e.g. --map user_input=question (repeatable).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["jsonl", "json", "csv", "parquet", "hf"]),
    default=None,
    help="Data format (default: from the file extension; a folder is a Hugging Face "
    "save_to_disk folder, hf).",
)
@click.option(
    "--labels",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="A small labelled file (bench's format), judged too: the summary adds each metric's "
    "human-scale mean corrected by it, with an interval (prediction-powered inference). Use "
    "labels the judge's cut-offs were not fitted on: on the file you calibrated on, agreement "
    "is in-sample (a warning says so).",
)
@click.option(
    "--isotonic",
    is_flag=True,
    help="With --labels: map each row's score to the human scale by an isotonic fit on the "
    "--labels items; adds calibrated_score (score is kept).",
)
@click.option(
    "--raw-output",
    is_flag=True,
    help="Add each row's raw judge output (the JSON text the model wrote) as raw_output.",
)
@click.option(
    "--junit",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    metavar="PATH",
    help="Also write JUnit XML for CI: a suite per metric, a case per item (failed below the "
    "metric's --fail-under, errored when the item failed). Written on exit 1 and on Ctrl-C too.",
)
@judge_options
@ray_options
@run_options
@click.option("-q", "--quiet", is_flag=True, help="No progress bar and no summary table.")
@click.pass_context
@guarded
def eval_command(ctx: click.Context, /, **params: Any) -> None:
    """Score DATA (JSONL, JSON, CSV, Parquet, or a Hugging Face save_to_disk folder) and write
    OUT/results.jsonl and OUT/summary.json."""
    factory = judge_factory(ctx)
    args = EvalArgs(**params)
    ray = args.ray_config(ctx.find_root().obj)
    call = EvalCall(args, args.options(ray), ray)
    from localjudge.judge.isolation import IN_PROCESS_ENV, run_in_child  # noqa: PLC0415

    in_process = factory is not None or (ray is not None and ray.worker is not None)
    if in_process or os.environ.get(IN_PROCESS_ENV) == "1":
        _eval_run(call, factory, None)
        return

    partial = args.out_dir / "results.jsonl.partial"
    code = run_in_child(_eval_child, call, resume_hint=f"{partial} and the judge-call cache")
    if code > 128 and code != EXIT_INTERRUPTED and args.junit is not None:
        junit_after_crash(args.junit, code)
    sys.exit(code)


@dataclass(frozen=True, kw_only=True)
class EvalArgs(RunArgs, RayArgs, JudgeArgs):
    """``eval``'s command line (and ``localjudge.toml``), as Click passes it, built once."""

    data: Path
    model: str | None
    out_dir: Path
    fail_under: tuple[str, ...]
    max_failure_rate: float | None
    maps: tuple[str, ...]
    fmt: str | None
    labels: Path | None
    isotonic: bool
    raw_output: bool
    junit: Path | None
    quiet: bool

    def options(self, ray: RayConfig | None) -> EvalOptions:
        """The library's options for this run (checked as they are built)."""
        from localjudge.data.readers import parse_mapping  # noqa: PLC0415 (keep --help fast)
        from localjudge.run.options import CHUNK_SIZE, EvalOptions  # noqa: PLC0415

        mapping = parse_mapping(self.maps)
        thresholds = parse_thresholds(self.fail_under)
        return EvalOptions(
            mapping=mapping,
            fmt=self.fmt,
            limit=self.limit,
            truncate=self.truncate,
            labels=self.labels,
            isotonic=self.isotonic,
            raw_output=self.raw_output,
            overwrite=self.overwrite,
            fail_under=thresholds,
            max_failure_rate=self.max_failure_rate,
            settings=self.judge_settings(self.model).recorded(),
            chunk_size=ray.chunk_size if ray is not None else CHUNK_SIZE,
        )


@dataclass(frozen=True)
class EvalCall:
    """What the judge's process runs: the command line, the options built from it once, and
    the Ray cluster to judge on (picklable: it crosses into the child)."""

    args: EvalArgs
    options: EvalOptions
    ray: RayConfig | None


def junit_after_crash(path: Path, code: int) -> None:
    """The judge process died by a signal before it could write its JUnit file: write one that
    says so, so that CI never reads an older run's report as this one's."""
    from localjudge.run.report.junit import junit_xml, write_junit  # noqa: PLC0415

    why = f"the judge process died with exit {code} (signal {code - 128}); see the error line"
    with contextlib.suppress(OSError):  # the crash line already said what matters
        write_junit(path, junit_xml([], stopped=why, properties={"complete": False}))


def _eval_child(call: EvalCall, reporter: Any) -> None:
    """``eval`` in the judge's child process (see :mod:`localjudge.judge.isolation`)."""
    guarded(_eval_run)(call, None, reporter)


def _eval_run(call: EvalCall, factory: JudgeFactory | None, reporter: Any) -> None:
    from localjudge.run.evaluate.file_run import open_run  # noqa: PLC0415 (keep --help fast)
    from localjudge.run.options import Hooks  # noqa: PLC0415
    from localjudge.run.settings import build_metrics  # noqa: PLC0415
    from localjudge.run.summary import summary_table  # noqa: PLC0415

    args, options = call.args, call.options
    progress = not args.quiet and drawn.on_terminal()
    # the data (and labels) opened once and the output locked once, before the judge loads: an
    # unreadable file or a second run into OUT is refused at once
    with open_run(args.data, args.out_dir, options) as run:
        found = run.survey() if progress or not args.metric_names else None
        names = list(args.metric_names) or (found.metrics if found else [])
        if not names:
            raise UsageError(
                f"no metric applies to {args.data}: records need user_input and "
                "retrieved_contexts, plus reference (recall) or response (relevance)",
                hint="name fields with --map, e.g. --map user_input=question",
            )
        opened = _open(
            args.judge_settings(args.model),
            call.ray,
            factory,
            quiet=args.quiet,
            protocol=args.protocol,
        )
        metrics = build_metrics(names, args.metric_settings())
        total = found.n_records if found and progress else None
        junit = None
        if args.junit is not None:
            run_metrics = [m.name for m in metrics]
            junit = _junit_report(args.junit, args, options, opened.judge, run_metrics)
        with (
            progress_bar(total, len(metrics), reporter) as on_progress,
            _stopping(junit),
        ):
            hooks = Hooks(
                on_result=_each(on_progress, junit_row(junit, opened.judge) if junit else None),
                on_judging=reporter.judging if reporter is not None else None,
            )
            outcome = run.score(
                judge=opened.judge, metrics=metrics, cutoffs=opened.cutoffs, hooks=hooks
            )
        report = write_html(args.out_dir, args.data) if args.html else None
        if junit is not None:
            run_info = outcome.summary["run"]
            junit.write(
                complete=True,
                data_sha256=run_info["data_sha256"],
                n_items=run_info["n_items"],
                judge_calls=run_info["judge_calls"],
                cache_hits=run_info["cache_hits"],
                failed_thresholds=outcome.failed_thresholds,
            )
    if not args.quiet:
        click.echo(summary_table(outcome.summary, terminal=sys.stdout.isatty()))
        click.echo(f"results: {outcome.results_path}\nsummary: {outcome.summary_path}")
        if report is not None:
            click.echo(f"report: {report}")
        if junit is not None:
            click.echo(f"junit: {junit.path}")
    _warn(outcome)
    sys.exit(EXIT_THRESHOLD if outcome.failed_thresholds else EXIT_OK)


@dataclass(frozen=True)
class OpenJudge:
    """The run's judge and the cut-offs it decides with (resolved once, for the whole run)."""

    judge: Judge
    cutoffs: Cutoffs


def _open(
    settings: JudgeSettings,
    ray: RayConfig | None,
    factory: JudgeFactory | None,
    *,
    quiet: bool,
    protocol: str,
) -> OpenJudge:
    """The run's judge (a Ray pool, a test's factory, or loaded here) and its cut-offs for
    asks laid out by ``protocol`` (read once, for the whole run), with one line on stderr (not
    with -q) when it has no fitted cut-offs or combinations of its own under that protocol."""
    from localjudge.run.settings import (  # noqa: PLC0415
        neutral_cutoffs_note,
        open_judge,
        other_protocol_note,
        resolve_cutoffs,
    )

    judge = ray.open(settings) if ray is not None else (factory or open_judge)(settings)
    cutoffs = resolve_cutoffs(judge, protocol=protocol)
    note = other_protocol_note(judge, protocol, settings.name) or neutral_cutoffs_note(
        judge, cutoffs, settings.name
    )
    if not quiet and note:
        click.echo(f"localjudge: note: {note}", err=True)
    return OpenJudge(judge, cutoffs)


def _warn(outcome: Any) -> None:
    """The run's warnings and missed thresholds, on stderr (also with -q)."""
    for line in outcome.warnings:
        click.echo(f"localjudge: warning: {line}", err=True)
    for line in outcome.failed_thresholds:
        click.echo(f"localjudge: below threshold: {line}", err=True)


def _junit_report(
    path: Path, args: EvalArgs, options: EvalOptions, judge: Judge, metrics: list[str]
) -> Any:
    from localjudge.run.report.junit import JUnitReport  # noqa: PLC0415
    from localjudge.versions import versions  # noqa: PLC0415

    identity = judge.identity
    recorded = {
        "data": str(args.data),
        "limit": options.limit,
        "truncate": options.truncate,
        "scale": args.scale,
        "reasons": args.reasons,
        "map": options.mapping,
        "format": options.fmt,
        "max_failure_rate": options.max_failure_rate,
        **options.settings,
    }
    properties = {
        "model": identity.model,
        "model_sha256": identity.sha256,
        "backend": identity.backend,
        "judge_settings": dict(identity.settings),
        "run_settings": recorded,
        "versions": versions(),
        "complete": False,
    }
    return JUnitReport(path, metrics, dict(options.fail_under), properties)


def junit_row(junit: Any, judge: Any) -> Callable[[Any], None]:
    """An ``on_result`` that hands each finished item to the JUnit report."""
    from localjudge.run.results import result_row  # noqa: PLC0415

    identity = judge.identity
    return lambda res: junit.add(result_row(res, identity, {}))


def _each(*callbacks: Callable[[Any], None] | None) -> Callable[[Any], None] | None:
    """One callback that calls every given one in turn (None when none is given)."""
    given = [c for c in callbacks if c is not None]
    if not given:
        return None

    def call(value: Any) -> None:
        for callback in given:
            callback(value)

    return call


@contextlib.contextmanager
def _stopping(junit: Any) -> Iterator[None]:
    """When the run stops early, write the JUnit report of the items finished so far, with a
    case that says why (the stop itself propagates as it was)."""
    try:
        yield
    except BaseException as exc:
        if junit is not None:
            why = (
                "interrupted"
                if isinstance(exc, KeyboardInterrupt)
                else exc.message
                if isinstance(exc, LocalJudgeError)
                else internal_error(exc).message
            )
            with contextlib.suppress(Exception):  # never hide why the run stopped
                junit.write(stopped=f"the run stopped before its end: {why}")
        raise
