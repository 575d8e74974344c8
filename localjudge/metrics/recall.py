"""Context recall (ragas semantics): is every reference statement supported by the context?

The statements are the reference's own sentences (:mod:`localjudge.metrics.statements`): the
judge only says, for each, whether the contexts support it. So every statement is a verbatim span
of the reference, in order, never repeated and never invented.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from localjudge.data.item import Item
from localjudge.metrics import branched
from localjudge.metrics.asks import Answers, Ask
from localjudge.metrics.base import (
    DEFAULT_PROTOCOL,
    FRACTION,
    LabelKind,
    Metric,
    MetricResult,
    MetricSettings,
    VerdictRow,
    checked_protocol,
    delimit,
    item_data,
    mark_close_calls,
    quote_list,
    shown,
    yes,
)
from localjudge.metrics.instructions import (
    RECALL_QUESTION,
    RECALL_SYSTEM,
    SUPPORTED,
    ask_request,
    contexts_opening,
)
from localjudge.metrics.statements import MAX_STATEMENTS, split_statements
from localjudge.scoring import recall_score, soft_recall_score

__all__ = ["MAX_STATEMENTS", "SYSTEM", "ContextRecall"]

#: the instructions of a recall call
SYSTEM = RECALL_SYSTEM


class ContextRecall(Metric):
    """Fraction of the reference's statements that the retrieved contexts support.

    One call per statement: the item's CONTEXT passages, all of them (shared by the item's
    calls), then the STATEMENT and the question; the soft verdict is P(supported)."""

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
        return cls(reasons=settings.reasons, protocol=settings.protocol)

    def __init__(self, *, reasons: bool = False, protocol: str = DEFAULT_PROTOCOL) -> None:
        self.reasons = reasons
        self.protocol = checked_protocol(protocol)

    def settings(self) -> dict[str, Any]:
        return {"reasons": self.reasons, **self.protocol_setting()}

    def build(self, item: Item) -> list[Ask]:
        if self.protocol != "1":  # every statement continues from one reading of the contexts
            contexts = item.contexts()
            return [
                branched.supported_ask(item, contexts, s, at=i, reasons=self.reasons)
                for i, s in enumerate(self._statements(item))
            ]
        shared = contexts_opening(item.contexts())
        item.text("user_input")  # required, though a statement's support does not depend on it
        return [
            ask_request(
                SYSTEM, shared, f"{delimit('STATEMENT', s)}\n{RECALL_QUESTION}", SUPPORTED, at=i
            )
            for i, s in enumerate(self._statements(item))
        ]

    def finish(self, item: Item, answers: Answers) -> MetricResult:
        statements = self._statements(item)
        supported = [answers.to(SUPPORTED, i) for i in range(len(statements))]
        verdicts: list[dict[str, Any]] = []
        for i, (answer, statement) in enumerate(zip(supported, statements, strict=True)):
            verdict: dict[str, Any] = {
                "index": i,
                "statement": statement,
                "attributed": int(answer.value == "yes"),
            }
            if answer.reason is not None:
                verdict["reason"] = answer.reason
            verdicts.append(verdict)
        value = recall_score([v["attributed"] for v in verdicts])
        soft = None
        if all(a.soft is not None for a in supported):
            for v, a in zip(verdicts, supported, strict=True):
                assert a.soft is not None
                v["probs"] = {"attributed": {"1": a.soft, "0": 1.0 - a.soft}}
            soft = soft_recall_score([float(a.soft) for a in supported if a.soft is not None])
        for v, a in zip(verdicts, supported, strict=True):
            mark_close_calls(v, {"attributed": a})
        unsupported = [v["statement"] for v in verdicts if not v["attributed"]]
        n_supported = len(verdicts) - len(unsupported)
        reason = (
            f"{n_supported} of {len(verdicts)} reference statements are supported by the context"
        )
        if unsupported:
            reason += f"; not supported: {quote_list(unsupported)}"
        copies = branched.copies_of(self.protocol)
        copied = copies.reasons([v.get("reason", "") for v in verdicts], item_data(item))
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
