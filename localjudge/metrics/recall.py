"""Context recall (ragas semantics): is every reference statement supported by the context?"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from localjudge.items import Item
from localjudge.metrics.base import (
    DATA_RULE,
    REASON_CHARS,
    JudgeRequest,
    Metric,
    MetricResult,
    chat,
    delimit,
    numbered_contexts,
    quote_list,
)
from localjudge.schemas import StrictModel, bounded_list, text
from localjudge.scoring import recall_score

MAX_STATEMENTS = 8
STATEMENT_CHARS = 100


class Statement(StrictModel):
    statement: text(STATEMENT_CHARS)  # type: ignore[valid-type]
    reason: text(REASON_CHARS, ascii_only=True)  # type: ignore[valid-type]
    attributed: Literal[0, 1]


class RecallVerdicts(StrictModel):
    statements: bounded_list(Statement, min_items=1, max_items=MAX_STATEMENTS)  # type: ignore[valid-type]


SYSTEM = f"""You check whether a REFERENCE answer is supported by retrieved CONTEXT passages.
1. Split the REFERENCE into at most {MAX_STATEMENTS} short statements. Each statement is one \
self-contained fact, written in the language of the REFERENCE and close to its words.
2. For each statement set "attributed" to 1 if the CONTEXT passages state it or clearly imply it, \
and to 0 if they do not. Use only the CONTEXT, not your own knowledge.
3. Give a short English "reason": which CONTEXT passage supports it, or what is absent.
{DATA_RULE}
Reply with JSON only, like {{"statements":[{{"statement":"...","reason":"...","attributed":1}}]}}"""


class ContextRecall(Metric):
    """Fraction of the reference's statements that the retrieved contexts support."""

    name: ClassVar[str] = "recall"
    required: ClassVar[tuple[str, ...]] = ("user_input", "retrieved_contexts", "reference")

    def build(self, item: Item) -> JudgeRequest:
        question = item.text("user_input")
        contexts = item.contexts()
        reference = item.text("reference")
        user = "\n".join(
            [
                delimit("QUESTION", question),
                numbered_contexts(contexts),
                delimit("REFERENCE", reference),
            ]
        )
        return JudgeRequest(messages=chat(SYSTEM, user), schema=RecallVerdicts)

    def finish(self, item: Item, verdict: Any) -> MetricResult:
        statements: list[Statement] = list(verdict.statements)
        value = recall_score([s.attributed for s in statements])
        unsupported = [s.statement for s in statements if not s.attributed]
        supported = len(statements) - len(unsupported)
        reason = (
            f"{supported} of {len(statements)} reference statements are supported by the context"
        )
        if unsupported:
            reason += f"; not supported: {quote_list(unsupported)}"
        return MetricResult(
            metric=self.name,
            value=value,
            reason=reason + ".",
            verdicts=[s.model_dump() for s in statements],
        )
