"""The typed options ``eval`` and ``bench`` share, declared once so both accept the same: what
to run and how to score (:data:`run_options`), how to load a judge (:data:`judge_options`,
also ``calibrate``'s), their values as one typed object each (:class:`RunArgs`,
:class:`JudgeArgs`: a command's own arguments class adds its options to them and is built once
from what Click passes), and the judge settings and factory a command builds from them.

Judges come from a factory in Click's context object (``obj={"open_judge": ...}``, default
:func:`localjudge.run.settings.open_judge`), so every command can be driven with a scripted
judge. The Ray options are in :mod:`localjudge.cli.ray_options`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from localjudge.errors import UsageError
from localjudge.metrics import METRICS, MetricSettings
from localjudge.metrics.base import DEFAULT_PROTOCOL, PROTOCOL_NAMES

if TYPE_CHECKING:
    from localjudge.run.settings import JudgeSettings

#: the smallest context window -c accepts (0 aside)
MIN_CTX = 256

F = TypeVar("F", bound=Callable[..., Any])


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


def option_group(*options: Callable[[F], F]) -> Callable[[F], F]:
    """One decorator that applies ``options`` in the order given (the first on top)."""

    def apply(fn: F) -> F:
        for option in reversed(options):
            fn = option(fn)
        return fn

    return apply


#: what to run and how to score: eval and bench share them
run_options = option_group(
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
        "--protocol",
        type=click.Choice(list(PROTOCOL_NAMES)),
        default=DEFAULT_PROTOCOL,
        show_default=True,
        help="The protocol the judge is asked by (the prompts and layout of every decision): "
        "1, a call per decision; 2, each passage read once, the answer before it; 3, each "
        "passage read once, every decision about it continuing from that reading. A judge's "
        "fitted cut-offs apply only under the protocol they were fitted under (see "
        "`localjudge models info`).",
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


#: how to load a judge: one set of options for eval and bench (JudgeSettings)
judge_options = option_group(
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


@dataclass(frozen=True, kw_only=True)
class JudgeArgs:
    """The values of :data:`judge_options`, as Click passes them (``eval``, ``bench`` and
    ``calibrate`` share them)."""

    n_ctx: int
    n_gpu_layers: int | str
    threads: int | None
    flash_attn: str
    chat_template_kwargs: dict[str, Any]
    seed: int
    no_chat_template: bool
    cache_path: Path | None
    no_cache: bool
    parallel: int | None

    def judge_settings(self, model: str | None) -> JudgeSettings:
        """How to load the judge ``model`` with these options."""
        from localjudge.run.settings import JudgeSettings  # noqa: PLC0415

        return JudgeSettings(
            model=model,
            n_ctx=self.n_ctx,
            n_gpu_layers=self.n_gpu_layers,
            n_threads=self.threads,
            seed=self.seed,
            chat_template=False if self.no_chat_template else None,
            flash_attn=self.flash_attn,
            chat_template_kwargs=self.chat_template_kwargs,
            cache=self.cache_path,
            use_cache=not self.no_cache,
            **({"parallel": self.parallel} if self.parallel is not None else {}),
        )


@dataclass(frozen=True, kw_only=True)
class RunArgs:
    """The values of :data:`run_options`, as Click passes them (``eval`` and ``bench``)."""

    metric_names: tuple[str, ...]
    limit: int | None
    scale: float
    truncate: bool
    reasons: bool
    protocol: str = DEFAULT_PROTOCOL
    html: bool
    overwrite: bool

    def metric_settings(self) -> MetricSettings:
        """The settings every metric of the run is built with."""
        return MetricSettings(scale=self.scale, reasons=self.reasons, protocol=self.protocol)


def judge_factory(ctx: click.Context) -> Callable[[Any], Any] | None:
    """The judge factory given in the context object (None: the real one)."""
    obj = ctx.find_root().obj
    return obj.get("open_judge") if isinstance(obj, dict) else None
