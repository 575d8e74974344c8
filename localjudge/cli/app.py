"""The ``localjudge`` command: a thin client of the library.

Each command parses its options, calls one library function, prints, and maps errors to exit
codes (README, "Exit codes"). Library errors print as one line; ``LOCALJUDGE_DEBUG=1`` shows the
traceback. Judges come from a factory in Click's context object (``obj={"open_judge": ...}``,
default :func:`localjudge.run.settings.open_judge`), so every command can be driven with a scripted
judge.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import click

from localjudge.cli.cache import cache_group
from localjudge.cli.config import ConfiguredCommand
from localjudge.cli.diff import diff_command
from localjudge.cli.models import models_group
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
from localjudge.metrics import METRICS
from localjudge.versions import DISTRIBUTION

EXIT_OK = 0
EXIT_THRESHOLD = 1
EXIT_DOCTOR = 1
EXIT_USAGE = UsageError.exit_code  # Click's own usage errors exit 2 too
EXIT_CACHE = CacheError.exit_code
EXIT_INTERNAL = InternalError.exit_code
EXIT_INTERRUPTED = 130
#: stdout was closed under us: 128 + SIGPIPE, as a shell reports it
EXIT_PIPE = 141
#: set to show tracebacks instead of one error line
#: the smallest context window -c accepts (0 aside)
MIN_CTX = 256

F = TypeVar("F", bound=Callable[..., Any])


def _fail(exc: LocalJudgeError) -> NoReturn:
    click.echo(f"localjudge: error: {exc.message}", err=True)
    if exc.hint:
        click.echo(f"localjudge: hint: {exc.hint}", err=True)
    sys.exit(exc.exit_code)


@contextlib.contextmanager
def _exit_codes() -> Iterator[None]:
    """Map every error to one readable line and its exit code (README, "Exit codes"); Click's
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


