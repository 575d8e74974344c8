"""A scripted fake judge for tests: public, so users can test their own pipelines offline.

It implements the :class:`~localjudge.judge.protocol.Judge` interface and validates each scripted
output exactly as the real judge validates generated text
(:func:`~localjudge.judge.schemas.parse_output`), so a script that the real grammar could never
produce fails the same way.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from localjudge.canonical import compact_json
from localjudge.judge.protocol import (
    Generation,
    GenerationStats,
    JudgeIdentity,
    JudgeRequest,
    M,
    OnOutcome,
    Outcome,
    Prompt,
    Reading,
    SoftDecision,
    as_messages,
    check_fits,
    generate_each,
)
from localjudge.judge.schemas import json_schema, parse_output, worst_case_tokens
from localjudge.judge.soft import decision_keys

#: a scripted reply: raw JSON text, a JSON-able value, or a function of (messages, schema)
Reply = str | Mapping[str, Any] | Callable[[list[dict[str, str]], type[BaseModel]], Any]


@dataclass(frozen=True)
class Call:
    """One recorded call of the scripted judge."""

    messages: list[dict[str, str]]
    schema: type[BaseModel]
    raw: str
    #: the request's ``shared_chars`` (0 for a plain ``generate``)
    shared_chars: int = 0
    #: the request's ``read_chars`` (None for a plain ``generate``)
    read_chars: tuple[int, int] | None = None
    #: the request's ``branch_chars`` (none for a plain ``generate``)
    branch_chars: tuple[int, ...] = ()


class ScriptedJudge:
    """A judge that answers from a script instead of a model.

    ``replies`` is consumed one per call; a single callable answers every call. ``n_ctx`` turns on
    the context-window check, counting one token per whitespace-separated word of the prompt.
    ``certain`` gives soft verdicts too: probability 1 for every value the reply chose, as a
    judge that never hesitates would. ``reading`` gives a request that marks a span to read
    (``read_chars``) its :class:`~localjudge.judge.protocol.Reading`: called with the messages
    and the span's text, it returns the mean log-probability per token (one token per
    whitespace-separated word); without it such a request gets no reading, as from a judge
    that has none.
    """

    def __init__(
        self,
        replies: Iterable[Reply] | Callable[[list[dict[str, str]], type[BaseModel]], Any],
        *,
        model: str = "scripted",
        n_ctx: int | None = None,
        certain: bool = False,
        reading: Callable[[list[dict[str, str]], str], float] | None = None,
    ) -> None:
        self._next: Callable[[], Reply]
        if callable(replies):
            fn = replies
            self._next = lambda: fn
        else:
            it: Iterator[Reply] = iter(replies)
            self._next = lambda: next(it)
        self.n_ctx = n_ctx
        self.certain = certain
        self.reading = reading
        self.calls: list[Call] = []
        self._shared_chars = 0
        self._read_chars: tuple[int, int] | None = None
        self._branch_chars: tuple[int, ...] = ()
        self._identity = JudgeIdentity(
            model=model, sha256="0" * 64, backend="scripted", settings={"n_ctx": n_ctx}
        )

    @property
    def identity(self) -> JudgeIdentity:
        return self._identity

    def generate(self, prompt: Prompt, schema: type[M]) -> Generation[M]:
        start = time.perf_counter()
        messages = as_messages(prompt)
        prompt_tokens = sum(len(m["content"].split()) for m in messages)
        if self.n_ctx is not None:
            check_fits(
                prompt_tokens=prompt_tokens,
                max_output_tokens=worst_case_tokens(schema),
                n_ctx=self.n_ctx,
            )
        try:
            reply = self._next()
        except StopIteration:
            raise AssertionError(
                f"ScriptedJudge ran out of replies at call {len(self.calls) + 1}"
            ) from None
        if callable(reply):
            reply = reply(messages, schema)
        raw = reply if isinstance(reply, str) else compact_json(reply)
        value = parse_output(schema, raw)
        assert isinstance(value, schema)
        self.calls.append(
            Call(messages, schema, raw, self._shared_chars, self._read_chars, self._branch_chars)
        )
        stats = GenerationStats(
            prompt_tokens=prompt_tokens,
            evaluated_prompt_tokens=prompt_tokens,
            completion_tokens=len(raw),
            seconds=time.perf_counter() - start,
        )
        decisions = _certain_decisions(schema, raw) if self.certain else ()
        found = None
        if self.reading is not None and self._read_chars is not None:
            start, end = self._read_chars
            span = messages[-1]["content"][start:end]
            words = max(len(span.split()), 1)
            found = Reading(float(self.reading(messages, span)) * words, words)
        return Generation(value=value, raw=raw, stats=stats, decisions=decisions, reading=found)

    def generate_many(
        self, requests: Sequence[JudgeRequest], *, on_outcome: OnOutcome | None = None
    ) -> list[Outcome]:
        """The requests one after another, in order (replies are consumed in request order)."""

        def call(request: JudgeRequest) -> Generation[BaseModel]:
            self._shared_chars = request.shared_chars  # recorded with the call
            self._read_chars = request.read_chars
            self._branch_chars = request.branch_chars
            try:
                return self.generate(request.messages, request.schema)
            finally:
                self._shared_chars = 0
                self._read_chars = None
                self._branch_chars = ()

        return generate_each(self, requests, on_outcome=on_outcome, call=call)


def _certain_decisions(schema: type[BaseModel], raw: str) -> tuple[SoftDecision, ...]:
    """Probability 1 for each chosen value of the schema's decision keys, in output order."""
    keys = decision_keys(json_schema(schema))
    found: list[SoftDecision] = []

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            for key, sub in value.items():
                if key in keys:
                    chosen = compact_json(sub)
                    probs = {v: 1.0 if v == chosen else 0.0 for v in keys[key]}
                    found.append(SoftDecision(key, probs, chosen))
                walk(sub)
        elif isinstance(value, list):
            for sub in value:
                walk(sub)

    walk(json.loads(raw))
    return tuple(found)


