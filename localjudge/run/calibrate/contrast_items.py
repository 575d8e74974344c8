"""The bundled contrast items: passages no person doubts, which a fit of cut-offs must keep
right (the "obvious items" of ``localjudge calibrate``'s output).

``contrast_items.jsonl`` (package data) holds short contrast items written for localjudge: a
passage that states the answer and one about something else, in the same language and form,
across ten languages and kinds of text (short facts, config and code, chat, web pages,
tables and lists). Each kind of decision reads them as a person would:

- ``position.relevant`` (the QUESTION alone) and ``position.relevant_answer`` (the reference
  as the EXPECTED ANSWER): the answer passage relevant, the other not;
- ``relevance.grade``: the answer passage graded medium or high, the other low or none;
  ``relevance.used`` (the response is the answer): the answer passage used, the other not;
- ``recall.supported``: the reference supported by the answer passage alone, not by the other.

:func:`contrast_check` judges them under given cut-offs; ``localjudge calibrate`` stores a
fitted kind only when it loses no obvious decision that the cut-offs in use now get right
(:func:`localjudge.decisions.lost`), unless forced.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from functools import lru_cache
from importlib import resources
from typing import Any

from localjudge.decisions import ContrastCheck, Cutoffs, Decided, verdict_word
from localjudge.judge.protocol import Judge
from localjudge.metrics import MetricSettings
from localjudge.metrics.position import ContextPosition
from localjudge.metrics.recall import ContextRecall
from localjudge.metrics.relevance import ContextRelevance
from localjudge.run.evaluate.evaluation import evaluate
from localjudge.run.results import close_calls

__all__ = ["contrast_check", "contrast_items"]


@lru_cache(maxsize=1)
def contrast_items() -> tuple[Mapping[str, Any], ...]:
    """The bundled contrast items (see the module's docstring)."""
    data = resources.files("localjudge.run.calibrate").joinpath("contrast_items.jsonl")
    text = data.read_text("utf-8")
    return tuple(json.loads(line) for line in text.splitlines() if line.strip())


def contrast_check(judge: Judge, cutoffs: Cutoffs, kinds: Collection[str]) -> ContrastCheck:
    """Judge the obvious items for ``kinds`` under ``cutoffs`` (reasons off)."""
    items = contrast_items()
    settings = MetricSettings(reasons=False)
    decided: list[Decided] = []
    position = ContextPosition.from_settings(settings)
    for kind, field in (("position.relevant", None), ("position.relevant_answer", "reference")):
        if kind in kinds:
            records = [_record(r, field) for r in items]
            for r, verdicts in zip(
                items, _verdicts(records, position, judge, cutoffs), strict=True
            ):
                decided += _flags(kind, r, verdicts, "relevant", lambda v: bool(v["relevant"]))
    if {"relevance.grade", "relevance.used"} & set(kinds):
        records = [_record(r, "response") for r in items]
        relevance = ContextRelevance.from_settings(settings)
        for r, verdicts in zip(items, _verdicts(records, relevance, judge, cutoffs), strict=True):
            if "relevance.grade" in kinds:
                decided += _flags(
                    "relevance.grade", r, verdicts, "relevance", lambda v: v["relevance"] in HIGH
                )
            if "relevance.used" in kinds:
                decided += _flags("relevance.used", r, verdicts, "used", lambda v: bool(v["used"]))
    if "recall.supported" in kinds:
        decided += _recall(items, judge, cutoffs, settings)
    return ContrastCheck(tuple(decided))


def _record(r: Mapping[str, Any], field: str | None) -> dict[str, Any]:
    record = {k: r[k] for k in ("id", "user_input", "retrieved_contexts")}
    if field is not None:
        record[field] = r[field]
    return record


def _verdicts(
    records: Sequence[Mapping[str, Any]], metric: Any, judge: Judge, cutoffs: Cutoffs
) -> Iterable[Sequence[Mapping[str, Any]]]:
    for res in evaluate(records, [metric], judge, cutoffs=cutoffs):
        if res.result is None:  # the bundled items are valid: a failure here is a bug
            raise RuntimeError(f"obvious item {res.id}: {res.error}")
        yield res.result.verdicts


#: the grades that count as relevant
HIGH = ("high", "medium")


def _flags(
    kind: str,
    r: Mapping[str, Any],
    verdicts: Sequence[Mapping[str, Any]],
    key: str,
    says: Callable[[Mapping[str, Any]], bool],
) -> list[Decided]:
    """Each passage's decision of ``kind`` (``says`` reads it from its verdict, whose decision
    key is ``key``) beside the label, with its close call."""
    want = r["labels"]["relevant"]
    return [
        Decided(
            kind,
            str(r["id"]),
            i,
            verdict_word(kind, w),
            verdict_word(kind, says(v)),
            close_calls(v).get(key),
        )
        for i, (w, v) in enumerate(zip(want, verdicts, strict=True))
    ]


def _recall(
    items: Sequence[Mapping[str, Any]], judge: Judge, cutoffs: Cutoffs, settings: MetricSettings
) -> list[Decided]:
    """The reference against each passage alone: supported by the answer, not by the other."""
    records, where = [], []
    for r in items:
        for i, passage in enumerate(r["retrieved_contexts"]):
            records.append(
                {
                    "id": f"{r['id']}#{i}",
                    "user_input": r["user_input"],
                    "retrieved_contexts": [passage],
                    "reference": r["reference"],
                }
            )
            where.append((r, i))
    out = []
    metric = ContextRecall.from_settings(settings)
    for (r, i), res in zip(where, evaluate(records, [metric], judge, cutoffs=cutoffs), strict=True):
        if res.result is None:
            raise RuntimeError(f"obvious item {res.id}: {res.error}")
        want = bool(r["labels"]["relevant"][i])
        got = bool(res.result.value is not None and res.result.value >= 1.0)
        kind = "recall.supported"
        closes = (close_calls(v).get("attributed") for v in res.result.verdicts)
        close = next((c for c in closes if c is not None), None)
        out.append(
            Decided(kind, str(r["id"]), i, verdict_word(kind, want), verdict_word(kind, got), close)
        )
    return out