def _guarded(fn: F) -> F:
    """Map library errors to one readable line and their exit code."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with _exit_codes():
            return fn(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


class _Main(click.Group):
    """The command group; an error raised anywhere below it (option parsing included) is one
    line and an exit code, never a traceback."""

    def invoke(self, ctx: click.Context) -> Any:
        with _exit_codes():
            return super().invoke(ctx)


def _parse_thresholds(pairs: Sequence[str]) -> dict[str, float]:
    out: dict[str, float] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        try:
            out[name.strip()] = float(value)
        except ValueError:
            sep = ""
        if not sep:
            raise UsageError(f"--fail-under expects METRIC=VALUE, got {pair!r}")
    return out


def _options(*options: Callable[[F], F]) -> Callable[[F], F]:
    def apply(fn: F) -> F:
        for option in reversed(options):
            fn = option(fn)
        return fn

    return apply


#: what to run and how to score: eval and bench share them
_run_options = _options(
    click.option(
        "--metric",
        "metric_names",
        multiple=True,
        type=click.Choice(list(METRICS)),
        help="Metric to run (repeatable). Default: every metric the data (bench: labels) covers.",
    ),
    click.option(
        "--limit", type=click.IntRange(min=1), default=None, help="Use only the first N records."
    ),
    click.option(
        "--scale",
        type=click.FloatRange(min=0, min_open=True),
        default=1.0,
        show_default=True,
        help="Scale of position and relevance scores.",
    ),
    click.option(
        "--truncate",
        is_flag=True,
        help="Trim the longest contexts of an item too long for the window instead of failing "
        "it (recorded in the result's details.truncated).",
    ),
    click.option(
        "--no-reasons",
        is_flag=True,
        help="The judge decides without writing a reason per verdict (faster; the result's "
        "reason is still built from the verdicts).",
    ),
    click.option(
        "--html", is_flag=True, help="Also write OUT/report.html (see `localjudge report`)."
    ),
    click.option(
        "--overwrite",
        is_flag=True,
        help="Replace a finished run in OUT made from other data or settings (without it such "
        "a run is refused; the same run again is rewritten, an interrupted one resumed).",
    ),
)

#: judging on a Ray cluster (localjudge.cluster): eval and bench share them
_ray_options = _options(
    click.option(
        "--ray",
        "ray_address",
        is_flag=False,
        flag_value="",
        default=None,
        metavar="[ADDRESS]",
        help="Judge on a Ray cluster: ADDRESS (auto, ray://HOST:10001), or alone: $RAY_ADDRESS "
        "or a new local instance. Needs the [ray] extra.",
    ),
    click.option(
        "--ray-actors",
        type=click.IntRange(min=1),
        default=None,
        help="With --ray: judges loaded at once, one per actor (default: one per node).",
    ),
    click.option(
        "--ray-gpus",
        type=click.FloatRange(min=0),
        default=None,
        help="With --ray: GPUs per actor (default: 1 when -ngl offloads explicitly, else 0).",
    ),
)


def _ray_config(options: dict[str, Any], ctx_obj: Any) -> Any:
    """The cluster to judge on, popped from ``options`` (None without --ray)."""
    address = options.pop("ray_address")
    actors, gpus = options.pop("ray_actors"), options.pop("ray_gpus")
    if address is None:
        if actors is not None or gpus is not None:
            raise UsageError("--ray-actors and --ray-gpus need --ray")
        return None
    from localjudge.cluster import RayConfig  # noqa: PLC0415 (ray loads only with --ray)

    worker = ctx_obj.get("ray_worker") if isinstance(ctx_obj, dict) else None
    return RayConfig(address=address or None, actors=actors, num_gpus=gpus, worker=worker)


#: how to load a judge: one set of options for eval and bench (JudgeSettings)
_judge_options = _options(
    click.option(
        "-c",
        "--ctx-size",
        "--n-ctx",
        "n_ctx",
        type=click.IntRange(min=0),
        callback=lambda ctx, param, value: _ctx_size(value),
        default=8192,
        show_default=True,
        help="Context window in tokens; 0: the model's trained context (GGUF metadata).",
    ),
    click.option(
        "-ngl",
        "--gpu-layers",
        "--n-gpu-layers",
        "n_gpu_layers",
        default="auto",
        show_default=True,
        callback=lambda ctx, param, value: _gpu_layers(value),
        metavar="N|all|auto",
        help="Layers to offload to the GPU (all or -1: every layer; auto: all on a GPU build of "
        "llama.cpp, none on a CPU-only one). Offload asked of a CPU-only build is an error.",
    ),
    click.option(
        "-t",
        "--threads",
        type=click.IntRange(min=1),
        default=None,
        help="CPU threads (default: the physical cores this process may use).",
    ),
    click.option(
        "-fa",
        "--flash-attn",
        "flash_attn",
        type=click.Choice(["on", "off", "auto"], case_sensitive=False),
        default="off",
        show_default=True,
        help="llama.cpp's flash attention (auto: where the device supports it). Part of the "
        "judge's identity and cache keys.",
    ),
    click.option(
        "--chat-template-kwargs",
        "chat_template_kwargs",
        default=None,
        metavar="JSON",
        callback=lambda ctx, param, value: _template_kwargs(value),
        help="Extra variables for the chat template, a JSON object, e.g. "
        "'{\"enable_thinking\": false}'. Part of the judge's identity and cache keys.",
    ),
    click.option(
        "-s",
        "--seed",
        type=int,
        default=0,
        show_default=True,
        help="Sampling seed (decoding is greedy).",
    ),
    click.option(
        "--no-chat-template", is_flag=True, help="Prompt without the model's chat template."
    ),
    click.option(
        "--cache",
        "cache_path",
        type=click.Path(path_type=Path),
        default=None,
        help="Cache file or directory (default: user cache dir or $LOCALJUDGE_CACHE_DIR).",
    ),
    click.option("--no-cache", is_flag=True, help="Do not read or write the judge-call cache."),
    click.option(
        "-np",
        "--parallel",
        type=click.IntRange(min=1),
        default=None,
        help="Requests the judge decodes together (default: 1; each holds an -c window).",
    ),
)


def _gpu_layers(value: str) -> int | str:
    text = str(value).strip().lower()
    if text in ("auto", "all"):
        return text
    try:
        layers = int(text)
    except ValueError:
        raise click.BadParameter(f"{value!r} is not auto, all, -1 or a number of layers") from None
    if layers < -1:
        raise click.BadParameter(f"{layers} is below -1 (all layers)")
    return layers


def _template_kwargs(value: str | None) -> dict[str, Any]:
    from localjudge.judge.options import chat_template_kwargs  # noqa: PLC0415

    try:
        return chat_template_kwargs(value, name="the value")
    except UsageError as exc:  # Click names the option and exits 2, before anything runs
        raise click.BadParameter(str(exc)) from None


def _ctx_size(value: int) -> int:
    if 0 < value < MIN_CTX:
        raise click.BadParameter(f"{value} is below {MIN_CTX} (0 means the model's own)")
    return value


def _judge_settings(model: str | None, **options: Any) -> Any:
    from localjudge.run.settings import JudgeSettings  # noqa: PLC0415

    return JudgeSettings(
        model=model,
        n_ctx=options["n_ctx"],
        n_gpu_layers=options["n_gpu_layers"],
        n_threads=options["threads"],
        seed=options["seed"],
        chat_template=False if options["no_chat_template"] else None,
        flash_attn=options["flash_attn"],
        chat_template_kwargs=options["chat_template_kwargs"],
        cache=options["cache_path"],
        use_cache=not options["no_cache"],
        **({"parallel": options["parallel"]} if options["parallel"] is not None else {}),
    )


def _on_terminal() -> bool:
    """Whether stderr, where progress is drawn, is a terminal."""
    return sys.stderr.isatty()


def _factory(ctx: click.Context) -> Callable[[Any], Any] | None:
    """The judge factory given in the context object (None: the real one)."""
    obj = ctx.find_root().obj
    return obj.get("open_judge") if isinstance(obj, dict) else None


@click.group(cls=_Main, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name=DISTRIBUTION)
def main() -> None:
    """Offline RAG evaluation with a local GGUF judge (context recall, position, relevance)."""


@main.command("eval", cls=ConfiguredCommand)
@click.argument("data", type=click.Path(path_type=Path))
@click.option(
    "-m",
    "--model",
    default=None,
    help="GGUF path or registered alias (default: qwen2.5-coder-1.5b).",
)
@click.option(
    "-o",
    "--out",
    "out_dir",
    type=click.Path(path_type=Path),
    default=Path("localjudge-out"),
    show_default=True,
    help="Directory for results.jsonl and summary.json.",
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
    "human-scale mean corrected by it, with an interval (prediction-powered inference).",
)
@click.option(
    "--calibrate",
    is_flag=True,
    help="With --labels: add calibrated_score to each row (judge score mapped to the human "
    "scale by an isotonic fit on the labelled items; score is kept).",
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
@_judge_options
@_ray_options
@_run_options
@click.option("-q", "--quiet", is_flag=True, help="No progress bar and no summary table.")
@click.pass_context
@_guarded
def eval_command(ctx: click.Context, /, **params: Any) -> None:
    """Score DATA (JSONL, JSON, CSV, Parquet, or a Hugging Face save_to_disk folder) and write
    OUT/results.jsonl and OUT/summary.json."""
    factory = _factory(ctx)
    params["ray"] = ray = _ray_config(params, ctx.find_root().obj)
    in_process = factory is not None or (ray is not None and ray.worker is not None)
    if in_process or os.environ.get("LOCALJUDGE_IN_PROCESS") == "1":
        _eval_run(params, factory, None)
        return
    from localjudge.judge.isolation import run_in_child  # noqa: PLC0415

    partial = Path(params["out_dir"]) / "results.jsonl.partial"
    code = run_in_child(_eval_child, params, resume_hint=f"{partial} and the judge-call cache")
    if code > 128 and code != EXIT_INTERRUPTED and params.get("junit") is not None:
        junit_after_crash(params["junit"], code)
    sys.exit(code)


def junit_after_crash(path: Path, code: int) -> None:
    """The judge process died by a signal before it could write its JUnit file: write one that
    says so, so that CI never reads an older run's report as this one's."""
    from localjudge.run.junit import junit_xml, write_junit  # noqa: PLC0415

    why = f"the judge process died with exit {code} (signal {code - 128}); see the error line"
    with contextlib.suppress(OSError):  # the crash line already said what matters
        write_junit(path, junit_xml([], stopped=why, properties={"complete": False}))


def _eval_child(params: dict[str, Any], reporter: Any) -> None:
    """``eval`` in the judge's child process (see :mod:`localjudge.judge.isolation`)."""
    _guarded(_eval_run)(params, None, reporter)


