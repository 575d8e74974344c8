"""The one place a judge, its cache and its metrics are assembled from settings.

``localjudge eval``, ``localjudge bench`` (and its worker processes) all go through
:func:`open_judge` (the command line's judge options handed to the public
:func:`~localjudge.judge.llama.load_judge`) and :func:`build_metrics`, so every judge option
works everywhere.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from localjudge.decisions import Cutoffs
from localjudge.errors import UsageError
from localjudge.judge.cache import CachingJudge, open_cache
from localjudge.judge.engine import DEFAULT_PARALLEL
from localjudge.judge.llama import (
    DEFAULT_FLASH_ATTN,
    chat_template_kwargs,
    default_threads,
    flash_attn_mode,
)
from localjudge.judge.models import DEFAULT_ALIAS
from localjudge.judge.protocol import Judge
from localjudge.metrics import METRICS, Metric, MetricSettings
from localjudge.metrics.base import DEFAULT_PROTOCOL

__all__ = [
    "JudgeSettings",
    "MetricSettings",
    "build_metrics",
    "cache_counts",
    "neutral_cutoffs_note",
    "open_cache",
    "open_judge",
    "other_protocol_note",
    "protocol_of",
    "resolve_cutoffs",
]

DEFAULT_N_CTX = 8192


@dataclass(frozen=True)
class JudgeSettings:
    """How to load a judge: the model, llama.cpp's options, and the cache around it."""

    #: a GGUF path, registered alias or store name (``ollama:qwen2.5:7b``, ``hf:ORG/REPO/F.gguf``,
    #: ``lmstudio:P/R/F.gguf``); None is the default judge (qwen2.5-coder-1.5b)
    model: str | None = None
    n_ctx: int = DEFAULT_N_CTX
    #: layers offloaded to a GPU build of llama.cpp: ``auto`` (all where the build can
    #: offload, else none), ``all`` or -1, or a number
    n_gpu_layers: int | str = "auto"
    #: CPU threads (None: the physical cores this process may use, see ``default_threads``)
    n_threads: int | None = None
    seed: int = 0
    #: use the model's chat template (None: when it has one and is an instruct model)
    chat_template: bool | None = None
    #: llama.cpp's flash attention: ``on``, ``off`` or ``auto`` (a bool is read as on/off)
    flash_attn: str = DEFAULT_FLASH_ATTN
    #: extra variables for the chat template's render, e.g. ``{"enable_thinking": False}``
    chat_template_kwargs: Mapping[str, Any] = field(default_factory=dict)
    #: the cache file or the directory that holds it (None: the default cache directory)
    cache: Path | None = None
    use_cache: bool = True
    #: requests decoded together (each holds a window of ``n_ctx`` tokens)
    parallel: int = DEFAULT_PARALLEL

    def __post_init__(self) -> None:
        # one spelling of each, checked here so a library caller fails before a model loads
        object.__setattr__(self, "flash_attn", flash_attn_mode(self.flash_attn))
        kwargs = chat_template_kwargs(self.chat_template_kwargs)
        object.__setattr__(self, "chat_template_kwargs", kwargs)

    @property
    def threads(self) -> int:
        """The CPU threads the judge will use (``n_threads``, or the machine's default)."""
        return self.n_threads or default_threads()

    @property
    def name(self) -> str:
        """The judge's name in a bench: its alias or path as given."""
        return self.model or DEFAULT_ALIAS

    def recorded(self) -> dict[str, Any]:
        """What ``summary.json`` records of these settings (``run.settings``)."""
        return {
            "n_ctx": self.n_ctx,
            "n_gpu_layers": self.n_gpu_layers,
            "threads": self.threads,
            "flash_attn": self.flash_attn,
            "chat_template_kwargs": dict(self.chat_template_kwargs),
            "seed": self.seed,
            "parallel": self.parallel,
        }


