"""Context relevance (Mastra semantics): how relevant and how used was the context?"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any, ClassVar, Literal

from pydantic import create_model

from localjudge.data.items import Item
from localjudge.judge.protocol import SoftDecision
from localjudge.judge.schemas import StrictModel, bounded_list, one_per_piece, text
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
    quote_list,
    reason_field,
    shown,
    value_probs,
    yes,
)
from localjudge.metrics.instructions import COPIES, MAX_MISSING, instructions, item_request
from localjudge.scoring import (
    LEVEL_WEIGHTS,
    RELEVANCE_LEVELS,
    RelevancePenalties,
    relevance_score,
    soft_relevance_score,
)

MISSING_CHARS = 60

#: the instructions the judge gets (every metric's: see :mod:`localjudge.metrics.instructions`)
SYSTEM = instructions()

Level = Literal["high", "medium", "low", "none"]
assert set(Level.__args__) == set(RELEVANCE_LEVELS)  # type: ignore[attr-defined]
#: a relevance level per piece, ordinal (weighted kappa), lowest first
LEVELS = LabelKind(
    "levels", per_piece=True, values=tuple(reversed(RELEVANCE_LEVELS)), weights="quadratic"
)


def relevance_schema(n: int, reasons: bool = True) -> type[StrictModel]:
    """The output schema for ``n`` pieces: exactly ``n`` evaluations in order, plus ``missing``."""
    return _relevance_schema(n, reasons)


@lru_cache(maxsize=128)
def _relevance_schema(n: int, reasons: bool) -> type[StrictModel]:
    pieces = one_per_piece(
        "RelevanceVerdict" if reasons else "RelevanceDecision",
        n,
        **reason_field(reasons),
        relevance=(Level, ...),
        used=(bool, ...),
    )
    return create_model(
        f"RelevanceVerdicts{n}" if reasons else f"RelevanceVerdicts{n}NoReasons",
        __base__=StrictModel,
        pieces=(pieces, ...),
        missing=(bounded_list(text(MISSING_CHARS), min_items=0, max_items=MAX_MISSING), ...),
    )


class ContextRelevance(Metric):
    """Weighted relevance levels, minus penalties for unused high pieces and missing information."""

    name: ClassVar[str] = "relevance"
    required: ClassVar[tuple[str, ...]] = ("user_input", "retrieved_contexts", "response")
    #: binary ``relevant`` labels count the judge's high and medium pieces as relevant
    labels: ClassVar[Mapping[str, LabelKind]] = {"levels": LEVELS, "used": FLAGS, "relevant": FLAGS}
    columns: ClassVar[tuple[str, ...]] = ("piece", "relevance", "used", "reason")
    decisions: ClassVar[tuple[str, ...]] = ("relevance", "used")

    @staticmethod
    def human_score(labels: Mapping[str, Any]) -> float | None:
        """Without ``used`` labels every piece counts as used (no usage penalty), and nothing as
        missing: the labels say nothing about either."""
        if "levels" not in labels:
            return None
        levels = list(labels["levels"])
        used = [bool(v) for v in labels.get("used", [True] * len(levels))]
        return relevance_score(levels, used, 0)

    @staticmethod
    def judge_values(verdicts: Sequence[Mapping[str, Any]], key: str) -> list[Any] | None:
        if key == "levels":
            return [v["relevance"] for v in verdicts]
        if key == "used":
            return [bool(v["used"]) for v in verdicts]
        if key == "relevant":
            return [v["relevance"] in ("high", "medium") for v in verdicts]
        return None

    @staticmethod
    def verdict_rows(verdicts: Sequence[Mapping[str, Any]]) -> list[VerdictRow]:
        rows = []
        for i, v in enumerate(verdicts):
            level = shown(v.get("relevance"))
            flag = None
            if level in ("none", "low"):
                flag = f"relevance {level}"
            elif level == "high" and not v.get("used"):
                flag = "high relevance, but the response did not use it"
            piece = piece_index(v.get("index"), i)
            cells = [f"#{piece}", level, yes(v.get("used")), shown(v.get("reason"))]
            rows.append(VerdictRow(cells, flag, piece))
        return rows

    @classmethod
    def from_settings(cls, settings: MetricSettings) -> ContextRelevance:
        return cls(penalties=settings.penalties, scale=settings.scale, reasons=settings.reasons)

    def __init__(
        self,
        penalties: RelevancePenalties | None = None,
        scale: float = 1.0,
        *,
        reasons: bool = True,
    ) -> None:
        self.penalties = penalties or RelevancePenalties()
        relevance_score(["none"], [False], 0, self.penalties, scale)  # validates scale
        self.scale = scale
        self.reasons = reasons
        self.system = instructions(reasons)

    def settings(self) -> dict[str, Any]:
        p = self.penalties
        return {
            "scale": self.scale,
            "unused_high": p.unused_high,
            "missing_per_item": p.missing_per_item,
            "max_missing": p.max_missing,
            "reasons": self.reasons,
        }

    def build(self, item: Item) -> JudgeRequest:
        question, contexts = item.text("user_input"), item.contexts()
        n = len(contexts)
        return item_request(
            self.system,
            question,
            contexts,
            tail=[delimit("RESPONSE", item.text("response"))],
            task="TASK relevance.",
            schema=relevance_schema(n, self.reasons),
        )

    def finish(
        self, item: Item, verdict: Any, decisions: Sequence[SoftDecision] = ()
    ) -> MetricResult:
        pieces = [p.model_dump() for p in verdict.pieces]
        data = item_data(item)
        # a missing item that repeats the prompt is about the prompt, not the item: it never counts
        discarded = [m for m in verdict.missing if COPIES(m, data)]
        missing = [m for m in verdict.missing if m not in discarded]
        levels = [p["relevance"] for p in pieces]
        used = [bool(p["used"]) for p in pieces]
        value = relevance_score(levels, used, len(missing), self.penalties, self.scale)
        level_probs = value_probs(decisions, "relevance", len(pieces))
        used_probs = value_probs(decisions, "used", len(pieces))
        soft = None
        if level_probs is not None and used_probs is not None:
            for piece, lp, up in zip(pieces, level_probs, used_probs, strict=True):
                piece["probs"] = {"relevance": lp, "used": up}
            soft = soft_relevance_score(
                level_probs,
                [p["true"] for p in used_probs],
                len(missing),
                self.penalties,
                self.scale,
            )
        counts = Counter(levels)
        base = sum(LEVEL_WEIGHTS[level] for level in levels) / len(levels)
        summary = ", ".join(f"{counts[lv]} {lv}" for lv in RELEVANCE_LEVELS if counts[lv])
        reason = f"Relevance {summary} (base {base:.2f})"
        unused = [i for i, p in enumerate(pieces) if p["relevance"] == "high" and not p["used"]]
        if unused:
            positions = ", ".join(f"#{i}" for i in unused)
            reason += f"; high-relevance pieces not used by the response: {positions}"
        if missing:
            reason += f"; missing information: {quote_list(missing)}"
        details: dict[str, Any] = {"missing": missing}
        if discarded:
            details["discarded_missing"] = discarded
        copied = COPIES.reasons([p.get("reason", "") for p in pieces], data)
        if copied:
            details["copied_reasons"] = copied
        return MetricResult(
            metric=self.name,
            value=value,
            reason=reason + ".",
            verdicts=pieces,
            details=details,
            soft_value=soft,
        )