def _eval_run(params: dict[str, Any], factory: Callable[[Any], Any] | None, reporter: Any) -> None:
    from localjudge.data.dataset import parse_mapping  # noqa: PLC0415 (keep --help fast)
    from localjudge.metrics import MetricSettings  # noqa: PLC0415
    from localjudge.run.file_run import eval_file, survey  # noqa: PLC0415
    from localjudge.run.results import output_lock, summary_table  # noqa: PLC0415
    from localjudge.run.settings import build_metrics, open_judge  # noqa: PLC0415

    p = dict(params)
    data: Path = p.pop("data")
    out_dir: Path = p.pop("out_dir")
    fmt, limit, quiet = p.pop("fmt"), p.pop("limit"), p.pop("quiet")
    metric_names: tuple[str, ...] = p.pop("metric_names")
    mapping = parse_mapping(p.pop("maps"))
    thresholds = _parse_thresholds(p.pop("fail_under"))
    max_failure_rate = p.pop("max_failure_rate")
    progress = not quiet and _on_terminal()
    found = (
        survey(data, fmt=fmt, mapping=mapping, limit=limit)
        if progress or not metric_names
        else None
    )
    names = list(metric_names) or (found.metrics if found else [])
    if not names:
        raise UsageError(
            f"no metric applies to {data}: records need user_input and retrieved_contexts, plus "
            "reference (recall) or response (relevance)",
            hint="name fields with --map, e.g. --map user_input=question",
        )
    scale, truncate, no_reasons = p.pop("scale"), p.pop("truncate"), p.pop("no_reasons")
    labels, calibrate, html = p.pop("labels"), p.pop("calibrate"), p.pop("html")
    raw_output = p.pop("raw_output")
    junit_path: Path | None = p.pop("junit")
    overwrite = p.pop("overwrite")
    ray = p.pop("ray")
    with output_lock(out_dir):  # before the judge loads: a second run is refused at once
        settings = _judge_settings(p.pop("model"), **p)
        judge = ray.open(settings) if ray is not None else (factory or open_judge)(settings)
        metrics = build_metrics(names, MetricSettings(scale=scale, reasons=not no_reasons))
        total = found.n_records if found and progress else None
        junit = None
        if junit_path is not None:
            run = {
                "data": str(data),
                "limit": limit,
                "truncate": truncate,
                "scale": scale,
                "reasons": not no_reasons,
                "map": mapping,
                "format": fmt,
                "max_failure_rate": max_failure_rate,
                **settings.recorded(),
            }
            junit = _junit_report(junit_path, judge, [m.name for m in metrics], thresholds, run)
        with (
            _progress(total, len(metrics), reporter) as on_progress,
            _stopping(junit),
        ):
            on_result = _each(on_progress, junit_row(junit, judge) if junit else None)
            outcome = eval_file(
                data,
                out_dir,
                judge=judge,
                metrics=metrics,
                mapping=mapping,
                fmt=fmt,
                limit=limit,
                truncate=truncate,
                fail_under=thresholds,
                max_failure_rate=max_failure_rate,
                settings=settings.recorded(),
                on_result=on_result,
                on_judging=reporter.judging if reporter is not None else None,
                labels=labels,
                calibrate=calibrate,
                raw_output=raw_output,
                overwrite=overwrite,
                **({"chunk_size": ray.chunk_size} if ray is not None else {}),
            )
        report = _write_html(out_dir, data) if html else None
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
    if not quiet:
        click.echo(summary_table(outcome.summary, terminal=sys.stdout.isatty()))
        click.echo(f"results: {outcome.results_path}\nsummary: {outcome.summary_path}")
        if report is not None:
            click.echo(f"report: {report}")
        if junit is not None:
            click.echo(f"junit: {junit.path}")
    for line in outcome.failed_thresholds:
        click.echo(f"localjudge: below threshold: {line}", err=True)
    sys.exit(EXIT_THRESHOLD if outcome.failed_thresholds else EXIT_OK)


