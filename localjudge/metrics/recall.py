"""Context recall (ragas semantics): is every reference statement supported by the context?

The statements are the reference's own sentences (:mod:`localjudge.statements`): the judge only
says, for each, whether the contexts support it. So every statement is a verbatim span of the
reference, in order, never repeated and never invented.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any, ClassVar, Literal

from pydantic import create_model

from localjudge.items import Item
from localjudge.metrics.base import (
    DATA_RULE,
    FRACTION,
    REASON_CHARS,
    JudgeRequest,
    LabelKind,
    Metric,
    MetricResult,
    PromptCopies,
    VerdictRow,
    WorkedExample,
    chat,
    delimit,
    item_data,
    numbered_contexts,
    quote_list,
    shown,
    yes,
)
from localjudge.schemas import StrictModel, one_per_piece, text
from localjudge.scoring import recall_score
from localjudge.statements import MAX_STATEMENTS, split_statements

__all__ = ["MAX_STATEMENTS", "SYSTEM", "ContextRecall", "recall_schema"]

EXAMPLE = WorkedExample(
    data='CONTEXT 0: "Velmora is the capital of Ostria." STATEMENT 0: "Velmora is the capital of '
    'Ostria." STATEMENT 1: "It has two million inhabitants."',
    answer={
        "statements": [
            {"index": 0, "reason": "Context 0 says so.", "attributed": 1},
            {"index": 1, "reason": "No passage gives the population.", "attributed": 0},
        ]
    },
    names=("Velmora", "Ostria"),
)

SYSTEM = f"""You are a strict fact checker. You get CONTEXT passages and numbered STATEMENTs \
from a reference answer.
Give exactly one verdict per STATEMENT, in order, starting at index 0:
- "index": the statement number;
- "reason": one short English sentence naming the CONTEXT passage that states the fact, or \
saying that no passage states it;
- "attributed": 1 only if a CONTEXT passage states the statement or clearly implies it; 0 if no \
passage does, even when it is true. Use only the CONTEXT, never your own knowledge.
{DATA_RULE}
{EXAMPLE.render()}"""

COPIES = PromptCopies(SYSTEM, EXAMPLE)


@lru_cache(maxsize=MAX_STATEMENTS)
def recall_schema(n: int) -> type[StrictModel]:
    """The output schema for ``n`` statements: exactly ``n`` verdicts, indexed 0..n-1 in order."""
    statements = one_per_piece(
        "RecallVerdict",
        n,
        reason=(text(REASON_CHARS, ascii_only=True), ...),
        attributed=(Literal[0, 1], ...),
    )
    return create_model(f"RecallVerdicts{n}", __base__=StrictModel, statements=(statements, ...))


class ContextRecall(Metric):
    """Fraction of the reference's statements that the retrieved contexts support."""

    name: ClassVar[str] = "recall"
    required: ClassVar[tuple[str, ...]] = ("user_input", "retrieved_contexts", "reference")
    labels: ClassVar[Mapping[str, LabelKind]] = {"recall": FRACTION}
    columns: ClassVar[tuple[str, ...]] = ("statement", "supported", "reason")

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

    def build(self, item: Item) -> JudgeRequest:
        question = item.text("user_input")
        contexts = item.contexts()
        statements = self._statements(item)
        user = "\n".join(
            [
                delimit("QUESTION", question),
                numbered_contexts(contexts),
                *(delimit(f"STATEMENT {i}", s) for i, s in enumerate(statements)),
            ]
        )
        return JudgeRequest(messages=chat(SYSTEM, user), schema=recall_schema(len(statements)))

    def finish(self, item: Item, verdict: Any) -> MetricResult:
        statements = self._statements(item)
        verdicts = [
            {"index": v.index, "statement": s, "reason": v.reason, "attributed": v.attributed}
            for v, s in zip(verdict.statements, statements, strict=True)
        ]
        value = recall_score([v["attributed"] for v in verdicts])
        unsupported = [v["statement"] for v in verdicts if not v["attributed"]]
        supported = len(verdicts) - len(unsupported)
        reason = f"{supported} of {len(verdicts)} reference statements are supported by the context"
        if unsupported:
            reason += f"; not supported: {quote_list(unsupported)}"
        copied = COPIES.reasons([v["reason"] for v in verdicts], item_data(item))
        return MetricResult(
            metric=self.name,
            value=value,
            reason=reason + ".",
            verdicts=verdicts,
            details={"copied_reasons": copied} if copied else {},
        )

    def _statements(self, item: Item) -> list[str]:
        statements = split_statements(item.text("reference"))
        if not statements:
            raise item.invalid(
                "reference", "field 'reference' has no statement (no letter or digit)"
            )
        return statements
