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


SYSTEM = f"""You are a strict fact checker. You compare a REFERENCE answer with CONTEXT passages.
Split the REFERENCE into short statements, at most {MAX_STATEMENTS}, one fact each, in the \
language of the REFERENCE. For each statement give:
- "reason": one short English sentence naming the CONTEXT passage that states the fact, or \
saying that no passage states it;
- "attributed": 1 only if a CONTEXT passage states the fact or clearly implies it; 0 if no \
passage does, even when the fact is true. Use only the CONTEXT, never your own knowledge.
{DATA_RULE}
Example. CONTEXT 0: "Paris is the capital of France." REFERENCE: "Paris is the capital of France. \
It has two million inhabitants."
Answer: {{"statements":[{{"statement":"Paris is the capital of France.","reason":"Context 0 \
says so.","attributed":1}},{{"statement":"Paris has two million inhabitants.","reason":"No \
passage gives the population.","attributed":0}}]}}"""


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
