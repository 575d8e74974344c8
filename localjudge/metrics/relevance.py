"""Context relevance (Mastra semantics): how relevant and how used was the context?"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, create_model

from localjudge.data.item import Item
from localjudge.judge.protocol import JudgeRequest
from localjudge.judge.schemas import StrictModel, bounded_list, text
from localjudge.metrics import branched
from localjudge.metrics.asks import Answers, Ask
from localjudge.metrics.base import (
    DEFAULT_PROTOCOL,
    FLAGS,
    LabelKind,
    Metric,
    MetricResult,
    MetricSettings,
    VerdictRow,
    chat,
    checked_protocol,
    item_data,
    mark_close_calls,
    piece_index,
    quote_list,
    shown,
    yes,
)
from localjudge.metrics.instructions import (
    GRADE,
    GRADE_QUESTION,
    MAX_MISSING,
    MISSING_QUESTION,
    MISSING_SYSTEM,
    PASSAGE_SYSTEM,
    USED,
    baseline_ask,
    contexts_opening,
    delimit_question,
    passage_ask,
    passage_opening,
    used_ending,
)
from localjudge.scoring import (
    LEVEL_WEIGHTS,
    RELEVANCE_LEVELS,
    RelevancePenalties,
    relevance_score,
    soft_relevance_score,
)

MISSING_CHARS = 60

#: the instructions of a passage's calls (position's and relevance's)
SYSTEM = PASSAGE_SYSTEM

Level = Literal["high", "medium", "low", "none"]
assert set(Level.__args__) == set(RELEVANCE_LEVELS)  # type: ignore[attr-defined]
#: a relevance level per piece, ordinal (weighted kappa), lowest first
LEVELS = LabelKind(
    "levels", per_piece=True, values=tuple(reversed(RELEVANCE_LEVELS)), weights="quadratic"
)
#: TREC's grades as the metric's levels
GRADE_LEVELS: dict[int, str] = {3: "high", 2: "medium", 1: "low", 0: "none"}


@lru_cache(maxsize=1)
def missing_schema() -> type[BaseModel]:
    """The output of relevance's one generated call per item: ``{"missing": [...]}``."""
    model: type[BaseModel] = create_model(
        "Missing",
        __base__=StrictModel,
        missing=(bounded_list(text(MISSING_CHARS), min_items=0, max_items=MAX_MISSING), ...),
    )
    return model