def open_judge(settings: JudgeSettings, *, cached: bool = True) -> Judge:
    """Load the judge ``settings`` describe with :func:`~localjudge.judge.llama.load_judge`
    (the one constructor; this only reads the CLI's options for it), wrapped in its cache
    unless ``use_cache`` is off (or ``cached`` is: a Ray worker, whose driver caches). With
    ``use_cache`` the judge keeps its evaluated instructions beside the cache either way.

    Nothing is downloaded; raises :class:`~localjudge.errors.ModelError` for a model that cannot
    be loaded and :class:`~localjudge.errors.ConstraintError` when constrained decoding is
    unavailable.
    """
    from localjudge.judge.llama import load_judge  # noqa: PLC0415 (llama_cpp loads only here)

    cache = (settings.cache or True) if settings.use_cache else False
    return load_judge(
        settings.model,
        n_ctx=settings.n_ctx,
        n_gpu_layers=settings.n_gpu_layers,
        n_threads=settings.n_threads,
        seed=settings.seed,
        chat_template=settings.chat_template,
        flash_attn=settings.flash_attn,
        chat_template_kwargs=settings.chat_template_kwargs,
        parallel=settings.parallel,
        cache=cache if cached else False,
        store_prefix=cache,
    )


def resolve_cutoffs(
    judge: Judge, cutoffs: Cutoffs | None = None, *, protocol: str = DEFAULT_PROTOCOL
) -> Cutoffs:
    """``cutoffs``, or by default the judge's own (the registries') for asks laid out by
    ``protocol``."""
    if cutoffs is not None:
        return cutoffs
    from localjudge.decisions import judge_cutoffs  # noqa: PLC0415

    return judge_cutoffs(judge.identity, protocol)


def protocol_of(metrics: Sequence[Metric]) -> str:
    """The protocol a run's ``metrics`` ask by: one for all of them (a :class:`ValueError`
    when they differ: cut-offs and records are of one protocol)."""
    names = {m.protocol for m in metrics}
    if len(names) > 1:
        raise ValueError(f"the metrics of one run ask by one protocol, not {sorted(names)}")
    return names.pop() if names else DEFAULT_PROTOCOL


def other_protocol_note(judge: Judge, protocol: str, name: str | None = None) -> str:
    """One line for a run by ``protocol`` of a judge (called ``name``, else by its identity)
    whose fits were all made under other protocols: they do not apply, its decisions take the
    neutral cut-offs; '' when it has fits under ``protocol`` or none at all."""
    from localjudge.decisions import fitted_protocols  # noqa: PLC0415

    made = fitted_protocols(judge.identity)
    if not made or protocol in made:
        return ""
    return (
        f"judge {name or judge.identity.model} has no fits under protocol {protocol} (only "
        f"under protocol {', '.join(made)}): its decisions use the neutral cut-offs (the "
        "larger probability)"
    )


def neutral_cutoffs_note(judge: Judge, cutoffs: Cutoffs, name: str | None = None) -> str:
    """One line for a judge (called ``name``, else by its identity) whose ``cutoffs`` (its own,
    :func:`resolve_cutoffs`) hold no fitted cut-offs or combinations (its decisions take the
    neutral cut-offs: the larger probability), saying how to fit and check them; '' for a
    judge that has some."""
    if cutoffs:
        return ""
    return (
        f"judge {name or judge.identity.model} has no fitted cut-offs: its decisions use the "
        "neutral ones (the larger probability); fit them on your labels with `localjudge "
        "calibrate`, check them with `localjudge bench`"
    )


def cache_counts(judge: Judge) -> tuple[int, int] | None:
    """The calls a caching judge made and the calls its cache answered; None for a judge
    without a cache in front of it."""
    if isinstance(judge, CachingJudge):
        return judge.calls, judge.hits
    return None


def build_metrics(names: Sequence[str], settings: MetricSettings | None = None) -> list[Metric]:
    """The named metrics (CLI names, in the order given, once each) with ``settings``."""
    settings = settings or MetricSettings()
    unknown = [n for n in names if n not in METRICS]
    if unknown:
        raise UsageError(f"unknown metric {unknown[0]!r}; expected one of {', '.join(METRICS)}")
    return [METRICS[name].from_settings(settings) for name in dict.fromkeys(names)]