_BLOCK = re.compile(r"^<<(?P<tag>[A-Z0-9 ]+)>>\n(?P<body>.*?)\n<</(?P=tag)>>$", re.M | re.S)


def prompt_data(messages: list[dict[str, str]]) -> dict[str, str]:
    """The delimited data blocks of a metric prompt's last message, by tag (``"QUESTION"``,
    ``"CONTEXT 0"``, ``"REFERENCE"``, ...): what a scripted reply needs to follow rules."""
    return {m["tag"]: m["body"] for m in _BLOCK.finditer(messages[-1]["content"])}


def says_no(messages: list[dict[str, str]], schema: type[BaseModel]) -> dict[str, Any]:
    """A reply that says no to every decision, grades 0, finds nothing missing and gives the
    reason ``"r"``: a script whose verdicts come from its probabilities or readings instead."""
    name = schema.__name__
    if name == "Missing":
        return {"missing": []}
    if name == "Reason":
        return {"reason": "r"}
    if name == "GradeDecision":
        return {"grade": 0}
    return {next(iter(schema.model_fields)): "no"}


def assert_scores(results: Iterable[Any], **thresholds: float) -> None:
    """In a test: fail unless each named metric's mean reaches its threshold, e.g.
    ``assert_scores(evaluate(records, ["recall"], judge), recall=0.7)``. The failure lists the
    mean, the threshold and the worst items with their reasons.

    ``results`` is what :func:`~localjudge.evaluate` returned, a list of its results, or rows
    read from a ``results.jsonl``."""
    from localjudge.run.outcome import Evaluation, check_thresholds  # noqa: PLC0415

    if isinstance(results, Evaluation):
        rows: list[Mapping[str, Any]] = list(results.rows())
    else:
        rows = [r if isinstance(r, Mapping) else _row_of(r) for r in results]
    check_thresholds(rows, thresholds)


def _row_of(res: Any) -> dict[str, Any]:
    """The fields of a result row that the threshold check reads, from an ItemResult."""
    return {
        "index": res.index,
        "id": res.id,
        "metric": res.metric,
        "score": res.result.value if res.result is not None else None,
        "reason": res.result.reason if res.result is not None else None,
        "error": {"message": res.error.message} if res.error is not None else None,
    }