def _junit_report(
    path: Path, judge: Any, metrics: list[str], thresholds: dict[str, float], run: dict[str, Any]
) -> Any:
    from localjudge.run.junit import JUnitReport  # noqa: PLC0415
    from localjudge.versions import versions  # noqa: PLC0415

    identity = judge.identity
    properties = {
        "model": identity.model,
        "model_sha256": identity.sha256,
        "backend": identity.backend,
        "judge_settings": dict(identity.settings),
        "run_settings": run,
        "versions": versions(),
        "complete": False,
    }
    return JUnitReport(path, metrics, thresholds, properties)


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


class _progress:  # noqa: N801 (used as a context manager, reads like a function)
    """A tqdm bar on stderr in items (items/s and ETA) when ``total`` is known (a terminal),
    and the crash reporter's record of finished items when there is one."""

    def __init__(self, total: int | None, n_metrics: int, reporter: Any = None) -> None:
        self.total = total
        self.n_metrics = max(n_metrics, 1)
        self.reporter = reporter
        self.bar: Any = None

    def __enter__(self) -> Callable[[Any], None] | None:
        if self.total is not None:
            from tqdm import tqdm  # noqa: PLC0415

            from localjudge.console import BAR_FORMAT  # noqa: PLC0415

            self.bar = tqdm(
                total=self.total,
                unit="item",
                file=sys.stderr,
                dynamic_ncols=True,
                bar_format=BAR_FORMAT,
            )
        if self.bar is None and self.reporter is None:
            return None
        step = 1.0 / self.n_metrics

        def on_result(res: Any) -> None:
            if self.bar is not None:
                self.bar.update(step)
            if self.reporter is not None:
                self.reporter.done(res.index, res.metric)

        return on_result

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.close()


