"""What every command of the CLI shares: exit codes and error mapping, the typed judge, Ray and
run options of ``eval`` and ``bench`` (declared once, so both accept the same), judge settings
from those options, the progress bar, and the HTML report after a run.

Errors raised below a command become one line and an exit code (README, "Exit codes");
``LOCALJUDGE_DEBUG=1`` shows the traceback. Judges come from a factory in Click's context object
(``obj={"open_judge": ...}``, default :func:`localjudge.run.settings.open_judge`), so every
command can be driven with a scripted judge.
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
def exit_codes() -> Iterator[None]:
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


def guarded(fn: F) -> F:
    """Map library errors to one readable line and their exit code."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with exit_codes():
            return fn(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


def parse_thresholds(pairs: Sequence[str]) -> dict[str, float]:
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
run_options = _options(
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
        "--reasons/--no-reasons",
        "reasons",
        default=False,
        show_default=True,
        help="Also ask the judge a reason for each decision, after it (a call each; the "
        "decisions and scores are the same either way, and the result's reason is always built "
        "from the decisions).",
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
ray_options = _options(
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


def ray_config(options: dict[str, Any], ctx_obj: Any) -> Any:
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
judge_options = _options(
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
    from localjudge.judge.llama import chat_template_kwargs  # noqa: PLC0415

    try:
        return chat_template_kwargs(value, name="the value")
    except UsageError as exc:  # Click names the option and exits 2, before anything runs
        raise click.BadParameter(str(exc)) from None


def _ctx_size(value: int) -> int:
    if 0 < value < MIN_CTX:
        raise click.BadParameter(f"{value} is below {MIN_CTX} (0 means the model's own)")
    return value


def judge_settings(model: str | None, **options: Any) -> Any:
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


def on_terminal() -> bool:
    """Whether stderr, where progress is drawn, is a terminal."""
    return sys.stderr.isatty()


def judge_factory(ctx: click.Context) -> Callable[[Any], Any] | None:
    """The judge factory given in the context object (None: the real one)."""
    obj = ctx.find_root().obj
    return obj.get("open_judge") if isinstance(obj, dict) else None


class progress_bar:  # noqa: N801 (used as a context manager, reads like a function)
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


def write_html(out_dir: Path, data: Path | None) -> Path:
    from localjudge.run.report.render import write_report  # noqa: PLC0415

    return write_report(out_dir, data=data)
