"""The narrow judge interface: messages + pydantic schema -> validated value, raw text, stats.

The llama.cpp backend (:mod:`localjudge.judge.llama.judge`), the caching wrapper
(:mod:`localjudge.judge.cache.caching`) and the scripted fake (:mod:`localjudge.testing`) all
implement :class:`Judge`, with its optional many-requests call (:func:`generate_many`); the
runner (:mod:`localjudge.run.evaluate.evaluation`) knows nothing else about models, and the
metrics know nothing about judges at all.

At the top of :mod:`localjudge.judge`: any layer may use it.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar, Union, runtime_checkable

from pydantic import BaseModel

from localjudge.errors import ContextOverflowError

M = TypeVar("M", bound=BaseModel)
M_co = TypeVar("M_co", bound=BaseModel, covariant=True)

#: One chat message, ``{"role": "system"|"user"|"assistant", "content": "..."}``.
Message = Mapping[str, str]
#: What a judge is asked: chat messages, or a plain completion prompt.
Prompt = Union[str, Sequence[Message]]  # noqa: UP007 (a runtime alias; `|` needs 3.10 objects)


@dataclass(frozen=True)
class CallOrigin:
    """Which metric asked a judge call, about which item: recorded in the cache's call log.

    It never changes the output, so it is no part of a cache key, and judges may ignore it.
    ``protocol``: the name and fingerprint of the protocol the metric's asks are laid out by
    (:mod:`localjudge.metrics.protocols`; None: a call no metric of localjudge laid out)."""

    metric: str
    item_id: str
    protocol: tuple[str, str] | None = None


@dataclass(frozen=True)
class JudgeRequest:
    """One judge call: the messages and the output schema the answer must validate against,
    and optionally where it comes from (``origin``, set by the runner; not compared).

    ``shared_chars``: how many leading characters of the last message's content other requests
    share (a metric's request: the item's question and contexts, the same for each of the
    item's metrics). A judge may tokenize that part on its own and evaluate it once for all of
    them; 0 (the default) marks nothing. It changes tokenization, so it is part of a cache
    key.

    ``read_chars``: a span ``(start, end)`` of characters of the last message's content, inside
    its shared part, whose tokens' log-probabilities the judge reads while it evaluates them
    (:class:`Reading`: how likely the judge found that text after what precedes it; nothing is
    generated for it). None (the default): nothing is read. Part of a cache key.

    ``branch_chars``: the branch points of the last message's content, in leading characters
    (ascending, each inside the content): openings that other requests continue from, such as
    an item's shared text and then one passage. A judge may tokenize each opening on its own,
    evaluate it once and keep what it evaluated for every later request that begins with it,
    in any order. Empty (the default) marks none. It changes tokenization, so a request that
    marks any has them in its cache key."""

    messages: list[Message]
    schema: type[BaseModel]
    origin: CallOrigin | None = field(default=None, compare=False)
    shared_chars: int = 0
    read_chars: tuple[int, int] | None = None
    branch_chars: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        points = self.branch_chars
        if any(p <= 0 for p in points) or any(b <= a for a, b in itertools.pairwise(points)):
            raise ValueError(f"branch_chars must be positive and ascending, not {points}")


@dataclass(frozen=True)
class GenerationStats:
    """Token counts and time of one judge call."""

    prompt_tokens: int
    #: prompt tokens actually evaluated (the rest came from llama.cpp's prefix cache)
    evaluated_prompt_tokens: int
    completion_tokens: int
    seconds: float


@dataclass(frozen=True)
class SoftDecision:
    """A soft verdict: the probability the judge gave each value of a key, where it chose one.

    Read from the logits the decoder computed anyway, restricted to what the grammar allowed.
    ``probs`` maps the values' JSON texts (``"true"``, ``"1"``, ``"\"high\""``) to
    probabilities that sum to 1; ``chosen`` is the value the output has.
    """

    key: str
    probs: Mapping[str, float]
    chosen: str


@dataclass(frozen=True)
class Reading:
    """How likely the judge found a marked span of its prompt (``JudgeRequest.read_chars``):
    the sum of the natural log-probabilities of the span's tokens, each after everything before
    it, and how many tokens the span has."""

    logprob: float
    tokens: int

    @property
    def mean(self) -> float:
        """The mean log-probability per token."""
        return self.logprob / self.tokens if self.tokens else 0.0


def encode_soft(decisions: Sequence[SoftDecision], reading: Reading | None) -> Any:
    """A generation's soft output as plain JSON data: :func:`encode_decisions`' list, or, with a
    reading, ``{"decisions": [...], "reading": [logprob, tokens]}`` (how the cache stores it and
    a cluster worker sends it back; :func:`decode_soft` reads either)."""
    listed = encode_decisions(decisions)
    if reading is None:
        return listed
    return {"decisions": listed, "reading": [reading.logprob, reading.tokens]}


def decode_soft(data: Any) -> tuple[tuple[SoftDecision, ...], Reading | None]:
    """The soft verdicts and the reading :func:`encode_soft` wrote."""
    if isinstance(data, Mapping):
        logprob, tokens = data["reading"]
        return decode_decisions(data["decisions"]), Reading(float(logprob), int(tokens))
    return decode_decisions(data or []), None


def encode_decisions(decisions: Sequence[SoftDecision]) -> list[list[Any]]:
    """Soft verdicts as plain JSON data, ``[[key, probs, chosen], ...]``: how the cache stores
    them and how a cluster worker sends them back (:func:`decode_decisions` reads them)."""
    return [[d.key, dict(d.probs), d.chosen] for d in decisions]


def decode_decisions(data: Sequence[Sequence[Any]]) -> tuple[SoftDecision, ...]:
    """The soft verdicts :func:`encode_decisions` wrote."""
    return tuple(SoftDecision(key, probs, chosen) for key, probs, chosen in data)


@dataclass(frozen=True)
class Generation(Generic[M_co]):
    """The result of one judge call."""

    value: M_co
    raw: str
    stats: GenerationStats
    #: True when served from the cache: no model ran
    cached: bool = False
    #: the soft verdicts, in output order (empty from judges that have none)
    decisions: tuple[SoftDecision, ...] = ()
    #: the reading of the request's ``read_chars`` (None: none asked, or a judge without one)
    reading: Reading | None = None


@dataclass(frozen=True)
class JudgeIdentity:
    """Everything about a judge that determines its output, recorded in results and cache keys."""

    model: str
    sha256: str
    backend: str
    settings: Mapping[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "sha256": self.sha256,
            "backend": self.backend,
            "settings": dict(self.settings),
        }


@runtime_checkable
class Judge(Protocol):
    """A judge turns a prompt and an output schema into a validated instance of that schema."""

    @property
    def identity(self) -> JudgeIdentity: ...

    def generate(self, prompt: Prompt, schema: type[M]) -> Generation[M]:
        """Return ``schema``'s validated value for ``prompt``.

        Raises :class:`~localjudge.errors.ContextOverflowError` (before generating) when the prompt
        and the schema's worst-case output do not fit, and
        :class:`~localjudge.errors.ConstraintError` when constrained decoding cannot be applied.

        A judge may also offer ``generate_many(requests, *, on_outcome=None) -> list[Outcome]``:
        the same calls for many :class:`JudgeRequest` at once, outcomes in request order (see
        :func:`generate_many`).
        """
        ...


#: what a judge's ``generate_many`` gives per request: the generation, or the overflow that kept
#: it from being made (raised before generating; the one per-request failure)
Outcome = Union["Generation[BaseModel]", ContextOverflowError]


#: called with a request's position and outcome the moment that request is done
OnOutcome = Callable[[int, Outcome], None]


def generate_many(
    judge: Judge, requests: Sequence[JudgeRequest], *, on_outcome: OnOutcome | None = None
) -> list[Outcome]:
    """Run ``requests`` on ``judge``; outcomes in request order.

    Uses the judge's own ``generate_many`` when it has one (a batched engine, a cache), else one
    :meth:`Judge.generate` call after another. A request too long for the window gives its
    :class:`ContextOverflowError` in its place; every other exception propagates. ``on_outcome``
    sees each outcome as soon as it exists, in whatever order requests finish (a cache stores
    each call then, so an interrupted batch loses nothing finished).
    """
    many = getattr(judge, "generate_many", None)
    if many is None:
        return generate_each(judge, requests, on_outcome=on_outcome)
    outcomes = list(many(requests, on_outcome=on_outcome))
    if len(outcomes) != len(requests):
        raise AssertionError(
            f"{type(judge).__name__}.generate_many gave {len(outcomes)} outcomes for "
            f"{len(requests)} requests"
        )
    return outcomes


def generate_each(
    judge: Judge,
    requests: Sequence[JudgeRequest],
    *,
    on_outcome: OnOutcome | None = None,
    call: Callable[[JudgeRequest], Generation[BaseModel]] | None = None,
) -> list[Outcome]:
    """One :meth:`Judge.generate` call per request (or ``call(request)``), in order: the
    sequential ``generate_many``."""
    outcomes: list[Outcome] = []
    for i, request in enumerate(requests):
        outcome: Outcome
        try:
            if call is not None:
                outcome = call(request)
            else:
                outcome = judge.generate(request.messages, request.schema)
        except ContextOverflowError as exc:
            outcome = exc
        outcomes.append(outcome)
        if on_outcome is not None:
            on_outcome(i, outcome)
    return outcomes


def as_messages(prompt: Prompt) -> list[dict[str, str]]:
    """Normalise a prompt to a list of plain ``{"role", "content"}`` dicts."""
    if isinstance(prompt, str):
        return [{"role": "user", "content": prompt}]
    return [{"role": str(m["role"]), "content": str(m["content"])} for m in prompt]


def check_fits(
    *, prompt_tokens: int, max_output_tokens: int, n_ctx: int, at_least: bool = False
) -> None:
    """Fail before generating when the prompt plus the worst-case output exceeds the window.
    ``at_least``: ``prompt_tokens`` is a lower bound (the prompt was not tokenized)."""
    needed = prompt_tokens + max_output_tokens
    if needed > n_ctx:
        bound = "at least " if at_least else ""
        raise ContextOverflowError(
            f"prompt ({bound}{prompt_tokens} tokens) plus worst-case output ({max_output_tokens} "
            f"tokens) needs {bound}{needed} tokens but the context window holds {n_ctx}",
            needed=needed,
            available=n_ctx,
            field="retrieved_contexts",
            hint=f"raise it with -c/--n-ctx {needed} (library: n_ctx={needed}) or shorten the item"
            if not at_least
            else "shorten the item (or --truncate: its longest contexts are cut to fit)",
        )