@main.command("bench", cls=ConfiguredCommand)
@click.argument("data", type=click.Path(path_type=Path))
@click.option(
    "-m",
    "--model",
    "models",
    multiple=True,
    help="Judge to compare: GGUF path or alias (repeat; default: the default judge).",
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
    help="Directory for bench.json, bench_items.jsonl and each judge's run.",
)
@_judge_options
@_ray_options
@_run_options
@click.option("-q", "--quiet", is_flag=True, help="No progress bars; print only the table.")
@click.pass_context
@_guarded
def bench_command(  # noqa: PLR0917 (Click passes every option as an argument)
    ctx: click.Context,
    /,
    data: Path,
    models: tuple[str, ...],
    all_judges: bool,
    out_dir: Path,
    metric_names: tuple[str, ...],
    limit: int | None,
    scale: float,
    truncate: bool,
    no_reasons: bool,
    html: bool,
    overwrite: bool,
    quiet: bool,
    **judge_options: Any,
) -> None:
    """Benchmark judges against the human labels in DATA (labelled JSONL, see README)."""
    from localjudge.judge.isolation import terminate_as_interrupt  # noqa: PLC0415
    from localjudge.metrics import MetricSettings  # noqa: PLC0415
    from localjudge.run.bench import bench_file, bench_table  # noqa: PLC0415

    progress = not quiet and _on_terminal()
    ray = _ray_config(judge_options, ctx.find_root().obj)
    if all_judges:
        models = _installed_judges(models)

    def announce(name: str) -> None:
        if not quiet and not progress:  # a bar names its judge
            click.echo(f"judging with {name} ...", err=True)

    # SIGTERM (timeout, systemd, CI runners) stops a bench as Ctrl-C does, between judges too;
    # while a judge runs, its supervised child gets the signal and keeps what it finished
    with terminate_as_interrupt():
        outcome = bench_file(
            data,
            out_dir,
            judges=[_judge_settings(m, **judge_options) for m in (models or (None,))],
            metrics=list(metric_names) or None,
            metric_settings=MetricSettings(scale=scale, reasons=not no_reasons),
            limit=limit,
            truncate=truncate,
            open_judge=_factory(ctx),
            ray=ray,
            on_judge=announce,
            progress=progress,
            overwrite=overwrite,
        )
    click.echo(bench_table(outcome.report, terminal=sys.stdout.isatty()))
    report = _write_html(out_dir, None) if html else None
    if not quiet:
        click.echo(f"bench: {outcome.bench_path}\nitems: {outcome.items_path}")
        if report is not None:
            click.echo(f"report: {report}")


def _installed_judges(named: Sequence[str]) -> tuple[str, ...]:
    """The aliases of every registered judge whose file (or chunk packages) is installed."""
    from localjudge.judge.registry import list_models  # noqa: PLC0415

    if named:
        raise UsageError("give -m/--model or --all-judges, not both")
    found = tuple(status.judge.alias for status in list_models() if status.present)
    if not found:
        raise UsageError("no registered judge is installed", hint="see `localjudge models list`")
    return found


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
@_guarded
def report_command(out_dir: Path, output: Path | None, data: Path | None) -> None:
    """Render an eval or bench run in OUT_DIR as one self-contained, offline HTML file."""
    from localjudge.run.report import write_report  # noqa: PLC0415

    click.echo(str(write_report(out_dir, output, data=data)))


def _write_html(out_dir: Path, data: Path | None) -> Path:
    from localjudge.run.report import write_report  # noqa: PLC0415

    return write_report(out_dir, data=data)


@main.command("doctor")
@click.option(
    "-m",
    "--model",
    default=None,
    help="GGUF path or registered alias (default: qwen2.5-coder-1.5b).",
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
for _command in (models_group, cache_group, diff_command):
    main.add_command(_command)
