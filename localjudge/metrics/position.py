"""Context position (Mastra semantics): are the relevant pieces near the top?"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any, ClassVar

from pydantic import create_model

from localjudge.data.items import Item
from localjudge.judge.protocol import SoftDecision
from localjudge.judge.schemas import StrictModel, one_per_piece
from localjudge.metrics.base import (
    FLAGS,
    JudgeRequest,
    LabelKind,
    Metric,
    MetricResult,
    MetricSettings,
    VerdictRow,
    delimit,
    item_data,
    piece_index,
    reason_field,
    shown,
    value_probs,
    yes,
)
from localjudge.metrics.instructions import COPIES, instructions, item_request
from localjudge.scoring import position_score, soft_position_score

#: the instructions the judge gets (every metric's: see :mod:`localjudge.metrics.instructions`)
SYSTEM = instructions()


def position_schema(n: int, reasons: bool = True) -> type[StrictModel]:
    """The output schema for ``n`` pieces: exactly ``n`` verdicts, indexed 0..n-1 in order."""
    return _position_schema(n, reasons)


@lru_cache(maxsize=128)
def _position_schema(n: int, reasons: bool) -> type[StrictModel]:
    verdicts = one_per_piece(
        "PositionVerdict" if reasons else "PositionDecision",
        n,
        **reason_field(reasons),
        relevant=(bool, ...),
    )
    name = f"PositionVerdicts{n}" if reasons else f"PositionVerdicts{n}NoReasons"
    return create_model(name, __base__=StrictModel, verdicts=(verdicts, ...))


class ContextPosition(Metric):
    """Weighted share of relevant pieces, weight 1/(i+1) by rank, over the harmonic number H_n."""

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
        return cls(scale=settings.scale, reasons=settings.reasons)

    def __init__(self, scale: float = 1.0, *, reasons: bool = True) -> None:
        position_score([], scale=scale)  # validates scale with the scoring function's message
        self.scale = scale
        self.reasons = reasons
        self.system = instructions(reasons)

    def settings(self) -> dict[str, Any]:
        return {"scale": self.scale, "reasons": self.reasons}

    def build(self, item: Item) -> JudgeRequest | MetricResult:
        question = item.text("user_input")
        contexts = item.contexts(allow_empty="retrieved_contexts" in item.values)
        if not contexts:
            return MetricResult(
                metric=self.name, value=0.0, reason="No context was retrieved.", verdicts=[]
            )
        target = item.optional_text("reference") or item.optional_text("response")
        n = len(contexts)
        return item_request(
            self.system,
            question,
            contexts,
            tail=[delimit("EXPECTED ANSWER", target)] if target else [],
            task="TASK position.",
            schema=position_schema(n, self.reasons),
        )

    def finish(
        self, item: Item, verdict: Any, decisions: Sequence[SoftDecision] = ()
    ) -> MetricResult:
        verdicts = [v.model_dump() for v in verdict.verdicts]
        relevant = [bool(v["relevant"]) for v in verdicts]
        value = position_score(relevant, scale=self.scale)
        probs = value_probs(decisions, "relevant", len(verdicts))
        soft = None
        if probs is not None:
            for v, p in zip(verdicts, probs, strict=True):
                v["probs"] = {"relevant": p}
            soft = soft_position_score([p["true"] for p in probs], scale=self.scale)
        hits = [i for i, r in enumerate(relevant) if r]
        n = len(relevant)
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
        copied = COPIES.reasons([v.get("reason", "") for v in verdicts], item_data(item))
        return MetricResult(
            metric=self.name,
            value=value,
            reason=reason,
            verdicts=verdicts,
            details={"copied_reasons": copied} if copied else {},
            soft_value=soft,
        )


def _positions(indices: list[int]) -> str:
    return ", ".join(f"#{i}" for i in indices)
