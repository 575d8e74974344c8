"""Context recall (ragas semantics): is every reference statement supported by the context?

The statements are the reference's own sentences (:mod:`localjudge.metrics.statements`): the
judge only says, for each, whether the contexts support it. So every statement is a verbatim span
of the reference, in order, never repeated and never invented.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any, ClassVar, Literal

from pydantic import create_model

from localjudge.data.items import Item
from localjudge.judge.protocol import SoftDecision
from localjudge.judge.schemas import StrictModel, one_per_piece
from localjudge.metrics.base import (
    FRACTION,
    JudgeRequest,
    LabelKind,
    Metric,
    MetricResult,
    MetricSettings,
    VerdictRow,
    delimit,
    item_data,
    quote_list,
    reason_field,
    shown,
    value_probs,
    yes,
)
from localjudge.metrics.instructions import COPIES, instructions, item_request
from localjudge.metrics.statements import MAX_STATEMENTS, split_statements
from localjudge.scoring import recall_score, soft_recall_score

__all__ = ["MAX_STATEMENTS", "SYSTEM", "ContextRecall", "recall_schema"]

#: the instructions the judge gets (every metric's: see :mod:`localjudge.metrics.instructions`)
SYSTEM = instructions()


def recall_schema(n: int, reasons: bool = True) -> type[StrictModel]:
    """The output schema for ``n`` statements: exactly ``n`` verdicts, indexed 0..n-1 in order."""
    return _recall_schema(n, reasons)


@lru_cache(maxsize=2 * MAX_STATEMENTS)
def _recall_schema(n: int, reasons: bool) -> type[StrictModel]:
    statements = one_per_piece(
        "RecallVerdict" if reasons else "RecallDecision",
        n,
        **reason_field(reasons),
        attributed=(Literal[0, 1], ...),
    )
    name = f"RecallVerdicts{n}" if reasons else f"RecallVerdicts{n}NoReasons"
    return create_model(name, __base__=StrictModel, statements=(statements, ...))


class ContextRecall(Metric):
    """Fraction of the reference's statements that the retrieved contexts support."""

    name: ClassVar[str] = "recall"
    required: ClassVar[tuple[str, ...]] = ("user_input", "retrieved_contexts", "reference")
    labels: ClassVar[Mapping[str, LabelKind]] = {"recall": FRACTION}
    columns: ClassVar[tuple[str, ...]] = ("statement", "supported", "reason")
    decisions: ClassVar[tuple[str, ...]] = ("attributed",)

    @staticmethod
    def human_score(labels: Mapping[str, Any]) -> float | None:
        return float(labels["recall"]) if "recall" in labels else None

    @staticmethod
    def verdict_rows(verdicts: Sequence[Mapping[str, Any]]) -> list[VerdictRow]:
        return [
            VerdictRow(
                [shown(v.get("statement")), yes(v.get("attributed")), shown(v.get("reason"))],
                flag=None if v.get("attributed") else "not supported by the contexts",
            )
            for v in verdicts
        ]

    @classmethod
    def from_settings(cls, settings: MetricSettings) -> ContextRecall:
        return cls(reasons=settings.reasons)

    def __init__(self, *, reasons: bool = True) -> None:
        self.reasons = reasons
        self.system = instructions(reasons)

    def settings(self) -> dict[str, Any]:
        return {"reasons": self.reasons}

    def build(self, item: Item) -> JudgeRequest:
        question, contexts = item.text("user_input"), item.contexts()
        statements = self._statements(item)
        n = len(statements)
        return item_request(
            self.system,
            question,
            contexts,
            tail=[delimit(f"STATEMENT {i}", s) for i, s in enumerate(statements)],
            task="TASK recall.",
            schema=recall_schema(n, self.reasons),
        )

    def finish(
        self, item: Item, verdict: Any, decisions: Sequence[SoftDecision] = ()
    ) -> MetricResult:
        statements = self._statements(item)
        verdicts = []
        for v, statement in zip(verdict.statements, statements, strict=True):
            judged = {"index": v.index, "statement": statement, **v.model_dump(exclude={"index"})}
            verdicts.append(judged)
        value = recall_score([v["attributed"] for v in verdicts])
        probs = value_probs(decisions, "attributed", len(verdicts))
        soft = None
        if probs is not None:
            for v, p in zip(verdicts, probs, strict=True):
                v["probs"] = {"attributed": p}
            soft = soft_recall_score([p["1"] for p in probs])
        unsupported = [v["statement"] for v in verdicts if not v["attributed"]]
        supported = len(verdicts) - len(unsupported)
        reason = f"{supported} of {len(verdicts)} reference statements are supported by the context"
        if unsupported:
            reason += f"; not supported: {quote_list(unsupported)}"
        copied = COPIES.reasons([v.get("reason", "") for v in verdicts], item_data(item))
        return MetricResult(
            metric=self.name,
            value=value,
            reason=reason + ".",
            verdicts=verdicts,
            details={"copied_reasons": copied} if copied else {},
            soft_value=soft,
        )

    def _statements(self, item: Item) -> list[str]:
        statements = split_statements(item.text("reference"))
        if not statements:
            raise item.invalid(
                "reference", "field 'reference' has no statement (no letter or digit)"
            )
        return statements