class ContextRelevance(Metric):
    """Weighted relevance levels, minus penalties for unused high pieces and missing information.

    Per piece, two calls that share that PASSAGE and the QUESTION: its TREC grade (0-3, the
    soft verdict the probability of each grade, from the call's answer or, where the judge has
    a fitted combination, from that and how well the passage predicts the QUESTION against the
    item's baseline call, asked first) and whether the RESPONSE used it; then one generated
    call per item lists the missing information."""

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
        return cls(
            penalties=settings.penalties,
            scale=settings.scale,
            reasons=settings.reasons,
            protocol=settings.protocol,
        )

    def __init__(
        self,
        penalties: RelevancePenalties | None = None,
        scale: float = 1.0,
        *,
        reasons: bool = False,
        protocol: str = DEFAULT_PROTOCOL,
    ) -> None:
        self.penalties = penalties or RelevancePenalties()
        relevance_score(["none"], [False], 0, self.penalties, scale)  # validates scale
        self.scale = scale
        self.reasons = reasons
        self.protocol = checked_protocol(protocol)

    def settings(self) -> dict[str, Any]:
        p = self.penalties
        return {
            "scale": self.scale,
            "unused_high": p.unused_high,
            "missing_per_item": p.missing_per_item,
            "max_missing": p.max_missing,
            "reasons": self.reasons,
            **self.protocol_setting(),
        }

    def build(self, item: Item) -> list[Ask]:
        if self.protocol != "1":
            return self._branched(item)
        question, contexts = item.text("user_input"), item.contexts()
        asks = [baseline_ask(question)]
        for i, piece in enumerate(contexts):
            shared = passage_opening(question, piece)
            asks.append(passage_ask(shared, GRADE_QUESTION, GRADE, at=i))
            used = used_ending(item.text("response"))
            asks.append(passage_ask(shared, used, USED, at=i, explain=False))
        shared = f"{delimit_question(question)}{contexts_opening(contexts)}"
        request = JudgeRequest(
            messages=chat(MISSING_SYSTEM, shared + MISSING_QUESTION),
            schema=missing_schema(),
            shared_chars=len(shared),
        )
        return [*asks, Ask(request, None, len(contexts), explain=False)]

    def _branched(self, item: Item) -> list[Ask]:
        """Protocol 2's and 3's asks (:mod:`localjudge.metrics.branched`): per passage, its
        grade and ``used`` continue from a reading of it (protocol 3: one, under SYSTEM, with
        ``used`` in protocol 1's words; protocol 2: ``used`` after the item's opening); the
        missing information from one reading of every context."""
        item.text("response")  # required: the RESPONSE the used decisions are about
        contexts = item.contexts()
        asks = [branched.baseline_ask(item)]
        answered = self.protocol == "2"
        used = branched.USED_ENDING if answered else used_ending(item.text("response"))
        for i, piece in enumerate(contexts):
            grade = branched.GRADE_ENDING
            asks.append(
                branched.passage_ask(
                    item, piece, grade, GRADE, at=i, answered=False, reasons=self.reasons
                )
            )
            asks.append(
                branched.passage_ask(
                    item, piece, used, USED, at=i, answered=answered, explain=False
                )
            )
        missing = branched.context_ask(
            item,
            contexts,
            branched.MISSING_ENDING,
            None,
            missing_schema(),
            at=len(contexts),
            explain=False,
        )
        return [*asks, missing]

    def finish(self, item: Item, answers: Answers) -> MetricResult:
        n = len(item.contexts())
        grades = [answers.to(GRADE, i) for i in range(n)]
        useds = [answers.to(USED, i) for i in range(n)]
        pieces: list[dict[str, Any]] = []
        for i, (grade, used) in enumerate(zip(grades, useds, strict=True)):
            piece: dict[str, Any] = {
                "index": i,
                "relevance": GRADE_LEVELS[int(grade.value)],
                "used": used.value == "yes",
            }
            if grade.reason is not None:
                piece["reason"] = grade.reason
            if grade.readings is not None and used.readings is not None:
                piece["readings"] = {"relevance": dict(grade.readings), "used": dict(used.readings)}
            pieces.append(piece)
        data = item_data(item)
        # a missing item that repeats the prompt is about the prompt, not the item: it never counts
        listed = list(answers.generated(missing_schema()).value.missing)
        copies = branched.copies_of(self.protocol)
        discarded = [m for m in listed if copies(m, data)]
        missing = [m for m in listed if m not in discarded]
        levels = [p["relevance"] for p in pieces]
        flags = [bool(p["used"]) for p in pieces]
        value = relevance_score(levels, flags, len(missing), self.penalties, self.scale)
        soft = None
        if all(a.probs is not None and a.soft is not None for a in [*grades, *useds]):
            level_probs = [
                {GRADE_LEVELS[g]: float((a.probs or {}).get(str(g), 0.0)) for g in GRADE_LEVELS}
                for a in grades
            ]
            p_used = [float(a.soft or 0.0) for a in useds]
            for piece, lp, pu in zip(pieces, level_probs, p_used, strict=True):
                piece["probs"] = {"relevance": lp, "used": {"true": pu, "false": 1.0 - pu}}
            soft = soft_relevance_score(
                level_probs, p_used, len(missing), self.penalties, self.scale
            )
        for piece, grade, used in zip(pieces, grades, useds, strict=True):
            mark_close_calls(piece, {"relevance": grade, "used": used})
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
        copied = copies.reasons([p.get("reason", "") for p in pieces], data)
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
