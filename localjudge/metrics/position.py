"""Context position (Mastra semantics): are the relevant pieces near the top?"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from localjudge.data.item import Item
from localjudge.metrics import branched
from localjudge.metrics.asks import Answers, Ask, Decision
from localjudge.metrics.base import (
    DEFAULT_PROTOCOL,
    FLAGS,
    LabelKind,
    Metric,
    MetricResult,
    MetricSettings,
    VerdictRow,
    checked_protocol,
    item_data,
    mark_close_calls,
    piece_index,
    shown,
    yes,
)
from localjudge.metrics.instructions import (
    PASSAGE_SYSTEM,
    RELEVANT,
    RELEVANT_ANSWER,
    RELEVANT_QUESTION,
    answer_ending,
    baseline_ask,
    passage_ask,
    passage_opening,
)
from localjudge.scoring import position_score, soft_position_score

#: the instructions of a passage's calls (position's and relevance's)
SYSTEM = PASSAGE_SYSTEM


class ContextPosition(Metric):
    """Weighted share of relevant pieces, weight 1/(i+1) by rank, over the harmonic number H_n.

    One call per piece, which sees that PASSAGE and the QUESTION alone (never its place in the
    list), then the EXPECTED ANSWER when the item has one (the item's reference, else its
    response: another prompt, so another kind of decision, :func:`decision_for`); the soft
    verdict is P(relevant), from the call's answer or, where the judge has a fitted
    combination for the kind, from that and how well the passage predicts the QUESTION
    (against the item's baseline call, asked first)."""

    name: ClassVar[str] = "position"
    required: ClassVar[tuple[str, ...]] = ("user_input", "retrieved_contexts")
    labels: ClassVar[Mapping[str, LabelKind]] = {"relevant": FLAGS}
    columns: ClassVar[tuple[str, ...]] = ("piece", "relevant", "reason")
    decisions: ClassVar[tuple[str, ...]] = ("relevant",)

    @staticmethod
    def human_score(labels: Mapping[str, Any]) -> float | None:
        if "relevant" not in labels:
            return None
        return position_score([bool(v) for v in labels["relevant"]])

    @staticmethod
    def judge_values(verdicts: Sequence[Mapping[str, Any]], key: str) -> list[Any] | None:
        return [bool(v["relevant"]) for v in verdicts] if key == "relevant" else None

    @staticmethod
    def verdict_rows(verdicts: Sequence[Mapping[str, Any]]) -> list[VerdictRow]:
        first_miss = next((i for i, v in enumerate(verdicts) if not v.get("relevant")), None)
        rows = []
        for i, v in enumerate(verdicts):
            flag = None
            if not v.get("relevant"):
                flag = "irrelevant"
            elif first_miss is not None and i > first_miss:
                flag = f"relevant, but ranked below irrelevant piece #{first_miss}"
            piece = piece_index(v.get("index"), i)
            cells = [f"#{piece}", yes(v.get("relevant")), shown(v.get("reason"))]
            rows.append(VerdictRow(cells, flag, piece))
        return rows

    @classmethod
    def from_settings(cls, settings: MetricSettings) -> ContextPosition:
        return cls(scale=settings.scale, reasons=settings.reasons, protocol=settings.protocol)

    def __init__(
        self, scale: float = 1.0, *, reasons: bool = False, protocol: str = DEFAULT_PROTOCOL
    ) -> None:
        position_score([], scale=scale)  # validates scale with the scoring function's message
        self.scale = scale
        self.reasons = reasons
        self.protocol = checked_protocol(protocol)

    def settings(self) -> dict[str, Any]:
        return {"scale": self.scale, "reasons": self.reasons, **self.protocol_setting()}

    def build(self, item: Item) -> list[Ask] | MetricResult:
        question = item.text("user_input")
        contexts = item.contexts(allow_empty="retrieved_contexts" in item.values)
        if not contexts:
            return MetricResult(
                metric=self.name, value=0.0, reason="No context was retrieved.", verdicts=[]
            )
        if self.protocol != "1":
            decision, ending, answered = branched.position_ending(item, self.protocol)
            asks = [
                branched.passage_ask(
                    item, piece, ending, decision, at=i, answered=answered, reasons=self.reasons
                )
                for i, piece in enumerate(contexts)
            ]
            # the QUESTION's reading, against the baseline, where the asks read it (no answer)
            return asks if answered else [branched.baseline_ask(item), *asks]
        target = expected_answer(item)
        own = answer_ending(target) if target else RELEVANT_QUESTION
        decision = decision_for(item)
        return [
            baseline_ask(question),
            *(
                passage_ask(passage_opening(question, piece), own, decision, at=i)
                for i, piece in enumerate(contexts)
            ),
        ]

    def finish(self, item: Item, answers: Answers) -> MetricResult:
        decision = decision_for(item)
        n = len(item.contexts(allow_empty="retrieved_contexts" in item.values))
        relevant_answers = [answers.to(decision, i) for i in range(n)]
        verdicts: list[dict[str, Any]] = []
        for i, answer in enumerate(relevant_answers):
            verdict: dict[str, Any] = {"index": i, "relevant": answer.value == "yes"}
            if answer.reason is not None:
                verdict["reason"] = answer.reason
            if answer.readings is not None:
                verdict["readings"] = {"relevant": dict(answer.readings)}
            verdicts.append(verdict)
        relevant = [bool(v["relevant"]) for v in verdicts]
        value = position_score(relevant, scale=self.scale)
        soft = None
        if all(a.soft is not None for a in relevant_answers):
            p_relevant = [float(a.soft) for a in relevant_answers if a.soft is not None]
            for v, p in zip(verdicts, p_relevant, strict=True):
                v["probs"] = {"relevant": {"true": p, "false": 1.0 - p}}
            soft = soft_position_score(p_relevant, scale=self.scale)
        for v, a in zip(verdicts, relevant_answers, strict=True):
            mark_close_calls(v, {"relevant": a})
        hits = [i for i, r in enumerate(relevant) if r]
        if not hits:
            reason = f"None of the {n} context pieces is relevant."
        else:
            reason = (
                f"{len(hits)} of {n} context pieces are relevant (positions {_positions(hits)})"
            )
            first_miss = next((i for i, r in enumerate(relevant) if not r), None)
            low = [i for i in hits if first_miss is not None and i > first_miss]
            if low:
                reason += f"; relevant pieces ranked below irrelevant ones: {_positions(low)}"
            reason += "."
        copies = branched.copies_of(self.protocol)
        copied = copies.reasons([v.get("reason", "") for v in verdicts], item_data(item))
        return MetricResult(
            metric=self.name,
            value=value,
            reason=reason,
            verdicts=verdicts,
            details={"copied_reasons": copied} if copied else {},
            soft_value=soft,
        )


def expected_answer(item: Item) -> str | None:
    """What a passage's position call shows as the EXPECTED ANSWER: the reference, else the
    response (None: the question alone)."""
    return item.optional_text("reference") or item.optional_text("response")


def decision_for(item: Item) -> Decision:
    """The kind of decision position asks of ``item``'s passages: with an EXPECTED ANSWER
    (:func:`expected_answer`) ``position.relevant_answer``, else ``position.relevant``."""
    return RELEVANT_ANSWER if expected_answer(item) else RELEVANT


def _positions(indices: list[int]) -> str:
    return ", ".join(f"#{i}" for i in indices)
